"""The rows of a ladder: trace records turned into frames, timeline events, bars and QP state.

Everything a renderer draws comes from here, so the text, SVG, HTML and Mermaid outputs say the
same thing. The teaching annotations are derived from the records alone:

* a request that reached the responder but was not accepted in order is *discarded* there, with
  why (out of sequence after a gap, a NAK already sent for that gap, a duplicate, the QP in ERR);
* an ACK that acknowledges nothing new is a *duplicate ACK*;
* a fatal NAK (invalid request, remote access, remote operational error) moves the responder's QP
  to ERR, and the first error completion moves the requester's QP to ERR (IBA 10.3.1; rxe does the
  same);
* an RNR NAK's timer field is decoded with the IBA RNR timer table (IBA 9.7.5.2.8, table 45);
* the retransmit timer and the RNR wait are *bars* on the requester's lane, from when they started
  to when they fired (or the resend went out);
* after every row, each QP's requester window (oldest unacknowledged PSN to the highest sent) and
  responder expected PSN.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rdmasim import trace as tr
from rdmasim.codec import OPCODE_NAMES
from rdmasim.ladder._index import Index, build_index

_OP_ACK = 0x11
_OP_ATOMIC_ACK = 0x12
_OP_READ_REQ = 0x0C
_OP_CNP = 0x81
_NAK_NAMES = {0x60: "seq err", 0x61: "inv req", 0x62: "rem access", 0x63: "rem op"}
_NAK_LONG = {0x60: "PSN sequence error", 0x61: "invalid request", 0x62: "remote access error",
             0x63: "remote operational error"}
_WR_NAMES = {0: "RDMA_WRITE", 1: "RDMA_WRITE_WITH_IMM", 2: "SEND", 3: "SEND_WITH_IMM",
             4: "RDMA_READ", 5: "ATOMIC_CMP_AND_SWP", 6: "ATOMIC_FETCH_AND_ADD", 7: "LOCAL_INV",
             8: "BIND_MW", 9: "SEND_WITH_INV", 14: "FLUSH", 15: "ATOMIC_WRITE"}
_WC_OPCODES = {0: "SEND", 1: "RDMA_WRITE", 2: "RDMA_READ", 3: "COMP_SWAP", 4: "FETCH_ADD",
               5: "BIND_MW", 6: "LOCAL_INV", 8: "FLUSH", 9: "ATOMIC_WRITE",
               128: "RECV", 129: "RECV_RDMA_WITH_IMM"}
_PSN_MOD = 1 << 24

#: IBA RNR NAK timer field (5 bits) -> the wait in microseconds (IBA table 45; code 0 is the longest).
RNR_TIMER_US: tuple[int, ...] = (
    655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
    5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680,
    491520,
)


#: why a frame was lost, as a reader of a ladder says it (trace reason names otherwise)
_DROP_TEXT = {"loss": "random loss on the link", "buffer-full": "switch buffer full",
              "unknown-qp": "no such QP", "no-route": "no route", "link-down": "link down"}


def drop_text(reason: int) -> str:
    """A DROP record's reason for a ladder label: ``"random loss on the link"``, ``"drop-list"``..."""
    name = tr.DROP_REASONS.get(int(reason), str(int(reason)))
    return _DROP_TEXT.get(name, name)


def rnr_timer_text(code: int) -> str:
    """The RNR timer field decoded for a reader: ``"timer 1 = 10 µs"``, ``"timer 14 = 1.28 ms"``
    (the IBA table's value, in µs below a millisecond)."""
    us = RNR_TIMER_US[int(code) & 0x1F]
    return f"timer {int(code) & 0x1F} = " + (f"{us} µs" if us < 1000 else f"{us / 1000:g} ms")


def short_opcode(opcode: int) -> str:
    """Compact BTH opcode name for labels: ``WRITE_FIRST``, ``SEND_ONLY_IMM``, ``ACK``..."""
    name = OPCODE_NAMES.get(int(opcode), f"OP_0x{int(opcode):02x}")
    name = name.replace("RDMA_READ_RESPONSE", "READ_RESP").replace("RDMA_", "")
    name = name.replace("_WITH_IMMEDIATE", "_IMM").replace("_WITH_INVALIDATE", "_INV")
    return {"ACKNOWLEDGE": "ACK", "ATOMIC_ACKNOWLEDGE": "ATOMIC_ACK"}.get(name, name)


