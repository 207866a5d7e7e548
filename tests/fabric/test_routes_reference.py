"""Every switch's equal-cost next hops towards every host equal a pure-Python reference: a BFS
per destination host over the switches (hosts are never transit nodes), a port being a next hop
when its peer is one hop nearer the destination.  On several topologies, with links failed."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

import rdmasim


def reference_next_hops(sim: Any, down: set[int]) -> dict[tuple[int, int], list[int]]:
    """(switch index, host index) -> next-hop ports, links with id() in ``down`` left out."""
    switches = list(sim.switches.values())
    hosts = list(sim.hosts.values())

    def key(node: Any) -> tuple[str, int]:
        return ("s" if node in switches else "h", node.index)

    def peer(sw: Any, port: int) -> Any | None:
        link = sw.ports[port]
        if id(link) in down:
            return None
        return link.b if link.a is sw else link.a

    out: dict[tuple[int, int], list[int]] = {}
    for dst in hosts:
        dist: dict[tuple[str, int], int] = {key(dst): 0}
        first = None
        if dst.link is not None and id(dst.link) not in down:
            other = dst.link.b if dst.link.a is dst else dst.link.a
            first = other if other in switches else None
        q: deque[Any] = deque()
        if first is not None:
            dist[key(first)] = 1
            q.append(first)
        while q:
            sw = q.popleft()
            for p in range(len(sw.ports)):
                v = peer(sw, p)
                if v is not None and v in switches and key(v) not in dist:
                    dist[key(v)] = dist[key(sw)] + 1
                    q.append(v)
        for sw in switches:
            ds = dist.get(key(sw), -1)
            hops = []
            for p in range(len(sw.ports)):
                v = peer(sw, p)
                nearer = v is not None and (v is dst or v in switches) and dist.get(key(v), -1) == ds - 1
                if ds > 0 and nearer:
                    hops.append(p)
            out[(sw.index, dst.index)] = hops
    return out


def assert_routes_match(sim: Any, down: set[int] = frozenset()) -> None:  # type: ignore[assignment]
    ref = reference_next_hops(sim, set(down))
    hosts = list(sim.hosts.values())
    for sw in sim.switches.values():
        for dst in hosts:
            assert sw.next_hops(dst) == ref[(sw.index, dst.index)], (sw.name, dst.name)


@pytest.mark.parametrize("build", [
    lambda: rdmasim.fat_tree(4, seed=1),
    lambda: rdmasim.leaf_spine(3, 2, 2, seed=1),
    lambda: rdmasim.dumbbell(2, 3, seed=1),
    lambda: rdmasim.topology.ring(5, hosts_per_switch=2, seed=1),
    lambda: rdmasim.topology.star(4, seed=1),
], ids=["fat_tree4", "leaf_spine", "dumbbell", "ring", "star"])
def test_next_hops_equal_reference(build: Any) -> None:
    topo = build()
    assert_routes_match(topo.sim)


def test_next_hops_equal_reference_after_failures() -> None:
    topo = rdmasim.fat_tree(4, seed=1)
    sim = topo.sim
    # a core link, an aggregation link and a host's own link
    failed = [topo.cores[0].ports[0], topo.aggs[1].ports[0], topo.hosts[3].link]
    for link in failed:
        link.fail(at="1ns")
    sim.run("10ns")
    assert_routes_match(sim, {id(x) for x in failed})


def test_host_on_host_link_and_unconnected_switch_have_no_routes() -> None:
    sim = rdmasim.Simulator(seed=1)
    a, b, c = sim.add_host("a"), sim.add_host("b"), sim.add_host("c")
    s1, s2 = sim.add_switch("s1", ports=4), sim.add_switch("s2", ports=4)
    sim.add_switch("lonely", ports=2)
    sim.connect(a, b)  # two hosts back to back: no switch reaches either
    sim.connect(c, s1)
    sim.connect(s1, s2)
    assert_routes_match(sim)
    assert s2.next_hops(c) == [s2.port_to(s1)] and s1.next_hops(a) == []


def test_route_tables_grow_with_leaves_not_hosts_times_ports() -> None:
    """A switch keeps one row of next hops per leaf (switch hosts hang off) and per host of its
    own, and a 4-byte index per destination host: a 128-host fat tree's tables are far below the
    2 bytes per host and port of a flat table, and the routes still equal the reference."""
    topo = rdmasim.fat_tree(8, seed=1)
    sim = topo.sim
    hosts = len(sim.hosts)
    leaves = len(topo.edges)
    for sw in sim.switches.values():
        ports = len(sw.ports)
        own = sum(1 for p in range(ports) if sw.ports[p].a in topo.hosts or sw.ports[p].b in topo.hosts)
        rows = 1 + leaves + own
        assert sw.route_table_bytes() <= 4 * (hosts + 1) + 2 * rows * (ports + 1), sw.name
        assert sw.route_table_bytes() < hosts * ports * 2 // 2, sw.name
    assert_routes_match(sim)
    # a static route is a row of its own; the others keep theirs
    edge = topo.edges[0]
    far = topo.hosts[-1]
    before = edge.route_table_bytes()
    rdmasim.fabric.set_route(edge, far, [edge.next_hops(far)[0]])
    assert edge.next_hops(far) == [edge.next_hops(topo.hosts[-2])[0]]
    assert edge.route_table_bytes() > before
