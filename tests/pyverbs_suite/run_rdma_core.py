"""Run rdma-core's own pyverbs tests, unmodified, against rdmasim's pyverbs namespace.

The tests are not part of this repository: they ship in the PyPI sdist of ``pyverbs``
(``pyverbs-<ver>/rdma-core/tests/``). This script

1. downloads the sdist once into a cache (``$RDMASIM_PYVERBS_SDIST`` if it names a ``.tar.gz``
   file or a directory, else ``~/.cache/rdmasim``) and verifies its sha256 against the digest
   PyPI publishes for it;
2. extracts rdma-core's ``tests/`` helpers plus one chosen test file per run into a temporary
   directory (rdma-core's ``tests/__init__.py`` imports every ``test_*.py`` next to it, so one
   file that cannot be imported would otherwise take all the others down with it);
3. runs each file in its own Python process the way rdma-core does (``tests/run_tests.py``,
   i.e. ``unittest.main`` with rdma-core's ``--dev/--port/--gid`` arguments), after
   ``rdmasim.pyverbs.install()`` has mapped ``import pyverbs...`` onto rdmasim;
4. writes a Markdown table: per file, the number of tests that passed, were skipped, failed
   or raised, and each skip's reason.

``base.RDMATestCase`` asks iproute2 (``rdma link show -j``) which netdev belongs to the device,
and ``utils.get_pkey_from_kernel`` reads the P_Key table from sysfs with ``cat``. rdmasim's
devices have neither a netdev nor a sysfs directory, so each run gets, first on ``PATH``, an
``rdma`` that reports no links (``[]``) and a ``cat`` that answers for those sysfs P_Key files
from the emulated device (``Context.query_pkey``) and is the real ``cat`` otherwise.

Usage::

    PYTHONPATH=$PWD python tests/pyverbs_suite/run_rdma_core.py [--dev rxe0] [--report out.md]
        [--files test_cq test_pd ...] [--timeout 300] [--needs]

Exit status: 0 when no test failed or raised, 1 otherwise, 2 when the sdist cannot be
obtained (no network and no cache) or the rdmasim.pyverbs namespace is not available.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

PYVERBS_VERSION = "59.0"
PYPI_JSON_URLS = (
    "https://pypi.org/pypi/pyverbs/{ver}/json",
    "https://pypi.org/pypi/pyverbs/json",  # the whole project; its "releases" map has every version
)

# The generic (hardware-independent) files of rdma-core's suite. Values: extra unittest
# arguments that select part of a file (test_odp: its RC cases only).
GENERIC_FILES: dict[str, list[str]] = {
    "test_addr": [],
    "test_atomic": [],
    "test_cq": [],
    "test_cq_events": [],
    "test_cqex": [],
    "test_device": [],
    "test_mr": [],
    "test_odp": ["-k", "*_rc_*"],
    "test_pd": [],
    "test_qp": [],
    "test_qpex": [],
    "test_shared_pd": [],
    "test_srq": [],
    "test_relaxed_ordering": [],
}

# Test files another test file imports (tests.test_shared_pd uses tests.test_qpex's resources).
FILE_DEPS: dict[str, list[str]] = {"test_shared_pd": ["test_qpex"]}

NAMESPACE_MISSING = (
    "rdmasim.pyverbs is not available in this tree: the rdma-core suite needs the pyverbs "
    "namespace and its import hook rdmasim.pyverbs.install()"
)

# Written into each run's directory and executed as its main program: install the import hook,
# record every test's outcome, then hand over to rdma-core's own run_tests.py.
_BOOTSTRAP = r'''
import json, os, runpy, sys, unittest

out_path = os.environ["RDMASIM_SUITE_RESULT"]
try:
    import rdmasim.pyverbs as _ns
except ModuleNotFoundError as exc:
    if exc.name not in ("rdmasim.pyverbs",):
        raise
    with open(out_path, "w") as fh:
        json.dump({"namespace_missing": True}, fh)
    sys.exit(3)
_ns.install()

records = []

def _save():
    with open(out_path, "w") as fh:
        json.dump({"tests": records}, fh)

class _Recording(unittest.TextTestResult):
    def _rec(self, test, outcome, detail=""):
        records.append({"id": test.id(), "outcome": outcome, "detail": detail})
        _save()

    def addSuccess(self, test):
        super().addSuccess(test); self._rec(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason); self._rec(test, "skip", str(reason))

    def addFailure(self, test, err):
        super().addFailure(test, err); self._rec(test, "fail", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err); self._rec(test, "error", self._exc_info_to_string(err, test))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err); self._rec(test, "pass", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test); self._rec(test, "fail", "unexpected success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self._rec(subtest, kind, self._exc_info_to_string(err, test))

unittest.TextTestRunner.resultclass = _Recording
_save()
run_tests = sys.argv[1]
sys.argv = sys.argv[1:]
# As when run_tests.py is the main script: its own directory first (for `args_parser`), then
# the one holding `tests/`, ahead of PYTHONPATH (whose rdmasim checkout has its own tests/).
sys.path[0] = os.path.dirname(run_tests)
sys.path.insert(1, os.path.dirname(sys.path[0]))
runpy.run_path(run_tests, run_name="__main__")
'''

_RDMA_SHIM = "#!/bin/sh\n# rdmasim's devices have no netdev: report no RDMA links.\necho '[]'\n"

# utils.get_pkey_from_kernel() runs `cat /sys/class/infiniband/<dev>/ports/<port>/pkeys/<index>`.
# For a device with no sysfs directory, answer as sysfs would ("0xffff"), asking the emulated
# device itself (Context.query_pkey); everything else goes to the real cat.
_CAT_SHIM = """#!/bin/sh
case "$#:$1" in
  1:/sys/class/infiniband/*/ports/*/pkeys/*)
    if [ ! -e "$1" ]; then
      exec "{python}" -c '
import sys
import rdmasim.pyverbs as ns
ns.install()
import pyverbs.device as d
_, _, _, _, dev, _, port, _, idx = sys.argv[1].split("/")
with d.Context(name=dev) as ctx:
    print(hex(ctx.query_pkey(port_num=int(port), index=int(idx))))
' "$1"
    fi;;
esac
exec "{cat}" "$@"
"""


class SuiteUnavailable(RuntimeError):
    """The sdist cannot be obtained (no network, no cache) or does not verify."""


def cache_dir() -> Path:
    env = os.environ.get("RDMASIM_PYVERBS_SDIST")
    if env and not env.endswith(".tar.gz"):
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rdmasim"


def _pypi_sdist(version: str) -> tuple[str, str, str]:
    """(filename, url, sha256) of pyverbs' sdist as PyPI lists it."""
    errors = []
    for tmpl in PYPI_JSON_URLS:
        url = tmpl.format(ver=version)
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                meta = json.load(resp)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            errors.append(f"{url}: {exc}")
            continue
        files = meta.get("urls", []) if meta.get("info", {}).get("version") == version else []
        files = files or meta.get("releases", {}).get(version, [])
        for f in files:
            if f.get("packagetype") == "sdist":
                return f["filename"], f["url"], f["digests"]["sha256"]
        errors.append(f"{url}: no sdist listed for pyverbs=={version}")
    joined = "; ".join(errors)
    raise SuiteUnavailable(f"cannot look up pyverbs=={version} on PyPI: {joined}")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_sdist(version: str = PYVERBS_VERSION) -> Path:
    """Path of the verified sdist, downloading it into the cache if needed.

    A cached file is used without network access when a ``<file>.sha256`` recorded at download
    time (from PyPI's digest) still matches; ``$RDMASIM_PYVERBS_SDIST=/path/x.tar.gz`` names a
    local copy, which is then checked against PyPI's digest.
    """
    env = os.environ.get("RDMASIM_PYVERBS_SDIST", "")
    if env.endswith(".tar.gz"):
        local = Path(env)
        if not local.is_file():
            raise SuiteUnavailable(f"RDMASIM_PYVERBS_SDIST={env!r}: no such file")
        _, _, want = _pypi_sdist(version)
        got = _sha256(local)
        if got != want:
            raise SuiteUnavailable(f"RDMASIM_PYVERBS_SDIST={env!r}: sha256 {got} != PyPI's {want}")
        return local
    cdir = cache_dir()
    cached = cdir / f"pyverbs-{version}.tar.gz"
    stamp = cached.with_name(cached.name + ".sha256")
    if cached.is_file() and stamp.is_file() and _sha256(cached) == stamp.read_text().strip():
        return cached
    name, url, want = _pypi_sdist(version)
    cdir.mkdir(parents=True, exist_ok=True)
    part = cdir / (name + ".part")
    try:
        with urllib.request.urlopen(url, timeout=120) as resp, open(part, "wb") as out:
            shutil.copyfileobj(resp, out)
    except (urllib.error.URLError, OSError) as exc:
        part.unlink(missing_ok=True)
        raise SuiteUnavailable(f"cannot download {url}: {exc}") from exc
    got = _sha256(part)
    if got != want:
        part.unlink(missing_ok=True)
        raise SuiteUnavailable(f"{url}: sha256 {got} does not match PyPI's {want}")
    part.replace(cached)
    stamp.write_text(want + "\n")
    return cached


def extract_tests(sdist: Path, dest: Path) -> Path:
    """Extract ``rdma-core/tests/*.py`` from the sdist into ``dest``; return that directory."""
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            parts = m.name.split("/")
            if len(parts) == 4 and parts[1:3] == ["rdma-core", "tests"] and parts[3].endswith(".py"):
                if not m.isfile():
                    continue
                src = tar.extractfile(m)
                assert src is not None
                (dest / parts[3]).write_bytes(src.read())
    if not (dest / "run_tests.py").is_file():
        raise SuiteUnavailable(f"{sdist}: no rdma-core/tests/run_tests.py inside")
    return dest


@dataclass
class FileResult:
    """Outcome of one rdma-core test file."""

    name: str
    tests: list[dict[str, str]] = field(default_factory=list)
    crash: str = ""  # the file did not run to the end (import error, timeout, crash)

    def count(self, outcome: str) -> int:
        return sum(1 for t in self.tests if t["outcome"] == outcome)

    @property
    def ok(self) -> bool:
        return not self.crash and self.count("fail") == 0 and self.count("error") == 0


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def run_file(all_tests: Path, name: str, workroot: Path, dev: str | None, port: int,
             gid: int | None, timeout: float) -> FileResult:
    """Run one rdma-core test file (plus the helpers it needs) in its own process."""
    run = workroot / name
    if run.exists():  # a --keep directory reused: start this file's run afresh
        shutil.rmtree(run)
    tdir = run / "tests"
    tdir.mkdir(parents=True)
    for f in all_tests.iterdir():
        if not f.name.startswith("test_"):
            shutil.copy2(f, tdir / f.name)
    for t in [name, *FILE_DEPS.get(name, [])]:
        shutil.copy2(all_tests / f"{t}.py", tdir / f"{t}.py")
    bindir = run / "bin"
    bindir.mkdir()
    (bindir / "rdma").write_text(_RDMA_SHIM)
    real_cat = shutil.which("cat") or "/bin/cat"
    (bindir / "cat").write_text(_CAT_SHIM.format(python=sys.executable, cat=real_cat))
    for shim in ("rdma", "cat"):
        (bindir / shim).chmod(0o755)
    (run / "bootstrap.py").write_text(_BOOTSTRAP)
    result_path = run / "result.json"
    cmd = [sys.executable, str(run / "bootstrap.py"), str(tdir / "run_tests.py"), "-v"]
    if dev:
        cmd += ["--dev", dev]
    cmd += ["--port", str(port)]
    if gid is not None:
        cmd += ["--gid", str(gid)]
    cmd += [*GENERIC_FILES.get(name, []), name]
    env = dict(os.environ)
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    env["RDMASIM_SUITE_RESULT"] = str(result_path)
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
    res = FileResult(name)
    try:
        proc = subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=timeout)
        (run / "output.txt").write_text(proc.stdout + proc.stderr)
    except subprocess.TimeoutExpired as exc:
        res.crash = f"timed out after {timeout:g} s"
        out = exc.stderr or b""
        (run / "output.txt").write_bytes(out if isinstance(out, bytes) else out.encode())
        proc = None
    data = json.loads(result_path.read_text()) if result_path.is_file() else {}
    if data.get("namespace_missing"):
        raise SuiteUnavailable(NAMESPACE_MISSING)
    res.tests = data.get("tests", [])
    if proc is not None and not res.tests and proc.returncode != 0:
        res.crash = "did not run: " + _last_line(proc.stderr)
    elif proc is not None and proc.returncode not in (0, 1):
        res.crash = f"exited with status {proc.returncode}: " + _last_line(proc.stderr)
    return res


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def markdown_report(results: list[FileResult], header: str) -> str:
    """The per-file table, then each skip's reason and each failure's last line."""
    out = [header, "", "| file | pass | skip | fail | error | note |", "|---|---|---|---|---|---|"]
    for r in results:
        out.append(f"| {r.name} | {r.count('pass')} | {r.count('skip')} | {r.count('fail')} "
                   f"| {r.count('error')} | {_cell(r.crash)} |")
    skips = [(r.name, t) for r in results for t in r.tests if t["outcome"] == "skip"]
    if skips:
        out += ["", "Skipped:", "", "| test | reason |", "|---|---|"]
        out += [f"| {t['id'].removeprefix('tests.')} | {_cell(t['detail'])} |" for _, t in skips]
    bad = [(r.name, t) for r in results for t in r.tests if t["outcome"] in ("fail", "error")]
    if bad:
        out += ["", "Failed or raised:", "", "| test | outcome | last line |", "|---|---|---|"]
        out += [f"| {t['id'].removeprefix('tests.')} | {t['outcome']} | {_cell(_last_line(t['detail']))} |"
                for _, t in bad]
    return "\n".join(out) + "\n"


def pyverbs_needs(all_tests: Path, files: list[str]) -> dict[str, set[str]]:
    """``pyverbs`` module -> names imported from it by ``files`` and the helpers they import."""
    needs: dict[str, set[str]] = {}
    seen: set[str] = set()
    todo = list(files)
    while todo:
        mod = todo.pop()
        if mod in seen or not (all_tests / f"{mod}.py").is_file():
            continue
        seen.add(mod)
        tree = ast.parse((all_tests / f"{mod}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                top = node.module.split(".")[0]
                if top == "pyverbs":
                    needs.setdefault(node.module, set()).update(a.name for a in node.names)
                elif top == "tests":
                    todo.append(node.module.split(".", 1)[1] if "." in node.module else "")
                    todo += [a.name for a in node.names]
                elif node.module == "args_parser":
                    todo.append("args_parser")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("pyverbs"):
                        needs.setdefault(a.name, set())
                    elif a.name.startswith("tests."):
                        todo.append(a.name.split(".", 1)[1])
    return needs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", nargs="+", default=list(GENERIC_FILES), metavar="TEST_FILE",
                    help="rdma-core test files to run (default: the generic ones)")
    ap.add_argument("--dev", default="rxe0", help="device name passed as rdma-core's --dev "
                    "('' lets rdma-core pick from get_device_list())")
    ap.add_argument("--port", type=int, default=1)
    ap.add_argument("--gid", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per file")
    ap.add_argument("--report", type=Path, default=None, help="write the Markdown table here")
    ap.add_argument("--keep", type=Path, default=None,
                    help="run in this directory and keep it (each file's output.txt, result.json)")
    ap.add_argument("--needs", action="store_true",
                    help="only list the pyverbs modules and names the files import")
    args = ap.parse_args(argv)
    unknown = [f for f in args.files if f not in GENERIC_FILES and not f.startswith("test_")]
    if unknown:
        ap.error(f"--files: {unknown} are not rdma-core test files (test_*); generic ones: "
                 f"{', '.join(GENERIC_FILES)}")
    try:
        sdist = fetch_sdist()
        work = args.keep or Path(tempfile.mkdtemp(prefix="rdmasim-pyverbs-suite-"))
        all_tests = extract_tests(sdist, work / "rdma-core-tests")
        missing = [f for f in args.files if not (all_tests / f"{f}.py").is_file()]
        if missing:
            ap.error(f"--files: {missing} not in {sdist.name}")
        if args.needs:
            for mod, names in sorted(pyverbs_needs(all_tests, args.files).items()):
                print(f"{mod}: {', '.join(sorted(names))}")
            return 0
        results = []
        for name in args.files:
            r = run_file(all_tests, name, work, args.dev or None, args.port, args.gid, args.timeout)
            print(f"{name}: pass {r.count('pass')} skip {r.count('skip')} fail {r.count('fail')} "
                  f"error {r.count('error')} {r.crash}", flush=True)
            results.append(r)
    except SuiteUnavailable as exc:
        print(f"rdma-core pyverbs suite not run: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep is None and "work" in locals():
            shutil.rmtree(work, ignore_errors=True)
    report = markdown_report(results, f"rdma-core tests from pyverbs=={PYVERBS_VERSION}, device "
                             f"{args.dev or '(first of get_device_list())'}")
    if args.report:
        args.report.write_text(report)
    print(report)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