def is_request(opcode: int) -> bool:
    """True for RC/UC request opcodes (SEND, WRITE, READ request, atomics, FLUSH, ATOMIC WRITE):
    what a requester sends."""
    op = int(opcode) & 0x1F if int(opcode) < 0x40 else -1
    return 0 <= op <= 0x0C or op in (0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D)


def is_response(opcode: int) -> bool:
    """True for what a responder sends back: READ responses, ACK/NAK, atomic ACK."""
    return 0x0D <= int(opcode) <= 0x12


def _status_name(status: int) -> str:
    from rdmasim.verbs import enums as e

    return e.wc_status_to_str(int(status)).removeprefix("IBV_WC_")


@dataclass
class Event:
    """One row of a ladder: a frame (``node`` -> ``peer``) or an event on one node's timeline.

    Frames carry what happened to them: ``dropped`` (lost on the way, with the reason),
    ``discarded`` (the receiver threw it away, with why), ``retx`` (a request PSN sent again by
    the same QP), ``dup`` (an ACK that acknowledged nothing new), ``ce`` (ECN CE mark).
    ``state`` holds the QP state text of every lane after this row (see :class:`Ladder`).
    """

    t_ps: int
    node: int                 # sender of a frame, or the node of a local event
    peer: int = -1            # receiver of a frame
    label: str = ""
    frame: bool = False
    t_arrive_ps: int | None = None
    dropped: str | None = None   # reason, when lost on the way
    discarded: str | None = None  # reason, when thrown away by the receiver
    retx: bool = False
    dup: bool = False
    ce: bool = False
    #: data / ack / nak / cnp / pfc / post / complete / error / timeout / retry / state
    style: str = "data"
    record: int = -1          # index of the trace record it came from
    qpn: int = -1             # the QP it belongs to on ``node`` (frames: the sending QP)
    state: dict[int, str] = field(default_factory=dict)
    index: int = -1           # position in Ladder.events

    @property
    def full_label(self) -> str:
        """The label with the marks a frame collected (CE, retx, dup ACK)."""
        return (self.label + (" CE" if self.ce else "") + (" (retx)" if self.retx else "")
                + (" (dup ACK)" if self.dup else ""))


@dataclass
class Bar:
    """A stretch of time on one lane: the retransmit timer running out, or an RNR wait."""

    node: int
    t0_ps: int
    t1_ps: int
    kind: str        # "rto" or "rnr"
    label: str
    qpn: int = -1


@dataclass
class Ladder:
    """Rows of a whole trace: ``events`` in time order, ``bars``, node ``names`` and the trace's
    ``records`` (without invariant-checker records)."""

    events: list[Event]
    bars: list[Bar]
    names: dict[int, str]
    records: np.ndarray

    def name(self, node: int) -> str:
        return self.names.get(node, f"h{node}")


def _frame_label(r: np.void) -> tuple[str, str]:
    """(label, style) of a frame record."""
    if int(r["pkt_kind"]) == 1:
        return f"PAUSE(classes=0x{int(r['aux']):02x})", "pfc"
    op = int(r["opcode"])
    psn, msn, syn = int(r["psn"]), int(r["msn"]), int(r["syndrome"])
    if op == _OP_CNP:
        return "CNP", "cnp"
    if op in (_OP_ACK, _OP_ATOMIC_ACK):
        base = short_opcode(op)
        kind = syn & 0xE0
        if kind == 0x60:
            return f"NAK({_NAK_NAMES.get(syn, f'0x{syn:02x}')}) psn={psn} msn={msn}", "nak"
        if kind == 0x20:
            return f"RNR_NAK({rnr_timer_text(syn)}) psn={psn} msn={msn}", "nak"
        return f"{base} psn={psn} msn={msn}", "ack"
    label = f"{short_opcode(op)} psn={psn}"
    if op == _OP_READ_REQ:  # no payload: the RETH asks for this many bytes
        label += f" read_len={int(r['aux'])}"
    if 0x0D <= op <= 0x10 and op != 0x0E:  # READ responses FIRST/LAST/ONLY carry an AETH
        label += f" msn={msn}"
    if int(r["len"]) or op in (0x06, 0x00, 0x0A, 0x04):
        label += f" len={int(r['len'])}"
    if int(r["flags"]) & tr.FLAG_ACKREQ:
        label += " A"
    return label, "data"


