"""Multipath side by side: one leaf-spine, four workloads, each transport and path selection.

Runs a permutation, an incast, an all-to-all collective and a permutation through a failing spine
link on a 4 x 4 x 4 leaf-spine (100 Gb/s, 1 us links, no congestion control) over

- RoCE + ECMP: in-order receivers (``cx6``, Go-Back-N), one path per QP;
- RoCE + adaptive routing with out-of-order placement: ``cx7-ar`` receivers, per-packet adaptive
  routing (``path_select = "adaptive_packet"``), Spectrum-X-like;
- InfiniBand + adaptive routing: credits instead of PFC, ``ib-ar`` receivers, the same routing;
- UET + spray: the Ultra Ethernet transport with a random entropy per packet (oblivious
  spraying through ECMP switches), no PFC, trimming switches (and UET + REPS when the transport
  offers it: :data:`UET_CONFIGS`);

and prints per configuration the FCT slowdown (p50, p99; FCT over the ideal FCT of
:func:`rdmasim.scenario.ideal.ideal_fct_ps`), the goodput (mean rate of a flow, as a fraction of
the line rate, and the bytes of all flows over the time the last one finished), the deepest switch
egress queue, the retransmitted packets and the packets switches trimmed. The all-to-all is the
collective :func:`rdmasim.traffic.alltoall` (direct: every rank sends its block to every other at
once) run on each configuration's transport; its table adds the collective's time (first start to last
finish) and its bus bandwidth as nccl-tests reports it.

The failing link: at ``FAIL_AT_PS`` the link leaf0 - spine0 goes down. leaf0 sees it at once; the
other leaves keep sending traffic for leaf0's hosts to spine0, which has no way left to them, until
the routing converges ``REROUTE_AFTER_PS`` later (:func:`run_failure`). Flows whose ECMP path
crosses spine0 make no progress until then; the table counts the flows that delivered nothing
during the failure, the frames the failed link lost, and the bytes delivered by the reroute.

Numbers and what they show: docs/multipath.md ("Side by side").
``python examples/multipath_compare.py [--out DIR] [--quick]``
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import _common as c
import numpy as np

import rdmasim
from rdmasim import ib_fabric
from rdmasim.fabric import set_route
from rdmasim.flows import FlowSamples
from rdmasim.scenario.ideal import ideal_fct_ps
from rdmasim.traffic import alltoall, collective_result
from rdmasim.traffic.generators import incast, permutation

NAME = "multipath_compare"
DESCRIPTION = ("Permutation, incast, all-to-all and a failing link over RoCE+ECMP, RoCE+AR+OOO, IB+AR "
               "and UET with spraying.")
LINE_BPS = 100e9
MTU = 4096
SEED = 1
#: the silent failure of leaf0 - spine0 starts here ...
FAIL_AT_PS = 100_000_000
#: ... and lasts this long, until the routing takes the link out
REROUTE_AFTER_PS = 500_000_000
#: the failure's time series: one sample of every running flow this often
SAMPLE_PS = 10_000_000
#: no run goes on beyond this (a flow that has not finished by then fails the example)
RUN_LIMIT_PS = 100_000_000_000


@dataclass(frozen=True)
class Config:
    """One transport and path selection."""

    label: str
    link_layer: str   # "roce" or "ib"
    path_select: str  # switch path selection
    profile: str      # NIC profile of every host
    transport: str = "roce"                 # "uet": the Ultra Ethernet transport (csrc/uet)
    uet: dict[str, Any] | None = None       # its options (rdmasim.uet.DEFAULTS)
    switch: dict[str, Any] | None = None    # switch settings beside path_select


CONFIGS: dict[str, Config] = {
    "roce_ecmp": Config("RoCE + ECMP", "roce", "ecmp", "cx6"),
    "roce_ar_ooo": Config("RoCE + AR + OOO", "roce", "adaptive_packet", "cx7-ar"),
    "ib_ar": Config("IB + AR", "ib", "adaptive_packet", "ib-ar"),
}


def _uet_configs() -> dict[str, Config]:
    """The Ultra Ethernet rows this build can run: oblivious spraying, and REPS where the UET
    transport offers it. UET as its specification deploys it: best-effort Ethernet (no PFC) with
    trimming switches (``trim_threshold`` 64 KiB), entropy per packet, the switches hashing it."""
    try:
        from rdmasim import uet
    except ImportError:
        return {}
    lossy_trim = {"lossless": (), "trimming": True, "trim_threshold": "64KiB"}
    out = {"uet_spray": Config("UET + spray", "roce", "ecmp", "cx6", "uet", {"lb": "oblivious", "trim": True},
                               lossy_trim)}
    if "reps" in uet.LOAD_BALANCERS:
        out["uet_reps"] = Config("UET + REPS", "roce", "ecmp", "cx6", "uet", {"lb": "reps", "trim": True},
                                 lossy_trim)
    return out


#: the Ultra Ethernet rows (oblivious spraying, REPS when the transport has it)
UET_CONFIGS: dict[str, Config] = _uet_configs()
COLORS = {"roce_ecmp": "tab:blue", "roce_ar_ooo": "tab:red", "ib_ar": "tab:green", "uet_spray": "tab:purple",
          "uet_reps": "tab:orange"}


@dataclass(frozen=True)
class Size:
    """The fabric and the workloads' sizes (full run or --quick)."""

    leaves: int
    spines: int
    hosts_per_leaf: int
    permutation: int    # bytes per flow
    incast_senders: int
    incast: int         # bytes per sender
    all_to_all: int     # bytes per flow
    failure: int        # bytes per flow of the permutation through the failing link


