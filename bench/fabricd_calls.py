"""Cost of a verbs call through librdmasim_ibverbs.so and the fabric daemon (docs/c-programs.md).

Runs tests/fabricd/rs_verbs.c (``loop N``: N signaled 8-byte RDMA WRITEs between rdmasim0 and
rdmasim1, each ``ibv_post_send`` then ``ibv_poll_cq`` until its completion) under ``rdmasim exec``
for N = 0 and N = --iters, and reports post_send+poll_cq pairs per second of wall time (the
difference of the two runs, so start-up and set-up cancel) and the daemon's requests per pair.

    python bench/fabricd_calls.py --iters 5000
    python bench/fabricd_calls.py --iters 3000 --pyverbs

``--pyverbs``: the same loop written with rdmasim's own pyverbs (``rdmasim.pyverbs`` attached to the
daemon, rdmasim/pyverbs/_remote.py) instead of the C program.
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


# rs_verbs.c's `loop N` with rdmasim.pyverbs: N signaled 8-byte WRITEs from rxe0 to rxe1
PV_LOOP = """
import sys
import rdmasim.pyverbs as ns
ns.install()
import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
def side(name):
    ctx = Context(name=name); pd = PD(ctx); mr = MR(pd, 4096, acc); cq = CQ(ctx, 16)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qp.to_init(QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1, qp_access_flags=acc))
    return ctx, mr, cq, qp
a, b = side("rxe0"), side("rxe1")
for x, y in ((a, b), (b, a)):
    at = QPAttr(port_num=1, dest_qp_num=y[3].qp_num, timeout=14, retry_cnt=7, rnr_retry=7, min_rnr_timer=12,
                max_rd_atomic=1, max_dest_rd_atomic=1)
    at.ah_attr = AHAttr(gr=GlobalRoute(dgid=str(y[0].query_gid(1, 0))), is_global=1, port_num=1)
    x[3].to_rtr(at); x[3].to_rts(at)
wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(a[1].buf, 8, a[1].lkey)],
            send_flags=e.IBV_SEND_SIGNALED)
wr.set_wr_rdma(b[1].rkey, b[1].buf)
for _ in range(int(sys.argv[1])):
    a[3].post_send(wr)
    while a[2].poll()[0] == 0:
        pass
print("OK")
"""


def run(exe: str | list[str], iters: int, fabric: str) -> tuple[float, int]:
    # the child imports the rdmasim this script imported (a clone's build or an installed one)
    env = dict(os.environ, PYTHONPATH=str(Path(rdmasim.__file__).resolve().parents[1]), RDMASIM_IDLE_MS="0")
    t0 = time.perf_counter()
    prog = [exe, "loop"] if isinstance(exe, str) else exe
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, "--", *prog, str(iters)]
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
    p.add_argument("--pyverbs", action="store_true", help="the loop in rdmasim.pyverbs, not C")
    a = p.parse_args()
    if a.pyverbs:
        tag = f"benchpv{os.getpid()}"
        prog = [sys.executable, "-c", PV_LOOP]
        w0, c0 = run(prog, 0, tag + "a")
        w1, c1 = run(prog, a.iters, tag + "b")
        print(f"rdmasim.pyverbs post_send+poll pairs: {a.iters} in {w1 - w0:.3f} s wall -> "
              f"{a.iters / (w1 - w0):,.0f} pairs/s; {(c1 - c0) / a.iters:.2f} daemon requests per pair")
        return
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
