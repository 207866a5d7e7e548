"""Splitting a buffer into channels, blocks and chunks, as NCCL does before pipelining them.

NCCL divides a collective's buffer among its channels (each a ring or a pair of trees of its own), and
each channel moves its share in chunks of at most ``chunk_size`` bytes that follow one another through
the ranks, so a rank forwards chunk 0 while chunk 1 is still arriving.
"""

from __future__ import annotations

from rdmasim.workload.traffic._common import size_bytes
from rdmasim.workload.traffic.collectives._plan import MAX_CHANNELS, MAX_INFLIGHT
from rdmasim.workload.traffic.table import MAX_FLOW_SIZE


def split(size: int, parts: int) -> list[int]:
    """``size`` bytes in ``parts`` pieces as equal as possible (the first ``size % parts`` a byte larger)."""
    base, extra = divmod(size, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def chunks(size: int, chunk_size: int | None) -> list[int]:
    """``size`` bytes as chunks of at most ``chunk_size`` (one piece if None); an empty list for 0 bytes."""
    if size == 0:
        return []
    if chunk_size is None:
        return [size]
    return split(size, -(-size // chunk_size))


def check_chunking(chunk_size: int | str | None, channels: int, inflight: int) -> int | None:
    """Check the pipelining knobs; returns ``chunk_size`` in bytes (None: one chunk per piece)."""
    for name, value, hi in (("channels", channels, MAX_CHANNELS), ("inflight", inflight, MAX_INFLIGHT)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise ValueError(f"{name} = {value!r} must be an int in [1, {hi}]")
    if chunk_size is None:
        return None
    c = size_bytes(chunk_size, "chunk_size")
    if c > MAX_FLOW_SIZE:
        raise ValueError(f"chunk_size = {c} bytes exceeds the largest flow, {MAX_FLOW_SIZE} bytes")
    return c


def need_pieces(size: int, pieces: int, what: str) -> None:
    """Refuse a buffer too small to give every piece at least one byte."""
    if size < pieces:
        raise ValueError(f"size = {size} bytes cannot be split into {pieces} non-empty pieces ({what})")
