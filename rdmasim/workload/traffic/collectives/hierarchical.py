"""Hierarchical all-reduce for multi-GPU nodes: intra-node reduce-scatter, inter-node all-reduce over the
fabric, intra-node all-gather (as NCCL and Horovod's hierarchical all-reduce).

Each fabric host is a node of ``gpus_per_node`` GPUs that share its NIC. The intra-node stages move no
packets: each of their G-1 ring steps is a LOCAL flow on the node whose hold is the step's time over the
node's GPU interconnect (NVLink-like), ``intra_latency + ceil(n / G) bytes / intra_rate``; every GPU moves
one block in each step, each on its own interconnect link, so one flow stands for all of them. Between
the two, the nodes run an all-reduce of the whole n-byte buffer over the fabric (any all-reduce algorithm
of :func:`~rdmasim.traffic.collectives.collective`): after the reduce-scatter each of the G GPUs holds a
reduced 1/G of the node's buffer, and the G shards' all-reduces share the node's one NIC, which carries
n bytes in all.

Dependencies: a node's first fabric flow waits for its reduce-scatter (every flow it sends does, so no
algorithm can start early), and its all-gather waits for every fabric flow into or out of it.
"""

from __future__ import annotations

import numpy as np

from rdmasim.workload.traffic._common import (
    Hosts,
    check_priority,
    deps_csr,
    host_array,
    rate_bps,
    size_bytes,
    time_ps,
)
from rdmasim.workload.traffic.collectives.metrics import AlphaBeta
from rdmasim.workload.traffic.table import LOCAL, FlowTable

PS_PER_S = 10**12
MAX_GPUS_PER_NODE = 64


def intra_step_ps(size: int, gpus_per_node: int, intra_rate: int | str, intra_latency: int | str) -> int:
    """One intra-node ring step: ``latency + ceil(size / G)`` bytes at ``intra_rate`` (ps, rounded up)."""
    block = -(-size // gpus_per_node)
    rate = rate_bps(intra_rate, "intra_rate")
    return time_ps(intra_latency, "intra_latency") + -(-block * 8 * PS_PER_S // rate)


def hierarchical_allreduce(
    nodes: Hosts,
    size: int | str,
    *,
    gpus_per_node: int = 8,
    intra_rate: int | str = "2400Gbps",
    intra_latency: int | str = "1us",
    inter_algorithm: str = "ring",
    chunk_size: int | str | None = None,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "hierarchical-allreduce",
) -> FlowTable:
    """All-reduce of ``size`` bytes over ``nodes`` (fabric hosts) of ``gpus_per_node`` GPUs each.

    ``intra_rate`` / ``intra_latency``: one GPU's interconnect bandwidth and per-step latency inside a
    node (defaults: 300 GB/s and 1 us, NVLink-like; give your system's). ``inter_algorithm``: the
    all-reduce across nodes (ring, tree, halving_doubling, recursive_doubling), ``chunk_size`` its
    pipelining (ring and tree). See the module docstring for the stages.
    """
    from rdmasim.workload.traffic.collectives import ALGORITHMS, collective

    h = host_array(nodes, "nodes")
    n_nodes = h.size
    n = size_bytes(size, "size")
    g = gpus_per_node
    if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 1 <= g <= MAX_GPUS_PER_NODE:
        raise ValueError(f"gpus_per_node = {g!r} must be an int in [1, {MAX_GPUS_PER_NODE}]")
    if inter_algorithm not in ALGORITHMS["allreduce"]:
        raise ValueError(f"inter_algorithm = {inter_algorithm!r}: allowed "
                         f"{', '.join(ALGORITHMS['allreduce'])}")
    step = intra_step_ps(n, int(g), intra_rate, intra_latency)
    inter = collective("allreduce", np.arange(n_nodes), n, algorithm=inter_algorithm, chunk_size=chunk_size,
                       verb=verb, priority=priority, group=None)
    m = len(inter)
    intra = int(g) - 1
    rs_last: list[int] = []
    src: list[int] = []
    deps: list[list[int]] = []
    for node in range(n_nodes):  # reduce-scatter: flows node*intra .. node*intra + intra - 1
        for k in range(intra):
            src.append(node)
            deps.append([len(src) - 2] if k else [])
        rs_last.append(len(src) - 1 if intra else -1)
    off = len(src)
    isrc, idst = inter.flows["src"].astype(np.int64), inter.flows["dst"].astype(np.int64)
    for i in range(m):
        mine = [int(d) + off for d in inter.deps_of(i)]
        if rs_last[isrc[i]] >= 0:
            mine.append(rs_last[isrc[i]])
        src.append(int(isrc[i]))
        deps.append(mine)
    touching: list[list[int]] = [[] for _ in range(n_nodes)]
    for i in range(m):
        touching[isrc[i]].append(off + i)
        touching[idst[i]].append(off + i)
    for node in range(n_nodes):  # all-gather
        for k in range(intra):
            src.append(node)
            deps.append([len(src) - 2] if k else touching[node])
    total = len(src)
    local = np.ones(total, dtype=bool)
    local[off:off + m] = False
    s = np.asarray(src, dtype=np.int64)
    dst = s.copy()
    dst[off:off + m] = idst
    sizes = np.full(total, -(-n // int(g)), dtype=np.int64)
    sizes[off:off + m] = inter.flows["size"]
    verbs = np.where(local, LOCAL, inter.flows["verb"][0] if m else 0)
    hold = np.where(local, step, 0)
    after = np.zeros(total, dtype=np.int64)
    after[off:off + m] = inter.flows["after"]  # the inter-node flows keep their order and connections
    ptr, flat = deps_csr([sorted(set(ds)) for ds in deps])
    return FlowTable.from_columns(h[s], h[dst], sizes, time_ps(start, "start"), verb=verbs,
                                  priority=check_priority(priority), group=-1 if group is None else 0,
                                  groups=() if group is None else (group,), hold_ps=hold, after=after,
                                  dep_ptr=ptr, deps=flat)


def hierarchical_allreduce_ps(model: AlphaBeta, nodes: int, size: int, *, gpus_per_node: int = 8,
                              intra_rate: int | str = "2400Gbps", intra_latency: int | str = "1us") -> float:
    """Model of :func:`hierarchical_allreduce` with the ring across nodes: ``2 (G-1)`` intra-node steps
    (:func:`intra_step_ps`) plus the ring all-reduce of ``size`` bytes over the nodes (Thakur et al.
    2005: ``2(N-1) alpha + 2(N-1)/N size beta``)."""
    intra = 2 * (gpus_per_node - 1) * intra_step_ps(size, gpus_per_node, intra_rate, intra_latency)
    return intra + model.ring_allreduce(nodes, size)


__all__ = ["hierarchical_allreduce", "hierarchical_allreduce_ps", "intra_step_ps"]
