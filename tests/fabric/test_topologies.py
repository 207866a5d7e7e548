"""Topology builders (dumbbell, star/incast, leaf_spine, fat_tree) carry verified traffic; link
failure and recovery at a given time recompute routes."""

from __future__ import annotations

import pytest
from fabric_util import assert_buffers_empty, flow, run_all

import rdmasim


def test_fat_tree_k4_all_pods():
    topo = rdmasim.fat_tree(4, seed=2)
    assert len(topo.hosts) == 16 and len(topo.cores) == 4 and len(topo.edges) == len(topo.aggs) == 8
    # an edge switch reaches another pod through both aggregation switches
    e0 = topo.edges[0]
    assert len(e0.next_hops(topo.hosts[-1])) == 2
    flows = [flow(topo.hosts[i], topo.hosts[(i + 5) % 16], 64 * 1024, seed=i) for i in range(16)]
    run_all(topo.sim, flows)
    assert all(f.delivered() for f in flows)
    assert sum(s.totals()["rx_pkts"] for s in topo.cores) > 0
    assert sum(s.totals()["drops"] for s in topo.edges + topo.aggs + topo.cores) == 0
    topo.sim.run()
    assert_buffers_empty(topo.sim)


def test_dumbbell_bottleneck_pfc():
    topo = rdmasim.dumbbell(4, 4, rate="100Gbps", bottleneck_rate="25Gbps", seed=4,
                            switch_config={"buffer": "1MB"})
    flows = [flow(topo.left[i], topo.right[i], 256 * 1024, seed=i) for i in range(4)]
    run_all(topo.sim, flows)
    assert all(f.delivered() for f in flows)
    t = topo.s_left.totals()
    assert t["drops"] == 0 and t["pfc_xoff_sent"] > 0
    # 1 MiB through 25 Gb/s takes at least 335 us
    assert topo.sim.now > 335_000_000


def test_builder_errors_name_the_value():
    with pytest.raises(ValueError, match="even int in 2..64"):
        rdmasim.fat_tree(3)
    with pytest.raises(ValueError, match="n_left must be in 1..4095"):
        rdmasim.dumbbell(0, 1)
    with pytest.raises(ValueError, match="spines must be in 1..2048"):
        rdmasim.leaf_spine(2, 0, 1)


def test_link_failure_and_recovery_reroute():
    topo = rdmasim.leaf_spine(2, 2, 1, seed=6)
    sim = topo.sim
    src, dst = topo.hosts
    leaf0, leaf1 = topo.leaves
    sp0 = topo.spines[0]
    link = sp0.ports[sp0.port_to(leaf1)]
    assert len(leaf0.next_hops(dst)) == 2
    f = flow(src, dst, 4 * 1024 * 1024, seed=1, timeout=8)  # 1 ms retransmit timeout
    link.fail(at="50us")
    link.recover(at="3ms")
    f.post()
    sim.run("100us")
    assert leaf0.next_hops(dst) == [leaf0.port_to(topo.spines[1])]
    assert sp0.next_hops(dst) == [sp0.port_to(leaf0)] or sp0.next_hops(dst) == []
    assert sim.wait_for(f.cq, 1, timeout="50ms")[0].status == 0
    assert f.delivered()
    sim.run(max(sim.now, 3_100_000_000))
    assert len(leaf0.next_hops(dst)) == 2


def test_same_seed_same_pcap_with_ecn_and_ecmp(tmp_path):
    def run(seed, name):
        topo = rdmasim.leaf_spine(2, 2, 4, seed=seed, switch_config={
            "buffer": "1MB", "ecn": {"kmin": "20KB", "kmax": "200KB", "pmax": 0.5}})
        topo.sim.capture(tmp_path / name)
        src, dst = topo.hosts_by_leaf
        flows = [flow(src[i], dst[0], 128 * 1024, seed=i) for i in range(4)]
        run_all(topo.sim, flows)
        topo.sim.close_capture()
        marks = sum(s.totals()["ecn_marked"] for s in topo.leaves + topo.spines)
        return (tmp_path / name).read_bytes(), marks
    a, marks_a = run(4, "a.pcap")
    b, marks_b = run(4, "b.pcap")
    assert marks_a > 0 and a == b and marks_a == marks_b


def test_leaf_spine_oversubscription_limits_cross_leaf_throughput():
    def finish(spines: int) -> float:
        topo = rdmasim.leaf_spine(2, spines, 4, host_rate="100Gbps", fabric_rate="100Gbps", seed=7)
        src, dst = topo.hosts_by_leaf
        flows = [flow(src[i], dst[i], 2 << 20, seed=i) for i in range(4)]
        run_all(topo.sim, flows)
        assert all(f.delivered() for f in flows)
        topo.sim.run()
        assert_buffers_empty(topo.sim)
        return topo.sim.now / 1e6, topo.oversubscription
    t1, o1 = finish(1)
    t4, o4 = finish(4)
    assert (o1, o4) == (4.0, 1.0)
    # 8 MiB through one 100G uplink vs 4 uplinks (ECMP may put two flows on one spine: <= 2x)
    assert t1 == pytest.approx(4 * 2**21 * 8 / 100e9 * 1e6, rel=0.1)
    assert t1 / t4 > 1.9


def test_loss_on_a_fabric_link_is_recovered():
    topo = rdmasim.dumbbell(2, 2, seed=5)
    topo.bottleneck.direction(topo.s_left).set_loss(0.02)
    flows = [flow(topo.left[i], topo.right[i], 1 << 20, seed=i, timeout=10) for i in range(2)]
    run_all(topo.sim, flows)
    assert all(f.delivered() for f in flows)
    assert topo.bottleneck.direction(topo.s_left).stats()["dropped"] > 0
    assert sum(f.qp.stats()["pkts_retx"] for f in flows) > 0
