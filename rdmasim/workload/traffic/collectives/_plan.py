"""A collective as a growing list of dependent flows between ranks, turned into a FlowTable at the end.

Every algorithm adds its flows in an order that respects its data dependencies, so a flow only ever
waits for flows added before it: the table is acyclic by construction. Building runs once per
collective (thousands of flows), never per packet.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rdmasim.workload.traffic._common import build, check_priority, deps_csr, time_ps
from rdmasim.workload.traffic.table import MAX_FLOW_SIZE, FlowTable

MAX_CHANNELS = 64
"""Most channels (parallel rings or tree pairs) one collective may use."""
MAX_INFLIGHT = 64
"""Most flows one connection of one channel may have in flight."""


class Plan:
    """Flows between ranks with dependencies; ``inflight`` bounds the flows in flight per connection.

    A *connection* is (source rank, destination rank, channel), as one NCCL channel's send/receive pair
    or one MPI connection. Its flows share one QP pair and are posted in the order they are added (each
    after the one before it: the table's ``after`` column), so its RC send queue sends them one after
    the other, as NCCL sends a channel's steps and MPI a connection's messages; a rank that has several
    ready sends to one peer does not start them all at once sharing its link. Adding a flow on a
    connection that already has ``inflight`` earlier flows also makes it wait for the one ``inflight``
    places back to finish: like NCCL's fixed number of buffer slots per connection, a sender cannot run
    ahead of its receiver without bound.
    """

    def __init__(self, inflight: int = 4) -> None:
        self.inflight = inflight
        self.src: list[int] = []
        self.dst: list[int] = []
        self.size: list[int] = []
        self.deps: list[list[int]] = []
        self.after: list[int] = []
        self._lanes: dict[tuple[int, int, int], list[int]] = {}

    def add(self, src: int, dst: int, size: int, deps: Iterable[int] = (), channel: int = 0) -> int:
        """Add one flow of ``size`` bytes from rank ``src`` to rank ``dst``; returns its index."""
        if size > MAX_FLOW_SIZE:
            raise ValueError(f"one flow of this collective would carry {size} bytes, over the largest flow "
                             f"({MAX_FLOW_SIZE} bytes): give a smaller chunk_size")
        f = len(self.src)
        lane = self._lanes.setdefault((src, dst, channel), [])
        mine = {int(d) for d in deps}
        if len(lane) >= self.inflight:
            mine.add(lane[-self.inflight])
        self.after.append(f - lane[-1] if lane else 0)
        lane.append(f)
        self.src.append(src)
        self.dst.append(dst)
        self.size.append(size)
        self.deps.append(sorted(mine))
        return f

    def __len__(self) -> int:
        return len(self.src)

    def table(self, hosts: np.ndarray, start: int | str, verb: str | int, priority: int,
              group: str | None) -> FlowTable:
        """The flows as a FlowTable on ``hosts`` (rank ``r`` is host ``hosts[r]``)."""
        ptr, flat = deps_csr(self.deps)
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        table = build(hosts[src], hosts[dst], np.asarray(self.size, dtype=np.int64), time_ps(start, "start"),
                      verb, check_priority(priority), group, ptr, flat)
        table.flows["after"] = self.after
        return table
