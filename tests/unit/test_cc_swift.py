"""Swift's rules in isolation (csrc/cc/swift.c through rdmasim._core.SwiftForTest) and its
parameter validation (rdmasim.cc_swift.SwiftParams)."""

from __future__ import annotations

import math

import pytest

import rdmasim
from rdmasim import _core
from rdmasim.cc import ALGORITHM_NAMES, default_params, params_class
from rdmasim.cc_swift import SwiftParams

LINE = 100e9
US = 1_000_000
PKT = 1000
BASE, H, FS = 10 * US, 1 * US, 10 * US


def params(**overrides) -> SwiftParams:
    kw = dict(base_target=BASE, hop_scale=H, hops=2, fs_range=FS, packet_bytes=PKT, init_cwnd=20.0)
    kw.update(overrides)
    return SwiftParams(**kw)


def harness(**overrides):
    return _core.SwiftForTest(params(**overrides).to_c(), LINE)


def fs_term(cwnd: float, lo: float = 0.1, hi: float = 100.0) -> float:
    a = FS / (1 / math.sqrt(lo) - 1 / math.sqrt(hi))
    return min(max(a / math.sqrt(cwnd) - a / math.sqrt(hi), 0.0), FS)


def test_initial_window_is_init_cwnd_or_line_rate_times_base_target():
    assert harness().state["cwnd"] == 20.0
    s = harness(init_cwnd=0.0).state
    assert s["cwnd"] == pytest.approx(LINE * 10e-6 / 8 / PKT)  # 125 packets
    assert harness(init_cwnd=0.0, max_cwnd=50.0).state["cwnd"] == 50.0


@pytest.mark.parametrize("cwnd", [0.05, 0.1, 1.0, 6.25, 50.0, 100.0, 400.0])
def test_target_is_base_plus_hops_plus_flow_scaling(cwnd):
    sw = harness()
    sw.set_cwnd(cwnd)
    want = BASE + 2 * H + fs_term(cwnd)
    assert sw.target_ps == pytest.approx(want, abs=1)
    assert params().target(cwnd) == sw.target_ps  # the Python formula is the C one
    if cwnd <= 0.1:
        assert sw.target_ps == BASE + 2 * H + FS  # clamped at fs_range
    if cwnd >= 100:
        assert sw.target_ps == BASE + 2 * H  # no flow scaling at or above fs_max_cwnd


def test_below_target_adds_ai_per_window_of_acks():
    sw = harness()
    for _ in range(20):  # one window of ACKs, 1 packet each, delay below target
        sw.ack(0, PKT, 5 * US)
    # ai / cwnd per acked packet: about +1 packet over a window (exactly: the sum of 1/w_k)
    w = 20.0
    for _ in range(20):
        w += 1 / w
    assert sw.state["cwnd"] == pytest.approx(w, rel=1e-12)
    assert sw.state["increases"] == 20


