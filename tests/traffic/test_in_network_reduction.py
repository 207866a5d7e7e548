"""In-network (SHARP-style) all-reduce: the bytes on every rank's link, from the switch's port counters,
against ring all-reduce on the same fabric. Ring: each rank sends and receives 2(p-1)/p n; in-network:
n each way, a ratio of p / (2(p-1)) (0.57 for 8 ranks, 0.53 for 16: about half)."""

from __future__ import annotations

import pytest

from rdmasim import topology
from rdmasim import traffic as tr
from rdmasim.topology import star_with_aggregator
from rdmasim.traffic.collectives import in_network_allreduce


def _rank_link_bytes(st: object, p: int) -> list[int]:
    sw = st.switch  # type: ignore[attr-defined]
    out = []
    for h in st.hosts[:p]:  # type: ignore[attr-defined]
        s = sw.port_stats(sw.port_to(h))
        out.append(int(s["tx_bytes"]) + int(s["rx_bytes"]))
    return out


@pytest.mark.parametrize("p", [4, 8, 16])
def test_in_network_allreduce_moves_about_half_the_bytes_of_ring(p: int) -> None:
    n = 1 << 20
    ring_star = topology.star(p, mtu=4096)
    ring_star.sim.add_flows(tr.ring_allreduce(p, n), mtu=4096)
    ring_star.sim.run_flows()
    ring = _rank_link_bytes(ring_star, p)

    st, agg = star_with_aggregator(p, mtu=4096)
    fs = st.sim.add_flows(in_network_allreduce(p, n, agg, chunk_size="64KiB"), mtu=4096)
    st.sim.run_flows()
    assert (fs.results()["status"] == 0).all()
    inc = _rank_link_bytes(st, p)

    expected = p / (2 * (p - 1))
    for r, i in zip(ring, inc, strict=True):
        assert i / r == pytest.approx(expected, rel=0.01)
    if p >= 8:
        assert max(inc) / min(ring) < 0.58


def test_two_level_aggregation_tree_on_a_leaf_spine() -> None:
    """One aggregator per leaf and one for the spine: every rank's link still carries n each way, and
    only one copy per leaf crosses the leaf-spine links."""
    from rdmasim.units import parse_rate

    ls = topology.leaf_spine(leaves=2, spines=1, hosts_per_leaf=3, host_rate="100Gbps",
                             switch_config={"ports": 5})  # a spare port each for an aggregator
    sim = ls.sim
    hosts = list(ls.hosts)
    ranks = [h.index for h in hosts]
    leaves, spine = ls.leaves, ls.spines[0]
    fast = 4 * parse_rate("100Gbps")
    aggs = [sim.add_host(f"agg{i}") for i in range(3)]
    for a, sw in zip(aggs, [*leaves, spine], strict=True):
        sim.connect(a, sw, rate=fast, delay=0, mtu=4096)
    by_leaf = [[h.index for h in group] for group in ls.hosts_by_leaf]
    tree = {aggs[0].index: by_leaf[0], aggs[1].index: by_leaf[1],
            aggs[2].index: [aggs[0].index, aggs[1].index]}
    n = 256 << 10
    fs = sim.add_flows(in_network_allreduce(ranks, n, tree, chunk_size="32KiB"), mtu=4096)
    sim.run_flows()
    res = fs.results()
    assert (res["status"] == 0).all()
    for h in hosts:
        sent = int(res["bytes_delivered"][res["src"] == h.index].sum())
        got = int(res["bytes_delivered"][res["dst"] == h.index].sum())
        assert sent == got == n
    for leaf in leaves:  # one reduced copy up and one result down per leaf-spine link
        st = spine.port_stats(spine.port_to(leaf))
        assert 2 * n <= int(st["tx_bytes"]) + int(st["rx_bytes"]) <= 2.1 * n
