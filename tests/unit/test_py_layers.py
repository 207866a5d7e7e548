"""The Python layering check (.ci/check_py_layers.py): the tree passes it, and it is not vacuous."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "check_py_layers.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_py_layers", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "rdmasim", tmp_path / "rdmasim",
                    ignore=shutil.ignore_patterns("*.so", "*.c", "*.pxi", "*.pyx", "__pycache__", "data"))
    return tmp_path


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)


def test_tree_has_no_upward_import() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_module_is_in_a_layer() -> None:
    mod = _load()
    missing = [m for m in mod.modules(ROOT) if mod.layer_of(m) is None]
    assert not missing
    # the order the design names: the handle and verbs above the fabric and cc, the Simulator above them
    order = [name for name, _ in mod.LAYERS]
    assert order.index("fabric") < order.index("cc") < order.index("transport") < order.index("workload") \
        < order.index("sim")
    assert mod.layer_of("rdmasim.verbs.qp") == "transport"
    assert mod.layer_of("rdmasim.sim") == "sim"


def test_planted_deferred_upward_import_is_flagged(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    trace = root / "rdmasim" / "trace.py"
    planted = "\n\ndef _planted() -> None:\n    from rdmasim.sim import Simulator\n"
    trace.write_text(trace.read_text() + planted)
    r = _run(root)
    assert r.returncode == 1
    assert "rdmasim.trace: layer codec imports rdmasim.sim of the higher layer sim" in r.stdout


def test_planted_type_only_upward_import_is_flagged(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    units = root / "rdmasim" / "units.py"
    units.write_text(units.read_text() + "\nif TYPE_CHECKING:\n    from rdmasim.verbs.qp import QP\n")
    r = _run(root)
    assert r.returncode == 1
    assert "rdmasim.units: layer base imports rdmasim.verbs.qp of the higher layer transport" in r.stdout


def test_downward_and_same_layer_imports_pass(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    sim = root / "rdmasim" / "sim.py"
    sim.write_text(sim.read_text() + "\n\ndef _planted() -> None:\n    from rdmasim import capture, codec\n")
    r = _run(root)
    assert r.returncode == 0, r.stdout


def test_module_outside_any_layer_is_flagged(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "rdmasim" / "planted.py").write_text("X = 1\n")
    r = _run(root)
    assert r.returncode == 1 and "rdmasim.planted: in no layer" in r.stdout


def test_import_of_a_moved_path_is_flagged(tmp_path: Path) -> None:
    """The package's own modules import the new path, never the old one kept for users."""
    mod = _load()
    old = sorted(mod.moved(ROOT))
    assert "rdmasim.cc_dctcp" in old
    root = _copy(tmp_path)
    sim = root / "rdmasim" / "sim.py"
    planted = "\n\ndef _planted() -> None:\n    from rdmasim.cc_dctcp import DctcpParams\n"
    sim.write_text(sim.read_text() + planted)
    r = _run(root)
    assert r.returncode == 1
    assert "rdmasim.sim: imports rdmasim.cc_dctcp, the old path of rdmasim.cc.dctcp" in r.stdout


def test_import_under_an_old_package_path_is_flagged(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    sim = root / "rdmasim" / "sim.py"
    planted = "\n\ndef _planted() -> None:\n    from rdmasim.traffic.table import LOCAL\n"
    sim.write_text(sim.read_text() + planted)
    r = _run(root)
    assert r.returncode == 1
    assert ("rdmasim.sim: imports rdmasim.traffic.table, the old path of rdmasim.workload.traffic.table"
            in r.stdout)
