"""Cost of a verbs call through librdmasim_ibverbs.so and the fabric daemon (docs/c-programs.md).

Runs tests/fabricd/rs_verbs.c (``loop N``: N signaled 8-byte RDMA WRITEs between rdmasim0 and
rdmasim1, each ``ibv_post_send`` then ``ibv_poll_cq`` until its completion) under ``rdmasim exec``
for N = 0 and N = --iters, and reports post_send+poll_cq pairs per second of wall time (the
difference of the two runs, so start-up and set-up cancel) and the daemon's requests per pair.

    python bench/fabricd_calls.py --iters 5000
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rdmasim

ROOT = Path(__file__).resolve().parents[1]


def run(exe: str, iters: int, fabric: str) -> tuple[float, int]:
    # the child imports the rdmasim this script imported (a clone's build or an installed one)
    env = dict(os.environ, PYTHONPATH=str(Path(rdmasim.__file__).resolve().parents[1]), RDMASIM_IDLE_MS="0")
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, "--", exe, "loop", str(iters)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0 or "OK" not in r.stdout:
        raise SystemExit(f"rs_verbs loop {iters} failed: {r.stdout}{r.stderr}")
    from rdmasim.fabricd.launch import socket_path

    log = socket_path(fabric).with_suffix(".log")
    for _ in range(100):  # the daemon writes its summary as it exits
        m = re.findall(r"served (\d+) requests", log.read_text()) if log.exists() else []
        if m:
            return wall, int(m[-1])
        time.sleep(0.05)
    raise SystemExit(f"no summary in {log}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=5000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        exe = str(Path(d) / "rs_verbs")
        src = str(ROOT / "tests/fabricd/rs_verbs.c")
        subprocess.run(["gcc", "-std=gnu11", "-O2", "-o", exe, src, "-libverbs"], check=True)
        tag = f"bench{os.getpid()}"
        w0, c0 = run(exe, 0, tag + "a")
        w1, c1 = run(exe, a.iters, tag + "b")
    pairs_s = a.iters / (w1 - w0)
    print(f"post_send+poll_cq pairs: {a.iters} in {w1 - w0:.3f} s wall -> {pairs_s:,.0f} pairs/s; "
          f"{(c1 - c0) / a.iters:.2f} daemon requests per pair")


if __name__ == "__main__":
    main()
