"""bench/sim_instructions.py runs and counts more event-loop instructions for one-packet WRITEs
than for the same data packets in 1 MiB WRITEs (needs valgrind; slow: callgrind runs Python)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_one_packet_writes_cost_more_instructions_per_packet() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import sim_instructions as si
    finally:
        sys.path.pop(0)
    big = si.instructions("write1MiB", 2, 1024, "rxe")
    small = si.instructions("write1024-batch", 2, 1024, "rxe")
    assert 1.3 < small / big < 2.5


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")
def test_base_tree_counts_both_builds_side_by_side() -> None:
    """``--base TREE`` with this very tree as the base: the same build counted twice, so a mode
    costs the same per packet in both columns (to within callgrind's run-to-run jitter)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, str(ROOT / "bench" / "sim_instructions.py"), "--senders", "2",
           "--packets-per-sender", "64", "--modes", "write1024", "--base", str(ROOT)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    rows = [line.split() for line in out.splitlines() if line.startswith("write1024 ")]
    assert len(rows) == 1, out
    _, base, this, ratio, rate_base, rate_this = rows[0]
    assert float(base) > 1000 and abs(float(ratio) - 1.0) < 0.01, out
    assert float(rate_base) == float(rate_this) == 1.0  # the reference mode itself
