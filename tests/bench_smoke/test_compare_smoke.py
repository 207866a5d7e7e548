"""bench/compare.py --quick runs end to end and reports, for every row, data packets delivered once
with retransmissions apart, both timings ("run only" within "whole job"), events and frames per
data packet and what the row simulates (a smoke test: no assertion on speed)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODES = ("flows", "flows1qp", "write1MiB", "write1000")


def test_quick_compare_reports_counts_and_both_timings(tmp_path: Path) -> None:
    only = "rdmasim,simpy" if importlib.util.find_spec("simpy") else "rdmasim"
    cmd = [sys.executable, str(ROOT / "bench" / "compare.py"), "--quick", "--packets", "1600", "--only", only,
           "--rdmasim-loss", "0.01", "--out", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (path,) = tmp_path.glob("compare-*.json")
    doc = json.loads(path.read_text())
    rows = {r["name"]: r for r in doc["results"]}
    assert {f"rdmasim:{m}" for m in MODES} <= set(rows)
    for name, r in rows.items():
        assert r["packets"] == r["packets_expected"] == 1600, name
        assert 0 < r["run_s_median"] <= r["whole_s_median"], name
        assert r["packets_per_s_run"] >= r["packets_per_s_whole"] > 0, name
        assert r["events_per_packet"] > 1 and r["frames_per_packet"] >= 2, name
        assert r["simulates"] and r["timed_run"] and r["timed_whole"], name
        if r["simulator"] == "rdmasim":  # loss on the receiver's link: retransmissions, counted apart
            assert r["packets_retx"] > 0 and r["ecn_marks"] is not None and r["cnps"] is not None, name
            assert r["payload_bytes"] == (1000 if r["mode"] == "write1000" else 1024), name
            assert r["qps_per_sender"] == 1, name  # 200 packets per sender: one flow / QP each
    flows = rows["rdmasim:flows"]["simulates"]
    assert "size-only" in flows and "NEW QP" in flows
    assert set(doc["ratios"]) == {"run", "whole"}
    md = path.with_suffix(".md").read_text()
    assert "| run only s | whole job s |" in md and md.count("\n[") == len(rows)
    for col in ("data pkts (once)", "retx", "events/pkt", "frames/pkt", "pkts/s run only",
                "pkts/s whole job"):
        assert col in proc.stdout
