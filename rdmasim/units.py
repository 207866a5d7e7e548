"""Parse rates, times and sizes written the way network people write them.

Rates become integer bits per second, times integer picoseconds, sizes integer bytes.
Errors name the value and show accepted forms; nothing is silently rounded away.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

# A decimal number: digits with an optional fraction and exponent (no sign: values are >= 0).
_NUM = re.compile(
    r"\s*(?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE](?P<exp>[-+]?[0-9]+))?)\s*(?P<unit>\S*?)\s*"
)
#: Largest decimal exponent accepted (``1e40``): beyond it no rate, time or size is meaningful,
#: and exact arithmetic on it would only burn memory.
_MAX_EXP = 40

_PREFIX = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _rate_units() -> dict[str, int]:
    units: dict[str, int] = {}
    for p, scale in _PREFIX.items():
        # bits per second; case matters: b = bit, B = byte
        for bit in ("bps", "b/s", "bit/s"):
            units[p + bit] = scale
        for byte in ("Bps", "B/s"):
            units[p + byte] = scale * 8
        if p:
            units[p] = scale  # "400G": Ethernet's way of naming a line rate in bits/s
    return units


#: Accepted rate spellings -> bits per second per unit (case-sensitive: b = bit, B = byte).
RATE_UNITS: dict[str, int] = _rate_units()
#: Accepted time spellings -> picoseconds per unit (µ is U+00B5, μ U+03BC; both are accepted).
TIME_UNITS: dict[str, int] = {"ps": 1, "ns": 10**3, "us": 10**6, "\u00b5s": 10**6, "\u03bcs": 10**6,
                              "ms": 10**9, "s": 10**12}
#: Accepted size spellings -> bytes per unit ("" is a bare number of bytes; bits are refused).
SIZE_UNITS: dict[str, int] = {
    "": 1, "B": 1,
    "kB": 10**3, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
    "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40,
}


def _allowed(units: dict[str, int]) -> str:
    return ", ".join(repr(k) for k in units if k) + (" or none" if "" in units else "")


def _split(text: str, what: str, units: dict[str, int], example: str) -> tuple[Fraction, int]:
    """The number (exact) and the unit's scale of ``text``, or ValueError listing the spellings."""
    m = _NUM.fullmatch(text)
    if m and m.group("exp") is not None and abs(int(m.group("exp"))) > _MAX_EXP:
        raise ValueError(f"cannot read {what} {text!r}: exponent out of range (at most 1e{_MAX_EXP})")
    if not m or m.group("unit") not in units:
        hint = ""
        if m and what == "size" and m.group("unit").endswith("b"):
            hint = " (b is a bit; sizes are bytes: B)"
        elif m and m.group("unit").lower() in {u.lower() for u in units}:
            hint = " (units are case-sensitive" + (": b = bit, B = byte)" if what == "rate" else ")")
        raise ValueError(
            f"cannot read {what} {text!r}{hint}: expected a number and one of the units "
            f"{_allowed(units)}, e.g. {example!r}"
        )
    return Fraction(m.group("num")), units[m.group("unit")]


def _exact(value: Fraction, scale: int, text: str, what: str, unit: str) -> int:
    out = value * scale
    if out.denominator != 1:
        raise ValueError(f"{what} {text!r} is not a whole number of {unit} ({float(out):g})")
    return int(out)


def parse_rate(value: str | int | float) -> int:
    """Rate in bits/s from ``"100Gbps"``, ``"25 Gb/s"``, ``"400G"``, ``"12.5GB/s"`` (bytes/s: x 8)
    or a number of bits/s.

    Units are case-sensitive (``b`` bit, ``B`` byte); the accepted spellings are
    :data:`RATE_UNITS`. Anything else, or a rate that is not a whole number of bits/s, is a
    ValueError naming the value and the allowed spellings.
    """
    if isinstance(value, bool):
        raise TypeError(f"rate must be a string like '100Gbps' or a number of bits/s, not {value!r}")
    if isinstance(value, int):
        bps, text = value, str(value)
    elif isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"rate {value!r} is not a whole number of bits/s")
        bps, text = int(value), repr(value)
    elif isinstance(value, str):
        num, scale = _split(value, "rate", RATE_UNITS, "100Gbps")
        bps = _exact(num, scale, value, "rate", "bits/s")
        text = value
    else:
        raise TypeError(f"rate must be a string like '100Gbps' or a number of bits/s, not {value!r}")
    if bps <= 0:
        raise ValueError(f"rate {text!r} must be positive")
    return bps


def _parse_count(value: str | int, what: str, units: dict[str, int], example: str, unit: str) -> int:
    """A non-negative whole number of ``unit``: an int as is, or a string with a unit from ``units``."""
    if isinstance(value, int) and not isinstance(value, bool):
        n, text = value, str(value)
    elif isinstance(value, str):
        num, scale = _split(value, what, units, example)
        n, text = _exact(num, scale, value, what, unit), value
    else:
        raise TypeError(f"{what} must be a string like {example!r} or an int of {unit}, not {value!r}")
    if n < 0:
        raise ValueError(f"{what} {text!r} must not be negative")
    return n


def parse_time(value: str | int) -> int:
    """Time in picoseconds from ``"1us"``, ``"500 ns"``, ``"2.5ms"``, or an int already in ps.

    Accepted units: :data:`TIME_UNITS` (case-sensitive: ``ms`` is a millisecond)."""
    return _parse_count(value, "time", TIME_UNITS, "1us", "picoseconds")


def parse_size(value: str | int) -> int:
    """Size in bytes from ``"4KiB"``, ``"10MB"``, ``"1500"`` or an int.

    Accepted units: :data:`SIZE_UNITS` (``kB``/``KB`` = 1000 B, ``KiB`` = 1024 B; a lowercase
    ``b`` is a bit and refused: sizes are whole bytes)."""
    return _parse_count(value, "size", SIZE_UNITS, "10MB", "bytes")


def format_time(ps: int, ascii: bool = False) -> str:
    """Human-readable time from picoseconds: ``"379.911 µs"`` (``"us"`` with ``ascii=True``);
    :func:`parse_time` reads both back."""
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us" if ascii else "\u00b5s", 10**6), ("ns", 10**3)):
        if abs(ps) >= scale:
            return f"{ps / scale:.6g} {unit}"
    return f"{ps} ps"


def format_rate(bps: float) -> str:
    """Human-readable rate from bits/s."""
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.4g} b/s"


def numeric_values(values: Sequence[Any]) -> list[float] | None:
    """``values`` as numbers: numbers as they are, or strings that all read as sizes, rates or
    times (``64KiB`` -> 65536 bytes, ``25Gbps`` -> 25e9 b/s, ``1us`` -> 1e6 ps); None when they
    are not all numbers of one kind (booleans are not numbers here)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return [float(v) for v in values]
    if not all(isinstance(v, str) for v in values):
        return None
    parsers: tuple[Callable[[str], int], ...] = (parse_size, parse_rate, parse_time)
    for parse in parsers:
        try:
            return [float(parse(v)) for v in values]
        except (TypeError, ValueError):
            continue
    return None
