"""The simulation as the verbs layer sees it: the handle on the C core, its hosts and links.

:class:`SimHandle` owns the core objects (``_core.SimCore`` and the fabric and flows cores made
from it), looks hosts up, tells time and runs the core until a CQ holds completions;
:class:`Host`, :class:`Link` and :class:`LinkDirection` are the network's ends and wires.
:class:`rdmasim.sim.Simulator` extends SimHandle with everything a user drives (building, capture,
tracing, running). The verbs objects (``rdmasim.verbs``) and ``rdmasim.capture`` need only what is
here, so they import this module, never ``rdmasim.sim``; this module imports none of them (only
``_core``, ``errors``, ``units`` and, inside methods, ``cc``, ``fabric`` and ``report``).
Users import ``Host``, ``Link`` and ``LinkDirection`` from ``rdmasim`` or ``rdmasim.sim``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rdmasim import _core
from rdmasim import errors as _errors  # noqa: F401  (registers the C error classes)
from rdmasim.units import format_time, parse_time

#: the link layers a fabric can have, in rs_link_layer order: RoCEv2 over Ethernet, InfiniBand
LINK_LAYERS = ("roce", "ib")

if TYPE_CHECKING:  # annotations only: Host.sim is the Simulator that made it, a SimHandle
    from rdmasim._protocols import WatchedCQ as CQ


class SimHandle:
    """One simulation's C core and its hosts: the part of a :class:`rdmasim.sim.Simulator` that
    the verbs objects use (``host.sim`` is the Simulator, which is a SimHandle).

    Time is integer picoseconds (``now``). All randomness comes from ``seed``.
    """

    def _make_core(self, seed: int) -> Any:
        """The C simulation's handle (a Simulator split into partitions makes its own)."""
        return _core.SimCore(seed)

    def __init__(self, seed: int = 1, link_layer: str = "roce") -> None:
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if link_layer not in LINK_LAYERS:
            raise ValueError(f"link_layer {link_layer!r}: allowed {', '.join(map(repr, LINK_LAYERS))}")
        self.seed = seed
        self._core = self._make_core(seed)
        #: the fabric's framing: "roce" (RoCEv2 over Ethernet) or "ib" (InfiniBand, docs/infiniband.md)
        self.link_layer = link_layer
        if link_layer != "roce":
            self._core.set_link_layer(LINK_LAYERS.index(link_layer))
        self._fabric: Any = None
        self._flows: Any = None
        self.hosts: dict[str, Host] = {}
        #: ``CQ.poll()`` on an empty CQ runs the simulation until a completion for it is due
        #: (docs/pyverbs.md "Time"); False: poll never advances time, drive it with ``run``.
        self.auto_advance = True
        #: the most simulated time one ``CQ.poll()`` runs before it returns 0 (a poll loop goes on)
        self.poll_slice: str | int = "10ms"
        #: polls of an empty CQ of an idle simulation, with nothing happening in between, after
        #: which ``CQ.poll()`` raises instead of returning 0 (a loop waiting for nothing)
        self.idle_poll_limit = 1000

    def _flows_core(self) -> Any:
        if self._flows is None:
            self._flows = _core.FlowsCore(self._core)
        return self._flows

    def _fabric_core(self) -> Any:
        if self._fabric is None:
            self._fabric = _core.FabricCore(self._core)
        return self._fabric

    @property
    def now(self) -> int:
        """Current simulated time in picoseconds."""
        return int(self._core.now_ps)

    @property
    def events(self) -> int:
        """Events processed so far."""
        return int(self._core.events)

    def host_by_index(self, index: int) -> Host:
        """The host with C index ``index`` (KeyError if none)."""
        for h in self.hosts.values():
            if h.index == index:
                return h
        raise KeyError(index)

    def host_by_gid(self, gid: str) -> Host:
        """The host whose GID (or IPv4 address) is ``gid``; ValueError naming the known GIDs."""
        for h in self.hosts.values():
            if gid in (h.gid, h.ip):
                return h
        raise ValueError(f"no host has GID {gid!r} (known: {[h.gid for h in self.hosts.values()]})")

    def _run_until_cq(self, cq: CQ, n: int, deadline_ps: int) -> tuple[int, int]:
        """Run until ``cq`` holds ``n`` completions, the simulation is idle or ``deadline_ps``
        passes (the one way ``wait_for`` and ``CQ.poll`` let time pass). Returns the run's stop
        reason (``_core.RUN_*``) and the completions the CQ holds."""
        while True:
            reason = self._core.run(deadline_ps, 0, cq._host.index, cq._handle, n)
            if reason not in (_core.RUN_PEER, _core.RUN_STEP):
                break
        return reason, int(self._core.cq_count(cq._host.index, cq._handle))


