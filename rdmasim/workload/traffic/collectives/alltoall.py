"""All-to-all of a ``size``-byte buffer per rank (block ``k`` of rank ``i`` goes to rank ``k``).

Direct: all p(p-1) blocks start at once and share the links. Pairwise (the MPI pairwise exchange of
Thakur, Rabenseifner and Gropp 2005): p-1 rounds; in round ``k`` rank ``i`` sends to ``(i + k) % p``, and
a round's message from ``i`` to ``j`` moves once both have finished their previous round's send and
receive (the sender has sent and received, the receiver has entered the round and posted its receive:
MPI's rendezvous for a large message).
"""

from __future__ import annotations

from rdmasim.workload.traffic._common import Hosts, host_array, size_bytes
from rdmasim.workload.traffic.collectives._plan import Plan
from rdmasim.workload.traffic.collectives.chunking import need_pieces, split
from rdmasim.workload.traffic.table import FlowTable


def alltoall(hosts: Hosts, size: int | str, *, algorithm: str = "direct", start: int | str = 0,
             verb: str | int = "WRITE", priority: int = 3, group: str | None = "alltoall") -> FlowTable:
    """All-to-all, ``algorithm`` ``"direct"`` or ``"pairwise"``; each rank sends (p-1)/p * size bytes."""
    if algorithm not in ("direct", "pairwise"):
        raise ValueError(f"algorithm = {algorithm!r}: allowed 'direct' or 'pairwise'")
    h = host_array(hosts)
    p = h.size
    n = size_bytes(size)
    need_pieces(n, p, f"one block per rank, {p} ranks")
    block = split(n, p)
    plan = Plan(inflight=p)  # one flow per connection: rounds, not slots, order the pairwise exchange
    prev_out: list[int] = []
    prev_in: list[int] = []
    for k in range(1, p):
        out = [plan.add(i, (i + k) % p, block[(i + k) % p],
                        [prev_out[i], prev_in[i], prev_out[(i + k) % p], prev_in[(i + k) % p]]
                        if prev_out and algorithm == "pairwise" else ())
               for i in range(p)]
        prev_out, prev_in = out, [out[(i - k) % p] for i in range(p)]
    return plan.table(h, start, verb, priority, group)
