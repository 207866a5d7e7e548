"""The ideal flow completion time a flow's slowdown is measured against, for many flows at once.

Ideal FCT = the flow's bytes at the slower end's NIC line rate + one round trip of propagation
delay over the lowest-delay path (headers, store-and-forward and ACK processing excluded, so
every real FCT is above it). Hosts hang off one link each and do not forward, so the path delay
is: host link + switch-to-switch shortest delay + host link, with one Dijkstra per distinct
first-hop switch (a k=16 fat tree needs 128, not 1024).
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from rdmasim.sim import Host, Simulator


def _switch_delays(sim: Simulator, start: Any) -> dict[int, int]:
    """Lowest propagation delay (ps) from switch ``start`` to every switch, through switches only."""
    adj: dict[int, list[tuple[Any, int]]] = {}
    for link in sim.links:
        if isinstance(link.a, Host) or isinstance(link.b, Host):
            continue
        adj.setdefault(id(link.a), []).append((link.b, link.delay_ps))
        adj.setdefault(id(link.b), []).append((link.a, link.delay_ps))
    dist = {id(start): 0}
    heap: list[tuple[int, int, Any]] = [(0, 0, start)]
    n = 1
    while heap:
        d, _, node = heapq.heappop(heap)
        if d > dist[id(node)]:
            continue
        for nxt, w in adj.get(id(node), []):
            if d + w < dist.get(id(nxt), 1 << 62):
                dist[id(nxt)] = d + w
                n += 1
                heapq.heappush(heap, (d + w, n, nxt))
    return dist


def ideal_fct_ps(sim: Simulator, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Ideal FCT (ps) of flows ``src[i] -> dst[i]`` (simulator host indices) of ``size[i]`` bytes."""
    hosts = sorted(sim.hosts.values(), key=lambda h: h.index)
    rate = np.array([h.link.rate_bps if h.link else 1 for h in hosts], dtype=np.float64)
    hop = np.array([h.link.delay_ps if h.link else 0 for h in hosts], dtype=np.int64)
    first = [None if h.link is None else (h.link.b if h.link.a is h else h.link.a) for h in hosts]
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    # switch-to-switch part, one Dijkstra per distinct first hop of a source
    mid = np.zeros(len(src), dtype=np.int64)
    sw_ids = {id(f): f for f in first if f is not None and not isinstance(f, Host)}
    col = {k: i for i, k in enumerate(sw_ids)}
    first_col = np.array([col.get(id(f), -1) for f in first], dtype=np.int64)
    table = np.full((len(col), len(col)), 1 << 50, dtype=np.int64)
    needed = {int(first_col[s]) for s in np.unique(src) if first_col[s] >= 0}
    keys = list(sw_ids)
    for c in needed:
        d = _switch_delays(sim, sw_ids[keys[c]])
        for k, j in col.items():
            if k in d:
                table[c, j] = d[k]
    fs, fd = first_col[src], first_col[dst]
    via = (fs >= 0) & (fd >= 0)
    mid[via] = table[fs[via], fd[via]]
    one_way = np.where(via, hop[src] + mid + hop[dst], hop[src])  # else: hosts joined by one link
    line = np.minimum(rate[src], rate[dst])
    serial = np.ceil(np.asarray(size, dtype=np.float64) * 8e12 / line).astype(np.int64)
    return serial + 2 * one_way
