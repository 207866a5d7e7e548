"""Reading an htsim connection matrix (``.cm``), as csg-htsim's ``ConnectionMatrix::load`` reads it.

The format: header lines ``Nodes N``, ``Connections C`` and optionally ``Triggers T`` and
``Failures F`` (and ``#`` comment lines) before the first record; then one record per line:

* a connection ``SRC->DST`` followed by ``start PS`` (picoseconds) or ``trigger ID``, ``size BYTES``,
  and optionally ``id N`` (nonzero), ``send_done_trigger ID``, ``recv_done_trigger ID``,
  ``prio N`` and the flag ``addon``;
* a trigger ``trigger id ID oneshot|multishot|barrier [count N]``;
* a failure ``failure switch_type TOR|AGG|CORE switch_id N link_id N``.

Everything htsim refuses is refused here (:class:`HtsimInputError`, one line ``FILE:LINE: ...``),
plus what htsim leaves undefined (a connection without ``size``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: the largest size of a flow (rdmasim.traffic.table.MAX_FLOW_SIZE)
MAX_SIZE = (1 << 31) - 1
#: htsim's default connection priority (connection_matrix.cpp)
DEFAULT_PRIO = 2000000
TRIGGER_TYPES = ("oneshot", "multishot", "barrier")
SWITCH_TYPES = ("TOR", "AGG", "CORE")


class HtsimInputError(ValueError):
    """A problem in an htsim input: ``FILE:LINE: what (allowed: ...)``; exit status 2."""


@dataclass
class Conn:
    """One connection record."""

    line: int
    src: int
    dst: int
    size: int
    start_ps: int | None  # None: started by ``trigger``
    flow_id: int = 0
    trigger: int = 0
    send_done_trigger: int = 0
    recv_done_trigger: int = 0
    prio: int = DEFAULT_PRIO
    addon: bool = False


@dataclass
class Trigger:
    """One ``trigger`` record."""

    line: int
    id: int
    type: str
    count: int = 0


@dataclass
class ConnectionMatrix:
    """A parsed ``.cm`` file."""

    path: Path
    nodes: int = 0
    conns: list[Conn] = field(default_factory=list)
    triggers: dict[int, Trigger] = field(default_factory=dict)
    #: (line, text) of each failure record
    failures: list[tuple[int, str]] = field(default_factory=list)
    #: (line, text) of header lines htsim skips without reading
    skipped: list[tuple[int, str]] = field(default_factory=list)
    #: start times that had a fraction of a picosecond (htsim truncates them)
    truncated_starts: int = 0


def _int(where: str, key: str, text: str, lo: int, hi: int) -> int:
    try:
        v = int(text)
    except ValueError:
        raise HtsimInputError(f"{where}: {key} {text!r}: not an integer (allowed: {lo}..{hi})") from None
    if not lo <= v <= hi:
        raise HtsimInputError(f"{where}: {key} {v}: out of range (allowed: {lo}..{hi})")
    return v


def _arg(where: str, toks: list[str], i: int) -> str:
    if i >= len(toks):
        raise HtsimInputError(f"{where}: {toks[i - 1]}: no value follows (allowed: {toks[i - 1]} VALUE)")
    return toks[i]


def _start_ps(where: str, text: str, cm: ConnectionMatrix) -> int:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not 0 <= v < 2**63:
        raise HtsimInputError(f"{where}: start {text!r}: not a time (allowed: picoseconds >= 0)")
    if v != int(v):
        cm.truncated_starts += 1
    return int(v)


def _conn(where: str, line: int, toks: list[str], cm: ConnectionMatrix) -> Conn:
    a, _, b = toks[0].partition("->")
    src = _int(where, "source host", a, 0, 2**31 - 1)
    dst = _int(where, "destination host", b, 0, 2**31 - 1)
    c = Conn(line, src, dst, 0, None)
    seen: set[str] = set()
    i = 1
    while i < len(toks):
        key = toks[i]
        if key in seen:
            raise HtsimInputError(f"{where}: {key}: given twice in one connection (allowed: once)")
        seen.add(key)
        if key == "addon":
            c.addon = True
            i += 1
            continue
        if key not in ("start", "size", "id", "trigger", "send_done_trigger", "recv_done_trigger", "prio"):
            raise HtsimInputError(
                f"{where}: {key!r}: unknown connection field (allowed: start, size, id, trigger, "
                "send_done_trigger, recv_done_trigger, prio, addon)"
            )
        val = _arg(where, toks, i + 1)
        if key == "start":
            c.start_ps = _start_ps(where, val, cm)
        elif key == "size":
            c.size = _int(where, "size", val, 1, MAX_SIZE)
        elif key == "id":
            c.flow_id = _int(where, "id", val, 1, 2**32 - 1)
        elif key == "prio":
            c.prio = _int(where, "prio", val, -(2**31), 2**31 - 1)
        else:
            setattr(c, key, _int(where, key, val, 1, 2**32 - 1))
        i += 2
    if "size" not in seen:
        raise HtsimInputError(f"{where}: {toks[0]} has no size (allowed: size BYTES, 1..{MAX_SIZE})")
    if "start" in seen and c.trigger:
        raise HtsimInputError(
            f"{where}: {toks[0]} has both start and trigger {c.trigger} (allowed: one of them)"
        )
    if "start" not in seen and not c.trigger:
        raise HtsimInputError(
            f"{where}: {toks[0]} has no start and no trigger (allowed: start PS or trigger ID)"
        )
    if c.trigger and not c.flow_id:
        raise HtsimInputError(
            f"{where}: {toks[0]} starts on trigger {c.trigger} but has no id (allowed: id N, N >= 1)"
        )
    return c


def _trigger(where: str, line: int, toks: list[str]) -> Trigger:
    t = Trigger(line, 0, "")
    i = 1
    while i < len(toks):
        key = toks[i]
        if key in TRIGGER_TYPES:
            if t.type:
                raise HtsimInputError(f"{where}: {key}: a second trigger type after {t.type} (allowed: one)")
            t.type = key
            i += 1
        elif key in ("id", "count"):
            v = _int(where, key, _arg(where, toks, i + 1), 1 if key == "id" else 0, 2**32 - 1)
            setattr(t, key, v)
            i += 2
        else:
            raise HtsimInputError(
                f"{where}: {key!r}: unknown trigger field (allowed: id, count, {', '.join(TRIGGER_TYPES)})"
            )
    if not t.id:
        raise HtsimInputError(f"{where}: trigger with no id (allowed: id N, N >= 1)")
    if not t.type:
        raise HtsimInputError(f"{where}: trigger {t.id} has no type (allowed: {', '.join(TRIGGER_TYPES)})")
    return t


def read_cm(path: str | Path) -> ConnectionMatrix:
    """Parse a ``.cm`` file; :class:`HtsimInputError` or OSError on a problem."""
    p = Path(path)
    if not p.is_file():
        raise HtsimInputError(f"{p}: no such file (allowed: an htsim connection matrix, .cm)")
    text = p.read_text(encoding="utf-8", errors="replace")
    cm = ConnectionMatrix(p)
    declared: dict[str, int] = {}
    in_header = True
    for n, raw in enumerate(text.splitlines(), 1):
        toks = raw.split()
        where = f"{p.name}:{n}"
        if not toks:
            continue
        head = toks[0]
        is_record = "->" in head or head in ("trigger", "failure")
        if in_header and not is_record:
            if head.startswith("#"):
                continue
            if head in ("Nodes", "Connections", "Triggers", "Failures"):
                val = toks[1] if len(toks) > 1 else ""
                declared[head] = _int(where, head, val, 1 if head == "Nodes" else 0, 2**31 - 1)
            else:
                cm.skipped.append((n, raw.strip()))
            continue
        in_header = False
        if "->" in head:
            cm.conns.append(_conn(where, n, toks, cm))
        elif head == "trigger":
            t = _trigger(where, n, toks)
            if t.id in cm.triggers:
                raise HtsimInputError(
                    f"{where}: trigger {t.id}: defined again (first on line {cm.triggers[t.id].line}; "
                    "allowed: once)"
                )
            cm.triggers[t.id] = t
        elif head == "failure":
            cm.failures.append((n, raw.strip()))
        else:
            raise HtsimInputError(
                f"{where}: {head!r}: not a record (allowed after the first record: SRC->DST ..., "
                "trigger ..., failure ...; htsim reads comments and header lines only before it)"
            )
    if "Nodes" not in declared:
        raise HtsimInputError(f"{p.name}: no 'Nodes N' line (allowed: Nodes N before the first record)")
    cm.nodes = declared["Nodes"]
    for key, got in (
        ("Connections", len(cm.conns)),
        ("Triggers", len(cm.triggers)),
        ("Failures", len(cm.failures)),
    ):
        want = declared.get(key, 0)
        if want != got:
            raise HtsimInputError(
                f"{p.name}: {key} {want}: the file has {got} such record(s) (allowed: {key} {got}; htsim "
                "refuses a mismatch)"
            )
    for c in cm.conns:
        for key in ("trigger", "send_done_trigger", "recv_done_trigger"):
            tid = getattr(c, key)
            if tid and tid not in cm.triggers:
                raise HtsimInputError(
                    f"{p.name}:{c.line}: {key} {tid}: no 'trigger id {tid} ...' record "
                    f"(allowed: {', '.join(str(i) for i in sorted(cm.triggers)) or 'none defined'})"
                )
    return cm