def test_below_one_packet_the_increase_is_ai_per_acked_packet():
    sw = harness(init_cwnd=0.25)
    sw.ack(0, PKT // 2, 5 * US)  # half a packet acked: + ai x 0.5
    assert sw.state["cwnd"] == pytest.approx(0.75)


def test_above_target_cuts_by_beta_times_the_excess_once_per_rtt():
    sw = harness()
    target = sw.target_ps
    delay = target + 5 * US
    sw.ack(100 * US, PKT, delay)
    f = 1 - 0.8 * (delay - target) / delay
    assert sw.state["cwnd"] == pytest.approx(20.0 * f)
    # within one RTT of that decrease: held, however high the delay
    sw.ack(100 * US + delay - 1, PKT, 2 * delay)
    assert sw.state["decreases"] == 1 and sw.state["held"] == 1
    assert sw.state["cwnd"] == pytest.approx(20.0 * f)
    # one RTT (of the current sample) later: cut again
    sw.ack(100 * US + delay, PKT, delay)
    assert sw.state["decreases"] == 2


def test_a_cut_is_at_most_max_mdf():
    sw = harness(max_mdf=0.3)
    sw.ack(0, PKT, 1000 * US)  # a huge excess: 1 - beta x ~1 would remove 80 %
    s = sw.state
    assert s["cwnd"] == pytest.approx(20.0 * 0.7) and s["capped_decreases"] == 1


def test_window_limits_and_pacing_below_one_packet():
    sw = harness(min_cwnd=0.01, max_cwnd=30.0)
    assert sw.window == 20 * PKT and sw.rate_bps == 0.0  # cwnd >= 1: a window, not paced
    for k in range(40):
        sw.ack(k * 1000 * US, PKT, 1000 * US)  # cut by half each RTT down to the floor
    s = sw.state
    assert s["cwnd"] == pytest.approx(0.01)
    assert sw.window == 10  # 0.01 packet: below one packet, one at a time
    sw.sent(1106)
    # paced one RTT / cwnd apart: a 1106-byte frame every 1000 us / 0.01
    gap_ps = 1106 * 8 / sw.rate_bps * 1e12
    assert gap_ps == pytest.approx(1000 * US / 0.01)
    for _ in range(1000):  # +1 packet per window of ACKs: about sqrt(2 x 1000) > 30
        sw.ack(0, PKT, 1 * US)
    assert sw.state["cwnd"] == 30.0  # capped


def test_asks_for_acks_per_window_and_when_the_window_fills():
    sw = harness(acks_per_window=4)  # cwnd 20, 4 ACKs per window: every 5th packet
    asks = [sw.ack_request(k * PKT) for k in range(1, 15)]
    assert [i + 1 for i, a in enumerate(asks) if a] == [5, 10]
    # the packet after which the window (20 packets) is full asks, whatever the count
    assert sw.ack_request(20 * PKT)
    every = harness(acks_per_window=0)
    assert all(every.ack_request(PKT) for _ in range(5))
    small = harness(init_cwnd=0.5)  # below one packet: each packet fills the window
    assert all(small.ack_request(PKT) for _ in range(5))


def test_acks_without_a_sample_change_nothing():
    sw = harness()
    sw.ack(0, PKT, -1)
    s = sw.state
    assert s["cwnd"] == 20.0 and s["rtt_samples"] == 0 and s["acks"] == 1


@pytest.mark.parametrize("kw, field", [
    (dict(ai=0), "ai"), (dict(beta=0), "beta"), (dict(max_mdf=1.0), "max_mdf"),
    (dict(base_target=0), "base_target"), (dict(hop_scale="-1us"), "hop_scale"), (dict(hops=-1), "hops"),
    (dict(fs_range="x"), "fs_range"), (dict(fs_min_cwnd=0), "fs_min_cwnd"),
    (dict(fs_max_cwnd=0.05), "fs_max_cwnd"), (dict(min_cwnd=0), "min_cwnd"),
    (dict(max_cwnd=0.0001), "max_cwnd"), (dict(init_cwnd=-1), "init_cwnd"),
    (dict(packet_bytes=0), "packet_bytes"), (dict(hops=True), "hops"),
    (dict(acks_per_window=-1), "acks_per_window"),
])
def test_bad_parameters_name_the_field_and_range(kw, field):
    with pytest.raises(ValueError, match=rf"Swift parameter {field}=.*allowed"):
        SwiftParams(**kw)


def test_for_path_derives_the_delays_from_the_base_rtt():
    p = SwiftParams.for_path("100Gbps", "4us", hops=3, mtu=1024).to_c()
    assert p["base_target_ps"] == 6 * US and p["hop_scale_ps"] == 500_000 and p["hops"] == 3
    assert p["fs_range_ps"] == 4 * US and p["packet_bytes"] == 1024
    assert p["max_cwnd"] == pytest.approx(4 * 100e9 * 4e-6 / 8 / 1024)


def test_registry_and_host_api():
    assert "swift" in ALGORITHM_NAMES and params_class("swift") is SwiftParams
    assert _core.cc_kinds()["swift"][1]
    t = rdmasim.back_to_back()
    t.a.set_congestion_control("swift")
    with pytest.raises(TypeError, match="SwiftParams"):
        t.a.set_congestion_control("swift", default_params("timely"))
