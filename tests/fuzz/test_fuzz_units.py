"""Fuzzing the unit parser and drop-rule arguments: every input is either read exactly or refused
with a ValueError/TypeError naming it (and, for units, the allowed spellings); never another
exception, never a silently different value."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdmasim
from rdmasim.units import RATE_UNITS, SIZE_UNITS, TIME_UNITS, parse_rate, parse_size, parse_time

PARSERS = [
    ("rate", parse_rate, RATE_UNITS, "bits/s"),
    ("time", parse_time, TIME_UNITS, "picoseconds"),
    ("size", parse_size, SIZE_UNITS, "bytes"),
]
_ORACLE = re.compile(r"\s*((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE]([-+]?[0-9]+))?)\s*(\S*?)\s*")

numbers = st.one_of(
    st.integers(0, 10**6).map(str),
    st.decimals(0, 10**6, places=4, allow_nan=False, allow_infinity=False).map(str),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(0, 999), st.integers(-60, 60)),
)
every_unit = sorted(set(RATE_UNITS) | set(TIME_UNITS) | set(SIZE_UNITS))
twisted_units = st.sampled_from(every_unit).flatmap(
    lambda u: st.sampled_from([u, u.lower(), u.upper(), u.swapcase(), u + "s", u[:-1], "i" + u]))
texts = st.one_of(
    st.builds(lambda n, sp, u: f"{n}{sp}{u}", numbers, st.sampled_from(["", " ", "  "]), twisted_units),
    st.text(alphabet="0123456789.eE+- kKMGTBbpsi/µμmnu\t", max_size=12),
    st.text(max_size=8),
)


def _expect(text: str, units: dict[str, int]) -> int | None:
    """The exact value ``text`` must give, or None when it must be refused (the oracle)."""
    m = _ORACLE.fullmatch(text)
    if not m or m.group(3) not in units or (m.group(2) and abs(int(m.group(2))) > 40):
        return None
    v = Fraction(m.group(1)) * units[m.group(3)]
    return int(v) if v.denominator == 1 else None


def _check(text: str) -> None:
    for what, fn, units, base in PARSERS:
        want = _expect(text, units)
        if what == "rate" and want == 0:
            want = None  # a rate must be positive
        try:
            got = fn(text)
        except ValueError as exc:
            msg = str(exc)
            assert want is None, (what, text, msg)
            assert repr(text) in msg
            assert ("e.g." in msg and all(repr(u) in msg for u in units if u)) or \
                "whole number of " + base in msg or "exponent" in msg or "positive" in msg, msg
        else:
            assert got == want, (what, text, got, want)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_unit_strings_are_read_exactly_or_refused(text: str) -> None:
    _check(text)


@pytest.mark.slow
@settings(max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_unit_strings_are_read_exactly_or_refused_long(text: str) -> None:
    _check(text)


values = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.integers(-2, 300),
    st.floats(allow_nan=True), st.text(max_size=20),
    st.sampled_from(["ATOMIC_ACKNOWLEDGE", "RDMA_WRITE_FIRST", "CNP", "ACK"]),
    st.lists(st.one_of(st.integers(-1, 256), st.sampled_from(["SEND_ONLY", "nope"])), max_size=3),
)
RANGES = {"nth": (0, 2**64 - 1), "psn": (0, 2**24 - 1), "dest_qp": (0, 2**24 - 1), "skip": (0, 2**32 - 1),
          "count": (1, 2**32 - 1)}


def _try_rule(link: Any, kw: dict[str, Any]) -> None:
    try:
        link.ab.drop(**kw)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        assert msg.startswith("drop") or "opcode" in msg, msg
        return
    # accepted: every value was a plain int in range (or a known opcode set), and some field is set
    assert any(kw.get(k) is not None for k in ("nth", "psn", "opcode", "dest_qp"))
    for k, (lo, hi) in RANGES.items():
        if k in kw and kw[k] is not None:
            assert type(kw[k]) is int and lo <= kw[k] <= hi, (k, kw[k])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["nth", "psn", "opcode", "dest_qp", "skip", "count"]), values))
def test_drop_rule_arguments_are_checked(kw: dict[str, Any]) -> None:
    t = rdmasim.back_to_back()
    _try_rule(t.link, kw)
    # the link still works with whatever rules were accepted (no crash in C)
    t.sim.run("10us")
