"""Linear forwarding tables (rdmasim.ib_fabric): min-hop and up*/down* route computation, the C
lookup by DLID, missing entries, and the switch forwarding latency parameter."""

from __future__ import annotations

import itertools

import pytest
from fabric_util import flow, run_all

import rdmasim
from rdmasim import ib_fabric as ib
from rdmasim import trace as tr


def _hops(sim, a, b) -> int:
    """Switches on a shortest path between hosts a and b (BFS over the switch graph)."""
    sa = a.link.b if a.link.a is a else a.link.a
    sb = b.link.b if b.link.a is b else b.link.a
    dist, order = {sa.name: 1}, [sa]
    for s in order:
        for link in s.ports:
            peer = link.b if link.a is s else link.a
            if isinstance(peer, rdmasim.Switch) and peer.name not in dist:
                dist[peer.name] = dist[s.name] + 1
                order.append(peer)
    return dist[sb.name]


def test_minhop_takes_shortest_paths_and_balances_uplinks():
    ls = rdmasim.leaf_spine(3, 2, 2, seed=1)
    tables = ib.lft_minhop(ls.sim)
    for a, b in itertools.permutations(ls.hosts, 2):
        assert len(ib.lft_path(ls.sim, a, b, tables)) == _hops(ls.sim, a, b)
    for leaf in ls.leaves:
        ups = [leaf.port_to(s) for s in ls.spines]
        remote = [ib.dlid(h) for h in ls.hosts if h not in ls.hosts_by_leaf[ls.leaves.index(leaf)]]
        per_up = [sum(tables[leaf.name][d] == p for d in remote) for p in ups]
        assert sum(per_up) == len(remote) and max(per_up) - min(per_up) <= 1, per_up


def _rank(sim, roots):
    rank = {r.name: 0 for r in roots}
    order = list(roots)
    for s in order:
        for link in s.ports:
            peer = link.b if link.a is s else link.a
            if isinstance(peer, rdmasim.Switch) and peer.name not in rank:
                rank[peer.name] = rank[s.name] + 1
                order.append(peer)
    return rank


@pytest.mark.parametrize("build", ["fat_tree", "ring"])
def test_updn_routes_are_up_then_down(build):
    if build == "fat_tree":
        topo = rdmasim.fat_tree(4, seed=1)
        sim, hosts = topo.sim, topo.hosts
    else:
        topo = rdmasim.ring(6, seed=1)
        sim, hosts = topo.sim, [row[0] for row in topo.hosts]
    roots = ib.updn_roots(sim)
    if build == "fat_tree":
        assert {r.name for r in roots} == {c.name for c in topo.cores}
    tables = ib.lft_updn(sim)
    rank = _rank(sim, roots)
    index = {s.name: s.index for s in sim.switches.values()}
    key = {n: (rank[n], index[n]) for n in rank}
    for a, b in itertools.permutations(hosts, 2):
        path = ib.lft_path(sim, a, b, tables)
        ups = [key[v] < key[u] for u, v in itertools.pairwise(path)]
        assert ups == sorted(ups, reverse=True), (a.name, b.name, path)  # no up after a down
        if build == "fat_tree":
            assert len(path) == _hops(sim, a, b)  # a fat tree loses nothing to up*/down*


def test_switches_forward_by_their_lft():
    """Both leaves' traffic for h2 is pinned to one spine, then the other: the data follows."""
    ls = rdmasim.leaf_spine(2, 2, 2, seed=3)
    sim = ls.sim
    src, dst = ls.hosts[0], ls.hosts[2]
    base = ib.lft_minhop(sim)
    leaf0 = ls.leaves[0]
    sent = []
    for spine in ls.spines:
        tables = {k: list(v) for k, v in base.items()}
        tables[leaf0.name][ib.dlid(dst)] = leaf0.port_to(spine)
        ib.set_lft(sim, tables)
        before = [s.port_stats(s.port_to(ls.leaves[1]))["tx_pkts"] for s in ls.spines]
        run_all(sim, [flow(src, dst, 64 * 1024, seed=1)])
        after = [s.port_stats(s.port_to(ls.leaves[1]))["tx_pkts"] for s in ls.spines]
        sent.append([y - x for x, y in zip(before, after, strict=True)])
    assert sent[0][0] >= 16 and sent[0][1] == 0
    assert sent[1][1] >= 16 and sent[1][0] == 0


def test_missing_lft_entry_drops_as_no_route_and_errors_name_the_entry():
    ls = rdmasim.leaf_spine(2, 1, 1, seed=1)
    sim = ls.sim
    tables = ib.lft_minhop(sim)
    tables["leaf0"][ib.dlid(ls.hosts[1])] = ib.LFT_NONE
    ib.set_lft(sim, tables)
    f = flow(ls.hosts[0], ls.hosts[1], 4096, seed=1, timeout=1, retry_cnt=0)
    f.post()
    sim.run("1ms")
    assert ls.leaves[0].totals()["drops_no_route"] > 0
    with pytest.raises(ValueError, match="leaf0 DLID 1 -> port 7"):
        ib.set_lft(sim, {"leaf0": [ib.LFT_NONE, 7]})
    with pytest.raises(ValueError, match="no switch 'nope'"):
        ib.set_lft(sim, {"nope": []})
    with pytest.raises(ValueError, match="engine must be 'minhop' or 'updn'"):
        ib.route_lft(sim, "ftree")


def test_switch_latency_delays_forwarding_by_its_value():
    """The same one-switch path with latency 0 and with an InfiniBand switch's 90 ns: the switch
    puts the first frame on its egress link exactly 90 ns later."""
    out = []
    for lat in (0, ib.SWITCH_LATENCY["infiniband"]):
        sim = rdmasim.Simulator()
        s = sim.add_switch("s", ports=2, latency=lat)
        a, b = sim.add_host("a"), sim.add_host("b")
        la, lb = sim.connect(a, s), sim.connect(s, b)
        t = sim.trace()
        run_all(sim, [flow(a, b, 64)])
        x = t.to_numpy()
        tx = x[x["kind"] == tr.TX]
        out.append(tx["t_ps"][tx["link"] == lb.ab.link_id][0] - tx["t_ps"][tx["link"] == la.ab.link_id][0])
    assert out[1] - out[0] == 90_000
    with pytest.raises(ValueError, match="latency"):
        rdmasim.Simulator().add_switch("s", latency=-1)
