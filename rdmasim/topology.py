"""Topology builders. Each returns the objects a user needs to start posting work."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rdmasim.fabric import Switch
from rdmasim.sim import Host, Link, Simulator
from rdmasim.units import parse_rate, parse_size

#: a switch's shared buffer when none is given (rdmasim.fabric.switch_config's default)
DEFAULT_BUFFER = 12_000_000
#: shared buffer kept beyond reserve and headroom when the default buffer would not hold them
MIN_SHARED = 1_000_000


def buffer_needed(ports: int, reserve: int = 4000, headroom: int = 64000, n_lossless: int = 1) -> int:
    """Bytes a switch of ``ports`` ports sets aside before any sharing: ``reserve`` per (port,
    priority) for 8 priorities plus ``headroom`` per (port, lossless priority). Its buffer must be at
    least this."""
    return ports * (8 * reserve + n_lossless * headroom)


def default_buffer(ports: int, reserve: int = 4000, headroom: int = 64000, n_lossless: int = 1) -> int:
    """The buffer a switch gets when none is given: 12 MB, or, when reserve and headroom of its
    ports take more than 11 MB, those plus 1 MB of shared buffer (so the default holds any port
    count the builders allow)."""
    return max(DEFAULT_BUFFER, buffer_needed(ports, reserve, headroom, n_lossless) + MIN_SHARED)


def _swcfg(switch_config: dict[str, Any] | None, ports: int) -> dict[str, Any]:
    """add_switch keywords of a ``ports``-port switch: ``switch_config``, with a buffer that scales
    with the port count when ``switch_config`` gives none (see :func:`default_buffer`)."""
    cfg: dict[str, Any] = {"ports": ports, **(switch_config or {})}
    if "buffer" not in cfg:
        n_lossless = len(set(cfg.get("lossless", (3,))))
        cfg["buffer"] = default_buffer(int(cfg["ports"]), parse_size(cfg.get("reserve", "4KB")),
                                       parse_size(cfg.get("headroom", "64KB")), n_lossless)
    return cfg


@dataclass
class BackToBack:
    """Two hosts joined by one link."""

    sim: Simulator
    a: Host
    b: Host
    link: Link


def back_to_back(rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096,
                 loss_ab: float = 0.0, loss_ba: float = 0.0, seed: int = 1,
                 sim: Simulator | None = None, names: tuple[str, str] = ("a", "b")) -> BackToBack:
    """Two hosts ``a`` and ``b`` back to back.

    ``loss_ab``/``loss_ba``: i.i.d. frame loss probability in each direction. Explicit drops:
    ``topo.link.ab.drop(nth=5)`` or ``topo.link.ab.drop(psn=100)``.
    """
    sim = sim if sim is not None else Simulator(seed)
    a = sim.add_host(names[0])
    b = sim.add_host(names[1])
    link = sim.connect(a, b, rate=rate, delay=delay, mtu=mtu)
    if loss_ab:
        link.ab.set_loss(loss_ab)
    if loss_ba:
        link.ba.set_loss(loss_ba)
    return BackToBack(sim, a, b, link)


def _sim(sim: Simulator | None, seed: int) -> Simulator:
    return sim if sim is not None else Simulator(seed)


@dataclass
class Star:
    """``n`` hosts on one switch. For incast, ``hosts[:-1]`` send to ``hosts[-1]`` (``receiver``)."""

    sim: Simulator
    hosts: list[Host]
    switch: Switch
    links: list[Link]

    @property
    def receiver(self) -> Host:
        return self.hosts[-1]

    @property
    def senders(self) -> list[Host]:
        return self.hosts[:-1]


def star(n: int, rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096, seed: int = 1,
         sim: Simulator | None = None, switch_config: dict[str, Any] | None = None) -> Star:
    """``n`` hosts ``h0..h{n-1}`` each linked to switch ``s0``; ``switch_config`` goes to add_switch."""
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 4096:
        raise ValueError(f"star needs n in 2..4096 hosts, got {n!r}")
    sim = _sim(sim, seed)
    sw = sim.add_switch("s0", **_swcfg(switch_config, n))
    hosts = [sim.add_host(f"h{i}") for i in range(n)]
    links = [sim.connect(h, sw, rate=rate, delay=delay, mtu=mtu) for h in hosts]
    return Star(sim, hosts, sw, links)


def incast(n_senders: int, **kw: Any) -> Star:
    """``n_senders``:1 incast: a star of ``n_senders + 1`` hosts; the last host is the receiver."""
    if isinstance(n_senders, bool) or not isinstance(n_senders, int) or n_senders < 1:
        raise ValueError(f"incast needs n_senders >= 1, got {n_senders!r}")
    return star(n_senders + 1, **kw)


@dataclass
class Dumbbell:
    """Two switches joined by one bottleneck link, hosts on each side."""

    sim: Simulator
    left: list[Host]
    right: list[Host]
    s_left: Switch
    s_right: Switch
    bottleneck: Link


def dumbbell(n_left: int, n_right: int, rate: str | int = "100Gbps", bottleneck_rate: str | int | None = None,
             delay: str | int = "1us", mtu: int = 4096, seed: int = 1, sim: Simulator | None = None,
             switch_config: dict[str, Any] | None = None) -> Dumbbell:
    """Hosts ``l0..`` on switch ``sl`` and ``r0..`` on ``sr``; the sl-sr link runs at
    ``bottleneck_rate`` (default ``rate``)."""
    for name, v in (("n_left", n_left), ("n_right", n_right)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 4095:
            raise ValueError(f"dumbbell {name} must be in 1..4095, got {v!r}")
    sim = _sim(sim, seed)
    sl = sim.add_switch("sl", **_swcfg(switch_config, n_left + 1))
    sr = sim.add_switch("sr", **_swcfg(switch_config, n_right + 1))
    left = [sim.add_host(f"l{i}") for i in range(n_left)]
    right = [sim.add_host(f"r{i}") for i in range(n_right)]
    for h in left:
        sim.connect(h, sl, rate=rate, delay=delay, mtu=mtu)
    for h in right:
        sim.connect(h, sr, rate=rate, delay=delay, mtu=mtu)
    mid_rate = bottleneck_rate if bottleneck_rate is not None else rate
    mid = sim.connect(sl, sr, rate=mid_rate, delay=delay, mtu=mtu)
    return Dumbbell(sim, left, right, sl, sr, mid)


@dataclass
class LeafSpine:
    """Two-tier Clos: every leaf connects to every spine; hosts hang off leaves."""

    sim: Simulator
    hosts: list[Host]
    leaves: list[Switch]
    spines: list[Switch]
    hosts_by_leaf: list[list[Host]]
    oversubscription: float  # hosts_per_leaf x host_rate / (spines x fabric_rate)


def leaf_spine(leaves: int, spines: int, hosts_per_leaf: int, host_rate: str | int = "100Gbps",
               fabric_rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096, seed: int = 1,
               sim: Simulator | None = None, switch_config: dict[str, Any] | None = None) -> LeafSpine:
    """Leaves ``leaf0..``, spines ``spine0..``, hosts ``h0..`` (leaf-major). Oversubscription =
    hosts_per_leaf x host_rate / (spines x fabric_rate)."""
    for name, v in (("leaves", leaves), ("spines", spines), ("hosts_per_leaf", hosts_per_leaf)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 2048:
            raise ValueError(f"leaf_spine {name} must be in 1..2048, got {v!r}")
    sim = _sim(sim, seed)
    lv = [sim.add_switch(f"leaf{i}", **_swcfg(switch_config, hosts_per_leaf + spines)) for i in range(leaves)]
    sp = [sim.add_switch(f"spine{i}", **_swcfg(switch_config, leaves)) for i in range(spines)]
    by_leaf: list[list[Host]] = []
    hosts: list[Host] = []
    for i, leaf in enumerate(lv):
        row = []
        for j in range(hosts_per_leaf):
            h = sim.add_host(f"h{i * hosts_per_leaf + j}")
            sim.connect(h, leaf, rate=host_rate, delay=delay, mtu=mtu)
            row.append(h)
        by_leaf.append(row)
        hosts.extend(row)
    for leaf in lv:
        for spine in sp:
            sim.connect(leaf, spine, rate=fabric_rate, delay=delay, mtu=mtu)
    over = hosts_per_leaf * parse_rate(host_rate) / (spines * parse_rate(fabric_rate))
    return LeafSpine(sim, hosts, lv, sp, by_leaf, over)


@dataclass
class FatTree:
    """k-ary fat tree (Al-Fares): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores,
    k^3/4 hosts."""

    sim: Simulator
    hosts: list[Host]
    edges: list[Switch]
    aggs: list[Switch]
    cores: list[Switch]


def fat_tree(k: int, rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096, seed: int = 1,
             sim: Simulator | None = None, switch_config: dict[str, Any] | None = None) -> FatTree:
    """A k-ary fat tree with all links at ``rate``; ``k`` even, 2..64."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k > 64 or k % 2:
        raise ValueError(f"fat_tree k must be an even int in 2..64, got {k!r}")
    sim = _sim(sim, seed)
    cfg = _swcfg(switch_config, k)
    half = k // 2
    cores = [sim.add_switch(f"core{i}", **cfg) for i in range(half * half)]
    edges: list[Switch] = []
    aggs: list[Switch] = []
    hosts: list[Host] = []
    for p in range(k):
        pe = [sim.add_switch(f"edge{p}_{i}", **cfg) for i in range(half)]
        pa = [sim.add_switch(f"agg{p}_{i}", **cfg) for i in range(half)]
        for i, e in enumerate(pe):
            for j in range(half):
                h = sim.add_host(f"h{p}_{i}_{j}")
                sim.connect(h, e, rate=rate, delay=delay, mtu=mtu)
                hosts.append(h)
            for a in pa:
                sim.connect(e, a, rate=rate, delay=delay, mtu=mtu)
        for i, a in enumerate(pa):
            for j in range(half):
                sim.connect(a, cores[i * half + j], rate=rate, delay=delay, mtu=mtu)
        edges.extend(pe)
        aggs.extend(pa)
    return FatTree(sim, hosts, edges, aggs, cores)


