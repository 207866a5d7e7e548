#!/usr/bin/env python3
"""Fail when a C file under csrc/ includes a header of a higher layer.

The layers, bottom first, are data (LAYERS): a file's layer is its folder under csrc/, and each
public header under csrc/include/rdmasim/ is assigned to a layer in PUBLIC.  A file may include
headers of its own layer and of the layers below it; an include of a higher layer is a violation.
A rank may hold sibling folders (the two transports, RoCE/IB's and Ultra Ethernet's): siblings
share a rank and neither may include the other.
Upward reach goes through handlers the upper layer registers, never an include.

KNOWN lists the upward includes the tree still has (each a debt to remove, named so it cannot
grow unseen).  The check fails on any violation not in KNOWN, and on a KNOWN entry that is gone
(so the list only shrinks).  ``--root DIR`` checks another tree (the test plants a violation in a
copy); ``--no-known`` reports every violation.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# bottom first; the folder under csrc/ names the layer.  A tuple is one rank of sibling layers:
# neither may include the other (transport: RC/UC/UD over the IB transport; uet: Ultra Ethernet).
LAYERS: tuple[str | tuple[str, ...], ...] = ("engine", "codec", "link", "cc", ("transport", "uet"), "workload",
                                             "sim")
# every layer folder, and its rank
RANK: dict[str, int] = {name: i for i, entry in enumerate(LAYERS)
                        for name in ((entry,) if isinstance(entry, str) else entry)}
FOLDERS: frozenset[str] = frozenset(RANK)

# public headers (csrc/include/rdmasim/) by layer
PUBLIC: dict[str, str] = {
    "base.h": "engine",
    "eventq.h": "engine",
    "slab.h": "engine",
    "rng.h": "engine",
    "trace.h": "engine",
    "mutants.h": "engine",
    "packet.h": "codec",
    "pool.h": "codec",
    "telemetry.h": "codec",
    "codec.h": "codec",
    "ib.h": "codec",
    "ib_enums.def": "codec",
    "fabric.h": "link",
    "cc.h": "cc",
    "cc_dcqcn.h": "cc",
    "cc_dctcp.h": "cc",
    "cc_timely.h": "cc",
    "cc_swift.h": "cc",
    "cc_hpcc.h": "cc",
    "cc_ibcc.h": "cc",
    "cc_nscc.h": "cc",
    "verbs.h": "transport",
    "uet.h": "uet",
    "flows.h": "workload",
    "sim.h": "sim",
}

# (including file, included header) pairs still pointing upward
KNOWN: frozenset[tuple[str, str]] = frozenset()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of_file(rel: str) -> str | None:
    """Layer of a file given by its path relative to csrc/ (None: not in a layer)."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) == 3 and parts[1] == "rdmasim":
        return PUBLIC.get(parts[2])
    return parts[0] if parts[0] in FOLDERS else None


def layer_of_include(inc: str, including_dir: str) -> str | None:
    """Layer of an included header as written in the #include line."""
    if inc.startswith("rdmasim/"):
        return PUBLIC.get(inc.removeprefix("rdmasim/"))
    head = inc.split("/")[0]
    if head in FOLDERS:
        return head
    if "/" not in inc:  # a file beside the includer
        return layer_of_file(f"{including_dir}/{inc}" if including_dir else inc)
    return None


def violations(csrc: Path) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """Upward and sibling includes as (file, header, file's layer, header's layer), and problems
    (files in no layer, public headers without a layer, unknown includes)."""
    rank = RANK
    found: list[tuple[str, str, str, str]] = []
    problems: list[str] = []
    for path in sorted(csrc.rglob("*")):
        if path.suffix not in (".c", ".h", ".def") or not path.is_file():
            continue
        rel = path.relative_to(csrc).as_posix()
        mine = layer_of_file(rel)
        if mine is None:
            problems.append(f"csrc/{rel}: in no layer (add its folder to LAYERS or its name to PUBLIC)")
            continue
        including_dir = rel.rsplit("/", 1)[0] if "/" in rel else ""
        for inc in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
            theirs = layer_of_include(inc, including_dir)
            if theirs is None:
                problems.append(f"csrc/{rel}: includes \"{inc}\", which is in no layer")
            elif rank[theirs] > rank[mine] or (rank[theirs] == rank[mine] and theirs != mine):
                found.append((f"csrc/{rel}", inc, mine, theirs))
    return found, problems


def _order() -> str:
    return " < ".join(e if isinstance(e, str) else "{" + ", ".join(e) + "}" for e in LAYERS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="source tree to check (default: this one)")
    ap.add_argument("--no-known", action="store_true", help="report the KNOWN upward includes too")
    args = ap.parse_args(argv)
    csrc = args.root / "csrc"
    if not csrc.is_dir():
        print(f"check_layers: no csrc/ under {args.root}", file=sys.stderr)
        return 2
    found, problems = violations(csrc)
    known = frozenset() if args.no_known else KNOWN
    bad = [v for v in found if (v[0], v[1]) not in known]
    gone = sorted(known - {(v[0], v[1]) for v in found})
    for f, inc, mine, theirs in bad:
        how = "its sibling layer" if RANK[mine] == RANK[theirs] else "the higher layer"
        print(f"{f}: layer {mine} includes \"{inc}\" of {how} {theirs}")
    for f, inc in gone:
        print(f"{f}: KNOWN lists \"{inc}\", which it no longer includes upward: remove the entry")
    for p in problems:
        print(p)
    if bad or gone or problems:
        print(f"check_layers: {len(bad)} upward include(s), {len(gone)} stale KNOWN entr(ies), "
              f"{len(problems)} other problem(s); layers bottom first: {_order()}")
        return 1
    print(f"check_layers: ok ({len(found)} known upward includes left; layers: {_order()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
