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
  40), a fifth of them before it;
* ``max_frames``: at most this many frames (0 or None: all);
* ``focus=True``: a long trace (more than 200 frames) with no other window focuses on its first
  loss, NAK, timeout or error (60 frames), and says so in the output. ``rdmasim trace`` does this.

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
    "render_mermaid", "render_svg", "render_text", "rnr_timer_text", "short_opcode", "svg_string",
    "view",
]



def _records(trace: tr.Trace | np.ndarray) -> np.ndarray:
    recs = trace.to_numpy() if isinstance(trace, tr.Trace) else np.asarray(trace)
    return recs[recs["kind"] != tr.PFC]  # switch PFC decisions: not drawn


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
    lad = build(trace, names)
    return select(lad, nodes, start=start if start is not None else start_ps,
                  end=end if end is not None else end_ps, around=around, qp=qp,
                  max_frames=max_frames, focus=focus)


def render_text(trace: tr.Trace | np.ndarray, nodes: Sequence[int | str] | None = None, *,
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
    v = view(trace, nodes, names=names, **window)  # type: ignore[arg-type]
    return _text.render(v, ascii=ascii, max_lines=max_lines, state=state)


def svg_string(trace: tr.Trace | np.ndarray, nodes: Sequence[int | str] | None = None, *,
               names: dict[int, str] | None = None, title: str | None = None,
               **window: object) -> str:
    """The ladder as a self-contained SVG document (a string), with its legend and a "not to
    scale" note. One ``class="arrow ..."`` line per frame; lost frames end in a cross
    (``class="drop-x"``); bars ``class="bar rto"`` / ``"bar rnr"``. Every label has a row of its
    own, so none overlap. Window options as :func:`view`."""
    v = view(trace, nodes, names=names, **window)  # type: ignore[arg-type]
    return _svg.render(v, title)


def render_svg(trace: tr.Trace | np.ndarray, path: str | Path,
               nodes: Sequence[int | str] | None = None, **kwargs: object) -> Path:
    """Write the ladder as a self-contained SVG file; returns its path.
    Options as :func:`svg_string`."""
    path = Path(path)
    path.write_text(svg_string(trace, nodes, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path


def render_html(trace: tr.Trace | np.ndarray, path: str | Path,
                nodes: Sequence[int | str] | None = None, title: str = "rdmasim ladder diagram",
                *, names: dict[int, str] | None = None, **window: object) -> Path:
    """Write the ladder as a self-contained HTML page (no network access needed): the SVG, a
    pane with the headers of the frame clicked (BTH, RETH, AETH, ECN...) and buttons (or the
    arrow keys) to step event by event, later events faded. Window options as :func:`view`."""
    path = Path(path)
    v = view(trace, nodes, names=names, **window)  # type: ignore[arg-type]
    path.write_text(_html.render(v, title), encoding="utf-8")
    return path


def mermaid_string(trace: tr.Trace | np.ndarray, nodes: Sequence[int | str] | None = None, *,
                   names: dict[int, str] | None = None, title: str | None = None,
                   times: bool = True, **window: object) -> str:
    """The ladder as Mermaid ``sequenceDiagram`` text: a participant per lane, an arrow per
    frame (``->>`` requests, ``-->>`` responses, ``-x``/``--x`` lost), a note per host event or
    discard, ``activate``/``deactivate`` for the timer and RNR-wait bars. ``times=False`` leaves
    the times out of the labels. Window options as :func:`view` (keep it to a few dozen frames:
    Mermaid draws every message at the same spacing)."""
    v = view(trace, nodes, names=names, **window)  # type: ignore[arg-type]
    return _mermaid.render(v, title, times=times)


def render_mermaid(trace: tr.Trace | np.ndarray, path: str | Path,
                   nodes: Sequence[int | str] | None = None, **kwargs: object) -> Path:
    """Write :func:`mermaid_string` to a file (``.mmd``); returns its path."""
    path = Path(path)
    path.write_text(mermaid_string(trace, nodes, **kwargs), encoding="utf-8")  # type: ignore[arg-type]
    return path
