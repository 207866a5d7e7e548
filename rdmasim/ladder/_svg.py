"""The ladder as SVG: lanes across, time downwards, one row per event.

Layout rule that keeps labels apart: every text sits in a row of its own (an event, the note of
a frame the receiver discarded, the ``lost`` mark of a dropped frame, the start of a timer bar),
rows are at least :data:`ROW_PX` apart, and texts are horizontal, so no two labels can overlap,
however dense the burst. Time is therefore not to scale (the diagram says so): quiet gaps are
shortened to at most :data:`MAX_GAP_PX` and marked with ``≈``.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import numpy as np

from rdmasim.ladder._model import Event, fmt_time
from rdmasim.ladder._window import View

#: px between rows; a label is FONT_PX tall
ROW_PX = 16
FONT_PX = 11
#: width of one character of the monospace font at FONT_PX (0.6 em, as DejaVu Sans Mono / Menlo)
CHAR_PX = 0.6 * FONT_PX
#: the longest a quiet gap is drawn
MAX_GAP_PX = 120

COLORS = {"data": "#1f5fa8", "ack": "#2a8a3a", "nak": "#c0392b", "cnp": "#8e44ad", "pfc": "#7f6000",
          "post": "#333333", "complete": "#2a8a3a", "error": "#c0392b", "timeout": "#d35400",
          "retry": "#d35400", "retx": "#e67e22", "drop": "#c0392b", "state": "#7b241c",
          "rto": "#d35400", "rnr": "#8e44ad", "note": "#7b241c"}
_LEGEND = [("line", "data", "request"), ("line", "retx", "retransmission"), ("line", "ack", "ACK"),
           ("line", "nak", "NAK / RNR NAK"), ("line", "cnp", "CNP"), ("x", "drop", "lost frame"),
           ("bar", "rto", "retransmit timer"), ("bar", "rnr", "RNR wait"),
           ("dot", "post", "verbs event on a host")]


#: characters XML 1.0 does not allow in a document (an SVG holding one does not parse)
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def esc(s: str) -> str:
    """``s`` as XML/HTML text or attribute value: markup characters as entities, characters XML
    does not allow spelled out as in a Python repr (``\\x01``)."""
    return html.escape(_XML_INVALID.sub(lambda m: repr(m[0])[1:-1], s), quote=True)


@dataclass
class _Row:
    t_ps: int
    order: int          # 0: arrival notes / lost marks, 1: events, 2: bar labels (same instant)
    seq: int
    what: str           # "event", "note", "lost", "bar"
    event: Event | None = None
    bar: int = -1
    y: float = 0.0


def _text(x: float, y: float, s: str, cls: str, color: str, anchor: str = "start",
          extra: str = "") -> str:
    return (f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{color}"{extra}>'
            f"{esc(s)}</text>")


def render(view: View, title: str | None = None, *, interactive: bool = False) -> str:
    """SVG document of a :class:`View` (see :func:`rdmasim.ladder.svg_string`)."""
    events, lanes = view.events, view.lanes
    first = lanes[0] if lanes else -1
    lane_gap = 440 if len(lanes) <= 2 else 320
    flights = [e.t_arrive_ps - e.t_ps for e in events if e.frame and e.t_arrive_ps is not None]
    ref = float(np.median(flights)) if flights else 1e6
    # rows
    rows: list[_Row] = []
    for e in events:
        rows.append(_Row(e.t_ps, 1, len(rows), "event", e))
        if e.frame and e.discarded and e.t_arrive_ps is not None:
            rows.append(_Row(e.t_arrive_ps, 0, len(rows), "note", e))
        if e.frame and e.dropped is not None:
            rows.append(_Row(int(e.t_ps + ref / 2), 0, len(rows), "lost", e))
    for i, b in enumerate(view.bars):
        rows.append(_Row(b.t0_ps, 2, len(rows), "bar", bar=i))
    rows.sort(key=lambda r: (r.t_ps, r.order, r.seq))
    # left margin: the time column, then the first lane's texts (drawn to its left)
    left_len = [len(r.event.label) for r in rows if r.what == "event" and r.event is not None
                and not r.event.frame and r.event.node == first]
    left_len += [len(r.event.discarded or "") for r in rows if r.what == "note" and r.event is not None
                 and r.event.peer == first]
    left_len += [len(view.bars[r.bar].label) + 2 for r in rows if r.what == "bar"
                 and view.bars[r.bar].node == first]
    left = int(100 + CHAR_PX * max(left_len, default=8) + 24)
    x_of = {n: left + i * lane_gap for i, n in enumerate(lanes)}
    # vertical: rows at least ROW_PX apart, else proportional to time (a flight ~ 6 rows)
    scale = 6 * ROW_PX / ref if ref > 0 else 1e-4
    legend_wrap = max(left + lane_gap * max(len(lanes) - 1, 1), 500)
    legend_rows = _legend(10, 0, legend_wrap)[1]
    top = 20 + (20 if title else 0) + 18 * legend_rows + (36 if view.description else 18) + 40
    y = float(top)
    breaks: list[float] = []
    prev_t: int | None = None
    for r in rows:
        if prev_t is not None:
            gap = (r.t_ps - prev_t) * scale
            if gap > MAX_GAP_PX:
                breaks.append(y + ROW_PX / 2 + 4)
                gap = MAX_GAP_PX
            y += max(gap, ROW_PX)
        r.y = y
        prev_t = r.t_ps
    height_body = y + 3 * ROW_PX
    row_y = {(r.what, r.event.index): r.y for r in rows if r.event is not None and r.what != "event"}
    first_y: dict[int, float] = {}
    for r in rows:
        first_y.setdefault(r.t_ps, r.y)
    known = np.array(sorted(first_y), dtype=np.float64)
    known_y = np.array([first_y[t] for t in sorted(first_y)])

    def y_at(t_ps: float) -> float:
        if not len(known):
            return float(top)
        if t_ps > known[-1]:
            return float(known_y[-1] + min((t_ps - known[-1]) * scale, MAX_GAP_PX))
        return float(np.interp(t_ps, known, known_y))

    body: list[str] = []
    # arrow labels go in a layer above every arrow: a later frame's arrow would strike them through
    labels: list[str] = []
    lowest = [height_body]  # an arrow may arrive below the last row: the drawing grows to hold it
    extent = [float(x_of[lanes[-1]]) + 20 if lanes else 200.0]

    def right_text(x: float, s: str) -> None:
        extent.append(x + CHAR_PX * len(s))

    for i, b in enumerate(view.bars):
        x = x_of[b.node]
        bx = x - 13 if b.node == first else x + 7
        y0, y1 = y_at(b.t0_ps), y_at(b.t1_ps)
        body.append(f'<rect class="bar {b.kind}" data-bar="{i}" x="{bx}" y="{y0:.1f}" width="6" '
                    f'height="{max(y1 - y0, 2):.1f}" fill="{COLORS[b.kind]}" fill-opacity="0.55">'
                    f"<title>{esc(f'{view.name(b.node)}: {b.label} ')}"
                    f"{esc(f'({fmt_time(b.t0_ps)} to {fmt_time(b.t1_ps)})')}"
                    "</title></rect>")
    for r in rows:
        yl = r.y + 4
        if r.what == "bar":
            b = view.bars[r.bar]
            x = x_of[b.node]
            color = COLORS[b.kind]
            if b.node == first:
                body.append(_text(x - 18, yl, b.label, f"bar-label {b.kind}", color, "end"))
            else:
                body.append(_text(x + 18, yl, b.label, f"bar-label {b.kind}", color))
                right_text(x + 18, b.label)
            body.append(_text(10, yl, fmt_time(b.t0_ps), "time", "#666"))
            continue
        e = r.event
        assert e is not None
        if r.what == "note":
            x = x_of[e.peer]
            note = e.discarded or ""
            g = f'<g class="ev-note" data-ev="{e.index}">'
            if e.peer == first:
                body.append(g + _text(x - 18, yl, note, "note", COLORS["note"], "end") + "</g>")
            else:
                body.append(g + _text(x + 18, yl, note, "note", COLORS["note"]) + "</g>")
                right_text(x + 18, note)
            body.append(_text(10, yl, fmt_time(r.t_ps), "time", "#666"))
            continue
        if r.what == "lost":
            xm = (x_of[e.node] + x_of[e.peer]) / 2
            ym = r.y
            sz = 6
            body.append(f'<g class="ev-lost" data-ev="{e.index}">'
                        f'<path class="drop-x" d="M{xm - sz:.1f},{ym - sz:.1f} L{xm + sz:.1f},{ym + sz:.1f} '
                        f'M{xm - sz:.1f},{ym + sz:.1f} L{xm + sz:.1f},{ym - sz:.1f}" '
                        f'stroke="{COLORS["drop"]}" '
                        f'stroke-width="2.5"/>'
                        + _text(xm + 12, yl, f"lost: {e.dropped}", "drop-label", COLORS["drop"])
                        + "</g>")
            right_text(xm + 12, f"lost: {e.dropped}")
            continue
        body.append(f'<g class="ev" data-ev="{e.index}">')
        body.append(_text(10, yl, fmt_time(e.t_ps), "time", "#666"))
        if not e.frame:
            x = x_of[e.node]
            color = COLORS.get(e.style, "#333")
            body.append(f'<circle class="local {e.style}" cx="{x}" cy="{r.y:.1f}" r="3.5" fill="{color}"/>')
            if e.node == first:
                body.append(_text(x - 18, yl, e.label, f"local-label {e.style}", color, "end"))
            else:
                body.append(_text(x + 18, yl, e.label, f"local-label {e.style}", color))
                right_text(x + 18, e.label)
            body.append("</g>")
            continue
        x1, x2 = x_of[e.node], x_of[e.peer]
        style = "retx" if e.retx and e.style == "data" else e.style
        color = COLORS[style]
        label = e.full_label
        classes = f"arrow {e.style}" + (" retx" if e.retx else "") + (" ce" if e.ce else "") + \
            (" dup" if e.dup else "") + (" discarded" if e.discarded else "")
        tip = f"{view.name(e.node)} → {view.name(e.peer)} at {fmt_time(e.t_ps)}: {label}"
        if e.dropped is not None:
            classes += " drop"
            tip += f" (lost: {e.dropped})"
            ym = row_y[("lost", e.index)]
            body.append(f'<line class="{classes}" x1="{x1}" y1="{r.y + 6:.1f}" x2="{(x1 + x2) / 2:.1f}" '
                        f'y2="{ym:.1f}" stroke="{color}" stroke-width="1.5" stroke-dasharray="5,3">'
                        f"<title>{esc(tip)}</title></line>")
        else:
            ya = y_at(e.t_arrive_ps) if e.t_arrive_ps is not None else r.y + 6 * ROW_PX
            ya = row_y.get(("note", e.index), max(ya, r.y + ROW_PX))
            lowest.append(ya + 2 * ROW_PX)
            if e.discarded:
                tip += f" ({view.name(e.peer)}: {e.discarded})"
            dash = ' stroke-dasharray="2,2"' if e.discarded else ""
            body.append(f'<line class="{classes}" x1="{x1}" y1="{r.y + 6:.1f}" x2="{x2}" y2="{ya:.1f}" '
                        f'stroke="{color}" stroke-width="1.5"{dash} marker-end="url(#head-{style})">'
                        f"<title>{esc(tip)}</title></line>")
        # the label sits in the frame's own row, above the start of its arrow
        halo = ' paint-order="stroke" stroke="white" stroke-width="3"'
        w = CHAR_PX * len(label) + 4
        if x2 >= x1:
            text = _text(x1 + 8, yl, label, "arrow-label", color, extra=halo)
            bx = x1 + 6
            right_text(x1 + 8, label)
        else:
            text = _text(x1 - 8, yl, label, "arrow-label", color, "end", extra=halo)
            bx = x1 - 6 - w
        body.append("</g>")
        # a white box under the label hides the arrows that pass behind it (in a burst, every
        # earlier frame's arrow crosses this row)
        box = (f'<rect class="label-bg" x="{bx:.1f}" y="{yl - FONT_PX + 1:.1f}" width="{w:.1f}" '
               f'height="{FONT_PX + 3}" fill="white" fill-opacity="0.9"/>')
        labels.append(f'<g class="ev-label" data-ev="{e.index}">{box}{text}</g>')
    # QP state columns, right of everything else: a text where a lane's state changes
    state_x = max(extent) + 30
    has_state = [n for n in lanes if any(n in e.state for e in events)]
    col_w = {n: CHAR_PX * max((len(e.state.get(n, "")) for e in events), default=10) + 30
             for n in has_state}
    col_x: dict[int, float] = {}
    x = state_x
    for n in has_state:
        col_x[n] = x
        x += max(col_w[n], CHAR_PX * (len(view.name(n)) + 12))
    width = int(max(x, legend_wrap + 20, left + lane_gap * max(len(lanes) - 1, 0) + 200) + 20)
    state_svg: list[str] = []
    last: dict[int, str] = {}
    for r in rows:
        if r.what != "event" or r.event is None:
            continue
        for n in has_state:
            s = r.event.state.get(n, "")
            if s != last.get(n, ""):
                state_svg.append(_text(col_x[n], r.y + 4, s or "-", "state-text", "#555"))
                last[n] = s
    height = int(max(lowest) + 20)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
           f'font-size="{FONT_PX}">', "<defs>"]
    for style, color in COLORS.items():
        out.append(f'<marker id="head-{style}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
                   f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
                   f'fill="{color}"/></marker>')
    out.append("</defs>")
    out.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>')
    y_head = 20
    if title:
        out.append(f'<text class="title" x="10" y="{y_head}" font-size="14" font-weight="bold">'
                   f"{esc(title)}</text>")
        y_head += 20
    out += _legend(10, y_head, legend_wrap)[0]
    y_head += 18 * legend_rows
    scale_note = ("Time runs downwards, not to scale: every event has a row of its own; "
                  "quiet gaps are shortened (≈).")
    out.append(_text(10, y_head + 4, scale_note, "scale-note", "#555"))
    if view.description:
        y_head += 18
        out.append(_text(10, y_head + 4, f"Showing {view.description}.", "window-note", "#555"))
    lane_y = top - 16
    for n in lanes:
        x0 = x_of[n]
        out.append(f'<text class="lane-name" x="{x0}" y="{lane_y}" text-anchor="middle" font-size="13" '
                   f'font-weight="bold">{esc(view.name(n))}</text>')
        out.append(f'<line class="lane" x1="{x0}" y1="{lane_y + 6}" x2="{x0}" y2="{height - 20}" '
                   f'stroke="#999" stroke-width="2"/>')
    for n in has_state:
        out.append(_text(col_x[n], lane_y, f"{view.name(n)}: QP state", "state-head", "#555",
                         extra=' font-weight="bold"'))
    for by in breaks:
        out.append(f'<text class="time-break" x="92" y="{by:.1f}" fill="#999">≈</text>')
    out += body
    out += labels
    out += state_svg
    if view.frames_after:
        out.append(_text(10, height - 8, f"... {view.frames_after:,} more frames after this window",
                         "more", "#555"))
    out.append("</svg>")
    return "\n".join(out)


def _legend_item_w(label: str) -> float:
    return 34 + CHAR_PX * len(label) + 16


def _legend(x0: float, y0: float, width: float) -> tuple[list[str], int]:
    """The legend's SVG elements, wrapped to ``width``, and its number of rows."""
    out = ['<g class="legend">']
    x, y = x0, y0
    for kind, style, label in _LEGEND:
        w = _legend_item_w(label)
        if x + w > x0 + width and x > x0:
            x, y = x0, y + 18
        c = COLORS[style]
        if kind == "line":
            out.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 26:.1f}" y2="{y:.1f}" stroke="{c}" '
                       f'stroke-width="1.5" marker-end="url(#head-{style})"/>')
        elif kind == "x":
            out.append(f'<path d="M{x + 8:.1f},{y - 5:.1f} L{x + 18:.1f},{y + 5:.1f} M{x + 8:.1f},'
                       f'{y + 5:.1f} L{x + 18:.1f},{y - 5:.1f}" stroke="{c}" stroke-width="2.5"/>')
        elif kind == "bar":
            out.append(f'<rect x="{x + 10:.1f}" y="{y - 7:.1f}" width="6" height="14" fill="{c}" '
                       f'fill-opacity="0.55"/>')
        else:
            out.append(f'<circle cx="{x + 13:.1f}" cy="{y:.1f}" r="3.5" fill="{c}"/>')
        out.append(_text(x + 32, y + 4, label, "legend-label", "#333"))
        x += w
    out.append("</g>")
    return out, int((y - y0) // 18) + 1
