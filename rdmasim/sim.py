"""The Simulator: owns the C simulation, its hosts and links, and advances time."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rdmasim import _core
from rdmasim import errors as _errors  # noqa: F401  (registers the C error classes)
from rdmasim.trace import DEFAULT_MAX_RECORDS
from rdmasim.units import format_time, parse_rate, parse_time

if TYPE_CHECKING:
    from rdmasim.fabric import Switch
    from rdmasim.trace import Trace
    from rdmasim.verbs.cq import CQ
    from rdmasim.verbs.wc import WC

DROP_NTH = 0
DROP_PSN = 1
INT64_MAX = 2**63 - 1

_MTUS = (256, 512, 1024, 2048, 4096)


class Host:
    """One host with one RoCE NIC port. Create verbs objects on it with ``Context(host)``."""

    def __init__(self, sim: Simulator, index: int, name: str) -> None:
        self.sim = sim
        self.index = index
        self.name = name
        mac, ip = sim._core.host_info(index)
        self.mac = ":".join(f"{b:02x}" for b in mac)
        self.ip = str(ipaddress.IPv4Address(ip))
        self.link: Link | None = None

    def set_congestion_control(self, algorithm: str | None = "dcqcn", params: Any = None, *,
                               notification_point: bool = True) -> None:
        """Set the NIC's congestion control for QPs created (connected) afterwards.

        ``algorithm``: ``"dcqcn"`` or ``None`` (line rate). ``params``: a ``rdmasim.cc.DcqcnParams``
        (default: the paper's). ``notification_point``: send CNPs for CE-marked packets received,
        at most one per QP per ``params.cnp_interval``.
        """
        from rdmasim.cc import DcqcnParams

        if algorithm not in (None, "none", "dcqcn"):
            raise ValueError(f"congestion control {algorithm!r}: choose 'dcqcn' or None")
        p = params if params is not None else DcqcnParams.paper()
        if not isinstance(p, DcqcnParams):
            raise TypeError(f"params must be a DcqcnParams, got {type(p).__name__}")
        kind = 1 if algorithm == "dcqcn" else 0
        self.sim._core.host_set_cc(self.index, kind, p.to_c(), notification_point,
                                   parse_time(p.cnp_interval), 48)

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

    def __init__(self, sim: Simulator, a: Any, b: Any, rate_bps: int, delay_ps: int, mtu: int,
                 first_id: int) -> None:
        self.sim = sim
        self.a = a
        self.b = b
        self.rate_bps = rate_bps
        self.delay_ps = delay_ps
        self.mtu = mtu
        self.ab = LinkDirection(self, first_id, a, b)
        self.ba = LinkDirection(self, first_id + 1, b, a)

    def fail(self, at: str | int | None = None) -> None:
        """Take both directions down now or at absolute time ``at``: frames sent are dropped
        (counted in the direction's ``dropped``) and routes are recomputed around it."""
        from rdmasim.fabric import set_link_state
        set_link_state(self, False, at)

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


class Simulator:
    """A deterministic packet-level RoCEv2 simulation.

    Time is integer picoseconds (``now``). All randomness comes from ``seed``: the same
    seed and inputs give byte-identical packet captures.
    """

    def __init__(self, seed: int = 1) -> None:
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.seed = seed
        self._core = _core.SimCore(seed)
        self.hosts: dict[str, Host] = {}
        self.links: list[Link] = []
        self.switches: dict[str, Switch] = {}
        self._fabric: Any = None
        self._flows: Any = None
        self._pcap: str | None = None
        self._trace: Trace | None = None
        # records recorded with the last event step_to stopped at, after the one it returned
        self._step_rest: tuple[int, Any] = (-1, None)
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

    def add_flows(self, table: Any, **qp_attrs: Any) -> Any:
        """Hand many flows to the C core at once (see :func:`rdmasim.flows.add_flows`)."""
        from rdmasim.flows import add_flows

        return add_flows(self, table, **qp_attrs)

    def run_flows(self, until: str | int | None = None, **kw: Any) -> Any:
        """Run until every bulk flow finished (see :func:`rdmasim.flows.run_flows`)."""
        from rdmasim.flows import run_flows

        return run_flows(self, until, **kw)

    def _fabric_core(self) -> Any:
        if self._fabric is None:
            self._fabric = _core.FabricCore(self._core)
        return self._fabric

    # ---- building ----
    def add_host(self, name: str | None = None) -> Host:
        """Add a host with one NIC port."""
        name = name if name is not None else f"h{len(self.hosts)}"
        if name in self.hosts:
            raise ValueError(f"a host named {name!r} already exists")
        idx = self._core.host_add()
        host = Host(self, idx, name)
        self.hosts[name] = host
        return host

    def add_switch(self, name: str | None = None, **config: Any) -> Switch:
        """Add a switch; ``config`` as for :func:`rdmasim.fabric.switch_config` (ports, buffer,
        headroom, threshold, lossless, ecn, scheduler, ...)."""
        from rdmasim.fabric import Switch, switch_config
        name = name if name is not None else f"s{len(self.switches)}"
        if name in self.switches or name in self.hosts:
            raise ValueError(f"a node named {name!r} already exists")
        cfg = switch_config(**config)
        idx = self._fabric_core().switch_add(cfg)
        sw = Switch(self, idx, name, cfg)
        self.switches[name] = sw
        return sw

    def connect(self, a: Host | Switch, b: Host | Switch, rate: str | int = "100Gbps",
                delay: str | int = "1us", mtu: int = 4096) -> Link:
        """Connect two nodes (hosts or switches) with a full-duplex link.

        A host has one port; a switch uses its next free port. ``mtu`` is the largest RoCE path
        MTU (payload bytes per packet) the link carries: one of 256, 512, 1024, 2048, 4096.
        """
        from rdmasim.fabric import Switch, node_ref
        if mtu not in _MTUS:
            raise ValueError(f"mtu {mtu!r} must be one of {_MTUS} (IB path MTU, payload bytes)")
        for end in (a, b):
            if not isinstance(end, (Host, Switch)) or end.sim is not self:
                raise ValueError(f"connect() takes hosts or switches of this simulator, got {end!r}")
        rate_bps = parse_rate(rate)
        delay_ps = parse_time(delay)
        if isinstance(a, Host) and isinstance(b, Host):
            first = self._core.link_connect(a.index, b.index, rate_bps, delay_ps)
        else:
            first = self._fabric_core().connect(*node_ref(a), *node_ref(b), rate_bps, delay_ps)
        link = Link(self, a, b, rate_bps, delay_ps, mtu, first)
        for end in (a, b):
            if isinstance(end, Switch):
                end.ports.append(link)
            else:
                end.link = link
        self.links.append(link)
        return link

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

    # ---- capture ----
    def capture(self, path: str, snaplen: int | None = None, links: Any = None) -> None:
        """Write frames put on links to a pcap file (nanosecond timestamps, at transmit start).

        ``links=None`` (the default) records every link direction, including links connected later:
        in a switched fabric a frame then appears once per hop. ``links=[...]`` records only the
        chosen ones, each frame once per chosen direction it crosses: ``Link`` objects (both
        directions), ``link.ab`` / ``link.ba`` (one), hosts (their NIC link) or ``(switch, port)``
        pairs (see :func:`rdmasim.capture.link_ids`).

        ``snaplen`` (1..65535 bytes) keeps only the first bytes of each frame, as ``tcpdump -s``
        does: each record still carries the frame's real length, and Wireshark decodes the headers
        (e.g. 128 keeps Ethernet, IP, UDP, BTH and every extension header). It costs far less than
        whole frames: no payload copy and no ICRC for the bytes left out. ``None``: whole frames.

        A file that cannot be written raises OSError naming it; a write error during a run (a full
        disk) stops the capture, which then holds exactly the frames written, and the run raises
        OSError when it returns (the simulation itself is not affected).

        Every return of ``run``, ``wait_for``, ``run_until_idle``, ``step`` and ``run_flows``
        leaves the file holding every frame so far, so it can be opened (Wireshark, tshark, scapy)
        while the simulation goes on; ``close_capture`` ends it.
        """
        if snaplen is not None and (isinstance(snaplen, bool) or not isinstance(snaplen, int)
                                    or not 1 <= snaplen <= 65535):
            raise ValueError(f"capture snaplen={snaplen!r}: allowed 1..65535 bytes, or None for whole frames")
        from rdmasim.capture import link_ids
        ids = None if links is None else link_ids(self, links)
        self._core.pcap_open(path, snaplen or 0)
        self._fabric_core().pcap_links(ids)
        self._pcap = str(path)

    def close_capture(self) -> None:
        """Flush and close the pcap file."""
        self._core.pcap_close()
        self._pcap = None

    # ---- trace ----
    def trace(self, max_records: int | None = DEFAULT_MAX_RECORDS) -> Trace:
        """Start recording packet and verbs events (see rdmasim.trace); returns the Trace.

        ``max_records`` caps the records kept (memory is 64 bytes each; default
        ``rdmasim.trace.DEFAULT_MAX_RECORDS``, 2 million); events past the cap are counted in
        ``Trace.not_recorded`` and a ``TraceRecordsNotKept`` warning says how many. ``None``: no
        cap (memory grows with the run). Starting a new trace ends the previous one.
        """
        from rdmasim.trace import Trace

        if max_records is not None and (isinstance(max_records, bool) or not isinstance(max_records, int)):
            raise TypeError(f"max_records must be an int >= 1 or None (no cap), not {max_records!r}")
        if self._trace is not None:
            self._trace.stop()
        self._trace = Trace(self, max_records)
        return self._trace

    # ---- time ----
    @property
    def now(self) -> int:
        """Current simulated time in picoseconds."""
        return int(self._core.now_ps)

    @property
    def events(self) -> int:
        """Events processed so far."""
        return int(self._core.events)

    def run(self, until: str | int | None = None, *,
            progress: Callable[[int, int], Any] | None = None, chunk_events: int = 1_000_000) -> int:
        """Advance time to ``until`` (absolute, e.g. ``"10ms"`` or ps), or until idle if None.

        ``progress(now_ps, events)`` is called every ``chunk_events`` events. Returns ``now``.
        """
        until_ps = INT64_MAX if until is None else parse_time(until)
        if until_ps < self.now:
            raise ValueError(f"until={format_time(until_ps)} is before now={format_time(self.now)}")
        max_events = chunk_events if progress else 0
        while True:
            reason = self._core.run(until_ps, max_events)
            # a scripted peer's frames wait for it (ScriptedPeer.run drains them); keep going
            if reason in (_core.RUN_PEER, _core.RUN_STEP):
                continue
            if reason != _core.RUN_MAX_EVENTS:
                break
            assert progress is not None
            progress(self.now, self.events)
        if progress:
            progress(self.now, self.events)
        return self.now

    def step(self, events: int = 1) -> int:
        """Process at most ``events`` events (step-through). Returns ``now``."""
        if events < 1:
            raise ValueError(f"events must be >= 1, got {events}")
        self._core.run(INT64_MAX, events)
        return self.now

    def step_frame(self, until: str | int | None = None) -> bool:
        """Run until the next frame is put on a link (and that event finishes). Returns False if
        the network went idle (or ``until`` passed) first.

        Posting work to an idle port puts its first frame on the wire at once (inside
        ``post_send``), so the first ``step_frame()`` after a post stops at the frame after it.
        """
        until_ps = INT64_MAX if until is None else parse_time(until)
        self._core.stop_after_next_frame()
        return self._core.run(until_ps) == _core.RUN_STEP

    def step_to(self, kind: str, until: str | int | None = None,
                max_events: int = 10_000_000) -> Any:
        """Run until the next event of ``kind`` has happened, and stop there (teaching).

        ``kind`` is one of ``rdmasim.stepping.STEP_KINDS``: ``"frame"``, ``"arrival"``, ``"drop"``,
        ``"nak"``, ``"rnr-nak"``, ``"timeout"``, ``"retry"``, ``"accept"``, ``"completion"``,
        ``"error"``. Unlike :meth:`step_frame`, it stops where the retransmit timer fires or an RNR
        NAK starts a wait. Returns that event's trace record (``rec["t_ps"]``, ``rec["psn"]``, ...;
        fields as in :mod:`rdmasim.trace`), or None when the simulation goes idle or ``until``
        passes first. Starts a trace (:meth:`trace`) if none is running; the events stepped over
        stay in it. Raises RuntimeError after ``max_events`` events without one.
        """
        from rdmasim.stepping import step_to

        until_ps = INT64_MAX if until is None else parse_time(until)
        if isinstance(max_events, bool) or not isinstance(max_events, int) or max_events < 1:
            raise ValueError(f"max_events must be an int >= 1, got {max_events!r}")
        return step_to(self, kind, until_ps, max_events)

    def run_until_idle(self) -> int:
        """Run until no event is left (every transfer finished or failed)."""
        return self.run(None)

    def wait_for(self, cq: CQ, n: int = 1, timeout: str | int | None = "10s") -> list[WC]:
        """Run until ``cq`` holds ``n`` completions, then poll and return them.

        Raises TimeoutError if ``timeout`` of simulated time passes first, and RuntimeError if
        the network goes idle with fewer completions (nothing more can happen).
        """
        from rdmasim.verbs._checks import U32, instance, int_in, same_sim
        from rdmasim.verbs.cq import CQ

        instance("wait_for cq", cq, CQ)
        same_sim("wait_for cq", cq._host.sim, self)
        n = int_in("wait_for n", n, 1, U32)
        if cq._closed:
            raise _errors.PyverbsUserError(f"wait_for: {cq!r} is destroyed")
        start = self.now
        deadline = INT64_MAX if timeout is None else start + parse_time(timeout)
        reason, have = self._run_until_cq(cq, n, deadline)
        if have < n:
            waited = format_time(self.now - start)
            if reason == _core.RUN_IDLE:
                raise RuntimeError(
                    f"the simulation went idle after {waited} with {have} of {n} completions on "
                    f"{cq!r}: nothing is in flight, so no more can arrive (was work posted?)"
                )
            raise TimeoutError(f"waited {waited} of simulated time; {have} of {n} completions on {cq!r}")
        _, wcs = cq.poll(n)
        return wcs

    def _run_until_cq(self, cq: CQ, n: int, deadline_ps: int) -> tuple[int, int]:
        """Run until ``cq`` holds ``n`` completions, the simulation is idle or ``deadline_ps``
        passes (the one way ``wait_for`` and ``CQ.poll`` let time pass). Returns the run's stop
        reason (``_core.RUN_*``) and the completions the CQ holds."""
        while True:
            reason = self._core.run(deadline_ps, 0, cq._host.index, cq._handle, n)
            if reason not in (_core.RUN_PEER, _core.RUN_STEP):
                break
        return reason, int(self._core.cq_count(cq._host.index, cq._handle))

    def pool_stats(self) -> dict[str, int]:
        """Packet pool use: packets in flight now, peak, and allocated slots."""
        return dict(self._core.pool_stats())

    def __repr__(self) -> str:
        return (f"Simulator(seed={self.seed}, now={format_time(self.now)}, hosts={list(self.hosts)}, "
                f"events={self.events})")
