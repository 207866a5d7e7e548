"""Helpers of the routing tests: long flows on a fabric, and their sustained goodput."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import rdmasim
from rdmasim.topology import dragonfly

#: flows are never meant to finish inside the measurement
LONG_FLOW = 256 << 20
#: flows per host in the dragonfly runs
QPS = 4
#: flow size of the permutation runs
SIZE = 64 << 10


def sustained_goodput_gbps(sim, src: Sequence[str], dst: Sequence[str], *, until_us: int = 800,
                           recovery: str = "irn", irn_window: int = 64) -> np.ndarray:
    """Goodput of each flow src[i] -> dst[i] (Gb/s) between until_us / 2 and until_us: payload bytes
    its receiver took in order in that window (the first half is the warm-up)."""
    kw = {"irn_window": irn_window} if recovery == "irn" else {}
    table = {"src": list(src), "dst": list(dst), "size": [LONG_FLOW] * len(src)}
    sim.add_flows(table, recovery=recovery, **kw)
    until_ps = until_us * 1_000_000
    s = sim.run_flows(until=until_ps + 1, sample_every=until_ps // 2)  # samples at 0, until/2, until
    assert list(np.unique(s.t_ps)) == [0, until_ps // 2, until_ps], np.unique(s.t_ps)
    a, b = (s.bytes_acked[s.t_ps == t].astype(np.float64) for t in (until_ps // 2, until_ps))
    assert len(a) == len(src)
    return (b - a) * 8 / ((until_ps - until_ps // 2) * 1e-12) / 1e9


def expected_max_load(balls: int, bins: int) -> float:
    """Exact expectation of the fullest bin's count when ``balls`` balls fall uniformly and
    independently into ``bins`` bins (what ECMP hashing does with flows over equal-cost links).

    P(max <= k) = balls! / bins^balls x [x^balls] (sum_{j<=k} x^j / j!)^bins (a multinomial count),
    and E[max] = sum_{k>=0} (1 - P(max <= k)). For large n = balls = bins it grows as
    ln n / ln ln n."""
    from fractions import Fraction
    from math import factorial

    def p_max_at_most(k: int) -> Fraction:
        term = [Fraction(1, factorial(j)) for j in range(min(k, balls) + 1)]
        poly = [Fraction(1)]
        for _ in range(bins):
            out = [Fraction(0)] * min(len(poly) + len(term) - 1, balls + 1)
            for i, a in enumerate(poly):
                for j, b in enumerate(term):
                    if i + j <= balls:
                        out[i + j] += a * b
            poly = out
        coeff = poly[balls] if balls < len(poly) else Fraction(0)
        return coeff * factorial(balls) / Fraction(bins) ** balls

    return float(sum(1 - p_max_at_most(k) for k in range(balls)))


def adversarial(df, qps: int = QPS) -> tuple[list[str], list[str]]:
    """Every host of group i sends to the host at the same place in group i + 1 (``qps`` flows each)."""
    src, dst = [], []
    for g in range(df.groups):
        nxt = df.group_hosts((g + 1) % df.groups)
        for k, x in enumerate(df.group_hosts(g)):
            src += [x.name] * qps
            dst += [nxt[k].name] * qps
    return src, dst


def uniform_random(df, qps: int = QPS, seed: int = 3) -> tuple[list[str], list[str]]:
    """Each of a host's ``qps`` flows goes to a destination drawn uniformly from the other hosts."""
    names = [x.name for x in df.all_hosts]
    rng = np.random.default_rng(seed)
    src = [s for s in names for _ in range(qps)]
    dst = [names[(names.index(s) + 1 + int(rng.integers(len(names) - 1))) % len(names)] for s in src]
    return src, dst


