"""The retransmit timeout of a UET PDC (csrc/uet/rto.c): estimated from RTT samples (smoothed RTT +
4 x mean deviation, RFC 6298) with exponential backoff up to rto_max, or fixed."""

from __future__ import annotations

import pytest

from rdmasim import fabric, topology
from rdmasim.flows import describe_status


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def _last_packet_lost(**uet: object):
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=9)  # the last of 10: only the timer finds it
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [10 * 4096]}, transport="uet",
                         uet={"ack_every": 1, **uet})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["retx_pkts"][0]) == 1
    return int(r["fct_ps"][0])


def test_estimated_timeout_follows_the_rtt_down_to_rto_min() -> None:
    # RTT here is a few microseconds: the estimate falls to rto_min, far below the 1 ms initial value
    fct = _last_packet_lost(rto="1ms", rto_min="20us", rto_estimate=True)
    assert 20_000_000 <= fct < 60_000_000
    # fixed (the default): the full value
    assert _last_packet_lost(rto="1ms") >= 1_000_000_000


def test_timeouts_back_off_exponentially_up_to_rto_max() -> None:
    # every copy of PSN 9 is lost 3 times: the timer waits rto, 2 rto, 4 rto (capped by rto_max)
    def run(rto_max: str) -> int:
        t = _pair()
        fabric.add_drop_rule(t.link.direction(t.a), psn=9, count=3)
        fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [10 * 4096]}, transport="uet",
                             uet={"ack_every": 1, "rto_estimate": True, "rto_min": "20us",
                                  "rto_max": rto_max})
        t.sim.run_flows()
        r = fs.results()
        assert int(r["retx_pkts"][0]) == 3
        return int(r["fct_ps"][0])

    # 20 + 40 + 80 us of timers (and the transfer) with room; capped at 30 us: 20 + 30 + 30
    assert 140_000_000 <= run("10ms") < 180_000_000
    assert 80_000_000 <= run("30us") < 120_000_000


def test_the_fixed_timer_does_not_back_off() -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=9, count=3)
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [10 * 4096]}, transport="uet",
                         uet={"ack_every": 1, "rto": "20us"})
    t.sim.run_flows()
    assert 60_000_000 <= int(fs.results()["fct_ps"][0]) < 80_000_000  # 3 timeouts of 20 us


@pytest.mark.parametrize("uet, match", [
    ({"rto_min": "50us", "rto_max": "10us"}, r"uet\.rto_max"),
    ({"rto_estimate": "yes"}, r"uet\.rto_estimate"),
    ({"rto_min": 0}, r"uet\.rto_min"),
])
def test_bad_rto_options_are_refused_naming_the_key(uet: dict, match: str) -> None:
    t = _pair()
    with pytest.raises((ValueError, TypeError), match=match):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [1000]}, transport="uet", uet=uet)
