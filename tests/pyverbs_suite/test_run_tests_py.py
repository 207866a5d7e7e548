"""rdma-core's own runner (``tests/run_tests.py`` from the pyverbs 59.0 sdist), unmodified and
whole, under ``rdmasim pyverbs-run`` (tests/pyverbs_suite/whole_runner.py).

The fast case (default run) lists the tests: every one of the sdist's 48 test files imports,
so the runner starts. The slow case runs them all and checks that none fails or raises but the
ones in ``KNOWN_DIFFERENCES`` (rxe fails them the same way), and that every test unittest ran was
recorded. Both need the sdist in the cache (``run_rdma_core.py`` downloads it once); without it
they skip and say so. ``$RDMASIM_PYVERBS_REPORT`` names where the slow case writes its table.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("whole_runner", Path(__file__).with_name("whole_runner.py"))
assert _spec is not None and _spec.loader is not None
wr = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("whole_runner", wr)
_spec.loader.exec_module(wr)
rc = wr.rc

# as in test_rdma_core_suite.py (docs/pyverbs.md "The one error")
KNOWN_DIFFERENCES = {"tests.test_mr.MRTest.test_mr_rereg_pd"}


def _cached_sdist() -> Path:
    """The verified sdist from the cache, never downloaded here (the default run stays offline)."""
    cached = rc.cache_dir() / f"pyverbs-{rc.PYVERBS_VERSION}.tar.gz"
    stamp = cached.with_name(cached.name + ".sha256")
    if not (cached.is_file() and stamp.is_file() and rc._sha256(cached) == stamp.read_text().strip()):
        pytest.skip(f"no verified pyverbs {rc.PYVERBS_VERSION} sdist in {rc.cache_dir()} (run "
                    "tests/pyverbs_suite/run_rdma_core.py once with network to fetch it)")
    return cached


def test_run_tests_py_starts_and_lists_every_file(tmp_path: Path) -> None:
    work = wr.prepare(_cached_sdist(), tmp_path)
    res = wr.run(work, "--list-tests", timeout=600)
    assert res.returncode == 0, res.output[-3000:]
    listed = {line.split(".")[1] for line in res.output.splitlines() if line.startswith("tests.test_")}
    files = {p.stem for p in (work / "tests").glob("test_*.py")}
    assert len(files) == 48
    # every file imported; rdma-core's test_cuda_dmabuf defines its tests only with cuda-python
    assert files - listed <= {"test_cuda_dmabuf"}, sorted(files - listed)


@pytest.mark.slow
def test_run_tests_py_runs_whole_with_nothing_failing_but_the_rxe_difference(tmp_path: Path) -> None:
    work = wr.prepare(_cached_sdist(), tmp_path)
    res = wr.run(work, "-v", timeout=3600)
    out = Path(os.environ.get("RDMASIM_PYVERBS_REPORT", tmp_path / "run-tests.md"))
    out.write_text(wr.markdown(res, f"rdma-core `run_tests.py` (pyverbs=={rc.PYVERBS_VERSION}) under "
                                    "`rdmasim pyverbs-run`, device rxe0"))
    print(f"\nrun_tests.py table: {out}")
    assert res.ran is not None and len(res.tests) == res.ran, (res.ran, len(res.tests), res.output[-3000:])
    bad = {tid for tid, t in res.tests.items() if t["outcome"] in ("fail", "error")}
    assert bad == KNOWN_DIFFERENCES, res.output[-5000:]
    assert res.per_file()["test_fork"]["pass"] == 1
