"""Results in the field's terms: algorithm and bus bandwidth (nccl-tests), and alpha-beta cost models.

nccl-tests (doc/PERFORMANCE.md) reports ``algbw = size / time`` and ``busbw = algbw x factor``, the
factor making busbw comparable with the link rate whatever the rank count p: all-reduce 2(p-1)/p;
reduce-scatter, all-gather and all-to-all (p-1)/p; broadcast and reduce 1. ``size`` is the buffer
nccl-tests names: the all-reduce/broadcast/reduce buffer, all-gather's received (total) buffer,
reduce-scatter's sent (total) buffer, and all-to-all's per-rank buffer.

The cost models count, on an idle lossless fabric, ``alpha`` per dependent step (the time from a flow's
start to its requester's completion for a 1-byte message: propagation both ways plus per-hop and
per-message costs) and ``beta`` per byte on a rank's link (the wire time per payload byte, headers
included). Ring, recursive doubling, halving-doubling (Rabenseifner) and pairwise all-to-all are the
formulas of Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations in
MPICH" (IJHPCA 2005); chains and trees pipelined in chunks of ``c`` bytes take ``hops x (alpha + c beta)``
to fill and then move the rest at one chunk per ``c beta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rdmasim.workload.traffic.collectives.tree import double_btree_parents, tree_depth

BUS_FACTOR_KINDS = ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce")


def bus_factor(kind: str, p: int) -> float:
    """nccl-tests' busbw / algbw factor for collective ``kind`` on ``p`` ranks."""
    if p < 2:
        raise ValueError(f"p = {p} must be at least 2")
    if kind == "allreduce":
        return 2 * (p - 1) / p
    if kind in ("reduce_scatter", "allgather", "alltoall"):
        return (p - 1) / p
    if kind in ("broadcast", "reduce"):
        return 1.0
    raise ValueError(f"kind = {kind!r}: allowed {', '.join(BUS_FACTOR_KINDS)}")


@dataclass(frozen=True)
class CollectiveResult:
    """One collective's completion time and bandwidths (bytes/s and, for convenience, Gb/s)."""

    kind: str
    ranks: int
    size_bytes: int
    time_ps: int
    algbw_Bps: float
    busbw_Bps: float
    ideal_ps: int | None = None

    @property
    def ideal_ratio(self) -> float | None:
        """Measured time / model time (1.0 = as the model predicts)."""
        return None if not self.ideal_ps else self.time_ps / self.ideal_ps


def collective_result(kind: str, ranks: int, size: int, time_ps: int, ideal_ps: int | None = None
                      ) -> CollectiveResult:
    """algbw = size / time, busbw = algbw x :func:`bus_factor`."""
    if time_ps <= 0:
        raise ValueError(f"time_ps = {time_ps} must be positive")
    alg = size / (time_ps * 1e-12)
    return CollectiveResult(kind, ranks, size, int(time_ps), alg, alg * bus_factor(kind, ranks), ideal_ps)