FULL = Size(4, 4, 4, permutation=4 << 20, incast_senders=8, incast=1 << 20, all_to_all=128 << 10,
            failure=4 << 20)
QUICK = Size(2, 2, 4, permutation=1 << 20, incast_senders=4, incast=256 << 10, all_to_all=64 << 10,
             failure=2 << 20)
WORKLOADS = ("permutation", "incast", "all_to_all", "failure")


def build(cfg: Config, size: Size) -> Any:
    """The leaf-spine of ``cfg``: its link layer, path selection and NIC profile."""
    sim = rdmasim.Simulator(SEED, link_layer=cfg.link_layer)
    topo = rdmasim.leaf_spine(size.leaves, size.spines, size.hosts_per_leaf, mtu=MTU, sim=sim,
                              switch_config={"path_select": cfg.path_select, "buffer": "4MB",
                                             **(cfg.switch or {})})
    if cfg.link_layer == "ib":
        ib_fabric.enable_credits(sim)
    for h in topo.hosts:
        h.set_nic_profile(cfg.profile)
    return topo


def table(workload: str, size: Size) -> Any:
    """The flows of ``workload`` on the hosts of ``size``."""
    n = size.leaves * size.hosts_per_leaf
    if workload in ("permutation", "failure"):
        each = size.permutation if workload == "permutation" else size.failure
        return permutation(np.arange(n), each, SEED)
    if workload == "incast":  # senders spread over the other leaves, into h0
        others = np.arange(size.hosts_per_leaf, n)
        senders = others[np.linspace(0, len(others) - 1, size.incast_senders).astype(int)]
        return incast(senders, 0, size.incast)
    return alltoall(np.arange(n), size.all_to_all * n)  # a block of size.all_to_all to each other rank


def run_case(cfg: Config, workload: str, size: Size) -> dict[str, Any]:
    """One configuration on one workload; its numbers (and, for the failure, its time series)."""
    topo = build(cfg, size)
    sim = topo.sim
    flows_table = table(workload, size)
    kw: dict[str, Any] = {"timeout": 10}
    if cfg.transport == "uet":
        kw = {"transport": "uet", "uet": cfg.uet}
    elif rdmasim.nic.get_profile(cfg.profile).ooo_placement:
        kw["irn_window"] = 64
    flows = sim.add_flows(flows_table, mtu=MTU, **kw)
    if workload == "failure":
        samples, lost = run_failure(topo, size)
    else:
        samples, lost = sim.run_flows(until=RUN_LIMIT_PS), 0
    res = flows.results()
    assert (res["status"] == 0).all() and (res["bytes_delivered"] == res["size_bytes"]).all(), \
        f"{cfg.label} / {workload}: every flow must complete with its bytes"
    ideal = ideal_fct_ps(sim, res["src"], res["dst"], res["size_bytes"], mtu=MTU,
                         link_layer=int(cfg.link_layer == "ib"))
    slow = res["fct_ps"] / ideal
    rate = res["size_bytes"] * 8 / (res["fct_ps"] * 1e-12) / LINE_BPS
    last = int(res["finish_ps"].max())
    ports = [p for sw in [*topo.leaves, *topo.spines] for p in sw.stats()]
    out: dict[str, Any] = {
        "slowdown_p50": float(np.percentile(slow, 50)),
        "slowdown_p99": float(np.percentile(slow, 99)),
        "mean_rate": float(rate.mean()),
        "min_rate": float(rate.min()),
        "goodput_gbps": float(res["size_bytes"].sum() * 8 / (last * 1e-12) / 1e9),
        "max_queue_kb": max(max(p["egress_peak_bytes"]) for p in ports) / 1e3,
        "retx_pkts": int(res["retx_pkts"].sum()),
        "trims": int(sum(p["trims"] for p in ports)),
        "last_fct_us": last / 1e6,
    }
    if workload == "failure" and samples is not None:
        out.update(failure_numbers(samples, res), lost_frames=lost)
    if workload == "all_to_all":
        n = size.leaves * size.hosts_per_leaf
        t = last - int(res["start_ps"].min())
        out.update(collective_us=t / 1e6,
                   busbw_gbps=collective_result("alltoall", n, size.all_to_all * n, t).busbw_Bps * 8 / 1e9)
    return out


