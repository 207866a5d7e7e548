"""The SimPy and ns-3 incast models report what compare.py's table says: deliveries counted by the
simulation, frames on links per hop (two per UDP packet: sender to router, router to receiver),
events, and the run's event loop inside the whole job. Each model runs as compare.py runs it, in a
subprocess."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "bench" / "models"


def results(model: str, *args: str, timeout: float = 300) -> list[dict[str, Any]]:
    cmd = [sys.executable, str(MODELS / model), "--packets-per-sender", "250", "--repeat", "2", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    return [json.loads(line[len("RESULT "):]) for line in lines if line.startswith("RESULT ")]


def check_common(runs: list[dict[str, Any]]) -> None:
    assert [r["repeat_index"] for r in runs] == [0, 1]
    for r in runs:
        assert r["packets"] == r["packets_expected"] == 8 * 250 and r["packets_retx"] == 0
        assert r["frames"] == 2 * r["packets"] and r["frames_per_packet"] == 2.0
        assert 0 < r["run_s"] <= r["whole_s"] == pytest.approx(r["import_s"] + r["setup_s"] + r["run_s"])
    assert runs[0]["events"] == runs[1]["events"]
    assert runs[1]["import_s"] < runs[0]["import_s"]  # the second run of the process imports nothing new


@pytest.mark.skipif(importlib.util.find_spec("simpy") is None, reason="simpy not installed")
@pytest.mark.parametrize("fifo", ["store", "deque"])
def test_simpy_model_counts(fifo: str) -> None:
    runs = results("simpy_incast.py", "--fifo", fifo)
    check_common(runs)
    # six events per packet: sender serialisation, hop to the switch, put, get, egress serialisation,
    # hop to the receiver; plus the end of each of the 8 sender processes (the processes' start-ups
    # are scheduled while the model is built, before the run)
    assert runs[0]["events"] == 6 * runs[0]["packets"] + 8


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ns") is None, reason="ns3 not installed")
def test_ns3_model_counts() -> None:
    runs = results("ns3_incast.py", timeout=600)
    check_common(runs)
    assert runs[0]["events"] > 2 * runs[0]["packets"]
    assert runs[0]["timed_run"] == "Simulator::Run()" and runs[0]["import_s"] > runs[0]["run_s"]
