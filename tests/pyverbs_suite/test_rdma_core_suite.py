"""rdma-core's own pyverbs tests (pyverbs==59.0's sdist), unmodified, against rdmasim.

One pytest case per rdma-core test file; a case fails when any test of that file fails or
raises, except the few listed in KNOWN_DIFFERENCES with their reason (skips are allowed; the
Markdown table lists each skip's reason). Slow, and it needs
the network the first time (the sdist is cached afterwards): run it with

    PYTHONPATH=$PWD python -m pytest -m pyverbs_suite tests/pyverbs_suite -q

``$RDMASIM_PYVERBS_REPORT`` names where the Markdown table goes (default: pytest's temp dir;
its path is printed). Without network and without a cached sdist, or without the
``rdmasim.pyverbs`` namespace, the cases skip and say why.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("run_rdma_core", Path(__file__).with_name("run_rdma_core.py"))
assert _spec is not None and _spec.loader is not None
rc = importlib.util.module_from_spec(_spec)
sys.modules["run_rdma_core"] = rc
_spec.loader.exec_module(rc)

pytestmark = [pytest.mark.slow, pytest.mark.pyverbs_suite]

DEV = os.environ.get("RDMASIM_PYVERBS_DEV", "rxe0")
TIMEOUT = float(os.environ.get("RDMASIM_PYVERBS_TIMEOUT", "300"))


def _namespace_available() -> bool:
    try:
        return importlib.util.find_spec("rdmasim.pyverbs") is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, list[rc.FileResult]]]:
    """(extracted rdma-core tests, work dir, results so far); writes the table at the end."""
    if not _namespace_available():
        pytest.skip(rc.NAMESPACE_MISSING)
    try:
        sdist = rc.fetch_sdist()
    except rc.SuiteUnavailable as exc:
        pytest.skip(f"no network or no verified sdist: {exc}")
    work = tmp_path_factory.mktemp("rdma-core-suite")
    results: list[rc.FileResult] = []
    yield rc.extract_tests(sdist, work / "rdma-core-tests"), work, results
    if results:
        out = Path(os.environ.get("RDMASIM_PYVERBS_REPORT", work / "rdma-core-suite.md"))
        out.write_text(rc.markdown_report(results, f"rdma-core tests from pyverbs=={rc.PYVERBS_VERSION}, "
                                          f"device {DEV}"))
        print(f"\nrdma-core suite table: {out}")


# rdma-core tests that fail on rdmasim for a documented reason (docs/pyverbs.md, "The one error").
# Strict both ways: any other failure fails the case, and a listed test that passes must be removed.
KNOWN_DIFFERENCES = {
    "tests.test_mr.MRTest.test_mr_rereg_pd": "expects RESET to clean the QP's CQEs, as mlx5's provider does; "
                                             "rxe does not (rxe_qp_reset leaves the CQs; the flush "
                                             "CQEs were written at ERR), so it fails on rxe too, "
                                             "and on rdmasim the same way",
}


@pytest.mark.parametrize("name", list(rc.GENERIC_FILES))
def test_rdma_core_file(suite: tuple[Path, Path, list[rc.FileResult]], name: str) -> None:
    tests_dir, work, results = suite
    try:
        res = rc.run_file(tests_dir, name, work, DEV or None, 1, None, TIMEOUT)
    except rc.SuiteUnavailable as exc:
        pytest.skip(str(exc))
    results.append(res)
    bad = [f"{t['id']}: {t['outcome']}: {rc._last_line(t['detail'])}"
           for t in res.tests if t["outcome"] in ("fail", "error") and t["id"] not in KNOWN_DIFFERENCES]
    fixed = [t["id"] for t in res.tests if t["id"] in KNOWN_DIFFERENCES and t["outcome"] == "pass"]
    assert not fixed, f"{name}: now passing, remove from KNOWN_DIFFERENCES: {fixed}"
    assert not res.crash, f"{name}: {res.crash} (output: {work / name / 'output.txt'})"
    assert not bad, f"{name}: {len(bad)} of {len(res.tests)} failed or raised:\n" + "\n".join(bad)
    assert res.tests, f"{name}: ran no tests (output: {work / name / 'output.txt'})"
