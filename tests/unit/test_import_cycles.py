"""No import circles among rdmasim's modules (read with ast, so nothing is imported).

An import inside ``if TYPE_CHECKING:`` is for annotations only and does not count; a function-local
import does (it runs).  Importing a package's own parents (``from rdmasim import _core``) does not
count either: a submodule's parents are always imported first.

Any circle fails. The direction the tree keeps (docs/design.md "Layers", Python): ``rdmasim._handle``
owns the core handle, hosts and links; ``rdmasim.verbs`` and ``rdmasim.capture`` depend on it;
``rdmasim.sim`` (the Simulator) depends on all of them, and nothing below it imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules(root: Path) -> dict[str, Path]:
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


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the rdmasim modules it imports at run time."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node)
                for stmt in node.body for n in ast.walk(stmt)}
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
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
                subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [name, *subs]
            for t in targets:
                if t in mods and t != mod and not mod.startswith(t + "."):
                    graph[mod].add(t)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def test_no_import_circle() -> None:
    found = circles(import_graph(ROOT))
    assert not found, f"import circles: {[sorted(c) for c in found]}"


def test_the_simulator_is_above_the_verbs_and_the_core_handle() -> None:
    """Only the user-facing layers import ``rdmasim.sim``: the core handle, the verbs objects,
    capture, flows and fabric do not (not even inside a function)."""
    graph = import_graph(ROOT)
    below = ["rdmasim._handle", "rdmasim.capture", "rdmasim.flows", "rdmasim.fabric", "rdmasim.trace",
             *(m for m in graph if m.startswith("rdmasim.verbs"))]
    assert not [m for m in below if "rdmasim.sim" in graph[m]]
    assert graph["rdmasim._handle"].isdisjoint(m for m in graph if m.startswith("rdmasim.verbs"))
    assert "rdmasim._handle" in graph["rdmasim.verbs.device"]


def test_scenario_load_and_traffic_do_not_import_each_other() -> None:
    graph = import_graph(ROOT)
    assert "rdmasim.scenario.model" in graph["rdmasim.scenario.traffic"]
    assert "rdmasim.scenario.load" not in graph["rdmasim.scenario.traffic"]


def test_finder_flags_a_planted_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "rdmasim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from rdmasim.sub import b\nfrom rdmasim import d\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("import rdmasim.a\n")
    # an annotation-only import back to a does not close a circle
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                              "    from rdmasim import a\n")
    (pkg / "e.py").write_text("from rdmasim import d\n")
    found = circles(import_graph(tmp_path))
    assert found == [frozenset({"rdmasim.a", "rdmasim.sub.b", "rdmasim.c"})]