def _local_label(r: np.void) -> tuple[str, str]:
    kind = int(r["kind"])
    wr_id = int(r["wr_id"])
    if kind == tr.POST_SEND:
        op = _WR_NAMES.get(int(r["verb_op"]), str(int(r["verb_op"])))
        sig = "" if int(r["flags"]) & tr.FLAG_SIGNALED else " unsignaled"
        return f"post_send wr_id={wr_id} {op} len={int(r['len'])}{sig}", "post"
    if kind == tr.POST_RECV:
        return f"post_recv wr_id={wr_id} len={int(r['len'])}", "post"
    if kind == tr.COMPLETE:
        status = int(r["status"])
        op = _WC_OPCODES.get(int(r["verb_op"]), str(int(r["verb_op"])))
        queue = "recv " if int(r["flags"]) & tr.FLAG_RECV else ""
        if status == 0 and not int(r["flags"]) & tr.FLAG_CQE:
            return f"done wr_id={wr_id} {op} (unsignaled: no CQE)", "complete"
        text = f"{queue}completion wr_id={wr_id} {op} {_status_name(status)}"
        if status == 0 and int(r["len"]):
            text += f" len={int(r['len'])}"
        return text, "complete" if status == 0 else "error"
    if kind == tr.TIMEOUT:
        return f"TIMEOUT: retransmit timer fired, oldest unacked psn={int(r['psn'])}", "timeout"
    if kind == tr.RETRY:
        cause = tr.RETRY_CAUSES.get(int(r["reason"]), "")
        if int(r["reason"]) == 3:
            left = int(r["aux"])  # rnr_retry 7 is never counted down: it means retry forever
            how_many = ("rnr_retry 7 = infinite" if left == 7
                        else f"{left} RNR {'retry' if left == 1 else 'retries'} left")
            return f"RNR wait, then resend from psn={int(r['psn'])} ({how_many})", "retry"
        how = "selective repeat (IRN)" if int(r["flags"]) & tr.FLAG_SELECTIVE else "Go-Back-N"
        left = int(r["aux"])
        return (f"{how} from psn={int(r['psn'])} after {cause} "
                f"({left} {'retry' if left == 1 else 'retries'} left)"), "retry"
    return tr.kind_name(kind), "post"


def _psn_le(a: int, b: int) -> bool:
    """a <= b in 24-bit serial arithmetic."""
    return (b - a) % _PSN_MOD < _PSN_MOD // 2


@dataclass
class _Req:
    """What the records say about one requester QP so far."""

    una: int | None = None      # oldest unacknowledged PSN
    top: int | None = None      # highest PSN sent
    timer_from: int | None = None
    rnr_from: tuple[int, str] | None = None

    def text(self) -> str:
        if self.top is None:
            return ""
        una = self.una if self.una is not None else self.top
        if not _psn_le(una, self.top):
            return "window: all acked"
        return f"window: unacked {una}..{self.top}" if una != self.top else f"window: unacked {una}"


@dataclass
class _Resp:
    """What the records say about one responder QP so far."""

    expect: int | None = None
    nak_for: int | None = None  # expected PSN a sequence NAK was sent for (one NAK per gap)
    error: bool = False

    def text(self) -> str:
        if self.error:
            return "responder: QP in ERR"
        return "" if self.expect is None else f"expects psn {self.expect}"


