"""Ladder (sequence) diagrams of a trace: what the verbs did on the wire.

Every frame is an arrow from its sender's timeline (at transmit start) to its receiver's
(at the arrival of its last bit), labelled with the short opcode name, PSN, payload length,
AETH syndrome and MSN for acknowledgements (``NAK(seq err)``, ``RNR_NAK``...), the A bit and
ECN CE marks. A lost frame ends in an X half-way, with the reason. A request PSN sent again by
the same QP is marked ``(retx)``. Work-request posts, completions, retransmit timeouts and
Go-Back-N restarts sit on their endpoint's timeline.

Two renderers read the same events: :func:`render_text` (one line per event in time order,
readable at 80 columns for small runs) and :func:`render_svg` / :func:`render_html` (a
self-contained file). :func:`example_write` runs the small teaching scenario behind
``rdmasim trace``.
"""

from __future__ import annotations

import html
import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rdmasim import trace as tr
from rdmasim.codec import OPCODE_NAMES

_OP_ACK = 0x11
_OP_ATOMIC_ACK = 0x12
_OP_CNP = 0x81
_NAK_NAMES = {0x60: "seq err", 0x61: "inv req", 0x62: "rem access", 0x63: "rem op"}
_WR_NAMES = {0: "RDMA_WRITE", 1: "RDMA_WRITE_WITH_IMM", 2: "SEND", 3: "SEND_WITH_IMM",
             4: "RDMA_READ", 5: "ATOMIC_CMP_AND_SWP", 6: "ATOMIC_FETCH_AND_ADD"}
_WC_OPCODES = {0: "SEND", 1: "RDMA_WRITE", 2: "RDMA_READ", 3: "COMP_SWAP", 4: "FETCH_ADD",
               128: "RECV", 129: "RECV_RDMA_WITH_IMM"}


def short_opcode(opcode: int) -> str:
    """Compact BTH opcode name for labels: ``WRITE_FIRST``, ``SEND_ONLY_IMM``, ``ACK``..."""
    name = OPCODE_NAMES.get(int(opcode), f"OP_0x{int(opcode):02x}")
    name = name.replace("RDMA_READ_RESPONSE", "READ_RESP").replace("RDMA_", "")
    name = name.replace("_WITH_IMMEDIATE", "_IMM").replace("_WITH_INVALIDATE", "_INV")
    return {"ACKNOWLEDGE": "ACK", "ATOMIC_ACKNOWLEDGE": "ATOMIC_ACK"}.get(name, name)


def _status_name(status: int) -> str:
    from rdmasim.verbs import enums as e

    return e.wc_status_to_str(int(status)).removeprefix("IBV_WC_")


@dataclass
class Event:
    """One row of a ladder: a frame (``src`` -> ``dst``) or an event on one node's timeline."""

    t_ps: int
    node: int                 # sender of a frame, or the node of a local event
    peer: int = -1            # receiver of a frame
    label: str = ""
    frame: bool = False
    t_arrive_ps: int | None = None
    dropped: str | None = None   # reason, when lost on the way
    discarded: str | None = None  # reason, when thrown away by the receiver
    retx: bool = False
    ce: bool = False
    style: str = "data"       # data / ack / nak / cnp / pfc / post / complete / error / timeout / retry
    record: int = -1          # index of the trace record it came from
    extra: dict[str, int] = field(default_factory=dict)


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
            return f"RNR_NAK(timer={syn & 0x1F}) psn={psn} msn={msn}", "nak"
        return f"{base} psn={psn} msn={msn}", "ack"
    label = f"{short_opcode(op)} psn={psn}"
    if op == 0x0C:  # READ request: no payload, the RETH asks for this many bytes
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
        mark = "✔" if status == 0 else "✘"
        text = f"{mark} {queue}completion wr_id={wr_id} {op} {_status_name(status)}"
        if status == 0 and int(r["len"]):
            text += f" len={int(r['len'])}"
        return text, "complete" if status == 0 else "error"
    if kind == tr.TIMEOUT:
        return f"⏱ retransmit timeout, oldest unacked psn={int(r['psn'])}", "timeout"
    if kind == tr.RETRY:
        cause = tr.RETRY_CAUSES.get(int(r["reason"]), "")
        if int(r["reason"]) == 3:
            return f"↻ resend from psn={int(r['psn'])} after the RNR wait", "retry"
        how = "selective repeat (IRN)" if int(r["flags"]) & tr.FLAG_SELECTIVE else "Go-Back-N"
        return (f"↻ {how} from psn={int(r['psn'])} after {cause} "
                f"({int(r['aux'])} retries left)"), "retry"
    return tr.kind_name(kind), "post"