class Host:
    """One host with one RoCE NIC port. Create verbs objects on it with ``Context(host)``."""

    def __init__(self, sim: SimHandle, index: int, name: str) -> None:
        self.sim = sim
        self.index = index
        self.name = name
        mac, ip = sim._core.host_info(index)
        self.mac = ":".join(f"{b:02x}" for b in mac)
        self.ip = str(ipaddress.IPv4Address(ip))
        lid, gid = sim._core.host_ib_addr(index)
        #: InfiniBand local identifier (1-based, unique per port) and port GID (fe80::/64 + GUID): the
        #: LRH addresses on an IB fabric (verbs address hosts by ``gid`` on either link layer)
        self.lid: int = lid
        self.ib_gid = str(ipaddress.IPv6Address(gid))
        self.link: Link | None = None
        self._nic_profile: Any = None  # rdmasim.nic.NicProfile; None: the default ("rxe")

    def set_congestion_control(self, algorithm: Any = "dcqcn", params: Any = None, *,
                               notification_point: bool | None = None) -> None:
        """Set the NIC's congestion control for QPs created (connected) afterwards.

        ``algorithm``: a name of ``rdmasim.cc.ALGORITHM_NAMES`` (``"dcqcn"``, ...), a registered C
        plug-in's (``rdmasim.cc.register_plugin``, or the plug-in it returned; ``params`` then a dict
        of its parameters) or ``None`` / ``"none"`` (line rate). ``params``: that algorithm's parameters class
        (``rdmasim.cc.params_class(name)``, e.g. ``DcqcnParams``; default: its defaults, and for
        DCQCN the preset of the host's NIC profile with the profile's CNP interval, so set the
        profile first). ``notification_point``: send CNPs for CE-marked packets received, at most
        one per QP per ``cnp_interval`` (DCQCN's, else the NIC profile's); default: on unless the
        algorithm reacts to ECN through ACKs instead of CNPs.
        """
        from rdmasim import cc
        from rdmasim.cc.plugin import Plugin, get_plugin

        if isinstance(algorithm, Plugin):  # what register_plugin returned
            name, plugin = algorithm.name, algorithm
        else:
            name = "none" if algorithm is None else algorithm
            plugin = get_plugin(name) if name != "none" else None
        if plugin is not None:  # a C plug-in (rdmasim.cc_plugin): params a dict of overrides
            if params is not None and not isinstance(params, dict):
                raise TypeError(f"params for plug-in {name!r} must be a dict of its parameters "
                                f"({list(plugin.params)}), got {type(params).__name__}")
            p, kind, blob = None, plugin.kind_in(self.sim._core), plugin.params_bytes(params)
            uses_cnp = plugin.uses_cnp
        elif name != "none":
            algo = cc.algorithm(name)
            kinds = _core.cc_kinds()
            if name not in kinds or not kinds[name][1]:
                raise ValueError(f"congestion control {name!r} is not built in")
            if params is not None:
                p = params
            elif name == "dcqcn":
                p = self.nic_profile.dcqcn_params()
            else:
                p = cc.default_params(name)
            if not isinstance(p, algo.params_class):
                raise TypeError(f"params for {name!r} must be a {algo.params_class.__name__}, "
                                f"got {type(p).__name__}")
            kind, blob, uses_cnp = kinds[name][0], _core.cc_params_bytes(name, p.to_c()), algo.uses_cnp
        else:
            if params is not None and not isinstance(params, cc.DcqcnParams):
                raise TypeError(f"params without an algorithm must be None or a DcqcnParams (its "
                                f"cnp_interval), got {type(params).__name__}")
            p, kind, blob, uses_cnp = params, 0, None, True
        interval = getattr(p, "cnp_interval", None)
        if interval is None:
            interval = self.nic_profile.cnp_interval
        np_on = uses_cnp if notification_point is None else notification_point
        self.sim._core.host_set_cc(self.index, kind, blob, np_on, parse_time(interval), 48)

    def set_nic_profile(self, profile: Any = "rxe", **overrides: Any) -> Any:
        """Set the NIC's profile (``rdmasim.nic``: ``"rxe"`` default, ``"cx6"``) for this host, with
        optional per-constant overrides; QPs already created see the new constants too. Returns
        the :class:`rdmasim.nic.NicProfile` applied."""
        from rdmasim.transport import nic

        p = nic.get_profile(profile, **overrides)
        nic.apply(self.sim, self.index, p)
        self._nic_profile = p
        return p

    @property
    def nic_profile(self) -> Any:
        """The :class:`rdmasim.nic.NicProfile` this host's NIC runs with (``"rxe"`` unless set)."""
        from rdmasim.transport import nic

        return self._nic_profile if self._nic_profile is not None else nic.get_profile("rxe")

    @property
    def gid(self) -> str:
        """RoCEv2 GID of the port: the IPv4-mapped IPv6 address."""
        return f"::ffff:{self.ip}"

    def pause_stats(self) -> dict[str, Any]:
        """PFC frames this NIC port received and the time each priority was paused (ps); a dict that
        prints as a table (:class:`rdmasim.report.Report`)."""
        from rdmasim.fabric import NODE_HOST
        from rdmasim.report import Report

        return Report(f"host {self.name}: PFC pause received",
                      dict(self.sim._fabric_core().pause_stats(NODE_HOST, self.index, 0)))

    def __repr__(self) -> str:
        return f"Host({self.name!r}, ip={self.ip}, mac={self.mac})"


