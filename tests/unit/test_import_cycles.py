"""No import circles among rdmasim's modules (read with ast, so nothing is imported).

Every import counts: at module level, inside a function (it runs when the function does) and under
``if TYPE_CHECKING:`` (an annotation names the class, which ties the two modules as much as a call
does; a lower layer names a Protocol of ``rdmasim._protocols`` instead).  Importing a package's own
parents (``from rdmasim import _core``) does not count: a submodule's parents are always imported
first.  The graph is ``.ci/check_py_layers.py``'s, which also checks the layer order.

Any circle fails. The direction the tree keeps (docs/design.md "Layers", Python): ``rdmasim._handle``
owns the core handle, hosts and links; ``rdmasim.verbs`` and ``rdmasim.capture`` depend on it;
``rdmasim.sim`` (the Simulator) depends on all of them, and nothing below it imports it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _layers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_py_layers", ROOT / ".ci" / "check_py_layers.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the rdmasim modules it imports (function-level and TYPE_CHECKING imports too)."""
    graph: dict[str, set[str]] = _layers().import_graph(root)
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
    capture, flows and fabric do not (not even inside a function or for annotations)."""
    graph = import_graph(ROOT)
    packages = ("rdmasim.verbs", "rdmasim.fabric", "rdmasim.cc", "rdmasim.transport")
    below = ["rdmasim.capture", "rdmasim.workload.flows", "rdmasim.trace", "rdmasim.stepping",
             *(m for m in graph if m in packages or m.startswith(tuple(p + "." for p in packages)))]
    assert not [m for m in below if "rdmasim.sim" in graph[m]]
    assert graph["rdmasim.transport.handle"].isdisjoint(m for m in graph if m.startswith("rdmasim.verbs"))
    assert "rdmasim.transport.handle" in graph["rdmasim.verbs.device"]


def test_bulk_flows_take_the_irn_window_from_the_transport_not_the_verbs_objects() -> None:
    """The workload builds QP pairs in C; IRN's window rule is the transport's (one implementation),
    which the verbs QP uses too."""
    graph = import_graph(ROOT)
    assert "rdmasim.transport.irn" in graph["rdmasim.workload.flows"]
    assert "rdmasim.transport.irn" in graph["rdmasim.verbs.qp"]
    verbs_objects = [m for m in graph["rdmasim.workload.flows"] if m.startswith("rdmasim.verbs")]
    assert verbs_objects == ["rdmasim.verbs.enums"]  # the WC status names only


def test_scenario_load_and_traffic_do_not_import_each_other() -> None:
    graph = import_graph(ROOT)
    assert "rdmasim.scenario.model" in graph["rdmasim.scenario.traffic"]
    assert "rdmasim.scenario.load" not in graph["rdmasim.scenario.traffic"]


def test_finder_flags_a_planted_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "rdmasim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from rdmasim.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("import rdmasim.a\n")
    (pkg / "e.py").write_text("from rdmasim import a\n")  # into the circle, not part of it
    found = circles(import_graph(tmp_path))
    assert found == [frozenset({"rdmasim.a", "rdmasim.sub.b", "rdmasim.c"})]


def test_finder_counts_annotation_only_imports(tmp_path: Path) -> None:
    """An import under ``if TYPE_CHECKING:`` back to a module that imports this one is a circle:
    the annotation names a class of the layer above."""
    pkg = tmp_path / "rdmasim"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from rdmasim import d\n")
    (pkg / "d.py").write_text("import typing\n\nif typing.TYPE_CHECKING:\n    from rdmasim.a import A\n")
    found = circles(import_graph(tmp_path))
    assert found == [frozenset({"rdmasim.a", "rdmasim.d"})]
