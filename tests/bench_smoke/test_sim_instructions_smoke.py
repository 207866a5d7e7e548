"""bench/sim_instructions.py runs and counts more event-loop instructions for one-packet WRITEs
than for the same data packets in 1 MiB WRITEs (needs valgrind; slow: callgrind runs Python)."""

from __future__ import annotations

import shutil
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
