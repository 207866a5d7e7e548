"""Incast with and without DCQCN: FCT slowdown, switch queue over time, PFC pauses.

Runs ``examples/incast_dcqcn.toml`` twice, with ``congestion_control.algorithm`` ``none`` and
``dcqcn``: eight senders write 8 MiB each to one receiver while a ninth host sends short 64 KiB
writes to it through the same congested switch port. Without congestion control the port's queue
sits at what PFC lets in (8 x the 64 KB XOFF threshold) for the whole incast, the switch keeps
pausing the senders, and every short flow waits behind that queue. With DCQCN the senders slow
down on ECN marks: after the start-up burst the queue stays near the RED range, the pause frames
stop, and the short flows finish close to their ideal time. The price is the long flows' own FCT:
they all start at line rate with alpha = 1, get cut far below their fair share during the start-up
burst and recover slowly (docs/validation-dcqcn.md), so the incast takes longer.

    python examples/incast_dcqcn.py [--out DIR] [--quick]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import _common as c
import numpy as np

from rdmasim import plots
from rdmasim.results import RunResult
from rdmasim.scenario import run_scenario

NAME = "incast_dcqcn"
DESCRIPTION = "Incast with and without DCQCN: FCT slowdown, switch queue over time, PFC pauses."
ALGORITHMS = ("none", "dcqcn")
#: the switch egress port towards the receiver, as run_scenario labels its queue probes
BOTTLENECK = "s0:9->h9 p3"
#: queue numbers "after start-up" leave out the first burst, when every sender starts at line rate
STARTUP_PS = 500_000_000
#: goodput bins (ACKs arrive in bursts: narrower bins show their comb, not the rate)
GOODPUT_BIN_PS = 50_000_000


def summarize(res: RunResult) -> dict[str, Any]:
    """The numbers of one run: slowdowns per flow group, pauses, CNPs and the bottleneck queue."""
    out: dict[str, Any] = {}
    for group, key in (("flows", "short"), ("incast", "incast")):
        sd = np.array([f.slowdown for f in res.flows if f.group == group and f.slowdown is not None])
        out[f"{key}_flows"] = len(sd)
        out[f"{key}_slowdown_median"] = float(np.median(sd))
        out[f"{key}_slowdown_max"] = float(sd.max())
    out["unfinished"] = sum(f.status != "ok" for f in res.flows)
    out["last_finish_us"] = max(f.finish_ps or 0 for f in res.flows) / 1e6
    out["xoff_frames"] = int(res.switches["s0"]["totals"]["pfc_xoff_sent"])
    out["paused_us"] = sum(f.pause_ps for f in res.flows) / 1e6
    out["cnps"] = sum(f.cnps for f in res.flows)
    q = res.queue_samples
    assert q is not None, "the scenario samples queues ([outputs] sample_interval)"
    col = list(q["labels"]).index(BOTTLENECK)
    t, qb = np.asarray(q["t_ps"]), np.asarray(q["egress_bytes"])[:, col].astype(float)
    late = t > STARTUP_PS
    out["queue_max_kb"] = float(qb.max() / 1e3)
    out["queue_max_after_startup_kb"] = float(qb[late].max() / 1e3)
    busy = t <= res.sim_time_ps
    out["queue_mean_kb"] = float(qb[busy].mean() / 1e3)
    out["t_ps"], out["queue_bytes"] = t, qb
    fs = res.flow_samples
    gp = plots.goodput(fs.as_dict(), bin_ps=GOODPUT_BIN_PS) if fs is not None else None
    out["goodput"] = gp
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run both, draw the figure, print and return the numbers."""
    args = c.parse_args(DESCRIPTION, argv)
    # the full run takes well under a second per algorithm; --quick only samples more coarsely
    sample = "10us" if args.quick else "2us"
    runs: dict[str, dict[str, Any]] = {}
    for algo in ALGORITHMS:
        sc = c.scenario(NAME, {"congestion_control.algorithm": algo, "outputs.sample_interval": sample})
        runs[algo] = summarize(run_scenario(sc, "", progress=False))

    cols = [("short_slowdown_median", "short FCT slowdown, median"), ("short_slowdown_max", "  max"),
            ("incast_slowdown_median", "incast FCT slowdown, median"), ("incast_slowdown_max", "  max"),
            ("last_finish_us", "last flow done (us)"), ("unfinished", "unfinished flows"),
            ("xoff_frames", "PFC XOFF frames sent"), ("paused_us", "sender pause time, sum (us)"),
            ("cnps", "CNPs"), ("queue_max_kb", "queue max (KB)"),
            ("queue_max_after_startup_kb", "queue max after 500 us (KB)"),
            ("queue_mean_kb", "queue mean (KB)")]
    print("8:1 incast of 8 MiB writes + 20 short 64 KiB writes through the same port, 100 Gb/s")
    print(c.table(["", *ALGORITHMS], [(label, *(runs[a][k] for a in ALGORITHMS)) for k, label in cols]))

    fig, axes = c.figure(2, 2, size=(10.0, 7.0))
    colors = {"none": "tab:red", "dcqcn": "tab:blue"}
    names = {"none": "no congestion control (PFC only)", "dcqcn": "DCQCN"}
    ax = axes[0]
    for a in ALGORITHMS:
        ax.plot(runs[a]["t_ps"] / 1e6, runs[a]["queue_bytes"] / 1e3, color=colors[a], lw=0.8, label=names[a])
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("queue towards the receiver (KB)")
    ax.set_title("bottleneck egress queue", fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)

    ax = axes[1]
    for a in ALGORITHMS:
        gp = runs[a]["goodput"]
        if gp is not None:
            ax.stairs(gp["aggregate"], gp["edges_ps"] / 1e6, baseline=None, color=colors[a], lw=0.8,
                      label=names[a])
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("goodput into the receiver (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"aggregate goodput, all flows ({GOODPUT_BIN_PS / 1e6:.0f} µs bins)", fontsize="medium")
    ax.grid(alpha=0.3)

    ax = axes[2]
    groups = [("short", "short 64 KiB (h8)"), ("incast", "incast 8 MiB (h0..h7)")]
    xs = np.arange(len(groups))
    for k, a in enumerate(ALGORITHMS):
        med = [runs[a][f"{g}_slowdown_median"] for g, _ in groups]
        top = [runs[a][f"{g}_slowdown_max"] for g, _ in groups]
        pos = xs + (k - 0.5) * 0.35
        ax.bar(pos, med, width=0.35, color=colors[a], alpha=0.8, label=f"{names[a]}: median")
        ax.plot(pos, top, "v", color="black", ms=6, label="max" if k == 0 else None)
        for x, m in zip(pos, med, strict=True):
            ax.annotate(f"{m:.3g}", (x, m / 2), ha="center", va="center", fontsize="small", color="white")
    ax.set_xticks(xs, [label for _, label in groups])
    ax.set_ylabel("FCT slowdown (FCT / ideal)")
    ax.set_title("flow completion time slowdown", fontsize="medium")
    ax.legend(fontsize="x-small", loc="upper left")
    ax.set_ylim(0, max(runs[a]["incast_slowdown_max"] for a in ALGORITHMS) * 1.35)
    ax.grid(alpha=0.3, axis="y")

    ax = axes[3]
    xoff = [runs[a]["xoff_frames"] for a in ALGORITHMS]
    bars = ax.bar([names[a].split(" (")[0] for a in ALGORITHMS], xoff, color=[colors[a] for a in ALGORITHMS])
    for b, a in zip(bars, ALGORITHMS, strict=True):
        ax.annotate(f"{runs[a]['xoff_frames']} XOFF\n{runs[a]['paused_us']:.0f} µs paused",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize="small")
    ax.set_ylabel("PFC XOFF frames sent by the switch")
    ax.set_ylim(0, max(xoff) * 1.3 + 1)
    ax.set_title("PFC pause frames (and sender pause time, summed)", fontsize="medium")
    fig.suptitle("8:1 incast, 100 Gb/s, PFC at 64 KB per ingress queue: without vs with DCQCN")
    paths = c.save(fig, args.out, NAME)
    numbers = {a: {k: v for k, v in runs[a].items() if k not in ("t_ps", "queue_bytes", "goodput")}
               for a in ALGORITHMS}
    return {**numbers, "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
