"""Ladder (sequence) diagrams of a trace: what the verbs did on the wire.

Every frame is an arrow from its sender's timeline (at transmit start) to its receiver's (at the
arrival of its last bit), labelled with the short opcode name, PSN, payload length, AETH syndrome
and MSN for acknowledgements (``NAK(seq err)``, ``RNR_NAK(timer 1 = 10 µs)``...), the A bit and
ECN CE marks. A lost frame ends in a cross half-way, with the reason. A request PSN sent again by
the same QP is marked ``(retx)``, an ACK that acknowledges nothing new ``(dup ACK)``. What the
receiver did with a frame it did not accept is noted (``discarded: out of sequence (expects 1),
NAK already sent``). Work-request posts, completions, QP state changes (``RTS → ERR``),
retransmit timeouts and Go-Back-N restarts sit on their endpoint's timeline; the retransmit timer
and the RNR wait are bars on the requester's lane; each QP's requester window and responder
expected PSN are shown alongside.

Renderers, all reading the same rows: :func:`render_text` (one line per event, 80 columns for
small runs), :func:`svg_string` / :func:`render_svg`, :func:`render_html` (a self-contained page:
click a frame for its headers, step event by event) and :func:`mermaid_string` /
:func:`render_mermaid` (a Mermaid sequence diagram for slides and READMEs).

Every renderer takes the same window options, so a run of tens of thousands of frames is read a
few dozen at a time:

* ``start`` / ``end``: a time window (``"12us"``, ``"1.5ms"`` or integer ps) on send times;
* ``around``: an anchor, ``"first-loss"``, ``"first-nak"``, ``"first-timeout"``,
  ``"first-retry"``, ``"first-error"``, ``"psn=N"``, ``"t=TIME"``, or ``"qp=N"`` (only that QP's
  frames and events, either end); around an event the window holds ``max_frames`` frames (default
  40, 0: all), a fifth of them before it; around ``first-nak`` it starts at the request the NAK
  names (the one lost) when that fits in the window with the NAK;
* ``max_frames``: at most this many frames (0 or None: all);
* ``focus=True``: a long trace (more than 200 frames) with no other window and no
  ``max_frames`` focuses on its first loss, NAK, timeout or error (60 frames), and says so in the
  output. ``rdmasim trace`` does this.

The window is found on the whole trace with numpy (frames, losses, NAKs and anchors counted
without a Python step per record) and rows are built only for the records it draws, so a capped
trace of 2 million records is drawn in about the time it takes to load. :func:`view` returns the
window; every renderer also takes a :class:`View` in place of the trace, to draw one window in
several formats without finding it again.

:func:`example_write` runs the small teaching scenario behind ``rdmasim trace``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rdmasim import trace as tr
from rdmasim.ladder import _html, _mermaid, _svg, _text
from rdmasim.ladder._example import example_write
from rdmasim.ladder._model import RNR_TIMER_US, Bar, Event, Ladder, rnr_timer_text, short_opcode
from rdmasim.ladder._text import TEXT_CHARSET
from rdmasim.ladder._window import ANCHORS, View, parse_around, select

__all__ = [
    "ANCHORS", "RNR_TIMER_US", "TEXT_CHARSET", "Bar", "Event", "Ladder", "View", "build",
    "build_events", "example_write", "mermaid_string", "parse_around", "render_html",
    "render_mermaid", "render_svg", "render_text", "rnr_timer_text", "select", "short_opcode",
    "svg_string", "view",
]



def _records(trace: tr.Trace | np.ndarray) -> np.ndarray:
    recs = trace.to_numpy() if isinstance(trace, tr.Trace) else np.asarray(trace)
    pfc = recs["kind"] == tr.PFC  # switch PFC decisions: not drawn
    return recs[~pfc] if pfc.any() else recs  # (a copy of 2 M records costs a second)


def _names(trace: tr.Trace | np.ndarray, names: dict[int, str] | None) -> dict[int, str]:
    out = trace.node_names if isinstance(trace, tr.Trace) else {}
    out.update(names or {})
    return out


def build(trace: tr.Trace | np.ndarray, names: dict[int, str] | None = None) -> Ladder:
    """Every row of a trace (a :class:`~rdmasim.trace.Trace` or its records), annotated."""
    from rdmasim.ladder._model import build as _build

    return _build(_records(trace), _names(trace, names))


def build_events(records: np.ndarray) -> list[Event]:
    """Trace records turned into ladder rows: one per frame (TX matched with its RX or DROP)
    and one per verbs/timer/state event, in time order."""
    return build(records).events


def view(trace: tr.Trace | np.ndarray, nodes: Sequence[int | str] | None = None, *,
         names: dict[int, str] | None = None, start: str | int | None = None,
         end: str | int | None = None, around: str | None = None, qp: int | None = None,
         max_frames: int | None = None, focus: bool = False,
         start_ps: int | None = None, end_ps: int | None = None) -> View:
    """The window of a trace the renderers draw (options in the module docstring). ``nodes``
    picks and orders the lanes (names or indices; default: every node in the trace).
    ``start_ps``/``end_ps`` are the older spelling of ``start``/``end``."""
    from rdmasim.ladder._window import view as _view

    return _view(_records(trace), _names(trace, names), nodes,
                 start=start if start is not None else start_ps,
                 end=end if end is not None else end_ps, around=around, qp=qp,
                 max_frames=max_frames, focus=focus)


def _view_of(trace: tr.Trace | np.ndarray | View, nodes: Sequence[int | str] | None,
             names: dict[int, str] | None, window: dict[str, object]) -> View:
    """``trace`` itself when it is a :class:`View` (no other window options then), else its view."""
    if isinstance(trace, View):
        if nodes is not None or names or window:
            raise ValueError("a View is drawn as it is: pass the window options to view() instead")
        return trace
    return view(trace, nodes, names=names, **window)  # type: ignore[arg-type]


def render_text(trace: tr.Trace | np.ndarray | View, nodes: Sequence[int | str] | None = None, *,
                names: dict[int, str] | None = None, ascii: bool = False,
                max_lines: int | None = None, state: bool = False,
                **window: object) -> str:
    """The ladder as text, one line per event in time order.

    A frame reads ``  1.234 µs  a ──WRITE_FIRST psn=0 len=1024──► b  @2.324`` (``@``: arrival
    time in µs); a lost one ends in ``×`` with its reason; a frame from the right-hand node
    points left. Notes (what the receiver discarded and why, timer bars) follow on indented
    lines starting with ``·``. ``state=True`` adds a note wherever a QP's requester window or
    responder expected PSN changes. ``ascii=True`` draws with ASCII only (``-``, ``>``, ``<``,
    ``X``, ``us``). Otherwise the only non-ASCII characters are :data:`TEXT_CHARSET` (WGL4, which
    every common monospace font has). ``max_lines`` truncates the events printed (the last line
    then says how many were left out). Window options as :func:`view`.
    """
    v = _view_of(trace, nodes, names, window)
    return _text.render(v, ascii=ascii, max_lines=max_lines, state=state)


def svg_string(trace: tr.Trace | np.ndarray | View, nodes: Sequence[int | str] | None = None, *,
               names: dict[int, str] | None = None, title: str | None = None,
               **window: object) -> str:
    """The ladder as a self-contained SVG document (a string), with its legend and a "not to
    scale" note. One ``class="arrow ..."`` line per frame; lost frames end in a cross
    (``class="drop-x"``); bars ``class="bar rto"`` / ``"bar rnr"``. Every label has a row of its
    own, so none overlap. Window options as :func:`view`."""
    v = _view_of(trace, nodes, names, window)
    return _svg.render(v, title)


def render_svg(trace: tr.Trace | np.ndarray | View, path: str | Path,
               nodes: Sequence[int | str] | None = None, **kwargs: object) -> Path:
    """Write the ladder as a self-contained SVG file; returns its path.
    Options as :func:`svg_string`."""
    path = Path(path)
    path.write_text(svg_string(trace, nodes, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path


def render_html(trace: tr.Trace | np.ndarray | View, path: str | Path,
                nodes: Sequence[int | str] | None = None, title: str = "rdmasim ladder diagram",
                *, names: dict[int, str] | None = None, **window: object) -> Path:
    """Write the ladder as a self-contained HTML page (no network access needed): the SVG, a
    pane with the headers of the frame clicked (BTH, RETH, AETH, ECN...) and buttons (or the
    arrow keys) to step event by event, later events faded. Window options as :func:`view`."""
    path = Path(path)
    v = _view_of(trace, nodes, names, window)
    path.write_text(_html.render(v, title), encoding="utf-8")
    return path


def mermaid_string(trace: tr.Trace | np.ndarray | View, nodes: Sequence[int | str] | None = None, *,
                   names: dict[int, str] | None = None, title: str | None = None,
                   times: bool = True, **window: object) -> str:
    """The ladder as Mermaid ``sequenceDiagram`` text: a participant per lane, an arrow per
    frame (``->>`` requests, ``-->>`` responses, ``-x``/``--x`` lost), a note per host event or
    discard, ``activate``/``deactivate`` for the timer and RNR-wait bars. ``times=False`` leaves
    the times out of the labels. Window options as :func:`view` (keep it to a few dozen frames:
    Mermaid draws every message at the same spacing)."""
    v = _view_of(trace, nodes, names, window)
    return _mermaid.render(v, title, times=times)


def render_mermaid(trace: tr.Trace | np.ndarray | View, path: str | Path,
                   nodes: Sequence[int | str] | None = None, **kwargs: object) -> Path:
    """Write :func:`mermaid_string` to a file (``.mmd``); returns its path."""
    path = Path(path)
    path.write_text(mermaid_string(trace, nodes, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path
