"""Rail-optimised GPU cluster: NIC i of every node on rail switch i, rail switches joined by spines.
Rail-aligned traffic (GPU i to GPU i of other nodes, as NCCL's rings and PXN arrange it) never
leaves its rail switch; cross-rail traffic crosses a spine."""

from __future__ import annotations

import pytest

import rdmasim

SIZE = 256 << 10


def test_structure() -> None:
    topo = rdmasim.rail_optimized(4, gpus_per_node=8, spines=2)
    assert len(topo.hosts) == 32 and len(topo.rails) == 8 and len(topo.spines) == 2
    for i, (rail,) in enumerate(topo.rails):
        assert {h.name for h in topo.rail(i)} == {f"n{n}_g{i}" for n in range(4)}
        assert len(rail.ports) == 4 + 2
        for h in topo.rail(i):
            assert rail.port_to(h) < 4
    assert all(len(s.ports) == 8 for s in topo.spines)
    assert topo.oversubscription == 2.0


def test_scalable_units() -> None:
    topo = rdmasim.rail_optimized(6, gpus_per_node=2, spines=3, nodes_per_unit=4)
    assert [len(r) for r in topo.rails] == [2, 2]  # units of 4 and 2 nodes
    assert topo.rails[1][1].port_to(topo.nodes[5][1]) == 1
    assert all(len(s.ports) == 4 for s in topo.spines)
    with pytest.raises(ValueError, match="nodes_per_unit"):
        rdmasim.rail_optimized(4, nodes_per_unit=5)


def _run(topo, pairs: list[tuple[int, int]]) -> None:
    hosts = topo.hosts
    table = {"src": [hosts[a].name for a, _ in pairs], "dst": [hosts[b].name for _, b in pairs],
             "size": [SIZE] * len(pairs)}
    flows = topo.sim.add_flows(table)
    topo.sim.run_flows()
    assert (flows.results()["status"] == 0).all()


def test_rail_aligned_traffic_stays_on_its_rail_switch() -> None:
    topo = rdmasim.rail_optimized(4, gpus_per_node=4, spines=2, host_rate="100Gbps")
    g = 4
    _run(topo, [(n * g + i, ((n + 1) % 4) * g + i) for n in range(4) for i in range(g)])  # a ring per rail
    assert all(s.totals()["rx_pkts"] == 0 for s in topo.spines)
    for (rail,) in topo.rails:
        assert rail.totals()["rx_pkts"] > 0


def test_cross_rail_traffic_crosses_a_spine() -> None:
    topo = rdmasim.rail_optimized(2, gpus_per_node=2, spines=2, host_rate="100Gbps")
    _run(topo, [(0, 3)])  # n0_g0 -> n1_g1
    assert sum(s.totals()["rx_pkts"] for s in topo.spines) > SIZE // 4096
