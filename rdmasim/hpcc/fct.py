"""A results folder's flows in the HPCC ns-3 simulator's ``fct.txt`` layout, so the authors' analysis
scripts (``analysis/fct_analysis.py``) read rdmasim results.

One line per finished flow, as ns-3's ``qp_finish`` writes it: ``sip dip sport dport size start_time
fct standalone_fct``: IPs as 8 hex digits (ns-3's ``node_id_to_ip``: ``0x0b000001 + (id / 256) <<
16 + (id % 256) << 8``), the source port numbered per host pair from 10000 in flow order, the
size in bytes, times in nanoseconds. ``standalone_fct`` is the run's ideal FCT (``ideal_fct_ps``):
with the default ``outputs.ideal_fct = "wire"`` it counts, as ns-3 does, every packet's headers and
a packet's serialisation per hop; a ``"payload"`` run (or one from before the key) counts the
payload alone, and a note says so. A flow that did not finish has no line (ns-3 writes a line when
a QP completes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rdmasim.results import read_table

#: the columns of one fct.txt line
COLUMNS = ("sip", "dip", "sport", "dport", "size", "start_time", "fct", "standalone_fct")
#: first source port of each host pair (third.cc)
FIRST_SPORT = 10000
#: dport when the scenario does not say (fct_analysis.py's "normal" flows)
DEFAULT_DPORT = 100
_DPORT = re.compile(r"^# \S+:\d+ dport (\d+)\s*$")
_HOST_ID = re.compile(r"^h(\d+)$")


def node_ip(node_id: int) -> int:
    """The IPv4 address ns-3 gives host ``node_id`` (third.cc's node_id_to_ip)."""
    return 0x0B000001 + (node_id // 256) * 0x10000 + (node_id % 256) * 0x100


def ip_node(ip: int) -> int:
    """The node id of an ns-3 host address (third.cc's ip_to_node_id)."""
    return (ip >> 8) & 0xFFFF


@dataclass(frozen=True)
class FctLine:
    """One parsed fct.txt line."""

    sip: int
    dip: int
    sport: int
    dport: int
    size: int
    start_time: int
    fct: int
    standalone_fct: int


def parse_fct(text: str) -> list[FctLine]:
    """The lines of an fct.txt (the layout :func:`export_fct` writes and ns-3 writes)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != len(COLUMNS):
            raise ValueError(
                f"fct.txt:{n}: {len(parts)} columns (allowed: {len(COLUMNS)}: {' '.join(COLUMNS)})"
            )
        out.append(FctLine(int(parts[0], 16), int(parts[1], 16), *(int(p) for p in parts[2:])))
    return out


def _dports(folder: Path, n: int) -> tuple[list[int], bool]:
    """The dport of each flow from the ``# FILE:LINE dport N`` comments ``rdmasim import hpcc`` writes
    before each ``[[flows]]`` (in the folder's scenario.toml); else :data:`DEFAULT_DPORT`."""
    sc = folder / "scenario.toml"
    found = []
    if sc.is_file():
        found = [
            int(m.group(1))
            for line in sc.read_text(encoding="utf-8", errors="replace").splitlines()
            if (m := _DPORT.match(line))
        ]
    if len(found) == n:
        return found, True
    return [DEFAULT_DPORT] * n, False


def _ns(ps: int) -> int:
    return (int(ps) + 500) // 1000


def _ideal_note(folder: Path) -> str:
    """What the standalone_fct column is: the run's ideal FCT definition (metadata.json)."""
    import json

    try:
        ideal = json.loads((folder / "metadata.json").read_text(encoding="utf-8")).get("ideal_fct")
    except (OSError, ValueError, AttributeError):
        ideal = None
    if ideal == "wire":
        return "standalone_fct: the run's ideal FCT 'wire' (headers and a packet per hop, as ns-3's)"
    what = (f"the run's ideal FCT {ideal!r}" if ideal
            else "the ideal FCT of a run older than outputs.ideal_fct")
    return (f"standalone_fct: {what}, payload bytes only (ns-3 also counts headers and a packet per hop: "
            "run with outputs.ideal_fct = 'wire' to compare slowdowns)")


def export_fct(folder: str | Path) -> tuple[str, list[str]]:
    """The fct.txt text of a results folder and notes about it (flows left out, dports assumed)."""
    folder = Path(folder)
    df = read_table(folder, "flows").sort_values("flow_id")
    names = list(df["src"]) + list(df["dst"])
    if all(_HOST_ID.match(str(x)) for x in names):
        ids = {str(x): int(_HOST_ID.match(str(x)).group(1)) for x in names}  # type: ignore[union-attr]
        how = "the id in each host name h<ID>"
    else:
        ids = {x: i for i, x in enumerate(sorted(set(map(str, names))))}
        how = "each host's position in name order (names are not h<ID>)"
    dports, from_file = _dports(folder, len(df))
    notes = [f"node ids: {how}", _ideal_note(folder)]
    if not from_file:
        notes.append(
            f"dport {DEFAULT_DPORT} for every flow (the scenario was not written by `rdmasim import hpcc`)"
        )
    sports: dict[tuple[int, int], int] = {}
    lines, skipped = [], 0
    for row, dport in zip(df.itertuples(index=False), dports, strict=True):
        s, d = ids[str(row.src)], ids[str(row.dst)]
        sport = sports.get((s, d), FIRST_SPORT)
        sports[(s, d)] = sport + 1
        if row.status != "ok" or pd.isna(row.fct_ps):
            skipped += 1
            continue
        lines.append(
            f"{node_ip(s):08x} {node_ip(d):08x} {sport} {dport} {int(row.size_bytes)} "
            f"{_ns(row.start_ps)} {_ns(row.fct_ps)} {_ns(row.ideal_fct_ps)}"
        )
    if skipped:
        notes.append(f"{skipped} flow(s) that did not finish have no line (as in ns-3)")
    return "".join(x + "\n" for x in lines), notes