class Builder:
    """Turns trace records into ladder rows, fed one record index at a time in record order.

    :func:`build` feeds every record; a window feeds only the records it draws (its stretch of the
    trace, the records that end its frames, the ones that close its timer bars). Frames are matched
    with the RX or DROP that ended them by the trace's :class:`~rdmasim.ladder._index.Index`, so a
    record can be fed without the ones between. ``visits`` counts the records fed."""

    def __init__(self, records: np.ndarray, names: dict[int, str], index: Index,
                 only: np.ndarray | None = None) -> None:
        self.records = records
        self.names = names
        self.index = index
        self.events: list[Event] = []
        self.bars: list[Bar] = []
        self.frame_of: dict[int, Event] = {}   # TX record index -> its frame row
        self.accepted: set[tuple[int, int, int, int]] = set()
        # (node, qpn, t) -> (psn, syndrome) of the NAKs sent
        self.naks_at: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.reqs: dict[tuple[int, int], _Req] = {}
        self.resps: dict[tuple[int, int], _Resp] = {}
        self.errored: set[tuple[int, int]] = set()
        self.lane_state: dict[int, dict[tuple[int, int], str]] = {}  # node -> {(role, qpn): text}
        self.multi_qp: set[int] = set()
        self.changes: list[tuple[int, dict[int, str]]] = []
        self.visits = 0
        self.note(only)

    def note(self, only: np.ndarray | None) -> None:
        """Learn which requests the responders accepted and which NAKs they sent at the instants of
        the records ``only`` (every record if None): the annotations of frames arriving then."""
        recs = self.records if only is None else self.records[only]
        k = recs["kind"]
        for r in recs[k == tr.ACCEPT]:
            self.accepted.add((int(r["node"]), int(r["qpn"]), int(r["psn"]), int(r["t_ps"])))
        naks = recs[(k == tr.TX) & (recs["pkt_kind"] != 1)
                    & np.isin(recs["opcode"], (_OP_ACK, _OP_ATOMIC_ACK)) & (recs["syndrome"] & 0xE0 != 0)]
        for r in naks:
            self.naks_at[(int(r["node"]), int(r["qpn"]), int(r["t_ps"]))] = (int(r["psn"]),
                                                                             int(r["syndrome"]))

    def set_state(self, t: int, node: int, role: int, qpn: int, text: str) -> None:
        per = self.lane_state.setdefault(node, {})
        if per.get((role, qpn), "") == text:
            return
        if text:
            per[(role, qpn)] = text
        else:
            per.pop((role, qpn), None)
        if len({q for _, q in per}) > 1:
            self.multi_qp.add(node)
        self.changes.append((t, self.snapshot()))

    def snapshot(self) -> dict[int, str]:
        out = {}
        for node, per in self.lane_state.items():
            parts = [(f"qp 0x{q:x} " if node in self.multi_qp else "") + txt
                     for (_, q), txt in sorted(per.items(), key=lambda kv: (kv[0][1], kv[0][0]))]
            if parts:
                out[node] = "; ".join(parts)
        return out

    def add(self, ev: Event) -> Event:
        self.events.append(ev)
        return ev

    def pending(self) -> dict[tuple[int, int], tuple[int | None, tuple[int, str] | None]]:
        """Requester QPs whose retransmit timer or RNR wait is running: (node, qpn) -> what runs."""
        return {k: (q.timer_from, q.rnr_from) for k, q in self.reqs.items()
                if q.timer_from is not None or q.rnr_from is not None}

    def replay(self, history: np.ndarray) -> None:
        """Take the QP state the records before the window left, from ``history``: the few records
        that set it (see :func:`rdmasim.ladder._window.history`); their rows are not kept."""
        for i in history.tolist():
            self.feed(i)
        last = self.changes[-1] if self.changes else None
        self.events, self.bars, self.frame_of = [], [], {}
        self.changes = [last] if last is not None else []

    def feed(self, i: int) -> None:
        """Add the rows of record ``i`` (records are fed in increasing order)."""
        self.visits += 1
        r = self.records[i]
        kind = int(r["kind"])
        t = int(r["t_ps"])
        node = int(r["node"])
        qpn = int(r["qpn"])
        if kind == tr.TX:
            label, style = _frame_label(r)
            ev = self.add(Event(t, node, int(r["peer"]), label, frame=True, style=style, record=i,
                                ce=int(r["ecn"]) == tr.ECN_CE, qpn=qpn))
            self.frame_of[i] = ev
            op = int(r["opcode"])
            ev.retx = bool(self.index.retx[i])
            if int(r["pkt_kind"]) != 1 and int(r["node_kind"]) == 0 and is_request(op):
                q = self.reqs.setdefault((node, qpn), _Req())
                psn = int(r["psn"])
                if q.top is None or _psn_le(q.top, psn):
                    q.top = psn
                if q.una is None:
                    q.una = psn
                if q.rnr_from is not None:  # the resend after an RNR wait
                    t0, text = q.rnr_from
                    self.bars.append(Bar(node, t0, t, "rnr", text, qpn))
                    q.rnr_from = None
                if q.timer_from is None:
                    q.timer_from = t
                self.set_state(t, node, 0, qpn, q.text())
            if style == "nak" and int(r["node_kind"]) == 0:
                syn = int(r["syndrome"])
                p = self.resps.setdefault((node, qpn), _Resp())
                if syn & 0xE0 == 0x60 and syn != 0x60:
                    p.error = True
                    self.add(Event(t, node, -1, f"QP 0x{qpn:x} state RTS → ERR (after a fatal NAK: "
                                                f"{_NAK_LONG.get(syn, hex(syn))})", style="state",
                                   record=i, qpn=qpn))
                    self.errored.add((node, qpn))
                elif syn == 0x60:
                    p.nak_for = int(r["psn"])
                    p.expect = int(r["psn"])
                self.set_state(t, node, 1, qpn, p.text())
        elif kind == tr.DROP:
            ev = self.frame_of.get(int(self.index.tx_of[i]))
            if ev is not None:
                if int(r["link"]) >= 0:  # lost on the link it was just put on
                    ev.dropped = drop_text(int(r["reason"]))
                else:  # thrown away by the host it was delivered to
                    ev.discarded = drop_text(int(r["reason"]))
        elif kind == tr.RX:
            tx = int(self.index.tx_of[i])
            if tx < 0:
                return
            ev = self.frame_of.get(tx)  # None: its TX is outside what this builder was fed
            if ev is not None:
                ev.t_arrive_ps = t
            if int(r["pkt_kind"]) == 1 or int(r["node_kind"]) != 0:
                return
            op, psn, dq = int(r["opcode"]), int(r["psn"]), int(r["dest_qpn"])
            if is_request(op):
                p = self.resps.setdefault((node, dq), _Resp())
                _responder_rx(ev, p, (node, dq, psn, t), self.accepted, self.naks_at)
                self.set_state(t, node, 1, dq, p.text())
            elif is_response(op):
                rq = self.reqs.setdefault((node, dq), _Req())
                syn = int(r["syndrome"])
                nak = op in (_OP_ACK, _OP_ATOMIC_ACK) and syn & 0xE0 in (0x20, 0x60)
                new_una = psn if nak else (psn + 1) % _PSN_MOD
                if rq.una is not None and not _psn_le(new_una, rq.una) or rq.una is None:
                    rq.una = new_una
                    rq.timer_from = t if rq.top is not None and _psn_le(new_una, rq.top) else None
                elif op == _OP_ACK and not nak and new_una == rq.una and ev is not None:
                    ev.dup = True
                if op in (_OP_ACK, _OP_ATOMIC_ACK) and syn & 0xE0 == 0x20:
                    rq.rnr_from = (t, f"RNR wait: {rnr_timer_text(syn)}")
                self.set_state(t, node, 0, dq, rq.text())
        elif kind in (tr.ACCEPT, tr.PFC):
            if kind == tr.ACCEPT:
                p = self.resps.setdefault((node, qpn), _Resp())
                p.expect = int(r["aux"])
                p.nak_for = None
                self.set_state(t, node, 1, qpn, p.text())
        else:
            label, style = _local_label(r)
            self.add(Event(t, node, -1, label, style=style, record=i, qpn=qpn))
            if kind == tr.TIMEOUT:
                rq = self.reqs.setdefault((node, qpn), _Req())
                start = rq.timer_from if rq.timer_from is not None else t
                self.bars.append(Bar(node, start, t, "rto",
                                     f"retransmit timer: {_fmt_dur(t - start)}", qpn))
                rq.timer_from = None
            elif kind == tr.RETRY:
                rq = self.reqs.setdefault((node, qpn), _Req())
                rq.timer_from = None
                if int(r["reason"]) == 3 and rq.rnr_from is None:
                    rq.rnr_from = (t, "RNR wait")
            elif (kind == tr.COMPLETE and int(r["status"]) not in (0, 5)
                  and (node, qpn) not in self.errored):
                self.errored.add((node, qpn))
                self.add(Event(t, node, -1, f"QP 0x{qpn:x} state RTS → ERR (error completion: the "
                                            "rest of its work is flushed)", style="state", record=i,
                               qpn=qpn))

    def ladder(self) -> Ladder:
        """The rows fed so far, in time order, each with the QP state after it."""
        events = self.events
        events.sort(key=lambda e: e.t_ps)  # stable: record order within the same instant
        current: dict[int, str] = {}
        changes = sorted(self.changes, key=lambda c: c[0])  # stable: fed in record order
        c = 0
        for n, e in enumerate(events):
            e.index = n
            while c < len(changes) and changes[c][0] <= e.t_ps:
                current = changes[c][1]
                c += 1
            e.state = current
        return Ladder(events, self.bars, self.names, self.records)


