"""Stepping a simulation to the next event of a kind (``Simulator.step_to``), for teaching.

``step_frame()`` stops at frames only, so it jumps over what happens between them: a retransmit
timer firing, an RNR wait, a NAK arriving. ``step_to(kind)`` runs one event at a time and stops
right after the first event of that kind, read from the simulation's trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rdmasim import trace as tr

if TYPE_CHECKING:
    from rdmasim._protocols import CoreSim

    class Simulator(CoreSim, Protocol):
        """What stepping needs of a simulation (``rdmasim.sim.Simulator`` has it)."""

        _trace: tr.Trace | None
        _step_rest: tuple[int, Any]

        def trace(self) -> tr.Trace: ...

_OP_ACK, _OP_ATOMIC_ACK = 0x11, 0x12

#: the kinds ``step_to`` knows, with what each stops at
STEP_KINDS: dict[str, str] = {
    "frame": "a frame put on a link (transmit start)",
    "arrival": "a frame delivered to a node (its last bit arrived)",
    "drop": "a frame lost (on a link, by a drop rule, at a failed link or an unknown QP)",
    "nak": "a NAK (sequence error or another NAK code, not RNR) delivered to its requester",
    "rnr-nak": "an RNR NAK delivered to its requester (the RNR wait starts)",
    "timeout": "the retransmit timer firing with PSNs outstanding",
    "retry": "a requester going back to resend (after a NAK, timeout, RNR wait or implied NAK)",
    "accept": "the responder accepting a request packet in order",
    "completion": "a work request retired (a completion, or an unsignaled WR done)",
    "error": "an error completion",
}


def _aeth_class(recs: np.ndarray) -> np.ndarray:
    is_ack = (recs["pkt_kind"] != 1) & np.isin(recs["opcode"], (_OP_ACK, _OP_ATOMIC_ACK))
    return np.where(is_ack, recs["syndrome"] & 0xE0, -1)


def matches(recs: np.ndarray, kind: str) -> np.ndarray:
    """Which trace records are events of ``kind`` (a key of :data:`STEP_KINDS`)."""
    k = recs["kind"]
    if kind == "frame":
        return k == tr.TX
    if kind == "arrival":
        return k == tr.RX
    if kind == "drop":
        return k == tr.DROP
    if kind == "nak":
        return (k == tr.RX) & (_aeth_class(recs) == 0x60)
    if kind == "rnr-nak":
        return (k == tr.RX) & (_aeth_class(recs) == 0x20)
    if kind == "timeout":
        return k == tr.TIMEOUT
    if kind == "retry":
        return k == tr.RETRY
    if kind == "accept":
        return k == tr.ACCEPT
    if kind == "completion":
        return k == tr.COMPLETE
    if kind == "error":
        return (k == tr.COMPLETE) & (recs["status"] != 0)
    raise ValueError(f"step_to({kind!r}): allowed kinds are {', '.join(STEP_KINDS)}")


def step_to(sim: Simulator, kind: str, until_ps: int, max_events: int) -> np.void | None:
    """Run one event at a time until an event of ``kind`` is recorded; returns its trace record,
    or None when the simulation goes idle or reaches ``until_ps`` first. A trace is started if
    none is running (the records stepped over stay in it)."""
    from rdmasim import _core

    matches(np.empty(0, tr.TRACE_DTYPE), kind)  # checks the kind before anything runs
    trace = sim._trace
    if trace is None or not trace.active:
        trace = sim.trace()
    # one event can record several things (a timer firing: TIMEOUT, then RETRY); what followed the
    # record returned last time is looked at first, if nothing has run since
    events_then, rest = sim._step_rest
    sim._step_rest = (-1, np.empty(0, tr.TRACE_DTYPE))
    if rest is not None and events_then == sim.events and len(trace.drain()) == 0:
        hit = np.flatnonzero(matches(rest, kind))
        if len(hit):
            sim._step_rest = (sim.events, rest[hit[0] + 1:])
            return rest[hit[0]]
    trace.drain()
    for _ in range(max_events):
        rc = sim._core.run(until_ps, 1)
        new = trace.drain()
        if len(new):
            hit = np.flatnonzero(matches(new, kind))
            if len(hit):
                sim._step_rest = (sim.events, new[hit[0] + 1:])
                return new[hit[0]]
        if rc not in (_core.RUN_MAX_EVENTS, _core.RUN_PEER, _core.RUN_STEP):
            return None  # idle, or until_ps reached
    raise RuntimeError(f"step_to({kind!r}): no such event within max_events={max_events:,} events")
