"""DCTCP's rules in isolation (csrc/cc/dctcp.c through rdmasim._core.DctcpForTest), its parameter
validation, and the congestion-control interface's checks of kinds and parameters."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim import _core
from rdmasim.cc import ALGORITHM_NAMES, default_params, params_class
from rdmasim.cc_dctcp import DctcpParams

LINE = 100e9
G = 1 / 16


def harness(**overrides):
    return _core.DctcpForTest(DctcpParams(**overrides).to_c(), LINE)


def test_starts_at_line_rate_with_the_initial_alpha():
    d = harness(window="64KB")
    s = d.state
    assert s["rate_bps"] == LINE and s["alpha"] == 1.0 and not s["in_cwr"]
    assert d.window == 64_000  # var_win at the maximum rate: the whole window


def test_first_ack_opens_the_first_alpha_window_only():
    d = harness()
    d.ack(1000, 9000)
    s = d.state
    assert s["started"] and s["alpha_updates"] == 0 and s["batch_end"] == 10_000
    # no cut without a mark; an unmarked new window adds R_AI (already at the cap: stays)
    assert s["rate_bps"] == LINE and s["cuts"] == 0


def test_mark_cuts_by_half_alpha_once_per_window():
    d = harness()
    d.ack(1000, 9000, ce_bytes=1000, ce_echo=True)  # alpha = 1: R (1 - 1/2)
    s = d.state
    assert s["rate_bps"] == LINE / 2 and s["in_cwr"] and s["cwr_end"] == 10_000
    d.ack(1000, 9000, ce_bytes=1000, ce_echo=True)  # same window of data: CWR, no second cut
    assert d.state["rate_bps"] == LINE / 2 and d.state["cuts"] == 1
    # ACKs pass the end of the CWR window (acked position 11000 > 10000): the next mark cuts again,
    # after alpha's update for the window that ended (F = 2000 marked / 2000 acked... see below)
    d.ack(9000, 1000, ce_bytes=1000, ce_echo=True)
    s = d.state
    f = 2000 / 10_000  # marked / acknowledged bytes in the ended window (the first ACK opened it)
    alpha = (1 - G) * 1.0 + G * f
    assert s["alpha"] == pytest.approx(alpha, rel=1e-15)
    assert s["rate_bps"] == pytest.approx(LINE / 2 * (1 - alpha / 2), rel=1e-15)
    assert s["cuts"] == 2


def test_alpha_update_arithmetic_exact():
    d = harness(initial_alpha=0.25)
    d.ack(0, 4000)  # first window ends at 4000
    d.ack(3000, 1000, ce_bytes=1500)  # 3000 acked, 1500 marked (no end yet: 3000 <= 4000)
    assert d.state["alpha_updates"] == 0
    d.ack(2000, 0, ce_bytes=0)  # acked position 5000 > 4000: F = 1500 / 5000
    s = d.state
    assert s["alpha_updates"] == 1
    assert s["alpha"] == pytest.approx((1 - G) * 0.25 + G * 0.3, rel=1e-15)


def test_additive_increase_per_window_without_a_mark_and_the_cap():
    d = harness(ai_rate="2Gbps", window="50KB")
    d.ack(1000, 1000, ce_bytes=1000, ce_echo=True)  # cut to 50 Gb/s, CWR to 2000
    r = d.state["rate_bps"]
    d.ack(2000, 1000)  # passes the CWR end and the alpha window's end: leaves CWR, + R_AI
    assert d.state["rate_bps"] == pytest.approx(r + 2e9)
    assert d.state["increases"] == 1
    d.ack(500, 1000)  # inside the new window: no increase
    assert d.state["increases"] == 1
    for _ in range(100):
        d.ack(2000, 1000)
    assert d.state["rate_bps"] == LINE  # capped at the maximum (the line rate)


def test_min_rate_floor_and_window_follows_rate():
    d = harness(min_rate="10Gbps", window="64KB", initial_alpha=1.0)
    d.ack(1000, 0, ce_bytes=1000, ce_echo=True)
    for _ in range(10):
        d.ack(1000, 0, ce_bytes=1000, ce_echo=True)
    s = d.state
    assert s["rate_bps"] == 10e9
    assert d.window == int(64_000 * 10e9 / LINE)
    fixed = harness(window="64KB", var_win=False)
    fixed.ack(1000, 0, ce_bytes=1000, ce_echo=True)
    assert fixed.window == 64_000


def test_window_never_zero_when_set():
    d = harness(window=10, min_rate=0)
    for _ in range(200):
        d.ack(1000, 0, ce_bytes=1000, ce_echo=True)
    assert d.window == 1


@pytest.mark.parametrize("kw, field", [
    (dict(g=0), "g"), (dict(g=1.5), "g"), (dict(initial_alpha=-0.1), "initial_alpha"),
    (dict(ai_rate=0), "ai_rate"), (dict(window=-1), "window"), (dict(var_win=1), "var_win"),
    (dict(pace=False), "pace"),
])
def test_bad_parameters_name_the_field_and_range(kw, field):
    with pytest.raises(ValueError, match=rf"DCTCP parameter {field}=.*allowed"):
        DctcpParams(**kw)


def test_for_path_is_a_bdp_window_and_one_mtu_per_rtt():
    p = DctcpParams.for_path("100Gbps", "4us", mtu=1024)
    assert p.to_c()["window_bytes"] == 50_000
    assert p.to_c()["ai_bps"] == pytest.approx(1024 * 8 / 4e-6)


def test_registry_maps_names_to_params_classes():
    assert "dctcp" in ALGORITHM_NAMES and params_class("dctcp") is DctcpParams
    assert isinstance(default_params("dctcp"), DctcpParams)
    kinds = _core.cc_kinds()
    assert kinds["dcqcn"][1] and kinds["dctcp"][1]
    assert set(kinds) >= {"none", "dcqcn", "dctcp", "timely", "swift", "hpcc"}


def test_c_rejects_an_unbuilt_kind_by_name_and_a_wrong_params_size():
    t = rdmasim.back_to_back()
    core = t.sim._core
    kinds = _core.cc_kinds()
    for name, (kind, built) in kinds.items():
        if not built:
            with pytest.raises(Exception, match=rf"congestion control '{name}' is not built in"):
                core.host_set_cc(t.a.index, kind, b"\0" * 8, True, 0, 48)
    with pytest.raises(Exception, match=r"'dctcp' needs its parameters"):
        core.host_set_cc(t.a.index, kinds["dctcp"][0], b"\0" * 3, True, 0, 48)
    with pytest.raises(TypeError, match="DctcpParams"):
        t.a.set_congestion_control("dctcp", default_params("dcqcn"))
    with pytest.raises(ValueError, match="choose one of"):
        t.a.set_congestion_control("bbr")


def test_ack_every_asks_on_every_nth_packet_and_when_the_window_fills():
    d = harness(ack_every=4)
    asks = [d.ack_request(1024, 0) for _ in range(8)]
    assert asks == [False, False, False, True] * 2
    w = harness(window="8KB", ack_every=100)  # var_win at the maximum rate: the whole 8,000 B
    assert not w.ack_request(1024, 6000)
    assert w.ack_request(1024, 7000)  # this packet fills the window: it must ask
    assert harness().ack_request(1024, 0)  # the default asks every packet (the HPCC simulator's)


@pytest.mark.parametrize("bad", [0, -1, 65537, 2.0, True])
def test_ack_every_out_of_range_names_the_parameter(bad):
    with pytest.raises(ValueError, match="ack_every"):
        DctcpParams(ack_every=bad)
