"""One permutation workload on four fabrics: RoCE (ECMP + PFC + Go-Back-N), Ethernet with packet
spraying and IRN, and adaptive path selection with PFC and Go-Back-N or without PFC with IRN.

Runs ``examples/fabric_compare.toml`` four ways (scenario overrides) and prints, per fabric: the FCT
slowdown (mean, 99th percentile), the goodput per host (bytes over the time the last flow
finished), the deepest switch egress queue, the time switch ports and sender NICs were paused,
retransmitted packets and switch drops. The figure shows the same as bars.
``python examples/fabric_compare.py [--out DIR] [--quick]``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import _common as c
import numpy as np

from rdmasim.scenario import run_scenario

NAME = "fabric_compare"
DESCRIPTION = "One permutation on RoCE+ECMP+PFC, Ethernet+spray+IRN and adaptive path selection."
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "roce": ("RoCE: ECMP, PFC, GBN", {}),
    "spray_irn": ("spray, no PFC, IRN",
                  {"switch.path_select": "spray", "switch.lossless": [], "qp.recovery": "irn"}),
    "adaptive_pfc": ("adaptive, PFC, GBN", {"switch.path_select": "adaptive"}),
    "adaptive_irn": ("adaptive, no PFC, IRN",
                     {"switch.path_select": "adaptive", "switch.lossless": [], "qp.recovery": "irn"}),
}
COLORS = {"roce": "tab:blue", "spray_irn": "tab:green", "adaptive_pfc": "tab:red",
          "adaptive_irn": "tab:purple"}


def run_case(overrides: dict[str, Any]) -> dict[str, Any]:
    """Run one fabric; its numbers."""
    res = run_scenario(c.scenario(NAME, overrides), "", progress=False)
    flows = res.flows
    assert all(f.status == "ok" and f.fct_ps is not None for f in flows), "every flow must finish"
    slow = np.array([float(f.slowdown or 0.0) for f in flows])
    last = max(int(f.finish_ps or 0) for f in flows)
    ports = [p for s in res.switches.values() for p in s["ports"]]
    return {
        "slowdown_mean": float(slow.mean()),
        "slowdown_p99": float(np.percentile(slow, 99)),
        "goodput_gbps": sum(f.size_bytes for f in flows) * 8 / (last * 1e-12) / 1e9 / len(flows),
        "max_queue_kb": max(max(p["egress_peak_bytes"]) for p in ports) / 1e3,
        "switch_paused_us": sum(sum(p["paused_ps"]) for p in ports) / 1e6,
        "nic_paused_us": sum(f.pause_ps for f in flows) / 1e6,
        "retx_pkts": sum(f.retx_pkts for f in flows),
        "drops": sum(int(s["totals"]["drops"]) for s in res.switches.values()),
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the four fabrics, draw the figure, print and return the numbers."""
    args = c.parse_args(DESCRIPTION, argv)  # every case takes a fraction of a second: --quick is the same
    runs = {k: run_case(ov) for k, (_, ov) in CASES.items()}
    rows = [("FCT slowdown, mean", "slowdown_mean"), ("FCT slowdown, p99", "slowdown_p99"),
            ("goodput per host (Gb/s)", "goodput_gbps"), ("deepest egress queue (KB)", "max_queue_kb"),
            ("switch ports paused (us, sum)", "switch_paused_us"),
            ("sender NICs paused (us, sum)", "nic_paused_us"),
            ("retransmitted packets", "retx_pkts"), ("switch drops", "drops")]
    print("leaf-spine 4 x 4 x 4, 100 Gb/s, 1 MB buffers; a permutation of 1 MiB WRITEs (16 flows)")
    print(c.table(["", *CASES], [(label, *(runs[k][key] for k in CASES)) for label, key in rows]))

    fig, axes = c.figure(2, 2, size=(11.0, 6.5))
    labels = [CASES[k][0].replace(", ", ",\n", 1) for k in CASES]
    colors = [COLORS[k] for k in CASES]
    panels = [("goodput per host (Gb/s)", ["goodput_gbps"]),
              ("FCT slowdown (left: mean, right: p99)", ["slowdown_mean", "slowdown_p99"]),
              ("deepest egress queue (KB)", ["max_queue_kb"]),
              ("paused time, µs summed (left: switch ports, right: NICs)",
               ["switch_paused_us", "nic_paused_us"])]
    for ax, (title, keys) in zip(axes, panels, strict=True):
        width = 0.8 / len(keys)
        x = np.arange(len(CASES))
        for j, key in enumerate(keys):
            vals = [runs[k][key] for k in CASES]
            bars = ax.bar(x + (j - (len(keys) - 1) / 2) * width, vals, width, color=colors,
                          alpha=1.0 if j == 0 else 0.5, edgecolor="black", lw=0.4)
            for b, v in zip(bars, vals, strict=True):
                ax.annotate(f"{v:.3g}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize="x-small")
        ax.set_xticks(x, labels, fontsize="x-small")
        ax.set_title(title, fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
        ax.margins(y=0.15)
    fig.suptitle("one permutation, four fabrics (4 x 4 x 4 leaf-spine, 100 Gb/s)")
    paths = c.save(fig, args.out, NAME)
    return {**runs, "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
