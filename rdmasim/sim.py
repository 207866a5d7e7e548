"""The Simulator: builds a simulation (hosts, switches, links), captures and traces it, and advances
time. It extends the core handle of ``rdmasim._handle`` (``SimHandle``), which the verbs objects use."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rdmasim import _core
from rdmasim import errors as _errors  # noqa: F401  (registers the C error classes)
from rdmasim.trace import DEFAULT_MAX_RECORDS
from rdmasim.transport.handle import Host, Link, LinkDirection, SimHandle
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
#: pcap link type of an InfiniBand fabric's capture, by ``capture(ib_format=...)``
_IB_PCAP_LINKTYPES = {"infiniband": 247, "erf": 197}

__all__ = ["DROP_NTH", "DROP_PSN", "INT64_MAX", "Host", "Link", "LinkDirection", "Simulator"]


class Simulator(SimHandle):
    """A deterministic packet-level RoCEv2 (or InfiniBand) simulation.

    Time is integer picoseconds (``now``). All randomness comes from ``seed``: the same
    seed and inputs give byte-identical packet captures.
    """

    def __init__(self, seed: int = 1, link_layer: str = "roce", threads: int = 1,
                 partitions: int | None = None, mpi: Any = False) -> None:
        """``link_layer``: ``"roce"`` (RoCEv2 over Ethernet, the default) or ``"ib"`` (native
        InfiniBand framing: LRH / BTH / ICRC / VCRC, LIDs, no PFC; docs/infiniband.md).
        ``partitions``: split every run into this many partitions of the fabric (rdmasim.partition),
        each with its own event queue, run in conservative windows.  Simultaneous events are
        ordered by a tie-break that does not depend on the split: any number of partitions, 1
        included, gives the results of a run without ``partitions`` (docs/scaling.md#parallel-runs).
        ``threads``: threads the partitions run on (1..partitions; the caller's thread is one of
        them); ``threads=N`` alone splits the runs into N partitions.  The results are those of
        the same partitions on one thread.
        ``mpi``: True runs the partitions over the MPI ranks of ``mpirun -n N python script.py``
        (every rank runs the script; ``partitions`` defaults to N; :mod:`rdmasim.mpi`,
        docs/scaling.md#several-machines), RuntimeError naming what to install without mpi4py; or
        an mpi4py communicator to run over instead of ``COMM_WORLD``."""
        if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 4096:
            raise ValueError(f"threads {threads!r}: allowed an int in 1..4096")
        if partitions is not None and (isinstance(partitions, bool) or not isinstance(partitions, int)
                                       or not 1 <= partitions <= 4096):
            raise ValueError(f"partitions {partitions!r}: allowed None or an int in 1..4096")
        self._mpi_comm: Any = None
        if mpi is not False and mpi is not None:
            from rdmasim.mpi import comm_world

            self._mpi_comm = comm_world() if mpi is True else mpi
            if partitions is None:
                partitions = max(threads, self._mpi_comm.Get_size())
        if partitions is None and threads > 1:
            partitions = threads
        if partitions is not None and threads > partitions:
            raise ValueError(f"threads {threads}: allowed 1..{partitions} (one partition per thread at "
                             f"least; partitions = {partitions})")
        self._partitions = partitions or 1
        self._partitioned = partitions is not None
        self._threads = threads
        super().__init__(seed, link_layer)
        if self._mpi_comm is not None:
            from rdmasim.mpi import MpiFabricCore, MpiFlowsCore

            self._fabric = MpiFabricCore(self._core)
            self._flows = MpiFlowsCore(self._core)
        self.links: list[Link] = []
        self.switches: dict[str, Switch] = {}
        self._pcap: str | None = None
        self._trace: Trace | None = None
        # records recorded with the last event step_to stopped at, after the one it returned
        self._step_rest: tuple[int, Any] = (-1, None)

    def _make_core(self, seed: int) -> Any:
        if self._mpi_comm is not None:
            from rdmasim.mpi import MpiCore

            return MpiCore(seed, self, self._partitions, self._threads, self._mpi_comm)
        if self._partitioned:
            from rdmasim.partition import PartitionedCore

            return PartitionedCore(seed, self, self._partitions, self._threads)
        return super()._make_core(seed)

    def add_flows(self, table: Any, **qp_attrs: Any) -> Any:
        """Hand many flows to the C core at once (see :func:`rdmasim.flows.add_flows`)."""
        from rdmasim.workload.flows import add_flows

        return add_flows(self, table, **qp_attrs)

    def run_flows(self, until: str | int | None = None, **kw: Any) -> Any:
        """Run until every bulk flow finished (see :func:`rdmasim.flows.run_flows`)."""
        from rdmasim.workload.flows import run_flows

        return run_flows(self, until, **kw)

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

    # ---- capture ----
    def capture(self, path: str, snaplen: int | None = None, links: Any = None,
                ib_format: str = "infiniband") -> None:
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

        On an InfiniBand fabric (``link_layer="ib"``) packets start at the LRH: ``ib_format``
        ``"infiniband"`` writes pcap LINKTYPE_INFINIBAND (247); ``"erf"`` wraps each packet in an
        ERF InfiniBand record (LINKTYPE_ERF, 197), the form Wireshark decodes (it has no dissector
        for 247; docs/infiniband.md). Both read back with :func:`rdmasim.capture.read_pcap`.
        """
        if ib_format not in _IB_PCAP_LINKTYPES:
            allowed = ", ".join(map(repr, _IB_PCAP_LINKTYPES))
            raise ValueError(f"capture ib_format={ib_format!r}: allowed {allowed}")
        if snaplen is not None and (isinstance(snaplen, bool) or not isinstance(snaplen, int)
                                    or not 1 <= snaplen <= 65535):
            raise ValueError(f"capture snaplen={snaplen!r}: allowed 1..65535 bytes, or None for whole frames")
        from rdmasim.capture import link_ids
        ids = None if links is None else link_ids(self, links)
        if ib_format != "infiniband" and self.link_layer != "ib":
            raise ValueError(f"capture ib_format={ib_format!r} needs an InfiniBand fabric (link_layer 'ib'), "
                             f"this one is {self.link_layer!r}")
        linktype = _IB_PCAP_LINKTYPES[ib_format] if self.link_layer == "ib" else 0
        self._core.pcap_open(path, snaplen or 0, linktype)
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

    def pool_stats(self) -> dict[str, int]:
        """Packet pool use: packets in flight now, peak, and allocated slots."""
        return dict(self._core.pool_stats())

    def trim_pool(self) -> bool:
        """Give the packet pool's memory back to the system if no packet is in flight (after
        ``run_flows`` finished every flow); False, and nothing changes, while packets are in
        flight. The pool grows again as packets are sent; results do not change."""
        return bool(self._core.pool_trim())

    def __repr__(self) -> str:
        return (f"Simulator(seed={self.seed}, now={format_time(self.now)}, hosts={list(self.hosts)}, "
                f"events={self.events})")
