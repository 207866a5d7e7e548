"""Broadcast and reduce as NCCL runs them: a chain around the ring from (or to) the root, pipelined.

Broadcast: the root sends each chunk to the next rank, which forwards it on, ``p - 1`` hops in all.
Reduce: the rank after the root starts, each rank adds its own data and passes the chunk on, and the
chain ends at the root. Chunk ``j`` of hop ``k`` waits for chunk ``j`` of hop ``k - 1``.
"""

from __future__ import annotations

from rdmasim.workload.traffic._common import Hosts, host_array, size_bytes
from rdmasim.workload.traffic.collectives._plan import Plan
from rdmasim.workload.traffic.collectives.chunking import check_chunking, chunks, need_pieces, split
from rdmasim.workload.traffic.table import FlowTable


def chain_steps(plan: Plan, order: list[int], pieces: list[int], channel: int) -> None:
    """Pass every chunk in ``pieces`` along the ranks in ``order`` (hop k: order[k] -> order[k+1])."""
    for sz in pieces:
        prev: list[int] = []
        for a, b in zip(order, order[1:], strict=False):
            prev = [plan.add(a, b, sz, prev, channel)]


def _chain(hosts: Hosts, size: int | str, root: int, toward_root: bool, chunk_size: int | str | None,
           channels: int, inflight: int, start: int | str, verb: str | int, priority: int,
           group: str | None) -> FlowTable:
    h = host_array(hosts)
    p = h.size
    if isinstance(root, bool) or not isinstance(root, int) or not 0 <= root < p:
        raise ValueError(f"root = {root!r} must be a rank in [0, {p - 1}]")
    c = check_chunking(chunk_size, channels, inflight)
    n = size_bytes(size)
    need_pieces(n, channels, f"{channels} channels")
    order = [(root + k) % p for k in range(p)]
    if toward_root:
        order = order[1:] + order[:1]
    plan = Plan(inflight)
    for ch, share in enumerate(split(n, channels)):
        chain_steps(plan, order, chunks(share, c), ch)
    return plan.table(h, start, verb, priority, group)


def broadcast(hosts: Hosts, size: int | str, *, root: int = 0, chunk_size: int | str | None = None,
              channels: int = 1, inflight: int = 4, start: int | str = 0, verb: str | int = "WRITE",
              priority: int = 3, group: str | None = "broadcast") -> FlowTable:
    """Pipelined chain broadcast of ``size`` bytes from rank ``root`` to every other rank."""
    return _chain(hosts, size, root, False, chunk_size, channels, inflight, start, verb, priority, group)


def reduce(hosts: Hosts, size: int | str, *, root: int = 0, chunk_size: int | str | None = None,
           channels: int = 1, inflight: int = 4, start: int | str = 0, verb: str | int = "WRITE",
           priority: int = 3, group: str | None = "reduce") -> FlowTable:
    """Pipelined chain reduce of a ``size``-byte buffer onto rank ``root``."""
    return _chain(hosts, size, root, True, chunk_size, channels, inflight, start, verb, priority, group)
