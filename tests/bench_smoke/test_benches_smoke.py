"""The pytest-benchmark benches in bench/ run (once each, benchmarking off): a smoke test that keeps
them working, no timing asserts.  Measure with python -m pytest bench/ --benchmark-enable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_bench_runs_once() -> None:
    files = sorted(str(p) for p in (ROOT / "bench").glob("test_bench_*.py"))
    assert len(files) >= 2
    proc = subprocess.run([sys.executable, "-m", "pytest", *files, "-q", "-p", "no:cacheprovider",
                           "--benchmark-disable"], capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "failed" not in proc.stdout
