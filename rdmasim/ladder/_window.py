"""Windows on a ladder: which lanes, which stretch of time, at most how many frames.

A real run has tens of thousands of frames; a ladder is read a few dozen at a time. A window is
chosen by time (``start``/``end``), by an anchor (``around``: the first loss, NAK, timeout,
error or retry, a PSN, a time, or one QP's events) and by a frame limit (``max_frames``) that every
renderer obeys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rdmasim import trace as tr
from rdmasim.ladder._model import Bar, Event, Ladder, fmt_time
from rdmasim.units import parse_time

#: ``around`` anchors that name an event kind, with what the description calls them
ANCHORS: dict[str, str] = {
    "first-loss": "the first lost frame",
    "first-nak": "the first NAK",
    "first-timeout": "the first retransmit timeout",
    "first-retry": "the first retransmission",
    "first-error": "the first error completion",
}
_AROUND = re.compile(r"^(?:(?P<name>first-[a-z]+)|psn=(?P<psn>\d+)|qp=(?P<qp>(?:0x)?[0-9a-fA-F]+)"
                     r"|t=(?P<t>.+))$")
#: frames shown around an anchor when no ``max_frames`` is given
DEFAULT_AROUND_FRAMES = 40
#: a trace with more frames than this and no window focuses on its first loss (or NAK, timeout)
LARGE_TRACE_FRAMES = 200
#: frames shown by that automatic focus
FOCUS_FRAMES = 60


@dataclass
class View:
    """What a renderer draws: the events and bars in the window, the lanes in order, and a one-line
    ``description`` of the window (empty when the whole trace is shown)."""

    ladder: Ladder
    events: list[Event]
    lanes: list[int]
    bars: list[Bar]
    description: str = ""
    frames_total: int = 0
    frames_shown: int = 0
    frames_after: int = 0
    anchor: Event | None = None
    notes: list[str] = field(default_factory=list)

    def name(self, node: int) -> str:
        return self.ladder.name(node)


def parse_around(around: str) -> tuple[str, int | None]:
    """Check an ``around`` value; returns (kind, number): ``("first-nak", None)``, ``("psn", 5)``,
    ``("qp", 17)``, ``("t", ps)``. Raises ValueError naming the allowed forms."""
    m = _AROUND.match(str(around).strip())
    allowed = f"{', '.join(ANCHORS)}, psn=N, qp=N (decimal or 0x..), t=TIME (e.g. t=12us)"
    if not m or (m["name"] and m["name"] not in ANCHORS):
        raise ValueError(f"around={around!r}: allowed {allowed}")
    if m["name"]:
        return m["name"], None
    if m["psn"]:
        psn = int(m["psn"])
        if psn >= 1 << 24:
            raise ValueError(f"around={around!r}: a PSN is 0..{(1 << 24) - 1}")
        return "psn", psn
    if m["qp"]:
        return "qp", int(m["qp"], 0) if m["qp"].startswith("0x") else int(m["qp"])
    try:
        return "t", parse_time(m["t"].strip())
    except ValueError as exc:
        raise ValueError(f"around={around!r}: {exc}") from None


def _time(name: str, value: str | int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{name}={value!r}: a time such as '12us' or integer picoseconds")
    try:
        return parse_time(value)
    except ValueError as exc:
        raise ValueError(f"{name}={value!r}: {exc}") from None


def _lanes(ladder: Ladder, nodes: Sequence[int | str] | None) -> list[int]:
    recs = ladder.records
    if nodes is None:
        seen = {int(n) for n in recs["node"] if int(n) != tr.NO_NODE}
        seen |= {int(n) for n, k in zip(recs["peer"], recs["kind"], strict=True)
                 if int(n) != tr.NO_NODE and int(k) in (tr.TX, tr.RX, tr.DROP)}
        return sorted(seen)
    by_name = {v: k for k, v in ladder.names.items()}
    lanes = []
    for n in nodes:
        if isinstance(n, str):
            if n not in by_name:
                raise ValueError(f"no node named {n!r} in the trace (known: {sorted(by_name)})")
            lanes.append(by_name[n])
        else:
            lanes.append(int(n))
    return lanes


def _find_anchor(events: list[Event], ladder: Ladder, kind: str, number: int | None) -> Event | None:
    recs = ladder.records
    for e in events:
        if kind == "first-loss" and e.frame and e.dropped is not None:
            return e
        if kind == "first-nak" and e.frame and e.style == "nak":
            return e
        if kind == "first-timeout" and e.style == "timeout":
            return e
        if kind == "first-retry" and e.style == "retry":
            return e
        if kind == "first-error" and e.style == "error":
            return e
        if kind == "psn" and e.frame and e.style == "data" and int(recs[e.record]["psn"]) == number:
            return e
        if kind == "t" and number is not None and e.t_ps >= number:
            return e
    return None


def _describe_anchor(kind: str, number: int | None, anchor: Event, view_name: str) -> str:
    what = ANCHORS.get(kind) or (f"PSN {number}" if kind == "psn" else
                                 f"t = {fmt_time(number or 0)}")
    return f"around {what}: {view_name}"


def select(ladder: Ladder, nodes: Sequence[int | str] | None = None, *,
           start: str | int | None = None, end: str | int | None = None,
           around: str | None = None, qp: int | None = None,
           max_frames: int | None = None, focus: bool = False) -> View:
    """The window of ``ladder`` to draw.

    ``start``/``end``: times (``"12us"`` or ps), inclusive, on the frames' send times.
    ``around``: an anchor (see :data:`ANCHORS`, ``psn=N``, ``qp=N``, ``t=TIME``); the window then
    holds ``max_frames`` frames (default :data:`DEFAULT_AROUND_FRAMES`), a fifth of them before
    the anchor. ``qp``: only the frames and events of that QP number (either end).
    ``max_frames``: at most this many frames (0 or None: no limit); local events between them
    stay. ``focus=True``: when nothing else is asked and the trace has more than
    :data:`LARGE_TRACE_FRAMES` frames, act as ``around="first-loss"`` (or the first NAK, timeout,
    error) with :data:`FOCUS_FRAMES` frames, and say so in the description.
    """
    if max_frames is not None and (isinstance(max_frames, bool) or not isinstance(max_frames, int)
                                   or max_frames < 0):
        raise ValueError(f"max_frames={max_frames!r}: an int >= 0 (0: no limit)")
    t0, t1 = _time("start", start), _time("end", end)
    if t0 is not None and t1 is not None and t1 < t0:
        raise ValueError(f"end={end!r} is before start={start!r}")
    kind, number = parse_around(around) if around is not None else (None, None)
    if kind == "qp":
        qp, kind = number, None
    if qp is not None and (isinstance(qp, bool) or not isinstance(qp, int) or not 0 <= qp < 1 << 24):
        raise ValueError(f"qp={qp!r}: a QP number 0..{(1 << 24) - 1}")
    lanes = _lanes(ladder, nodes)
    keep = set(lanes)
    recs = ladder.records
    events = [e for e in ladder.events if e.node in keep and (not e.frame or e.peer in keep)]
    parts: list[str] = []
    if qp is not None:
        def mine(e: Event) -> bool:
            r = recs[e.record]
            return int(r["qpn"]) == qp or (e.frame and int(r["dest_qpn"]) == qp)
        events = [e for e in events if mine(e)]
        parts.append(f"QP 0x{qp:x} ({qp}) only")
        if not events:
            raise ValueError(f"qp={qp}: no frame or event of QP {qp} (0x{qp:x}) in the trace")
    if t0 is not None or t1 is not None:
        events = [e for e in events if (t0 is None or e.t_ps >= t0) and (t1 is None or e.t_ps <= t1)]
        parts.append(f"from {fmt_time(t0) if t0 is not None else 'the start'} to "
                     f"{fmt_time(t1) if t1 is not None else 'the end'}")
    frames = [e for e in events if e.frame]
    total = len(frames)
    notes: list[str] = []
    auto = (focus and kind is None and qp is None and t0 is None and t1 is None and not max_frames
            and total > LARGE_TRACE_FRAMES)
    if auto:
        for candidate in ("first-loss", "first-nak", "first-timeout", "first-error"):
            if _find_anchor(events, ladder, candidate, None) is not None:
                kind = candidate
                break
        max_frames = FOCUS_FRAMES
    anchor = None
    if kind is not None:
        anchor = _find_anchor(events, ladder, kind, number)
        if anchor is None:
            what = ANCHORS.get(kind) or (f"a frame with PSN {number}" if kind == "psn" else "an event")
            raise ValueError(f"around={around!r}: no {what.removeprefix('the first ')} in the "
                             "window" if around is not None else "no anchor")
        n = max_frames or DEFAULT_AROUND_FRAMES
        before = max(n // 5, 1)
        first = next((i for i, f in enumerate(frames) if f.t_ps >= anchor.t_ps), len(frames))
        lo = max(0, first - before)
        lo = max(0, min(lo, total - n))
        shown = frames[lo:lo + n]
    elif max_frames:
        lo = 0
        shown = frames[:max_frames]
    else:
        lo = 0
        shown = frames
    if len(shown) < total or anchor is not None:
        lo_t = shown[0].t_ps if shown else (anchor.t_ps if anchor else 0)
        hi_t = shown[-1].t_ps if shown else lo_t
        if lo == 0:
            lo_t = min(lo_t, events[0].t_ps) if events else lo_t
        if lo + len(shown) >= total:
            hi_t = max(hi_t, events[-1].t_ps) if events else hi_t
        keep_frames = {id(f) for f in shown}
        events = [e for e in events
                  if (e.frame and id(e) in keep_frames) or (not e.frame and lo_t <= e.t_ps <= hi_t)]
        if shown:
            span = (f"frames {lo + 1}-{lo + len(shown)} of {total:,} "
                    f"({fmt_time(shown[0].t_ps)} to {fmt_time(shown[-1].t_ps)})")
        else:
            span = f"no frames of {total:,}"
        if anchor is not None:
            parts.append(_describe_anchor(kind or "", number, anchor, span))
        else:
            parts.append(span)
        if auto:
            notes.append(f"a long trace: focused on {ANCHORS[kind or 'first-loss']} "
                         "(choose with --from/--to, --around, --max-frames; --max-frames 0 shows all)")
    after = total - (lo + len(shown))
    lane_set = set(lanes)
    if events:
        lo_t, hi_t = events[0].t_ps, max(e.t_arrive_ps or e.t_ps for e in events)
        bars = [b for b in ladder.bars if b.node in lane_set and b.t1_ps >= lo_t and b.t0_ps <= hi_t
                and (qp is None or b.qpn == qp)]
        bars = [Bar(b.node, max(b.t0_ps, lo_t), min(b.t1_ps, hi_t), b.kind, b.label, b.qpn) for b in bars]
    else:
        bars = []
    return View(ladder, events, lanes, bars, "; ".join(parts), total, len(shown), after, anchor, notes)