def build_events(records: np.ndarray) -> list[Event]:
    """Turn trace records into ladder rows: one per frame (TX matched with its RX or DROP)
    and one per verbs/timer event, in time order."""
    events: list[Event] = []
    inflight: dict[int, deque[Event]] = {}
    last_rx: dict[int, Event] = {}
    sent: set[tuple[int, int, int]] = set()
    for i, r in enumerate(records):
        kind = int(r["kind"])
        t = int(r["t_ps"])
        if kind == tr.TX:
            label, style = _frame_label(r)
            ev = Event(t, int(r["node"]), int(r["peer"]), label, frame=True, style=style, record=i,
                       ce=int(r["ecn"]) == tr.ECN_CE)
            if style == "data":
                key = (int(r["node"]), int(r["qpn"]), int(r["psn"]))
                ev.retx = key in sent
                sent.add(key)
            inflight.setdefault(int(r["link"]), deque()).append(ev)
            events.append(ev)
        elif kind == tr.DROP and int(r["link"]) >= 0:
            q = inflight.get(int(r["link"]))
            if q:  # the frame just put on this link
                q.pop().dropped = tr.DROP_REASONS.get(int(r["reason"]), str(int(r["reason"])))
        elif kind == tr.DROP:
            ev2 = last_rx.get(int(r["node"]))
            if ev2 is not None:
                ev2.discarded = tr.DROP_REASONS.get(int(r["reason"]), str(int(r["reason"])))
        elif kind == tr.RX:
            q = inflight.get(int(r["link"]))
            if q:
                ev = q.popleft()
                ev.t_arrive_ps = t
                last_rx[int(r["node"])] = ev
        else:
            label, style = _local_label(r)
            events.append(Event(t, int(r["node"]), -1, label, style=style, record=i))
    events.sort(key=lambda e: e.t_ps)  # stable: record order within the same instant
    return events


def _records(trace: tr.Trace | np.ndarray) -> np.ndarray:
    recs = trace.to_numpy() if isinstance(trace, tr.Trace) else np.asarray(trace)
    return recs[(recs["kind"] != tr.ACCEPT) & (recs["kind"] != tr.PFC)]  # invariant-checker records


def _names(trace: tr.Trace | np.ndarray, names: dict[int, str] | None) -> dict[int, str]:
    out = trace.node_names if isinstance(trace, tr.Trace) else {}
    out.update(names or {})
    return out


def _select(events: list[Event], records: np.ndarray, nodes: Sequence[int | str] | None,
            names: dict[int, str], start_ps: int | None, end_ps: int | None) -> tuple[list[Event], list[int]]:
    """The events to draw and the node order (lanes)."""
    if nodes is None:
        seen = {int(n) for n in records["node"] if int(n) != tr.NO_NODE}
        seen |= {int(n) for n, k in zip(records["peer"], records["kind"], strict=True)
                 if int(n) != tr.NO_NODE and int(k) in (tr.TX, tr.RX, tr.DROP)}
        lanes = sorted(seen)
    else:
        by_name = {v: k for k, v in names.items()}
        lanes = []
        for n in nodes:
            if isinstance(n, str):
                if n not in by_name:
                    raise ValueError(f"no node named {n!r} in the trace (known: {sorted(by_name)})")
                lanes.append(by_name[n])
            else:
                lanes.append(int(n))
    keep = set(lanes)
    out = [e for e in events
           if e.node in keep and (not e.frame or e.peer in keep)
           and (start_ps is None or e.t_ps >= start_ps) and (end_ps is None or e.t_ps <= end_ps)]
    return out, lanes


