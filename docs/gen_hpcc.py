"""The HPCC tables and figures of docs/cc-hpcc.md.

    python docs/gen_hpcc.py incast   # incast table + docs/img/hpcc-incast-queue.png (~15 s)
    python docs/gen_hpcc.py acks     # the ACK-coalescing (ack_every) incast table (~10 s)
    python docs/gen_hpcc.py fct      # the web-search FCT sweep (hpcc_fct.toml, 6 runs, ~2 min on
                                     # 2 cores) + table + docs/img/hpcc-fct-slowdown.png
    python docs/gen_hpcc.py fct DIR  # the table and figure from a sweep folder already made by
                                     # rdmasim sweep rdmasim/data/scenarios/hpcc_fct.toml \
                                     #   --param congestion_control.algorithm=dcqcn,hpcc,timely \
                                     #   --param traffic.poisson.load=0.3,0.5 --out DIR
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, ROOT)

from rdmasim.cc import DcqcnParams  # noqa: E402
from rdmasim.cc_hpcc import HpccParams  # noqa: E402
from tests.cc.dcqcn_util import run_incast  # noqa: E402
from tests.fabric.delay_cc_util import PAYLOAD_LINE_BPS, base_rtt_ps  # noqa: E402

DURATION_US = 20_000
SCENARIO = os.path.join(ROOT, "rdmasim", "data", "scenarios", "hpcc_fct.toml")
SHORT_BYTES = 100_000  # "short flows": at most 100 KB (55 % of the web-search flows)
BUCKETS = (0, 10_000, 20_000, 30_000, 50_000, 80_000, 200_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
           30_000_001)


def incast() -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for n in (8, 16):
        runs.append(("HPCC", n, run_incast(n, "hpcc", HpccParams.for_path("100Gbps", base_rtt_ps()),
                                           duration_us=DURATION_US, sample_period_ps=100_000)))
        runs.append(("DCQCN", n, run_incast(n, "dcqcn", DcqcnParams.paper(), duration_us=DURATION_US,
                                            sample_period_ps=100_000)))
    print("| CC | N | queue mean / p50 / p99 / max (KB) | payload rate / payload line | Jain | PFC XOFF |")
    print("|---|---|---|---|---|---|")
    for name, n, r in runs:
        q = r.queue_bytes[r.t_us >= DURATION_US / 2] / 1e3
        p = np.percentile(q, [50, 99])
        print(f"| {name} | {n} | {q.mean():.1f} / {p[0]:.1f} / {p[1]:.1f} / {q.max():.1f} "
              f"| {r.sum_gbps * 1e9 / PAYLOAD_LINE_BPS:.3f} | {r.jain:.4f} | {r.pause_frames} |")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    for name, n, r in sorted(runs, key=lambda x: x[0] == "HPCC"):  # HPCC drawn last, on top
        if n != 8:
            continue
        k = 100  # 10 us of 100 ns samples: the maximum of each
        m = len(r.queue_bytes) // k * k
        peaks = r.queue_bytes[:m].reshape(-1, k).max(axis=1)
        axes[0].plot(r.t_us[:m:k] / 1e3, peaks / 1e3, lw=0.7, label=name)
        sel = (r.t_us >= 10_000) & (r.t_us < 10_200)
        axes[1].plot(r.t_us[sel] / 1e3, r.queue_bytes[sel] / 1e3, lw=0.8, label=name)
    axes[0].set(xlabel="time (ms)", ylabel="bottleneck queue, max per 10 µs (KB)", yscale="symlog",
                title="8:1 incast, 100 Gb/s: whole run")
    axes[1].set(xlabel="time (ms)", ylabel="bottleneck queue (KB)", title="200 µs of the steady state")
    for ax in axes:
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    out = os.path.join(HERE, "img", "hpcc-incast-queue.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def fct(folder: str | None) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rdmasim.sweep.result import load_sweep

    if folder is None:
        folder = os.path.join(ROOT, "sweeps", "hpcc_fct")
        subprocess.run([sys.executable, "-m", "rdmasim", "sweep", SCENARIO, "--param",
                        "congestion_control.algorithm=dcqcn,hpcc,timely", "--param",
                        "traffic.poisson.load=0.3,0.5", "--out", folder, "-q", "--no-plot"],
                       check=True, env={**os.environ, "PYTHONPATH": ROOT})
    flows = load_sweep(folder).flows_records()
    groups: dict[tuple[str, float], list[tuple[int, float]]] = {}
    for f in flows:
        if f["slowdown"] is None:
            continue
        key = (f["congestion_control.algorithm"], float(f["traffic.poisson.load"]))
        groups.setdefault(key, []).append((f["size_bytes"], f["slowdown"]))
    print("| load | CC | flows | short flows (<= 100 KB) | short p50 / p95 / p99 slowdown "
          "| all p50 / p95 / p99 | long (> 1 MB) p50 / p95 |")
    print("|---|---|---|---|---|---|---|")
    for (algo, load), rows in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        size = np.asarray([r[0] for r in rows])
        sd = np.asarray([r[1] for r in rows])
        short, long_ = sd[size <= SHORT_BYTES], sd[size > 1_000_000]
        s, a, g = (np.percentile(short, [50, 95, 99]), np.percentile(sd, [50, 95, 99]),
                   np.percentile(long_, [50, 95]))
        print(f"| {load:.0%} | {algo} | {len(sd)} | {len(short)} | {s[0]:.2f} / {s[1]:.2f} / {s[2]:.2f} "
              f"| {a[0]:.2f} / {a[1]:.2f} / {a[2]:.2f} | {g[0]:.2f} / {g[1]:.2f} |")
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    loads = sorted({k[1] for k in groups})
    for ax, load in zip(axes, loads, strict=False):
        for (algo, ld), rows in sorted(groups.items()):
            if ld != load:
                continue
            size = np.asarray([r[0] for r in rows])
            sd = np.asarray([r[1] for r in rows])
            xs, ys = [], []
            for lo, hi in zip(BUCKETS[:-1], BUCKETS[1:], strict=True):
                sel = (size > lo) & (size <= hi)
                if sel.sum() >= 20:
                    xs.append(np.median(size[sel]))
                    ys.append(np.percentile(sd[sel], 95))
            ax.plot(xs, ys, marker="o", label=algo)
        ax.set(xscale="log", yscale="log", xlabel="flow size (bytes)", title=f"web search, {load:.0%} load")
        ax.grid(alpha=0.3, which="both")
        ax.legend()
    axes[0].set_ylabel("p95 FCT slowdown (ideal FCT: wire)")
    fig.tight_layout()
    out = os.path.join(HERE, "img", "hpcc-fct-slowdown.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def acks() -> None:
    """The incast with ack_every 1, 2 and 4 (and 4 with five times the additive step)."""
    print("| N | ack_every | ai_rate | queue mean / p50 / p99 / max (KB) | payload rate / payload line "
          "| Jain | PFC XOFF | ACK frames | vs ack_every 1 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (8, 16):
        base = None
        for k, ai in ((1, "line/2500"), (2, "line/2500"), (4, "line/2500"), (4, "200Mbps")):
            extra = {} if ai == "line/2500" else {"ai_rate": ai}
            p = HpccParams.for_path("100Gbps", base_rtt_ps(), ack_every=k, **extra)
            r = run_incast(n, "hpcc", p, duration_us=DURATION_US, sample_period_ps=100_000)
            base = base or r.ack_frames
            q = r.queue_bytes[r.t_us >= DURATION_US / 2] / 1e3
            pc = np.percentile(q, [50, 99])
            print(f"| {n} | {k} | {ai} | {q.mean():.1f} / {pc[0]:.1f} / {pc[1]:.1f} / {q.max():.1f} "
                  f"| {r.sum_gbps * 1e9 / PAYLOAD_LINE_BPS:.3f} | {r.jain:.4f} | {r.pause_frames} "
                  f"| {r.ack_frames} | {r.ack_frames / base:.2f} |")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "incast"
    if what == "incast":
        incast()
    elif what == "acks":
        acks()
    elif what == "fct":
        fct(sys.argv[2] if len(sys.argv) > 2 else None)
    else:
        raise SystemExit(f"unknown figure {what!r}: incast, acks or fct")
