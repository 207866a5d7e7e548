"""bench/wr_costs.py runs (a few operations, one round) and times every piece; no timing asserts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wr_costs_runs_and_names_every_piece() -> None:
    cmd = [sys.executable, str(ROOT / "bench" / "wr_costs.py"), "--n", "200", "--rounds", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = proc.stdout.splitlines()[1:]
    names = [r.rsplit(None, 1)[0] for r in rows]
    assert names == ["SGE(addr, length, lkey)", "SendWR(wr_id=, opcode=, sg=[sge], send_flags=)",
                     "wr.set_wr_rdma(rkey, addr)", "loop of four field stores, per pass", "qp.post_send(wr)",
                     "post_send_batch, per row"]
    assert all(float(r.rsplit(None, 1)[1]) > 0 for r in rows)
