"""The tables of docs/cc-ibcc.md: InfiniBand CC (IbccParams()) on the incast of
tests/cc/dcqcn_util.py and on the hot-spot / victim fabric of tests/cc/ibcc_util.py.

    python docs/gen_ibcc.py                 # seeds 1 2 3 (~40 s)
    python docs/gen_ibcc.py --seeds 1
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cc"))

from dcqcn_util import run_incast  # noqa: E402
from ibcc_util import run_victim  # noqa: E402

from rdmasim.cc_ibcc import IbccParams  # noqa: E402

DURATION_US = {4: 80_000, 8: 40_000}   # as tests/cc/test_ibcc_fabric.py
NOCC_US = 4_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    a = ap.parse_args()
    p = IbccParams()
    print("| N | seed | run (ms) | Jain (2nd half) | sum (Gb/s) | queue mean (KB) | queue max (KB) "
          "| no CC: queue mean (KB) | BECNs per flow |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (4, 8):
        none = run_incast(n, None, None, NOCC_US)
        for seed in a.seeds:
            r = run_incast(n, "ibcc", p, DURATION_US[n], seed=seed)  # type: ignore[arg-type]
            print(f"| {n} | {seed} | {DURATION_US[n] // 1000} | {r.jain:.4f} | {r.sum_gbps:.1f} "
                  f"| {r.queue_mean / 1e3:.1f} | {r.queue_max / 1e3:.1f} | {none.queue_mean / 1e3:.1f} "
                  f"| {min(r.cnps)}-{max(r.cnps)} |")
    print()
    print("| CC | victim (Gb/s) | contributors (Gb/s) | Jain (contributors) | sl -> sr paused (ms) "
          "| contributors' CCTI at the end |")
    print("|---|---|---|---|---|---|")
    alone = run_victim(None, None, 20_000, hot=False)
    print(f"| victim alone | {alone.victim_gbps:.1f} | - | - | - | - |")
    for cc in (None, "dcqcn", "ibcc"):
        r = run_victim(cc, p if cc == "ibcc" else None, 20_000)
        ccti = ", ".join(map(str, r.ccti)) if cc == "ibcc" else "-"
        print(f"| {cc or 'none'} | {r.victim_gbps:.1f} | {', '.join(f'{x:.1f}' for x in r.hot_gbps)} "
              f"| {r.hot_jain:.3f} | {r.paused_us / 1e3:.2f} | {ccti} |")


if __name__ == "__main__":
    main()