def build(records: np.ndarray, names: dict[int, str], index: Index | None = None) -> Ladder:
    """All rows of a trace (``records`` without invariant-checker kinds), annotated."""
    b = Builder(records, names, index if index is not None else build_index(records))
    for i in range(len(records)):
        b.feed(i)
    return b.ladder()


def _responder_rx(ev: Event | None, p: _Resp, key: tuple[int, int, int, int],
                  accepted: set[tuple[int, int, int, int]],
                  naks_at: dict[tuple[int, int, int], tuple[int, int]]) -> None:
    """Say why a request that reached the responder was not accepted (if it was not)."""
    node, qpn, psn, t = key
    if key in accepted or ev is not None and ev.discarded:
        return
    nak = naks_at.get((node, qpn, t))
    why = None
    if p.error:
        why = "discarded: the QP is in ERR"
    elif nak is not None and nak[0] == psn and nak[1] & 0xE0 == 0x20:
        why = "not accepted: no receive posted (RNR NAK)"
    elif nak is not None and nak[1] & 0xE0 == 0x60 and nak[1] != 0x60:
        why = f"refused: {_NAK_LONG.get(nak[1], hex(nak[1]))}"
    elif p.expect is not None and psn != p.expect and _psn_le(p.expect, psn):
        if nak is not None:
            why = f"discarded: out of sequence (expects {p.expect}), NAK sent"
        elif p.nak_for == p.expect:
            why = f"discarded: out of sequence (expects {p.expect}), NAK already sent"
        else:
            why = f"discarded: out of sequence (expects {p.expect})"
    elif p.expect is not None and psn != p.expect:
        why = "duplicate: already accepted"
    elif nak is not None and nak[1] == 0x60:  # first packet after the gap, before any ACCEPT
        p.expect = nak[0]
        why = f"discarded: out of sequence (expects {nak[0]}), NAK sent"
    if ev is not None and why is not None:
        ev.discarded = why


def _fmt_dur(ps: int) -> str:
    """A duration for labels: µs below 1 ms, else ms."""
    if ps >= 10**9:
        return f"{ps / 1e9:g} ms"
    return f"{ps / 1e6:g} µs"


def fmt_time(t_ps: int, ascii: bool = False) -> str:
    """A time for the time column: ``1.234 µs``."""
    return f"{t_ps / 1e6:.3f} {'us' if ascii else 'µs'}"
