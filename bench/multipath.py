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
from rdmasim.analytic_maxmin import maxmin_rates, window_fcts
from rdmasim.traffic.generators import permutation
from rdmasim.units import parse_size

LINE_BPS = 100e9


#: switch_config of ``fabric="nopfc"``: no PFC, and buffers and queue caps so large that nothing
#: is dropped (each run checks it)
NOPFC = {"lossless": (), "buffer": "4GB", "lossy_limit": "2GB"}


def run(mode: str, recovery: str, *, leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4,
        size: int = 8 << 20, seed: int = 1, profile: str | None = None, irn_window: int = 64,
        mtu: int = 4096, verb: str = "WRITE", ar_band: int = 0, fabric: str = "pfc") -> dict[str, Any]:
    """One run; ``recovery`` gbn / irn / ooo; every host on ``profile`` (default: rxe, and cx7-ar
    for ooo); ``verb`` WRITE, SEND or READ (a READ flow's data runs from its destination to its
    source); ``ar_band``: the switches' adaptive quality band in bytes (0: bytes exactly);
    ``fabric``: ``"pfc"`` (the switches' defaults: PFC on priority 3) or ``"nopfc"`` (:data:`NOPFC`).
    Returns the mean and lowest per-flow rate (fraction of the line rate), each flow's rate
    (``rates``), the retransmitted packets, the data packets sent, the bytes each leaf sent up to
    each spine (``uplink_bytes``, keyed (leaf, spine)) and the frames the switches dropped."""
    if fabric not in ("pfc", "nopfc"):
        raise ValueError(f"fabric must be 'pfc' or 'nopfc', got {fabric!r}")
    swc: dict[str, Any] = {"path_select": mode, "ar_band": ar_band, **(NOPFC if fabric == "nopfc" else {})}
    topo = rdmasim.leaf_spine(leaves, spines, hosts_per_leaf, seed=seed, mtu=mtu, switch_config=swc)
    hosts = len(topo.sim.hosts)
    if recovery == "uet":
        flows = topo.sim.add_flows(permutation(hosts, size, seed), mtu=mtu, transport="uet",
                                   uet={"lb": profile or "oblivious"})
        topo.sim.run_flows()
        res = flows.results()
        rate = size * 8 / (res["fct_ps"] * 1e-12) / LINE_BPS
        retx = int(res["retx_pkts"].sum())
        return {"ok": bool((res["status"] == 0).all()), "mean": float(rate.mean()), "min": float(rate.min()),
                "retx": retx, "data_pkts": hosts * -(-size // mtu) + retx, "rates": [float(x) for x in rate],
                **_fabric_counts(topo)}
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
            "retx": retx, "data_pkts": hosts * -(-size // mtu) + retx, "rates": [float(x) for x in rate],
            **_fabric_counts(topo)}


def _fabric_counts(topo: Any) -> dict[str, Any]:
    """Bytes and packets each leaf sent to each spine and each spine to each leaf, the frames any
    switch dropped and the PFC pause frames (XOFF) the switches sent."""
    out: dict[str, Any] = {f"{k}_{u}": {} for k in ("uplink", "downlink") for u in ("bytes", "pkts")}
    for kind, mine, theirs in (("uplink", topo.leaves, topo.spines), ("downlink", topo.spines, topo.leaves)):
        for k, sw in enumerate(mine):
            for port, link in enumerate(sw.ports):
                peer = link.b if link.a is sw else link.a
                if peer in theirs:
                    st = sw.port_stats(port)
                    out[f"{kind}_bytes"][(k, theirs.index(peer))] = int(st["tx_bytes"])
                    out[f"{kind}_pkts"][(k, theirs.index(peer))] = int(st["tx_pkts"])
    stats = [sw.port_stats(p) for sw in (*topo.leaves, *topo.spines) for p in range(len(sw.ports))]
    out["drops"] = int(sum(sum(st["drops"].values()) for st in stats))
    out["pfc_xoff"] = int(sum(st["pfc_xoff_sent"] for st in stats))
    return out


def _maxmin(paths: list[list[Any]]) -> list[float]:
    """Max-min fair rates (fractions of a link) of flows over unit-capacity links, each flow the
    list of links it crosses (progressive filling; :func:`rdmasim.analytic_maxmin.maxmin_rates`)."""
    return maxmin_rates(paths)


def ecmp_paths(*, leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4, seed: int = 1,
               mtu: int = 4096) -> tuple[list[list[Any]], list[list[Any]]]:
    """The links each flow of the ECMP permutation of ``run(..., seed=seed)`` crosses, host to
    host: its data's and its acknowledgements'.  Each spine is the one the simulator's own ECMP
    port choice (``Switch.ecmp_port``) gives for the QP's UDP source port (the requester's QP for
    the data, the responder's for the acknowledgements); :func:`run` reports what each leaf sent
    to each spine and each spine to each leaf, and :func:`check_paths` compares."""
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

    def path(a: int, b: int, qpn: int) -> list[Any]:
        la, lb = leaf_of[hosts[a].name], leaf_of[hosts[b].name]
        if la == lb:
            return [("host-leaf", a), ("leaf-host", b)]
        leaf = topo.leaves[la]
        link = leaf.ports[leaf.ecmp_port(hosts[a], hosts[b], sport(qpn))]
        sp = topo.spines.index(link.b if link.a is leaf else link.a)
        return [("host-leaf", a), ("leaf-spine", la, sp), ("spine-leaf", sp, lb), ("leaf-host", b)]

    pairs = list(zip(flows.src, flows.dst, strict=True))
    data = [path(int(s), int(d), int(raw["req_qpn"][i])) for i, (s, d) in enumerate(pairs)]
    acks = [path(int(d), int(s), int(raw["resp_qpn"][i])) for i, (s, d) in enumerate(pairs)]
    return data, acks


#: RoCE v2 bytes on the wire beyond a WRITE packet's payload (Ethernet, IPv4, UDP, BTH, ICRC, FCS,
#: preamble and gap; the RETH of a first packet left out) and of an ACK (with its AETH)
DATA_OVERHEAD, ACK_WIRE = 82 - 16, 86


def ecmp_maxmin(*, leaves: int = 4, spines: int = 4, hosts_per_leaf: int = 4, size: int = 8 << 20,
                seed: int = 1, mtu: int = 4096, samples: int = 2000, profile: str = "rxe",
                delay_us: float = 1.0) -> dict[str, Any]:
    """The models of the ECMP permutation, over the paths :func:`ecmp_paths` gives (the spines the
    simulator's hash picks), each figure times the rate one flow alone reaches (``single``,
    measured: headers and start-up):

    * ``hashed``: every flow at its max-min fair share of the links its data crosses;
    * ``window``: every flow keeps the NIC profile's window in flight (``max_unacked_psns`` + 1
      packets, Go-Back-N without congestion control), its data and its acknowledgements wait in
      the FIFO queues on their paths (:func:`rdmasim.analytic_maxmin.window_fcts`), recomputed as
      flows finish; a flow's rate is its size over its completion time, as :func:`run` measures;
    * ``random``: the mean of ``hashed`` over ``samples`` uniformly random spine choices.

    ``per_flow`` holds each flow's rate under ``hashed`` and ``window``; ``uplink_flows`` and
    ``downlink_flows`` the data flows the model puts on each (leaf, spine) uplink and (spine, leaf)
    downlink, ``uplink_acks`` and ``downlink_acks`` the flows whose acknowledgements it puts
    there."""
    import random

    from rdmasim.transport.nic import get_profile

    data, acks = ecmp_paths(leaves=leaves, spines=spines, hosts_per_leaf=hosts_per_leaf, seed=seed, mtu=mtu)
    n = len(data)
    one = rdmasim.leaf_spine(leaves, spines, hosts_per_leaf, seed=seed, mtu=mtu)
    alone = one.sim.add_flows({"src": [0], "dst": [n - 1], "size": [size]}, recovery="gbn", mtu=mtu)
    one.sim.run_flows()
    single = float(size * 8 / (alone.results()["fct_ps"][0] * 1e-12) / LINE_BPS)
    static = maxmin_rates(data)
    # time in microseconds at the payload rate one flow alone reaches
    us = 8e6 / (single * LINE_BPS)
    window = (get_profile(profile).max_unacked_psns + 1) * mtu * us
    hop_data = delay_us + (mtu + DATA_OVERHEAD) * 8e6 / LINE_BPS
    hop_ack = delay_us + ACK_WIRE * 8e6 / LINE_BPS
    rtt = [len(d) * hop_data + len(a) * hop_ack for d, a in zip(data, acks, strict=True)]
    hosts_out = {lk for p in data for lk in p if lk[0] == "host-leaf"}
    fct = window_fcts(data, acks, [size * us] * n, window, rtt, no_queue=hosts_out)
    win = [size * us / t for t in fct]

    def count(paths: list[list[Any]], kind: str) -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = {}
        for p in paths:
            for lk in p:
                if lk[0] == kind:
                    out[lk[1:]] = out.get(lk[1:], 0) + 1
        return out

    rng = random.Random(seed)

    def rand_paths() -> list[list[Any]]:
        out = []
        for p in data:
            if len(p) == 2:
                out.append(p)
                continue
            sp = rng.randrange(spines)
            out.append([p[0], ("leaf-spine", p[1][1], sp), ("spine-leaf", sp, p[2][2]), p[3]])
        return out

    rand = [sum(maxmin_rates(rand_paths())) / n for _ in range(samples)]
    return {"single": single, "hashed": single * sum(static) / n, "window": single * sum(win) / n,
            "random": single * sum(rand) / samples,
            "per_flow": {"hashed": [single * x for x in static], "window": [single * x for x in win]},
            "uplink_flows": count(data, "leaf-spine"), "downlink_flows": count(data, "spine-leaf"),
            "uplink_acks": count(acks, "leaf-spine"), "downlink_acks": count(acks, "spine-leaf")}


def check_paths(model: dict[str, Any], measured: dict[str, Any], size: int, mtu: int = 4096) -> bool:
    """True when every leaf uplink and spine downlink carried in the run as many flows' data as
    the model puts on it (bytes sent / flow size, rounded: headers and ACKs add a few percent), and
    acknowledgements exactly where the model puts some (packets sent beyond the data packets)."""
    per_flow = -(-size // mtu)
    for kind in ("uplink", "downlink"):
        got = {k: round(v / size) for k, v in measured[f"{kind}_bytes"].items()}
        if got != {k: model[f"{kind}_flows"].get(k, 0) for k in got}:
            return False
        extra = {k: v - got[k] * per_flow for k, v in measured[f"{kind}_pkts"].items()}
        if {k for k, v in extra.items() if v > 0} != {k for k, v in model[f"{kind}_acks"].items() if v}:
            return False
    return True


def model_table(seeds: Any, **kw: Any) -> None:
    """Print, per permutation seed, ECMP's mean rate (Go-Back-N, ``rxe``) with PFC and without
    (buffers too large to drop) against the max-min model and the window model of
    :func:`ecmp_maxmin`, the PFC pause frames sent, and whether the run's links carried the data
    and acknowledgements where the models put them; then ECMP with ``cx6`` NICs, whose window
    no flow fills, against the max-min model."""
    def dev(x: float, ref: float) -> str:
        return f"{x:.3f} ({(x / ref - 1) * 100:+.1f} %)"

    print("| seed | max-min model | window model | ECMP, PFC (against max-min / window) | "
          "ECMP, no PFC | PFC pauses sent | paths as modelled | ECMP, `cx6` (window of 2^22 PSNs) | "
          "its PFC pauses |")
    print("|---|---|---|---|---|---|---|---|---|")
    for seed in seeds:
        m = ecmp_maxmin(seed=seed, **kw)
        pfc = run("ecmp", "gbn", seed=seed, **kw)
        nopfc = run("ecmp", "gbn", seed=seed, fabric="nopfc", **kw)
        for r in (pfc, nopfc):
            if not r["ok"] or r["retx"] or r["drops"]:
                raise RuntimeError(f"seed {seed}: a flow failed, resent or was dropped: {r}")
        same = check_paths(m, pfc, kw["size"], kw.get("mtu", 4096))
        same &= check_paths(m, nopfc, kw["size"], kw.get("mtu", 4096))
        big = run("ecmp", "gbn", seed=seed, profile="cx6", **kw)
        vs = " / ".join(f"{(pfc['mean'] / m[k] - 1) * 100:+.1f} %" for k in ("hashed", "window"))
        print(f"| {seed} | {m['hashed']:.3f} | {m['window']:.3f} | {pfc['mean']:.3f} ({vs}) | "
              f"{dev(nopfc['mean'], m['window'])} | {pfc['pfc_xoff']} | {'yes' if same else 'NO'} | "
              f"{dev(big['mean'], m['hashed'])} | {big['pfc_xoff']} |", flush=True)


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
    ap.add_argument("--fabric", default="pfc", choices=("pfc", "nopfc"),
                    help="pfc: the switches' defaults; nopfc: no PFC, buffers too large to drop")
    ap.add_argument("--model-table", metavar="SEEDS",
                    help="e.g. 1-8: per seed, ECMP (Go-Back-N) with and without PFC against the "
                    "max-min models (docs/multipath.md); ignores --cases")
    a = ap.parse_args()
    if a.model_table:
        lo, _, hi = a.model_table.partition("-")
        model_table(range(int(lo), int(hi or lo) + 1), leaves=a.leaves, spines=a.spines,
                    hosts_per_leaf=a.hosts_per_leaf, size=parse_size(a.size), mtu=a.mtu)
        return
    if a.maxmin:
        m = ecmp_maxmin(leaves=a.leaves, spines=a.spines, hosts_per_leaf=a.hosts_per_leaf,
                        size=parse_size(a.size), seed=a.seed, mtu=a.mtu)
        print(f"max-min model: one flow alone {m['single']:.3f}; ECMP's hashed spines "
              f"{m['hashed']:.3f}; window model {m['window']:.3f}; random spines (mean) "
              f"{m['random']:.3f}", flush=True)
    for case in a.cases.split(","):
        mode, rec, *rest = case.split(":")
        r = run(mode, rec, leaves=a.leaves, spines=a.spines, hosts_per_leaf=a.hosts_per_leaf,
                size=parse_size(a.size), seed=a.seed, mtu=a.mtu, irn_window=a.irn_window,
                profile=rest[0] if rest and rest[0] else None, verb=rest[1] if len(rest) > 1 else "WRITE",
                ar_band=parse_size(a.ar_band), fabric=a.fabric)
        print(f"{mode:9s} {rec:4s} mean {r['mean']:.3f} min {r['min']:.3f} retx {r['retx']:8d} "
              f"data_pkts {r['data_pkts']} ok {r['ok']}", flush=True)


if __name__ == "__main__":
    main()
