"""All-reduce without chunking (ring, halving-doubling, recursive doubling) and the MoE exchange.

A flow that forwards or reduces data depends on the flows that brought that data, so the simulator starts
it only once they have finished. Hosts are given as in :mod:`rdmasim.traffic.generators`; the position of a
host in ``hosts`` is its rank.
"""

from __future__ import annotations

import numpy as np

from rdmasim.workload.traffic._common import Hosts, build, flow_size, host_array, size_bytes, time_ps
from rdmasim.workload.traffic.table import MAX_FLOW_SIZE, FlowTable

PS_PER_S = 10**12


def _chunks(size: int, n: int, what: str) -> np.ndarray:
    """``size`` bytes in ``n`` chunks as equal as possible (the first ``size % n`` are one byte larger)."""
    if size < n:
        raise ValueError(f"{what} = {size} bytes cannot be split into {n} non-empty chunks (one per host)")
    chunks = np.full(n, size // n, dtype=np.int64)
    chunks[: size % n] += 1
    flow_size(int(chunks[0]), f"{what} / {n} hosts")
    return chunks


def _csr(n_flows: int, first_dependent: int, deps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR for: flows before ``first_dependent`` have no deps; each later one has ``deps.shape[1]``."""
    per = deps.shape[1] if deps.ndim == 2 else 0
    counts = np.zeros(n_flows, dtype=np.int64)
    counts[first_dependent:] = per
    ptr = np.zeros(n_flows + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, deps.reshape(-1).astype(np.int32)


def ring_allreduce(
    hosts: Hosts,
    size: int | str,
    *,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "ring-allreduce",
) -> FlowTable:
    """Ring all-reduce of a ``size``-byte buffer over N hosts: 2N(N-1) flows, 2(N-1)*size bytes in all.

    The buffer is split into N chunks (sizes differ by at most one byte). There are 2(N-1) steps: N-1 of
    reduce-scatter, then N-1 of all-gather. In step ``s`` rank ``i`` sends chunk ``(i - s) % N`` to rank
    ``(i + 1) % N`` (flow ``s * N + i``); that flow depends on rank ``i-1``'s step ``s-1`` flow (the data
    it forwards or reduces) and on rank ``i``'s own step ``s-1`` flow. Rank ``i``'s flows to rank ``i+1``
    are one connection: each is posted after the one before (the ``after`` column).
    """
    h = host_array(hosts)
    n = h.size
    chunks = _chunks(size_bytes(size), n, "size")
    steps = 2 * (n - 1)
    s = np.repeat(np.arange(steps, dtype=np.int64), n)
    i = np.tile(np.arange(n, dtype=np.int64), steps)
    later = s[n:] - 1
    deps = np.stack([later * n + (i[n:] - 1) % n, later * n + i[n:]], axis=1)
    ptr, dd = _csr(steps * n, n, deps)
    table = build(h[i], h[(i + 1) % n], chunks[(i - s) % n], time_ps(start, "start"), verb, priority, group,
                  ptr, dd)
    table.flows["after"][n:] = n  # step s after step s-1 on the connection i -> i+1
    return table


def halving_doubling_allreduce(
    hosts: Hosts,
    size: int | str,
    *,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "halving-doubling-allreduce",
) -> FlowTable:
    """Rabenseifner all-reduce: recursive-halving reduce-scatter, then recursive-doubling all-gather.

    N must be a power of two (>= 2); 2*log2(N) steps of N flows, 2(N-1)*size bytes in all (as the ring).
    Reduce-scatter step ``j`` pairs rank ``i`` with ``i ^ (N >> (j+1))``; each sends the half of its current
    block of chunks that the partner keeps, so after log2(N) steps rank ``i`` holds reduced chunk ``i``.
    The all-gather replays the pairings in reverse, each rank sending all it holds. Flow ``s * N + i``
    (rank ``i``'s step ``s``) depends on rank ``i``'s step ``s-1`` flow and on the step ``s-1`` flow into
    rank ``i``, and, as MPI's exchange of a large message waits for its receiver to post the receive
    (rendezvous), on the partner's step ``s-1`` flow and the one into the partner. The all-gather step
    that pairs ``i`` with a partner again is posted after the reduce-scatter one on their connection.
    """
    h = host_array(hosts)
    n = h.size
    if n & (n - 1):
        raise ValueError(f"halving-doubling all-reduce needs a power-of-two number of hosts, got {n}")
    k = n.bit_length() - 1
    chunks = _chunks(size_bytes(size), n, "size")
    prefix = np.concatenate([[0], np.cumsum(chunks)])
    rank = np.arange(n, dtype=np.int64)
    lo, hi = np.zeros(n, dtype=np.int64), np.full(n, n, dtype=np.int64)
    partners, sent = [], []
    for j in range(k):  # reduce-scatter: keep one half, send the other
        dist = n >> (j + 1)
        upper = (rank & dist) != 0
        mid = (lo + hi) // 2
        send_lo, send_hi = np.where(upper, lo, mid), np.where(upper, mid, hi)
        lo, hi = np.where(upper, mid, lo), np.where(upper, hi, mid)
        partners.append(rank ^ dist)
        sent.append(prefix[send_hi] - prefix[send_lo])
    for j in reversed(range(k)):  # all-gather: send everything held, then hold the union
        dist = n >> (j + 1)
        upper = (rank & dist) != 0
        width = hi - lo
        partners.append(rank ^ dist)
        sent.append(prefix[hi] - prefix[lo])
        lo, hi = np.where(upper, lo - width, lo), np.where(upper, hi, hi + width)
    steps = 2 * k
    dst = np.concatenate(partners)
    sizes = np.concatenate(sent)
    if int(sizes.max()) > MAX_FLOW_SIZE:
        raise ValueError(f"size = {int(prefix[-1])} bytes: the first halving step sends {int(sizes.max())} "
                         f"bytes in one flow, over the largest flow ({MAX_FLOW_SIZE} bytes)")
    table = build(h[np.tile(rank, steps)], h[dst], sizes, time_ps(start, "start"), verb, priority, group,
                  *_exchange_deps(partners, n))
    after = np.zeros((steps, n), dtype=np.int64)
    for j in range(k):  # all-gather step 2k-1-j pairs the ranks of reduce-scatter step j again
        after[2 * k - 1 - j] = (2 * k - 1 - 2 * j) * n
    table.flows["after"] = after.reshape(-1)
    return table


def _exchange_deps(partners: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR dependencies of a pairwise exchange, flow ``s * n + i`` from rank ``i`` to ``partners[s][i]``:
    step ``s`` of rank ``i`` waits for the step ``s-1`` flows out of and into both ``i`` and its partner
    (the sender has what it sends; the receiver has entered the step and posted its receive)."""
    steps = len(partners)
    rank = np.arange(n, dtype=np.int64)
    rows = []
    for s in range(1, steps):
        prev, peer, back = (s - 1) * n, partners[s], partners[s - 1]
        rows.append(np.stack([prev + rank, prev + back, prev + peer, prev + back[peer]], axis=1))
    deps = np.concatenate(rows) if rows else np.zeros((0, 4), dtype=np.int64)
    return _csr(steps * n, n, deps)


def moe_all_to_all(
    hosts: Hosts,
    size_per_pair: int | str,
    *,
    rounds: int = 1,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "moe-all-to-all",
) -> FlowTable:
    """Mixture-of-experts token exchange: ``rounds`` all-to-all rounds of ``size_per_pair`` bytes per pair.

    Each round has N(N-1) flows ordered as in :func:`~rdmasim.traffic.generators.all_to_all` (sub-round
    ``k`` = 1..N-1: rank ``i`` sends to ``(i + k) % N``). A flow out of rank ``a`` in round ``r >= 1``
    depends on every round ``r-1`` flow out of ``a`` and into ``a``: the rank must have sent its previous
    tokens and received all its previous results. That is 2(N-1) dependencies per flow, so the table has
    about 2 * rounds * N**3 dependency entries: fine for tens of hosts, heavy for hundreds.
    """
    h = host_array(hosts)
    n = h.size
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise ValueError(f"rounds = {rounds!r} must be an int >= 1")
    per_round = n * (n - 1)
    k = np.repeat(np.arange(1, n, dtype=np.int64), n)
    i = np.tile(np.arange(n, dtype=np.int64), n - 1)
    # within a round, the flow with src i in sub-round k is (k-1)*n + i; the one into a in sub-round k
    # comes from (a - k) % n
    a = np.arange(n, dtype=np.int64)[:, None]
    kk = np.arange(1, n, dtype=np.int64)[None, :]
    touching = np.concatenate([(kk - 1) * n + a, (kk - 1) * n + (a - kk) % n], axis=1)  # (n, 2(n-1))
    dep_rows = [touching[i] + (r - 1) * per_round for r in range(1, rounds)]
    deps = np.concatenate(dep_rows) if dep_rows else np.zeros((0, 2 * (n - 1)), dtype=np.int64)
    ptr, dd = _csr(rounds * per_round, per_round, deps)
    src, dst = np.tile(i, rounds), np.tile((i + k) % n, rounds)
    table = build(h[src], h[dst], flow_size(size_per_pair, "size_per_pair"), time_ps(start, "start"),
                  verb, priority, group, ptr, dd)
    table.flows["after"][per_round:] = per_round  # round r after round r-1 on each pair's connection
    return table


def ideal_ring_allreduce_ps(n: int, size: int, rate_bps: float, delay_ps: int) -> int:
    """Lower bound on ring all-reduce time in ps: 2(N-1)/N * size*8/rate + 2(N-1) * delay_ps.

    Every rank sends 2(N-1) chunks of size/N bytes back to back on its own link, and each of the 2(N-1)
    steps waits at least one one-way latency ``delay_ps`` (propagation and per-hop delay; header overhead
    and store-and-forward are ignored).
    """
    if n < 2:
        raise ValueError(f"n = {n} must be at least 2")
    if size <= 0 or rate_bps <= 0 or delay_ps < 0:
        raise ValueError(f"need size > 0, rate_bps > 0, delay_ps >= 0 (got {size}, {rate_bps}, {delay_ps})")
    steps = 2 * (n - 1)
    return round(steps * size * 8 * PS_PER_S / (n * rate_bps)) + steps * int(delay_ps)


def recursive_doubling_allreduce(
    hosts: Hosts,
    size: int | str,
    *,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "recursive-doubling-allreduce",
) -> FlowTable:
    """Recursive-doubling all-reduce: log2(N) steps, in step ``k`` rank ``i`` swaps its whole buffer with
    rank ``i ^ 2**k`` and reduces (N a power of two). N log2(N) flows of ``size`` bytes; a rank's step
    ``k`` flow waits for its own step ``k-1`` flow and for the one that came into it in step ``k-1``,
    and for the same two of its partner (rendezvous: the receiver has entered the step).
    """
    h = host_array(hosts)
    n = h.size
    if n & (n - 1):
        raise ValueError(f"recursive-doubling all-reduce needs a power-of-two number of hosts, got {n}")
    sz = flow_size(size, "size")
    k = n.bit_length() - 1
    rank = np.arange(n, dtype=np.int64)
    partners = [rank ^ (1 << j) for j in range(k)]
    return build(h[np.tile(rank, k)], h[np.concatenate(partners)], sz, time_ps(start, "start"), verb,
                 priority, group, *_exchange_deps(partners, n))
