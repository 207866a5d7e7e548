"""Modules moved into packages per layer keep their old import paths (rdmasim._moved)."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import rdmasim
from rdmasim._moved import MOVED

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_is_the_new_module(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    assert importlib.import_module(old) is new
    assert sys.modules[old] is new
    # the module keeps its own spec and name (the alias does not rename it)
    assert new.__name__ == MOVED[old] and new.__spec__ is not None and new.__spec__.name == MOVED[old]
    # reachable as an attribute of its old parent too
    parent, _, leaf = old.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is new


@pytest.mark.parametrize("old", sorted(MOVED))
def test_no_file_at_the_old_path(old: str) -> None:
    """The old path is data only: a file there would be a second copy (and stop git's rename
    detection from carrying edits made to the old file)."""
    rel = Path(*old.split("."))
    assert not (ROOT / rel.with_suffix(".py")).exists() and not (ROOT / rel / "__init__.py").exists()


def test_old_paths_in_a_fresh_interpreter() -> None:
    """``from rdmasim.cc_dctcp import X`` as the first rdmasim import of a program."""
    code = ("from rdmasim.cc_dctcp import DctcpParams\nimport rdmasim.cc_plugin\n"
            "import rdmasim.cc.dctcp as new\n"
            "assert DctcpParams is new.DctcpParams\n"
            "assert rdmasim.cc_plugin.register_plugin is rdmasim.cc.register_plugin\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_a_class_pickles_under_its_new_path() -> None:
    from rdmasim.cc_dctcp import DctcpParams

    p = DctcpParams()
    assert type(pickle.loads(pickle.dumps(p))) is DctcpParams
    assert DctcpParams.__module__ == "rdmasim.cc.dctcp"


def test_unknown_names_still_fail() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rdmasim.cc_nonesuch")
    with pytest.raises(AttributeError):
        rdmasim.cc_nonesuch  # noqa: B018


def test_a_submodule_under_an_old_package_path_is_not_loaded_twice() -> None:
    """``rdmasim.traffic.table`` is the module ``rdmasim.workload.traffic.table``, not a second
    copy found in the new package's folder under the old name (its classes would differ)."""
    import rdmasim.traffic.collectives as old_collectives
    import rdmasim.traffic.table as old_table
    from rdmasim.traffic import FlowTable
    from rdmasim.workload.traffic import collectives, table

    assert old_table is table and old_collectives is collectives
    assert FlowTable is table.FlowTable
    assert FlowTable.__module__ == "rdmasim.workload.traffic.table"
