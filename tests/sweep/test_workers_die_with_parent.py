"""A sweep killed with SIGKILL takes its pool workers with it: none is left running orphaned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sweep_helpers import LOSSY, env


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            out |= {int(x) for x in text.split()}
    except OSError:
        pass
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("State:")), "Z")
    return state not in ("Z", "X")


def test_sigkill_of_a_sweep_ends_its_workers(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "rdmasim.cli",
        "sweep",
        str(LOSSY),
        "--seeds",
        "50",
        "--workers",
        "2",
        "--out",
        str(tmp_path / "sweep"),
        "--quiet",
        "--param",
        "flows[].size=32MiB",
    ]
    # its own session, so that whatever is left can be cleaned up below
    proc = subprocess.Popen(
        argv, env=env(), start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    workers: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2:
            assert proc.poll() is None, "the sweep ended before its workers started"
            assert time.monotonic() < deadline, "no pool workers in 60 s"
            workers = {w for w in _children(proc.pid) if _alive(w)}
            time.sleep(0.02)
        time.sleep(0.5)  # let them take work
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "pool workers outlived the killed sweep"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
