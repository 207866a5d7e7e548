"""ThreadSanitizer over the threaded partitioned loop (csrc/sim/par.c), without Python.

TSan must be the first runtime of its process, and CPython is not built with it, so the C core is
compiled with ``-fsanitize=thread`` together with a small C driver (par_threads_driver.c): it builds
a k = 4 fat tree and a dumbbell through the C API, runs a permutation (DCQCN, and HPCC) and an incast with PFC
on one queue, then on 2 and 4 partitions on 1 to 4 threads, and exits non-zero when a split run
differs from the one-queue run in any flow result, link counter, the clock or the event count.
The test fails on that, and on any ThreadSanitizer report.

Not in the default run (``slow`` and ``tsan``: the build takes a while); run it with::

    python -m pytest -m tsan tests/tsan -q -p no:cacheprovider
"""

from __future__ import annotations

import ast
import glob
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.tsan]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
DRIVER = HERE / "par_threads_driver.c"
SUPPRESSIONS = HERE / "tsan.supp"


def _setup_py_sources() -> tuple[list[str], list[str]]:
    """The C sources and the literal include directories of setup.py's extension (its C_SOURCES
    expression evaluated here, so that a new csrc file is compiled in without a second list)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    sources: list[str] | None = None
    includes: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "C_SOURCES"
                                                for t in node.targets):
            code = compile(ast.Expression(node.value), "setup.py", "eval")
            sources = eval(code, {"glob": glob, "os": os, "HERE": str(ROOT)})  # setup.py's own expression
        if isinstance(node, ast.keyword) and node.arg == "include_dirs" and isinstance(node.value, ast.List):
            includes = [e.value for e in node.value.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    assert sources, "setup.py: no C_SOURCES"
    assert includes, "setup.py: no include_dirs"
    return sources, includes


def _tsan_env() -> dict[str, str]:
    opts = "halt_on_error=0 second_deadlock_stack=1 history_size=4"
    if SUPPRESSIONS.exists():
        opts += f" suppressions={SUPPRESSIONS}"
    return {**os.environ, "TSAN_OPTIONS": opts}


def _run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(binary), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, env=_tsan_env(), timeout=600)
    # newer kernels map memory where TSan's shadow layout expects none (vm.mmap_rnd_bits > 28):
    # without address randomisation it fits
    if "unexpected memory mapping" in out.stderr and shutil.which("setarch"):
        out = subprocess.run(["setarch", platform.machine(), "-R", *cmd], capture_output=True, text=True,
                             env=_tsan_env(), timeout=600)
    return out


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    sources, includes = _setup_py_sources()
    binary = tmp_path_factory.mktemp("tsan") / "par_threads_driver"
    cmd = [gcc, "-std=c11", "-O1", "-g", "-fsanitize=thread", "-pthread",
           *[f"-I{ROOT / d}" for d in includes], *[str(ROOT / s) for s in sources], str(DRIVER),
           "-o", str(binary), "-lm"]
    build = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stderr[-4000:]
    return binary


@pytest.mark.parametrize("scale", [1, 8])
def test_threaded_runs_are_race_free_and_identical(driver: Path, scale: int) -> None:
    out = _run(driver, str(scale))
    text = out.stdout + out.stderr
    assert "WARNING: ThreadSanitizer" not in text, text[-20000:]
    assert "ThreadSanitizer" not in out.stderr, out.stderr[-20000:]  # FATAL: ... as well
    assert out.returncode == 0, text[-20000:]
    # every scenario, every split, each one identical to the one-queue run
    assert out.stdout.count("identical") == 15, out.stdout
    assert "DIFFERENT" not in out.stdout
    # TSan saw partitions of one job on different threads (else it checked nothing concurrent)
    assert "threads shared jobs" in out.stdout, out.stdout
