"""The NSCC and REPS tables of docs/congestion-control.md: N long RoCE flows with NSCC into one
100 Gb/s bottleneck (the incast of tests/fabric/delay_cc_util.py, ECN at 0.2 / 0.8 BDP), queue,
throughput and fairness over the second half of each run, with no congestion control beside it;
and how REPS and oblivious spraying share packets among 8 paths of which some always mark ECN.

    python docs/gen_nscc.py          # both tables (~15 s)
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from rdmasim import _core  # noqa: E402
from rdmasim.cc_nscc import NsccParams  # noqa: E402
from tests.fabric.delay_cc_util import LINE_BPS, base_rtt_ps, run_incast  # noqa: E402


def nscc() -> None:
    rtt = base_rtt_ps()
    bdp = LINE_BPS * rtt / 8e12
    ecn = {"kmin": round(0.2 * bdp), "kmax": round(0.8 * bdp), "pmax": 1.0}
    print(f"base RTT {rtt / 1e6:.2f} us, BDP {bdp / 1e3:.1f} KB, "
          f"ECN kmin {ecn['kmin']} B kmax {ecn['kmax']} B")
    print("| CC | flows | run | queue median | queue p99 | goodput | Jain | PFC pauses |")
    print("|---|---|---|---|---|---|---|---|")
    for algo, n, dur in [("nscc", 4, 2_000), ("nscc", 8, 2_000), ("nscc", 16, 2_000), ("nscc", 16, 10_000),
                         ("nscc", 32, 2_000), ("nscc", 32, 10_000), ("none", 8, 2_000)]:
        params = NsccParams.for_path(rtt, mtu=1024) if algo == "nscc" else None
        r = run_incast(n, algo, params, duration_us=dur, ecn=ecn)
        q = r.queue_bytes
        print(f"| {algo} | {n} | {dur / 1000:g} ms | {np.median(q) / 1e3:.1f} KB "
              f"| {np.percentile(q, 99) / 1e3:.1f} KB | {r.goodput_fraction:.3f} | {r.jain:.4f} "
              f"| {r.pause_frames} |")


def reps() -> None:
    print("| policy | paths marking | share of packets on them | recycled |")
    print("|---|---|---|---|")
    for bad in ([0], [0, 1], [0, 1, 2, 3]):
        for kind in ("oblivious", "reps"):
            per, st = _core.uet_lb_paths(_core.uet_lb_default_cfg(kind), 5, 8, bad, 20_000)
            share = sum(per[b] for b in bad) / sum(per)
            print(f"| {kind} | {len(bad)} of 8 | {share:.3f} | {st['recycled'] / st['sent']:.3f} |")


if __name__ == "__main__":
    nscc()
    reps()
