"""Importing rdmasim from a source tree whose compiled core is not built says what to do."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import rdmasim


def test_source_tree_without_core_names_the_fix(tmp_path: Path) -> None:
    # a clone after `pip install .` (not -e): the package's Python files without the extension
    src = Path(rdmasim.__file__).parent
    shutil.copytree(src, tmp_path / "rdmasim", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    # -S: no site-packages, so neither an installed nor an editable rdmasim can supply the core
    proc = subprocess.run([sys.executable, "-S", "-c", "import rdmasim"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: rdmasim's compiled core is not built in"), proc.stderr
    assert str(tmp_path / "rdmasim") in last
    assert "pip install -e ." in last
    assert "partially initialized" not in last
