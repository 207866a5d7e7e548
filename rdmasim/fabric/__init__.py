"""Switched fabrics: switches and their configuration, links between any two nodes, counters.

A switch has N ports with 8 priority egress queues, a shared-buffer MMU, PFC per (ingress port,
lossless priority) and RED ECN marking per egress queue; it forwards by destination host over the
shortest paths, hashing the 5-tuple (UDP source port = per-QP entropy) over equal-cost next hops.
Everything per packet runs in C (csrc/link/); this module only configures and reads counters.

Build graphs with ``sim.add_switch(name, **config)`` and ``sim.connect(a, b, rate=..., delay=...)``
(hosts or switches), or use the builders in :mod:`rdmasim.topology`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from rdmasim import _core
from rdmasim.checks import MAX_TIME_PS, UINT32_MAX, check_int, check_real, is_zero
from rdmasim.units import parse_size, parse_time

if TYPE_CHECKING:
    # what the fabric needs of them (rdmasim._protocols), not the classes of the layers above
    from rdmasim._protocols import DirectionLike as LinkDirection
    from rdmasim._protocols import LinkLike as Link
    from rdmasim._protocols import NetSim as Simulator
    from rdmasim._protocols import NodeLike as Host

NODE_HOST = 0
NODE_SWITCH = 1
#: path selection modes among equal-cost next hops (index = the C enum rs_path_select)
PATH_SELECT = ("ecmp", "spray", "adaptive", "adaptive_packet")
#: routing modes (index = the C enum rs_routing): hop-count shortest paths, or by group (dragonfly)
ROUTING = ("shortest", "minimal", "valiant", "ugal")
#: most groups under group routing (groups 0..MAX_GROUPS-1)
MAX_GROUPS = 65535
DROP_REASONS = _core.SWITCH_DROP_REASONS

_U32 = 2**32 - 1
_U64 = 2**64 - 1


def _int_in(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an int in {lo}..{hi}, got {value!r}")
    return value


def _size_in(name: str, value: Any, hi: int) -> int:
    try:
        n = parse_size(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    if n > hi:
        raise ValueError(f"{name} must be at most {hi} bytes, got {value!r}")
    return n


def switch_config(*, ports: int = 32, buffer: str | int = "12MB", reserve: str | int = "4KB",
                  headroom: str | int = "64KB", threshold: str | int = "dynamic", alpha_shift: int = 3,
                  resume_offset: str | int = "3KB", lossy_limit: str | int | None = None,
                  lossless: Iterable[int] = (3,), pfc_quanta: int = 0xFFFF,
                  dscp_map: Mapping[int, int] | None = None, scheduler: str = "strict",
                  wrr_weights: Iterable[int] | None = None, ecn: Mapping[str, Any] | None = None,
                  ecn_mark: str = "enqueue", ecmp_seed: int = 0x5EED,
                  path_select: str = "ecmp", pfc_response: str | int = 0, routing: str = "shortest",
                  group: int = 0, hop_classes: bool = False, latency: str | int = 0,
                  ar_band: str | int = 0,
                  trimming: bool = False, trim_threshold: str | int = "64KiB",
                  trim_priority: int = 7) -> dict[str, Any]:
    """Validate switch settings and return the dict the C core takes.

    ``buffer``: shared buffer; ``reserve``: guaranteed bytes per (ingress port, priority);
    ``headroom``: PFC headroom per (ingress port, lossless priority); ``threshold``: ``"dynamic"``
    (T = free shared buffer >> ``alpha_shift``, HPCC) or a static XOFF size (shared bytes of one
    ingress queue); ``resume_offset``: XON hysteresis (XON when shared + offset <= T);
    ``lossy_limit``: egress queue cap of lossy classes (None: the dynamic threshold);
    ``lossless``: priorities with PFC on (the others are lossy: drop when over threshold);
    ``pfc_quanta``: pause time of XOFF frames; ``dscp_map``: DSCP -> priority overrides of the
    default (all -> 3, 48 -> 6); ``scheduler``: ``"strict"`` (7 highest) or ``"wrr"`` (packets,
    ``wrr_weights`` 1..255 per priority); ``ecn``: ``{"kmin": size, "kmax": size, "pmax": p,
    "priorities": (3,)}`` RED marking; ``ecn_mark``: ``"enqueue"`` or ``"dequeue"``;
    ``path_select``: how a packet picks among equal-cost next hops: ``"ecmp"`` (flow hash),
    ``"spray"`` (per packet, deterministic for the seed), ``"adaptive"`` (the egress queue with
    the fewest bytes, ties by the flow hash) or ``"adaptive_packet"`` (the same, ties broken per
    packet as ``"spray"``, so an idle fabric spreads a QP too); ``pfc_response``: PFC response time
    of every port (a received PFC frame acts this long after it arrived; 0 = at once; 802.3 Annex
    31D bounds it, e.g. 394 pause quanta = 2.01728 us at 100 Gb/s; headroom must cover it: ``pfc_headroom``);
    ``routing``: ``"shortest"`` (hop-count shortest paths) or, routing by ``group`` (0..65534, the
    switch's dragonfly group), ``"minimal"`` (at most one link between groups), ``"valiant"`` (via
    an intermediate group drawn at the source switch: per flow under ``path_select="ecmp"``, per
    packet otherwise) or ``"ugal"`` (UGAL-L: Valiant only when the minimal egress queue holds more
    than twice the Valiant one's bytes); ``hop_classes`` (group routing): a packet's priority
    rises by one for each global link it has crossed (capped at 7), Kim et al.'s virtual
    channels, so PFC cannot close a cycle (make those priorities lossless); see docs/routing.md.
    ``latency``: forwarding latency (0 = none, the default): every frame the switch receives is
    seen that long after its last bit arrived (store and forward plus latency; port-to-port
    latency of a 100 Gb/s switch is roughly 90 ns for InfiniBand and 300-600 ns for Ethernet,
    see :data:`rdmasim.ib_fabric.SWITCH_LATENCY`).
    ``ar_band``: ``"adaptive"`` and ``"adaptive_packet"`` compare egress queues in bands of this
    size (queue bytes // band: queues in one band are equal, and equal queues are broken as the
    mode says); 0 (the default) compares bytes exactly; see docs/multipath.md.
    ``trimming``: packet trimming (NDP; an option of Ultra Ethernet, docs/multipath.md): a packet
    its transport allows to be trimmed, whose egress queue would hold more than ``trim_threshold``
    (bytes, > 0) with it or that the buffer would drop, is cut to its headers and queued at
    ``trim_priority`` (0..7) instead; RoCE packets are never trimmed.
    """
    cfg = _core.switch_cfg_default()
    cfg["n_ports"] = _int_in("ports", ports, 1, 4096)
    cfg["buffer_bytes"] = _size_in("buffer", buffer, _U64)
    cfg["reserve_bytes"] = _size_in("reserve", reserve, _U32)
    cfg["headroom_bytes"] = _size_in("headroom", headroom, _U32)
    if threshold == "dynamic":
        cfg["dynamic"] = 1
        cfg["alpha_shift"] = _int_in("alpha_shift", alpha_shift, 0, 16)
    else:
        cfg["dynamic"] = 0
        cfg["xoff_bytes"] = _size_in("threshold", threshold, _U64)
    cfg["resume_offset_bytes"] = _size_in("resume_offset", resume_offset, _U32)
    cfg["lossy_limit_bytes"] = 0 if lossy_limit is None else _size_in("lossy_limit", lossy_limit, _U64)
    if cfg["lossy_limit_bytes"] == 0 and lossy_limit is not None:
        raise ValueError("lossy_limit must be > 0 (or None for the dynamic threshold)")
    mask = 0
    for p in lossless:
        mask |= 1 << _int_in("lossless priority", p, 0, 7)
    cfg["pfc_mask"] = mask
    cfg["pfc_quanta"] = _int_in("pfc_quanta", pfc_quanta, 1, 0xFFFF)
    for dscp, prio in (dscp_map or {}).items():
        cfg["dscp_to_prio"][_int_in("dscp_map key (DSCP)", dscp, 0, 63)] = _int_in(
            f"dscp_map[{dscp}] (priority)", prio, 0, 7)
    if scheduler not in ("strict", "wrr"):
        raise ValueError(f"scheduler must be 'strict' or 'wrr', got {scheduler!r}")
    cfg["wrr"] = int(scheduler == "wrr")
    if wrr_weights is not None:
        w = list(wrr_weights)
        if len(w) != 8:
            raise ValueError(f"wrr_weights needs 8 weights (priorities 0..7), got {len(w)}")
        cfg["wrr_weight"] = [_int_in(f"wrr_weights[{i}]", x, 1, 255) for i, x in enumerate(w)]
    if ecn is not None:
        unknown = set(ecn) - {"kmin", "kmax", "pmax", "priorities"}
        if unknown:
            raise ValueError(f"ecn: unknown keys {sorted(unknown)} (allowed: kmin, kmax, pmax, priorities)")
        kmin = _size_in("ecn kmin", ecn.get("kmin", "5KB"), _U64)
        kmax = _size_in("ecn kmax", ecn.get("kmax", "200KB"), _U64)
        pmax = ecn.get("pmax", 0.01)
        if kmax <= kmin:
            raise ValueError(f"ecn kmax ({kmax} B) must be greater than kmin ({kmin} B)")
        if isinstance(pmax, bool) or not isinstance(pmax, (int, float)) or not 0.0 <= pmax <= 1.0:
            raise ValueError(f"ecn pmax must be a probability in [0, 1], got {pmax!r}")
        for p in ecn.get("priorities", (3,)):
            p = _int_in("ecn priority", p, 0, 7)
            cfg["ecn_kmin"][p], cfg["ecn_kmax"][p], cfg["ecn_pmax"][p] = kmin, kmax, float(pmax)
    if ecn_mark not in ("enqueue", "dequeue"):
        raise ValueError(f"ecn_mark must be 'enqueue' or 'dequeue', got {ecn_mark!r}")
    cfg["ecn_on_dequeue"] = int(ecn_mark == "dequeue")
    cfg["ecmp_seed"] = _int_in("ecmp_seed", ecmp_seed, 0, _U64)
    if path_select not in PATH_SELECT:
        raise ValueError(f"path_select must be one of {', '.join(PATH_SELECT)}, got {path_select!r}")
    cfg["path_select"] = PATH_SELECT.index(path_select)
    cfg["pfc_response_ps"] = time_in("pfc_response", pfc_response)
    if routing not in ROUTING:
        raise ValueError(f"routing must be one of {', '.join(ROUTING)}, got {routing!r}")
    cfg["routing"] = ROUTING.index(routing)
    cfg["group"] = _int_in("group", group, 0, MAX_GROUPS - 1)
    if not isinstance(hop_classes, bool):
        raise ValueError(f"hop_classes must be True or False, got {hop_classes!r}")
    if hop_classes and routing == "shortest":
        raise ValueError("hop_classes needs routing by group (routing 'minimal', 'valiant' or 'ugal')")
    cfg["hop_classes"] = int(hop_classes)
    cfg["latency_ps"] = time_in("latency", latency)
    cfg["ar_band_bytes"] = _size_in("ar_band", ar_band, _U32)
    if not isinstance(trimming, bool):
        raise ValueError(f"trimming must be True or False, got {trimming!r}")
    cfg["trim"] = int(trimming)
    cfg["trim_threshold_bytes"] = _size_in("trim_threshold", trim_threshold, 1 << 40)
    if cfg["trim_threshold_bytes"] < 1:
        raise ValueError(f"trim_threshold must be at least 1 byte, got {trim_threshold!r}")
    cfg["trim_prio"] = _int_in("trim_priority", trim_priority, 0, 7)
    return cfg


#: bytes of RoCEv2 framing around an RDMA WRITE's first packet: Ethernet 14, IPv4 20, UDP 8, BTH 12,
#: RETH 16, ICRC 4, FCS 4
ROCE_MAX_OVERHEAD = 78
#: preamble, start-of-frame delimiter and inter-frame gap: bytes of wire time between frames
WIRE_GAP = 20
#: a PFC frame on the wire: 64 bytes (minimum frame) plus the gap
PFC_FRAME_WIRE = 64 + WIRE_GAP


def pfc_headroom(rate: str | int, delay: str | int, mtu: int = 1024, response: str | int = 0) -> int:
    """Headroom (bytes per ingress port and lossless priority) that absorbs everything a sender can
    still put on a link of ``rate`` and one-way ``delay`` after the switch decides to pause it:
    the round trip of the cable (the XOFF travels to the sender, the data already sent travels
    back), the sender's PFC ``response`` time, a largest frame ahead of the XOFF at the switch's
    port, the largest frame the sender has started, and the XOFF frame itself (802.1Qbb Annex N's
    terms; times in wire bytes, so a slight over-estimate of stored frame bytes)."""
    from rdmasim.units import parse_rate

    rate_bps = parse_rate(rate)
    t_ps = 2 * time_in("delay", delay) + time_in("response", response)
    in_flight = -(-t_ps * rate_bps // (8 * 10**12))  # bytes, rounded up
    max_frame = _int_in("mtu", mtu, 1, 1 << 16) + ROCE_MAX_OVERHEAD + WIRE_GAP
    return in_flight + 2 * max_frame + PFC_FRAME_WIRE


def time_in(name: str, value: Any) -> int:
    """A time (string with unit or int ps) in 0..MAX_TIME_PS, errors naming ``name``."""
    try:
        t = parse_time(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    if not 0 <= t <= MAX_TIME_PS:
        raise ValueError(f"{name} = {value!r} is out of range: allowed [0, {MAX_TIME_PS}] ps")
    return t


class Switch:
    """A switch in the fabric. ``ports[i]`` is the Link on port i (ports fill up in connect order)."""

    def __init__(self, sim: Simulator, index: int, name: str, config: dict[str, Any]) -> None:
        self.sim = sim
        self.index = index
        self.name = name
        self.config = config
        self.ports: list[Link] = []

    @property
    def _fab(self) -> Any:
        return self.sim._fabric_core()

    def _check_port(self, port: int) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < len(self.ports):
            raise ValueError(f"{self.name}: port must be in 0..{len(self.ports) - 1} "
                             f"(connected ports), got {port!r}")

    def port_to(self, node: Host | Switch) -> int:
        """The first port of this switch whose link leads to ``node``."""
        for i, link in enumerate(self.ports):
            if link.a is node or link.b is node:
                return i
        raise ValueError(f"{self.name} has no link to {node.name}")

    def port_stats(self, port: int) -> dict[str, Any]:
        """Counters of one port: rx/tx packets and bytes, drops by reason (counted where the packet
        arrived), ECN marks (on packets leaving), PFC frames sent upstream (XOFF incl. refreshes,
        XON) and received (``pfc_rx_*``), time each priority was paused (``paused_ps``), queue peaks;
        ``trims`` (packets trimmed to their headers for this egress port, ``trimming``);
        in InfiniBand credit mode also ``credit_stall_ps`` per VL and the rest of
        :func:`rdmasim.ib_fabric.credit_stats`;
        per queue (lists indexed by priority): ``queue_tx_pkts``, ``queue_tx_bytes``,
        ``queue_ecn_marked``, ``queue_drops`` (packets that arrived on this port in that priority)."""
        self._check_port(port)
        d = self._fab.port_stats(self.index, port)
        d.update(self._fab.pause_stats(NODE_SWITCH, self.index, port))
        d.update(self._fab.credit_stats(NODE_SWITCH, self.index, port) or {})  # IB credit mode (ib_fabric)
        return d

    def stats(self) -> list[dict[str, Any]]:
        """``port_stats`` of every connected port."""
        return [self.port_stats(i) for i in range(len(self.ports))]

    def totals(self) -> dict[str, int]:
        """Sums over ports: packets, drops (total and by reason), ECN marks, PFC frames (a dict that
        prints as a table: :class:`rdmasim.report.Report`)."""
        from rdmasim.report import Report

        t: dict[str, int] = {"rx_pkts": 0, "tx_pkts": 0, "ecn_marked": 0, "pfc_xoff_sent": 0,
                             "pfc_xon_sent": 0, "pfc_rx_frames": 0, "trims": 0, "drops": 0}
        t.update({f"drops_{r}": 0 for r in DROP_REASONS})
        for s in self.stats():
            for k in ("rx_pkts", "tx_pkts", "ecn_marked", "pfc_xoff_sent", "pfc_xon_sent", "pfc_rx_frames",
                      "trims"):
                t[k] += s[k]
            for r, n in s["drops"].items():
                t[f"drops_{r}"] += n
                t["drops"] += n
        return Report(f"switch {self.name}: totals over its ports", t)

    def queue_bytes(self, port: int, priority: int = 3) -> tuple[int, int]:
        """Bytes now in (egress queue, ingress accounting incl. headroom) of (port, priority)."""
        self._check_port(port)
        _int_in("priority", priority, 0, 7)
        return self._fab.queue_bytes(self.index, port, priority)

    def next_hops(self, dst: Host) -> list[int]:
        """Equal-cost next-hop ports towards host ``dst``."""
        return self._fab.next_hops(self.index, dst.index)

    def ecmp_port(self, src: Host, dst: Host, udp_sport: int) -> int:
        """The egress port this switch picks for a flow (same hash as the data path)."""
        import ipaddress
        return self._fab.ecmp_port(self.index, dst.index, int(ipaddress.IPv4Address(src.ip)),
                                   int(ipaddress.IPv4Address(dst.ip)), udp_sport)

    def inspect_port(self, port: int) -> dict[str, Any]:
        """What a port holds now: egress and ingress bytes per priority, paused priorities (pause
        received from the peer), and the node at the other end."""
        self._check_port(port)
        link = self.ports[port]
        peer = link.b if link.a is self else link.a
        queues = [self._fab.queue_bytes(self.index, port, prio) for prio in range(8)]
        mask = int(self._fab.pause_stats(NODE_SWITCH, self.index, port)["paused_mask"])
        return {"peer": peer.name, "egress_bytes": [q[0] for q in queues],
                "ingress_bytes": [q[1] for q in queues],
                "paused_priorities": [p for p in range(8) if mask >> p & 1]}

    def explain(self) -> str:
        """The switch's state in words, for teaching: per port what is queued and what is paused."""
        lines = [f"Switch {self.name}: {len(self.ports)} port(s) connected."]
        for i in range(len(self.ports)):
            q = self.inspect_port(i)
            busy = [f"prio {p}: {b} B out" for p, b in enumerate(q["egress_bytes"]) if b]
            held = [f"prio {p}: {b} B in" for p, b in enumerate(q["ingress_bytes"]) if b]
            paused = (f"; paused by {q['peer']} on priority {', '.join(map(str, q['paused_priorities']))}"
                      if q["paused_priorities"] else "")
            lines.append(f"  port {i} -> {q['peer']}: " + (", ".join(busy + held) or "empty") + paused)
        return "\n".join(lines)

    def __repr__(self) -> str:
        queued = sum(sum(self.inspect_port(i)["egress_bytes"]) for i in range(len(self.ports)))
        return (f"Switch({self.name!r}, ports={len(self.ports)}/{self.config['n_ports']}, "
                f"queued={queued} B)")


def node_ref(node: Host | Switch) -> tuple[int, int]:
    """(kind, index) of a node for the C core."""
    return (NODE_SWITCH, node.index) if isinstance(node, Switch) else (NODE_HOST, node.index)


def set_link_state(link: Link, up: bool, at: str | int | None) -> None:
    """Take a link down or up now (``at=None``) or at an absolute time; routes are recomputed."""
    fab = link.sim._fabric_core()
    if at is None:
        fab.link_set_up(link.ab.link_id, up)
    else:
        t = parse_time(at)
        if t < link.sim.now:
            raise ValueError(f"at={at!r} is before now ({link.sim.now} ps)")
        fab.link_schedule_up(link.ab.link_id, up, t)


def inject_pfc(node: Host | Switch, quanta: Mapping[int, int], port: int = 0) -> None:
    """Test hook: hand ``node``'s ``port`` a PFC frame carrying ``quanta`` ({priority: pause
    quanta, 0 = resume}) as if it had just arrived on its link (it acts after the port's PFC
    response time: at once by default)."""
    enable = 0
    q = [0] * 8
    for prio, n in quanta.items():
        enable |= 1 << _int_in("priority", prio, 0, 7)
        q[prio] = _int_in(f"quanta[{prio}]", n, 0, 0xFFFF)
    kind, idx = node_ref(node)
    node.sim._fabric_core().inject_pfc(kind, idx, port, enable, q)


def set_route(switch: Switch, dst: Host, ports: Iterable[int]) -> None:
    """Static route: ``switch`` sends traffic for host ``dst`` out of ``ports`` (ECMP among them),
    overriding shortest paths and surviving recomputation; ``ports=()`` removes the pin."""
    plist = list(ports)
    for p in plist:
        switch._check_port(p)
    switch._fab.set_route(switch.index, dst.index, plist)


def enable_pfc_watchdog(sim: Simulator, poll: str | int = "100us", detect: str | int = "200us",
                        restore: str | int = "200us") -> None:
    """PFC watchdog on every switch (SONiC-style, protocol.md 6.4; real defaults are 100/200/200 ms):
    a lossless egress queue paused with packets and no progress for ``detect`` is declared stormed;
    its packets are dropped (``drops["watchdog"]``) and pause ignored for ``restore``."""
    poll_ps, detect_ps, restore_ps = parse_time(poll), parse_time(detect), parse_time(restore)
    if poll_ps <= 0 or detect_ps < poll_ps or restore_ps <= 0:
        raise ValueError(f"watchdog needs poll > 0, detect >= poll, restore > 0; got poll={poll!r}, "
                         f"detect={detect!r}, restore={restore!r}")
    sim._fabric_core().pfc_watchdog(poll_ps, detect_ps, restore_ps)


def enable_deadlock_detector(sim: Simulator, period: str | int = "10us") -> None:
    """Check every ``period`` for a cycle of egress queues each held back by the next (PFC pause or
    InfiniBand credit stall); see :func:`deadlock`."""
    period_ps = parse_time(period)
    if period_ps <= 0:
        raise ValueError(f"deadlock check period must be > 0, got {period!r}")
    sim._fabric_core().deadlock_detector(period_ps)


def check_deadlock(sim: Simulator) -> tuple[int, list[tuple[str, int, int]]] | None:
    """Look for a deadlock once, now (the periodic detector need not be on), unless one was found
    already; returns :func:`deadlock`. Cheap: one search of the wait-for graph."""
    sim._fabric_core().deadlock_check_now()
    return deadlock(sim)


def deadlock(sim: Simulator) -> tuple[int, list[tuple[str, int, int]]] | None:
    """The first deadlock found: (time in ps, cycle of (switch name, port, priority)), or None. A
    cycle of egress queues, each held back by the next switch -- paused by its PFC, or, on
    InfiniBand credit links, stalled for the credits of its ingress buffer (the priority is then
    the VL) -- and holding packets that wait in the next queue of the cycle. Found by the periodic
    detector (:func:`enable_deadlock_detector`) or :func:`check_deadlock`."""
    r = sim._fabric_core().deadlock_result()
    if r is None:
        return None
    t, cycle = r
    names = {s.index: s.name for s in sim.switches.values()}
    return t, [(names[s], p, prio) for s, p, prio in cycle]


def slow_receiver(host: Host, rate: str | int | None = "10Gbps", *, buffer: str | int = "256KB",
                  xoff: str | int = "128KB", xon: str | int = "64KB", priorities: Iterable[int] = (3,),
                  quanta: int = 0xFFFF) -> None:
    """Make ``host``'s NIC drain received frames at ``rate`` (0 = a stuck receiver) from a ``buffer``;
    it sends PFC XOFF for ``priorities`` upstream when ``xoff`` bytes wait and XON at ``xon``.
    ``rate=None`` restores an infinitely fast receiver (its buffer must be empty)."""
    from rdmasim.units import parse_rate
    fab = host.sim._fabric_core()
    if rate is None:
        fab.host_set_rx(host.index, False, 0, 0, 0, 0, 0, 1)
        return
    rate_bps = 0 if is_zero(rate) else parse_rate(rate)
    buf, xo, xn = (_size_in(n, v, _U64) for n, v in (("buffer", buffer), ("xoff", xoff), ("xon", xon)))
    if not xn <= xo <= buf:
        raise ValueError(f"slow_receiver needs xon <= xoff <= buffer, got xon={xon!r}, xoff={xoff!r}, "
                         f"buffer={buffer!r}")
    mask = 0
    for p in priorities:
        mask |= 1 << _int_in("priority", p, 0, 7)
    fab.host_set_rx(host.index, True, rate_bps, buf, xo, xn, mask, _int_in("quanta", quanta, 1, 0xFFFF))


def receiver_stats(host: Host) -> dict[str, int]:
    """Slow-receiver counters of ``host``: PFC XOFF/XON it sent, frames dropped (buffer full),
    peak and current buffered bytes (all 0 without :func:`slow_receiver`)."""
    return dict(host.sim._fabric_core().host_rx_stats(host.index))


class QueueSampler:
    """Opt-in time series of switch queues, recorded in C every ``period`` into preallocated arrays.

    ``probes``: (switch, port, priority) triples. :meth:`arrays` returns numpy arrays ``t_ps`` (n,),
    ``egress_bytes`` / ``ingress_bytes`` (n, probes) and ``paused`` (n, probes, bool: the egress obeys
    a pause for that priority). Samples due after ``max_samples`` are counted in ``missed``.
    """

    def __init__(self, sim: Simulator, probes: Iterable[tuple[Switch, int, int]], period: str | int = "1us",
                 max_samples: int = 100_000) -> None:
        self.sim = sim
        self.probes = [(sw, port, prio) for sw, port, prio in probes]
        if not self.probes:
            raise ValueError("QueueSampler needs at least one (switch, port, priority) probe")
        refs = []
        for sw, port, prio in self.probes:
            sw._check_port(port)
            refs.append((sw.index, port, _int_in("priority", prio, 0, 7)))
        period_ps = parse_time(period)
        if period_ps <= 0:
            raise ValueError(f"sampling period must be > 0, got {period!r}")
        self.max_samples = _int_in("max_samples", max_samples, 1, 2**31 // len(refs))
        sim._fabric_core().sampler_config(period_ps, refs, self.max_samples)

    def arrays(self) -> dict[str, Any]:
        t, eg, ing, paused, missed = self.sim._fabric_core().sampler_read(len(self.probes), self.max_samples)
        return {"t_ps": t, "egress_bytes": eg, "ingress_bytes": ing, "paused": paused, "missed": missed}


def host_dscp_map(host: Host, dscp_map: Mapping[int, int]) -> None:
    """Set ``host``'s NIC DSCP -> priority overrides (default: all -> 3, 48 -> 6): the priority a
    QP's frames carry (from its traffic_class >> 2) and hence which received pause stops them.
    Keep it consistent with the switches' ``dscp_map``."""
    table = list(_core.switch_cfg_default()["dscp_to_prio"])
    for dscp, prio in dscp_map.items():
        key = _int_in("dscp_map key (DSCP)", dscp, 0, 63)
        table[key] = _int_in(f"dscp_map[{dscp}] (priority)", prio, 0, 7)
    host.sim._fabric_core().host_set_dscp_map(host.index, table)


def _opcode_set(opcode: Any) -> list[int]:
    from rdmasim.codec import OPCODE_NAMES

    by_name = {name: code for code, name in OPCODE_NAMES.items()}
    if isinstance(opcode, (str, int)):
        items = [opcode]
    elif isinstance(opcode, (list, tuple, set, frozenset)):
        items = list(opcode)
    else:
        raise TypeError(f"drop opcode must be a name, a number 0..255 or a list/tuple/set of them, "
                        f"not {opcode!r} ({type(opcode).__name__})")
    if not items:
        raise ValueError("drop opcode: empty set (give a name, a number 0..255 or several)")
    out = []
    for o in items:
        if isinstance(o, str):
            if o not in by_name:
                raise ValueError(f"drop opcode {o!r}: unknown; allowed names: {', '.join(sorted(by_name))} "
                                 f"(or a number 0..255)")
            out.append(by_name[o])
        else:
            out.append(check_int("drop opcode", o, 0, 255))
    return out


def add_drop_rule(direction: LinkDirection, *, nth: int | None = None, psn: int | None = None,
                  opcode: Any = None, dest_qp: int | None = None, skip: int = 0, count: int = 1) -> None:
    """Drop frames put on one link direction that match every field given (checked in C per frame).

    ``nth``: the frame's index in this direction (0-based, every kind of frame counts); ``psn``:
    BTH PSN, or the PDS PSN of an Ultra Ethernet request (0..2^24-1); ``opcode``: a BTH opcode
    name (``"ATOMIC_ACKNOWLEDGE"``, names of
    :data:`rdmasim.codec.OPCODE_NAMES`), a number 0..255 or several of them; ``dest_qp``: BTH
    destination QP. Of the frames that match, the first ``skip`` pass and the next ``count`` are
    dropped. Rules apply in the order added; a frame one rule drops is not seen by later ones.
    Drops are counted in the direction's ``stats()["dropped"]`` and traced as ``drop-list``.
    """
    fields = 0
    n = p = q = 0
    ops: list[int] = []
    if nth is not None:
        n, fields = check_int("drop nth", nth, 0, 2**64 - 1), fields | _core.DROPF_NTH
    if psn is not None:
        p, fields = check_int("drop psn", psn, 0, 2**24 - 1), fields | _core.DROPF_PSN
    if dest_qp is not None:
        q, fields = check_int("drop dest_qp", dest_qp, 0, 2**24 - 1), fields | _core.DROPF_DEST_QP
    if opcode is not None:
        ops, fields = _opcode_set(opcode), fields | _core.DROPF_OPCODE
    if not fields:
        raise ValueError("drop: give at least one of nth=, psn=, opcode=, dest_qp=")
    sk = check_int("drop skip", skip, 0, UINT32_MAX)
    c = check_int("drop count", count, 1, UINT32_MAX)
    direction.link.sim._fabric_core().link_add_drop_rule(direction.link_id, fields, sk, c, p, q, n, ops)


def mark_trim_ok(direction: LinkDirection, on: bool = True) -> None:
    """Testing hook: mark every RoCE frame put on ``direction`` from now on as one its transport
    allows switches to trim (``switch_config(trimming=True)``), as a transport with trimming
    does (RoCE never does: a RoCE NIC drops a trimmed frame, whose ICRC no longer matches)."""
    if not isinstance(on, bool):
        raise ValueError(f"mark_trim_ok on must be True or False, got {on!r}")
    direction.link.sim._fabric_core().link_mark_trim_ok(direction.link_id, on)


def drops_pending(direction: LinkDirection) -> int:
    """Frames the drop rules of ``direction`` have still to drop."""
    return int(direction.link.sim._fabric_core().link_drops_pending(direction.link_id))


def schedule_loss(direction: LinkDirection, probability: float, at: str | int) -> None:
    """From simulated time ``at`` (absolute, not before now), drop each frame put on ``direction``
    with ``probability`` (i.i.d.). Several changes apply in time order."""
    what = f"loss probability for {direction.src.name}->{direction.dst.name}"
    prob = check_real(what, probability, 0.0, 1.0)
    t = parse_time(at)
    sim = direction.link.sim
    if t < sim.now:
        raise ValueError(f"loss change at={at!r} ({t} ps) is before now ({sim.now} ps)")
    check_int("loss change at (picoseconds)", t, 0, 1 << 62)
    sim._fabric_core().link_schedule_loss(direction.link_id, prob, t)