@dataclass
class LinkDirection:
    """One direction of a link; ``link_id`` indexes the C link table."""

    link: Link
    link_id: int
    src: Host
    dst: Host
    #: this direction's line rate (b/s); :meth:`set_rate` changes it
    rate_bps: int = 0

    def set_loss(self, probability: float, at: str | int | None = None) -> None:
        """Drop each frame in this direction independently with ``probability`` (0..1): now, or
        for frames put on the wire from simulated time ``at`` (e.g. ``"20us"``) on."""
        if at is not None:
            from rdmasim.fabric import schedule_loss
            schedule_loss(self, probability, at)
            return
        if (isinstance(probability, bool) or not isinstance(probability, (int, float))
                or not 0.0 <= probability <= 1.0):
            raise ValueError(
                f"loss probability for {self.src.name}->{self.dst.name} must be in [0, 1], "
                f"got {probability!r}"
            )
        self.link.sim._core.link_set_loss(self.link_id, float(probability))

    def set_rate(self, rate: str | int) -> None:
        """Run this direction at ``rate`` (``"25Gbps"`` or b/s, > 0) from now on: a slow NIC or a
        degraded link. Frames already on the wire keep their time; DCQCN takes a QP's line rate when
        the QP is created, so set it before the flows that should see it start."""
        from rdmasim.units import parse_rate

        bps = parse_rate(rate)
        if bps <= 0:
            raise ValueError(f"rate for {self.src.name}->{self.dst.name} must be positive, got {rate!r}")
        self.link.sim._fabric_core().link_set_rate(self.link_id, bps)
        self.rate_bps = bps

    def set_gilbert_elliott(self, p_good_to_bad: float, p_bad_to_good: float, loss_in_good: float = 0.0,
                            loss_in_bad: float = 1.0) -> None:
        """Bursty loss: a Gilbert-Elliott chain stepped per frame (replaces i.i.d. loss here).

        Mean burst length is 1 / p_bad_to_good frames; the long-run loss rate is
        (p_gb * loss_in_bad + p_bg * loss_in_good) / (p_gb + p_bg).
        """
        for name, v in (("p_good_to_bad", p_good_to_bad), ("p_bad_to_good", p_bad_to_good),
                        ("loss_in_good", loss_in_good), ("loss_in_bad", loss_in_bad)):
            if not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} for {self.src.name}->{self.dst.name} must be in [0, 1], got {v!r}")
        self.link.sim._core.link_set_gilbert(self.link_id, float(p_good_to_bad), float(p_bad_to_good),
                                             float(loss_in_good), float(loss_in_bad))

    def drop(self, *, nth: int | None = None, psn: int | None = None, opcode: Any = None,
             dest_qp: int | None = None, skip: int = 0, count: int = 1) -> None:
        """Drop chosen frames in this direction: those matching every field given (``nth`` frame
        sent here, 0-based, ACKs count; BTH ``psn``; ``opcode`` name(s) or number(s); BTH
        ``dest_qp``), letting the first ``skip`` matches pass and dropping the next ``count``.
        E.g. ``link.ba.drop(opcode="ATOMIC_ACKNOWLEDGE", dest_qp=0x12)`` drops the first atomic
        acknowledgement to QP 0x12 (see :func:`rdmasim.fabric.add_drop_rule`)."""
        from rdmasim.fabric import add_drop_rule
        add_drop_rule(self, nth=nth, psn=psn, opcode=opcode, dest_qp=dest_qp, skip=skip, count=count)

    def stats(self) -> dict[str, int]:
        """Frames, bytes, dropped, delivered and busy time (ps) in this direction."""
        return dict(self.link.sim._core.link_stats(self.link_id))


