"""Windows on a ladder: which lanes, which stretch of time, at most how many frames.

A real run has tens of thousands of frames; a ladder is read a few dozen at a time. A window is
chosen by time (``start``/``end``), by an anchor (``around``: the first loss, NAK, timeout,
error or retry, a PSN, a time, or one QP's events) and by a frame limit (``max_frames``) that every
renderer obeys.

:func:`plan` decides the window on the trace's :class:`~rdmasim.ladder._index.Index` (numpy over
every record); :func:`window_ladder` builds rows for the records it draws only; :func:`select`
cuts the same window out of a ladder of every record.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rdmasim import trace as tr
from rdmasim.ladder._index import Index, build_index, request_mask, response_mask
from rdmasim.ladder._model import Bar, Builder, Event, Ladder, fmt_time
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


def _lanes(records: np.ndarray, names: dict[int, str], nodes: Sequence[int | str] | None) -> list[int]:
    if nodes is None:
        seen = set(np.unique(records["node"]).tolist())
        framed = np.isin(records["kind"], (tr.TX, tr.RX, tr.DROP))
        seen |= set(np.unique(records["peer"][framed]).tolist())
        seen.discard(tr.NO_NODE)
        return sorted(seen)
    by_name = {v: k for k, v in names.items()}
    lanes = []
    for n in nodes:
        if isinstance(n, str):
            if n not in by_name:
                raise ValueError(f"no node named {n!r} in the trace (known: {sorted(by_name)})")
            lanes.append(by_name[n])
        else:
            lanes.append(int(n))
    return lanes


def _find_anchor(index: Index, ev: np.ndarray, kind: str, number: int | None) -> int | None:
    """Position in ``ev`` (the window's event records, in order) of the first event of ``kind``."""
    recs = index.records
    k = recs["kind"][ev]
    if kind == "first-loss":
        hit = index.dropped[ev]
    elif kind == "first-nak":
        hit = index.nak[ev]
    elif kind == "first-timeout":
        hit = k == tr.TIMEOUT
    elif kind == "first-retry":
        hit = k == tr.RETRY
    elif kind == "first-error":
        hit = (k == tr.COMPLETE) & (recs["status"][ev] != 0)
    elif kind == "psn":
        hit = index.data[ev] & (recs["psn"][ev] == number)
    else:  # "t"
        hit = recs["t_ps"][ev] >= (number or 0)
    pos = np.flatnonzero(hit)
    return int(pos[0]) if len(pos) else None


def _lost_before(index: Index, frames: np.ndarray, nak_pos: int) -> int | None:
    """Position in ``frames`` of the request a NAK names: the last one its requester sent with
    the NAK's PSN before the NAK (the frame that was lost, or that arrived out of order)."""
    recs = index.records
    nak = recs[frames[nak_pos]]
    before = frames[:nak_pos]
    hit = (index.data[before] & (recs["node"][before] == nak["peer"])
           & (recs["peer"][before] == nak["node"]) & (recs["qpn"][before] == nak["dest_qpn"])
           & (recs["psn"][before] == nak["psn"]))
    pos = np.flatnonzero(hit)
    return int(pos[-1]) if len(pos) else None


def _describe_anchor(kind: str, number: int | None, view_name: str) -> str:
    what = ANCHORS.get(kind) or (f"PSN {number}" if kind == "psn" else
                                 f"t = {fmt_time(number or 0)}")
    return f"around {what}: {view_name}"


@dataclass
class _Plan:
    """A window decided on the trace's :class:`Index`: what to draw, before any row is built."""

    lanes: list[int]
    qp: int | None
    t0: int | None
    t1: int | None
    shown: np.ndarray          # TX record indices of the frames drawn
    lo_t: int                  # local events drawn: those from lo_t to hi_t
    hi_t: int
    total: int
    after: int
    anchor: int | None         # record index of the anchor event
    description: str
    notes: list[str]
    last: int                  # every record up to this index is needed (arrivals included)


def plan(index: Index, names: dict[int, str], nodes: Sequence[int | str] | None = None, *,
         start: str | int | None = None, end: str | int | None = None,
         around: str | None = None, qp: int | None = None,
         max_frames: int | None = None, focus: bool = False) -> _Plan:
    """Decide the window (see :func:`select`) from the index alone."""
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
    recs = index.records
    lanes = _lanes(recs, names, nodes)
    lane_ok = np.zeros(1 << 16, bool)
    lane_ok[[n for n in lanes if 0 <= n < 1 << 16]] = True
    t = recs["t_ps"]
    keep = index.event & lane_ok[recs["node"]] & (~index.frame | lane_ok[recs["peer"]])
    parts: list[str] = []
    if qp is not None:
        keep &= (recs["qpn"] == qp) | (index.frame & (recs["dest_qpn"] == qp))
        parts.append(f"QP 0x{qp:x} ({qp}) only")
        if not keep.any():
            raise ValueError(f"qp={qp}: no frame or event of QP {qp} (0x{qp:x}) in the trace")
    if t0 is not None or t1 is not None:
        keep &= (t >= (t0 if t0 is not None else t.min(initial=0))) & \
            (t <= (t1 if t1 is not None else t.max(initial=0)))
        parts.append(f"from {fmt_time(t0) if t0 is not None else 'the start'} to "
                     f"{fmt_time(t1) if t1 is not None else 'the end'}")
    ev = np.flatnonzero(keep)
    ev = ev[np.argsort(t[ev], kind="stable")]  # the ladder's order: by time, then record order
    is_frame = index.frame[ev]
    frames = ev[is_frame]
    total = len(frames)
    notes: list[str] = []
    auto = (focus and kind is None and qp is None and t0 is None and t1 is None and max_frames is None
            and total > LARGE_TRACE_FRAMES)
    if auto:
        for candidate in ("first-loss", "first-nak", "first-timeout", "first-error"):
            if _find_anchor(index, ev, candidate, None) is not None:
                kind = candidate
                break
        max_frames = FOCUS_FRAMES
    anchor = None
    if kind is not None:
        pos = _find_anchor(index, ev, kind, number)
        if pos is None:
            what = ANCHORS.get(kind) or (f"a frame with PSN {number}" if kind == "psn" else "an event")
            raise ValueError(f"around={around!r}: no {what.removeprefix('the first ')} in the "
                             "window" if around is not None else "no anchor")
        anchor = int(ev[pos])
        n = max_frames or total
        if max_frames is None:
            n = DEFAULT_AROUND_FRAMES
        before = max(n // 5, 1)
        first = int(np.searchsorted(t[frames], t[anchor], side="left"))
        lo = first - before
        if kind == "first-nak":
            # a NAK names the request that was lost (or overtaken) before it: start there, one
            # frame earlier if that fits, as long as the NAK stays in the window
            nak_at = int(np.count_nonzero(is_frame[:pos]))
            lost = _lost_before(index, frames, nak_at)
            if lost is not None and lost <= lo and nak_at - lost < n:
                lo = lost - 1 if nak_at - (lost - 1) < n else lost
        lo = max(0, min(lo, total - n))
        shown = frames[lo:lo + n]
    elif max_frames:
        lo = 0
        shown = frames[:max_frames]
    else:
        lo = 0
        shown = frames
    if len(ev):
        lo_t, hi_t = int(t[ev[0]]), int(t[ev[-1]])
    else:
        lo_t = hi_t = 0
    if len(shown) < total or anchor is not None:
        lo_t = int(t[shown[0]]) if len(shown) else (int(t[anchor]) if anchor is not None else 0)
        hi_t = int(t[shown[-1]]) if len(shown) else lo_t
        if lo == 0:
            lo_t = min(lo_t, int(t[ev[0]])) if len(ev) else lo_t
        if lo + len(shown) >= total:
            hi_t = max(hi_t, int(t[ev[-1]])) if len(ev) else hi_t
        if len(shown):
            span = (f"frames {lo + 1}-{lo + len(shown)} of {total:,} "
                    f"({fmt_time(int(t[shown[0]]))} to {fmt_time(int(t[shown[-1]]))})")
        else:
            span = f"no frames of {total:,}"
        if anchor is not None:
            parts.append(_describe_anchor(kind or "", number, span))
        else:
            parts.append(span)
        if auto:
            notes.append(f"a long trace: focused on {ANCHORS[kind or 'first-loss']} "
                         "(choose with --from/--to, --around, --max-frames; --max-frames 0 shows all)")
    # every record up to the last instant drawn: the latest event or arrival of a frame drawn
    ends = index.end[shown]
    arrivals = t[ends[(ends >= 0) & ~index.dropped[shown]]]
    last_t = max(hi_t, int(arrivals.max()) if len(arrivals) else hi_t)
    last = int(np.searchsorted(t, last_t, side="right")) - 1 if len(ev) else -1
    return _Plan(lanes, qp, t0, t1, shown, lo_t, hi_t, total, total - (lo + len(shown)),
                 anchor, "; ".join(parts), notes, last)


def _draw(ladder: Ladder, p: _Plan) -> View:
    """The rows of ``ladder`` (the whole trace or enough of it) that plan ``p`` draws."""
    recs = ladder.records
    keep = set(p.lanes)
    shown = set(p.shown.tolist())

    def drawn(e: Event) -> bool:
        if e.node not in keep or (e.frame and e.peer not in keep):
            return False
        if p.qp is not None:
            r = recs[e.record]
            if not (int(r["qpn"]) == p.qp or (e.frame and int(r["dest_qpn"]) == p.qp)):
                return False
        if e.frame:
            return e.record in shown
        return (p.lo_t <= e.t_ps <= p.hi_t and (p.t0 is None or e.t_ps >= p.t0)
                and (p.t1 is None or e.t_ps <= p.t1))

    events = [e for e in ladder.events if drawn(e)]
    anchor = next((e for e in events if e.record == p.anchor), None) if p.anchor is not None else None
    if events:
        lo_t, hi_t = events[0].t_ps, max(e.t_arrive_ps or e.t_ps for e in events)
        bars = [b for b in ladder.bars if b.node in keep and b.t1_ps >= lo_t and b.t0_ps <= hi_t
                and (p.qp is None or b.qpn == p.qp)]
        bars = [Bar(b.node, max(b.t0_ps, lo_t), min(b.t1_ps, hi_t), b.kind, b.label, b.qpn) for b in bars]
    else:
        bars = []
    return View(ladder, events, p.lanes, bars, p.description, p.total, len(p.shown), p.after, anchor,
                p.notes)


_PSN_HALF = 1 << 23


def _last_of(keys: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The last of ``idx`` (record indices, increasing) for each key."""
    if not len(idx):
        return idx
    k = keys[idx]
    order = np.argsort(k, kind="stable")
    ks = k[order]
    last = np.ones(len(ks), bool)
    last[:-1] = ks[1:] != ks[:-1]
    return idx[order[last]]


def _first_of(keys: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The first of ``idx`` (record indices, increasing) for each key."""
    if not len(idx):
        return idx
    return idx[np.unique(keys[idx], return_index=True)[1]]


def history(index: Index, ws: int) -> np.ndarray | None:
    """The records before record ``ws`` that leave each QP's ladder state as every record before
    it does, or None when they cannot be picked safely (a QP's PSNs wrap around).

    Per requester QP: its first and last request and the one with the highest PSN (the window:
    oldest unacknowledged and highest PSN sent); the last response that advanced the window (the
    first with the highest next-expected PSN), the last timeout and retry, and the first request
    after the latest of those three with the highest request before that response (when and
    whether the retransmit timer runs); the last RNR NAK and RNR retry (the RNR wait). Per
    responder QP: its last ACCEPT and PSN-sequence NAK (the PSN it expects) and first fatal NAK
    (in ERR). Per QP: its first error completion (RTS -> ERR shown once)."""
    if ws <= 0:
        return np.empty(0, np.int64)
    h = index.records[:ws]
    k, op, syn = h["kind"], h["opcode"], h["syndrome"]
    node = h["node"].astype(np.int64)
    host, ctl = h["node_kind"] == 0, h["pkt_kind"] == 1
    psn = h["psn"].astype(np.int64)
    acks = (op == 0x11) | (op == 0x12)
    nak_code = syn & 0xE0
    req_tx = (k == tr.TX) & host & ~ctl & request_mask(op)
    resp_rx = (k == tr.RX) & host & ~ctl & response_mask(op) & (index.tx_of[:ws] >= 0)
    nak_rx = resp_rx & acks & ((nak_code == 0x20) | (nak_code == 0x60))
    rnr_rx = resp_rx & acks & (nak_code == 0x20)
    timeout, retry = k == tr.TIMEOUT, k == tr.RETRY
    rnr_retry = retry & (h["reason"] == 3)
    nak_tx = (k == tr.TX) & host & ~ctl & acks & ((nak_code == 0x20) | (nak_code == 0x60))
    seq_nak_tx = nak_tx & (syn == 0x60)
    fatal_nak_tx = nak_tx & (nak_code == 0x60) & (syn != 0x60)
    accept = k == tr.ACCEPT
    err = (k == tr.COMPLETE) & ~np.isin(h["status"], (0, 5))
    qkey = (node << 24) | np.where(resp_rx, h["dest_qpn"], h["qpn"]).astype(np.int64)
    picks = [_first_of(qkey, np.flatnonzero(req_tx)), _last_of(qkey, np.flatnonzero(req_tx)),
             _last_of(qkey, np.flatnonzero(timeout)), _last_of(qkey, np.flatnonzero(retry)),
             _last_of(qkey, np.flatnonzero(rnr_retry)), _last_of(qkey, np.flatnonzero(rnr_rx)),
             _last_of(qkey, np.flatnonzero(accept)), _last_of(qkey, np.flatnonzero(seq_nak_tx)),
             _first_of(qkey, np.flatnonzero(fatal_nak_tx)), _first_of(qkey, np.flatnonzero(err))]
    # per requester QP: the highest PSN sent, and the timer's last start or stop
    sel = np.flatnonzero(req_tx | resp_rx | timeout | retry)
    if len(sel):
        new_una = np.where(nak_rx, psn, (psn + 1) % (1 << 24))
        order = np.argsort(qkey[sel], kind="stable")
        ss = sel[order]
        ks = qkey[ss]
        bounds = np.flatnonzero(np.concatenate([[True], ks[1:] != ks[:-1], [True]]))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
            g = ss[a:b]
            reqs = g[req_tx[g]]
            if len(reqs) and int(psn[reqs].max() - psn[reqs].min()) >= _PSN_HALF:
                return None  # serial arithmetic across a wrap: not picked with max()
            if len(reqs):
                picks.append(reqs[np.argmax(psn[reqs])][None])
            resp = g[resp_rx[g]]
            stops = [int(g[timeout[g]].max(initial=-1)), int(g[retry[g]].max(initial=-1))]
            if len(resp):
                if int(new_una[resp].max() - new_una[resp].min()) >= _PSN_HALF:
                    return None
                adv = int(resp[np.argmax(new_una[resp])])  # first with the highest
                picks.append(np.array([adv]))
                before = reqs[reqs < adv]
                if len(before):
                    picks.append(before[np.argmax(psn[before])][None])
                stops.append(adv)
            last_stop = max(stops)
            after = reqs[reqs > last_stop]
            if last_stop >= 0 and len(after):
                picks.append(after[:1])
    return np.unique(np.concatenate(picks)).astype(np.int64)


def needed(index: Index, p: _Plan) -> tuple[np.ndarray, np.ndarray]:
    """The records plan ``p`` draws from: the few that set the QP state before its first instant
    (:func:`history`) and every record from that instant to its last (arrivals included)."""
    t = index.records["t_ps"]
    ws = int(np.searchsorted(t, p.lo_t, side="left"))
    before = history(index, ws)
    if before is None:
        return np.empty(0, np.int64), np.arange(p.last + 1)
    return before, np.arange(ws, p.last + 1)


def window_ladder(records: np.ndarray, names: dict[int, str], index: Index, p: _Plan) -> Builder:
    """Rows for plan ``p``, built from the records it needs (:func:`needed`): the QP state left by
    the records before it, every record from its first instant to its last, then, for each
    retransmit timer or RNR wait still running then, that QP's records until it stops (a lost last
    packet's timer can fire tens of milliseconds later)."""
    t = records["t_ps"]
    if len(t) and bool((t[1:] < t[:-1]).any()):  # not in time order: no stretch to cut
        b = Builder(records, names, index)
        for i in range(len(records)):
            b.feed(i)
        return b
    before, only = needed(index, p)
    b = Builder(records, names, index, only)
    b.replay(before)
    for i in only.tolist():
        b.feed(i)
    pending = b.pending()
    if pending:
        tail = records[p.last + 1:]
        k, node = tail["kind"], tail["node"]
        host = (tail["node_kind"] == 0) & (tail["pkt_kind"] != 1)
        local = np.isin(k, (tr.TIMEOUT, tr.RETRY)) | ((k == tr.TX) & host & request_mask(tail["opcode"]))
        reply = (k == tr.RX) & host & response_mask(tail["opcode"])
        mine = np.zeros(len(tail), bool)
        for n, q in pending:
            mine |= (node == n) & ((local & (tail["qpn"] == q)) | (reply & (tail["dest_qpn"] == q)))
        more = np.flatnonzero(mine) + p.last + 1
        for i in more.tolist():
            r = records[i]
            key = (int(r["node"]), int(r["dest_qpn"] if r["kind"] == tr.RX else r["qpn"]))
            if key not in pending:
                continue
            b.feed(i)
            timer, rnr = pending[key]
            q = b.reqs[key]
            if (timer is None or q.timer_from != timer) and (rnr is None or q.rnr_from is not rnr):
                del pending[key]  # stopped: anything it starts now begins after the window
                if not pending:
                    break
    return b


def select(ladder: Ladder, nodes: Sequence[int | str] | None = None, *,
           start: str | int | None = None, end: str | int | None = None,
           around: str | None = None, qp: int | None = None,
           max_frames: int | None = None, focus: bool = False) -> View:
    """The window of ``ladder`` to draw.

    ``start``/``end``: times (``"12us"`` or ps), inclusive, on the frames' send times.
    ``around``: an anchor (see :data:`ANCHORS`, ``psn=N``, ``qp=N``, ``t=TIME``); the window then
    holds ``max_frames`` frames (default :data:`DEFAULT_AROUND_FRAMES`, 0: all), a fifth of them
    before the anchor; around ``first-nak`` it starts early enough to hold the request the NAK
    names (the one lost). ``qp``: only the frames and events of that QP number (either end).
    ``max_frames``: at most this many frames (0 or None: no limit); local events between them
    stay. ``focus=True``: when nothing else is asked (``max_frames`` None) and the trace has more
    than :data:`LARGE_TRACE_FRAMES` frames, act as ``around="first-loss"`` (or the first NAK,
    timeout, error) with :data:`FOCUS_FRAMES` frames, and say so in the description.
    """
    index = build_index(ladder.records)
    return _draw(ladder, plan(index, ladder.names, nodes, start=start, end=end, around=around,
                              qp=qp, max_frames=max_frames, focus=focus))


def view(records: np.ndarray, names: dict[int, str], nodes: Sequence[int | str] | None = None,
         **window: object) -> View:
    """The window of a trace's records (``select`` on the rows of the records it needs only)."""
    index = build_index(records)
    p = plan(index, names, nodes, **window)  # type: ignore[arg-type]
    return _draw(window_ladder(records, names, index, p).ladder(), p)
