#!/usr/bin/env python3
"""Fail when a module of rdmasim/ imports one of a higher layer (the Python side of check_layers.py).

The layers, bottom first, are data (LAYERS): each names the modules and packages it holds, and a
module's layer is the entry naming it or its closest enclosing package.  Every import counts: at
module level, inside a function (it runs when the function does) and under ``if TYPE_CHECKING:``
(an annotation of a higher layer's class still ties the lower module to it; name a Protocol of
``rdmasim._protocols`` instead).  A module may import its own layer and the layers below; an import
of a higher layer is a violation, and so is an import of an old module path kept only for users
(``rdmasim._moved.MOVED``): the package's own modules import the new path.

KNOWN lists the upward imports the tree still has (each a debt to remove, named so it cannot grow
unseen); the check fails on a violation not in KNOWN and on a KNOWN entry that is gone.  The files
are read with ``ast``: nothing is imported, so the check runs without the compiled core.
``--root DIR`` checks another tree (the tests plant violations in a copy).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

# bottom first: (layer, the modules and packages in it).  A package entry covers its submodules.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # what every layer uses: the compiled core's errors, units, argument checks, tables, and the
    # structural types (Protocols) through which a lower layer names a simulation, node or link
    ("base", ("rdmasim._protocols", "rdmasim._moved", "rdmasim.errors", "rdmasim.units", "rdmasim.checks",
              "rdmasim.report", "rdmasim.progress", "rdmasim._userfile")),
    # bytes on the wire and the trace records of frames
    ("codec", ("rdmasim.codec", "rdmasim.trace")),
    # switches, links' drop rules and failures, the InfiniBand link layer, routing tables
    ("fabric", ("rdmasim.fabric",)),
    # congestion-control algorithms, their parameters and the C plug-ins
    ("cc", ("rdmasim.cc",)),
    # the simulation handle, hosts and NICs, the verbs objects, the Ultra Ethernet transport's knobs
    ("transport", ("rdmasim.transport", "rdmasim.verbs")),
    # bulk flows and the traffic that makes them
    ("workload", ("rdmasim.workload",)),
    # the Simulator a user drives, and what it runs beside it (capture, stepping)
    ("sim", ("rdmasim.sim", "rdmasim.capture", "rdmasim.stepping", "rdmasim.partition", "rdmasim.mpi")),
    # builders of whole simulations
    ("build", ("rdmasim.topology", "rdmasim.peer")),
    # what users run: the package's front door, scenario files, sweeps, importers, plots, tools
    ("apps", ("rdmasim", "rdmasim.__main__", "rdmasim.cli", "rdmasim.scenario", "rdmasim.sweep",
              "rdmasim.testing", "rdmasim.pyverbs", "rdmasim.fabricd", "rdmasim.hpcc", "rdmasim.htsim",
              "rdmasim.plots", "rdmasim.ladder", "rdmasim.demo", "rdmasim.demo_scenarios",
              "rdmasim.analytic", "rdmasim.analytic_maxmin", "rdmasim.results")),
)
RANK: dict[str, int] = {name: i for i, (name, _) in enumerate(LAYERS)}

# (importing module, imported module) pairs still pointing upward
KNOWN: frozenset[tuple[str, str]] = frozenset()


def modules(root: Path) -> dict[str, Path]:
    """Every module of the rdmasim package under ``root`` by dotted name (a package by its name)."""
    mods: dict[str, Path] = {}
    for p in sorted((root / "rdmasim").rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = p
    return mods


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports_of(mod: str, path: Path, mods: dict[str, Path], *, type_only: bool = True,
               moved_paths: dict[str, str] | None = None) -> set[str]:
    """The rdmasim modules ``mod`` imports: at module level, inside functions and (``type_only``)
    under ``if TYPE_CHECKING:``.  ``moved_paths``: old module path -> new; an old path (or a
    name under an old package path) whose new path is a module counts as a module too.  A
    package's own parents do not count (they are imported first anyway)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip: set[int] = set()
    if not type_only:
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node)
                for stmt in node.body for n in ast.walk(stmt)}
    known = mods.keys()
    moved_paths = moved_paths or {}

    def old(name: str) -> bool:  # the old path of a module
        for o, new in moved_paths.items():
            if name == o or name.startswith(o + "."):
                return new + name[len(o):] in known
        return False

    package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            subs = [f"{name}.{a.name}" for a in node.names
                    if f"{name}.{a.name}" in known or old(f"{name}.{a.name}")]
            targets = subs if len(subs) == len(node.names) else [name, *subs]
        for t in targets:
            if (t in known or old(t)) and t != mod and not mod.startswith(t + "."):
                out.add(t)
    return out


