"""The ideal flow completion time a flow's slowdown is measured against, for many flows at once.

Two definitions (:data:`DEFINITIONS`; a scenario picks one with ``outputs.ideal_fct``):

``wire`` (the default): the FCT of the flow alone on an idle fabric, as the HPCC authors'
simulator counts it: every data frame's bytes on the wire (headers, ICRC, FCS, preamble and
inter-frame gap, or InfiniBand's LRH / VCRC / delimiters: the codec's frame lengths) at the slower
end's NIC line rate; the largest data frame once more at every further hop (store and forward);
the frame that closes the flow (the ACK; for a READ, its request) at every hop; and a round trip
of propagation delay and switch latency over the lowest-delay path. A flow alone on the fabric
(window open, no loss) finishes in exactly this time: slowdown 1.00.

``payload``: the message's bytes alone at the slower NIC's line rate plus the round trip of
propagation delay (no headers, no store and forward): a looser lower bound; an unloaded flow at
MTU 1024 shows about 1.08.

Hosts hang off one link each and do not forward, so a path is: host link + the lowest-delay
switch-to-switch path + host link, with one Dijkstra per distinct first-hop switch (a k=16 fat
tree needs 128, not 1024).
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from rdmasim.results import IDEAL_FCT
from rdmasim.sim import Host, Simulator

#: the ideal-FCT definitions -> the phrase that states each (tables, plots and summaries show it)
DEFINITIONS = IDEAL_FCT
#: the default definition (``outputs.ideal_fct``)
DEFAULT_DEFINITION = "wire"

#: BTH opcodes of a message's data packets per verb: (only, first, middle, last), and the frame
#: that closes the flow (WRITE / SEND: the ACK of the last packet; READ: the request before the data)
_OPCODES = {"WRITE": ((0x0A, 0x06, 0x07, 0x08), 0x11), "SEND": ((0x04, 0x00, 0x01, 0x02), 0x11),
            "READ": ((0x10, 0x0D, 0x0E, 0x0F), 0x0C)}
#: wire bytes beyond the codec's frame (csrc rs_frame_wire_extra): RoCE FCS 4 + preamble, SFD and
#: inter-frame gap 20; InfiniBand: the two delimiter symbols
_WIRE_EXTRA = {0: 4 + 20, 1: 2}


def _check_definition(definition: str) -> None:
    if definition not in DEFINITIONS:
        raise ValueError(f"ideal FCT definition {definition!r}: allowed {', '.join(map(repr, DEFINITIONS))}")


def _paths(sim: Simulator, start: Any) -> dict[int, tuple[int, float, int]]:
    """Lowest propagation delay (ps) from switch ``start`` to every switch, through switches only,
    with the sum of 1 / rate over that path's links and of the latencies of the switches it enters."""
    adj: dict[int, list[tuple[Any, int, float]]] = {}
    for link in sim.links:
        if isinstance(link.a, Host) or isinstance(link.b, Host):
            continue
        inv = 1.0 / link.rate_bps
        adj.setdefault(id(link.a), []).append((link.b, link.delay_ps, inv))
        adj.setdefault(id(link.b), []).append((link.a, link.delay_ps, inv))
    # ordered by (delay, latency, 1 / rate): among paths of equal delay the fastest, so the ideal
    # stays a lower bound whichever of them a flow takes
    best: dict[int, tuple[int, int, float]] = {id(start): (0, 0, 0.0)}
    heap: list[tuple[int, int, float, int, Any]] = [(0, 0, 0.0, 0, start)]
    n = 1
    while heap:
        d, lat, inv_sum, _, node = heapq.heappop(heap)
        if (d, lat, inv_sum) > best[id(node)]:
            continue
        for nxt, w, inv in adj.get(id(node), []):
            cand = (d + w, lat + int(nxt.config.get("latency_ps", 0)), inv_sum + inv)
            if cand < best.get(id(nxt), (1 << 62, 0, 0.0)):
                best[id(nxt)] = cand
                n += 1
                heapq.heappush(heap, (*cand, n, nxt))
    return {k: (d, inv_sum, lat) for k, (d, lat, inv_sum) in best.items()}