def dragonfly_gbps(routing: str, pattern, qps: int = QPS, path_select: str = "ecmp") -> float:
    """Mean sustained goodput per host (Gb/s) of a traffic pattern (``adversarial`` or
    ``uniform_random``) on the lossy dragonfly(4, 2, 2), IRN, ``qps`` flows per host."""
    df = dragonfly(routing=routing, switch_config={"lossless": (), "path_select": path_select})
    src, dst = pattern(df, qps)
    return float(sustained_goodput_gbps(df.sim, src, dst).reshape(-1, qps).sum(axis=1).mean())


def _uplink_loads(switch, uplinks) -> np.ndarray:
    b = np.array([switch.port_stats(switch.port_to(u))["tx_bytes"] for u in uplinks], dtype=np.float64)
    return b / b.mean()


def _run(sim, src: list[str], dst: list[str], recovery: str) -> np.ndarray:
    kw = {"irn_window": 64} if recovery == "irn" else {}
    flows = sim.add_flows({"src": src, "dst": dst, "size": [SIZE] * len(src)}, recovery=recovery, **kw)
    sim.run_flows()
    res = flows.results()
    assert (res["status"] == 0).all() and (res["bytes_delivered"] == SIZE).all()
    return res


def leaf_spine_permutation(mode: str, seed: int, n: int = 8) -> tuple[list[float], int]:
    """n leaves, n spines, n hosts per leaf (no oversubscription); host k of leaf l sends to host k
    of leaf l + 1, so each leaf puts n flows on its n uplinks. Per-leaf busiest-uplink load and the
    longest flow completion time."""
    topo = rdmasim.leaf_spine(n, n, n, seed=seed, switch_config={"path_select": mode, "ecmp_seed": seed})
    src = [h.name for row in topo.hosts_by_leaf for h in row]
    dst = [h.name for row in topo.hosts_by_leaf[1:] + topo.hosts_by_leaf[:1] for h in row]
    res = _run(topo.sim, src, dst, "gbn" if mode == "ecmp" else "irn")
    return [float(_uplink_loads(leaf, topo.spines).max()) for leaf in topo.leaves], int(res["fct_ps"].max())


def fat_tree_permutation(mode: str, seed: int, k: int = 8) -> list[float]:
    """k-ary fat tree; host (pod p, edge e, i) sends to (p + 1, e, i): each edge switch puts k/2
    flows on its k/2 uplinks. Per-edge busiest-uplink load."""
    topo = rdmasim.fat_tree(k, seed=seed, switch_config={"path_select": mode, "ecmp_seed": seed})
    half = k // 2
    per_pod = half * half
    src = [h.name for h in topo.hosts]
    dst = [topo.hosts[(i + per_pod) % len(topo.hosts)].name for i in range(len(topo.hosts))]
    _run(topo.sim, src, dst, "gbn" if mode == "ecmp" else "irn")
    loads = []
    for p in range(k):
        aggs = topo.aggs[p * half:(p + 1) * half]
        loads += [float(_uplink_loads(e, aggs).max()) for e in topo.edges[p * half:(p + 1) * half]]
    return loads


def spray_recovery(mode: str, recovery: str, n: int = 4) -> dict[str, float]:
    """A 1 MiB permutation on an n x n x n leaf-spine (PFC on): mean and lowest per-flow goodput
    (Gb/s) and retransmitted packets per data packet."""
    size = 1 << 20
    topo = rdmasim.leaf_spine(n, n, n, seed=1, switch_config={"path_select": mode})
    src = [h.name for row in topo.hosts_by_leaf for h in row]
    dst = [h.name for row in topo.hosts_by_leaf[1:] + topo.hosts_by_leaf[:1] for h in row]
    kw = {"irn_window": 64} if recovery == "irn" else {}
    flows = topo.sim.add_flows({"src": src, "dst": dst, "size": [size] * len(src)}, recovery=recovery, **kw)
    topo.sim.run_flows()
    res = flows.results()
    assert (res["status"] == 0).all()
    gbps = size * 8 / (res["fct_ps"] * 1e-12) / 1e9
    return {"goodput": float(gbps.mean()), "min": float(gbps.min()),
            "retx": float(res["retx_pkts"].sum() / (len(src) * size / 4096))}
