"""Dragonfly (Kim, Dally, Scott and Abts, ISCA 2008): the builder's structure, group routing in the
switches (minimal, Valiant, UGAL-L) and its validation against the paper's throughput results.

The fabric: a = 4 routers per group, p = 2 hosts and h = 2 global links per router (balanced:
a = 2p = 2h), g = a*h + 1 = 9 groups, one global link per pair of groups, every link 100 Gb/s.
Throughput runs are lossy with IRN selective repeat and four QPs per host (see
tests/fabric/routing_util.py); with PFC, minimal routing deadlocks under the adversarial pattern
(the last test), as the paper's virtual channels are there to prevent.
"""

from __future__ import annotations

from collections import Counter

import pytest
from routing_util import QPS, adversarial, dragonfly_gbps, sustained_goodput_gbps, uniform_random

from rdmasim import fabric
from rdmasim.topology import dragonfly, dragonfly_links

RATE_GBPS = 100


@pytest.mark.parametrize(("a", "h", "groups"), [(4, 2, 9), (4, 2, 5), (4, 2, 3), (2, 1, 3), (8, 4, 33)])
def test_global_links_balanced(a: int, h: int, groups: int) -> None:
    links = dragonfly_links(groups, a, h)
    pairs = Counter((min(i, j), max(i, j)) for i, _, j, _ in links)
    assert len(pairs) == groups * (groups - 1) // 2  # every pair of groups is linked ...
    assert set(pairs.values()) == {(a * h) // (groups - 1)}  # ... by the same number of links
    ports = Counter()
    for i, ri, j, rj in links:
        assert i != j
        ports[(i, ri)] += 1
        ports[(j, rj)] += 1
    assert max(ports.values()) <= h  # no router has more than h global links


def test_builder_structure() -> None:
    df = dragonfly(4, 2, 2)
    assert df.groups == 9 and len(df.all_hosts) == 72
    assert sum(len(g) for g in df.routers) == 36
    for grp in df.routers:
        for r in grp:
            assert len(r.ports) == r.config["n_ports"] == 2 + 3 + 2  # hosts, local, global
            assert r.config["routing"] == fabric.ROUTING.index("minimal")
    assert all(len(v) == 1 for v in df.global_links.values()) and len(df.global_links) == 36


def test_bad_parameters_name_them() -> None:
    with pytest.raises(ValueError, match="groups"):
        dragonfly(4, 2, 2, groups=10)
    with pytest.raises(ValueError, match="routing"):
        dragonfly(routing="shortest")
    with pytest.raises(ValueError, match="routing"):
        dragonfly(switch_config={"routing": "valiant"})
    with pytest.raises(ValueError, match="routing must be one of"):
        fabric.switch_config(routing="west-first")
    with pytest.raises(ValueError, match="group"):
        fabric.switch_config(group=fabric.MAX_GROUPS)


#: bytes on a global link direction above which it carried data, not only ACKs (about 62 B each)
DATA = 4096


def _global_tx(df) -> dict[tuple[int, int], int]:
    """Bytes sent on each direction (from group, to group) of every global link."""
    out = {}
    for links in df.global_links.values():
        for link in links:
            gi, gj = (int(link.a.name[1:].split("_")[0]), int(link.b.name[1:].split("_")[0]))
            out[(gi, gj)] = out.get((gi, gj), 0) + link.ab.stats()["bytes"]
            out[(gj, gi)] = out.get((gj, gi), 0) + link.ba.stats()["bytes"]
    assert set(out) == {(i, j) for i in range(df.groups) for j in range(df.groups) if i != j}
    return out


def _one_group_to_next(routing: str, path_select: str = "ecmp"):
    df = dragonfly(routing=routing, switch_config={"lossless": (), "path_select": path_select})
    src = [x.name for x in df.group_hosts(0)]
    dst = [x.name for x in df.group_hosts(1)]
    df.sim.add_flows({"src": src, "dst": dst, "size": [64 << 10] * len(src)}, recovery="irn", irn_window=64)
    df.sim.run_flows()
    return df, _global_tx(df)


def test_minimal_crosses_one_global_link() -> None:
    df, tx = _one_group_to_next("minimal")
    data = {k: v for k, v in tx.items() if v > DATA}  # ACKs aside
    assert list(data) == [(0, 1)], data


def test_valiant_per_flow_spreads_flows_over_intermediate_groups() -> None:
    df, tx = _one_group_to_next("valiant")
    first_legs = [g for g in range(2, df.groups) if tx[(0, g)] > DATA]
    # each flow's packets go 0 -> g -> 1 for its own g (or 0 -> 1 when g = 1 was drawn)
    assert first_legs, tx
    for g in first_legs:
        assert tx[(g, 1)] >= tx[(0, g)] * 0.9, (g, tx[(0, g)], tx[(g, 1)])
    # no packet takes a second detour: nothing leaves group 0 to group g and then goes elsewhere
    assert all(tx[(g, k)] <= DATA for g in first_legs for k in range(df.groups) if k not in (0, 1, g))


def test_valiant_per_packet_uses_every_intermediate_group_for_one_flow() -> None:
    df = dragonfly(routing="valiant", switch_config={"lossless": (), "path_select": "spray"})
    a, b = df.group_hosts(0)[0], df.group_hosts(1)[0]
    df.sim.add_flows({"src": [a.name], "dst": [b.name], "size": [256 << 10]}, recovery="irn", irn_window=64)
    df.sim.run_flows()
    tx = _global_tx(df)
    assert all(tx[(0, g)] > DATA for g in range(1, df.groups)), tx  # one QP, all 8 ways out


def test_valiant_is_deterministic_per_seed() -> None:
    def legs(seed: int) -> list[int]:
        df = dragonfly(routing="valiant", switch_config={"lossless": (), "ecmp_seed": seed})
        src = [x.name for x in df.group_hosts(0)]
        dst = [x.name for x in df.group_hosts(1)]
        df.sim.add_flows({"src": src, "dst": dst, "size": [16 << 10] * len(src)})
        df.sim.run_flows()
        tx = _global_tx(df)
        return [tx[(0, g)] for g in range(1, df.groups)]

    assert legs(1) == legs(1)
    assert legs(1) != legs(2)


@pytest.fixture(scope="module")
def adversarial_gbps() -> dict[str, float]:
    return {r: dragonfly_gbps(r, adversarial) for r in ("minimal", "valiant", "ugal")}


def test_adversarial_minimal_saturates_the_global_link(adversarial_gbps: dict[str, float]) -> None:
    bound = RATE_GBPS / 8  # one 100 Gb/s global link shared by the a x p = 8 hosts of a group
    assert 0.85 * bound <= adversarial_gbps["minimal"] <= 1.2 * bound, adversarial_gbps
    print(f"\nadversarial, minimal: {adversarial_gbps['minimal']:.1f} Gb/s per host (bound {bound:.1f})")


def test_adversarial_valiant_sustains_about_half_the_injection(adversarial_gbps: dict[str, float]) -> None:
    # Kim et al. 2008: Valiant routing sustains about 50 % of the injection bandwidth under this
    # worst case; every packet crosses two global links, so 50 % is also the bound
    assert 0.4 * RATE_GBPS <= adversarial_gbps["valiant"] <= 0.55 * RATE_GBPS, adversarial_gbps
    assert adversarial_gbps["valiant"] > 3 * adversarial_gbps["minimal"]
    assert adversarial_gbps["ugal"] > 2.5 * adversarial_gbps["minimal"]
    print(f"\nadversarial per host: {adversarial_gbps}")


def test_uniform_random_minimal_beats_valiant() -> None:
    got = {r: dragonfly_gbps(r, uniform_random) for r in ("minimal", "valiant")}
    assert got["minimal"] > 1.2 * got["valiant"], got
    print(f"\nuniform random per host: {got}")


def test_minimal_with_pfc_deadlocks_under_the_adversarial_pattern() -> None:
    # one lossless class for every hop: a local link carries packets both before and after their
    # global hop, so paused queues close a cycle around the groups (what Kim et al.'s VCs break)
    df = dragonfly(routing="minimal")
    fabric.enable_deadlock_detector(df.sim, "10us")
    src, dst = adversarial(df)
    df.sim.add_flows({"src": src, "dst": dst, "size": [1 << 20] * len(src)})
    df.sim.run_flows(until="1ms")
    found = fabric.deadlock(df.sim)
    assert found is not None
    _, cycle = found
    groups = {name.split("_")[0] for name, _, _ in cycle}
    assert len(groups) == df.groups, cycle  # the cycle runs through every group


def test_hop_classes_break_the_deadlock() -> None:
    # Kim et al.'s virtual channels as priorities: 3 before any global link, 4 after one, 5 after two
    df = dragonfly(routing="minimal", hop_classes=True)
    r = df.routers[0][0]
    assert r.config["hop_classes"] == 1 and r.config["pfc_mask"] == 0b111000 and r.config["wrr"] == 1
    fabric.enable_deadlock_detector(df.sim, "10us")
    src, dst = adversarial(df)
    gbps = sustained_goodput_gbps(df.sim, src, dst, recovery="gbn").reshape(-1, QPS).sum(axis=1)
    assert fabric.deadlock(df.sim) is None
    assert 0.85 * RATE_GBPS / 8 <= gbps.mean() <= 1.2 * RATE_GBPS / 8, gbps.mean()
    # the global links carried priority 4, the local links before them priority 3
    g0 = df.global_links[(0, 1)][0]
    out = g0.ab if g0.a.name.startswith("r0_") else g0.ba
    sw = out.src
    q = sw.port_stats(sw.port_to(out.dst))["queue_tx_pkts"]
    assert q[4] > 0 and q[3] == 0, q


def test_valiant_with_hop_classes_and_pfc() -> None:
    df = dragonfly(routing="valiant", hop_classes=True)
    fabric.enable_deadlock_detector(df.sim, "10us")
    src, dst = adversarial(df)
    gbps = sustained_goodput_gbps(df.sim, src, dst, recovery="gbn").reshape(-1, QPS).sum(axis=1)
    assert fabric.deadlock(df.sim) is None
    assert gbps.mean() >= 0.4 * RATE_GBPS, gbps.mean()
    with pytest.raises(ValueError, match="hop_classes"):
        fabric.switch_config(hop_classes=True)
