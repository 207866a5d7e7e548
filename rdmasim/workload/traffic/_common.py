"""Argument handling shared by the generators and collectives (host lists, units, RNG, table building)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from rdmasim.checks import MAX_TIME_PS, check_time_ps
from rdmasim.units import parse_rate, parse_size, parse_time
from rdmasim.workload.traffic.table import MAX_FLOW_SIZE, FlowTable, verb_code

Hosts = int | Sequence[int] | np.ndarray
"""An int ``n`` (hosts ``0..n-1``) or the host indices to use."""


def host_array(hosts: Hosts, what: str = "hosts", minimum: int = 2) -> np.ndarray:
    """Host indices as int64, checked: at least ``minimum`` of them, non-negative, no repeats."""
    if isinstance(hosts, (int, np.integer)) and not isinstance(hosts, bool):
        arr = np.arange(int(hosts), dtype=np.int64)
    else:
        raw = np.asarray(hosts)
        if raw.ndim != 1 or (raw.size and raw.dtype.kind not in "iu"):
            raise ValueError(f"{what} must be an int or a 1-D sequence of host indices, got {hosts!r}")
        arr = raw.astype(np.int64)
    if arr.size < minimum:
        raise ValueError(f"{what}: need at least {minimum} hosts, got {arr.size}")
    if (arr < 0).any():
        raise ValueError(f"{what}: host index {int(arr[arr < 0][0])} is negative")
    uniq, counts = np.unique(arr, return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"{what}: host {int(uniq[counts > 1][0])} is listed more than once")
    return arr


def size_bytes(size: int | str, what: str = "size", minimum: int = 1) -> int:
    """A flow or buffer size in bytes (an int or a string like ``"64KiB"``), at least ``minimum``."""
    n = parse_size(size)
    if n < minimum:
        raise ValueError(f"{what} = {n} bytes must be at least {minimum}")
    return n


def flow_size(size: int | str, what: str = "size") -> int:
    """A single flow's size: 1 .. 2**31-1 bytes."""
    n = size_bytes(size, what)
    if n > MAX_FLOW_SIZE:
        raise ValueError(f"{what} = {n} bytes exceeds the largest flow, {MAX_FLOW_SIZE} bytes")
    return n


def time_ps(value: int | str, what: str) -> int:
    """A time in ps (an int or a string like ``"2us"``) in ``[0, MAX_TIME_PS]``."""
    try:
        t = parse_time(value)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    return check_time_ps(what, t)


def last_time_ps(what: str, start: int, step: int, count: int) -> int:
    """``start + step * (count - 1)`` computed in Python ints: the latest of ``count`` evenly spaced
    start times, refused (never wrapped in int64) if past ``MAX_TIME_PS``."""
    last = start + step * max(count - 1, 0)
    if last > MAX_TIME_PS:
        raise ValueError(f"{what}: the last of {count} start times, {start} + {step} x {count - 1} = "
                         f"{last} ps, is past the latest time allowed, {MAX_TIME_PS} ps "
                         "(MAX_TIME_PS, about 53 days)")
    return last


def rate_bps(value: int | float | str, what: str = "link_rate_bps") -> int:
    """A rate in bits/s (a number or a string like ``"100Gbps"``)."""
    try:
        return parse_rate(value)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def make_rng(seed: int | None, rng: np.random.Generator | None) -> np.random.Generator:
    """The generator to draw from: ``rng`` if given, else ``np.random.default_rng(seed)``."""
    if rng is not None:
        if seed is not None:
            raise ValueError("give seed or rng, not both")
        return rng
    return np.random.default_rng(seed)


def deps_csr(deps: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-flow dependency lists as the flow table's CSR arrays: ``dep_ptr`` (int64, one more
    entry than flows) and ``deps`` (int32, every list in order)."""
    counts = np.fromiter((len(d) for d in deps), dtype=np.int64, count=len(deps))
    ptr = np.zeros(len(deps) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    flat = np.fromiter((d for ds in deps for d in ds), dtype=np.int32, count=int(ptr[-1]))
    return ptr, flat


def check_priority(priority: int) -> int:
    """A priority class 0..7."""
    if not isinstance(priority, (int, np.integer)) or isinstance(priority, bool) or not 0 <= priority <= 7:
        raise ValueError(f"priority = {priority!r} must be an int in [0, 7]")
    return int(priority)


def build(
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    size: npt.ArrayLike,
    start_ps: npt.ArrayLike,
    verb: str | int,
    priority: int,
    label: str | None,
    dep_ptr: np.ndarray | None = None,
    deps: np.ndarray | None = None,
) -> FlowTable:
    """A FlowTable with all flows in one group named ``label`` (no group if ``label`` is None)."""
    return FlowTable.from_columns(
        src, dst, size, start_ps, verb=verb_code(verb), priority=check_priority(priority),
        group=-1 if label is None else 0, groups=() if label is None else (label,),
        dep_ptr=dep_ptr, deps=deps,
    )
