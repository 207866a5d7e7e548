"""Egress scheduling between priorities: strict priority and weighted round robin, with two lossless
classes chosen by DSCP (switch and host NIC maps agree), sharing one congested 100 Gb/s port."""

from __future__ import annotations

import pytest
from fabric_util import flow

import rdmasim
from rdmasim import fabric

DMAP = {10: 1, 20: 2}
SIZE = 4 << 20
LINE_US = SIZE * 8 / 100e9 * 1e6  # 335.5 us for 4 MiB of payload at 100 Gb/s


def two_classes(scheduler, weights=None):
    cfg = {"lossless": (1, 2), "dscp_map": DMAP, "scheduler": scheduler, "buffer": "2MB"}
    if weights:
        cfg["wrr_weights"] = weights
    topo = rdmasim.incast(2, seed=1, switch_config=cfg)
    for h in topo.hosts:
        fabric.host_dscp_map(h, DMAP)
    lo = flow(topo.senders[0], topo.receiver, SIZE, seed=1, traffic_class=10 << 2)
    hi = flow(topo.senders[1], topo.receiver, SIZE, seed=2, traffic_class=20 << 2)
    lo.post()
    hi.post()
    topo.sim.wait_for(hi.cq, 1)
    t_hi = topo.sim.now / 1e6
    topo.sim.wait_for(lo.cq, 1)
    t_lo = topo.sim.now / 1e6
    assert lo.delivered() and hi.delivered()
    assert topo.switch.totals()["drops"] == 0
    per_queue = topo.switch.port_stats(topo.switch.port_to(topo.receiver))["queue_tx_pkts"]
    assert per_queue[1] == per_queue[2] >= SIZE // 4096 and per_queue[3] == 0
    return t_hi, t_lo


def test_strict_priority_serves_the_higher_class_at_line_rate():
    t_hi, t_lo = two_classes("strict")
    assert t_hi == pytest.approx(LINE_US, rel=0.05)   # as if alone
    assert t_lo == pytest.approx(2 * LINE_US, rel=0.05)


def test_wrr_shares_by_weight():
    t_hi, t_lo = two_classes("wrr", [1, 1, 3, 1, 1, 1, 1, 1])
    assert t_hi == pytest.approx(LINE_US / 0.75, rel=0.05)  # 3 of every 4 packets
    assert t_lo == pytest.approx(2 * LINE_US, rel=0.05)
    t_hi, t_lo = two_classes("wrr")
    assert t_hi == pytest.approx(2 * LINE_US, rel=0.05)     # equal weights: equal shares


def test_host_dscp_map_errors():
    sim = rdmasim.Simulator()
    h = sim.add_host()
    with pytest.raises(ValueError, match=r"dscp_map\[1\] \(priority\) must be an int in 0..7"):
        fabric.host_dscp_map(h, {1: 9})


def test_host_dscp_map_set_after_connect_moves_the_acks_too():
    """A DSCP map set after the QPs are connected applies to their frames from then on: b's ACKs
    for traffic class 0 go on priority 5, so pausing 5 at b holds the WRITE's completion back
    until the pause ends."""
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us")
    f = flow(topo.a, topo.b, 4096)
    fabric.host_dscp_map(topo.b, {0: 5})
    fabric.inject_pfc(topo.b, {5: 0xFFFF})  # 335 us at 100 Gb/s
    f.post()
    topo.sim.run(topo.sim.now + 100_000_000)
    assert f.delivered()
    assert f.qp.stats()["acks_rcvd"] == 0  # the data arrived, its ACK waits behind the pause
    fabric.inject_pfc(topo.b, {5: 0})
    wcs = topo.sim.wait_for(f.cq, 1, timeout="10us")
    assert wcs[0].status == rdmasim.verbs.enums.IBV_WC_SUCCESS
    assert topo.b.pause_stats()["paused_ps"][5] > 0 and topo.b.pause_stats()["paused_ps"][3] == 0
