"""The ladder as a Mermaid sequence diagram (for slides, READMEs and wikis that render Mermaid)."""

from __future__ import annotations

from rdmasim.ladder._model import fmt_time
from rdmasim.ladder._window import View

# characters Mermaid reads as syntax inside a message or note, as its entity codes ("%%" starts a
# comment or a %%{init: ...}%% directive, which Mermaid finds anywhere in the text)
_ESCAPE = {"#": "#35;", ";": "#59;", "<": "#lt;", ">": "#gt;", "%": "#37;"}


def esc(text: str) -> str:
    """Text safe in a Mermaid message or note: syntax characters as entity codes, and every line
    break or other non-printing character (``\\r``, U+2028...) as a space, so the text stays on
    its statement's line."""
    return "".join(_ESCAPE.get(c, c if c.isprintable() else " ") for c in text)


def render(view: View, title: str | None = None, *, times: bool = True) -> str:
    """Mermaid ``sequenceDiagram`` text of a :class:`View` (see
    :func:`rdmasim.ladder.mermaid_string`)."""
    ids = {n: f"n{i}" for i, n in enumerate(view.lanes)}
    first = view.lanes[0] if view.lanes else -1
    lines = ["sequenceDiagram"]
    if title:
        lines.append(f"    title {esc(title)}")
    for n in view.lanes:
        lines.append(f"    participant {ids[n]} as {esc(view.name(n))}")
    if view.description:
        lines.append(f"    Note over {ids[first]}: showing {esc(view.description)}")

    def side(node: int) -> str:
        return f"left of {ids[node]}" if node == first else f"right of {ids[node]}"

    items: list[tuple[int, int, int, str]] = []  # (t, order, seq, line)
    for e in view.events:
        when = f"{fmt_time(e.t_ps)} " if times else ""
        if not e.frame:
            items.append((e.t_ps, 1, len(items), f"    Note {side(e.node)}: {esc(when + e.label)}"))
            continue
        dashed = "--" if e.style in ("ack", "nak", "cnp") or e.style == "data" and _is_reply(e.label) else "-"
        if e.dropped is not None:
            arrow = f"{dashed}x"
            text = f"{when}{e.full_label} (lost: {e.dropped})"
        else:
            arrow = f"{dashed}>>"
            text = when + e.full_label
        items.append((e.t_ps, 1, len(items), f"    {ids[e.node]}{arrow}{ids[e.peer]}: {esc(text)}"))
        if e.discarded and e.t_arrive_ps is not None:
            items.append((e.t_arrive_ps, 0, len(items),
                          f"    Note {side(e.peer)}: {esc(f'psn {_psn(e.label)} ' + e.discarded)}"))
    for b in view.bars:
        if b.node not in ids:
            continue
        items.append((b.t0_ps, 2, len(items), f"    activate {ids[b.node]}"))
        items.append((b.t0_ps, 2, len(items), f"    Note {side(b.node)}: {esc(b.label)}"))
        items.append((b.t1_ps, 0 if b.t1_ps > b.t0_ps else 3, len(items), f"    deactivate {ids[b.node]}"))
    items.sort(key=lambda it: (it[0], it[1], it[2]))
    lines += [line for *_, line in items]
    if view.frames_after:
        lines.append(f"    Note over {ids[first]}: {view.frames_after} more frames after this window")
    return "\n".join(lines) + "\n"


def _is_reply(label: str) -> bool:
    return label.startswith("READ_RESP")


def _psn(label: str) -> str:
    for part in label.split():
        if part.startswith("psn="):
            return part[4:]
    return "?"
