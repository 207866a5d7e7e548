"""PFC deadlock: a cyclic buffer dependency stops all traffic; the PFC watchdog breaks it.

Builds the fabric of ``examples/pfc_deadlock.toml`` (five switches in a ring, every host writing to
the host two switches clockwise) with :func:`rdmasim.scenario.build`, adds
:func:`rdmasim.fabric.enable_deadlock_detector` (a cycle of mutually paused egress queues) and a
:class:`rdmasim.fabric.QueueSampler` on the ring ports, and runs the file's flows twice:

* **no watchdog**: within a few microseconds every ring queue is paused by the next switch, for
  good: goodput drops to zero, the pause state never clears, and nothing is ever dropped;
* **watchdog** (:func:`rdmasim.fabric.enable_pfc_watchdog`, SONiC-style): a queue paused with no
  progress for ``detect`` is declared stormed, its packets dropped and pause ignored for ``restore``;
  the cycle breaks, Go-Back-N resends what was dropped (after the ACK timeout when nothing else
  reveals the gap), and every flow completes.

``python examples/pfc_deadlock.py [--out DIR] [--quick]``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import _common as c
import numpy as np

from rdmasim import fabric, plots
from rdmasim.scenario import build

NAME = "pfc_deadlock"
DESCRIPTION = "PFC deadlock: a cyclic buffer dependency stops all traffic; the PFC watchdog breaks it."
#: watchdog timing (real switches use 100-200 ms; scaled to this run)
WATCHDOG = {"poll": "20us", "detect": "40us", "restore": "40us"}
GOODPUT_BIN_PS = 20_000_000


def ring_ports(sim: Any) -> tuple[list[tuple[Any, int, int]], list[str]]:
    """(switch, port, priority 3) of each switch's port towards its clockwise neighbour, and labels."""
    names = sorted(sim.switches)
    probes, labels = [], []
    for i, name in enumerate(names):
        sw, nxt = sim.switches[name], sim.switches[names[(i + 1) % len(names)]]
        probes.append((sw, sw.port_to(nxt), 3))
        labels.append(f"{name} → {nxt.name}")
    return probes, labels


def run(watchdog: bool, duration: str, sample: str) -> dict[str, Any]:
    """One run of the ring; counters, the deadlock found, goodput and queue series."""
    sc = c.scenario(NAME, {"simulation.duration": duration})
    sim = build(sc)
    fabric.enable_deadlock_detector(sim, "10us")
    if watchdog:
        fabric.enable_pfc_watchdog(sim, **WATCHDOG)
    probes, labels = ring_ports(sim)
    sampler = fabric.QueueSampler(sim, probes, period=sample)
    fs = sim.add_flows(c.scenario_flows(sc), mtu=sc.values["qp.mtu"], timeout=sc.values["qp.timeout"])
    series = sim.run_flows(until=sc.values["simulation.duration"], sample_every=sample)
    res = fs.results()
    q = sampler.arrays()
    paused = np.asarray(q["paused"], dtype=bool)
    t = np.asarray(q["t_ps"])
    free = np.logical_not(paused.all(axis=1))  # samples where some ring queue was not paused
    found = fabric.deadlock(sim)
    totals = [sw.totals() for sw in sim.switches.values()]
    gp = plots.goodput(series.as_dict(), bin_ps=GOODPUT_BIN_PS) if series is not None else None
    delivered = int(res["bytes_delivered"].sum())
    return {
        "completed": int((res["finish_ps"] >= 0).sum()),
        "flows": len(res),
        "bytes_delivered": delivered,
        "bytes_after_100us": bytes_after(series, res["bytes_delivered"], 100_000_000),
        "bytes_total": int(res["size_bytes"].sum()),
        "last_finish_us": float(res["finish_ps"].max()) / 1e6 if (res["finish_ps"] >= 0).all() else None,
        "deadlock_at_us": found[0] / 1e6 if found else None,
        "deadlock_cycle": [f"{s}:port{p}/prio{pr}" for s, p, pr in found[1]] if found else [],
        "all_paused_since_us": all_paused_since(t, free),
        "xoff_frames": sum(int(x["pfc_xoff_sent"]) for x in totals),
        "xon_frames": sum(int(x["pfc_xon_sent"]) for x in totals),
        "drops": sum(int(x["drops"]) for x in totals),
        "watchdog_drops": sum(int(x["drops_watchdog"]) for x in totals),
        "sim_end_us": sim.now / 1e6,
        "goodput": gp, "t_ps": t, "queue": np.asarray(q["egress_bytes"], dtype=float), "paused": paused,
        "labels": labels,
    }


