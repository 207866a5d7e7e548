"""Run rdma-core's own runner, ``tests/run_tests.py`` from the pyverbs 59.0 sdist, unmodified and
whole, under ``rdmasim pyverbs-run``, and record each test's outcome per test file.

Unlike ``run_rdma_core.py`` (one file per process, through a bootstrap that records outcomes),
this is what a user types: the sdist's ``tests/`` directory as it is, and::

    rdmasim pyverbs-run tests/run_tests.py --dev rxe0 -v

The outcomes are read from unittest's verbose output (``name (tests.file.Class.name) ... ok``,
``... skipped 'reason'``, ``... FAIL``, ``... ERROR``). The environment is the one
``run_rdma_core.py`` describes: an ``rdma`` that reports no links and a ``cat`` that answers the
sysfs P_Key files from the emulated device come first on ``PATH``.

Usage::

    PYTHONPATH=$PWD python tests/pyverbs_suite/whole_runner.py [--list-tests] [--report out.md]
        [--timeout 3600] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_spec = importlib.util.spec_from_file_location("run_rdma_core", Path(__file__).with_name("run_rdma_core.py"))
assert _spec is not None and _spec.loader is not None
rc = sys.modules.get("run_rdma_core") or importlib.util.module_from_spec(_spec)
if "run_rdma_core" not in sys.modules:
    sys.modules["run_rdma_core"] = rc
    _spec.loader.exec_module(rc)

ROOT = Path(__file__).resolve().parents[2]

# `name (tests.file.Class.name)`, maybe the docstring's first line, then ` ... outcome`; a test's
# own output or a warning may come between the two (never another test's header)
_LINE = re.compile(r"^(\w+) \((tests\.(\w+)\.[\w.]+)\)(?:(?!^\w+ \(tests\.).)*?(?:\.\.\. |^)"
                   r"(ok|FAIL|ERROR|skipped (['\"])(.*?)\5|expected failure|unexpected success)$",
                   re.M | re.S)
_SUMMARY = re.compile(r"^Ran (\d+) tests? in", re.M)


@dataclass
class WholeRun:
    """What one run of the runner produced."""

    returncode: int
    output: str
    tests: dict[str, dict[str, str]] = field(default_factory=dict)  # test id -> outcome, detail
    ran: int | None = None  # unittest's own "Ran N tests"

    def per_file(self) -> dict[str, dict[str, int]]:
        """test file -> {pass, skip, fail, error}: counts of its tests."""
        out: dict[str, dict[str, int]] = {}
        for tid, t in self.tests.items():
            row = out.setdefault(tid.split(".")[1], {"pass": 0, "skip": 0, "fail": 0, "error": 0})
            row[t["outcome"]] += 1
        return dict(sorted(out.items()))


def parse(output: str) -> tuple[dict[str, dict[str, str]], int | None]:
    """Each test's outcome (``pass``, ``skip`` with its reason, ``fail``, ``error``) from unittest's
    verbose output, and the number of tests unittest says it ran."""
    tests: dict[str, dict[str, str]] = {}
    for m in _LINE.finditer(output):
        word = m.group(4)
        outcome = {"ok": "pass", "FAIL": "fail", "ERROR": "error", "expected failure": "pass",
                   "unexpected success": "fail"}.get(word, "skip")
        tests[m.group(2)] = {"outcome": outcome, "detail": m.group(6) or ""}
    ran = _SUMMARY.search(output)
    return tests, int(ran.group(1)) if ran else None


def prepare(sdist: Path, work: Path) -> Path:
    """The sdist's ``tests/`` as it is, under ``work``, and the ``rdma``/``cat`` shims in
    ``work/bin``. Returns ``work``."""
    rc.extract_tests(sdist, work / "tests")
    bindir = work / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "rdma").write_text(rc._RDMA_SHIM)
    real_cat = shutil.which("cat") or "/bin/cat"
    (bindir / "cat").write_text(rc._CAT_SHIM.format(python=sys.executable, cat=real_cat))
    for shim in ("rdma", "cat"):
        (bindir / shim).chmod(0o755)
    return work


def run(work: Path, *args: str, dev: str = "rxe0", timeout: float = 3600) -> WholeRun:
    """``rdmasim pyverbs-run tests/run_tests.py --dev DEV ARGS...`` in ``work`` (a relative script
    path, as a user in that directory would type it)."""
    env = dict(os.environ)
    env["PATH"] = f"{work / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "rdmasim.cli", "pyverbs-run", "tests/run_tests.py", "--dev", dev, *args]
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    tests, ran = parse(output)
    return WholeRun(proc.returncode, output, tests, ran)


def markdown(res: WholeRun, header: str) -> str:
    """The per-file table, then each skipped test with its reason and each failure."""
    out = [header, "", "| file | pass | skip | fail | error |", "|---|---|---|---|---|"]
    total = {"pass": 0, "skip": 0, "fail": 0, "error": 0}
    for name, row in res.per_file().items():
        out.append(f"| {name} | {row['pass']} | {row['skip']} | {row['fail']} | {row['error']} |")
        for k in total:
            total[k] += row[k]
    out.append(f"| **total** | {total['pass']} | {total['skip']} | {total['fail']} | {total['error']} |")
    skips = [(tid, t) for tid, t in res.tests.items() if t["outcome"] == "skip"]
    if skips:
        out += ["", "| skipped test | reason |", "|---|---|"]
        out += [f"| {tid.removeprefix('tests.')} | {rc._cell(t['detail'])} |" for tid, t in skips]
    bad = [tid for tid, t in res.tests.items() if t["outcome"] in ("fail", "error")]
    if bad:
        out += ["", "Failed or raised: " + ", ".join(bad)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", default="rxe0")
    ap.add_argument("--list-tests", action="store_true", help="only list the tests (every file imports)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole run")
    ap.add_argument("--report", type=Path, default=None, help="write the Markdown table here")
    ap.add_argument("--keep", type=Path, default=None, help="run in this directory and keep it")
    args = ap.parse_args(argv)
    try:
        sdist = rc.fetch_sdist()
    except rc.SuiteUnavailable as exc:
        print(f"rdma-core runner not run: {exc}", file=sys.stderr)
        return 2
    work = args.keep or Path(tempfile.mkdtemp(prefix="rdmasim-run-tests-"))
    try:
        prepare(sdist, work)
        res = run(work, *(["--list-tests"] if args.list_tests else ["-v"]), dev=args.dev,
                  timeout=args.timeout)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.list_tests:
        print(res.output)
        return res.returncode
    report = markdown(res, f"rdma-core `run_tests.py` from pyverbs=={rc.PYVERBS_VERSION} under "
                           f"`rdmasim pyverbs-run`, device {args.dev} (exit status {res.returncode})")
    if args.report:
        args.report.write_text(report)
    print(report)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
