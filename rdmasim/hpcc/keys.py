"""Typed access to the keys of an HPCC ``config.txt``: ``third.cc``'s default when a key is absent,
errors naming the file, line, value and allowed range, and a record of which keys were read (the
rest are named as unknown)."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from rdmasim.hpcc.inputs import Config, HpccInputError, _ns3_rate_bps


class HpccRefused(HpccInputError):
    """The inputs ask for something no rdmasim scenario expresses: import refused (exit 2)."""


def rate_text(bps: int) -> str:
    """A rate in b/s as a scenario rate string (``100Gbps``)."""
    for unit, scale in (("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bps"


def time_text(ps: int) -> str:
    """A time in ps as a scenario time string (``4160ns``)."""
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps and ps % scale == 0:
            return f"{ps // scale}{unit}"
    return f"{ps}ps"


class Keys:
    """Typed access to config keys (third.cc's default when absent), remembering which were read."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.read: set[str] = set()

    def has(self, key: str) -> bool:
        return key in self.cfg.entries

    def raw(self, key: str) -> list[str]:
        self.read.add(key)
        return self.cfg.entries[key][1] if key in self.cfg.entries else []

    def _one(self, key: str, default: Any, conv: Callable[[str], Any], allowed: str) -> Any:
        vals = self.raw(key)
        if not vals:
            if key in self.cfg.entries or default is None:
                raise HpccRefused(f"{self.cfg.where(key)}: {key}: no value (allowed: {allowed})")
            return default
        try:
            return conv(vals[0])
        except (ValueError, TypeError, ArithmeticError):
            raise HpccInputError(
                f"{self.cfg.where(key)}: {key} = {vals[0]!r}: not valid (allowed: {allowed})"
            ) from None

    def int(self, key: str, default: int | None, lo: int = 0, hi: int = (1 << 63) - 1) -> int:
        v = self._one(key, default, int, f"an integer in {lo}..{hi}")
        if not lo <= v <= hi:
            raise HpccInputError(f"{self.cfg.where(key)}: {key} = {v}: out of range (allowed: {lo}..{hi})")
        return int(v)

    def float(self, key: str, default: float | None, lo: float, hi: float) -> float:
        v = self._one(key, default, float, f"a number in {lo}..{hi}")
        if not lo <= v <= hi:
            raise HpccInputError(f"{self.cfg.where(key)}: {key} = {v}: out of range (allowed: {lo}..{hi})")
        return float(v)

    def decimal(self, key: str, default: str, allowed: str) -> Decimal:
        def conv(s: str) -> Decimal:
            try:
                d = Decimal(s)
            except InvalidOperation:
                raise ValueError(s) from None
            if not d.is_finite() or d < 0:
                raise ValueError(s)
            return d

        return Decimal(self._one(key, Decimal(default), conv, allowed))

    def rate(self, key: str, default: str | None, need: str = "") -> int:
        if default is None and not self.has(key):
            raise HpccRefused(
                f"{self.cfg.where(key)}: {key} missing ({need} needs it; allowed: a rate like 50Mb/s)"
            )
        dflt = None if default is None else _ns3_rate_bps(default)
        v = int(self._one(key, dflt, _ns3_rate_bps, "a rate like 50Mb/s"))
        if v <= 0:
            raise HpccInputError(f"{self.cfg.where(key)}: {key} = {v} b/s: out of range (allowed: > 0)")
        return v

    def show(self, key: str) -> str:
        return f"{key} {' '.join(self.cfg.entries[key][1])}" if key in self.cfg.entries else key


def rate_map(keys: Keys, key: str, conv: Callable[[str], Any]) -> dict[int, Any]:
    vals = keys.raw(key)
    if not vals:
        return {}
    where = keys.cfg.where(key)
    try:
        n = int(vals[0])
        if n < 0 or len(vals) < 1 + 2 * n:
            raise ValueError
        return {int(vals[1 + 2 * i]): conv(vals[2 + 2 * i]) for i in range(n)}
    except ValueError:
        raise HpccInputError(
            f"{where}: {key} {' '.join(vals)}: malformed (allowed: N rate1 value1 ... "
            "rateN valueN, rates in b/s)"
        ) from None
