"""What congestion control costs the event loop: incast-8 with each built-in algorithm, as a ratio
to no congestion control, measured in one run.

8 senders on 100 Gb/s 1 us links to one switch, switch to the receiver 100 Gb/s 1 us, path MTU
1024, PFC on (priority 3), the switch marking ECN with the DCQCN paper's RED profile (Kmin 5 KB,
Kmax 200 KB, Pmax 1 %) for every algorithm; each sender RDMA WRITEs ``--size`` bytes in
``--msg``-byte WRITEs (verbs API), so every algorithm sends the same data packets (events differ:
ACKs, CNPs, pacer wake-ups).  Timed: the event loop only (``sim.wait_for`` until every sender's
last WRITE completes), not setup.  Each round runs every algorithm once in a fresh process, in
turns (a slow spell of a shared machine hits them all); the table shows the median over rounds,
the ratio of medians to ``none`` and the run's events and data packets.

    python bench/cc_cost.py                          # 8 x 10 MiB (81,920 packets), 5 rounds
    python bench/cc_cost.py --size 40MiB --rounds 7
    python bench/cc_cost.py --one dcqcn              # one run, one JSON line (what a round runs)

Rows besides the algorithms: ``<algo>-nomark`` runs it with ECN marking off (it never reacts, the
network behaves as without CC: the difference to ``none`` is the algorithm's own bookkeeping);
``<algo>@cx6`` uses the cx6 NIC profile, whose responder coalesces 4 ACKs into one (DCTCP asks
for an ACK per packet); ``dctcp-ackN`` runs DCTCP asking for an ACK every N packets
(``DctcpParams.ack_every``; 2 is DCTCP's delayed ACK); ``hpcc-ackN`` runs HPCC asking for an ACK
every N packets (``HpccParams.ack_every``; also on the packet that fills the window and the first
after each reference update); ``none-ackN`` runs without congestion control with every N-th packet
asking for an ACK (the NIC's ``ack_req_interval``; rxe's is 66).

DCTCP, HPCC and Swift ask for an ACK per packet (as the HPCC authors' ns-3 does for every
algorithm), so their runs simulate about twice the frames of a run without congestion control at
rxe's cadence (one ACK per 66 packets and per message).  ``none-ack1`` is no congestion control
with the same ACK frames: the column "vs none-ack1" is what the algorithm itself costs over the
same traffic, "vs none" what the run costs, ACK traffic included.  The default rows include it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import rdmasim

HERE = os.path.dirname(os.path.abspath(__file__))
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}


def parse_size(s: str) -> int:
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if s.endswith(u):
            return int(s[: -len(u)]) * m
    return int(s)


def run_once(algo: str, size: int, msg: int, senders: int = 8, seed: int = 1) -> dict:
    import rdmasim
    from rdmasim.cc_dctcp import DctcpParams
    from rdmasim.cc_hpcc import HpccParams
    from rdmasim.cc_swift import SwiftParams
    from rdmasim.cc_timely import TimelyParams
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    # "<algo>-nomark": the same algorithm with ECN marking off at the switch: it never reacts, so
    # the network behaves as without CC and the difference to "none" is the algorithm's own cost
    # "<algo>@cx6": the hosts use the cx6 NIC profile (the responder coalesces 4 ACKs into one)
    algo_nic, _, nic = algo.partition("@")
    name, nomark = algo_nic.removesuffix("-nomark"), algo_nic.endswith("-nomark")
    name, _, ack = name.partition("-ack")  # "dctcp-ack2", "hpcc-ack4": an ACK every N packets
    ecn = {**ECN, "priorities": []} if nomark else ECN
    t = rdmasim.incast(senders, rate="100Gbps", delay="1us", mtu=1024, seed=seed, switch_config={"ecn": ecn})
    for h in t.hosts:
        if name == "none" and ack:  # "none-ack1": no CC, the NIC asks for an ACK every N packets
            h.set_nic_profile(nic or "rxe", ack_req_interval=int(ack))
        elif nic:
            h.set_nic_profile(nic)
        if name == "dctcp":  # the window for this path's ~4.2 us base RTT
            h.set_congestion_control("dctcp", DctcpParams.for_path("100Gbps", "4190ns", mtu=1024,
                                                                   ack_every=int(ack or 1)))
        elif name == "timely":  # thresholds for the same path
            h.set_congestion_control("timely", TimelyParams.for_path("100Gbps", "4190ns"))
        elif name == "swift":  # targets for the same path, one switch
            h.set_congestion_control("swift", SwiftParams.for_path("100Gbps", "4190ns", hops=1, mtu=1024))
        elif name == "hpcc":  # T = the same path's base RTT
            p_hpcc = HpccParams.for_path("100Gbps", "4190ns", ack_every=int(ack or 1))
            h.set_congestion_control("hpcc", p_hpcc)
        elif name == "ibcc":  # the table for this link rate and MTU (= IbccParams())
            from rdmasim.cc_ibcc import IbccParams

            h.set_congestion_control("ibcc", IbccParams.for_path("100Gbps", 1024))
        elif name != "none":
            h.set_congestion_control(name)
    n_msg = -(-size // msg)
    ctx_r = Context(t.receiver)
    pd_r = PD(ctx_r)
    cq_r = CQ(ctx_r, 1)
    dst = MR(pd_r, msg, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    state = []
    for h in t.senders:
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
        state.append((cq, qp, ctx, pd, src, qr))
    ev0 = t.sim.events
    t0 = time.perf_counter()
    for cq, *_ in state:
        wcs = t.sim.wait_for(cq, 1, timeout=None)
        if not all(w.ok for w in wcs):
            raise RuntimeError(f"{algo}: WRITE failed: {wcs!r}")
    loop_s = time.perf_counter() - t0
    pkts = sum(qp.stats()["pkts_sent"] for _cq, qp, *_ in state)
    acks = sum(qp.stats()["acks_rcvd"] for _cq, qp, *_ in state)
    return {"algo": algo, "loop_s": loop_s, "events": t.sim.events - ev0, "packets": pkts,
            "acks": acks, "sim_end_us": t.sim.now / 1e6}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="10MiB", help="bytes per sender (default 10MiB)")
    p.add_argument("--msg", default="1MiB", help="bytes per WRITE (default 1MiB)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--algos", default=None, help="comma-separated (default: none and every built-in)")
    p.add_argument("--one", help="run this algorithm once and print one JSON line")
    p.add_argument("--instructions", action="store_true",
                   help="count the event loop's instructions with callgrind instead of timing it (one run "
                        "each: exact for a build, whatever the machine's load; about 50x slower)")
    a = p.parse_args()
    size, msg = parse_size(a.size), parse_size(a.msg)
    if a.one:
        print(json.dumps(run_once(a.one, size, msg)))
        return
    if a.algos:
        algos = a.algos.split(",")
    else:
        from rdmasim import _core
        from rdmasim.cc import ALGORITHM_NAMES

        built = _core.cc_kinds()
        algos = [n for n in ALGORITHM_NAMES if n == "none" or built.get(n, (0, False))[1]]
        algos.insert(1, "none-ack1")
        # delay-based algorithms ignore marks: no -nomark row for them
        algos += [f"{n}-nomark" for n in algos if n in ("dcqcn", "dctcp", "ibcc")] + ["none@cx6", "dctcp@cx6"]
    if a.instructions:
        print_instructions(algos, a.size, a.msg, size)
        return
    res: dict[str, list[dict]] = {n: [] for n in algos}
    env = dict(os.environ)
    # the children import the rdmasim this script imported (a clone's build or an installed one)
    env.setdefault("PYTHONPATH", os.path.dirname(os.path.dirname(os.path.abspath(rdmasim.__file__))))
    for r in range(a.rounds):
        for n in algos if r % 2 == 0 else algos[::-1]:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", n, "--size", a.size,
                                  "--msg", a.msg], capture_output=True, text=True, check=True, env=env).stdout
            res[n].append(json.loads(out.strip().splitlines()[-1]))
    def med(n: str) -> float | None:
        return statistics.median(x["loop_s"] for x in res[n]) if n in res else None

    base, base_ack1 = med("none"), med("none-ack1")
    print(f"incast-8, {a.size} per sender in {a.msg} WRITEs, median of {a.rounds} rounds")
    print(f"{'algorithm':14} {'loop s':>8} {'vs none':>8} {'vs none-ack1':>12} {'events':>9} "
          f"{'events/pkt':>10} {'ACKs/pkt':>8} {'packets':>8} {'sim us':>8}")
    for n, xs in res.items():
        m, x = med(n), xs[0]
        ratio = f"{m / base:.2f}" if base else "-"
        ratio1 = f"{m / base_ack1:.2f}" if base_ack1 else "-"
        print(f"{n:14} {m:8.3f} {ratio:>8} {ratio1:>12} {x['events']:9d} {x['events'] / x['packets']:10.2f} "
              f"{x['acks'] / x['packets']:8.3f} {x['packets']:8d} {x['sim_end_us']:8.1f}")


def print_instructions(algos: list[str], size_arg: str, msg_arg: str, size: int) -> None:
    """Each algorithm's event-loop instructions per data packet (callgrind) and ratio to none."""
    sys.path.insert(0, HERE)
    from sim_instructions import loop_instructions

    me = os.path.abspath(__file__)
    counts = {n: loop_instructions([me, "--one", n, "--size", size_arg, "--msg", msg_arg]) for n in algos}
    packets = 8 * -(-size // 1024)  # every sender's data packets at MTU 1024
    base, base_ack1 = counts.get("none"), counts.get("none-ack1")
    print(f"incast-8, {size_arg} per sender in {msg_arg} WRITEs: event-loop instructions (callgrind)")
    print(f"{'algorithm':14} {'instructions':>14} {'per packet':>11} {'vs none':>8} {'vs none-ack1':>12}")
    for n, c in counts.items():
        ratio = f"{c / base:.2f}" if base else "-"
        ratio1 = f"{c / base_ack1:.2f}" if base_ack1 else "-"
        print(f"{n:14} {c:14,d} {c / packets:11.0f} {ratio:>8} {ratio1:>12}")


if __name__ == "__main__":
    main()
