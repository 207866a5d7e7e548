"""Ring collectives, chunked and over several channels: all-reduce, all-gather, reduce-scatter.

Each channel carries its share of the buffer around the ring ``0 -> 1 -> ... -> p-1 -> 0``. The share is
cut into p blocks; in step ``s`` rank ``i`` sends block ``(i - s) % p`` to rank ``i + 1``, chunk by chunk.
Chunk ``j`` of a step waits for chunk ``j`` of the previous step into rank ``i`` (the data it forwards or
reduces into), so chunks flow through the ranks in a pipeline. Reduce-scatter is the first p-1 steps,
all-gather p-1 steps of forwarding, all-reduce both (2(p-1) steps).
"""

from __future__ import annotations

from rdmasim.workload.traffic._common import Hosts, host_array, size_bytes
from rdmasim.workload.traffic.collectives._plan import Plan
from rdmasim.workload.traffic.collectives.chunking import check_chunking, chunks, need_pieces, split
from rdmasim.workload.traffic.table import FlowTable


def ring_steps(plan: Plan, p: int, size: int, steps: int, chunk_size: int | None, channels: int) -> None:
    """Add ``steps`` ring steps of a ``size``-byte buffer over ``p`` ranks and ``channels`` channels."""
    need_pieces(size, p * channels, f"{p} blocks on each of {channels} channels")
    for c, share in enumerate(split(size, channels)):
        pieces = [chunks(b, chunk_size) for b in split(share, p)]
        prev: list[list[int]] = []
        for s in range(steps):
            cur: list[list[int]] = []
            for i in range(p):
                block = pieces[(i - s) % p]
                cur.append([plan.add(i, (i + 1) % p, sz, [prev[(i - 1) % p][j]] if prev else (), c)
                            for j, sz in enumerate(block)])
            prev = cur


def _ring(hosts: Hosts, size: int | str, steps_of: int, *, chunk_size: int | str | None,
          channels: int, inflight: int, start: int | str, verb: str | int, priority: int,
          group: str | None) -> FlowTable:
    h = host_array(hosts)
    c = check_chunking(chunk_size, channels, inflight)
    plan = Plan(inflight)
    p = h.size
    ring_steps(plan, p, size_bytes(size), steps_of * (p - 1), c, channels)
    return plan.table(h, start, verb, priority, group)


def ring_allgather(hosts: Hosts, size: int | str, *, chunk_size: int | str | None = None, channels: int = 1,
                   inflight: int = 4, start: int | str = 0, verb: str | int = "WRITE", priority: int = 3,
                   group: str | None = "ring-allgather") -> FlowTable:
    """Ring all-gather: every rank ends with all p blocks of the ``size``-byte result (its own is size/p).

    p-1 steps; each rank sends (p-1)/p * size bytes. ``chunk_size`` (bytes, default: one chunk per block)
    and ``channels`` pipeline it as NCCL does; ``inflight`` bounds the chunks in flight per connection.
    """
    return _ring(hosts, size, 1, chunk_size=chunk_size, channels=channels, inflight=inflight,
                 start=start, verb=verb, priority=priority, group=group)


def ring_reduce_scatter(hosts: Hosts, size: int | str, *, chunk_size: int | str | None = None,
                        channels: int = 1, inflight: int = 4, start: int | str = 0, verb: str | int = "WRITE",
                        priority: int = 3, group: str | None = "ring-reduce-scatter") -> FlowTable:
    """Ring reduce-scatter of a ``size``-byte buffer: each rank ends with one reduced block of size/p.

    p-1 steps; each rank sends (p-1)/p * size bytes. Chunking as in :func:`ring_allgather`.
    """
    return _ring(hosts, size, 1, chunk_size=chunk_size, channels=channels,
                 inflight=inflight, start=start, verb=verb, priority=priority, group=group)


def chunked_ring_allreduce(hosts: Hosts, size: int | str, *, chunk_size: int | str | None = None,
                           channels: int = 1, inflight: int = 4, start: int | str = 0,
                           verb: str | int = "WRITE", priority: int = 3,
                           group: str | None = "ring-allreduce") -> FlowTable:
    """Ring all-reduce split into chunks and channels: reduce-scatter then all-gather, 2(p-1) steps.

    Each rank sends 2(p-1)/p * size bytes. With one chunk per block, one channel and ``inflight=1`` it is
    the same schedule as :func:`~rdmasim.traffic.ring_allreduce`.
    """
    return _ring(hosts, size, 2, chunk_size=chunk_size, channels=channels, inflight=inflight,
                 start=start, verb=verb, priority=priority, group=group)
