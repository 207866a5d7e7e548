"""InfiniBand link-layer mechanisms on a fabric: credit-based flow control per virtual lane (VL),
SL -> VL tables, and linear forwarding tables (LFTs) from a subnet-manager-like route computation.

Credits (IBA vol. 1 7.9; csrc/link/credit.h): a port in credit mode sends a data packet on a VL
only when its peer has advertised room for all of the packet's 64-byte blocks; the peer returns
credits with 6-byte flow-control packets as its buffer drains. It never sends or obeys PFC frames
and never drops for lack of buffer. Stall time per VL is in ``Switch.port_stats`` /
:func:`credit_stats` (``credit_stall_ps``) beside PFC's ``paused_ps``.

LFTs (IBA 18.2.4): one egress port per destination LID, computed here on the control path
(:func:`lft_minhop`, :func:`lft_updn`) and looked up in C per packet. A host's LID is its index + 1.
See docs/mechanisms/credits.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rdmasim.fabric import NODE_HOST, NODE_SWITCH, ROCE_MAX_OVERHEAD, Switch, time_in
from rdmasim.units import parse_rate, parse_size

if TYPE_CHECKING:
    # what the fabric needs of them (rdmasim._protocols), not the classes of the layers above
    from rdmasim._protocols import LinkLike as Link
    from rdmasim._protocols import NetSim as Simulator
    from rdmasim._protocols import NodeLike as Host

#: bytes per credit (IBA 7.9: flow control counts 64-byte blocks)
BLOCK_BYTES = 64
#: an FC packet on the wire: Op 4 b, FCTBS 12 b, VL 4 b, FCCL 12 b, LPCRC 16 b (IBA 7.9.4)
FC_PACKET_BYTES = 6
#: most symbol times between two FC packets of a VL (IBA 7.9)
FC_PERIOD_SYMBOLS = 65536
#: lanes of the links the FC period is computed for (a 4x link: symbols go on 4 lanes at once)
LANES = 4
#: most data VLs (VL15, management, is not modelled)
MAX_VLS = 8
#: SLs a SL -> VL table maps
N_SL = 16
#: an LFT entry without a port
LFT_NONE = 0xFFFF
#: port-to-port latency (ps) of 100 Gb/s switches from vendor product briefs, for
#: ``switch_config(latency=...)``: an EDR InfiniBand switch (Mellanox Switch-IB 2, SB7800: 90 ns) and
#: a 100 GbE switch (Mellanox Spectrum, SN2700: 300 ns; the 40 GbE SwitchX before it: 230 ns)
SWITCH_LATENCY = {"infiniband": 90_000, "ethernet": 300_000}


def blocks(frame_bytes: int) -> int:
    """Credit blocks a packet of ``frame_bytes`` takes: ceil(frame_bytes / 64)."""
    return -(-frame_bytes // BLOCK_BYTES)


def fc_period_ps(rate: str | int) -> int:
    """65,536 symbol times of a 4x link of ``rate``: a symbol is 8 data bits on one lane, so
    65536 x 8 x 4 bits at the link rate (20.97 us at 100 Gb/s), rounded up."""
    rate_bps = parse_rate(rate)
    return -(-FC_PERIOD_SYMBOLS * 8 * LANES * 10**12 // rate_bps)


def credit_round_trip_ps(rate: str | int, delay_ps: int, frame_bytes: int) -> int:
    """The credit loop of one link: a packet of ``frame_bytes`` serialises and crosses the link,
    its blocks are freed on arrival (a host NIC) and the FC packet returning them serialises and
    crosses back: 2 x delay + ser(frame + Ethernet FCS and gap) + ser(FC packet)."""
    rate_bps = parse_rate(rate)

    def ser(n: int) -> int:
        return -(-n * 8 * 10**12 // rate_bps)
    return 2 * delay_ps + ser(frame_bytes + 24) + ser(FC_PACKET_BYTES)


def _vl_list(name: str, value: Any, vls: int) -> list[int]:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        items = [value] * vls
    else:
        items = list(value)
        if len(items) != vls:
            raise ValueError(f"{name}: {len(items)} values for {vls} VLs (give one per VL, or one for all)")
    out = []
    for i, v in enumerate(items):
        try:
            n = parse_size(v)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}[{i}]: {exc}") from None
        b = blocks(n)
        if not 1 <= b <= 0xFFFF:
            raise ValueError(f"{name}[{i}] = {v!r} is {b} blocks of 64 B: allowed 1..65535 blocks")
        out.append(b)
    return out + [0] * (MAX_VLS - vls)


def _sl2vl(sl2vl: Mapping[int, int] | Sequence[int] | None, vls: int) -> list[int]:
    table = [sl % vls for sl in range(N_SL)]
    if sl2vl is None:
        return table
    items = sl2vl.items() if isinstance(sl2vl, Mapping) else enumerate(sl2vl)
    for sl, vl in items:
        if isinstance(sl, bool) or not isinstance(sl, int) or not 0 <= sl < N_SL:
            raise ValueError(f"sl2vl key (SL) must be an int in 0..{N_SL - 1}, got {sl!r}")
        if isinstance(vl, bool) or not isinstance(vl, int) or not 0 <= vl < vls:
            raise ValueError(f"sl2vl[{sl}] (VL) must be an int in 0..{vls - 1} (vls={vls}), got {vl!r}")
        table[sl] = vl
    return table


def _vlarb(vlarb: Mapping[str, Any] | None, vls: int) -> tuple[list[int], list[int], int] | None:
    if vlarb is None:
        return None
    unknown = set(vlarb) - {"high", "low", "high_limit"}
    if unknown:
        raise ValueError(f"vlarb: unknown keys {sorted(unknown)} (allowed: high, low, high_limit)")
    tables = []
    for name in ("high", "low"):
        t = [0] * MAX_VLS
        for vl, w in dict(vlarb.get(name, {})).items():
            if isinstance(vl, bool) or not isinstance(vl, int) or not 0 <= vl < vls:
                raise ValueError(f"vlarb {name} key (VL) must be an int in 0..{vls - 1}, got {vl!r}")
            if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= 255:
                raise ValueError(f"vlarb {name}[{vl}] (weight, 64-byte units) must be an int in 1..255, "
                                 f"got {w!r}")
            t[vl] = w
        tables.append(t)
    for vl in range(vls):
        if not tables[0][vl] and not tables[1][vl]:
            raise ValueError(f"vlarb: VL {vl} is in neither table (it would never be sent)")
    limit = vlarb.get("high_limit", 255)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 <= limit <= 255:
        raise ValueError(f"vlarb high_limit must be an int in 0..255 (x 4096 bytes; 255 unlimited), "
                         f"got {limit!r}")
    return tables[0], tables[1], limit


def _ends(link: Link) -> list[tuple[int, int, int]]:
    """(kind, node index, port) of both ends of a link."""
    out = []
    for node in (link.a, link.b):
        if isinstance(node, Switch):
            out.append((NODE_SWITCH, node.index, node.ports.index(link)))
        else:
            out.append((NODE_HOST, node.index, 0))
    return out


def enable_credits(sim: Simulator, *, vls: int = 1, buffer: str | int | Iterable[str | int] = "64KB",
                   sl2vl: Mapping[int, int] | Sequence[int] | None = None, fc_period: str | int | None = None,
                   vlarb: Mapping[str, Any] | None = None, links: Iterable[Link] | None = None) -> None:
    """Put both ends of every link (or of ``links``) in InfiniBand credit mode, replacing PFC there.

    ``vls``: data VLs per port (1..8); ``buffer``: receive buffer per VL (one size, or one per VL),
    counted in 64-byte blocks (rounded up; at least one largest packet of the link's MTU); at a
    switch it is the ingress buffer of (port, VL). ``sl2vl``: VL of each SL 0..15 (a mapping or a
    16-entry sequence; default SL mod ``vls``) for what every port sends; a packet's SL is its
    class from the DSCP map (``switch_config(dscp_map=...)``, ``fabric.host_dscp_map``), 0..7.
    ``fc_period``: longest gap between FC packets of a VL (default :func:`fc_period_ps` of each
    link's rate). ``vlarb``: VL arbitration at switch ports, the IBA's tables:
    ``{"high": {vl: weight}, "low": {vl: weight}, "high_limit": n}`` (weights 1..255 in 64-byte
    units per turn; ``high_limit`` = LimitOfHighPriority, x 4096 bytes, 255 unlimited, 0 one
    packet); every VL must be in a table. None: the switch's own scheduler (``switch_config``
    ``scheduler`` strict or WRR) over the VLs with credits. Call before traffic starts (a port
    with packets queued or in flight is refused).
    """
    if isinstance(vls, bool) or not isinstance(vls, int) or not 1 <= vls <= MAX_VLS:
        raise ValueError(f"vls must be an int in 1..{MAX_VLS}, got {vls!r}")
    blk = _vl_list("buffer", buffer, vls)
    table = _sl2vl(sl2vl, vls)
    arb = _vlarb(vlarb, vls)
    period = None if fc_period is None else time_in("fc_period", fc_period)
    if period == 0:
        raise ValueError("fc_period must be > 0")
    fab = sim._fabric_core()
    for link in (sim.links if links is None else list(links)):
        largest = blocks(link.mtu + ROCE_MAX_OVERHEAD - 4)  # frame bytes without the FCS
        if min(blk[:vls]) < largest:
            raise ValueError(f"buffer: {min(blk[:vls])} blocks per VL cannot hold one {link.mtu}-byte-MTU "
                             f"packet of link {link.a.name}-{link.b.name} ({largest} blocks)")
        p = period if period is not None else fc_period_ps(link.rate_bps)
        for kind, node, port in _ends(link):
            fab.credit_config(kind, node, port, vls, blk, table, p, arb)


def credit_stats(node: Host | Switch, port: int = 0) -> dict[str, Any] | None:
    """Credit counters of ``node``'s ``port`` (a host has port 0), or None when it is not in credit
    mode: ``credit_stall_ps`` (per VL: time with a packet to send and too few credits, up to now),
    ``credit_stalled_mask``, ``credit_stalls`` (times a VL stalled), ``fc_sent`` / ``fc_rx``
    (flow-control packets), ``credit_used_blocks`` / ``credit_peak_blocks`` / ``credit_cap_blocks``
    (its receive buffer per VL) and ``credit_overruns`` (arrivals without room: always 0)."""
    kind = NODE_SWITCH if isinstance(node, Switch) else NODE_HOST
    if isinstance(node, Switch):
        node._check_port(port)
    result: dict[str, Any] | None = node.sim._fabric_core().credit_stats(kind, node.index, port)
    return result


def host_ports(switch: Switch) -> list[int]:
    """The ports of ``switch`` that lead to a host (a channel adapter, CA)."""
    return [i for i, link in enumerate(switch.ports)
            if not isinstance(link.b if link.a is switch else link.a, Switch)]


def set_victim_mask(switch: Switch, ports: Iterable[int] | str = "hosts") -> list[int]:
    """Set IB congestion control's Victim_Mask (IBA vol. 1 annex A10, SwitchCongestionSetting) of
    ``switch``: the ports given (a list of port numbers, or ``"hosts"``: the CA-facing ports of
    :func:`host_ports`, ``"all"``, ``"none"``) get their bit set, the others cleared; returns the
    ports set. A credit-mode port that lacks credits on a VL (stalled for them, or its last packet
    had to wait for them) is a *victim* of congestion further on, and ECN-marks (FECN) packets only
    when its bit is set; a port with credits, the root of congestion, marks as usual. The default
    mask is 0 on every port, as OpenSM's ``cc_sw_cong_setting_victim_mask``. Set it on a port to a
    CA: a host that returns credits slowly is the root of its congestion, not a victim. Ports
    without credits ignore the mask."""
    if isinstance(ports, str):
        choices = {"hosts": host_ports(switch), "all": list(range(len(switch.ports))), "none": []}
        if ports not in choices:
            raise ValueError(f"victim_mask: {ports!r} is not a port list nor one of 'hosts', 'all', 'none'")
        chosen = choices[ports]
    else:
        chosen = list(ports)
        for p in chosen:
            switch._check_port(p)
    fab = switch.sim._fabric_core()
    on = set(chosen)
    for p in range(len(switch.ports)):
        fab.victim_mask(switch.index, p, p in on)
    return sorted(on)


# ---- linear forwarding tables ----

def dlid(host: Host) -> int:
    """The LID of ``host`` (its index + 1; LID 0 is reserved)."""
    return host.index + 1


_Graph = tuple[list[Switch], dict[int, list[tuple[int, int]]], dict[int, tuple[int, int]]]


def _graph(sim: Simulator) -> _Graph:
    """Switches by index; per switch its (port, neighbour switch index) links; per host index its
    (switch index, port) attachment."""
    switches = sorted(sim.switches.values(), key=lambda s: s.index)
    adj: dict[int, list[tuple[int, int]]] = {s.index: [] for s in switches}
    attach: dict[int, tuple[int, int]] = {}
    for s in switches:
        for port, link in enumerate(s.ports):
            peer = link.b if link.a is s else link.a
            if isinstance(peer, Switch):
                adj[s.index].append((port, peer.index))
            else:
                attach[peer.index] = (s.index, port)
    return switches, adj, attach


def _hosts(sim: Simulator) -> list[Host]:
    return sorted(sim.hosts.values(), key=lambda h: h.index)


def _pick(cands: list[int], load: dict[tuple[int, int], int], sw: int) -> int:
    """The candidate port carrying the fewest destinations so far (ties: the lowest port), as
    OpenSM's min-hop engine balances LIDs over equal-hop ports."""
    best = min(cands, key=lambda p: (load.get((sw, p), 0), p))
    load[(sw, best)] = load.get((sw, best), 0) + 1
    return best


def _tables(sim: Simulator) -> dict[int, list[int]]:
    return {s.index: [LFT_NONE] * (len(sim.hosts) + 1) for s in sim.switches.values()}


def lft_minhop(sim: Simulator) -> dict[str, list[int]]:
    """Min-hop LFTs: each switch forwards to each host over a shortest path (in switch hops),
    spreading destinations over equal-hop ports. Returns {switch name: LFT indexed by DLID}."""
    switches, adj, attach = _graph(sim)
    tables = _tables(sim)
    load: dict[tuple[int, int], int] = {}
    for h in _hosts(sim):
        if h.index not in attach:
            continue
        root, hport = attach[h.index]
        dist = {root: 0}
        order = [root]
        for s in order:  # BFS over switches
            for _, t in adj[s]:
                if t not in dist:
                    dist[t] = dist[s] + 1
                    order.append(t)
        tables[root][dlid(h)] = hport
        for s in order[1:]:
            cands = [p for p, t in adj[s] if dist.get(t) == dist[s] - 1]
            tables[s][dlid(h)] = _pick(cands, load, s)
    return {s.name: tables[s.index] for s in switches}


def updn_roots(sim: Simulator) -> list[Switch]:
    """Default up*/down* roots: the switches farthest (in hops) from any host -- the spines of a
    leaf-spine, the cores of a fat-tree; every switch when all have hosts."""
    switches, adj, attach = _graph(sim)
    dist = {sw: 1 for sw, _ in attach.values()}
    order = list(dict.fromkeys(sw for sw, _ in attach.values()))
    for s in order:
        for _, t in adj[s]:
            if t not in dist:
                dist[t] = dist[s] + 1
                order.append(t)
    if not dist:
        return []
    far = max(dist.values())
    return [s for s in switches if dist.get(s.index) == far]


def lft_updn(sim: Simulator, roots: Iterable[Switch] | None = None) -> dict[str, list[int]]:
    """Up*/down* LFTs (Schroeder et al., Autonet, 1991; OpenSM's updn engine): switches are ranked
    by hops from ``roots`` (default :func:`updn_roots`); a link goes *up* towards the lower
    (rank, index). Every route is zero or more up hops then zero or more down hops, so no cycle of
    buffer dependencies can form. Among the shortest legal routes, destinations are spread over
    equal ports. Switches with no legal route to a host get no entry (LFT_NONE)."""
    switches, adj, attach = _graph(sim)
    root_idx = [s.index for s in (updn_roots(sim) if roots is None else list(roots))]
    if not root_idx:
        raise ValueError("lft_updn needs at least one root switch")
    rank = {r: 0 for r in root_idx}
    order = list(dict.fromkeys(root_idx))
    for s in order:
        for _, t in adj[s]:
            if t not in rank:
                rank[t] = rank[s] + 1
                order.append(t)

    def up(s: int, t: int) -> bool:
        return (rank.get(t, 1 << 30), t) < (rank.get(s, 1 << 30), s)

    tables = _tables(sim)
    load: dict[tuple[int, int], int] = {}
    for h in _hosts(sim):
        if h.index not in attach:
            continue
        root, hport = attach[h.index]
        tables[root][dlid(h)] = hport
        dist, down_only = {root: 0}, {root: True}
        frontier = [root]
        while frontier:
            reached: dict[int, bool] = {}
            for t in frontier:
                for _, s in adj[t]:  # the move s -> t
                    if s in dist:
                        continue
                    if up(s, t):
                        reached[s] = reached.get(s, False)
                    elif down_only[t]:
                        reached[s] = True
            for s, d in reached.items():
                dist[s], down_only[s] = dist[frontier[0]] + 1, d
            frontier = sorted(reached)
        for s in sorted(dist):
            if s == root:
                continue
            cands = [p for p, t in adj[s] if dist.get(t) == dist[s] - 1 and
                     ((not up(s, t) and down_only[t]) if down_only[s] else up(s, t))]
            tables[s][dlid(h)] = _pick(cands, load, s)
    return {s.name: tables[s.index] for s in switches}


def set_lft(sim: Simulator, tables: Mapping[str, Sequence[int]]) -> None:
    """Install LFTs ({switch name: ports by DLID, LFT_NONE for none}): those switches then forward
    by their table alone (no ECMP). An empty table returns a switch to computed routes."""
    fab = sim._fabric_core()
    for name, table in tables.items():
        if name not in sim.switches:
            raise ValueError(f"set_lft: no switch {name!r}")
        sw = sim.switches[name]
        for d, p in enumerate(table):
            if p != LFT_NONE and not 0 <= p < len(sw.ports):
                raise ValueError(f"set_lft: {name} DLID {d} -> port {p!r}: allowed 0..{len(sw.ports) - 1} "
                                 f"or LFT_NONE")
        fab.set_lft(sw.index, list(table))


def route_lft(sim: Simulator, engine: str = "minhop",
              roots: Iterable[Switch] | None = None) -> dict[str, list[int]]:
    """Compute LFTs with ``engine`` (``"minhop"`` or ``"updn"``, with ``roots``) and install them on
    every switch; returns the tables. Computed once: link failures later do not re-route."""
    if engine == "minhop":
        if roots is not None:
            raise ValueError("roots applies to engine 'updn' only")
        tables = lft_minhop(sim)
    elif engine == "updn":
        tables = lft_updn(sim, roots)
    else:
        raise ValueError(f"engine must be 'minhop' or 'updn', got {engine!r}")
    set_lft(sim, tables)
    return tables


def lft_path(sim: Simulator, src: Host, dst: Host, tables: Mapping[str, Sequence[int]]) -> list[str]:
    """The switches a packet from ``src`` to ``dst`` crosses under ``tables`` (a loop or a missing
    entry raises ValueError)."""
    by_index = {s.index: s for s in sim.switches.values()}
    node: Any = src.link.b if src.link.a is src else src.link.a
    path: list[str] = []
    while isinstance(node, Switch):
        if node.name in path:
            raise ValueError(f"LFT loop towards {dst.name}: {' -> '.join(path + [node.name])}")
        path.append(node.name)
        port = tables[node.name][dlid(dst)]
        if port == LFT_NONE:
            raise ValueError(f"{node.name} has no LFT entry for {dst.name} (DLID {dlid(dst)})")
        link = node.ports[port]
        node = link.b if link.a is node else link.a
        if isinstance(node, Switch):
            node = by_index[node.index]
    if node is not dst:
        raise ValueError(f"LFT path from {src.name} ends at {node.name}, not {dst.name}")
    return path
