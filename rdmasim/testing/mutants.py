"""Deliberately wrong behaviours of the C core, for proving the invariant checkers catch bugs.

They are compiled in only when the extension is built with ``RDMASIM_MUTANTS=1``::

    RDMASIM_MUTANTS=1 python setup.py build_ext --inplace

Each mutant is a one- or two-line ``#ifdef RDMASIM_MUTANTS`` at the exact rule it breaks
(csrc/include/rdmasim/mutants.h lists them); normal builds contain none of it.
"""

from __future__ import annotations

from rdmasim import _core
from rdmasim.sim import Simulator

#: mutant name -> (C enum value, what it breaks)
MUTANTS: dict[str, tuple[int, str]] = {
    "nak_sticky": (1, "responder never clears its NAK-sent flag: later PSN gaps are not NAKed"),
    "rewind_psn": (2, "requester retransmits from the PSN after the one asked for"),
    "ack_ahead": (3, "ACK coalescing acknowledges one PSN past the packet received"),
    "pfc_early_xon": (4, "switch sends XON at the first dequeue, above the XON threshold"),
    "cnp_half_interval": (5, "NP CNP rate limiter compares against interval >> 1"),
    "dcqcn_no_floor": (6, "DCQCN rate cut forgets the min-rate clamp"),
    "drop_uncounted": (7, "switch does not count lossy-threshold drops"),
    "lossless_drop": (8, "switch drops lossless packets at XOFF instead of pausing"),
    "retry_to_reset": (9, "retry exhaustion leaves the QP in RESET instead of ERR"),
}

BUILD_HINT = "RDMASIM_MUTANTS=1 python setup.py build_ext --inplace"


def available() -> bool:
    """True when this rdmasim._core was built with mutants."""
    return bool(getattr(_core, "MUTANTS_BUILT", False))


def enable(sim: Simulator, name: str | None) -> None:
    """Switch mutant ``name`` (a key of :data:`MUTANTS`; None = none) on for ``sim``.

    Raises RuntimeError naming the build command in normal builds, ValueError for unknown names.
    """
    if not available():
        raise RuntimeError(f"rdmasim._core was built without mutants; rebuild with: {BUILD_HINT}")
    if name is None:
        _core.sim_set_mutant(sim._core, 0)
        return
    if name not in MUTANTS:
        raise ValueError(f"unknown mutant {name!r}; known: {sorted(MUTANTS)}")
    _core.sim_set_mutant(sim._core, MUTANTS[name][0])
