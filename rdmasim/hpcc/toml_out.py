"""Writing a scenario file: tables of plain values, with comments, as TOML text (the standard
library reads TOML but does not write it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Table:
    """One ``[name]`` (or ``[[name]]`` with ``array``) table; ``comment`` goes on a line above it,
    ``after`` maps a key to a comment at the end of its line."""

    name: str
    values: dict[str, Any]
    array: bool = False
    comment: str = ""
    after: dict[str, str] = field(default_factory=dict)


def value(x: Any) -> str:
    """A TOML value: bool, int, float, str, list or dict (an inline table)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float)):
        return repr(x)
    if isinstance(x, str):
        return json.dumps(x)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(value(i) for i in x) + "]"
    if isinstance(x, dict):
        return "{ " + ", ".join(f"{k} = {value(i)}" for k, i in x.items()) + " }"
    raise TypeError(f"no TOML form for {x!r}")


def render(header: list[str], tables: list[Table]) -> str:
    """``header`` as ``#`` comment lines, then every table in order."""
    lines = [f"# {h}".rstrip() for h in header]
    for t in tables:
        lines.append("")
        if t.comment:
            lines.append(f"# {t.comment}")
        lines.append(f"[[{t.name}]]" if t.array else f"[{t.name}]")
        for k, v in t.values.items():
            note = f"  # {t.after[k]}" if k in t.after else ""
            lines.append(f"{k} = {value(v)}{note}")
    return "\n".join(lines) + "\n"
