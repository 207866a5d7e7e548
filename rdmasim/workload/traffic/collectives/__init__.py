"""Collective communication patterns as tables of dependent flows, run by the C flow engine.

A flow that forwards or reduces data depends on the flows that brought that data, so the simulator starts
it only once they have finished. Hosts are given as in :mod:`rdmasim.traffic.generators`; the position of a
host in ``hosts`` is its rank. One module per family:

- :mod:`.allreduce`: ring, halving-doubling (Rabenseifner) and recursive-doubling all-reduce, one flow per
  step and rank, and the MoE token exchange
- :mod:`.ring`: ring all-reduce, all-gather and reduce-scatter in chunks over channels (NCCL's ring)
- :mod:`.tree`: NCCL's double binary tree all-reduce
- :mod:`.rooted`: pipelined broadcast and reduce
- :mod:`.alltoall`: direct and pairwise all-to-all
- :mod:`.hierarchical`: hierarchical all-reduce for multi-GPU nodes (intra-node stages as LOCAL flows)
- :mod:`.innetwork`: in-network (SHARP-style) all-reduce over an aggregation tree
- :mod:`.metrics`: algbw / busbw (nccl-tests) and the alpha-beta cost models
- :func:`collective`: any of them by name

A collective is a :class:`~rdmasim.traffic.FlowTable`; the transport it runs on is chosen where it is
added: ``sim.add_flows(table)`` runs it on RoCE RC queue pairs, ``sim.add_flows(table, transport="uet",
uet={"lb": "reps", ...})`` as Ultra Ethernet messages (docs/collectives.md, "RoCE or UET").
"""

from __future__ import annotations

from typing import Any

from rdmasim.workload.traffic.collectives.allreduce import (
    halving_doubling_allreduce,
    ideal_ring_allreduce_ps,
    moe_all_to_all,
    recursive_doubling_allreduce,
    ring_allreduce,
)
from rdmasim.workload.traffic.collectives.alltoall import alltoall
from rdmasim.workload.traffic.collectives.hierarchical import (
    hierarchical_allreduce,
    hierarchical_allreduce_ps,
)
from rdmasim.workload.traffic.collectives.innetwork import in_network_allreduce
from rdmasim.workload.traffic.collectives.metrics import (
    AlphaBeta,
    CollectiveResult,
    bus_factor,
    collective_result,
)
from rdmasim.workload.traffic.collectives.ring import (
    chunked_ring_allreduce,
    ring_allgather,
    ring_reduce_scatter,
)
from rdmasim.workload.traffic.collectives.rooted import broadcast, reduce
from rdmasim.workload.traffic.collectives.tree import double_btree_parents, tree_allreduce
from rdmasim.workload.traffic.table import FlowTable

#: collective -> its algorithms (the first is the default)
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree", "halving_doubling", "recursive_doubling"),
    "allgather": ("ring",),
    "reduce_scatter": ("ring",),
    "broadcast": ("chain",),
    "reduce": ("chain",),
    "alltoall": ("direct", "pairwise"),
}


def collective(kind: str, hosts: Any, size: int | str, *, algorithm: str | None = None,
               chunk_size: int | str | None = None, channels: int | None = None, inflight: int = 4,
               root: int = 0, **kw: Any) -> FlowTable:
    """Collective ``kind`` (a key of :data:`ALGORITHMS`) with ``algorithm`` (default: the first listed).

    ``chunk_size``/``channels``/``inflight`` pipeline the ring, tree and chain algorithms; the
    halving-doubling, recursive-doubling and all-to-all ones move each step as one flow per rank and
    refuse them. ``kw`` (``start``, ``verb``, ``priority``, ``group``) goes to the builder.
    """
    if kind not in ALGORITHMS:
        raise ValueError(f"collective kind = {kind!r}: allowed {', '.join(ALGORITHMS)}")
    algo = ALGORITHMS[kind][0] if algorithm is None else algorithm
    if algo not in ALGORITHMS[kind]:
        raise ValueError(f"{kind}: algorithm = {algo!r}: allowed {', '.join(ALGORITHMS[kind])}")
    pipelined = (kind, algo) in {("allreduce", "ring"), ("allreduce", "tree"), ("allgather", "ring"),
                                 ("reduce_scatter", "ring"), ("broadcast", "chain"), ("reduce", "chain")}
    if not pipelined and (chunk_size is not None or channels not in (None, 1)):
        raise ValueError(f"{kind} {algo}: chunk_size and channels apply only to the ring, tree and chain "
                         "algorithms")
    pipe: dict[str, Any] = {"chunk_size": chunk_size, "inflight": inflight}
    if channels is not None:
        pipe["channels"] = channels
    if kind == "allreduce":
        if algo == "ring":
            return chunked_ring_allreduce(hosts, size, **pipe, **kw)
        if algo == "tree":
            return tree_allreduce(hosts, size, **pipe, **kw)
        if algo == "halving_doubling":
            return halving_doubling_allreduce(hosts, size, **kw)
        return recursive_doubling_allreduce(hosts, size, **kw)
    if kind == "allgather":
        return ring_allgather(hosts, size, **pipe, **kw)
    if kind == "reduce_scatter":
        return ring_reduce_scatter(hosts, size, **pipe, **kw)
    if kind == "broadcast":
        return broadcast(hosts, size, root=root, **pipe, **kw)
    if kind == "reduce":
        return reduce(hosts, size, root=root, **pipe, **kw)
    return alltoall(hosts, size, algorithm=algo, **kw)


__all__ = [
    "ALGORITHMS", "AlphaBeta", "CollectiveResult", "broadcast", "bus_factor", "chunked_ring_allreduce",
    "collective", "collective_result", "double_btree_parents", "halving_doubling_allreduce",
    "ideal_ring_allreduce_ps", "in_network_allreduce", "moe_all_to_all", "recursive_doubling_allreduce",
    "reduce", "ring_allgather", "ring_allreduce", "ring_reduce_scatter",
    "tree_allreduce", "alltoall", "hierarchical_allreduce", "hierarchical_allreduce_ps",
]
