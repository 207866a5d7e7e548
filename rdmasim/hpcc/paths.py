"""Base RTT and bandwidth-delay product of every host pair, as the HPCC ns-3 simulator computes them
for its window and its HPCC ``T``: a breadth-first search from each host through switches (fewest
hops), RTT = 2 x the path's propagation delay + one packet's serialisation at every hop, the
bandwidth the path's slowest link, BDP = RTT x bandwidth."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rdmasim.hpcc.inputs import Topology


@dataclass(frozen=True)
class PathFigures:
    """The largest base RTT (ps) and BDP (bytes) over host pairs, and the pair count reached."""

    max_rtt_ps: int
    max_bdp_bytes: int
    pairs: int


def path_figures(topo: Topology, payload_bytes: int) -> PathFigures:
    """Largest base RTT and BDP over every ordered pair of hosts a path connects."""
    adj: dict[int, list[tuple[int, int, int]]] = {}
    for ln in topo.links:
        adj.setdefault(ln.a, []).append((ln.b, ln.delay_ps, ln.rate_bps))
        adj.setdefault(ln.b, []).append((ln.a, ln.delay_ps, ln.rate_bps))
    max_rtt = max_bdp = pairs = 0
    for h in topo.hosts:
        delay = {h: 0}
        tx = {h: 0}
        bw = {h: 1 << 62}
        q = deque([h])
        while q:
            now = q.popleft()
            for nxt, d, rate in adj.get(now, []):
                if nxt in delay:
                    continue
                delay[nxt] = delay[now] + d
                tx[nxt] = tx[now] + payload_bytes * 8 * 10**12 // rate
                bw[nxt] = min(bw[now], rate)
                if nxt in topo.switches:
                    q.append(nxt)
        for other in delay:
            if other == h or other in topo.switches:
                continue
            rtt = 2 * delay[other] + tx[other]
            pairs += 1
            max_rtt = max(max_rtt, rtt)
            max_bdp = max(max_bdp, rtt * bw[other] // (8 * 10**12))
    return PathFigures(max_rtt, max_bdp, pairs)