@dataclass
class Ring:
    """``n`` switches in a ring, ``hosts_per_switch`` hosts on each (``hosts[i]`` on ``switches[i]``)."""

    sim: Simulator
    switches: list[Switch]
    hosts: list[list[Host]]


def ring(n: int, hosts_per_switch: int = 1, rate: str | int = "100Gbps", delay: str | int = "1us",
         mtu: int = 4096, clockwise: bool = False, seed: int = 1, sim: Simulator | None = None,
         switch_config: dict[str, Any] | None = None) -> Ring:
    """A ring of switches ``s0..s{n-1}`` (``s_i`` -- ``s_{i+1}``) with hosts ``h{i}_{j}``.

    ``clockwise=True`` pins static routes so every switch sends traffic for hosts more than one hop
    away to its clockwise neighbour: the cyclic buffer dependency behind PFC deadlock
    (see tests/fabric/test_failure_modes.py)."""
    from rdmasim.fabric import set_route
    if isinstance(n, bool) or not isinstance(n, int) or not 3 <= n <= 4096:
        raise ValueError(f"ring needs n in 3..4096 switches, got {n!r}")
    if isinstance(hosts_per_switch, bool) or not isinstance(hosts_per_switch, int) or hosts_per_switch < 1:
        raise ValueError(f"ring hosts_per_switch must be >= 1, got {hosts_per_switch!r}")
    sim = _sim(sim, seed)
    cfg = _swcfg(switch_config, hosts_per_switch + 2)
    sw = [sim.add_switch(f"s{i}", **cfg) for i in range(n)]
    hosts = []
    for i, s in enumerate(sw):
        row = [sim.add_host(f"h{i}_{j}") for j in range(hosts_per_switch)]
        for h in row:
            sim.connect(h, s, rate=rate, delay=delay, mtu=mtu)
        hosts.append(row)
    for i in range(n):
        sim.connect(sw[i], sw[(i + 1) % n], rate=rate, delay=delay, mtu=mtu)
    if clockwise:
        for i in range(n):
            nxt = sw[i].port_to(sw[(i + 1) % n])
            for k in range(2, n):
                for h in hosts[(i + k) % n]:
                    set_route(sw[i], h, [nxt])
    return Ring(sim, sw, hosts)


