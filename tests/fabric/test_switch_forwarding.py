"""A switch forwards RC traffic between hosts: bytes arrive intact, counters add up, config errors
name the value and the allowed range."""

from __future__ import annotations

import pytest
from fabric_util import flow, run_all

import rdmasim


def test_two_hosts_through_one_switch():
    sim = rdmasim.Simulator(3)
    a, b = sim.add_host("a"), sim.add_host("b")
    s = sim.add_switch("s", ports=4)
    sim.connect(a, s, rate="100Gbps", delay="1us")
    sim.connect(s, b, rate="100Gbps", delay="1us")
    f = flow(a, b, 1 << 20)
    run_all(sim, [f])
    assert f.delivered()
    t = s.totals()
    assert t["drops"] == 0 and t["rx_pkts"] == t["tx_pkts"] > 256
    st = s.port_stats(s.port_to(b))
    assert st["tx_pkts"] >= 256 and st["tx_bytes"] > 1 << 20


def test_back_to_back_unchanged_and_switch_errors():
    topo = rdmasim.back_to_back()
    assert topo.a.link is topo.b.link
    sim = topo.sim
    with pytest.raises(ValueError, match="ports must be an int in 1..4096"):
        sim.add_switch("x", ports=0)
    with pytest.raises(ValueError, match="lossless priority must be an int in 0..7"):
        sim.add_switch("x", lossless=(8,))
    with pytest.raises(ValueError, match="kmax"):
        sim.add_switch("x", ecn={"kmin": "100KB", "kmax": "10KB"})
    with pytest.raises(Exception, match="smaller than the reserve"):
        sim.add_switch("x", ports=4, buffer="10KB")
    s = sim.add_switch("s", ports=1)
    h = sim.add_host("c")
    sim.connect(s, h)
    with pytest.raises(Exception, match="all 1 ports connected"):
        sim.connect(s, sim.add_host("d"))
    with pytest.raises(Exception, match="already has a link"):
        sim.connect(topo.a, sim.add_switch("s2", ports=2))


def test_no_route_is_counted_not_silent():
    sim = rdmasim.Simulator(1)
    a, b = sim.add_host("a"), sim.add_host("b")
    s1, s2 = sim.add_switch("s1", ports=2), sim.add_switch("s2", ports=2)
    sim.connect(a, s1)
    sim.connect(s2, b)  # s1 and s2 are not connected: no path
    f = flow(a, b, 4096, timeout=1, retry_cnt=1)
    f.post()
    sim.run("200us")
    assert s1.totals()["drops_no_route"] >= 1
    assert s1.next_hops(b) == []
