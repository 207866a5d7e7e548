"""The DCTCP table of docs/congestion-control.md: rdmasim's bottleneck queue and throughput beside
the DCTCP paper's analysis (Alizadeh et al., SIGCOMM 2010, sec. 3.3), from the incast of
tests/fabric/dctcp_util.py.

    python docs/gen_dctcp.py            # N = 4, 8, 16; K = 20 KB; 10 ms per run (~10 s)
"""

from __future__ import annotations

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fabric"))

from dctcp_util import run_dctcp_incast  # noqa: E402


def main() -> None:
    print("| N | pace | K (KB) | C x RTT (KB) | Q_max = K + N (KB) | rdmasim p95 (KB) | A model (KB) "
          "| rdmasim p95 - p5 (KB) | rdmasim p5 (KB) | goodput / line | Jain |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for pace in (False, True):
        for n in (4, 8, 16):
            r = run_dctcp_incast(n, k_bytes=20_000, duration_us=10_000 if not pace else 20_000, pace=pace)
            k, bdp, pkt = r.k_bytes / r.pkt_bytes, r.bdp_bytes / r.pkt_bytes, r.pkt_bytes
            q_max = (k + n) * pkt
            amp = 0.5 * math.sqrt(2 * n * (bdp + k)) * pkt
            print(f"| {n} | {'on' if pace else 'off'} | {r.k_bytes / 1e3:.1f} | {r.bdp_bytes / 1e3:.1f} "
                  f"| {q_max / 1e3:.1f} | {r.q_p95 / 1e3:.1f} | {amp / 1e3:.1f} "
                  f"| {(r.q_p95 - r.q_p5) / 1e3:.1f} "
                  f"| {r.q_p5 / 1e3:.1f} | {r.goodput_fraction:.3f} | {r.jain:.3f} |")
    low = run_dctcp_incast(8, k_bytes=2_000, duration_us=10_000, pace=False)
    print(f"\nK = 2 KB < C x RTT / 7 = {low.bdp_bytes / 7e3:.1f} KB, N = 8, pace off: goodput / line "
          f"{low.goodput_fraction:.3f}, queue p5 {low.q_p5 / 1e3:.1f} KB")


if __name__ == "__main__":
    main()
