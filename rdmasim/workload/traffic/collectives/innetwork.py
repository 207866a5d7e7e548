"""In-network (SHARP-style) all-reduce: aggregation nodes reduce the ranks' data on its way up a tree.

Each rank sends its buffer once, chunk by chunk, to its aggregation node; an aggregation node waits for
chunk ``j`` from all of its children, reduces it and sends the one result up to its own parent; the
root's result comes back down the same tree to every rank. A rank's link thus carries the buffer once in
each direction, against 2(p-1)/p times in each direction for the ring.

The flow engine's endpoints are hosts, so an aggregation node is a host joined to its switch by a link
fast enough never to be the bottleneck (:func:`star_with_aggregator`): the bytes on every rank's link and
the reduction tree are those of switch aggregation; the aggregation link adds one hop of delay and
serialization each way, which a switch reducing in its pipeline would not have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rdmasim.workload.traffic._common import Hosts, host_array, size_bytes
from rdmasim.workload.traffic.collectives._plan import Plan
from rdmasim.workload.traffic.collectives.chunking import check_chunking, chunks, need_pieces, split
from rdmasim.workload.traffic.table import FlowTable


def _tree(ranks: np.ndarray, aggregation: int | Mapping[int, Sequence[int]]) -> dict[int, list[int]]:
    """The aggregation tree as host -> children hosts, checked: one root, every rank a leaf, no cycles."""
    if isinstance(aggregation, (int, np.integer)) and not isinstance(aggregation, bool):
        tree = {int(aggregation): [int(r) for r in ranks]}
    elif isinstance(aggregation, Mapping):
        tree = {int(a): [int(c) for c in kids] for a, kids in aggregation.items()}
    else:
        raise ValueError(f"aggregation = {aggregation!r} must be a host index or a mapping "
                         "aggregator host -> children hosts")
    rank_set = {int(r) for r in ranks}
    parent: dict[int, int] = {}
    for a, kids in tree.items():
        if a in rank_set:
            raise ValueError(f"aggregation: host {a} is a rank and cannot also be an aggregation node")
        if not kids:
            raise ValueError(f"aggregation: aggregator {a} has no children")
        for c in kids:
            if c in parent:
                raise ValueError(f"aggregation: host {c} has two parents, {parent[c]} and {a}")
            if c not in rank_set and c not in tree:
                raise ValueError(f"aggregation: child {c} of {a} is neither a rank nor an aggregator")
            parent[c] = a
    missing = sorted(rank_set - set(parent))
    if missing:
        raise ValueError(f"aggregation: rank host {missing[0]} is under no aggregator")
    roots = [a for a in tree if a not in parent]
    if len(roots) != 1:
        raise ValueError(f"aggregation: need exactly one root aggregator, found {sorted(roots)} "
                         "(or a cycle)")
    for a in tree:  # every aggregator must reach the root: a cycle never does
        seen, q = {a}, a
        while q in parent:
            q = parent[q]
            if q in seen:
                raise ValueError(f"aggregation: aggregators {sorted(seen)} form a cycle")
            seen.add(q)
    return tree


def in_network_allreduce(hosts: Hosts, size: int | str, aggregation: int | Mapping[int, Sequence[int]], *,
                         chunk_size: int | str | None = None, channels: int = 1, inflight: int = 4,
                         start: int | str = 0, verb: str | int = "WRITE", priority: int = 3,
                         group: str | None = "in-network-allreduce") -> FlowTable:
    """All-reduce of ``size`` bytes over ``hosts`` reduced by aggregation nodes.

    ``aggregation``: the host index of a single aggregation node serving every rank, or a mapping
    ``aggregator host -> children hosts`` (ranks or other aggregators) forming one tree, e.g. one
    aggregator per leaf switch under one for the spine. Chunks of at most ``chunk_size`` bytes are
    pipelined up and down the tree; ``channels`` split the buffer into independent pipelines.
    """
    ranks = host_array(hosts)
    tree = _tree(ranks, aggregation)
    c = check_chunking(chunk_size, channels, inflight)
    n = size_bytes(size)
    need_pieces(n, channels, f"{channels} channels")
    nodes = [int(r) for r in ranks] + list(tree)
    index = {h: i for i, h in enumerate(nodes)}
    parent = {index[k]: index[a] for a, kids in tree.items() for k in kids}
    children = {index[a]: [index[k] for k in kids] for a, kids in tree.items()}
    depth = {}
    for v in range(len(nodes)):
        d, q = 0, v
        while q in parent:
            q, d = parent[q], d + 1
        depth[v] = d
    bottom_up = sorted(range(len(nodes)), key=lambda v: -depth[v])
    plan = Plan(inflight)
    for ch, share in enumerate(split(n, channels)):
        for sz in chunks(share, c):
            up: dict[int, int] = {}
            for v in bottom_up:
                if v in parent:
                    up[v] = plan.add(v, parent[v], sz, [up[k] for k in children.get(v, [])], ch)
            down: dict[int, int] = {}
            for v in reversed(bottom_up):
                if v not in children:
                    continue
                got = [down[v]] if v in parent else [up[k] for k in children[v]]
                for k in children[v]:
                    down[k] = plan.add(v, k, sz, got, ch)
    return plan.table(np.asarray(nodes, dtype=np.int64), start, verb, priority, group)
