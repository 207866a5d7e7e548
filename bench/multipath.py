"""Leaf-spine permutation under ECMP, spraying and adaptive routing, with in-order and out-of-order
receivers (docs/multipath.md).

    PYTHONPATH=. python bench/multipath.py [--hosts-per-leaf 4] [--size 8MiB] [--seed 1]

Prints, per (path selection, receiver), the mean and lowest per-flow rate as a fraction of the
line rate, retransmitted packets and NAKs.  Recovery ``uet`` runs the flows on the Ultra Ethernet
transport instead (docs/uet.md), its third field the load balancing: ``ecmp:uet:oblivious``
(packet spraying by entropy) or ``ecmp:uet:reps``.
"""
from __future__ import annotations

import argparse
from typing import Any

import rdmasim
from rdmasim.traffic.generators import permutation
from rdmasim.units import parse_size

LINE_BPS = 100e9


def run(mode: str, recovery: str, *, leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4,
        size: int = 8 << 20, seed: int = 1, profile: str | None = None, irn_window: int = 64,
        mtu: int = 4096) -> dict[str, Any]:
    """One run; ``recovery`` gbn / irn / ooo; every host on ``profile`` (default: rxe, and cx7-ar
    for ooo). Returns the mean and lowest per-flow rate (fraction of the line rate), the
    retransmitted packets and the data packets sent."""
    topo = rdmasim.leaf_spine(leaves, spines, hosts_per_leaf, seed=seed, mtu=mtu,
                              switch_config={"path_select": mode})
    hosts = len(topo.sim.hosts)
    if recovery == "uet":
        flows = topo.sim.add_flows(permutation(hosts, size, seed), mtu=mtu, transport="uet",
                                   uet={"lb": profile or "oblivious"})
        topo.sim.run_flows()
        res = flows.results()
        rate = size * 8 / (res["fct_ps"] * 1e-12) / LINE_BPS
        retx = int(res["retx_pkts"].sum())
        return {"ok": bool((res["status"] == 0).all()), "mean": float(rate.mean()), "min": float(rate.min()),
                "retx": retx, "data_pkts": hosts * -(-size // mtu) + retx}
    if profile or recovery == "ooo":
        for h in topo.sim.hosts.values():
            h.set_nic_profile(profile or "cx7-ar")
    table = permutation(hosts, size, seed)
    kw: dict[str, Any] = {"irn_window": irn_window} if recovery in ("irn", "ooo") else {}
    flows = topo.sim.add_flows(table, recovery=recovery, mtu=mtu, **kw)
    topo.sim.run_flows()
    res = flows.results()
    rate = size * 8 / (res["fct_ps"] * 1e-12) / LINE_BPS
    retx = int(res["retx_pkts"].sum())
    return {"ok": bool((res["status"] == 0).all()), "mean": float(rate.mean()), "min": float(rate.min()),
            "retx": retx, "data_pkts": hosts * -(-size // mtu) + retx}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts-per-leaf", type=int, default=4)
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--spines", type=int, default=4)
    ap.add_argument("--size", default="8MiB")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mtu", type=int, default=4096)
    ap.add_argument("--irn-window", type=int, default=64)
    ap.add_argument("--cases", default="ecmp:gbn,adaptive:gbn,adaptive:irn,adaptive:ooo,spray:ooo,ecmp:ooo",
                    help="comma-separated path_select:recovery[:profile]")
    a = ap.parse_args()
    for case in a.cases.split(","):
        mode, rec, *prof = case.split(":")
        r = run(mode, rec, leaves=a.leaves, spines=a.spines, hosts_per_leaf=a.hosts_per_leaf,
                size=parse_size(a.size), seed=a.seed, mtu=a.mtu, irn_window=a.irn_window,
                profile=prof[0] if prof else None)
        print(f"{mode:9s} {rec:4s} mean {r['mean']:.3f} min {r['min']:.3f} retx {r['retx']:8d} "
              f"data_pkts {r['data_pkts']} ok {r['ok']}", flush=True)


if __name__ == "__main__":
    main()