# ---------------------------------------------------------------------------------------------
# text


_UNICODE = {"line": "─", "right": "▶", "left": "◀", "x": "✕"}
_ASCII = {"line": "-", "right": ">", "left": "<", "x": "X"}
_ASCII_SYMBOLS = str.maketrans({"✔": "ok", "✘": "ERR", "⏱": "T/O", "↻": "<<"})


def _fmt_time(t_ps: int) -> str:
    return f"{t_ps / 1e6:.3f} us"


def render_text(trace: tr.Trace | np.ndarray, nodes: Sequence[int | str] | None = None, *,
                names: dict[int, str] | None = None, ascii: bool = False,
                start_ps: int | None = None, end_ps: int | None = None,
                max_lines: int | None = None) -> str:
    """The ladder as text, one line per event in time order.

    A frame reads ``  1.234 us  a ──WRITE_FIRST psn=0 len=1024──▶ b  @2.324`` (``@``: arrival
    time in µs); a lost one ends in ``✕`` with its reason; a frame from the right-hand node
    points left. ``nodes`` picks and orders the endpoints (names or indices; default: all).
    ``ascii=True`` draws with ``-``, ``>``, ``<`` and ``X`` only. ``max_lines`` truncates
    (the last line then says how many events were left out).
    """
    records = _records(trace)
    nm = _names(trace, names)
    events, lanes = _select(build_events(records), records, nodes, nm, start_ps, end_ps)
    g = _ASCII if ascii else _UNICODE
    order = {n: i for i, n in enumerate(lanes)}
    label_of = {n: nm.get(n, f"h{n}") for n in lanes}
    w = max((len(s) for s in label_of.values()), default=1)
    tw = max((len(_fmt_time(e.t_ps)) for e in events), default=8)
    lines = [f"{'time':>{tw}}  ladder of {', '.join(label_of[n] for n in lanes)}"
             f"   (@ = arrival time in us)"]
    for e in events[:max_lines] if max_lines is not None else events:
        t = _fmt_time(e.t_ps).rjust(tw)
        if not e.frame:
            text = e.label.translate(_ASCII_SYMBOLS) if ascii else e.label
            lines.append(f"{t}  {label_of[e.node]:<{w}}  {text}")
            continue
        label = e.label + (" CE" if e.ce else "") + (" (retx)" if e.retx else "")
        a, b = (e.node, e.peer) if order[e.node] <= order[e.peer] else (e.peer, e.node)
        rightwards = a == e.node
        ln = g["line"]
        if e.dropped is not None:
            body = (f"{ln * 2}{label}{ln}{g['x']}" if rightwards else f"{g['x']}{ln}{label}{ln * 2}")
            tail = f"  dropped: {e.dropped}"
        else:
            body = (f"{ln * 2}{label}{ln * 2}{g['right']}" if rightwards
                    else f"{g['left']}{ln * 2}{label}{ln * 2}")
            tail = f"  @{e.t_arrive_ps / 1e6:.3f}" if e.t_arrive_ps is not None else "  (in flight)"
            if e.discarded:
                tail += f" discarded: {e.discarded}"
        lines.append(f"{t}  {label_of[a]:<{w}} {body} {label_of[b]}{tail}")
    if max_lines is not None and len(events) > max_lines:
        lines.append(f"... {len(events) - max_lines} more events")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# SVG

