"""``rdmasim pyverbs-run`` runs a program as ``python script.py`` would: ``__file__`` absolute
whatever path was given, and a failing program shows its own traceback (not rdmasim's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prog.py").write_text(text)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "rdmasim.cli", "pyverbs-run", "prog.py", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_file_is_absolute_with_a_relative_script_path(tmp_path: Path) -> None:
    r = _run(tmp_path, "import os, sys\nprint(__file__)\nprint(sys.argv[0])\n"
                       "print(sorted(os.listdir(os.path.dirname(__file__))))\n")
    assert r.returncode == 0, r.stderr
    file_, argv0, listing = r.stdout.splitlines()
    assert file_ == str(tmp_path / "prog.py")  # as `python prog.py` sets it (Python >= 3.9)
    assert argv0 == "prog.py"
    assert listing == "['prog.py']"


def test_a_failing_program_shows_its_own_traceback(tmp_path: Path) -> None:
    r = _run(tmp_path, "def f(x):\n    return {}[x]\n\n\nf('key')\n")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):", r.stderr
    assert f'File "{tmp_path / "prog.py"}", line 5, in <module>' in r.stderr
    assert f'File "{tmp_path / "prog.py"}", line 2, in f' in r.stderr
    assert lines[-1] == "KeyError: 'key'"
    assert "rdmasim" not in r.stderr and "runpy" not in r.stderr


def test_an_error_rdmasim_raises_shows_the_programs_line_then_one_line(tmp_path: Path) -> None:
    r = _run(tmp_path, "from pyverbs.device import Context\nfrom pyverbs.cq import CQ\n"
                       "ctx = Context(name='rxe0')\nCQ(ctx, 1 << 20)\n")
    assert r.returncode == 1
    assert f'File "{tmp_path / "prog.py"}", line 4, in <module>' in r.stderr
    assert r.stderr.splitlines()[-1].startswith("rdmasim.errors.PyverbsRDMAError: CQ cqe=1048576")
    assert "rdmasim/" not in r.stderr  # the frames inside rdmasim are not the program's


def test_a_missing_script_is_one_line(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "rdmasim.cli", "pyverbs-run", "nope.py"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["rdmasim pyverbs-run: error: nope.py: no such file"]