class Link:
    """A full-duplex point-to-point link between two nodes (hosts or switches)."""

    def __init__(self, sim: SimHandle, a: Any, b: Any, rate_bps: int, delay_ps: int, mtu: int,
                 first_id: int) -> None:
        self.sim = sim
        self.a = a
        self.b = b
        self.rate_bps = rate_bps
        self.delay_ps = delay_ps
        self.mtu = mtu
        self.ab = LinkDirection(self, first_id, a, b, rate_bps)
        self.ba = LinkDirection(self, first_id + 1, b, a, rate_bps)

    def fail(self, at: str | int | None = None) -> None:
        """Take both directions down now or at absolute time ``at``: frames sent are dropped
        (counted in the direction's ``dropped``) and routes are recomputed around it."""
        from rdmasim.fabric import set_link_state
        set_link_state(self, False, at)

    def set_rate(self, rate: str | int) -> None:
        """Run both directions at ``rate`` from now on (see :meth:`LinkDirection.set_rate`);
        ``rate_bps`` follows."""
        self.ab.set_rate(rate)
        self.ba.set_rate(rate)
        self.rate_bps = self.ab.rate_bps

    def recover(self, at: str | int | None = None) -> None:
        """Bring the link back up now or at absolute time ``at``; routes are recomputed."""
        from rdmasim.fabric import set_link_state
        set_link_state(self, True, at)

    def direction(self, src: Any) -> LinkDirection:
        """The direction that starts at ``src`` (a Host or its name)."""
        name = src if isinstance(src, str) else src.name
        if name == self.a.name:
            return self.ab
        if name == self.b.name:
            return self.ba
        raise ValueError(f"{name!r} is not an end of this link ({self.a.name}, {self.b.name})")

    def __repr__(self) -> str:
        return (f"Link({self.a.name}<->{self.b.name}, {self.rate_bps / 1e9:g} Gb/s, "
                f"{format_time(self.delay_ps)}, mtu={self.mtu})")
