"""Collectives over RoCE + ECMP and over UET + REPS on a leaf-spine: the table of docs/uet.md and
docs/collectives.md ("RoCE or UET").

Usage (from the repository root)::

    python docs/gen_uet_collectives.py            # the table (Markdown)
    python docs/gen_uet_collectives.py --quick    # 2 x 2 x 4 leaf-spine, smaller buffers
    python docs/gen_uet_collectives.py --star     # over UET on the idle star of docs/collectives.md

``--star`` runs the cases of tests/traffic/test_collective_uet.py (the same code) over UET with REPS on
the idle 100 Gb/s star of the RoCE cost-model table and prints measured against model, alpha and beta
measured from UET flows on that star.

A 4-leaf, 4-spine leaf-spine of 16 hosts (100 Gb/s, 1 us links, MTU 4096, non-blocking). Each
collective runs alone on it, once per configuration:

- RoCE + ECMP: RC QPs (cx6, Go-Back-N), PFC, one ECMP path per QP pair;
- UET + spray: Ultra Ethernet, a random entropy per packet, best-effort Ethernet with trimming
  switches (trim threshold 64 KiB), no PFC;
- UET + REPS: the same with REPS's recycled entropies.

No end-to-end congestion control in any. The model of each is the alpha-beta model of
docs/collectives.md with alpha and beta measured with that configuration's own flows between two
hosts on different leaves (so the model has the fabric's longest path and the transport's headers):
what the collective would take if the fabric never made two flows share a link they need not share.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np

import rdmasim
from rdmasim import traffic as tr
from rdmasim.traffic.collectives import AlphaBeta

MTU = 4096
SEED = 1


@dataclass(frozen=True)
class Config:
    """One transport and its fabric settings."""

    label: str
    transport: str
    uet: dict[str, Any] | None = None


CONFIGS = (
    Config("RoCE + ECMP", "roce"),
    Config("UET + spray", "uet", {"lb": "oblivious", "trim": True}),
    Config("UET + REPS", "uet", {"lb": "reps", "trim": True}),
)


def leaf_spine(cfg: Config, leaves: int, spines: int, per_leaf: int) -> Any:
    """The leaf-spine of ``cfg``: lossless with PFC for RoCE; best effort with trimming for UET."""
    sim = rdmasim.Simulator(SEED)
    switch: dict[str, Any] = {"path_select": "ecmp", "buffer": "4MB"}
    if cfg.transport == "uet":
        switch.update(lossless=(), trimming=True, trim_threshold="64KiB")
    topo = rdmasim.leaf_spine(leaves, spines, per_leaf, mtu=MTU, sim=sim, switch_config=switch)
    for h in topo.hosts:
        h.set_nic_profile("cx6")
    return topo


def run(cfg: Config, table: tr.FlowTable, shape: tuple[int, int, int]) -> dict[str, Any]:
    """``table`` alone on the leaf-spine of ``cfg``: its time (first start to last finish) and counters."""
    topo = leaf_spine(cfg, *shape)
    kw: dict[str, Any] = {"transport": "uet", "uet": cfg.uet} if cfg.transport == "uet" else {}
    fs = topo.sim.add_flows(table, mtu=MTU, **kw)
    topo.sim.run_flows(until="1s")
    r = fs.results()
    assert (r["status"] == 0).all() and (r["bytes_delivered"] == r["size_bytes"]).all(), cfg.label
    ports = [p for sw in [*topo.leaves, *topo.spines] for p in sw.stats()]
    return {"t_ps": int(r["finish_ps"].max() - r["start_ps"].min()), "retx": int(r["retx_pkts"].sum()),
            "trims": int(sum(p["trims"] for p in ports)),
            "queue_kb": max(max(p["egress_peak_bytes"]) for p in ports) / 1e3}


def alpha_beta(cfg: Config, shape: tuple[int, int, int]) -> AlphaBeta:
    """alpha and beta of ``cfg``'s flows from host 0 to the first host of the last leaf."""
    far = shape[2] * (shape[0] - 1)

    def one(size: int) -> int:
        return run(cfg, tr.FlowTable.from_columns([0], [far], [size]), shape)["t_ps"]

    beta = (one(4 << 20) - one(1 << 20)) / (3 << 20)
    return AlphaBeta(one(MTU) - MTU * beta, beta)


