"""Load balancing around a failed or flapping spine link (docs/uet.md, "Experiments").

    python bench/uet_failure.py [--mode fail|flap] [--quick] [--uet-rto TIME] [--uet-rto-estimate]
                                [--uet-rto-max TIME] [--out DIR]
    python bench/uet_failure.py --paper [--paper-k 16] [--paper-failed 8]

The shape of the failure experiment of REPS (Bonato et al., arXiv 2407.21625): long flows of a
random permutation on a leaf-spine, one spine link stops carrying frames in the middle of the run,
and the transports are compared by how fast their flows get going again. Four configurations:

- ``uet_reps``: Ultra Ethernet, REPS (entropies whose ACK came back are recycled; a timeout freezes
  on the last good ones); best-effort Ethernet with trimming switches, as UET deploys;
- ``uet_reps_nscc``: the same with NSCC's window (``cc = "nscc"``) and ECN-marking switches
  (SMaRTT-REPS);
- ``uet_ops``: Ultra Ethernet, oblivious packet spraying (a random entropy per packet), same fabric;
- ``roce_ecmp``: RoCE, ``cx6`` (in-order, Go-Back-N), one ECMP path per QP, PFC;
- ``roce_ar_ooo``: RoCE, ``cx7-ar`` (out-of-order placement, selective retransmission), per-packet
  adaptive routing in the switches, PFC.

``--mode fail``: at FAIL_AT_PS the link leaf0 - spine0 silently drops everything (both ways). leaf0
stops using it at once (local port down); the other leaves keep sending traffic for leaf0's hosts
to spine0, which has no way left to them, until the routing converges REROUTE_AFTER_PS later and the
link is taken out of every route. ``--mode flap``: the same link drops everything for FLAP_DOWN_PS
out of every FLAP_PERIOD_PS from FAIL_AT_PS on and no route ever changes (it flaps faster than the
routing converges).

Per configuration: FCT mean, p99 and max; goodput of all flows before and during the failure;
the longest time any flow delivered nothing after the failure began (in base RTTs) and the number
of flows that delivered nothing for more than STALL_RTTS RTTs; retransmitted packets. The plot
(``uet_failure_<mode>.png``) shows the goodput of all flows over time, one line per configuration.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

import rdmasim
from rdmasim.fabric import set_route
from rdmasim.flows import FlowSamples
from rdmasim.traffic.generators import permutation

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/uec_reference.py

LINE_BPS = 100e9
MTU = 4096
LINK_DELAY_PS = 1_000_000
SEED = 1
FAIL_AT_PS = 50_000_000
REROUTE_AFTER_PS = 400_000_000
FLAP_PERIOD_PS = 100_000_000
FLAP_DOWN_PS = 50_000_000
SAMPLE_PS = 2_000_000
STALL_RTTS = 20
#: the plot's time axis ends here
XLIM_US = 2500
RECOVERY_WINDOW_PS = 10_000_000
RECOVERY_FRACTION = 0.9
RUN_LIMIT_PS = 100_000_000_000
#: RoCE local ACK timeout exponent: 4.096 us x 2^8 = 1.05 ms (a flow whose window was lost waits this)
ROCE_TIMEOUT = 8


@dataclass(frozen=True)
class Config:
    """One transport and path selection."""

    label: str
    path_select: str
    profile: str
    transport: str = "roce"
    uet: dict[str, Any] | None = None
    switch: dict[str, Any] | None = None


LOSSY_TRIM = {"lossless": (), "trimming": True, "trim_threshold": "64KiB"}
#: NSCC's ECN marking (htsim main_uec.cpp: 0.2 / 0.8 BDP, probability 1 at kmax; BDP of 9.35 us)
NSCC_ECN = {"kmin": 23_377, "kmax": 93_507, "pmax": 1.0}
CONFIGS: dict[str, Config] = {
    "uet_reps": Config("UET + REPS", "ecmp", "cx6", "uet", {"lb": "reps", "trim": True}, LOSSY_TRIM),
    "uet_reps_nscc": Config("UET + REPS + NSCC", "ecmp", "cx6", "uet",
                            {"lb": "reps", "trim": True, "cc": "nscc"}, {**LOSSY_TRIM, "ecn": NSCC_ECN}),
    "uet_ops": Config("UET + oblivious spraying", "ecmp", "cx6", "uet", {"lb": "oblivious", "trim": True},
                      LOSSY_TRIM),
    "roce_ecmp": Config("RoCE + ECMP", "ecmp", "cx6"),
    "roce_ar_ooo": Config("RoCE + AR + OOO", "adaptive_packet", "cx7-ar"),
}
COLORS = {"uet_reps": "tab:orange", "uet_reps_nscc": "tab:brown", "uet_ops": "tab:purple",
          "roce_ecmp": "tab:blue", "roce_ar_ooo": "tab:red"}


@dataclass(frozen=True)
class Size:
    """Fabric and flow size."""

    leaves: int
    spines: int
    hosts_per_leaf: int
    flow_bytes: int


FULL = Size(4, 4, 4, 4 << 20)
QUICK = Size(2, 2, 4, 1 << 20)


def base_rtt_ps() -> int:
    """A leaf-spine round trip between leaves without queueing: four hops of propagation each way,
    four serialisations of a full data frame and one of an ACK-sized frame."""
    ser = (MTU + 100) * 8 / LINE_BPS * 1e12
    return int(8 * LINK_DELAY_PS + 4 * ser + 100 * 8 / LINE_BPS * 1e12)


def build(cfg: Config, size: Size, seed: int = SEED) -> Any:
    """The leaf-spine of ``cfg``."""
    sim = rdmasim.Simulator(seed)
    topo = rdmasim.leaf_spine(size.leaves, size.spines, size.hosts_per_leaf, mtu=MTU, sim=sim,
                              switch_config={"path_select": cfg.path_select, "buffer": "4MB",
                                             **(cfg.switch or {})})
    for h in topo.hosts:
        h.set_nic_profile(cfg.profile)
    return topo


def _join(parts: list[FlowSamples | None]) -> FlowSamples:
    rows: list[FlowSamples] = []
    for p in parts:  # a sample at the time one part stopped and the next began is kept once
        if p is not None and len(p.t_ps):
            keep = p.t_ps > (rows[-1].t_ps.max() if rows else -1)
            rows.append(FlowSamples(p.t_ps[keep], p.flow_id[keep], p.bytes_acked[keep], p.rate_bps[keep]))
    return FlowSamples(*(np.concatenate([getattr(p, k) for p in rows])
                         for k in ("t_ps", "flow_id", "bytes_acked", "rate_bps")))


def run_case(cfg: Config, size: Size, mode: str, seed: int = SEED) -> dict[str, Any]:
    """One configuration through the failure; its numbers and goodput series."""
    topo = build(cfg, size, seed)
    sim = topo.sim
    n = size.leaves * size.hosts_per_leaf
    kw: dict[str, Any] = {"timeout": ROCE_TIMEOUT}
    if cfg.transport == "uet":
        kw = {"transport": "uet", "uet": cfg.uet}
    elif rdmasim.nic.get_profile(cfg.profile).ooo_placement:
        kw["irn_window"] = 64
    flows = sim.add_flows(permutation(np.arange(n), size.flow_bytes, seed), mtu=MTU, **kw)
    link = topo.leaves[0].ports[size.hosts_per_leaf]  # leaf0 - spine0
    parts = [sim.run_flows(until=FAIL_AT_PS, sample_every=SAMPLE_PS)]
    if mode == "fail":
        link.ab.set_loss(1.0)
        link.ba.set_loss(1.0)
        remote = [h for hosts in topo.hosts_by_leaf[1:] for h in hosts]
        up = list(range(size.hosts_per_leaf + 1, size.hosts_per_leaf + size.spines))
        for h in remote:  # leaf0 sees its port go down at once
            set_route(topo.leaves[0], h, up)
        parts.append(sim.run_flows(until=FAIL_AT_PS + REROUTE_AFTER_PS, sample_every=SAMPLE_PS))
        link.fail()  # the routing has converged: the link is out of every route
    else:
        t = FAIL_AT_PS
        while t < RUN_LIMIT_PS and (flows.results()["finish_ps"] < 0).any():
            for d in (link.ab, link.ba):
                d.set_loss(1.0)
            parts.append(sim.run_flows(until=t + FLAP_DOWN_PS, sample_every=SAMPLE_PS))
            for d in (link.ab, link.ba):
                d.set_loss(0.0)
            parts.append(sim.run_flows(until=t + FLAP_PERIOD_PS, sample_every=SAMPLE_PS))
            t += FLAP_PERIOD_PS
    parts.append(sim.run_flows(until=RUN_LIMIT_PS, sample_every=SAMPLE_PS))
    res = flows.results()
    ok = (res["status"] == 0) & (res["bytes_delivered"] == res["size_bytes"])
    out = measure(_join(parts), res, mode)
    out["lost_frames"] = int(link.ab.stats()["dropped"] + link.ba.stats()["dropped"])
    out["failed_flows"] = int((~ok).sum())  # ended in error (e.g. retries exhausted)
    out["statuses"] = sorted({int(x) for x in res["status"][~ok]})
    return out


def measure(samples: FlowSamples, res: Any, mode: str) -> dict[str, Any]:
    """FCTs, goodput before and during the failure, stalls (longest time a flow delivered nothing
    after the failure began), and the goodput series."""
    rtt = base_rtt_ps()
    first = int(res["flow_id"][0])
    nflows = len(res)
    grid = np.unique(samples.t_ps)
    # acknowledged bytes per (sample time, flow): a finished flow counts its size from its finish on
    acked = np.zeros((len(grid), nflows), dtype=np.int64)
    rows = np.searchsorted(grid, samples.t_ps)
    acked[rows, (samples.flow_id - first).astype(np.int64)] = samples.bytes_acked
    finished = res["finish_ps"][None, :] <= grid[:, None]
    # (a flow that ended in error counts what it delivered)
    acked = np.where(finished, res["bytes_delivered"][None, :].astype(np.int64),
                     np.maximum.accumulate(acked, axis=0))
    total = acked.sum(axis=1).astype(np.float64)
    gbps = np.diff(total) * 8 / (np.diff(grid) * 1e-12) / 1e9
    mid = grid[1:]
    last = int(res["finish_ps"].max())
    end_fail = min(FAIL_AT_PS + REROUTE_AFTER_PS, last) if mode == "fail" else last

    def mean_in(lo: int, hi: int) -> float:
        sel = (mid > lo) & (mid <= hi)
        return float(gbps[sel].mean()) if sel.any() else float("nan")

    # longest run of samples without progress, per flow, from the failure on (while not finished)
    stall = np.zeros(nflows, dtype=np.int64)
    after = grid >= FAIL_AT_PS
    g = grid[after]
    a = acked[after]
    for f in range(nflows):
        moved = np.flatnonzero(np.diff(a[:, f]) > 0)
        if int(res["finish_ps"][f]) <= FAIL_AT_PS:
            continue
        fin = int(res["finish_ps"][f])
        marks = np.concatenate(([g[0]], g[moved + 1], [fin]))
        marks = marks[marks <= fin]
        stall[f] = int(np.diff(marks).max()) if len(marks) > 1 else fin - int(g[0])
    fct = res["fct_ps"][(res["status"] == 0) & (res["fct_ps"] >= 0)] / 1e6
    return {
        "goodput_recovery_rtts": goodput_recovery(mid, gbps, mean_in(0, FAIL_AT_PS),
                                                  int(res["finish_ps"][res["finish_ps"] >= 0].min()), rtt),
        "fct_mean_us": float(fct.mean()), "fct_p99_us": float(np.percentile(fct, 99)),
        "fct_max_us": float(fct.max()),
        "goodput_before_gbps": mean_in(0, FAIL_AT_PS),
        "goodput_during_gbps": mean_in(FAIL_AT_PS, end_fail),
        "max_stall_rtts": float(stall.max() / rtt),
        "stalled_flows": int((stall > STALL_RTTS * rtt).sum()),
        "flow_stall_rtts": (stall / rtt).tolist(),
        "retx_pkts": int(res["retx_pkts"].sum()),
        "series_t_us": (mid / 1e6).tolist(), "series_gbps": gbps.tolist(),
    }


def goodput_recovery(t: np.ndarray, gbps: np.ndarray, before: float, first_finish: int, rtt: int) -> float:
    """Base RTTs from the failure until the goodput of all flows (mean over RECOVERY_WINDOW_PS) is
    back to RECOVERY_FRACTION of its level before, after its lowest point since the failure; only
    until the first flow finishes (then the offered load falls); inf if it never gets back."""
    k = max(1, RECOVERY_WINDOW_PS // SAMPLE_PS)
    smooth = np.convolve(gbps, np.ones(k) / k, mode="valid")
    ts = t[k - 1:]
    sel = (ts >= FAIL_AT_PS) & (ts <= first_finish)
    if not sel.any():
        return float("inf")
    idx = np.flatnonzero(sel)
    low = idx[int(np.argmin(smooth[idx]))]
    back = idx[(idx >= low) & (smooth[idx] >= RECOVERY_FRACTION * before)]
    return float((ts[back[0]] - FAIL_AT_PS) / rtt) if len(back) else float("inf")


ROWS = [("FCT mean (us)", "fct_mean_us", "{:.0f}"), ("FCT p99 (us)", "fct_p99_us", "{:.0f}"),
        ("FCT max (us)", "fct_max_us", "{:.0f}"),
        ("goodput before (Gb/s)", "goodput_before_gbps", "{:.0f}"),
        ("goodput during failure, flows running (Gb/s)", "goodput_during_gbps", "{:.0f}"),
        ("goodput back to 90 % of before (RTTs after failure)", "goodput_recovery_rtts", "{:.1f}"),
        ("longest stall after failure (RTTs)", "max_stall_rtts", "{:.1f}"),
        (f"flows stalled > {STALL_RTTS} RTTs", "stalled_flows", "{}"),
        ("retransmitted packets", "retx_pkts", "{:,}"),
        ("frames lost on the failed link", "lost_frames", "{:,}"),
        ("flows ended in error", "failed_flows", "{}")]


def run(mode: str = "fail", quick: bool = False, configs: list[str] | None = None,
        uet_rto: str | None = None, uet_opts: dict[str, Any] | None = None,
        seed: int = SEED) -> dict[str, dict[str, Any]]:
    """Every configuration (or those named) through the failure (``mode`` "fail" or "flap");
    ``uet_rto``: the UET flows' retransmit timeout instead of the default; ``uet_opts``: more UET
    options for the UET configurations (``rto_estimate``, ``rto_max``, ...); ``seed``: the
    simulation's and the permutation's."""
    if mode not in ("fail", "flap"):
        raise ValueError(f"uet_failure: mode = {mode!r}: allowed 'fail' or 'flap'")
    size = QUICK if quick else FULL
    cfgs = {k: CONFIGS[k] for k in (configs or list(CONFIGS))}
    extra = {**({"rto": uet_rto} if uet_rto is not None else {}), **(uet_opts or {})}
    if extra:
        cfgs = {k: (replace(c, uet={**c.uet, **extra}) if c.uet is not None else c)
                for k, c in cfgs.items()}
    return {k: run_case(c, size, mode, seed) for k, c in cfgs.items()}


#: ``--paper``: the UEC reference simulator's load-balancing experiment (bench/uec_reference.py):
#: (label, transport, lb, ack_every, slow links?, reference key)
PAPER_CASES = {
    "reps_nofail": ("UET + NSCC + REPS, no slow link", "uet", "reps", 4, False, "perm1024"),
    "reps_ack1": ("UET + NSCC + REPS, ACK per packet", "uet", "reps", 1, True, "perm1024_failed8_reps_ack1"),
    "reps_ack4": ("UET + NSCC + REPS, ACK per 4", "uet", "reps", 4, True, "perm1024_failed8_reps_ack4"),
    "oblivious": ("UET + NSCC + oblivious", "uet", "oblivious", 4, True, "perm1024_failed8_oblivious"),
    "roce_ecmp": ("RoCE + ECMP (cx6, PFC, no CC)", "roce", "ecmp", 0, True, ""),
}


def run_paper(k: int = 16, failed: int = 8, cases: list[str] | None = None,
              seed: int = SEED) -> dict[str, Any]:
    """The load-balancing experiment of the UEC reference simulator's validation plan
    (``validate_load_balancing_failed_snd.txt``): a permutation of 2,000,000-byte flows on a
    ``k``-ary three-tier fat tree (1024 hosts at k = 16) at 100 Gb/s, ``failed`` core links at a
    quarter of their rate for the whole run, UET with NSCC (from the fat tree's base RTT),
    trimming and ECN switches at htsim's defaults; RoCE with ECMP beside it.  Per case: FCT of
    the first and last flow, mean and p99, retransmitted packets, trims, and the reference's
    figures for the same case."""
    import uec_reference as ref

    out: dict[str, Any] = {}
    for key in cases or list(PAPER_CASES):
        label, transport, lb, ack_every, slow, ref_key = PAPER_CASES[key]
        if transport == "uet":
            topo = ref.fat_tree(k, ref.switch_config(), seed)
        else:
            topo = ref.fat_tree(k, {"path_select": "ecmp"}, seed)
            for h in topo.hosts:
                h.set_nic_profile("cx6")
        if slow:
            ref.slow_core_links(topo, failed)
        n = len(topo.hosts)
        table = permutation(np.arange(n), ref.FLOW_BYTES, seed)
        kw: dict[str, Any] = ({"transport": "uet", "uet": {"lb": lb, "cc": "nscc", "trim": True,
                                                           "ack_every": ack_every,
                                                           "nscc_base_rtt": ref.base_rtt_ps()}}
                              if transport == "uet" else {"timeout": ROCE_TIMEOUT})
        flows = topo.sim.add_flows(table, mtu=ref.MTU, **kw)
        topo.sim.run_flows(until=RUN_LIMIT_PS)
        res = flows.results()
        if not ((res["status"] == 0) & (res["bytes_delivered"] == res["size_bytes"])).all():
            raise RuntimeError(f"{label}: every flow must complete with its bytes")
        fct = res["fct_ps"] / 1e6
        ports = [p for sw in [*topo.edges, *topo.aggs, *topo.cores] for p in sw.stats()]
        out[key] = {"label": label, "first_us": float(fct.min()), "mean_us": float(fct.mean()),
                    "p99_us": float(np.percentile(fct, 99)), "tail_us": float(fct.max()),
                    "retx_pkts": int(res["retx_pkts"].sum()), "trims": int(sum(p["trims"] for p in ports)),
                    "reference": ref.REFERENCE.get(ref_key)}
    return out


def print_paper(runs: dict[str, Any], k: int, failed: int) -> None:
    """The table docs/uet.md quotes."""
    import uec_reference as ref

    print(f"fat tree k = {k} ({k ** 3 // 4} hosts), 100 Gb/s, 1 us hops (base RTT "
          f"{ref.base_rtt_ps() / 1e6:.2f} us, BDP {ref.bdp_bytes():,} B: trimming at 1 BDP, "
          "ECN 0.2-0.8 BDP), "
          f"permutation of {ref.FLOW_BYTES:,}-byte flows, {failed} core links at "
          f"{ref.FAILED_RATIO:.0%} (core to aggregation)")
    print("| case | FCT first / mean / p99 / last (us) | retransmitted | trimmed | htsim: first / last (us), "
          "retransmitted |")
    print("|---|---|---|---|---|")
    for r in runs.values():
        h = r["reference"]
        hs = f"{h['first']:.1f} / {h['tail']:.1f}, {h['rtx']:,}" if h else "-"
        print(f"| {r['label']} | {r['first_us']:.1f} / {r['mean_us']:.1f} / {r['p99_us']:.1f} / "
              f"{r['tail_us']:.1f} | {r['retx_pkts']:,} | {r['trims']:,} | {hs} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("fail", "flap"), default="fail")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--paper", action="store_true",
                    help="the UEC reference simulator's load-balancing experiment (slow core links on a "
                    "fat tree) instead; prints its table only")
    ap.add_argument("--paper-k", type=int, default=16, help="--paper: the fat tree's k (16: 1024 hosts)")
    ap.add_argument("--paper-failed", type=int, default=8, help="--paper: core links at a quarter rate")
    ap.add_argument("--uet-rto", default=None, help="the UET flows' retransmit timeout (default 100us)")
    ap.add_argument("--uet-rto-estimate", action="store_true",
                    help="the UET flows' timeout from an RTT estimate (uet rto_estimate)")
    ap.add_argument("--uet-rto-max", default=None, help="with --uet-rto-estimate: its cap (default 10ms)")
    ap.add_argument("--out", default="bench/results")
    a = ap.parse_args()
    if a.paper:
        print_paper(run_paper(a.paper_k, a.paper_failed), a.paper_k, a.paper_failed)
        return
    size = QUICK if a.quick else FULL
    opts: dict[str, Any] = {"rto_estimate": True} if a.uet_rto_estimate else {}
    if a.uet_rto_max is not None:
        opts["rto_max"] = a.uet_rto_max
    runs = run(a.mode, a.quick, uet_rto=a.uet_rto, uet_opts=opts)
    rtt = base_rtt_ps()
    print(f"leaf-spine {size.leaves} x {size.spines}, {size.leaves * size.hosts_per_leaf} hosts, 100 Gb/s, "
          f"1 us links (base RTT {rtt / 1e6:.2f} us), permutation of {size.flow_bytes >> 20} MiB flows; "
          + (f"leaf0-spine0 fails at {FAIL_AT_PS / 1e6:.0f} us, routes converge at "
             f"{(FAIL_AT_PS + REROUTE_AFTER_PS) / 1e6:.0f} us" if a.mode == "fail" else
             f"leaf0-spine0 down {FLAP_DOWN_PS / 1e6:.0f} us of every {FLAP_PERIOD_PS / 1e6:.0f} us from "
             f"{FAIL_AT_PS / 1e6:.0f} us, routes never change"))
    labels = [CONFIGS[k].label for k in runs]
    width = max(len(r[0]) for r in ROWS)
    print(f"{'':{width}}  " + "  ".join(f"{lab:>24}" for lab in labels))
    for label, key, fmt in ROWS:
        print(f"{label:{width}}  " + "  ".join(f"{fmt.format(runs[k][key]):>24}" for k in runs))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = (f"uet_failure_{a.mode}{'_quick' if a.quick else ''}{'_rto' + a.uet_rto if a.uet_rto else ''}"
            f"{'_est' if a.uet_rto_estimate else ''}{'_max' + a.uet_rto_max if a.uet_rto_max else ''}")
    (out / f"{name}.json").write_text(json.dumps(runs))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, r in runs.items():
        ax.plot(r["series_t_us"], r["series_gbps"], color=COLORS[k], label=CONFIGS[k].label, lw=1.0)
    if a.mode == "fail":
        ax.axvspan(FAIL_AT_PS / 1e6, (FAIL_AT_PS + REROUTE_AFTER_PS) / 1e6, color="grey", alpha=0.15, lw=0,
                   label="link failed, routes not yet converged")
    else:
        ax.axvline(FAIL_AT_PS / 1e6, color="grey", ls="--", lw=0.8, label="link starts flapping")
    ax.set_xlim(0, XLIM_US)
    ax.set_xlabel(f"time (µs; runs longer than {XLIM_US} µs are cut)")
    ax.set_ylabel("goodput, all flows (Gb/s)")
    ax.set_title(f"{size.leaves} x {size.spines} leaf-spine, permutation, spine link {a.mode}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out / f"{name}.png", dpi=120)
    print(f"wrote {out / name}.png and .json")


if __name__ == "__main__":
    main()