def _frame_bytes(verb: str, link_layer: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(header bytes per data opcode, smallest frame per data opcode, closing frame) on the wire."""
    from rdmasim import codec

    data, close = _OPCODES[verb]
    extra = _WIRE_EXTRA[link_layer]
    hdr = np.array([codec.frame_len({"opcode": op, "payload_len": 64, "link_layer": link_layer}) - 64
                    for op in data], dtype=np.int64)
    smallest = np.array([codec.frame_len({"opcode": op, "payload_len": 0, "link_layer": link_layer})
                         for op in data], dtype=np.int64)
    return hdr + extra, smallest + extra, codec.frame_len({"opcode": close, "link_layer": link_layer}) + extra


def wire_bytes(verb: str, size: np.ndarray, mtu: int, link_layer: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Wire bytes of all data frames of messages of ``size`` bytes at path MTU ``mtu``, and of the
    largest of them (``link_layer`` 0 RoCEv2, 1 InfiniBand)."""
    hdr, smallest, _ = _frame_bytes(verb, link_layer)
    size = np.asarray(size, dtype=np.int64)

    def frame(k: int, payload: np.ndarray) -> np.ndarray:
        return np.maximum(smallest[k], hdr[k] + (payload + 3) // 4 * 4)  # BTH pad to 4 bytes

    n = np.maximum(1, -(-size // mtu))
    full = np.full_like(size, mtu)
    last = size - (n - 1) * mtu
    one = frame(0, size)
    many = frame(1, full) + (n - 2).clip(0) * frame(2, full) + frame(3, last)
    total = np.where(n == 1, one, many)
    largest = np.where(n == 1, one, np.maximum(frame(1, full), frame(3, last)))
    return total, largest


def ideal_fct_ps(sim: Simulator, src: np.ndarray, dst: np.ndarray, size: np.ndarray, *,
                 verb: np.ndarray | None = None, mtu: int = 1024, link_layer: int = 0,
                 definition: str = DEFAULT_DEFINITION) -> np.ndarray:
    """Ideal FCT (ps) of flows ``src[i] -> dst[i]`` (simulator host indices) of ``size[i]`` bytes.

    ``definition``: ``"wire"`` or ``"payload"`` (:data:`DEFINITIONS`, module docs). ``"wire"`` also
    uses each flow's ``verb`` (names ``"WRITE"``, ``"READ"``, ``"SEND"``; None: every flow a WRITE;
    others, e.g. ``"LOCAL"``, count as WRITE), the path ``mtu`` and the ``link_layer`` (0 RoCEv2,
    1 InfiniBand)."""
    _check_definition(definition)
    hosts = sorted(sim.hosts.values(), key=lambda h: h.index)
    rate = np.array([h.link.rate_bps if h.link else 1 for h in hosts], dtype=np.float64)
    hop = np.array([h.link.delay_ps if h.link else 0 for h in hosts], dtype=np.int64)
    first = [None if h.link is None else (h.link.b if h.link.a is h else h.link.a) for h in hosts]
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    # switch-to-switch part, one Dijkstra per distinct first hop of a source
    sw_ids = {id(f): f for f in first if f is not None and not isinstance(f, Host)}
    col = {k: i for i, k in enumerate(sw_ids)}
    first_col = np.array([col.get(id(f), -1) for f in first], dtype=np.int64)
    delay = np.full((len(col), len(col)), 1 << 50, dtype=np.int64)
    inv_rate = np.zeros((len(col), len(col)), dtype=np.float64)
    latency = np.zeros((len(col), len(col)), dtype=np.int64)
    needed = {int(first_col[s]) for s in np.unique(src) if first_col[s] >= 0}
    keys = list(sw_ids)
    for c in needed:
        start = sw_ids[keys[c]]
        best = _paths(sim, start)
        own = int(start.config.get("latency_ps", 0))
        for k, j in col.items():
            if k in best:
                delay[c, j], inv_rate[c, j], latency[c, j] = best[k][0], best[k][1], best[k][2] + own
    fs, fd = first_col[src], first_col[dst]
    via = (fs >= 0) & (fd >= 0)
    mid = np.zeros(len(src), dtype=np.int64)
    mid[via] = delay[fs[via], fd[via]]
    one_way = np.where(via, hop[src] + mid + hop[dst], hop[src])  # else: hosts joined by one link
    line = np.minimum(rate[src], rate[dst])
    if definition == "payload":
        serial = np.ceil(np.asarray(size, dtype=np.float64) * 8e12 / line).astype(np.int64)
        return serial + 2 * one_way
    # wire: the frames at line rate, the largest again per further hop, the closing frame per hop
    inv = 1.0 / rate[src]  # s/bit on the first link; inv_path: summed over the path's links
    inv_path = inv.copy()
    inv_path[via] += inv_rate[fs[via], fd[via]] + 1.0 / rate[dst[via]]
    lat = np.zeros(len(src), dtype=np.int64)
    lat[via] = latency[fs[via], fd[via]]
    names = np.full(len(src), "WRITE", dtype=object) if verb is None else np.asarray(verb, dtype=object)
    size = np.asarray(size, dtype=np.int64)
    total = np.zeros(len(src), dtype=np.float64)
    largest = np.zeros(len(src), dtype=np.float64)
    close = np.zeros(len(src), dtype=np.float64)
    for v in ("WRITE", "SEND", "READ"):
        rows = names == v if v != "WRITE" else ~np.isin(names, ("SEND", "READ"))
        if rows.any():
            t, big = wire_bytes(v, size[rows], mtu, link_layer)
            total[rows], largest[rows] = t, big
            close[rows] = _frame_bytes(v, link_layer)[2]
    ps = (total * 8 / line + largest * 8 * (inv_path - inv) + close * 8 * inv_path) * 1e12
    return np.ceil(ps - 1e-6).astype(np.int64) + 2 * one_way + 2 * lat