@dataclass(frozen=True)
class AlphaBeta:
    """Cost-model parameters: ``alpha_ps`` per step, ``beta_ps_per_byte`` per byte on a link.

    The pipelined algorithms (chunks of ``c`` bytes, at most ``w`` in flight per connection) take
    ``hops (alpha + c beta)`` for the first chunk to cross the longest path, and then move the rest of
    the bytes the busiest link carries at ``beta_w = max(beta, (alpha + c beta) / (L w c))`` per byte,
    where L is the number of connections sharing that link: a connection can have only ``w c`` bytes out
    per ``alpha + c beta`` (as NCCL's fixed slots per connection), so windows smaller than the
    bandwidth-delay product leave the link idle.
    """

    alpha_ps: float
    beta_ps_per_byte: float

    def beta_window(self, chunk: float, window: int) -> float:
        """Per-byte time of a link fed ``chunk``-byte flows with ``window`` of them in flight."""
        return max(self.beta_ps_per_byte, (self.alpha_ps + chunk * self.beta_ps_per_byte) / (window * chunk))

    def pipelined(self, hops: int, link_bytes: float, chunk: float, window: int, burst: int = 1) -> float:
        """``hops (alpha + b c beta) + (link_bytes - c) beta_w`` with ``window`` = L w (class docstring).

        ``burst`` b: chunks that share each hop's link while the first one crosses it. The lower model
        has b = 1; the first ``w`` chunks leave the source together and share its link, so b = min(w,
        chunks) bounds the fill from above.
        """
        return (hops * (self.alpha_ps + burst * chunk * self.beta_ps_per_byte)
                + max(link_bytes - chunk, 0.0) * self.beta_window(chunk, window))

    # ------------------------------------------------------------------ one flow per step and rank
    def ring_allreduce(self, p: int, n: int) -> float:
        """2(p-1) alpha + 2(p-1)/p n beta (Thakur et al. 2005, ring / reduce-scatter + all-gather)."""
        return 2 * (p - 1) * self.alpha_ps + 2 * (p - 1) / p * n * self.beta_ps_per_byte

    def ring_allgather(self, p: int, n: int) -> float:
        """(p-1) alpha + (p-1)/p n beta (also reduce-scatter; n is the total buffer)."""
        return (p - 1) * self.alpha_ps + (p - 1) / p * n * self.beta_ps_per_byte

    ring_reduce_scatter = ring_allgather

    def halving_doubling_allreduce(self, p: int, n: int) -> float:
        """2 log2(p) alpha + 2(p-1)/p n beta (Rabenseifner; Thakur et al. 2005)."""
        return 2 * math.log2(p) * self.alpha_ps + 2 * (p - 1) / p * n * self.beta_ps_per_byte

    def recursive_doubling_allreduce(self, p: int, n: int) -> float:
        """log2(p) (alpha + n beta) (Thakur et al. 2005)."""
        return math.log2(p) * (self.alpha_ps + n * self.beta_ps_per_byte)

    def alltoall_pairwise(self, p: int, n: int) -> float:
        """(p-1) alpha + (p-1)/p n beta (pairwise exchange, Thakur et al. 2005)."""
        return (p - 1) * (self.alpha_ps + n / p * self.beta_ps_per_byte)

    def alltoall_direct(self, p: int, n: int) -> float:
        """alpha + (p-1)/p n beta: every block at once, the rank's link the only limit."""
        return self.alpha_ps + (p - 1) / p * n * self.beta_ps_per_byte

    # ------------------------------------------------------------------ pipelined in chunks
    # Each takes upper=True for the bound with the first chunks sharing the link (see pipelined).

    def ring_allreduce_pipelined(self, p: int, n: int, chunk: int, inflight: int, channels: int = 1,
                                 upper: bool = False) -> float:
        """The larger of the ring's latency and its bandwidth: chunk 0 crosses 2(p-1) steps, each
        ``alpha + c beta``, and the rest of its block follows at ``beta_w``; or a rank's link carries its
        2(p-1)/p n bytes at ``beta_w`` plus one chunk's latency (when a block takes longer on the link
        than a chunk's step, the steps overlap instead of adding up). L = channels."""
        block = n / (p * channels)
        c = min(chunk, block)
        k = max(1, -(-int(block) // int(c)))
        b = min(inflight, k) if upper else 1
        latency = self.pipelined(2 * (p - 1), block, c, channels * inflight, b)
        bandwidth = self.pipelined(1, 2 * (p - 1) / p * n, c, channels * inflight, b)
        return max(latency, bandwidth)

    def tree_allreduce(self, p: int, n: int, chunk: int | None = None, inflight: int = 4,
                       channels: int = 2, upper: bool = False) -> float:
        """Double binary tree: 2d hops of fill, then the 2n bytes of the busiest rank's link.

        d is the deeper tree's depth and c the chunk (at most n / channels). The first chunk climbs d hops
        and comes down d; after that a rank's link is the limit: an inner node of one tree (two children)
        and a leaf of the other sends n/2 up and n down in the first and n/2 up in the second, 2n in all
        (three connections in the tree it is inner in, one in the other: L = 2 channels).
        """
        d = max(tree_depth(t) for t in double_btree_parents(p))
        share = n / channels
        c = share if chunk is None or chunk > share else chunk
        # upper: an inner node's two children share its link too
        b = 2 * min(inflight, max(1, round(share / c))) if upper else 1
        return self.pipelined(2 * d, 2 * n - (channels - 1) * c, c, 2 * channels * inflight, b)

    def chain(self, p: int, n: int, chunk: int | None = None, inflight: int = 4, channels: int = 1,
              upper: bool = False) -> float:
        """Pipelined chain broadcast / reduce: (p-1)(alpha + c beta) + (n - c) beta_w (L = channels)."""
        share = n / channels
        c = share if chunk is None or chunk > share else chunk
        b = min(inflight, max(1, round(share / c))) if upper else 1
        return self.pipelined(p - 1, n - (channels - 1) * c, c, channels * inflight, b)

    def in_network_allreduce(self, p: int, n: int, chunk: int | None = None, inflight: int = 4,
                             levels: int = 1, channels: int = 1, upper: bool = False) -> float:
        """2 levels (alpha + c beta) + (n - c) beta_w: each rank's link carries n once each way (alpha:
        one hop from a rank to its aggregation node)."""
        share = n / channels
        c = share if chunk is None or chunk > share else chunk
        b = min(inflight, max(1, round(share / c))) if upper else 1
        return self.pipelined(2 * levels, n - (channels - 1) * c, c, channels * inflight, b)
