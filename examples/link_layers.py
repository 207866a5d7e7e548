"""One fabric, three workloads, four link layers: RoCE (PFC, DCQCN), InfiniBand with credits (with
and without its congestion control) and Ethernet with packet spraying.

Runs ``examples/link_layers.toml`` with each workload (an 8:1 incast from two leaves to a host on a
third, a random permutation of 1 MiB WRITEs, an all-to-all of 64 KiB per pair) in each
configuration, and prints per run: the FCT slowdown (median, 99th percentile), the aggregate
goodput, the deepest switch egress queue, the time links spent paused by PFC and stalled for
credits (switch ports and NICs summed), retransmitted packets and switch drops. The figure shows
the slowdown, goodput, queue and pause/stall panels, one group of bars per workload.
``python examples/link_layers.py [--out DIR] [--quick]``
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import _common as c
import numpy as np

from rdmasim.scenario import loads, run_scenario

NAME = "link_layers"
DESCRIPTION = "One workload on RoCE+PFC+DCQCN, InfiniBand with credits, and Ethernet with spraying."
#: configuration -> (label, scenario overrides)
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "roce": ("RoCE: PFC, DCQCN, GBN", {}),
    "ib": ("IB: credits, up*/down*", {"link.layer": "ib", "switch.lft": "updn", "switch.latency": "90ns",
                                      "congestion_control.algorithm": "none"}),
    "ib_cc": ("IB: credits, IB CC", {"link.layer": "ib", "switch.lft": "updn", "switch.latency": "90ns",
                                     "congestion_control.algorithm": "ibcc"}),
    "spray": ("Ethernet: spray, IRN", {"switch.path_select": "spray", "switch.lossless": [],
                                       "qp.recovery": "irn"}),
}
#: workload -> its [traffic] table (full size, quick)
WORKLOADS: dict[str, tuple[str, str, str]] = {
    "incast": ("8:1 incast", '[traffic.incast]\nsenders = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"]\n'
               'receiver = "h15"\nsize = "{size}"\n', "2MiB|256KiB"),
    "permutation": ("permutation", '[traffic.permutation]\nsize = "{size}"\n', "1MiB|128KiB"),
    "all_to_all": ("all-to-all", '[traffic.all_to_all]\nsize = "{size}"\n', "64KiB|8KiB"),
}
COLORS = {"roce": "tab:blue", "ib": "tab:orange", "ib_cc": "tab:red", "spray": "tab:green"}


def scenario_text(workload: str, quick: bool) -> str:
    """The example's scenario file with its traffic replaced by ``workload``'s."""
    text = (c.HERE / f"{NAME}.toml").read_text()
    text = re.sub(r"\[traffic\.[a-z_]+\][^\[]*", "", text)  # the file's own workload
    _, table, sizes = WORKLOADS[workload]
    full, small = sizes.split("|")
    return text + "\n" + table.format(size=small if quick else full)


def run_case(workload: str, config: str, quick: bool = False) -> dict[str, Any]:
    """Run one workload in one configuration; its numbers."""
    sc = loads(scenario_text(workload, quick), f"{NAME}.toml", overrides=CONFIGS[config][1])
    res = run_scenario(sc, "", progress=False)
    flows = res.flows
    assert all(f.status == "ok" and f.fct_ps is not None for f in flows), \
        f"{workload}/{config}: a flow failed"
    slow = np.array([float(f.slowdown or 0.0) for f in flows])
    first = min(int(f.start_ps or 0) for f in flows)
    last = max(int(f.finish_ps or 0) for f in flows)
    ports = res.port_rows()
    return {
        "slowdown_p50": float(np.median(slow)),
        "slowdown_p99": float(np.percentile(slow, 99)),
        "goodput_gbps": sum(f.size_bytes for f in flows) * 8 / ((last - first) * 1e-12) / 1e9,
        "max_queue_kb": max(p["egress_peak_bytes"] for p in ports) / 1e3,
        "paused_us": sum(p["paused_ps"] for p in ports) / 1e6,
        "credit_stall_us": sum(p["credit_stall_ps"] for p in ports) / 1e6,
        "retx_pkts": sum(f.retx_pkts for f in flows),
        "drops": sum(p["drops"] for p in ports if p["kind"] == "switch"),
    }


ROWS = [("FCT slowdown, p50", "slowdown_p50"), ("FCT slowdown, p99", "slowdown_p99"),
        ("aggregate goodput (Gb/s)", "goodput_gbps"), ("deepest egress queue (KB)", "max_queue_kb"),
        ("PFC paused (us, all ports)", "paused_us"), ("credit-stalled (us, all ports)", "credit_stall_us"),
        ("retransmitted packets", "retx_pkts"), ("switch drops", "drops")]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run every workload in every configuration, print the tables, draw the figure."""
    args = c.parse_args(DESCRIPTION, argv)
    runs = {w: {k: run_case(w, k, args.quick) for k in CONFIGS} for w in WORKLOADS}
    for w, (label, _, sizes) in WORKLOADS.items():
        size = sizes.split("|")[1 if args.quick else 0]
        print(f"\n{label} ({size} per flow) on a 4 x 4 x 4 leaf-spine, 100 Gb/s, MTU 1024")
        print(c.table(["", *CONFIGS], [(name, *(runs[w][k][key] for k in CONFIGS)) for name, key in ROWS]))

    fig, axes = c.figure(2, 2, size=(11.0, 6.5))
    panels = [("FCT slowdown, p99", "slowdown_p99"), ("aggregate goodput (Gb/s)", "goodput_gbps"),
              ("deepest egress queue (KB)", "max_queue_kb"),
              ("PFC paused + credit-stalled (µs, all ports)", None)]
    x = np.arange(len(WORKLOADS))
    width = 0.8 / len(CONFIGS)
    for ax, (title, key) in zip(axes, panels, strict=True):
        for j, k in enumerate(CONFIGS):
            vals = [runs[w][k][key] if key else runs[w][k]["paused_us"] + runs[w][k]["credit_stall_us"]
                    for w in WORKLOADS]
            ax.bar(x + (j - (len(CONFIGS) - 1) / 2) * width, vals, width, color=COLORS[k],
                   label=CONFIGS[k][0], edgecolor="black", lw=0.4)
        ax.set_xticks(x, [WORKLOADS[w][0] for w in WORKLOADS], fontsize="small")
        ax.set_title(title, fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize="x-small")
    fig.suptitle("three workloads, four link layers (4 x 4 x 4 leaf-spine, 100 Gb/s)")
    paths = c.save(fig, args.out, NAME)
    return {**runs, "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
