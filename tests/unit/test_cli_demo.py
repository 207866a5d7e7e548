"""`rdmasim demo` runs end to end and its numbers agree with the capture it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rdmasim.capture import read_pcap
from rdmasim.cli import main


def test_demo_writes_summary_pcap_and_plot(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    rc = main(["demo", "--out", str(out), "--size", "256KiB", "--messages", "2", "--loss", "0.01",
               "--no-scenarios"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["data_intact"] is True
    assert summary["completions"] == {"IBV_WC_SUCCESS": 2}
    assert (out / "psn.png").stat().st_size > 0
    frames = list(read_pcap(out / "demo.pcap"))
    # every frame put on either link is in the capture, dropped ones included
    assert len(frames) == summary["frames_a_to_b"] + summary["frames_b_to_a"]
    data = [f for f in frames if f.fields["opcode"] != 0x11]
    assert len(data) == summary["packets_sent"]
    assert summary["packets_retransmitted"] > 0  # 1 % loss over 256 packets: recovery happened


def test_demo_runs_the_bundled_scenarios_into_its_folder(tmp_path: Path, capsys) -> None:
    from rdmasim.demo_scenarios import BUNDLED
    from rdmasim.results import read_table

    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--size", "64KiB", "--messages", "1"]) == 0
    printed = capsys.readouterr().out
    for name in BUNDLED:
        folder = out / "scenarios" / name
        assert name in printed
        files = [p for p in folder.rglob("*") if p.is_file()]
        table = "flows.parquet" if any(p.name == "flows.parquet" for p in files) else "flows.csv"
        assert {table, "metadata.json", "scenario.toml", "fct_slowdown.png", "fct_slowdown.svg",
                "goodput.png", "queues.png", "timeseries.npz"} <= {p.name for p in files}, name
        assert all(p.stat().st_size > 0 for p in files), name
        flows = read_table(folder, "flows")
        assert len(flows) and (flows["status"] == "ok").all()
        # bytes are conserved: every flow delivered exactly its size
        assert (flows["bytes_delivered"] == flows["size_bytes"]).all()
    for top in ("demo.pcap", "summary.json", "psn.png"):
        assert (out / top).stat().st_size > 0


def test_demo_rejects_bad_input_with_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "rdmasim.cli", "demo", "--out", str(tmp_path),
                           "--size", "12 parsecs"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "cannot read size '12 parsecs'" in proc.stderr


def test_trace_of_a_scenario_file_prints_its_ladder(capsys) -> None:
    root = Path(__file__).resolve().parents[2]
    rc = main(["trace", str(root / "examples" / "incast.toml"), "--max-lines", "8", "--ascii"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "rdmasim trace" in out or "ladder of" in out
    assert "s0" in out  # the switch hop is a lane of its own
    assert "WRITE" in out
