"""TIMELY's rules in isolation (csrc/cc/timely.c through rdmasim._core.TimelyForTest) and its
parameter validation (rdmasim.cc_timely.TimelyParams)."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim import _core
from rdmasim.cc import ALGORITHM_NAMES, default_params, params_class
from rdmasim.cc_timely import TimelyParams

LINE = 10e9
US = 1_000_000
SEG = 16_000
ALPHA, BETA, DELTA, MIN_RTT = 0.875, 0.8, 10e6, 20 * US


def harness(**overrides):
    kw = dict(segment=SEG)
    kw.update(overrides)
    return _core.TimelyForTest(TimelyParams(**kw).to_c(), LINE)


def completions(t, rtts_us, inflight=0):
    """One completed segment per RTT (each ACK covers a whole segment)."""
    for r in rtts_us:
        t.ack(SEG, inflight, round(r * US))


def test_starts_at_the_maximum_or_the_initial_rate():
    assert harness().state["rate_bps"] == LINE
    assert harness(max_rate="4Gbps").state["rate_bps"] == 4e9
    assert harness(initial_rate="2Gbps").state["rate_bps"] == 2e9


def test_first_completion_only_records_the_rtt():
    t = harness(initial_rate="5Gbps")
    t.ack(SEG, 0, 100 * US)
    s = t.state
    assert s["prev_rtt_ps"] == 100 * US and s["updates"] == 1 and s["rate_bps"] == 5e9


def test_below_t_low_adds_delta_whatever_the_gradient():
    t = harness(initial_rate="5Gbps")
    completions(t, [30, 45, 49])  # rising RTTs, all below T_low = 50 us
    s = t.state
    assert s["rate_bps"] == pytest.approx(5e9 + 2 * DELTA)
    assert s["low_increases"] == 2 and s["gradient_decreases"] == 0


def test_above_t_high_cuts_towards_t_high():
    t = harness(initial_rate="5Gbps")
    completions(t, [600, 1000])
    s = t.state
    # both completions above T_high; the second is the first update: R (1 - beta (1 - 500/1000))
    assert s["rate_bps"] == pytest.approx(5e9 * (1 - BETA * (1 - 500 / 1000)))
    assert s["high_decreases"] == 1


def test_positive_gradient_cuts_by_beta_times_normalised_gradient():
    t = harness(initial_rate="5Gbps")
    completions(t, [100, 110])
    diff = ALPHA * 10 * US  # EWMA from 0
    g = diff / MIN_RTT
    s = t.state
    assert s["rtt_diff_ps"] == pytest.approx(diff) and s["gradient"] == pytest.approx(g)
    assert s["rate_bps"] == pytest.approx(5e9 * (1 - BETA * g))
    # the EWMA carries over: a flat RTT next keeps rtt_diff positive: another (smaller) cut
    completions(t, [110])
    diff2 = (1 - ALPHA) * diff
    assert t.state["rtt_diff_ps"] == pytest.approx(diff2)
    assert t.state["rate_bps"] == pytest.approx(5e9 * (1 - BETA * g) * (1 - BETA * diff2 / MIN_RTT))


def test_a_cut_never_goes_negative_or_below_the_floor():
    t = harness(initial_rate="5Gbps", min_rate="100Mbps")
    completions(t, [100, 400])  # g = 0.875 x 300 / 20 = 13: 1 - beta g < 0 -> the floor
    assert t.state["rate_bps"] == 100e6


def test_hai_after_n_consecutive_non_positive_gradients():
    t = harness(initial_rate="1Gbps")
    completions(t, [300, 290, 280, 270, 260, 250, 240])  # falling: gradient < 0 each update
    s = t.state
    # updates 1..6 (the first completion only records): the 5th and 6th in a row take 5 delta
    assert s["gradient_increases"] == 6 and s["hai_increases"] == 2
    assert s["rate_bps"] == pytest.approx(1e9 + 4 * DELTA + 2 * 5 * DELTA)
    # a decrease resets the run
    completions(t, [300])
    assert t.state["neg_count"] == 0
    r = t.state["rate_bps"]
    completions(t, [200])  # gradient: (1-a) d + a (-100 us) < 0: one plain delta
    assert t.state["rate_bps"] == pytest.approx(r + DELTA)


def test_rate_capped_at_the_maximum():
    t = harness(max_rate="2Gbps", ai_rate="1Gbps")
    completions(t, [10, 10, 10, 10])
    assert t.state["rate_bps"] == 2e9


def test_one_update_per_segment_of_acknowledged_bytes():
    t = harness(initial_rate="5Gbps")
    t.ack(1000, 0, 100 * US)  # first sample: the first update; next at 1000 + SEG
    for _ in range(15):
        t.ack(1000, 0, 100 * US)  # acked 16000 < 17000
    assert t.state["updates"] == 1
    t.ack(1000, 0, 100 * US)  # 17000: the segment completes
    assert t.state["updates"] == 2
    assert t.state["rtt_samples"] == 17


def test_segment_zero_updates_once_per_window_of_data():
    t = harness(segment=0, initial_rate="5Gbps")
    t.ack(1000, 9000, 100 * US)  # next update when 1000 + 9000 + 1 bytes are acknowledged
    for _ in range(8):
        t.ack(1000, 9000, 100 * US)
    assert t.state["updates"] == 1
    t.ack(2000, 9000, 100 * US)
    assert t.state["updates"] == 2


def test_acks_without_a_sample_move_the_position_only():
    t = harness()
    t.ack(SEG, 0, -1)
    s = t.state
    assert s["acked_pos"] == SEG and s["rtt_samples"] == 0 and s["updates"] == 0


def test_the_packet_that_ends_a_segment_asks_for_an_ack():
    t = harness()
    asks = [t.sent(1000) for _ in range(40)]
    # the first packet (the first completion), then each that reaches a further 16 KB
    assert [i for i, a in enumerate(asks) if a] == [0, 16, 32]
    # the ACK of the 17th packet (17000 bytes) completes the segment the first opened
    t.ack(1000, 0, 10 * US)
    t.ack(16_000, 0, 10 * US)
    assert t.state["updates"] == 2


def test_segment_zero_asks_once_per_update():
    t = harness(segment=0)
    assert t.sent(1000) and not t.sent(1000) and not t.sent(1000)
    t.ack(1000, 2000, 10 * US)  # the first packet's ACK: an update; the next packet asks
    assert t.state["updates"] == 1
    assert t.sent(1000) and not t.sent(1000)
    t.ack(2000, 2000, 10 * US)  # up to 3000 < 3001: no update yet
    assert t.state["updates"] == 1 and not t.sent(1000)
    t.ack(1000, 2000, 10 * US)  # 4000 (the asking packet's end): the update
    assert t.state["updates"] == 2 and t.sent(1000)


def test_an_update_due_without_a_sample_asks_again():
    t = harness(segment=0)
    t.sent(1000)
    t.ack(1000, 0, 10 * US)
    t.sent(1000)  # asks
    assert not t.sent(1000)
    t.ack(2000, 0, -1)  # covers the asking packet but carries no sample (a retransmission)
    assert t.state["updates"] == 1 and t.sent(1000)


@pytest.mark.parametrize("kw, field", [
    (dict(alpha=0), "alpha"), (dict(beta=1.5), "beta"), (dict(t_low=0), "t_low"),
    (dict(t_low="100us", t_high="50us"), "t_high"), (dict(min_rtt="-1us"), "min_rtt"),
    (dict(ai_rate=0), "ai_rate"), (dict(hai_after=0), "hai_after"), (dict(hai_factor=0.5), "hai_factor"),
    (dict(min_rate="fast"), "min_rate"), (dict(segment=-1), "segment"), (dict(hai_after=True), "hai_after"),
])
def test_bad_parameters_name_the_field_and_range(kw, field):
    with pytest.raises(ValueError, match=rf"TIMELY parameter {field}=.*allowed"):
        TimelyParams(**kw)


def test_for_path_scales_the_paper_thresholds():
    p = TimelyParams.for_path("100Gbps", "4us").to_c()
    assert p["t_low_ps"] == 10 * US and p["t_high_ps"] == 100 * US and p["min_rtt_ps"] == 40 * US
    assert p["ai_bps"] == 100e6 and p["min_rate_bps"] == 1e9 and p["segment_bytes"] == 0
    assert TimelyParams.for_path("100Gbps", "4us", beta=0.5).beta == 0.5


def test_registry_and_host_api():
    assert "timely" in ALGORITHM_NAMES and params_class("timely") is TimelyParams
    assert _core.cc_kinds()["timely"][1]
    t = rdmasim.back_to_back()
    t.a.set_congestion_control("timely")  # the defaults
    with pytest.raises(TypeError, match="TimelyParams"):
        t.a.set_congestion_control("timely", default_params("dcqcn"))
