"""Checked conversions for values that enter the C core.

Every integer or time that crosses into C goes through one of these, so a value is either exactly
what the user wrote or refused with a message naming it: never cast to a narrower type, never
rounded, never wrapped. ``what`` names the argument, column, key or field as the user wrote it
(``"add_flows: column 'src', row 3"``, ``"incast.toml: link.delay"``).

Times are integer picoseconds in C (``int64``); ``MAX_TIME_PS`` leaves headroom so that adding
any two checked times (a start plus a duration, a deadline plus a timeout) cannot wrap.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

import numpy as np

#: Latest simulated time a value may name: 2^62 ps (about 53 days). Sums of two such times stay
#: below 2^63, the int64 limit of the core's clock.
MAX_TIME_PS = 1 << 62

UINT8_MAX = (1 << 8) - 1
UINT16_MAX = (1 << 16) - 1
UINT32_MAX = (1 << 32) - 1
UINT64_MAX = (1 << 64) - 1
INT64_MAX = (1 << 63) - 1


def is_zero(v: Any) -> bool:
    """``0`` or ``"0"``: the value that means "none" / "the default" for rates, sizes and times
    (not ``False`` or ``0.0``, which compare equal to 0 but are not what such a field takes)."""
    return v == "0" or (isinstance(v, numbers.Integral) and not isinstance(v, bool) and v == 0)


def check_int(what: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as a Python int in ``[lo, hi]``, or ValueError/TypeError naming ``what``.

    Accepts ints and numpy integers (not bools, not floats, not even integral ones: a float in an
    integer field is almost always a unit mistake).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{what} must be an integer in [{lo}, {hi}], not {value!r} ({type(value).__name__})")
    v = int(value)
    if not lo <= v <= hi:
        raise ValueError(f"{what} = {v} is out of range: allowed [{lo}, {hi}]")
    return v


def check_real(
    what: str, value: Any, lo: float, hi: float, *, lo_open: bool = False, hi_open: bool = False
) -> float:
    """``value`` as a finite float in the interval, else an error naming ``what``; NaN never passes."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{what} must be a number, not {value!r} ({type(value).__name__})")
    v = float(value)
    below = v <= lo if lo_open else v < lo
    above = v >= hi if hi_open else v > hi
    if math.isnan(v) or below or above:
        interval = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
        raise ValueError(f"{what} = {value!r} is out of range: allowed {interval}")
    return v


def check_time_ps(what: str, value: Any, lo: int = 0, hi: int = MAX_TIME_PS) -> int:
    """A time in integer picoseconds in ``[lo, hi]`` (default: 0 .. ``MAX_TIME_PS``)."""
    return check_int(f"{what} (picoseconds)", value, lo, hi)


def exact_array(values: Any) -> np.ndarray:
    """``np.asarray(values)``, except that a sequence with ints that numpy would turn into floats
    (``[1, 2**63]`` mixes int64 and uint64: float64, rounded; ``[1, 0.5]``) keeps its elements as
    given, in an object array, so each is judged (and named) on its own."""
    arr = np.asarray(values)
    if (arr.dtype.kind == "f" and not isinstance(values, np.ndarray) and arr.ndim == 1
            and any(isinstance(v, (numbers.Integral, np.integer)) for v in values)):
        out = np.empty(len(arr), dtype=object)
        out[:] = list(values)
        return out
    return arr


def check_int_array(what: str, values: Any, lo: int, hi: int, dtype: Any) -> np.ndarray:
    """A 1-D array of integers in ``[lo, hi]`` converted to ``dtype`` exactly.

    Refuses float arrays (even integral ones), bools and object arrays, and names the first
    offending row and its value.
    """
    arr = exact_array(values)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {arr.shape}")
    if arr.size and arr.dtype.kind == "O":  # Python ints too large for int64, or mixed objects
        for row, v in enumerate(arr):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
                raise TypeError(f"{what}: row {row} = {v!r} ({type(v).__name__}) is not an integer "
                                f"in [{lo}, {hi}]")
            if not lo <= int(v) <= hi:
                raise ValueError(f"{what}: row {row} = {int(v)} is out of range: allowed [{lo}, {hi}]")
        return np.array([int(v) for v in arr], dtype=dtype)
    if arr.size and arr.dtype.kind == "f":  # name the first float given (or that is not whole)
        odd = np.flatnonzero(~np.isfinite(arr) | (arr != np.round(arr)))
        row = int(odd[0]) if odd.size else 0
        raise TypeError(f"{what}: row {row} = {float(arr[row])!r} is not an integer in [{lo}, {hi}] "
                        f"(the column holds {arr.dtype}, it must hold integers)")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold integers in [{lo}, {hi}], got dtype {arr.dtype}")
    if arr.size:
        as_obj = arr.astype(object) if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 else arr
        bad = np.flatnonzero((as_obj < lo) | (as_obj > hi))
        if bad.size:
            row = int(bad[0])
            raise ValueError(f"{what}: row {row} = {int(arr[row])} is out of range: allowed [{lo}, {hi}]")
    return arr.astype(dtype, copy=False)


def check_path(what: str, value: Any) -> bytes:
    """A file path for the C core as bytes (``os.fsencode``), or an error naming ``what``.

    Every path that reaches C goes through here: C strings end at the first NUL byte, so a path
    holding one would silently name another file; it is refused instead (ValueError).
    """
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"{what} must be a str or path-like, not {value!r} ({type(value).__name__})")
    raw = os.fsencode(value)
    if not raw:
        raise ValueError(f"{what} is empty")
    if b"\0" in raw:
        raise ValueError(f"{what} {os.fsdecode(raw)!r} contains a NUL byte: not a valid file name")
    return raw
