"""The TIMELY and Swift tables of docs/cc-timely.md and docs/cc-swift.md: N long flows into one
100 Gb/s bottleneck (the incast of tests/fabric/delay_cc_util.py), RTT and fairness over the second
half of each run.

    python docs/gen_delay_cc.py             # both tables, 10-40 ms per run (~25 s)
    python docs/gen_delay_cc.py timely      # one of them
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from rdmasim.cc_swift import SwiftParams  # noqa: E402
from rdmasim.cc_timely import TimelyParams  # noqa: E402
from tests.fabric.delay_cc_util import base_rtt_ps, run_incast  # noqa: E402

US = 1e6


def timely() -> None:
    rtt = base_rtt_ps()
    rows = [("for_path", {}, n, 10_000) for n in (4, 8, 16)]
    rows += [("for_path, 40 ms", {}, n, 40_000) for n in (4, 8, 16)]
    rows += [("min_rtt = base RTT (paper ratio)", {"min_rtt": rtt}, 8, 10_000),
             ("segment = 16 KB (paper)", {"segment": "16KB"}, 8, 10_000),
             ("min_rtt = 42.0 us, 40 ms", {"min_rtt": 42_000_000}, 8, 40_000)]
    print("| setting | N | T_low (us) | T_high (us) | min_rtt (us) | RTT p5 / p50 / p95 (us) "
          "| RTT in [T_low, T_high] | goodput / line | Jain |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, kw, n, dur in rows:
        p = TimelyParams.for_path("100Gbps", rtt, **kw)
        c = p.to_c()
        r = run_incast(n, "timely", p, duration_us=dur)
        inside = np.mean((r.rtt_ps >= c["t_low_ps"]) & (r.rtt_ps <= c["t_high_ps"]))
        q = np.percentile(r.rtt_ps, [5, 50, 95]) / US
        print(f"| {label} | {n} | {c['t_low_ps'] / US:.1f} | {c['t_high_ps'] / US:.0f} "
              f"| {c['min_rtt_ps'] / US:.1f} | {q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f} | {inside:.3f} "
              f"| {r.goodput_fraction:.3f} | {r.jain:.3f} |")


def swift() -> None:
    rtt = base_rtt_ps()
    p = SwiftParams.for_path("100Gbps", rtt, hops=1, mtu=1024)
    print("| N | run (ms) | ACKs / window | cwnd p50 (pkts) | target p50 (us) | RTT p5 / p50 / p95 (us) "
          "| mean RTT / mean target | goodput / line | Jain |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, apw, dur in ((4, 8, 10_000), (8, 8, 10_000), (16, 8, 10_000), (64, 8, 20_000), (4, 8, 40_000),
                        (4, 4, 10_000), (4, 0, 10_000)):
        q = SwiftParams.for_path("100Gbps", rtt, hops=1, mtu=1024, acks_per_window=apw)
        r = run_incast(n, "swift", q, duration_us=dur)
        tg = np.asarray([s["target_ps"] for row in r.state_series for s in row], dtype=float)
        cw = np.asarray([s["cwnd"] for row in r.state_series for s in row], dtype=float)
        x = np.percentile(r.rtt_ps, [5, 50, 95]) / US
        print(f"| {n} | {dur // 1000} | {apw or 'every packet'} | {np.median(cw):.1f} "
              f"| {np.median(tg) / US:.2f} | {x[0]:.2f} / {x[1]:.2f} / {x[2]:.2f} "
              f"| {np.mean(r.rtt_ps) / np.mean(tg):.3f} "
              f"| {r.goodput_fraction:.3f} | {r.jain:.3f} |")
    print(f"\nbase RTT {rtt / US:.2f} us; base_target {p.to_c()['base_target_ps'] / US:.2f} us, "
          f"h {p.to_c()['hop_scale_ps'] / US:.2f} us x 1 hop, fs_range {p.to_c()['fs_range_ps'] / US:.2f} us")


if __name__ == "__main__":
    which = sys.argv[1:] or ["timely", "swift"]
    for w in which:
        {"timely": timely, "swift": swift}[w]()
        print()