def run_failure(topo: Any, size: Size) -> tuple[Any, int]:
    """Run the flows through the failure of leaf0 - spine0; return their time series (FlowSamples)
    over the whole run and the frames the failed link lost.

    At FAIL_AT_PS the link stops carrying frames. leaf0 sees its port go down at once and sends
    its traffic up the other spines (static routes); spine0 has no way left to leaf0's hosts
    (a spine does not route down and up again) and what it sends them is lost; the other leaves
    keep sending traffic for leaf0's hosts to spine0 until the routing converges, REROUTE_AFTER_PS
    later, when the link is taken out of every switch's routes."""
    sim, leaf0, first_up = topo.sim, topo.leaves[0], size.hosts_per_leaf
    link = leaf0.ports[first_up]  # leaf0 - spine0
    remote = [h for hosts in topo.hosts_by_leaf[1:] for h in hosts]
    up = list(range(first_up + 1, first_up + size.spines))
    parts = [sim.run_flows(until=FAIL_AT_PS, sample_every=SAMPLE_PS)]
    link.ab.set_loss(1.0)
    link.ba.set_loss(1.0)
    for h in remote:
        set_route(leaf0, h, up)
    parts.append(sim.run_flows(until=FAIL_AT_PS + REROUTE_AFTER_PS, sample_every=SAMPLE_PS))
    link.fail()
    for h in remote:
        set_route(leaf0, h, ())
    parts.append(sim.run_flows(until=RUN_LIMIT_PS, sample_every=SAMPLE_PS))
    rows = []
    for p in parts:  # a sample at the time one part stopped and the next began is taken once
        if p is not None and len(p.t_ps):
            keep = p.t_ps > (rows[-1].t_ps.max() if rows else -1)
            rows.append(FlowSamples(p.t_ps[keep], p.flow_id[keep], p.bytes_acked[keep], p.rate_bps[keep]))
    lost = link.ab.stats()["dropped"] + link.ba.stats()["dropped"]
    return FlowSamples(*(np.concatenate([getattr(p, k) for p in rows])
                         for k in ("t_ps", "flow_id", "bytes_acked", "rate_bps"))), int(lost)


def failure_numbers(samples: Any, res: Any) -> dict[str, Any]:
    """The flows that delivered nothing during the failure (of those still running 20 us into it,
    once what was in flight has landed, until the reroute), the goodput of all flows (Gb/s) before
    it, the fraction of all bytes delivered by the reroute, and that fraction over time (the
    plot's series)."""
    t, fid, acked = samples.t_ps, samples.flow_id, samples.bytes_acked
    a, b = FAIL_AT_PS + 20_000_000, FAIL_AT_PS + REROUTE_AFTER_PS

    first = int(res["flow_id"][0])

    def acked_at(when: int) -> np.ndarray:
        """Bytes acknowledged per flow by ``when``: all of a finished flow, else its last sample."""
        out = np.where(res["finish_ps"] <= when, res["size_bytes"], 0).astype(np.int64)
        sel = t <= when
        np.maximum.at(out, (fid[sel] - first).astype(np.int64), acked[sel].astype(np.int64))
        return out

    at_a, at_b = acked_at(a), acked_at(b)
    running = res["finish_ps"] > a
    stalled = int((running & (at_b == at_a)).sum())
    # goodput per 10 us bin, all flows: the increase of their summed acknowledged bytes
    grid = np.unique(t)
    total = np.array([acked[t == g].sum() for g in grid], dtype=np.float64)
    done = np.array([res["size_bytes"][res["finish_ps"] <= g].sum() for g in grid], dtype=np.float64)
    cum = total + done
    gbps = np.diff(cum) * 8 / (np.diff(grid) * 1e-12) / 1e9
    mid = grid[1:]

    def mean_in(lo: int, hi: int) -> float:
        sel = (mid > lo) & (mid <= hi)
        return float(gbps[sel].mean()) if sel.any() else 0.0

    return {"stalled_flows": stalled, "running_flows": int(running.sum()),
            "goodput_before_gbps": mean_in(0, FAIL_AT_PS),
            "delivered_by_reroute": float(at_b.sum() / res["size_bytes"].sum()),
            "series_t_us": (grid[1:] / 1e6).tolist(),
            "series_delivered": (cum[1:] / float(res["size_bytes"].sum())).tolist()}


