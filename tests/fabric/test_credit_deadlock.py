"""Credit-loop deadlock: the cyclic buffer dependency of the PFC deadlock test
(tests/fabric/test_failure_modes.py: four switches in a ring, h_i -> h_{i+2}) reproduced with
InfiniBand credits instead of PFC, found by the deadlock detector, and gone under up*/down* LFT
routing, which never closes the cycle (docs/mechanisms/credits.md)."""

from __future__ import annotations

from fabric_util import assert_buffers_empty, flow

import rdmasim
from rdmasim import fabric
from rdmasim import ib_fabric as ib

RING = 4


#: the class (DSCP) of the flows that cross the ring's s3 -> s0 link under the clockwise routes
DATELINE_DSCP = 8


def ring_with_credits(routing: str, seed: int = 1, dateline_vl: bool = False):
    """The PFC deadlock ring with credits (32 KB per port and VL): ``routing`` is ``"pinned"``
    (clockwise static routes, as the PFC test), or an LFT engine (``"minhop"``, ``"updn"``).
    ``dateline_vl``: the flows whose path crosses the s3 -> s0 link (from h2 and h3) use SL 1,
    mapped to VL 1, the others SL 0 on VL 0 -- a LASH-style SL per path, two VLs."""
    cfg = {"dscp_map": {0: 0, DATELINE_DSCP: 1}} if dateline_vl else None
    topo = rdmasim.ring(RING, clockwise=routing == "pinned", seed=seed, switch_config=cfg)
    sim = topo.sim
    h = [row[0] for row in topo.hosts]
    if dateline_vl:
        for x in h:
            fabric.host_dscp_map(x, {0: 0, DATELINE_DSCP: 1})
        ib.enable_credits(sim, vls=2, buffer="32KB", sl2vl={0: 0, 1: 1})
    else:
        ib.enable_credits(sim, buffer="32KB")
    if routing != "pinned":
        ib.route_lft(sim, routing)
    fabric.enable_deadlock_detector(sim, "10us")
    tc = [(DATELINE_DSCP << 2) if dateline_vl and i in (2, 3) else 0 for i in range(RING)]
    flows = [flow(h[i], h[(i + 2) % RING], 256 * 1024, seed=i, timeout=8, traffic_class=tc[i])
             for i in range(RING)]
    for f in flows:
        f.post()
    sim.run("5ms")
    return topo, flows


def test_credit_loop_deadlocks_like_pfc():
    topo, flows = ring_with_credits("pinned")
    sim, sw = topo.sim, topo.switches
    found = fabric.deadlock(sim)
    assert found is not None
    t_ps, cycle = found
    assert t_ps < 1_000_000_000 and len(cycle) == RING and {c[0] for c in cycle} == {s.name for s in sw}
    assert all(f.qp.stats()["msgs_completed"] == 0 for f in flows)   # 5 ms on, nothing moved
    for name, port, vl in cycle:
        st = sim.switches[name].port_stats(port)
        assert st["credit_stalled_mask"] >> vl & 1                   # stalled for credits ...
        assert st["credit_stall_ps"][vl] > 4_900_000_000             # ... nearly all the run
        assert st["pfc_xoff_sent"] == 0 and st["paused_ps"][vl] == 0  # no PFC involved
    assert sum(s.totals()["drops"] for s in sw) == 0                 # lossless: stuck, not dropping
    print(f"\ncredit deadlock at {t_ps / 1e6:.1f} us: {cycle}")


def test_minhop_lft_also_closes_the_cycle():
    """Min-hop spreads the two equal paths of each pair; on this ring the choice closes a cycle."""
    topo, flows = ring_with_credits("minhop")
    assert fabric.deadlock(topo.sim) is not None
    assert all(f.qp.stats()["msgs_completed"] == 0 for f in flows)


def test_updn_lft_breaks_the_credit_loop():
    topo, flows = ring_with_credits("updn")
    sim = topo.sim
    assert fabric.deadlock(sim) is None
    assert all(f.qp.stats()["msgs_completed"] == 1 and f.delivered() for f in flows)
    sim.run()
    assert_buffers_empty(sim)


def test_separate_vls_break_the_credit_loop():
    """Same clockwise routes, but the two flows over the dateline link on their own VL: each VL's
    dependencies form a chain, not a cycle."""
    topo, flows = ring_with_credits("pinned", dateline_vl=True)
    sim = topo.sim
    assert fabric.deadlock(sim) is None
    assert all(f.qp.stats()["msgs_completed"] == 1 and f.delivered() for f in flows)
    s0 = sim.switches["s0"]
    q = s0.port_stats(s0.port_to(sim.switches["s1"]))["queue_tx_pkts"]
    assert q[0] > 0 and q[1] > 0  # h0's flow on VL 0, h3's (past the dateline) on VL 1
    sim.run()
    assert_buffers_empty(sim)