_COLORS = {"data": "#1f5fa8", "ack": "#2a8a3a", "nak": "#c0392b", "cnp": "#8e44ad", "pfc": "#7f6000",
           "post": "#333333", "complete": "#2a8a3a", "error": "#c0392b", "timeout": "#d35400",
           "retry": "#d35400", "retx": "#e67e22", "drop": "#c0392b"}


def _esc(s: str) -> str:
    return html.escape(s, quote=True)


def svg_string(trace: tr.Trace | np.ndarray, nodes: Sequence[int | str] | None = None, *,
               names: dict[int, str] | None = None, start_ps: int | None = None,
               end_ps: int | None = None, title: str | None = None) -> str:
    """The ladder as a self-contained SVG document (a string). One ``class="arrow ..."``
    line per frame; lost frames end in an X (``class="drop-x"``)."""
    records = _records(trace)
    nm = _names(trace, names)
    events, lanes = _select(build_events(records), records, nodes, nm, start_ps, end_ps)
    lane_gap = 420 if len(lanes) <= 2 else 300
    top, row, char_px = 70, 20, 6.7
    # room for the time column and the first lane's event labels (drawn to its left)
    first_labels = [len(e.label) for e in events if not e.frame and lanes and e.node == lanes[0]]
    last_labels = [len(e.label) for e in events if not e.frame and lanes and e.node != lanes[0]]
    left = int(100 + char_px * max(first_labels, default=10) + 20)
    x_of = {n: left + i * lane_gap for i, n in enumerate(lanes)}
    # vertical position: time, compressed — each instant gets room for its labels and long
    # quiet gaps are capped (marked with a break)
    flights = [e.t_arrive_ps - e.t_ps for e in events if e.frame and e.t_arrive_ps is not None]
    ref = float(np.median(flights)) if flights else 1e6
    scale = 90.0 / ref if ref > 0 else 1e-4  # px per ps: a typical flight spans 90 px
    times: dict[int, int] = {}
    for e in events:
        times[e.t_ps] = times.get(e.t_ps, 0) + 1
        if e.frame and e.t_arrive_ps is not None:
            times.setdefault(e.t_arrive_ps, 0)
    y_of: dict[int, float] = {}
    breaks: list[float] = []
    y = float(top)
    prev_t: int | None = None
    prev_n = 0
    for t in sorted(times):
        if prev_t is not None:
            gap = (t - prev_t) * scale
            if gap > 160:
                breaks.append(y + prev_n * row + 20)
                gap = 160
            y += max(gap, prev_n * row, 6)
        y_of[t] = y
        prev_t, prev_n = t, times[t]
    height = int(y + prev_n * row + 60)
    known = np.array(sorted(y_of), dtype=np.float64)
    known_y = np.array([y_of[t] for t in sorted(y_of)])

    def y_at(t_ps: float) -> float:
        """y of any instant, interpolated between drawn instants (extrapolated past the end)."""
        if len(known) and t_ps > known[-1]:
            return float(known_y[-1] + (t_ps - known[-1]) * scale)
        return float(np.interp(t_ps, known, known_y)) if len(known) else float(top)

    width = int(left + lane_gap * max(len(lanes) - 1, 0) + char_px * max(last_labels, default=20) + 40)
    slot: dict[int, int] = {}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">',
           "<defs>"]
    for style, color in _COLORS.items():
        out.append(f'<marker id="head-{style}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
                   f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
                   f'fill="{color}"/></marker>')
    out.append("</defs>")
    out.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>')
    if title:
        out.append(f'<text x="10" y="20" font-size="14" font-weight="bold">{_esc(title)}</text>')
    for n in lanes:
        x = x_of[n]
        out.append(f'<text class="lane-name" x="{x}" y="{top - 20}" text-anchor="middle" font-size="13" '
                   f'font-weight="bold">{_esc(nm.get(n, f"h{n}"))}</text>')
        out.append(f'<line class="lane" x1="{x}" y1="{top - 10}" x2="{x}" y2="{height - 30}" '
                   f'stroke="#999" stroke-width="2"/>')
    for by in breaks:
        out.append(f'<text class="time-break" x="10" y="{by:.1f}" fill="#999">'
                   "≈ (time compressed)</text>")
    for e in events:
        k = slot.get(e.t_ps, 0)
        slot[e.t_ps] = k + 1
        y0 = y_of[e.t_ps] + k * row
        out.append(f'<text class="time" x="10" y="{y0 + 4:.1f}" fill="#666">{_esc(_fmt_time(e.t_ps))}</text>')
        if not e.frame:
            x = x_of[e.node]
            anchor, dx = ("end", -8) if e.node == lanes[0] else ("start", 8)
            color = _COLORS.get(e.style, "#333")
            out.append(f'<circle class="local {e.style}" cx="{x}" cy="{y0:.1f}" r="3.5" fill="{color}"/>')
            out.append(f'<text class="local-label {e.style}" x="{x + dx}" y="{y0 + 4:.1f}" '
                       f'text-anchor="{anchor}" fill="{color}">{_esc(e.label)}</text>')
            continue
        x1, x2 = x_of[e.node], x_of[e.peer]
        style = "retx" if e.retx and e.style == "data" else e.style
        color = _COLORS[style]
        label = e.label + (" CE" if e.ce else "") + (" (retx)" if e.retx else "")
        classes = f"arrow {e.style}" + (" retx" if e.retx else "") + (" ce" if e.ce else "")
        tip = f"{nm.get(e.node, e.node)} → {nm.get(e.peer, e.peer)} at {_fmt_time(e.t_ps)}: {label}"
        if e.dropped is not None:
            # would have arrived after a typical flight: the X sits half-way along that arrow
            y1 = (y0 + y_at(e.t_ps + ref)) / 2
            xm = (x1 + x2) / 2
            out.append(f'<line class="{classes} drop" x1="{x1}" y1="{y0:.1f}" x2="{xm:.1f}" y2="{y1:.1f}" '
                       f'stroke="{color}" stroke-width="1.5" stroke-dasharray="5,3">'
                       f"<title>{_esc(tip + ' — dropped: ' + e.dropped)}</title></line>")
            s = 6
            out.append(f'<path class="drop-x" d="M{xm - s:.1f},{y1 - s:.1f} L{xm + s:.1f},{y1 + s:.1f} '
                       f'M{xm - s:.1f},{y1 + s:.1f} L{xm + s:.1f},{y1 - s:.1f}" stroke="{_COLORS["drop"]}" '
                       f'stroke-width="2.5"/>')
            out.append(f'<text class="drop-label" x="{xm + 10:.1f}" y="{y1 + 14:.1f}" '
                       f'fill="{_COLORS["drop"]}">dropped: {_esc(e.dropped)}</text>')
            xl, yl = x1 + 0.3 * (x2 - x1), y0 + 0.6 * (y1 - y0)
            ye_full = 2 * y1 - y0
        else:
            y1 = y_of[e.t_arrive_ps] if e.t_arrive_ps is not None else y0 + 90
            out.append(f'<line class="{classes}" x1="{x1}" y1="{y0:.1f}" x2="{x2}" y2="{y1:.1f}" '
                       f'stroke="{color}" stroke-width="1.5" marker-end="url(#head-{style})">'
                       f"<title>{_esc(tip)}</title></line>")
            xl, yl = x1 + 0.3 * (x2 - x1), y0 + 0.3 * (y1 - y0)
        # the label runs along its arrow, just above it, so parallel arrows keep theirs apart
        ye = ye_full if e.dropped is not None else y1
        angle = math.degrees(math.atan2(ye - y0, x2 - x1))
        if angle > 90 or angle < -90:
            angle -= 180
        out.append(f'<text class="arrow-label" x="{xl:.1f}" y="{yl - 4:.1f}" text-anchor="middle" '
                   f'fill="{color}" transform="rotate({angle:.2f} {xl:.1f} {yl:.1f})">{_esc(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def render_svg(trace: tr.Trace | np.ndarray, path: str | Path,
               nodes: Sequence[int | str] | None = None, **kwargs: object) -> Path:
    """Write the ladder as a self-contained SVG file; returns its path.
    Options as :func:`svg_string`."""
    path = Path(path)
    path.write_text(svg_string(trace, nodes, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path


def render_html(trace: tr.Trace | np.ndarray, path: str | Path,
                nodes: Sequence[int | str] | None = None, title: str = "rdmasim ladder diagram",
                **kwargs: object) -> Path:
    """Write the ladder as a self-contained HTML page (the SVG inline, hover a frame for details)."""
    path = Path(path)
    svg = svg_string(trace, nodes, title=title, **kwargs)  # type: ignore[arg-type]
    legend = ("blue: request packets · orange: retransmissions · green: ACKs and successful "
              "completions · red: NAKs, drops (✕) and errors · ⏱ timeout · ↻ Go-Back-N restart")
    path.write_text(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{_esc(title)}</title>"
                    f"<style>body{{font-family:sans-serif;margin:1em}}</style></head><body>"
                    f"<h1>{_esc(title)}</h1><p>{_esc(legend)}</p>\n{svg}\n</body></html>\n",
                    encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# the teaching scenario


def example_write(size: int = 3072, mtu: int = 1024, drop_psn: Iterable[int] | int | None = 1,
                  loss: float = 0.0, op: str = "write", seed: int = 1, rate: str = "100Gbps",
                  delay: str = "1us", timeout: int = 10, retry_cnt: int = 7,
                  pcap: str | Path | None = None, max_records: int | None = 100_000,
                  recovery: str = "gbn") -> tr.Trace:
    """Run one RDMA WRITE (or SEND, ``op="send"``) of ``size`` bytes from ``a`` to ``b`` back to
    back with tracing on, dropping the first transmission of each PSN in ``drop_psn`` (a→b) and
    losing frames i.i.d. with ``loss`` each way. Returns the stopped Trace.

    With the defaults (3 packets, PSN 1 dropped) the ladder shows the NAK (PSN sequence error)
    and the Go-Back-N resend of PSNs 1 and 2; with ``recovery="irn"`` the NAK for PSN 2 (a selective
    ACK) and the resend of PSN 1 only.
    """
    from rdmasim.topology import back_to_back
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    if op not in ("write", "send"):
        raise ValueError(f"op must be 'write' or 'send', got {op!r}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    topo = back_to_back(rate=rate, delay=delay, mtu=mtu, loss_ab=loss, loss_ba=loss, seed=seed)
    sim = topo.sim
    if pcap is not None:
        sim.capture(str(pcap))
    drops = [drop_psn] if isinstance(drop_psn, int) else list(drop_psn or [])
    for psn in drops:
        topo.link.ab.drop(psn=psn)
    t = sim.trace(max_records=max_records)
    ctx_a, ctx_b = Context(topo.a), Context(topo.b)
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    cq_a, cq_b = CQ(ctx_a, 8), CQ(ctx_b, 8)
    n = max(size, 1)
    src = MR(pd_a, n, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd_b, n, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.array[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
    qa = QP(pd_a, QPInitAttr(scq=cq_a, rcq=cq_a, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qb = QP(pd_b, QPInitAttr(scq=cq_b, rcq=cq_b, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    connect_qps(qa, qb, path_mtu=mtu, timeout=timeout, retry_cnt=retry_cnt, recovery=recovery)
    if op == "send":
        qb.post_recv(RecvWR(wr_id=100, sg=[SGE(dst.buf, n, dst.lkey)]))
        qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, size, src.lkey)]))
    else:
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, size, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf)
        qa.post_send(wr)
    sim.run_until_idle()
    if pcap is not None:
        sim.close_capture()
    t.stop()
    return t