ROWS = [("FCT slowdown p50", "slowdown_p50", "{:.2f}"), ("FCT slowdown p99", "slowdown_p99", "{:.2f}"),
        ("mean flow rate (x line)", "mean_rate", "{:.3f}"),
        ("goodput, all flows (Gb/s)", "goodput_gbps", "{:.0f}"),
        ("deepest egress queue (KB)", "max_queue_kb", "{:.0f}"),
        ("retransmitted packets", "retx_pkts", "{:,}"),
        ("trimmed packets", "trims", "{:,}")]
COLLECTIVE_ROWS = [("collective time (us)", "collective_us", "{:.1f}"),
                   ("bus bandwidth (Gb/s)", "busbw_gbps", "{:.1f}")]
FAILURE_ROWS = [("flows stalled in the failure", "stalled_flows", "{}"),
                ("frames lost on the failed link", "lost_frames", "{:,}"),
                ("goodput before (Gb/s)", "goodput_before_gbps", "{:.0f}"),
                ("bytes delivered when rerouted (fraction)", "delivered_by_reroute", "{:.3f}"),
                ("last flow done (us)", "last_fct_us", "{:.0f}")]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run every configuration on every workload, print the tables, draw the figure."""
    args = c.parse_args(DESCRIPTION, argv)
    size = QUICK if args.quick else FULL
    configs = {**CONFIGS, **UET_CONFIGS}
    runs = {w: {k: run_case(cfg, w, size) for k, cfg in configs.items()} for w in WORKLOADS}
    hosts = size.leaves * size.hosts_per_leaf
    print(f"leaf-spine: {size.leaves} leaves x {size.spines} spines, {hosts} hosts, 100 Gb/s, 1 us links, "
          "no congestion control")
    if not UET_CONFIGS:
        print("(Ultra Ethernet rows: not in this build)")
    elif "uet_reps" not in UET_CONFIGS:
        print("(UET + REPS: not in this build's UET transport)")
    for w in WORKLOADS:
        rows = ROWS + {"failure": FAILURE_ROWS, "all_to_all": COLLECTIVE_ROWS}.get(w, [])
        print(f"\n{w}:")
        print(c.table(["", *(cfg.label for cfg in configs.values())],
                      [(label, *(fmt.format(runs[w][k][key]) for k in configs)) for label, key, fmt in rows]))
    print(f"\nfailure: leaf0 - spine0 fails at {FAIL_AT_PS / 1e6:.0f} us; the other leaves send to spine0 "
          f"until the routes converge at {(FAIL_AT_PS + REROUTE_AFTER_PS) / 1e6:.0f} us")

    fig, axes = c.figure(2, 2, size=(12.0, 7.0))
    keys = list(configs)
    x = np.arange(len(WORKLOADS) - 1)
    width = 0.8 / len(keys)
    for ax, (title, key) in zip(axes[:3], [("FCT slowdown p99", "slowdown_p99"),
                                           ("mean flow rate (fraction of line)", "mean_rate"),
                                           ("deepest egress queue (KB)", "max_queue_kb")], strict=True):
        for j, k in enumerate(keys):
            vals = [runs[w][k][key] for w in WORKLOADS[:-1]]
            ax.bar(x + (j - (len(keys) - 1) / 2) * width, vals, width, color=COLORS[k],
                   label=configs[k].label, edgecolor="black", lw=0.4)
        ax.set_xticks(x, WORKLOADS[:-1], fontsize="small")
        ax.set_title(title, fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize="x-small")
    ax = axes[3]
    for k in keys:
        r = runs["failure"][k]
        ax.plot(r["series_t_us"], r["series_delivered"], color=COLORS[k], label=configs[k].label, lw=1.2)
    ax.axvspan(FAIL_AT_PS / 1e6, (FAIL_AT_PS + REROUTE_AFTER_PS) / 1e6, color="grey", alpha=0.2, lw=0)
    ax.set_xscale("log")
    ax.set_xlabel("time (µs)")
    ax.set_title("failing link (grey: until rerouted): bytes delivered, all flows", fontsize="medium")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small")
    fig.suptitle(f"multipath: {size.leaves} x {size.spines} leaf-spine, {hosts} hosts, 100 Gb/s")
    paths = c.save(fig, args.out, NAME)
    return {**runs, "files": [str(p) for p in paths]}


if __name__ == "__main__":
    main()
