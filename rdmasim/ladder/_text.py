"""The ladder as text: one line per event, time downwards, plus indented note lines."""

from __future__ import annotations

from rdmasim.ladder._model import fmt_time
from rdmasim.ladder._window import View

# Characters beyond ASCII that text output uses: all in WGL4, so every common monospace font
# (Consolas, Courier New, Menlo, DejaVu Sans Mono, Liberation Mono) draws them.
_UNICODE = {"line": "─", "right": "►", "left": "◄", "x": "×", "to": "→", "dot": "·"}
_ASCII = {"line": "-", "right": ">", "left": "<", "x": "X", "to": "->", "dot": "-"}
#: every non-ASCII character the text output may contain
TEXT_CHARSET = frozenset("─►◄×µ→≈·")


def _ascii(text: str) -> str:
    return text.replace("→", "->").replace("µs", "us").replace("×", "x").replace("≈", "~")


def render(view: View, *, ascii: bool = False, max_lines: int | None = None,
           state: bool = False) -> str:
    """Text of a :class:`View` (see :func:`rdmasim.ladder.render_text`)."""
    g = _ASCII if ascii else _UNICODE
    lanes = view.lanes
    order = {n: i for i, n in enumerate(lanes)}
    label_of = {n: view.name(n) for n in lanes}
    w = max((len(s) for s in label_of.values()), default=1)
    events = view.events
    tw = max((len(fmt_time(e.t_ps)) for e in events), default=8)
    unit = "us" if ascii else "µs"
    head = [f"{'time':>{tw}}  ladder of {', '.join(label_of[n] for n in lanes)}"
            f"   (@ = arrival time in {unit})"]
    if view.description:
        head.append(f"{'':>{tw}}  showing {view.description}")
    head += [f"{'':>{tw}}  ({note})" for note in view.notes]
    pad = " " * (tw + 2)
    body: list[str] = []
    bars_at: dict[int, list[str]] = {}
    for b in view.bars:
        bars_at.setdefault(b.t0_ps, []).append(f"{label_of.get(b.node, b.node)}: {b.label}, until "
                                               f"{fmt_time(b.t1_ps)}")
    last_state: dict[int, str] = {}
    n_events = 0
    for e in events:
        if max_lines is not None and n_events >= max_lines:
            break
        n_events += 1
        t = fmt_time(e.t_ps).rjust(tw)
        notes: list[str] = []
        if not e.frame:
            body.append(f"{t}  {label_of[e.node]:<{w}}  {e.label}")
        else:
            label = e.full_label
            a, b = (e.node, e.peer) if order[e.node] <= order[e.peer] else (e.peer, e.node)
            rightwards = a == e.node
            ln = g["line"]
            if e.dropped is not None:
                body_ = (f"{ln * 2}{label}{ln}{g['x']}" if rightwards else f"{g['x']}{ln}{label}{ln * 2}")
                tail = f"  lost: {e.dropped}"
            else:
                body_ = (f"{ln * 2}{label}{ln * 2}{g['right']}" if rightwards
                         else f"{g['left']}{ln * 2}{label}{ln * 2}")
                tail = f"  @{e.t_arrive_ps / 1e6:.3f}" if e.t_arrive_ps is not None else "  (in flight)"
                if e.discarded:
                    notes.append(f"{label_of[e.peer]} {e.discarded}")
            body.append(f"{t}  {label_of[a]:<{w}} {body_} {label_of[b]}{tail}")
        notes += bars_at.pop(e.t_ps, [])
        if state and e.state != last_state:
            changed = [f"{label_of[n]}: {s}" for n, s in sorted(e.state.items())
                       if n in order and last_state.get(n) != s]
            if changed:
                notes.append("[" + " | ".join(changed) + "]")
            last_state = e.state
        body += [f"{pad}{' ' * w}  {g['dot']} {n}" for n in notes]
    if n_events < len(events):
        body.append(f"... {len(events) - n_events} more events")
    elif view.frames_after:
        body.append(f"... {view.frames_after:,} more frames after this window")
    text = "\n".join(head + body)
    return _ascii(text) if ascii else text
