"""Argument checks of the verbs API: every value reaches the C core exactly as given or is refused
with PyverbsUserError naming it, its value and what is allowed (the conversions of
rdmasim.checks, with the verbs error type). A value of the wrong type (a float, a bool, a str
where an integer goes) is a PyverbsTypeError: a PyverbsUserError that is also the TypeError
pyverbs' Cython conversions raise for a value that is no number."""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING, Any, TypeVar

from rdmasim import checks
from rdmasim.errors import PyverbsUserError

if TYPE_CHECKING:  # any simulation: a Simulator is a SimHandle
    from rdmasim.transport.handle import SimHandle as Simulator

U8, U16, U32, U64 = checks.UINT8_MAX, checks.UINT16_MAX, checks.UINT32_MAX, checks.UINT64_MAX
PSN_MAX = (1 << 24) - 1
INT32_MAX = (1 << 31) - 1

T = TypeVar("T")


class PyverbsTypeError(PyverbsUserError, TypeError):
    """An argument of the wrong type: ``QPCap(max_send_wr=1.5)``, ``MR(pd, 8, True)``. Never
    truncated or read as a number; caught by ``except PyverbsUserError`` and ``except TypeError``
    alike."""


def int_in(what: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int in ``[lo, hi]``, else PyverbsUserError (PyverbsTypeError for a bool,
    a float, even an integral one, or anything else that is not an integer)."""
    if type(value) is int and lo <= value <= hi:  # the common case, decided without check_int's ABCs
        return value
    if type(value) is MRKey and lo <= value <= hi:  # an MR's key: an int (as check_int returns it)
        return int(value)
    try:
        return checks.check_int(what, value, lo, hi)
    except TypeError as exc:
        raise PyverbsTypeError(str(exc)) from None
    except ValueError as exc:
        raise PyverbsUserError(str(exc)) from None


def flags_in(what: str, value: Any, known: dict[str, int]) -> int:
    """A bit mask of ``known`` flags (name -> bit); unknown bits are refused by value."""
    v = int_in(what, value, 0, U32)
    allowed = 0
    for bit in known.values():
        allowed |= bit
    if v & ~allowed:
        names = ", ".join(f"{n}=0x{b:x}" for n, b in sorted(known.items(), key=lambda kv: kv[1]))
        raise PyverbsUserError(f"{what} = 0x{v:x} has unknown bits 0x{v & ~allowed:x}; known flags: {names}")
    return v


def instance(what: str, value: Any, cls: type[T] | tuple[type, ...]) -> T:
    """``value`` if it is a ``cls``, else PyverbsUserError."""
    if not isinstance(value, cls):
        names = cls.__name__ if isinstance(cls, type) else " or ".join(c.__name__ for c in cls)
        raise PyverbsUserError(f"{what} must be a {names}, got {value!r} ({type(value).__name__})")
    return value  # type: ignore[return-value]


def same_sim(what: str, sim: Simulator, other: Simulator) -> None:
    """Objects of one simulation only work with objects of the same simulation."""
    if sim is not other:
        raise PyverbsUserError(f"{what} belongs to another simulation")


def wr_chain(what: str, first: Any, cls: type[T]) -> list[T]:
    """The work requests of a ``next_wr`` chain from ``first``, each checked to be a ``cls``;
    a chain that loops back on itself is refused."""
    seen: set[int] = set()
    out: list[T] = []
    wr = first
    while wr is not None:
        where = f"{what}: work request" if not out else f"{what}: next_wr of work request {len(out) - 1}"
        instance(where, wr, cls)
        if id(wr) in seen:
            raise PyverbsUserError(f"{what}: the next_wr chain loops back to work request {len(out)} "
                                   f"({wr!r})")
        seen.add(id(wr))
        out.append(wr)
        wr = getattr(wr, "next_wr", None)
    return out


class MRKey(int):
    """An lkey or rkey as an MR returns it: an int that also remembers the simulation of its MR,
    so that a work request naming an MR of another simulation is refused instead of resolving to
    this simulation's MR that has the same number."""

    _sim_ref: weakref.ReferenceType[Simulator]

    def __new__(cls, value: int, sim: Simulator) -> MRKey:
        obj = super().__new__(cls, value)
        obj._sim_ref = weakref.ref(sim)
        return obj

    def __reduce__(self) -> tuple[type, tuple[int]]:
        return int, (int(self),)


def key(what: str, value: Any, sim: Simulator) -> int:
    """A 32-bit key; if it came from an MR, that MR must be of ``sim``."""
    v = int_in(what, value, 0, U32)
    if isinstance(value, MRKey) and value._sim_ref() is not sim:
        raise PyverbsUserError(f"{what} = 0x{v:x} is the key of a memory region of another simulation")
    return v


def imm_to_wire(imm_data: int) -> int:
    """verbs' ``imm_data`` (``__be32``: the bytes in memory are the wire bytes) as the 32-bit ImmDt
    value read big-endian off the wire: ``htonl(x)`` gives ``x``."""
    return int.from_bytes(imm_data.to_bytes(4, sys.byteorder), "big")


def imm_from_wire(immdt: int) -> int:
    """The inverse of ``imm_to_wire``: the ``__be32`` value a WC's ``imm_data`` holds."""
    return int.from_bytes(immdt.to_bytes(4, "big"), sys.byteorder)
