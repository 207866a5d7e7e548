"""NSCC's rules in isolation (csrc/cc/nscc.c through rdmasim._core.NsccForTest): the four
delay x ECN quadrants, QuickAdapt and losses (Bonato et al., arXiv 2404.01630; UEC htsim uec.cpp
for the constants), its parameters and its registration as a RoCE congestion control."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim import _core
from rdmasim.cc import ALGORITHM_NAMES, default_params, params_class
from rdmasim.cc_nscc import NsccParams

US = 1_000_000
LINE = 100e9
RTT = 12 * US          # the reference network: scaling factors a = 1, b = target / 12 us
MSS = 4096


def params(**kw) -> NsccParams:
    return NsccParams.for_path(RTT, mtu=MSS, **kw)


def nscc(**kw) -> _core.NsccForTest:
    return _core.NsccForTest(params(**kw).to_c(), LINE, 0)


BDP = LINE * RTT * 1e-12 / 8   # 150,000 bytes


def test_python_defaults_match_the_c_defaults():
    for trimming in (False, True):
        assert params(trimming=trimming).to_c() == _core.nscc_default_params(MSS, RTT, trimming)


def test_start_at_the_max_window_with_htsims_gains():
    n = nscc()
    s = n.state
    assert s["max_cwnd"] == pytest.approx(1.5 * BDP) and s["cwnd"] == pytest.approx(1.5 * BDP)
    assert s["target_ps"] == RTT and s["qa_threshold_ps"] == 4 * RTT     # no trimming: target 1 RTT
    assert s["fi"] == pytest.approx(5 * MSS) and s["eta"] == pytest.approx(0.15 * MSS)
    assert s["alpha"] == pytest.approx(4 * MSS / RTT) and s["fi_scale"] == pytest.approx(0.25)
    assert s["min_cwnd"] == MSS
    t = nscc(trimming=True).state
    assert t["target_ps"] == 9 * US and t["alpha"] == pytest.approx(4 * MSS * 0.75 / (9 * US))
    # a faster network scales the gains by its BDP (a = 2)
    f = _core.NsccForTest(params().to_c(), 2 * LINE, 0).state
    assert f["fi"] == pytest.approx(10 * MSS) and f["max_cwnd"] == pytest.approx(3 * BDP)


def test_no_ecn_above_target_is_the_fair_increase():
    n = nscc(quick_adapt=False)
    n.set_cwnd(40_000)
    n.ack(1 * US, MSS, RTT + RTT + 1)          # delay > target, no ECN
    s = n.state
    assert s["fair_increases"] == 1 and s["inc_bytes"] == pytest.approx(5 * MSS * MSS)
    for i in range(2, 10):                      # the adjustment applies after 8 MSS acked
        n.ack(i * US, MSS, 2 * RTT + 1)
    assert n.state["cwnd"] == pytest.approx(40_000 + 9 * 5 * MSS * MSS / 40_000)


def test_no_ecn_below_target_is_proportional_to_the_headroom():
    n = nscc(quick_adapt=False)
    n.set_cwnd(40_000)
    n.ack(1 * US, MSS, RTT + 3 * US)            # delay 3 us, target 12 us
    s = n.state
    assert s["prop_increases"] == 1
    assert s["inc_bytes"] == pytest.approx(4 * MSS / RTT * MSS * 9 * US)


def test_near_zero_delay_for_a_window_is_the_fast_increase():
    n = nscc(quick_adapt=False)
    n.set_cwnd(8 * MSS)
    for i in range(9):                          # a window of ACKs at zero delay
        n.ack((i + 1) * 100_000, MSS, RTT)
    s = n.state
    assert s["fast_increases"] >= 1 and s["increasing"] == 1
    before = s["cwnd"]
    n.ack(2 * US, MSS, RTT)
    assert n.state["cwnd"] == pytest.approx(before + 0.25 * MSS)


def test_ecn_with_high_delay_cuts_once_per_rtt_on_the_average_delay():
    n = nscc(quick_adapt=False, delay_alpha=1.0)   # the average is the last sample
    n.set_cwnd(100_000)
    eta = 0.15 * MSS                                # added once per base RTT by the adjustment
    n.ack(20 * US, MSS, RTT + 2 * RTT, ecn=True)   # delay 24 us, target 12: cut 0.8 x 12/24 = 40 %
    assert n.state["md_decreases"] == 1 and n.state["cwnd"] == pytest.approx(60_000 + eta)
    n.ack(21 * US, MSS, RTT + 2 * RTT, ecn=True)   # within one base RTT: held
    assert n.state["md_decreases"] == 1 and n.state["cwnd"] == pytest.approx(60_000 + eta)
    n.ack(40 * US, MSS, RTT + 100 * RTT, ecn=True)  # huge delay: the cut is capped at max_md
    assert n.state["cwnd"] == pytest.approx((60_000 + eta) / 2 + eta)


def test_ecn_with_low_delay_changes_nothing():
    n = nscc(quick_adapt=False)
    n.set_cwnd(50_000)
    n.ack(1 * US, MSS, RTT + 2 * US, ecn=True)
    s = n.state
    assert s["noops"] == 1 and s["cwnd"] == 50_000 and s["inc_bytes"] == 0


def test_a_smaller_rtt_lowers_the_base_rtt_and_the_max_window():
    n = nscc(quick_adapt=False)
    n.ack(1 * US, MSS, 8 * US)
    s = n.state
    assert s["base_rtt_ps"] == 8 * US and s["max_cwnd"] == pytest.approx(1.5 * LINE * 8e-6 / 8)
    assert s["cwnd"] <= s["max_cwnd"]


def test_a_trim_takes_the_lost_bytes_off_the_window():
    n = nscc(quick_adapt=False)
    n.set_cwnd(100_000)
    n.loss(1 * US, MSS, True)
    s = n.state
    assert s["cwnd"] == pytest.approx(100_000 - MSS) and s["losses"] == 1 and s["trims"] == 1
    n.loss(2 * US, MSS, False)                  # a NAK or timeout: counted, not a trim
    assert n.state["trims"] == 1 and n.state["losses"] == 2


def test_quick_adapt_sets_the_window_to_what_was_delivered():
    n = nscc()
    n.ack(1 * US, MSS, RTT)                     # opens the first interval (ends at 1 + 12 + 12 us)
    assert n.state["qa_end_ps"] == 25 * US
    n.ack(10 * US, 2 * MSS, RTT)                # little delivered in the interval
    n.loss(30 * US, MSS, True)                  # after the interval: a loss triggers QuickAdapt
    s = n.state
    assert s["quick_adapts"] == 1 and s["cwnd"] == pytest.approx(2 * MSS)
    assert s["inc_bytes"] == 0


def test_quick_adapt_waits_for_the_gate_and_can_be_off():
    n = nscc()
    n.ack(1 * US, MSS, RTT)
    n.ack(10 * US, 40_000, RTT)                 # 41,096 delivered >= 1.5 BDP / 8 = 28,125: no QuickAdapt
    n.loss(30 * US, MSS, True)
    assert n.state["quick_adapts"] == 0
    m = nscc(quick_adapt=False)
    m.ack(1 * US, MSS, RTT)
    m.loss(30 * US, MSS, True)
    assert m.state["quick_adapts"] == 0


def test_quick_adapt_on_a_delay_past_the_threshold():
    n = nscc()
    n.ack(1 * US, MSS, RTT)
    n.ack(30 * US, MSS, RTT + 5 * RTT)          # delay 60 us > 4 x target
    assert n.state["quick_adapts"] == 1 and n.state["cwnd"] == pytest.approx(MSS)


def test_window_bounds():
    n = nscc(quick_adapt=False, min_cwnd="8KB", max_cwnd="64KB")
    assert n.window == 64_000
    n.set_cwnd(9_000)
    n.loss(1 * US, 4096, True)
    assert n.window == 8_000


@pytest.mark.parametrize(("kw", "field"), [
    (dict(base_rtt=0), "base_rtt"), (dict(gamma=0), "gamma"), (dict(gamma=1.5), "gamma"),
    (dict(max_md=1.0), "max_md"), (dict(delay_alpha=0), "delay_alpha"), (dict(qa_gate=64), "qa_gate"),
    (dict(adjust_packets=0), "adjust_packets"), (dict(fi_mss=-1), "fi_mss"),
    (dict(packet_bytes=0), "packet_bytes"),
    (dict(max_cwnd="1KB"), "max_cwnd"), (dict(trimming="yes"), "trimming"), (dict(ref_rate=0), "ref_rate"),
    (dict(target_qdelay="soon"), "target_qdelay")])
def test_bad_parameters_name_the_field_and_range(kw, field):
    with pytest.raises(ValueError, match=rf"NSCC parameter {field}=.*allowed"):
        NsccParams(**kw)


def test_c_check_accepts_the_defaults_and_names_bad_fields():
    assert _core.nscc_params_check(params().to_c()) == 0
    bad = params().to_c()
    bad["gamma"] = 0.0
    assert _core.nscc_params_check(bad) == 13


def test_registry_and_host_api():
    assert "nscc" in ALGORITHM_NAMES and params_class("nscc") is NsccParams
    assert _core.cc_kinds()["nscc"] == (7, True)
    t = rdmasim.back_to_back()
    t.a.set_congestion_control("nscc", default_params("nscc"))
    with pytest.raises(TypeError, match="NsccParams"):
        t.a.set_congestion_control("nscc", default_params("swift"))
