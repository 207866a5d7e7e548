"""Leaf-spine permutation under ECMP, spraying and adaptive routing, with in-order and out-of-order
receivers (docs/multipath.md).

    python bench/multipath.py [--hosts-per-leaf 4] [--size 8MiB] [--seed 1] [--ar-band 16KiB]

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
        mtu: int = 4096, verb: str = "WRITE", ar_band: int = 0) -> dict[str, Any]:
    """One run; ``recovery`` gbn / irn / ooo; every host on ``profile`` (default: rxe, and cx7-ar
    for ooo); ``verb`` WRITE, SEND or READ (a READ flow's data runs from its destination to its
    source); ``ar_band``: the switches' adaptive quality band in bytes (0: bytes exactly). Returns
    the mean and lowest per-flow rate (fraction of the line rate), the
    retransmitted packets and the data packets sent."""
    topo = rdmasim.leaf_spine(leaves, spines, hosts_per_leaf, seed=seed, mtu=mtu,
                              switch_config={"path_select": mode, "ar_band": ar_band})
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
    table = permutation(hosts, size, seed, verb=verb)
    kw: dict[str, Any] = {"irn_window": irn_window} if recovery in ("irn", "ooo") else {}
    flows = topo.sim.add_flows(table, recovery=recovery, mtu=mtu, **kw)
    topo.sim.run_flows()
    res = flows.results()
    rate = size * 8 / (res["fct_ps"] * 1e-12) / LINE_BPS
    retx = int(res["retx_pkts"].sum())
    return {"ok": bool((res["status"] == 0).all()), "mean": float(rate.mean()), "min": float(rate.min()),
            "retx": retx, "data_pkts": hosts * -(-size // mtu) + retx}


def _maxmin(paths: list[list[Any]]) -> list[float]:
    """Max-min fair rates (fractions of a link) of flows over unit-capacity links, each flow the
    list of links it crosses (progressive filling)."""
    rate = [0.0] * len(paths)
    left = {lk: 1.0 for p in paths for lk in p}
    live = set(range(len(paths)))
    while live:
        users: dict[Any, list[int]] = {}
        for i in live:
            for lk in paths[i]:
                users.setdefault(lk, []).append(i)
        lk = min(users, key=lambda k: left[k] / len(users[k]))
        share = left[lk] / len(users[lk])
        for i in users[lk]:
            rate[i] = share
            live.discard(i)
            for other in paths[i]:
                left[other] -= share
    return rate


def ecmp_maxmin(*, leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4, size: int = 8 << 20,
                seed: int = 1, mtu: int = 4096, samples: int = 2000) -> dict[str, float]:
    """The max-min model of the ECMP permutation: every flow at its max-min fair share of the
    links it crosses (host links, leaf uplink, spine downlink) times the rate one flow alone
    reaches (``single``, measured: headers and start-up).  ``hashed``: over the spines ECMP
    picks in the run of ``run("ecmp", "gbn", ...)`` (the switch's hash of each QP's UDP source
    port); ``random``: the mean over ``samples`` uniformly random spine choices."""
    import random

    topo = rdmasim.leaf_spine(leaves, spines, hosts_per_leaf, seed=seed, mtu=mtu)
    n = len(topo.sim.hosts)
    # the permutation of ``run`` (the seed alone draws it) with one packet per flow: the same QPs,
    # so the same hashes, fast
    flows = topo.sim.add_flows(permutation(n, mtu, seed), recovery="gbn", mtu=mtu)
    topo.sim.run(until=topo.sim.now + 100_000)  # QP numbers are given as flows start, cleared at the end
    raw = topo.sim._flows_core().results(flows.first, len(flows))
    hosts = [h for row in topo.hosts_by_leaf for h in row]
    leaf_of = {h.name: k for k, row in enumerate(topo.hosts_by_leaf) for h in row}

    def sport(qpn: int) -> int:  # csrc/link/port.c rs_port_resolve_path
        return 0xC000 + (((qpn * 2654435761) & 0xFFFFFFFF) >> 16 & 0x3FFF)

    def paths(spine_of: list[int]) -> list[list[Any]]:
        out = []
        for i, (s, d) in enumerate(zip(flows.src, flows.dst, strict=True)):
            ls, ld = leaf_of[hosts[s].name], leaf_of[hosts[d].name]
            p: list[Any] = [("up", s), ("down", d)]
            if ls != ld:
                p += [("leaf-spine", ls, spine_of[i]), ("spine-leaf", spine_of[i], ld)]
            out.append(p)
        return out

    hashed = []
    for i, (s, d) in enumerate(zip(flows.src, flows.dst, strict=True)):
        leaf = topo.leaves[leaf_of[hosts[s].name]]
        port = leaf.ecmp_port(hosts[s], hosts[d], sport(int(raw["req_qpn"][i])))
        link = leaf.ports[port]
        peer = link.b if link.a is leaf else link.a
        hashed.append(topo.spines.index(peer) if peer in topo.spines else -1)
    one = rdmasim.leaf_spine(leaves, spines, hosts_per_leaf, seed=seed, mtu=mtu)
    alone = one.sim.add_flows({"src": [0], "dst": [n - 1], "size": [size]}, recovery="gbn", mtu=mtu)
    one.sim.run_flows()
    single = float(size * 8 / (alone.results()["fct_ps"][0] * 1e-12) / LINE_BPS)
    rng = random.Random(seed)
    rand = [sum(_maxmin(paths([rng.randrange(spines) for _ in range(n)]))) / n for _ in range(samples)]
    return {"single": single, "hashed": single * sum(_maxmin(paths(hashed))) / n,
            "random": single * sum(rand) / samples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts-per-leaf", type=int, default=4)
    ap.add_argument("--leaves", type=int, default=4)
    ap.add_argument("--spines", type=int, default=4)
    ap.add_argument("--size", default="8MiB")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mtu", type=int, default=4096)
    ap.add_argument("--irn-window", type=int, default=64)
    ap.add_argument("--ar-band", default="0", help="adaptive modes: compare egress queues in bands of "
                    "this size (switch_config ar_band)")
    ap.add_argument("--cases", default="ecmp:gbn,adaptive:gbn,adaptive:irn,adaptive:ooo,spray:ooo,ecmp:ooo",
                    help="comma-separated path_select:recovery[:profile]")
    ap.add_argument("--maxmin", action="store_true", help="print the max-min model of ECMP too")
    a = ap.parse_args()
    if a.maxmin:
        m = ecmp_maxmin(leaves=a.leaves, spines=a.spines, hosts_per_leaf=a.hosts_per_leaf,
                        size=parse_size(a.size), seed=a.seed, mtu=a.mtu)
        print(f"max-min model: one flow alone {m['single']:.3f}; ECMP's hashed spines "
              f"{m['hashed']:.3f}; random spines (mean) {m['random']:.3f}", flush=True)
    for case in a.cases.split(","):
        mode, rec, *rest = case.split(":")
        r = run(mode, rec, leaves=a.leaves, spines=a.spines, hosts_per_leaf=a.hosts_per_leaf,
                size=parse_size(a.size), seed=a.seed, mtu=a.mtu, irn_window=a.irn_window,
                profile=rest[0] if rest and rest[0] else None, verb=rest[1] if len(rest) > 1 else "WRITE",
                ar_band=parse_size(a.ar_band))
        print(f"{mode:9s} {rec:4s} mean {r['mean']:.3f} min {r['min']:.3f} retx {r['retx']:8d} "
              f"data_pkts {r['data_pkts']} ok {r['ok']}", flush=True)


if __name__ == "__main__":
    main()