def collectives(n_hosts: int, quick: bool) -> list[tuple[str, str, int, tr.FlowTable, Any]]:
    """(name, kind, size, table, model(ab)) of each collective on ``n_hosts`` ranks."""
    p = n_hosts
    a2a = (1 << 20) if quick else (4 << 20)
    ring = (2 << 20) if quick else (16 << 20)
    chunk = 64 << 10
    return [
        ("all-to-all, direct", "alltoall", a2a, tr.alltoall(p, a2a), lambda m: m.alltoall_direct(p, a2a)),
        ("all-to-all, pairwise", "alltoall", a2a, tr.alltoall(p, a2a, algorithm="pairwise"),
         lambda m: m.alltoall_pairwise(p, a2a)),
        ("all-reduce, ring", "allreduce", ring, tr.ring_allreduce(p, ring),
         lambda m: m.ring_allreduce(p, ring)),
        ("all-reduce, ring, 64 KiB chunks", "allreduce", ring,
         tr.collective("allreduce", p, ring, chunk_size=chunk, inflight=4),
         lambda m: m.ring_allreduce_pipelined(p, ring, chunk, 4)),
    ]


def star_table() -> None:
    """The collectives of tests/traffic/test_collective_uet.py over UET against their models."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "traffic"))
    from collective_util import measure_alpha_beta, run_table
    from test_collective_uet import UET, UET_CASES

    ab = measure_alpha_beta(transport="uet", uet=UET)
    roce = measure_alpha_beta()
    print(f"UET: alpha = {ab.alpha_ps / 1e6:.3f} us, beta = {ab.beta_ps_per_byte:.2f} ps/byte; RoCE: alpha = "
          f"{roce.alpha_ps / 1e6:.3f} us, beta = {roce.beta_ps_per_byte:.2f} ps/byte\n")
    print("| algorithm | p | size | measured (us) | model (us) | measured / model |")
    print("|---|---|---|---|---|---|")
    for case in UET_CASES:
        for p in (4, 8, 16):
            for n in (256 << 10, 2 << 20):
                t = run_table(p, case.build(p, n), transport="uet", uet=UET)
                m = case.model(ab, p, n)
                sz = f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
                print(f"| {case.name} | {p} | {sz} | {t / 1e6:,.1f} | {m / 1e6:,.1f} | {t / m:.3f} |")


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 2 x 2 x 4 leaf-spine and smaller buffers")
    ap.add_argument("--star", action="store_true", help="over UET on the idle star, against the models")
    args = ap.parse_args(argv)
    if args.star:
        star_table()
        return []
    shape = (2, 2, 4) if args.quick else (4, 4, 4)
    n = shape[0] * shape[2]
    abs_ = {c.label: alpha_beta(c, shape) for c in CONFIGS}
    print(f"leaf-spine {shape[0]} leaves x {shape[1]} spines x {shape[2]} hosts, 100 Gb/s, 1 us links, "
          f"MTU {MTU}")
    for c in CONFIGS:
        ab = abs_[c.label]
        print(f"{c.label}: alpha = {ab.alpha_ps / 1e6:.3f} us, beta = {ab.beta_ps_per_byte:.2f} ps/byte")
    print()
    print("| collective | size | configuration | time (us) | model (us) | time / model | busbw (Gb/s) | "
          "retransmitted | trimmed | deepest queue (KB) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name, kind, size, table, model in collectives(n, args.quick):
        for c in CONFIGS:
            r = run(c, table, shape)
            m = model(abs_[c.label])
            busbw = tr.collective_result(kind, n, size, r["t_ps"]).busbw_Bps * 8 / 1e9
            rows.append({"collective": name, "config": c.label, "model_ps": m, "busbw_gbps": busbw, **r})
            sz = f"{size >> 20} MiB"
            print(f"| {name} | {sz} | {c.label} | {r['t_ps'] / 1e6:,.1f} | {m / 1e6:,.1f} | "
                  f"{r['t_ps'] / m:.3f} | {busbw:.1f} | {r['retx']:,} | {r['trims']:,} | "
                  f"{r['queue_kb']:.0f} |")
    return rows


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
