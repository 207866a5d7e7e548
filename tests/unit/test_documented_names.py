"""Every rdmasim name the README, the docs and the examples use in code imports.

The names are collected from the code blocks of README.md, examples/README.md and docs/**/*.md,
from the examples' Python files and from the API pages' ``::: module`` lines: ``import rdmasim.x``,
``from rdmasim.x import a, b`` and dotted references such as ``rdmasim.topology.star``.  Each is
imported (the module) and looked up (the name), so a module moved into a package per layer keeps
its documented path (``rdmasim._moved``) and a renamed function is noticed.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.MULTILINE | re.DOTALL)
_FROM = re.compile(r"^\s*(?:>>>\s*)?from\s+(rdmasim(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#]+)", re.MULTILINE)
_IMPORT = re.compile(r"^\s*(?:>>>\s*)?import\s+([^\n#]+)", re.MULTILINE)
_DOTTED = re.compile(r"(?<![\w./-])rdmasim(?:\.[A-Za-z_]\w*)+")
_API = re.compile(r"^:::\s+(rdmasim(?:\.\w+)*)\s*$", re.MULTILINE)


def _sources() -> list[tuple[str, str]]:
    """(where, code) of every code block and example file."""
    out: list[tuple[str, str]] = []
    pages = [ROOT / "README.md", ROOT / "examples" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        rel = page.relative_to(ROOT).as_posix()
        out += [(rel, m.group(2)) for m in _FENCE.finditer(text)]
        out += [(rel, f"import {m.group(1)}") for m in _API.finditer(text)]
    for ex in sorted((ROOT / "examples").rglob("*.py")):
        out.append((ex.relative_to(ROOT).as_posix(), ex.read_text(encoding="utf-8")))
    return out


def documented_names() -> dict[str, set[str]]:
    """``module`` or ``module:name`` -> the files that use it."""
    found: dict[str, set[str]] = {}

    def add(key: str, where: str) -> None:
        found.setdefault(key, set()).add(where)

    for where, code in _sources():
        for m in _FROM.finditer(code):
            names = m.group(2).strip().strip("()")
            for part in names.replace("\n", " ").split(","):
                name = part.split(" as ")[0].strip().rstrip("\\").strip()
                if name and name != "*":
                    add(f"{m.group(1)}:{name}", where)
            add(m.group(1), where)
        for m in _IMPORT.finditer(code):
            for part in m.group(1).split(","):
                mod = part.split(" as ")[0].strip()
                if mod == "rdmasim" or mod.startswith("rdmasim."):
                    add(mod, where)
        for m in _DOTTED.finditer(code):
            add(f"dotted:{m.group(0)}", where)
    return found


def _resolve(dotted: str) -> object:
    """Import the longest module prefix of ``dotted`` and look the rest up as attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError as exc:
            if exc.name is None or not ".".join(parts[:i]).startswith(exc.name):
                raise
            continue
        for a in parts[i:]:
            obj = getattr(obj, a)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_collector_finds_the_names_it_should() -> None:
    names = documented_names()
    assert "rdmasim.verbs" in names
    assert "rdmasim.cc_dctcp" in names  # docs/api/cc.md and the DCTCP page
    assert any(k.startswith("rdmasim.topology:") or k.startswith("dotted:rdmasim.topology.") for k in names)
    assert len(names) > 100


@pytest.mark.parametrize("key", sorted(documented_names()))
def test_documented_name_imports(key: str) -> None:
    if key.startswith("dotted:"):
        dotted = key.removeprefix("dotted:")
        try:
            _resolve(dotted)
        except AttributeError:
            # ``rdmasim.sim.Simulator.hosts`` and the like: an instance attribute of a class that
            # resolves, or a method called on a result; the module part must still import
            parent = dotted.rsplit(".", 1)[0]
            obj = _resolve(parent)
            assert isinstance(obj, type), f"{dotted}: {parent} is not a class ({documented_names()[key]})"
        return
    mod, _, name = key.partition(":")
    module = importlib.import_module(mod)
    if name:
        assert hasattr(module, name) or importlib.util.find_spec(f"{mod}.{name}") is not None, \
            f"{mod} has no {name} (used in {sorted(documented_names()[key])})"
