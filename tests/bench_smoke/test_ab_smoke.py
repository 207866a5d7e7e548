"""bench/ab.py times one scaling point in two trees, each importing its own build (smoke test: the
same tree twice, no timing asserts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AB = ROOT / "bench" / "ab.py"
SPEC = '{"kind": "qps", "flows": 10, "total_pkts": 2000, "cc": false}'


def test_same_tree_twice_reports_both_and_same_results() -> None:
    proc = subprocess.run([sys.executable, str(AB), str(ROOT), str(ROOT), "--rounds", "2", "--spec", SPEC],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "run_s   A min" in proc.stdout and "user_s  A min" in proc.stdout
    assert "same simulated results (events, sim time, data packets, frames): yes" in proc.stdout
    assert proc.stderr.count("round ") == 4


def test_a_zero_baseline_gives_no_ratio_instead_of_failing() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import ab

    assert ab.ratio(0.5, 0.0) == "n/a" and ab.ratio(0.5, 0.25) == "2.000"


def test_a_directory_that_is_no_source_tree_is_refused(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(AB), str(tmp_path), str(ROOT), "--spec", SPEC],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "not an rdmasim source tree" in proc.stderr


def test_bad_spec_is_refused_with_the_reason() -> None:
    proc = subprocess.run([sys.executable, str(AB), str(ROOT), str(ROOT), "--spec", "{kind: qps}"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--spec is not JSON" in proc.stderr