@dataclass
class Dragonfly:
    """Dragonfly (Kim, Dally, Scott and Abts, ISCA 2008): ``groups`` groups of ``a`` routers, all-to-all
    local links inside a group, ``h`` global links per router between groups, ``p`` hosts per router.

    ``routers[g][r]`` is router ``r{g}_{r}``; ``hosts[g][r]`` its hosts ``h{g}_{r}_{i}``;
    ``global_links[(g1, g2)]`` the links between groups ``g1 < g2``."""

    sim: Simulator
    a: int
    p: int
    h: int
    groups: int
    routers: list[list[Switch]]
    hosts: list[list[list[Host]]]
    global_links: dict[tuple[int, int], list[Link]]

    @property
    def all_hosts(self) -> list[Host]:
        """Every host, group-major."""
        return [x for grp in self.hosts for row in grp for x in row]

    def group_hosts(self, g: int) -> list[Host]:
        """The ``a x p`` hosts of group ``g``."""
        return [x for row in self.hosts[g] for x in row]


def dragonfly_links(groups: int, a: int, h: int) -> list[tuple[int, int, int, int]]:
    """The global links of a dragonfly as (group, router, group, router), each once.

    Arrangement ("palm tree", consecutive): global port k = 0..a*h-1 of group i sits on router
    k // h and leads to group (i + 1 + k mod (groups - 1)) mod groups, where it is port
    r (groups - 1) + groups - 2 - k mod (groups - 1) with r = k // (groups - 1). Every pair of
    groups gets (a*h) // (groups - 1) links; with groups = a*h + 1 (the largest) exactly one, and no
    port is left over. When groups - 1 does not divide a*h, the last a*h mod (groups - 1) global
    ports of each group stay unconnected."""
    m = (a * h) // (groups - 1)
    out = []
    for i in range(groups):
        for k in range(m * (groups - 1)):
            r, off = divmod(k, groups - 1)
            j = (i + 1 + off) % groups
            kk = r * (groups - 1) + groups - 2 - off
            if (i, k) < (j, kk):
                out.append((i, k // h, j, kk // h))
    return out


def dragonfly(a: int = 4, p: int = 2, h: int = 2, groups: int | None = None, routing: str = "minimal",
              hop_classes: bool = False, rate: str | int = "100Gbps", global_rate: str | int | None = None,
              delay: str | int = "1us", global_delay: str | int | None = None, mtu: int = 4096, seed: int = 1,
              sim: Simulator | None = None, switch_config: dict[str, Any] | None = None) -> Dragonfly:
    """A dragonfly of ``groups`` (default ``a*h + 1``, the largest: one global link per pair of groups)
    groups of ``a`` routers with ``p`` hosts and ``h`` global links each; Kim et al.'s balanced choice is
    ``a = 2p = 2h`` (the default 4, 2, 2: 9 groups, 72 hosts).

    ``routing``: ``"minimal"``, ``"valiant"`` or ``"ugal"`` (see :func:`rdmasim.fabric.switch_config`;
    the intermediate group is drawn per flow under the default ``path_select="ecmp"``, per packet
    under ``"spray"``/``"adaptive"``). ``hop_classes=True``: a packet's priority rises by one per
    global link crossed, so PFC cannot deadlock (priorities 3, 4, 5 lossless and a round-robin
    scheduler, unless ``switch_config`` gives ``lossless`` / ``scheduler``: strict priority would
    starve the packets that have crossed fewer global links). Host and local links run at ``rate``
    with ``delay``; global links at ``global_rate`` / ``global_delay`` (default the same). Each
    router's ports: its hosts, then the ``a - 1`` local links, then its global links. See
    :func:`dragonfly_links`."""
    for name, v, hi in (("a", a, 256), ("p", p, 256), ("h", h, 256)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
            raise ValueError(f"dragonfly {name} must be an int in 1..{hi}, got {v!r}")
    g_max = a * h + 1
    groups = g_max if groups is None else groups
    if isinstance(groups, bool) or not isinstance(groups, int) or not 2 <= groups <= g_max:
        raise ValueError(f"dragonfly groups must be an int in 2..a*h+1 = {g_max}, got {groups!r}")
    if routing not in ("minimal", "valiant", "ugal"):
        raise ValueError(f"dragonfly routing must be one of 'minimal', 'valiant', 'ugal', got {routing!r}")
    clash = {"routing", "group", "hop_classes"} & set(switch_config or {})
    if clash:
        raise ValueError(f"dragonfly sets {', '.join(sorted(clash))} of every router itself; "
                         "leave them out of switch_config (use routing=)")
    sim = _sim(sim, seed)
    base = dict(switch_config or {})
    if hop_classes:  # priority 3 after 0, 1 and 2 global links, served round robin (not strictly)
        base.setdefault("lossless", (3, 4, 5))
        base.setdefault("scheduler", "wrr")
    cfg = _swcfg(base, p + a - 1 + h)
    routers = [[sim.add_switch(f"r{g}_{r}", **cfg, routing=routing, group=g, hop_classes=hop_classes)
                for r in range(a)] for g in range(groups)]
    hosts: list[list[list[Host]]] = []
    for g in range(groups):
        grp = []
        for r in range(a):
            row = [sim.add_host(f"h{g}_{r}_{i}") for i in range(p)]
            for x in row:
                sim.connect(x, routers[g][r], rate=rate, delay=delay, mtu=mtu)
            grp.append(row)
        hosts.append(grp)
    for g in range(groups):
        for r in range(a):
            for s in range(r + 1, a):
                sim.connect(routers[g][r], routers[g][s], rate=rate, delay=delay, mtu=mtu)
    g_rate = global_rate if global_rate is not None else rate
    g_delay = global_delay if global_delay is not None else delay
    glinks: dict[tuple[int, int], list[Link]] = {}
    for i, ri, j, rj in dragonfly_links(groups, a, h):
        link = sim.connect(routers[i][ri], routers[j][rj], rate=g_rate, delay=g_delay, mtu=mtu)
        glinks.setdefault((min(i, j), max(i, j)), []).append(link)
    return Dragonfly(sim, a, p, h, groups, routers, hosts, glinks)


@dataclass
class RailOptimized:
    """Rail-optimised GPU cluster: ``nodes[n][i]`` is NIC (GPU) ``i`` of node ``n``, host
    ``n{n}_g{i}``; it is linked to the rail switch of rail ``i`` of its scalable unit
    (``rails[i][u]``, switch ``rail{i}_{u}``); every rail switch is linked to every spine
    (``spine{j}``)."""

    sim: Simulator
    nodes: list[list[Host]]
    rails: list[list[Switch]]
    spines: list[Switch]
    oversubscription: float  # nodes_per_unit x host_rate / (spines x fabric_rate)

    @property
    def hosts(self) -> list[Host]:
        """Every NIC, node-major."""
        return [h for node in self.nodes for h in node]

    def rail(self, i: int) -> list[Host]:
        """NIC ``i`` of every node: the hosts of rail ``i``."""
        return [node[i] for node in self.nodes]


def rail_optimized(nodes: int, gpus_per_node: int = 8, spines: int = 4, nodes_per_unit: int | None = None,
                   host_rate: str | int = "400Gbps", fabric_rate: str | int | None = None,
                   delay: str | int = "1us", mtu: int = 4096, seed: int = 1, sim: Simulator | None = None,
                   switch_config: dict[str, Any] | None = None) -> RailOptimized:
    """``nodes`` nodes of ``gpus_per_node`` GPUs, one NIC each; NIC i of every node in a scalable unit
    of ``nodes_per_unit`` nodes (default: all, one unit) connects to that unit's rail switch i, and
    each rail switch connects to every one of ``spines`` spines at ``fabric_rate`` (default
    ``host_rate``). Traffic between NICs of the same rail and unit crosses one switch; any other
    goes rail switch - spine - rail switch (shortest paths, ECMP over spines). A node's GPUs are
    separate hosts: their NVLink/PCIe path inside the node is not modelled, so same-node traffic
    between rails crosses the fabric too."""
    for name, v, lo, hi in (("nodes", nodes, 1, 4096), ("gpus_per_node", gpus_per_node, 1, 64),
                            ("spines", spines, 1, 2048)):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"rail_optimized {name} must be an int in {lo}..{hi}, got {v!r}")
    per_unit = nodes if nodes_per_unit is None else nodes_per_unit
    if isinstance(per_unit, bool) or not isinstance(per_unit, int) or not 1 <= per_unit <= min(nodes, 4095):
        raise ValueError(f"rail_optimized nodes_per_unit must be an int in 1..{min(nodes, 4095)} "
                         f"(at most nodes), got {nodes_per_unit!r}")
    sim = _sim(sim, seed)
    units = -(-nodes // per_unit)
    f_rate = fabric_rate if fabric_rate is not None else host_rate
    rail_cfg = _swcfg(switch_config, per_unit + spines)
    rails = [[sim.add_switch(f"rail{i}_{u}", **rail_cfg) for u in range(units)] for i in range(gpus_per_node)]
    sp = [sim.add_switch(f"spine{j}", **_swcfg(switch_config, gpus_per_node * units)) for j in range(spines)]
    node_hosts = []
    for n in range(nodes):
        row = [sim.add_host(f"n{n}_g{i}") for i in range(gpus_per_node)]
        for i, h in enumerate(row):
            sim.connect(h, rails[i][n // per_unit], rate=host_rate, delay=delay, mtu=mtu)
        node_hosts.append(row)
    for i in range(gpus_per_node):
        for u in range(units):
            for s in sp:
                sim.connect(rails[i][u], s, rate=f_rate, delay=delay, mtu=mtu)
    over = per_unit * parse_rate(host_rate) / (spines * parse_rate(f_rate))
    return RailOptimized(sim, node_hosts, rails, sp, over)


def star_with_aggregator(n: int, rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096,
                         **kw: Any) -> tuple[Any, int]:
    """A :func:`star` of ``n`` ranks plus an aggregation host on its switch.

    The aggregation host's link runs at ``n`` x ``rate`` with no delay, so it carries all ranks' chunks
    as fast as they arrive. Returns ``(star, aggregator host index)``.
    """
    config = {**kw.pop("switch_config", {}), "ports": n + 1}
    st = star(n, rate=rate, delay=delay, mtu=mtu, switch_config=config, **kw)
    agg = st.sim.add_host("agg")
    st.sim.connect(agg, st.switch, rate=n * parse_rate(rate), delay=0, mtu=mtu)
    return st, agg.index
