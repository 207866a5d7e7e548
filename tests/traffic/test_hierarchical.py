"""Hierarchical all-reduce (multi-GPU nodes): structure, and its completion time against its model.

Model: 2(G-1) intra-node ring steps of latency + ceil(n/G)/bandwidth each (LOCAL flows, exact by
construction) plus the ring all-reduce of n bytes across the N nodes, alpha and beta measured on the same
idle star (collective_util.alpha_beta). Tolerance 1%; measured within 0.03% (docs/hpc-patterns.md).
"""

from __future__ import annotations

import numpy as np
import pytest
from collective_util import alpha_beta
from hpc_util import run, span

from rdmasim import traffic as tr
from rdmasim.traffic.collectives.hierarchical import intra_step_ps
from rdmasim.traffic.table import LOCAL

TOL = 0.01


@pytest.mark.parametrize(("nodes", "gpus", "size"), [(4, 8, 8 << 20), (8, 4, 2 << 20), (4, 2, 512 << 10)])
def test_hierarchical_allreduce_matches_its_model(nodes: int, gpus: int, size: int) -> None:
    t = tr.hierarchical_allreduce(nodes, size, gpus_per_node=gpus, intra_rate="2400Gbps", intra_latency="2us")
    res, _ = run(t, nodes)
    model = tr.hierarchical_allreduce_ps(alpha_beta(), nodes, size, gpus_per_node=gpus, intra_rate="2400Gbps",
                                         intra_latency="2us")
    assert abs(span(res) / model - 1) <= TOL, f"{span(res)} ps vs model {model:.0f} ps"


def test_structure() -> None:
    nodes, gpus, size = 4, 8, 8 << 20
    t = tr.hierarchical_allreduce(nodes, size, gpus_per_node=gpus, intra_rate="300GB/s", intra_latency="1us")
    t.validate(nodes)
    f = t.flows
    local = f["verb"] == LOCAL
    step = intra_step_ps(size, gpus, "300GB/s", "1us")
    assert step == 1_000_000 + -(-(size // gpus) * 8 * 10**12 // (2400 * 10**9))
    assert int(local.sum()) == 2 * nodes * (gpus - 1)
    assert set(f["hold_ps"][local].tolist()) == {step} and set(f["hold_ps"][~local].tolist()) == {0}
    assert (f["src"][local] == f["dst"][local]).all()
    ring = tr.ring_allreduce(nodes, size)
    assert np.array_equal(f["size"][~local], ring.flows["size"])  # the fabric stage is the ring of n bytes
    first_ag = int(np.flatnonzero(local)[nodes * (gpus - 1)])  # node 0's first all-gather step
    touching = np.flatnonzero(~local & ((f["src"] == 0) | (f["dst"] == 0)))
    assert set(t.deps_of(first_ag).tolist()) == set(touching.tolist())
    t.topological_order()


def test_one_gpu_per_node_is_the_plain_ring() -> None:
    a, _ = run(tr.hierarchical_allreduce(4, 1 << 20, gpus_per_node=1), 4)
    b, _ = run(tr.ring_allreduce(4, 1 << 20), 4)
    assert span(a) == span(b)


def test_the_critical_path_crosses_both_stages() -> None:
    t = tr.hierarchical_allreduce(4, 4 << 20, gpus_per_node=4)
    res, sim = run(t, 4)
    a = tr.analyze(t, res, sim)
    verbs = [s.verb for s in a.path]
    assert verbs[0] == verbs[-1] == "LOCAL" and "WRITE" in verbs
    assert sum(a.compute_by_rank.values()) == 2 * 3 * intra_step_ps(4 << 20, 4, "2400Gbps", "1us")


@pytest.mark.parametrize(("kw", "says"), [
    ({"gpus_per_node": 0}, r"gpus_per_node = 0 must be an int in \[1, 64\]"),
    ({"inter_algorithm": "star"}, "inter_algorithm = 'star': allowed ring, tree"),
    ({"intra_rate": "fast"}, "intra_rate"),
    ({"intra_latency": "-1us"}, "intra_latency"),
])
def test_arguments(kw: dict, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        tr.hierarchical_allreduce(4, 1 << 20, **kw)
