"""Parse rates, times and sizes written the way network people write them.

Rates become integer bits per second, times integer picoseconds, sizes integer bytes.
Errors name the value and show accepted forms; nothing is silently rounded away.
"""

from __future__ import annotations

import re

_NUM = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*"

_RATE_UNITS = {
    "bps": 1, "b/s": 1,
    "kbps": 10**3, "kb/s": 10**3, "k": 10**3,
    "mbps": 10**6, "mb/s": 10**6, "m": 10**6,
    "gbps": 10**9, "gb/s": 10**9, "g": 10**9,
    "tbps": 10**12, "tb/s": 10**12, "t": 10**12,
}
_TIME_UNITS = {"ps": 1, "ns": 10**3, "us": 10**6, "µs": 10**6, "ms": 10**9, "s": 10**12}
_SIZE_UNITS = {
    "b": 1, "": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9,
    "kib": 2**10, "mib": 2**20, "gib": 2**30,
}


def _split(text: str, what: str, units: dict[str, int], example: str) -> tuple[float, int]:
    m = re.fullmatch(_NUM + r"([A-Za-zµ/]*)\s*", text)
    if not m or m.group(2).lower() not in units:
        raise ValueError(
            f"cannot read {what} {text!r}: expected a number and a unit "
            f"({', '.join(sorted({k for k in units if k}))}), e.g. {example!r}"
        )
    return float(m.group(1)), units[m.group(2).lower()]


def _exact(value: float, scale: int, text: str, what: str, unit: str) -> int:
    out = value * scale
    if abs(out - round(out)) > 1e-6 * max(1.0, abs(out)):
        raise ValueError(f"{what} {text!r} is not a whole number of {unit}")
    return int(round(out))


def parse_rate(value: str | int | float) -> int:
    """Rate in bits/s: ``"100Gbps"``, ``"25 Gb/s"``, ``"400G"`` or a number of bits/s."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        bps = int(value)
        text = str(value)
    elif isinstance(value, str):
        num, scale = _split(value, "rate", _RATE_UNITS, "100Gbps")
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
    """Time in picoseconds: ``"1us"``, ``"500 ns"``, ``"2.5ms"``, or an int already in ps."""
    return _parse_count(value, "time", _TIME_UNITS, "1us", "picoseconds")


def parse_size(value: str | int) -> int:
    """Size in bytes: ``"4KiB"``, ``"10MB"``, ``"1500"`` or an int."""
    return _parse_count(value, "size", _SIZE_UNITS, "10MB", "bytes")


def format_time(ps: int) -> str:
    """Human-readable time from picoseconds."""
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if abs(ps) >= scale:
            return f"{ps / scale:.6g} {unit}"
    return f"{ps} ps"


def format_rate(bps: float) -> str:
    """Human-readable rate from bits/s."""
    for unit, scale in (("Tb/s", 1e12), ("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if abs(bps) >= scale:
            return f"{bps / scale:.4g} {unit}"
    return f"{bps:.4g} b/s"
