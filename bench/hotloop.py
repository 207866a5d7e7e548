"""Hot-loop measurement of incast-8 (issue 8): RC WRITEs of `--msg` bytes, `--size` bytes per sender.

8 senders on 100 Gb/s 1 us links to one switch, switch to the receiver 100 Gb/s 1 us, path MTU 1024,
PFC on (the switch's lossless priority 3), DCQCN on the senders with RED ECN marking at the switch
(bench/models/rdmasim_incast.build). Prints one JSON line: data packets, events, wall seconds
(setup included: topology, verbs objects, posting, run to the last completion), packets per wall
second, events per data packet and a fingerprint of the run (simulated end time, events, switch
totals) so two builds can be checked for identical behaviour.

    python bench/hotloop.py --size 100MiB --msg 10MiB       # the issue-8 figure (819,200 packets)
    python bench/hotloop.py --size 10MiB --msg 10MiB        # the callgrind-sized run (81,920 packets)

`--ab DIR_A DIR_B --rounds N` runs the script alternately with PYTHONPATH=DIR_A and DIR_B (each a
directory holding an `rdmasim` package with its built extension), N times each, and prints the
median packets/s of each and the ratio B/A: a wall-clock A/B measured in one run.
`--callgrind DIR` runs it once under `valgrind --tool=callgrind` with that PYTHONPATH and prints
the instruction count of the whole process and per data packet (setup and Python start-up included),
and the instructions inside rs_sim_run (the event loop, inclusive) per data packet.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_size(s: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(B|KiB|MiB|GiB|KB|MB|GB)?\s*", s)
    if not m:
        raise argparse.ArgumentTypeError(f"size {s!r}: expected e.g. 10MiB")
    mult = {None: 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 10**3, "MB": 10**6,
            "GB": 10**9}[m.group(2)]
    return int(m.group(1)) * mult


def run_once(size: int, msg: int, senders: int = 8, seed: int = 1, pcap: str | None = None,
             loss: float = 0.0, cc: str = "dcqcn") -> dict:
    t0 = time.perf_counter()
    c0 = time.process_time()
    sys.path.insert(0, os.path.join(HERE, "models"))
    import rdmasim_incast as m

    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    topo, sim, snd, rcv, facts = m.build(senders, "incast", cc, seed)
    if pcap:
        sim.capture(pcap)
    if loss:
        for link in topo.links:
            link.ab.set_loss(loss)
            link.ba.set_loss(loss)
    n_msg = -(-size // msg)
    ctx_r = Context(rcv)
    pd_r = PD(ctx_r)
    cq_r = CQ(ctx_r, 1)
    dst = MR(pd_r, msg, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    state = []
    for h in snd:
        ctx = Context(h)
        pd = PD(ctx)
        cq = CQ(ctx, 1)
        src = MR(pd, msg, e.IBV_ACCESS_LOCAL_WRITE)
        qp = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=n_msg), sq_sig_all=0))
        qr = QP(pd_r, QPInitAttr(scq=cq_r, rcq=cq_r, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
        connect_qps(qp, qr, path_mtu=1024, timeout=14)
        sge = SGE(src.buf, msg, src.lkey)
        wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, sg=[sge], send_flags=0)
        wr.set_wr_rdma(dst.rkey, dst.buf)
        left = size
        for i in range(n_msg):
            sge.length = min(msg, left)
            left -= sge.length
            wr.wr_id = i
            wr.send_flags = e.IBV_SEND_SIGNALED if i == n_msg - 1 else 0
            qp.post_send(wr)
        state.append((cq, qp))
    for cq, _qp in state:
        wcs = sim.wait_for(cq, 1, timeout=None)
        if not all(w.ok for w in wcs):
            raise RuntimeError(f"WRITE failed: {wcs!r}")
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    if pcap:
        sim.close_capture()
    pkts = sum(qp.stats()["pkts_sent"] for _cq, qp in state)
    totals = {k: int(v) for k, v in topo.switch.totals().items()} if hasattr(topo, "switch") else {}
    return {"packets": pkts, "events": sim.events, "wall_s": wall, "pkts_per_s": pkts / wall,
            "cpu_s": cpu, "pkts_per_cpu_s": pkts / cpu,
            "events_per_pkt": sim.events / pkts, "sim_now_ps": sim.now, "switch_totals": totals}


def child(pythonpath: str, args: list[str], prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [*(prefix or []), sys.executable, os.path.abspath(__file__), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)


def last_json(out: str) -> dict:
    return json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="100MiB", help="bytes per sender (default 100MiB)")
    p.add_argument("--msg", default="10MiB", help="bytes per WRITE (default 10MiB)")
    p.add_argument("--ab", nargs=2, metavar=("DIR_A", "DIR_B"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--callgrind", metavar="DIR")
    p.add_argument("--pcap", help="capture every frame to this file (to compare two builds byte for byte)")
    p.add_argument("--cc", choices=["dcqcn", "none"], default="dcqcn",
                   help="congestion control (default dcqcn)")
    p.add_argument("--loss", type=float, default=0.0, help="i.i.d. loss on every link (default 0)")
    a = p.parse_args()
    run_args = ["--size", a.size, "--msg", a.msg]
    if a.ab:
        rates: dict[str, list[float]] = {d: [] for d in a.ab}
        cpu_rates: dict[str, list[float]] = {d: [] for d in a.ab}
        fp = {}
        for r in range(a.rounds):
            for d in (a.ab if r % 2 == 0 else a.ab[::-1]):  # ABBA order
                res = last_json(child(d, run_args).stdout)
                rates[d].append(res["pkts_per_s"])
                cpu_rates[d].append(res["pkts_per_cpu_s"])
                fp.setdefault(d, {k: res[k] for k in ("packets", "events", "sim_now_ps", "switch_totals")})
        med = {d: statistics.median(v) for d, v in rates.items()}
        cmed = {d: statistics.median(v) for d, v in cpu_rates.items()}
        out = {"a": a.ab[0], "b": a.ab[1], "median_pkts_per_s_a": med[a.ab[0]],
               "median_pkts_per_s_b": med[a.ab[1]], "ratio_b_over_a": med[a.ab[1]] / med[a.ab[0]],
               "cpu_ratio_b_over_a": cmed[a.ab[1]] / cmed[a.ab[0]],
               "max_pkts_per_s_a": max(rates[a.ab[0]]), "max_pkts_per_s_b": max(rates[a.ab[1]]),
               "rates_a": rates[a.ab[0]], "rates_b": rates[a.ab[1]],
               "same_behaviour": fp[a.ab[0]] == fp[a.ab[1]], "fingerprint_a": fp[a.ab[0]],
               "fingerprint_b": fp[a.ab[1]]}
        print(json.dumps(out))
        return
    if a.callgrind:
        with tempfile.TemporaryDirectory() as td:
            outf = os.path.join(td, "cg.out")
            valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={outf}"]
            cp = child(a.callgrind, run_args, valgrind)
            res = last_json(cp.stdout)
            m = re.search(r"Collected\s*:\s*(\d+)", cp.stderr)
            ir = int(m.group(1)) if m else -1
            ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", outf], capture_output=True,
                                 text=True).stdout
            m = re.search(r"^\s*([\d,]+)\s.*:rs_sim_run\b", ann, re.M)
            if not m:  # rs_sim_run inlined into its one caller: the Cython SimCore.run wrapper (+~6k Ir)
                m = re.search(r"^\s*([\d,]+)\s.*:__pyx_pw_\w*SimCore_\d*run\b", ann, re.M)
            run_ir = int(m.group(1).replace(",", "")) if m else -1
        res.update(callgrind_ir=ir, ir_per_pkt=ir / res["packets"], run_ir=run_ir,
                   run_ir_per_pkt=run_ir / res["packets"], pythonpath=a.callgrind)
        print(json.dumps(res))
        return
    print(json.dumps(run_once(parse_size(a.size), parse_size(a.msg), pcap=a.pcap, loss=a.loss, cc=a.cc)))


if __name__ == "__main__":
    main()
