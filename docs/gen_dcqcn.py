"""Generate the numbers and figures of docs/validation-dcqcn.md (DCQCN on a switched fabric).

Usage (from the repository root)::

    python docs/gen_dcqcn.py                 # table for seed 1 + the four figures (~2 min)
    python docs/gen_dcqcn.py --seeds 1 2 3   # the table for several seeds
    python docs/gen_dcqcn.py --no-figures
    python docs/gen_dcqcn.py --nvidia --seeds 1 2 3   # the NVIDIA preset's table and its figure only

The experiment is tests/cc/dcqcn_util.py::run_incast, the same code tests/cc/test_dcqcn_fabric.py
asserts on. Figures go to docs/img/dcqcn-fabric-*.png; the table is printed as Markdown.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cc"))

import numpy as np  # noqa: E402
from dcqcn_util import XOFF, queue_period_us, run_incast  # noqa: E402

from rdmasim.analytic import dcqcn_fixed_point  # noqa: E402
from rdmasim.cc import DcqcnParams  # noqa: E402

DURATION_US = {2: 150_000, 4: 60_000, 8: 60_000, 16: 100_000}
IMG = os.path.join(HERE, "img")


def table(seeds: list[int]) -> None:
    print("| N | seed | run | Jain (2nd half) | rates Gb/s min-max | queue mean (KB) | q* (KB) | "
          "mean/q* | range (KB) | period (us) | alpha | alpha* | XOFF (DCQCN) | no-CC queue (KB) | "
          "XOFF (no CC, 4 ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, dur in DURATION_US.items():
        base = run_incast(n, None, None, 4_000)
        for seed in seeds:
            r = run_incast(n, "dcqcn", None, dur, seed=seed)
            fp = dcqcn_fixed_point(100e9, n, round(r.wire_bytes_per_pkt))
            sel = r.t_us >= dur / 2
            per = queue_period_us(r.t_us[sel], r.queue_bytes[sel])
            alpha = np.mean([s["alpha"] for s in r.dcqcn])
            print(f"| {n} | {seed} | {dur // 1000} ms | {r.jain:.4f} | {min(r.rates_gbps):.2f}-"
                  f"{max(r.rates_gbps):.2f} | {r.queue_mean / 1e3:.1f} | {fp.queue_bytes / 1e3:.1f} | "
                  f"{r.queue_mean / fp.queue_bytes:.2f} | {r.queue_min / 1e3:.0f}-{r.queue_max / 1e3:.0f} | "
                  f"{per:.0f} | {alpha:.3f} | {fp.alpha:.3f} | {r.pause_frames} | "
                  f"{base.queue_mean / 1e3:.0f} | {base.pause_frames} |", flush=True)


NVIDIA_US = 40_000


def nvidia_table(seeds: list[int]) -> None:
    """DcqcnParams.nvidia() on the same incast, N = 4 and 8, 40 ms (the NVIDIA section's table)."""
    print("| N | seed | rates Gb/s | Jain (2nd half) | min / fair | queue mean (KB) | range (KB) | XOFF |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (4, 8):
        for seed in seeds:
            r = run_incast(n, "dcqcn", DcqcnParams.nvidia(), NVIDIA_US, seed=seed)
            rates = " / ".join(f"{x:.1f}" for x in r.rates_gbps)
            print(f"| {n} | {seed} | {rates} | {r.jain:.3f} | {min(r.rates_gbps) / (r.sum_gbps / n):.2f} | "
                  f"{r.queue_mean / 1e3:.0f} | {r.queue_min / 1e3:.0f}-{r.queue_max / 1e3:.0f} | "
                  f"{r.pause_frames} |", flush=True)


def _plt():  # pyplot, imported when a figure is drawn
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def rates_fig(r, fair: float, title: str, name: str) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 3.2), dpi=90)
    for i, tr in enumerate(r.trace_rate_gbps):
        ax.plot(np.asarray(r.trace_t_us) / 1e3, tr, lw=0.7, label=f"flow {i}")
    ax.axhline(fair, color="k", ls="--", lw=0.8, label="C/N")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("Rc (Gb/s)")
    ax.set_ylim(0, 100)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, ncol=5, loc="upper right")
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, name))
    plt.close(fig)
    print("wrote", os.path.join("docs/img", name))


def nvidia_figure() -> None:
    r = run_incast(4, "dcqcn", DcqcnParams.nvidia(), NVIDIA_US, trace_every_us=50)
    rates_fig(r, 100 / 4, f"NVIDIA firmware preset, 4:1 incast, paper ECN profile (Jain {r.jain:.3f})",
              "dcqcn-fabric-rates-nvidia-n4.png")


def figures() -> None:
    plt = _plt()

    # 1. per-flow Rc, paper preset, N = 4
    r = run_incast(4, "dcqcn", None, 60_000, trace_every_us=50)
    rates_fig(r, 100 / 4, f"DCQCN paper preset, 4:1 incast at 100 Gb/s (Jain 2nd half {r.jain:.3f})",
              "dcqcn-fabric-rates-n4.png")

    # 2. queue, paper preset, N = 4 and 8 against q*
    fig, axes = plt.subplots(2, 1, figsize=(6.4, 4.4), dpi=90, sharex=True)
    for ax, n in zip(axes, (4, 8), strict=True):
        rr = r if n == 4 else run_incast(n, "dcqcn", None, 60_000)
        fp = dcqcn_fixed_point(100e9, n, round(rr.wire_bytes_per_pkt))
        ax.plot(rr.t_us / 1e3, rr.queue_bytes / 1e3, lw=0.4, label="egress queue")
        ax.axhline(fp.queue_bytes / 1e3, color="r", ls="--", lw=1,
                   label=f"fluid q* {fp.queue_bytes / 1e3:.1f} KB")
        ax.axhline(rr.queue_mean / 1e3, color="k", ls=":", lw=1,
                   label=f"mean 2nd half {rr.queue_mean / 1e3:.1f} KB")
        ax.set_ylabel("KB")
        ax.set_title(f"N = {n}", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time (ms)")
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "dcqcn-fabric-queue.png"))
    plt.close(fig)
    print("wrote docs/img/dcqcn-fabric-queue.png")

    # 3. queue with and without CC, first 4 ms, N = 8
    fig, ax = plt.subplots(figsize=(6.4, 3.0), dpi=90)
    for cc, label in ((None, "no CC (PFC only)"), ("dcqcn", "DCQCN paper preset")):
        rr = run_incast(8, cc, None, 4_000)
        ax.plot(rr.t_us / 1e3, rr.queue_bytes / 1e3, lw=0.6, label=f"{label}: {rr.pause_frames} XOFF frames")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("bottleneck queue (KB)")
    ax.set_title(f"8:1 incast, static XOFF {XOFF} per ingress queue", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, "dcqcn-fabric-nocc.png"))
    plt.close(fig)
    print("wrote docs/img/dcqcn-fabric-nocc.png")

    # 4. NVIDIA preset, N = 4
    nvidia_figure()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--no-figures", action="store_true")
    ap.add_argument("--no-table", action="store_true")
    ap.add_argument("--nvidia", action="store_true", help="only the NVIDIA preset's table and figure")
    a = ap.parse_args()
    if a.nvidia:
        if not a.no_table:
            nvidia_table(a.seeds)
        if not a.no_figures:
            nvidia_figure()
        return
    if not a.no_table:
        table(a.seeds)
    if not a.no_figures:
        figures()


if __name__ == "__main__":
    main()
