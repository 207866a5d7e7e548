"""SMaRTT (NSCC) against RoCE with DCQCN on a leaf-spine (docs/uet.md, "Experiments").

    python bench/smartt_vs_dcqcn.py [--workload incast|permutation|both] [--quick] [--out DIR]
    python bench/smartt_vs_dcqcn.py --paper [--workload ...]

``--paper``: the same configurations on the setup of the UEC reference simulator's NSCC
validation (bench/uec_reference.py): a 16-host three-tier fat tree (k = 4) at 100 Gb/s with 1 us
hops, a 15:1 incast of 2,000,000 bytes per sender into the last host and a permutation of
2,000,000-byte flows; the UET configurations on htsim's switch defaults (no PFC, trimming at one
BDP, ECN from 0.2 to 0.8 BDP), the RoCE ones with PFC and their marking as below; the
reference's own NSCC figures printed beside.  It writes ``smartt_vs_dcqcn_paper.{json,png}``.

Bonato et al. (SMaRTT, arXiv 2404.01630) report SMaRTT up to 50 % better than RoCE (DCQCN) in
completion time. The same comparison at a size this machine runs: a 4 x 4 x 4 leaf-spine (16
hosts, 100 Gb/s, 1 us links, MTU 4096, 4 MB switch buffers), ECN marking at 0.2 / 0.8 BDP with
probability 1 at kmax (the UEC NSCC setup of htsim's main_uec.cpp), two workloads:

- ``incast``: 8 senders on the other leaves into host 0, 1 MiB each (an 8:1 incast);
- ``permutation``: a random permutation of 4 MiB flows (every host sends and receives one).

Configurations:

- ``roce_dcqcn``: RoCE, ``cx6`` NICs with DCQCN with the DCQCN paper's parameters
  (``DcqcnParams()``), ECMP, PFC, switches marking as the DCQCN paper (RED 5 KB / 200 KB / 1 %);
- ``roce_dcqcn_cx6``: the same with the ``cx6`` profile's DCQCN preset (NVIDIA firmware defaults:
  300 us rate timer, 5 Mb/s additive increase);
- ``nscc_ecmp``: RoCE QPs driven by NSCC (``NsccParams.for_path`` for the base RTT), ``cx6``, ECMP,
  PFC: SMaRTT's window on one path, the congestion control alone changed;
- ``nscc_ar_ooo``: NSCC on ``cx7-ar`` NICs (out-of-order placement) with per-packet adaptive
  routing: SMaRTT with a per-packet load balancer (the stand-in for REPS on this transport);
- ``uet_nscc_reps_trim``: SMaRTT-REPS: the Ultra Ethernet transport with NSCC (``cc = "nscc"``),
  REPS and trimming on best-effort Ethernet with trimming switches;
- ``uet_reps_trim``: the same with a fixed window (``cc = "none"``).

Per configuration: FCT mean, p99 and max (us), the deepest switch egress queue (KB), PFC pause
frames, retransmitted packets and trims; the ratio of each FCT statistic to RoCE + DCQCN's.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import rdmasim
from rdmasim.cc import DcqcnParams
from rdmasim.cc_nscc import NsccParams
from rdmasim.traffic.generators import incast, permutation

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/uec_reference.py
import uec_reference  # noqa: E402

LINE_BPS = 100e9
MTU = 4096
LINK_DELAY_PS = 1_000_000
SEED = 1
RUN_LIMIT_PS = 100_000_000_000


def base_rtt_ps() -> int:
    """A leaf-spine round trip between leaves without queueing (as bench/uet_failure.py)."""
    ser = (MTU + 100) * 8 / LINE_BPS * 1e12
    return int(8 * LINK_DELAY_PS + 4 * ser + 100 * 8 / LINE_BPS * 1e12)


BDP = int(LINE_BPS * base_rtt_ps() / 8e12)
#: NSCC's marking: htsim main_uec.cpp (0.2 / 0.8 BDP, probability 1 at kmax)
ECN = {"kmin": round(0.2 * BDP), "kmax": round(0.8 * BDP), "pmax": 1.0}
#: DCQCN's marking: the DCQCN paper's RED profile (docs/validation-dcqcn.md)
ECN_DCQCN = {"kmin": 5_000, "kmax": 200_000, "pmax": 0.01}


@dataclass(frozen=True)
class Config:
    """One transport, congestion control and path selection."""

    label: str
    path_select: str
    profile: str
    cc: str | None
    transport: str = "roce"
    uet: dict[str, Any] | None = None
    switch: dict[str, Any] | None = None
    ecn: dict[str, Any] | None = None  # None: ECN (NSCC's marking)


CONFIGS: dict[str, Config] = {
    "roce_dcqcn": Config("RoCE + DCQCN + ECMP", "ecmp", "cx6", "dcqcn-paper", ecn=ECN_DCQCN),
    "roce_dcqcn_cx6": Config("RoCE + DCQCN (cx6 preset)", "ecmp", "cx6", "dcqcn", ecn=ECN_DCQCN),
    "nscc_ecmp": Config("NSCC + ECMP (RoCE QPs)", "ecmp", "cx6", "nscc"),
    "nscc_ar_ooo": Config("NSCC + AR + OOO (RoCE QPs)", "adaptive_packet", "cx7-ar", "nscc"),
    "uet_nscc_reps_trim": Config("UET + NSCC + REPS + trim", "ecmp", "cx6", None, "uet",
                                 {"lb": "reps", "trim": True, "cc": "nscc"},
                                 {"lossless": (), "trimming": True, "trim_threshold": "64KiB"}),
    "uet_reps_trim": Config("UET + REPS + trim (no CC)", "ecmp", "cx6", None, "uet",
                            {"lb": "reps", "trim": True},
                            {"lossless": (), "trimming": True, "trim_threshold": "64KiB"}),
}


@dataclass(frozen=True)
class Size:
    """Fabric and workload sizes."""

    leaves: int
    spines: int
    hosts_per_leaf: int
    incast_senders: int
    incast_bytes: int
    perm_bytes: int


FULL = Size(4, 4, 4, 8, 1 << 20, 4 << 20)
QUICK = Size(2, 2, 4, 4, 256 << 10, 1 << 20)
#: ``--paper``: the k = 4 fat tree (16 hosts; leaves/spines unused), 15 senders into the last host
PAPER = Size(0, 0, 0, 15, uec_reference.FLOW_BYTES, uec_reference.FLOW_BYTES)
PAPER_K = 4


def flows_of(workload: str, size: Size) -> Any:
    """The flow table of ``workload``."""
    if size is PAPER:
        n = PAPER_K ** 3 // 4
        if workload == "incast":  # htsim's connection_matrices/incast.cm: 0..14 -> 15
            return incast(np.arange(n - 1), n - 1, size.incast_bytes)
        return permutation(np.arange(n), size.perm_bytes, SEED)
    n = size.leaves * size.hosts_per_leaf
    if workload == "incast":
        others = np.arange(size.hosts_per_leaf, n)
        senders = others[np.linspace(0, len(others) - 1, size.incast_senders).astype(int)]
        return incast(senders, 0, size.incast_bytes)
    return permutation(np.arange(n), size.perm_bytes, SEED)


def run_case(cfg: Config, workload: str, size: Size) -> dict[str, Any]:
    """One configuration on one workload; its numbers."""
    if size is PAPER:
        swc = (uec_reference.switch_config(cfg.path_select) if cfg.transport == "uet" else
               {"path_select": cfg.path_select, "buffer": "4MB",
                "ecn": cfg.ecn or uec_reference.switch_config()["ecn"]})
        topo = uec_reference.fat_tree(PAPER_K, swc, SEED)
        sim = topo.sim
        switches = [*topo.edges, *topo.aggs, *topo.cores]
        rtt = uec_reference.base_rtt_ps()
    else:
        sim = rdmasim.Simulator(SEED)
        topo = rdmasim.leaf_spine(size.leaves, size.spines, size.hosts_per_leaf, mtu=MTU, sim=sim,
                                  switch_config={"path_select": cfg.path_select, "buffer": "4MB",
                                                 "ecn": cfg.ecn or ECN,
                                                 **(cfg.switch or {})})
        switches = [*topo.leaves, *topo.spines]
        rtt = base_rtt_ps()
    for h in topo.hosts:
        h.set_nic_profile(cfg.profile)
        if cfg.cc == "nscc":
            h.set_congestion_control("nscc", NsccParams.for_path(rtt, mtu=MTU))
        elif cfg.cc == "dcqcn-paper":
            h.set_congestion_control("dcqcn", DcqcnParams())
        elif cfg.cc is not None:
            h.set_congestion_control(cfg.cc)
    kw: dict[str, Any] = {}
    if cfg.transport == "uet":
        uet = dict(cfg.uet or {})
        if size is PAPER and uet.get("cc") == "nscc":
            uet["nscc_base_rtt"] = rtt  # the fat tree's round trip, not a leaf-spine's
        kw = {"transport": "uet", "uet": uet}
    elif rdmasim.nic.get_profile(cfg.profile).ooo_placement:
        kw["irn_window"] = 64
    flows = sim.add_flows(flows_of(workload, size), mtu=MTU, **kw)
    sim.run_flows(until=RUN_LIMIT_PS)
    res = flows.results()
    assert (res["status"] == 0).all() and (res["bytes_delivered"] == res["size_bytes"]).all(), \
        f"{cfg.label} / {workload}: every flow must complete with its bytes"
    ports = [p for sw in switches for p in sw.stats()]
    fct = res["fct_ps"] / 1e6
    return {
        "fct_min_us": float(fct.min()), "fct_mean_us": float(fct.mean()),
        "fct_p99_us": float(np.percentile(fct, 99)),
        "fct_max_us": float(fct.max()),
        "max_queue_kb": max(max(p["egress_peak_bytes"]) for p in ports) / 1e3,
        "pause_us": float(res["pause_ps"].sum() / 1e6),
        "retx_pkts": int(res["retx_pkts"].sum()),
        "trims": int(sum(p["trims"] for p in ports)),
    }


ROWS = [("FCT first (us)", "fct_min_us", "{:.0f}"),
        ("FCT mean (us)", "fct_mean_us", "{:.0f}"), ("FCT p99 (us)", "fct_p99_us", "{:.0f}"),
        ("FCT max (us)", "fct_max_us", "{:.0f}"),
        ("FCT mean / DCQCN's", "mean_ratio", "{:.2f}"), ("FCT max / DCQCN's", "max_ratio", "{:.2f}"),
        ("deepest egress queue (KB)", "max_queue_kb", "{:.0f}"),
        ("time paused by PFC, all flows (us)", "pause_us", "{:.0f}"),
        ("retransmitted packets", "retx_pkts", "{:,}"), ("trimmed packets", "trims", "{:,}")]


def run(workload: str, quick: bool = False, configs: list[str] | None = None,
        paper: bool = False) -> dict[str, dict[str, Any]]:
    """Every configuration (or those named) on ``workload``; FCT ratios against RoCE + DCQCN.
    ``paper``: on the UEC reference simulator's setup (module docstring)."""
    size = PAPER if paper else QUICK if quick else FULL
    out = {k: run_case(CONFIGS[k], workload, size) for k in (configs or list(CONFIGS))}
    if "roce_dcqcn" in out:
        ref = out["roce_dcqcn"]
        for r in out.values():
            r["mean_ratio"] = r["fct_mean_us"] / ref["fct_mean_us"]
            r["max_ratio"] = r["fct_max_us"] / ref["fct_max_us"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", choices=("incast", "permutation", "both"), default="both")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--paper", action="store_true", help="the UEC reference simulator's setup (docstring)")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args()
    size = PAPER if a.paper else QUICK if a.quick else FULL
    workloads = ("incast", "permutation") if a.workload == "both" else (a.workload,)
    if a.paper:
        print(f"fat tree k = {PAPER_K} ({PAPER_K ** 3 // 4} hosts), 100 Gb/s, 1 us hops, MTU {MTU}, base RTT "
              f"{uec_reference.base_rtt_ps() / 1e6:.2f} us; UET switches {uec_reference.switch_config()}; "
              f"RoCE switches PFC, ECN for NSCC {uec_reference.switch_config()['ecn']}, "
              f"for DCQCN {ECN_DCQCN}")
    else:
        print(f"leaf-spine {size.leaves} x {size.spines}, {size.leaves * size.hosts_per_leaf} hosts, "
              f"100 Gb/s, 1 us links, MTU {MTU}, base RTT {base_rtt_ps() / 1e6:.2f} us, ECN for NSCC {ECN}, "
              f"for DCQCN {ECN_DCQCN}")
    runs: dict[str, Any] = {}
    for w in workloads:
        runs[w] = run(w, a.quick, paper=a.paper)
        labels = [CONFIGS[k].label for k in runs[w]]
        width = max(len(r[0]) for r in ROWS)
        print(f"\n{w}:")
        print(f"{'':{width}}  " + "  ".join(f"{lab:>27}" for lab in labels))
        for label, key, fmt in ROWS:
            print(f"{label:{width}}  " + "  ".join(f"{fmt.format(runs[w][k][key]):>27}" for k in runs[w]))
        if a.paper:
            h = uec_reference.REFERENCE["incast16" if w == "incast" else "perm16"]
            print(f"htsim (UEC reference, NSCC), {h['what']}: first flow {h['first']} us, last "
                  f"{h['tail']} us, {h['rtx']} retransmitted")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"smartt_vs_dcqcn{'_quick' if a.quick else '_paper' if a.paper else ''}"
    (out / f"{name}.json").write_text(json.dumps(runs))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(workloads), figsize=(5.5 * len(workloads), 4), squeeze=False)
    for ax, w in zip(axes[0], workloads, strict=True):
        keys = list(runs[w])
        x = np.arange(3)
        width = 0.8 / len(keys)
        for j, k in enumerate(keys):
            vals = [runs[w][k][s] for s in ("fct_mean_us", "fct_p99_us", "fct_max_us")]
            ax.bar(x + (j - (len(keys) - 1) / 2) * width, vals, width, label=CONFIGS[k].label)
        ax.set_xticks(x, ["mean", "p99", "max"])
        ax.set_ylabel("FCT (µs, log scale)")
        ax.set_yscale("log")
        ax.set_title(w)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=120)
    print(f"wrote {out / name}.png and .json")


if __name__ == "__main__":
    main()