def import_graph(root: Path, *, type_only: bool = True) -> dict[str, set[str]]:
    """module -> the rdmasim modules it imports (function-level and, with ``type_only``,
    TYPE_CHECKING imports included)."""
    mods = modules(root)
    return {m: imports_of(m, p, mods, type_only=type_only) for m, p in mods.items()}


def moved(root: Path) -> dict[str, str]:
    """``rdmasim._moved.MOVED`` (old module path -> new), read as a literal."""
    path = root / "rdmasim" / "_moved.py"
    if not path.is_file():
        return {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "MOVED" and node.value is not None:
            return dict(ast.literal_eval(node.value))
    return {}


def layer_of(mod: str) -> str | None:
    """The layer holding ``mod``: the entry naming it or its closest enclosing package."""
    best: tuple[int, str] | None = None
    for name, members in LAYERS:
        for m in members:
            inside = mod == m or (m != "rdmasim" and mod.startswith(m + "."))
            if inside and (best is None or len(m) > best[0]):
                best = (len(m), name)
    return best[1] if best else None


def violations(root: Path) -> tuple[list[tuple[str, str, str, str]], list[str]]:
    """Upward imports as (module, imported, module's layer, imported's layer), and problems
    (modules in no layer, imports of moved paths)."""
    mods = modules(root)
    old = moved(root)
    found: list[tuple[str, str, str, str]] = []
    problems: list[str] = []
    for mod, path in mods.items():
        mine = layer_of(mod)
        if mine is None:
            problems.append(f"{mod}: in no layer (add it to LAYERS in .ci/check_py_layers.py)")
            continue
        for t in sorted(imports_of(mod, path, mods, moved_paths=old)):
            gone = next((o for o in old if t == o or t.startswith(o + ".")), None)
            if gone is not None:
                now = old[gone] + t[len(gone):]
                problems.append(f"{mod}: imports {t}, the old path of {now} (import that)")
                continue
            theirs = layer_of(t)
            if theirs is not None and RANK[theirs] > RANK[mine]:
                found.append((mod, t, mine, theirs))
    return found, problems


def _order() -> str:
    return " < ".join(name for name, _ in LAYERS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="source tree to check (default: this one)")
    ap.add_argument("--no-known", action="store_true", help="report the KNOWN upward imports too")
    args = ap.parse_args(argv)
    if not (args.root / "rdmasim").is_dir():
        print(f"check_py_layers: no rdmasim/ under {args.root}", file=sys.stderr)
        return 2
    found, problems = violations(args.root)
    known = frozenset() if args.no_known else KNOWN
    bad = [v for v in found if (v[0], v[1]) not in known]
    gone = sorted(known - {(v[0], v[1]) for v in found})
    for mod, t, mine, theirs in bad:
        print(f"{mod}: layer {mine} imports {t} of the higher layer {theirs}")
    for mod, t in gone:
        print(f"{mod}: KNOWN lists {t}, which it no longer imports upward: remove the entry")
    for p in problems:
        print(p)
    if bad or gone or problems:
        print(f"check_py_layers: {len(bad)} upward import(s), {len(gone)} stale KNOWN entr(ies), "
              f"{len(problems)} other problem(s); layers bottom first: {_order()}")
        return 1
    print(f"check_py_layers: ok ({len(found)} known upward imports left; layers: {_order()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
