"""PFC victim flow: a flow that never crosses the congested port is slowed by pauses from an incast.

Runs ``examples/pfc_victim.toml`` three ways:

* **alone**: the incast on r0 starts only after the victim l1 -> r1 has finished (its flows' start
  times moved to 10 ms), so the victim sees an idle fabric;
* **PFC**: the file as it is: the incast's pauses spread from the right switch over the middle link
  to the left switch and on to l1's NIC, and the victim runs at a fraction of its line rate;
* **no PFC** (``switch.lossless = []``): the right switch drops instead of pausing; the incast's
  flows pay with Go-Back-N retransmissions, and the victim runs at line rate.

The figure shows the victim's goodput over time in each case and its mean throughput and the time
its NIC was paused. ``python examples/pfc_victim.py [--out DIR] [--quick]``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import _common as c
import numpy as np

from rdmasim import plots
from rdmasim.scenario import run_scenario

NAME = "pfc_victim"
DESCRIPTION = "PFC victim flow: slowed by pauses from an incast it does not take part in."
VICTIM = 0
INCAST = (1, 2, 3)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "alone": ("victim alone", {f"flows[{i}].start": "10ms" for i in INCAST}),
    "pfc": ("with the incast, PFC on", {}),
    "no_pfc": ("with the incast, PFC off (drops)", {"switch.lossless": []}),
}
COLORS = {"alone": "tab:green", "pfc": "tab:red", "no_pfc": "tab:blue"}
GOODPUT_BIN_PS = 10_000_000


def run_case(overrides: dict[str, Any], sample: str) -> dict[str, Any]:
    """Run one case; the victim's and the incast's numbers and the victim's goodput series."""
    sc = c.scenario(NAME, {**overrides, "outputs.sample_interval": sample})
    res = run_scenario(sc, "", progress=False)
    v = res.flows[VICTIM]
    assert v.fct_ps is not None, "the victim must finish"
    incast = [res.flows[i] for i in INCAST]
    out: dict[str, Any] = {
        "victim_fct_us": v.fct_ps / 1e6,
        "victim_gbps": v.size_bytes * 8 / (v.fct_ps * 1e-12) / 1e9,
        "victim_paused_us": v.pause_ps / 1e6,
        "victim_slowdown": float(v.slowdown or 0.0),
        "incast_fct_max_us": max((f.fct_ps or 0) for f in incast) / 1e6,
        "incast_retx_pkts": sum(f.retx_pkts for f in incast),
        "xoff_right": int(res.switches["sr"]["totals"]["pfc_xoff_sent"]),
        "xoff_left": int(res.switches["sl"]["totals"]["pfc_xoff_sent"]),
        "drops": sum(int(s["totals"]["drops"]) for s in res.switches.values()),
    }
    fs = res.flow_samples
    assert fs is not None
    d = fs.as_dict()
    keep = d["flow_id"] == VICTIM
    out["series"] = plots.goodput({k: col[keep] for k, col in d.items()}, bin_ps=GOODPUT_BIN_PS)
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the three cases, draw the figure, print and return the numbers."""
    args = c.parse_args(DESCRIPTION, argv)
    sample = "10us" if args.quick else "2us"  # every case takes a fraction of a second anyway
    runs = {k: run_case(ov, sample) for k, (_, ov) in CASES.items()}
    line_gbps = 100.0
    rows = [("victim l1->r1 throughput (Gb/s)", "victim_gbps"), ("victim FCT (us)", "victim_fct_us"),
            ("victim FCT slowdown", "victim_slowdown"), ("victim NIC paused (us)", "victim_paused_us"),
            ("incast: last FCT (us)", "incast_fct_max_us"),
            ("incast: retransmitted pkts", "incast_retx_pkts"),
            ("XOFF frames, right switch", "xoff_right"), ("XOFF frames, left switch", "xoff_left"),
            ("switch drops", "drops")]
    print("dumbbell 2+4 hosts, 100 Gb/s hosts, 200 Gb/s middle link; victim l1 -> r1 4 MiB, "
          "incast l0, r2, r3 -> r0 4 MiB each")
    print(c.table(["", *CASES], [(label, *(runs[k][key] for k in CASES)) for label, key in rows]))

    fig, (ax, bx) = c.figure(2, 1, size=(11.0, 4.2))
    for k, (label, _) in CASES.items():
        s = runs[k]["series"]
        ax.stairs(s["flows"].get(VICTIM, np.zeros(len(s["t_ps"]))), s["edges_ps"] / 1e6, baseline=None,
                  color=COLORS[k], lw=1.2, label=label)
    ax.axhline(line_gbps, color="grey", ls=":", lw=0.8)
    ax.set_xlim(0, max(runs[k]["victim_fct_us"] for k in CASES) * 1.05)
    ax.set_ylim(0, line_gbps * 1.1)
    ax.set_xlabel("time (µs)")
    ax.set_ylabel("victim goodput (Gb/s)")
    ax.set_title(f"victim l1 → r1 over time ({GOODPUT_BIN_PS / 1e6:.0f} µs bins)", fontsize="medium")
    ax.legend(fontsize="small", loc="lower right")
    ax.grid(alpha=0.3)

    labels = [CASES[k][0].replace(", ", ",\n") for k in CASES]
    bars = bx.bar(labels, [runs[k]["victim_gbps"] for k in CASES], color=[COLORS[k] for k in CASES])
    for b, k in zip(bars, CASES, strict=True):
        r = runs[k]
        bx.annotate(f"{r['victim_gbps']:.1f} Gb/s\npaused {r['victim_paused_us']:.0f} µs",
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    fontsize="small")
    bx.axhline(line_gbps, color="grey", ls=":", lw=0.8, label="line rate")
    bx.set_ylim(0, line_gbps * 1.3)
    bx.set_ylabel("victim mean throughput (Gb/s)")
    bx.set_title("victim throughput and the time its NIC was paused", fontsize="medium")
    bx.tick_params(axis="x", labelsize="small")
    fig.suptitle("PFC victim flow: l1 → r1 shares no congested port with the incast on r0")
    paths = c.save(fig, args.out, NAME)
    numbers = {k: {n: v for n, v in runs[k].items() if n != "series"} for k in CASES}
    return {**numbers, "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
