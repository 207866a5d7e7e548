"""The C layering check (.ci/check_layers.py): the tree passes it, and it is not vacuous."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "check_layers.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _copy_csrc(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "csrc", tmp_path / "csrc",
                    ignore=shutil.ignore_patterns("*.o", "*.so", "__pycache__"))
    return tmp_path


def test_tree_has_no_new_upward_include() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_layer_folder_and_public_header_is_assigned() -> None:
    mod = _load()
    folders = {p.name for p in (ROOT / "csrc").iterdir() if p.is_dir()} - {"include"}
    assert folders == set(mod.FOLDERS)
    public = {p.name for p in (ROOT / "csrc" / "include" / "rdmasim").iterdir()}
    assert public == set(mod.PUBLIC)


def test_planted_upward_include_is_flagged(tmp_path: Path) -> None:
    root = _copy_csrc(tmp_path)
    eventq = root / "csrc" / "engine" / "eventq.c"
    eventq.write_text('#include "transport/transport.h"\n' + eventq.read_text())
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 1
    assert 'csrc/engine/eventq.c: layer engine includes "transport/transport.h"' in r.stdout
    # a public header of a higher layer counts too
    rng = root / "csrc" / "engine" / "rng.c"
    rng.write_text('#include "rdmasim/codec.h"\n' + rng.read_text())
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    assert 'csrc/engine/rng.c: layer engine includes "rdmasim/codec.h" of the higher layer codec' in r.stdout


def test_downward_and_same_layer_includes_pass(tmp_path: Path) -> None:
    root = _copy_csrc(tmp_path)
    qpn = root / "csrc" / "transport" / "qpn.c"
    qpn.write_text('#include "rdmasim/eventq.h"\n#include "transport/qp.h"\n' + qpn.read_text())
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_known_debt_passes_and_removed_debt_must_leave_the_list(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # the tree's KNOWN may be empty: list one upward include in the module instead
    mod = _load()
    entry = ("csrc/engine/rng.c", "link/net.h")
    monkeypatch.setattr(mod, "KNOWN", frozenset({entry}))
    root = _copy_csrc(tmp_path)
    rng = root / entry[0]
    original = rng.read_text()
    rng.write_text(f'#include "{entry[1]}"\n' + original)
    assert mod.main(["--root", str(root)]) == 0, capsys.readouterr().out  # listed: tolerated
    capsys.readouterr()
    rng.write_text(original)  # the debt paid, the entry still listed
    assert mod.main(["--root", str(root)]) == 1
    assert f'{entry[0]}: KNOWN lists "{entry[1]}"' in capsys.readouterr().out


def test_file_outside_any_layer_is_flagged(tmp_path: Path) -> None:
    root = _copy_csrc(tmp_path)
    (root / "csrc" / "misc").mkdir()
    (root / "csrc" / "misc" / "x.c").write_text("int x;\n")
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 1 and "csrc/misc/x.c: in no layer" in r.stdout


def test_sibling_transports_may_not_include_each_other(tmp_path: Path) -> None:
    mod = _load()
    assert mod.RANK["uet"] == mod.RANK["transport"]  # one rank, two folders
    root = _copy_csrc(tmp_path)
    (root / "csrc" / "uet").mkdir(exist_ok=True)
    planted = root / "csrc" / "uet" / "planted.c"
    planted.write_text('#include "transport/transport.h"\n#include "cc/registry.c"\n')
    other = root / "csrc" / "transport" / "qpn.c"
    other.write_text('#include "uet/uet.h"\n' + other.read_text())
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    assert r.returncode == 1
    assert ('csrc/uet/planted.c: layer uet includes "transport/transport.h" of its sibling layer transport'
            in r.stdout)
    assert 'csrc/transport/qpn.c: layer transport includes "uet/uet.h" of its sibling layer uet' in r.stdout
    assert "cc/registry.c" not in r.stdout  # below both: allowed
    # the workload above both may include either
    flows = root / "csrc" / "workload" / "flows.c"
    planted.unlink()
    other.write_text(other.read_text().replace('#include "uet/uet.h"\n', ""))
    flows.write_text('#include "uet/uet.h"\n' + flows.read_text())
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root)], capture_output=True, text=True)
    assert "flows.c" not in r.stdout, r.stdout
