"""Ring all-reduce completion time vs loss rate and vs link rate, against the ideal bound.

Runs two parameter sweeps of ``examples/ring_allreduce.toml`` with :func:`rdmasim.sweep.run_sweep`
(results in ``DIR/ring_allreduce-sweep/sweep.sqlite``; a second run of the script reuses them):

* ``link.loss`` from 0 to 1 % on every link, several seeds: each step of the ring waits for its
  slowest transfer, so one Go-Back-N recovery (or worse, an ACK timeout) on any of the 8 links delays
  the whole collective, and the time climbs steeply with loss;
* ``link.rate`` from 10 to 400 Gb/s without loss: the time follows the bandwidth term
  ``2 (n - 1) / n x size / rate`` of :func:`rdmasim.traffic.ideal_ring_allreduce_ps`, until the
  latency term (2 (n - 1) one-way delays) and the per-step start-up dominate at high rates.

A run's completion time is the last flow's finish (all flows belong to the collective, which starts
at t = 0). ``python examples/ring_allreduce.py [--out DIR] [--quick]``
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _common as c
import numpy as np

from rdmasim import plots
from rdmasim.sweep import SweepResult, run_sweep
from rdmasim.traffic import ideal_ring_allreduce_ps
from rdmasim.units import parse_rate, parse_size, parse_time

NAME = "ring_allreduce"
DESCRIPTION = "Ring all-reduce completion time vs loss rate and vs link rate, against the ideal bound."
RANKS = 8


def completion_times(res: SweepResult, key: str) -> dict[Any, list[float]]:
    """Per value of parameter ``key``: each run's completion time in ps (inf if a flow did not finish)."""
    per_run: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    for f in res.flows_records():
        per_run.setdefault(f["run_key"], (f[key], []))[1].append(f)
    out: dict[Any, list[float]] = {}
    for value, flows in per_run.values():
        ok = all(f["status"] == "ok" for f in flows)
        t = max(float(f["finish_ps"]) for f in flows) if ok else float("inf")
        out.setdefault(value, []).append(t)
    return out


def sweep(out: Path, params: dict[str, list[Any]], seeds: int, size: str, workers: int) -> SweepResult:
    """One sweep of the scenario file with the collective's size overridden."""
    text = (c.HERE / f"{NAME}.toml").read_text()
    return run_sweep(text, {**params, "traffic.collective.size": [size]}, out / f"{NAME}-sweep",
                     seeds=seeds, max_workers=workers, progress=False)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run both sweeps, draw the figure, print and return the numbers."""
    args = c.parse_args(DESCRIPTION, argv)
    out = Path(args.out)
    if args.quick:
        losses, rates_gbps, seeds, size = [0.0, 1e-3, 1e-2], [25, 100, 400], 2, "4MiB"
    else:
        losses = [0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2]
        rates_gbps, seeds, size = [10, 25, 50, 100, 200, 400], 5, "16MiB"
    workers = max(1, min(4, os.cpu_count() or 1))
    base = c.scenario(NAME)
    delay_ps = 2 * parse_time(base.values["link.delay"])  # host -> switch -> host, one way
    nbytes = parse_size(size)
    base_rate = float(parse_rate(base.values["link.rate"]))

    by_loss = completion_times(sweep(out, {"link.loss": losses}, seeds, size, workers), "link.loss")
    rate_res = sweep(out, {"link.rate": [f"{g}Gbps" for g in rates_gbps]}, 1, size, workers)
    by_rate_raw = completion_times(rate_res, "link.rate")
    by_rate = {int(parse_rate(k) / 1e9): v for k, v in by_rate_raw.items()}
    loss_times = [by_loss[p] for p in losses]
    rate_times = [by_rate[g] for g in rates_gbps]
    ideal_100 = ideal_ring_allreduce_ps(RANKS, nbytes, base_rate, delay_ps)
    ideal_rate = [ideal_ring_allreduce_ps(RANKS, nbytes, g * 1e9, delay_ps) for g in rates_gbps]

    print(f"ring all-reduce of {size}, {RANKS} ranks on a star, 1 us links; ideal at "
          f"{base_rate / 1e9:.0f} Gb/s: {ideal_100 / 1e6:.1f} us")
    print(c.table(["loss", "mean (us)", "min (us)", "max (us)", "mean / ideal", "seeds"],
                  [(p, float(np.mean(t)) / 1e6, min(t) / 1e6, max(t) / 1e6, float(np.mean(t)) / ideal_100,
                    len(t)) for p, t in zip(losses, loss_times, strict=True)]))
    print(c.table(["rate (Gb/s)", "time (us)", "ideal (us)", "time / ideal"],
                  [(g, t[0] / 1e6, i / 1e6, t[0] / i)
                   for g, t, i in zip(rates_gbps, rate_times, ideal_rate, strict=True)]))

    fig, (ax, bx) = c.figure(2, 1, size=(11.0, 4.3))
    st = plots.collective_stats(losses, loss_times)
    x = np.array(losses, dtype=float)
    xplot = np.where(x > 0, x, min(x[x > 0]) / 3)  # loss 0 drawn one third of a decade left of the rest
    yerr = np.vstack([st["mean_ps"] - st["min_ps"], st["max_ps"] - st["mean_ps"]]) / 1e6
    ax.errorbar(xplot, st["mean_ps"] / 1e6, yerr=yerr, fmt="-o", capsize=3, color="tab:blue",
                label=f"rdmasim: mean, min–max of {seeds} seeds")
    ax.axhline(ideal_100 / 1e6, color="tab:red", ls="--", label="ideal (loss-free bound)")
    ax.set_xscale("log")
    ax.set_xticks(xplot, ["0"] + [f"{p:g}" for p in x[1:]] if x[0] == 0 else [f"{p:g}" for p in x])
    ax.set_yscale("log")
    ax.set_xlabel("i.i.d. loss probability, every link and direction")
    ax.set_ylabel("completion time (µs)")
    ax.set_title(f"vs loss, {base_rate / 1e9:.0f} Gb/s", fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(True, which="both", alpha=0.3)

    g = np.array(rates_gbps, dtype=float)
    grid = np.geomspace(g.min(), g.max(), 100)
    bx.plot(g, [t[0] / 1e6 for t in rate_times], "o-", color="tab:blue", label="rdmasim (no loss)")
    bx.plot(grid, [ideal_ring_allreduce_ps(RANKS, nbytes, v * 1e9, delay_ps) / 1e6 for v in grid], "--",
            color="tab:red", label="ideal: 2(n-1)/n·size/rate + 2(n-1)·delay")
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.set_xticks(g, [f"{v:g}" for v in g])
    bx.set_xlabel("link rate (Gb/s)")
    bx.set_ylabel("completion time (µs)")
    bx.set_title("vs link rate, no loss", fontsize="medium")
    bx.legend(fontsize="small")
    bx.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"Ring all-reduce of {size} over {RANKS} hosts on one switch (1 µs links)")
    paths = c.save(fig, out, NAME)
    return {
        "loss": losses, "loss_times_ps": loss_times, "loss_mean_ps": st["mean_ps"].tolist(),
        "ideal_ps": ideal_100, "rates_gbps": rates_gbps, "rate_times_ps": [t[0] for t in rate_times],
        "ideal_rate_ps": ideal_rate, "files": [str(p) for p in paths],
    }


if __name__ == "__main__":
    main()