def all_paused_since(t_ps: np.ndarray, free: np.ndarray) -> float | None:
    """First sample time (us) from which every probe stayed paused to the end, or None."""
    if not len(free) or free[-1]:
        return None
    later = np.flatnonzero(free)
    return float(t_ps[later[-1] + 1 if len(later) else 0]) / 1e6


def bytes_after(series: Any, delivered: np.ndarray, t_ps: int) -> int:
    """Bytes delivered after ``t_ps``: the flows' final ``delivered`` counts minus what the time
    series had seen acknowledged by then."""
    if series is None:
        return int(delivered.sum())
    by_then = 0
    early = series.t_ps <= t_ps
    for fid in np.unique(series.flow_id[early]):
        by_then += int(series.bytes_acked[early & (series.flow_id == fid)].max())
    return int(delivered.sum()) - by_then


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run without and with the watchdog, draw the figure, print and return the numbers."""
    args = c.parse_args(DESCRIPTION, argv)
    duration, sample = ("1500us", "5us") if args.quick else ("3ms", "2us")
    runs = {"no watchdog": run(False, duration, sample), "watchdog": run(True, duration, sample)}
    dead = runs["no watchdog"]
    keys = [("WRITEs completed", "completed"), ("bytes delivered", "bytes_delivered"),
            ("of bytes", "bytes_total"), ("last WRITE done (us)", "last_finish_us"),
            ("deadlock detected at (us)", "deadlock_at_us"),
            ("every ring queue paused since (us)", "all_paused_since_us"),
            ("XOFF frames", "xoff_frames"), ("XON frames", "xon_frames"),
            ("drops", "drops"), ("  of them by the watchdog", "watchdog_drops"),
            ("bytes delivered after 100 us", "bytes_after_100us"),
            ("run ended at (us)", "sim_end_us")]
    print(f"5-switch ring, each host writes 256 KiB two hops clockwise, 100 Gb/s, XOFF at 50 KB; {duration}")
    print(c.table(["", *runs], [(label, *("-" if r[k] is None else r[k] for r in runs.values()))
                                for label, k in keys]))
    if dead["deadlock_cycle"]:
        print("deadlock cycle: " + " -> ".join(dead["deadlock_cycle"]))

    fig, axes = c.figure(2, 2, size=(11.0, 6.5))
    end_us = max(r["sim_end_us"] for r in runs.values())
    for col, (name, r) in enumerate(runs.items()):
        ax = axes[col]
        gp = r["goodput"]
        if gp is not None:
            ax.stairs(gp["aggregate"], gp["edges_ps"] / 1e6, baseline=None, color="black", lw=1.2,
                      label="all flows")
        if r["deadlock_at_us"] is not None:
            ax.axvline(r["deadlock_at_us"], color="tab:red", ls="--", lw=1,
                       label=f"deadlock detected ({r['deadlock_at_us']:.0f} µs)")
        if r["last_finish_us"] is not None:
            ax.axvline(r["last_finish_us"], color="tab:green", ls="--", lw=1,
                       label=f"all {r['flows']} WRITEs done ({r['last_finish_us']:.0f} µs)")
        ax.set_xlim(0, end_us)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("goodput (Gb/s)")
        done = f"{r['completed']}/{r['flows']} WRITEs complete"
        extra = f", {r['watchdog_drops']} packets dropped by the watchdog" if name == "watchdog" else ""
        ax.set_title(f"{name}: {done}{extra}", fontsize="medium")
        ax.legend(fontsize="x-small", loc="upper right")
        ax.grid(alpha=0.3)
        bx = axes[2 + col]
        for i, spans in enumerate(plots.pause_spans(r["t_ps"], r["paused"])):
            bx.broken_barh([(a / 1e6, (b - a) / 1e6) for a, b in spans], (i - 0.4, 0.8), color="tab:red")
        bx.set_yticks(range(len(r["labels"])), r["labels"], fontsize="small")
        bx.set_xlim(0, end_us)
        bx.set_xlabel("time (µs)")
        bx.set_title("PFC-paused ring queues (red: paused)", fontsize="medium")
        bx.grid(alpha=0.3, axis="x")
    fig.suptitle("PFC deadlock in a 5-switch ring: without and with the PFC watchdog")
    paths = c.save(fig, args.out, NAME)
    drop = ("goodput", "t_ps", "queue", "paused", "labels")
    numbers = {k: {n: v for n, v in r.items() if n not in drop} for k, r in runs.items()}
    return {**numbers, "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
