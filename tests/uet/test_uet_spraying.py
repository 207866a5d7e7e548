"""Ultra Ethernet over a leaf-spine: per-packet entropy sprays each PDC over every spine, and the
receiver's PSN bitmap takes the packets in any order, so reordering is not loss."""

from __future__ import annotations

import numpy as np

import rdmasim
from rdmasim.flows import describe_status


def _shifted_permutation(n: int, size: int, uet: dict | None = None, seed: int = 1):
    topo = rdmasim.leaf_spine(n, n, n, seed=seed, switch_config={"path_select": "ecmp", "ecmp_seed": seed})
    src = [h.name for row in topo.hosts_by_leaf for h in row]
    dst = [h.name for row in topo.hosts_by_leaf[1:] + topo.hosts_by_leaf[:1] for h in row]
    fs = topo.sim.add_flows({"src": src, "dst": dst, "size": [size] * len(src)}, transport="uet", uet=uet)
    topo.sim.run_flows()
    return topo, fs.results()


def test_spraying_over_a_symmetric_leaf_spine_retransmits_nothing() -> None:
    topo, r = _shifted_permutation(4, 1 << 20)
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * 16
    assert (r["bytes_delivered"] == 1 << 20).all()
    assert int(r["retx_pkts"].sum()) == 0 and int(r["nack_pkts"].sum()) == 0
    # the packets of one flow did take several spines: every uplink of leaf 0 carried data
    leaf, spines = topo.leaves[0], {s.name for s in topo.spines}
    up = [link.direction(leaf).stats()["delivered"] for link in topo.sim.links
          if {link.a.name, link.b.name} & spines and leaf.name in (link.a.name, link.b.name)]
    assert len(up) == 4 and min(up) > 0


def test_a_reorder_threshold_below_the_reordering_retransmits_spuriously() -> None:
    """The same run with a SACK-gap threshold of 1 PSN: reordering now looks like loss (the
    threshold is what makes spraying safe)."""
    _, r = _shifted_permutation(4, 1 << 20, uet={"reorder_packets": 1})
    assert (r["bytes_delivered"] == 1 << 20).all()
    assert int(r["retx_pkts"].sum()) > 0


def test_random_permutation_of_long_flows_runs_near_line_rate() -> None:
    """4 leaves x 4 spines x 4 hosts, 100 Gb/s, a random permutation of 8 MiB flows, oblivious
    spraying: the mean per-flow rate (measured 0.90-0.92 of line over seeds 1-3, docs/uet.md)."""
    topo = rdmasim.leaf_spine(4, 4, 4, seed=2, switch_config={"path_select": "ecmp", "ecmp_seed": 2})
    rng = np.random.default_rng(2)
    perm = rng.permutation(16)
    while (perm == np.arange(16)).any():
        perm = rng.permutation(16)
    size = 8 << 20
    fs = topo.sim.add_flows({"src": np.arange(16), "dst": perm, "size": np.full(16, size)}, transport="uet")
    topo.sim.run_flows()
    r = fs.results()
    rate = size * 8 / (r["fct_ps"] * 1e-12) / 100e9
    assert int(r["retx_pkts"].sum()) == 0
    assert rate.mean() > 0.85


def test_reps_recycles_entropies_and_completes() -> None:
    _, r = _shifted_permutation(4, 1 << 20, uet={"lb": "reps"})
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * 16
    assert (r["bytes_delivered"] == 1 << 20).all() and int(r["retx_pkts"].sum()) == 0
