"""rdmasim.partition: nodes to partitions for a parallel run (by pod in a fat tree, by leaf in a
leaf-spine) and the lookahead, the smallest delay of a link between two partitions."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim.partition import partition


def _first_switch(sim, host):
    for link in sim.links:
        if link.a is host:
            return link.b
        if link.b is host:
            return link.a
    raise AssertionError(host)


def _check_hosts_with_their_switch(sim, pt):
    for h in sim.hosts.values():
        assert pt.host_part[h.index] == pt.switch_part[_first_switch(sim, h).index]


def test_fat_tree_k4_splits_by_pod_and_deals_out_the_cores():
    t = rdmasim.fat_tree(4, delay="1us")
    pt = partition(t.sim, 2)
    assert pt.host_part == (0,) * 8 + (1,) * 8  # pods 0, 1 and pods 2, 3
    for sw in t.edges + t.aggs:
        pod = int(sw.name[4 if sw.name.startswith("edge") else 3:].split("_")[0])
        assert pt.switch_part[sw.index] == pod // 2
    assert [pt.switch_part[c.index] for c in t.cores] == [0, 0, 1, 1]
    assert pt.lookahead_ps == 1_000_000
    assert pt.cut_links == 8  # each pod's aggregation links to the other half's cores
    _check_hosts_with_their_switch(t.sim, pt)
    four = partition(t.sim, 4)
    assert four.host_part == tuple(i // 4 for i in range(16))
    assert [four.hosts_in(p) for p in range(4)] == [4, 4, 4, 4]
    assert partition(t.sim, 1).cut_links == 0 and partition(t.sim, 1).lookahead_ps is None


def test_leaf_spine_splits_by_leaf_and_the_lookahead_is_the_shortest_cut_link():
    t = rdmasim.leaf_spine(leaves=4, spines=2, hosts_per_leaf=3, delay="2us")
    pt = partition(t.sim, 2)
    for i, hosts in enumerate(t.hosts_by_leaf):
        assert {pt.host_part[h.index] for h in hosts} == {i // 2}
    assert [pt.switch_part[s.index] for s in t.spines] == [0, 1]
    assert pt.lookahead_ps == 2_000_000
    _check_hosts_with_their_switch(t.sim, pt)


def test_the_lookahead_is_the_shortest_link_between_partitions():
    sim = rdmasim.Simulator()
    leaves = [sim.add_switch(f"leaf{i}") for i in range(2)]
    spine = sim.add_switch("spine")
    for i, leaf in enumerate(leaves):
        for j in range(2):
            sim.connect(sim.add_host(f"h{i}_{j}"), leaf, delay="50ns")
    sim.connect(leaves[0], spine, delay="2us")  # the spine goes with partition 0: not cut
    sim.connect(leaves[1], spine, delay="300ns")
    pt = partition(sim, 2)
    assert pt.host_part == (0, 0, 1, 1)
    assert pt.switch_part[spine.index] == 0
    assert (pt.cut_links, pt.lookahead_ps) == (1, 300_000)


def test_hosts_under_one_switch_are_split_evenly():
    t = rdmasim.incast(6, rate="100Gbps", delay="500ns")
    pt = partition(t.sim, 3)
    assert sorted(pt.hosts_in(p) for p in range(3)) == [2, 2, 3]
    assert pt.lookahead_ps == 500_000


@pytest.mark.parametrize("parts", [0, -1, 17, 2.0, True])
def test_bad_part_counts_name_the_range(parts):
    t = rdmasim.fat_tree(4)
    with pytest.raises(ValueError, match=r"parts .*allowed an int in 1\.\.16"):
        partition(t.sim, parts)
