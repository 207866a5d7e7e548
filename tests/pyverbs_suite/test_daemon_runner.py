"""rdma-core's runner (``tests/run_tests.py`` from the pyverbs 59.0 sdist, unmodified) under
``rdmasim exec -- rdmasim pyverbs-run`` (tests/pyverbs_suite/daemon_runner.py): test_rdmacm's
passive and active processes share the fabric daemon and its emulated rdma_cm.

The fast case runs one RDMA CM test (synchronous identifiers, RC traffic both ways); the slow
case runs the whole test_rdmacm file: every test passes. Both need the sdist in the cache, as
test_run_tests_py.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
_spec = importlib.util.spec_from_file_location("daemon_runner", Path(__file__).with_name("daemon_runner.py"))
assert _spec is not None and _spec.loader is not None
dr = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("daemon_runner", dr)
_spec.loader.exec_module(dr)

from test_run_tests_py import _cached_sdist  # noqa: E402


def test_one_rdmacm_test_passes_across_two_processes(tmp_path: Path) -> None:
    work = dr.prepare(_cached_sdist(), tmp_path)
    res = dr.run(work, "-v", "test_rdmacm.CMTestCase.test_rdmacm_sync_traffic", timeout=600)
    assert res.tests == {"tests.test_rdmacm.CMTestCase.test_rdmacm_sync_traffic":
                         {"outcome": "pass", "detail": ""}}, res.output[-3000:]


@pytest.mark.slow
def test_test_rdmacm_passes_whole(tmp_path: Path) -> None:
    work = dr.prepare(_cached_sdist(), tmp_path)
    res = dr.run(work, "-v", "test_rdmacm", timeout=1800)
    assert res.ran == 10, res.output[-3000:]
    outcome = {tid.rsplit(".", 1)[1]: t["outcome"] for tid, t in res.tests.items()}
    assert outcome == dict.fromkeys(outcome, "pass") and len(outcome) == 10, res.output[-3000:]


@pytest.mark.slow
def test_whole_runner_through_the_daemon_passes_test_rdmacm_and_fails_nothing_else(tmp_path: Path) -> None:
    # `rdmasim exec -- rdmasim pyverbs-run tests/run_tests.py -v`: all 48 files, no file named
    from test_run_tests_py import KNOWN_DIFFERENCES

    work = dr.prepare(_cached_sdist(), tmp_path)
    res = dr.run(work, "-v", timeout=3600)
    assert res.ran is not None and len(res.tests) == res.ran, (res.ran, len(res.tests), res.output[-3000:])
    bad = {tid for tid, t in res.tests.items() if t["outcome"] in ("fail", "error")}
    assert bad == KNOWN_DIFFERENCES, res.output[-5000:]
    per_file = res.per_file()
    assert per_file["test_rdmacm"] == {"pass": 10, "skip": 0, "fail": 0, "error": 0}
    assert per_file["test_fork"]["pass"] == 1
