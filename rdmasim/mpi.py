"""One partitioned run over several processes: MPI ranks (mpi4py over an MPI library such as
Debian's Open MPI), started with ``mpirun -n N python script.py``.

Every rank runs the same script, so every rank builds the same simulation.  The fabric is split
into partitions as for threads (:mod:`rdmasim.partition`); rank r runs the partitions
``i`` with ``i * N // partitions == r`` (neighbouring partitions together) and the global events
(flow starts) on its copy.  Wherever the partitioned loop reads the state of every partition
(after each window's job) the ranks exchange one message each (``allgather``): the frames that
crossed to another rank's partition, each partition's flows left, last event, clock and events,
the finished flows whose QP pairs are released on every rank, failures, and the next global
event (which must be every rank's).  After each run the flow table is gathered: every rank then
holds the results of every flow, the event count and the clock of the one-process run.

After a run over ranks, a rank's copy of a node another rank runs is stale: reading a link
direction's or a switch port's counters there raises RuntimeError; :func:`gather_counters` gives
every link direction's and switch port's counters from the rank that ran it (docs/scaling.md
"Several machines").
"""

from __future__ import annotations

from typing import Any

from rdmasim import _core
from rdmasim.partition import PartitionedCore

_MISSING = ("mpi=True needs mpi4py and an MPI library: pip install 'rdmasim[mpi]' (mpi4py) and, on "
            "Debian/Ubuntu, apt-get install openmpi-bin libopenmpi-dev; then start the script with "
            "mpirun -n N python script.py")


def comm_world() -> Any:
    """``mpi4py.MPI.COMM_WORLD``; RuntimeError naming what to install when mpi4py is missing."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise RuntimeError(f"{_MISSING} ({exc})") from exc
    return MPI.COMM_WORLD


def rank(sim: Any) -> int:
    """This process's MPI rank in ``sim``'s runs (0 for a simulation without ``mpi``): print on rank 0."""
    core = sim._core
    return core.rank if isinstance(core, MpiCore) else 0


def owners(parts: int, n_ranks: int) -> list[int]:
    """The rank of each partition: contiguous blocks, ``i * n_ranks // parts``."""
    if not 1 <= n_ranks <= parts:
        raise ValueError(f"MPI ranks: {n_ranks} ranks for {parts} partitions: allowed 1..{parts} ranks "
                         f"(at least one partition per rank; set Simulator(partitions=...))")
    return [i * n_ranks // parts for i in range(parts)]


class MpiCore(PartitionedCore):
    """The C simulation of a :class:`rdmasim.Simulator` made with ``mpi=True``: each run is split
    into partitions, this rank runs its share of them, and the ranks agree after each step."""

    def __new__(cls, seed: int, *rest: Any) -> MpiCore:  # noqa: D102 (the C handle takes the seed only)
        return _core.SimCore.__new__(cls, seed)

    def __init__(self, seed: int, sim: Any, parts: int, threads: int, comm: Any) -> None:
        super().__init__(seed, sim, parts, threads)
        self._comm = comm
        self._x = _core.RankExchange(comm)
        #: this process's rank and the number of ranks
        self.rank: int = comm.Get_rank()
        self.n_ranks: int = comm.Get_size()
        self._ran = False  # a run over ranks happened: other ranks' nodes are stale here
        self._agree_ns = 0  # wall time in agreements, summed over runs
        self._exchange_ns = 0  # of which in the exchange call (mpi4py)

    def owner_of(self, kind: str, index: int) -> int:
        """The rank that runs host (kind "h") or switch ("s") ``index`` in the last split."""
        pt = self.partitioning
        if pt is None:
            return self.rank
        part = pt.host_part[index] if kind == "h" else pt.switch_part[index]
        return owners(pt.parts, self.n_ranks)[part]

    def _link_ends(self, link_id: int) -> tuple[tuple[str, int], tuple[str, int]]:
        sim = self._owner()
        for link in sim.links:
            for d in (link.ab, link.ba):
                if d.link_id == link_id:
                    return _node(d.src), _node(d.dst)
        raise ValueError(f"no link direction {link_id}")

    def link_stats(self, link: int) -> Any:
        """As SimCore.link_stats; RuntimeError after a run over ranks when another rank ran the
        direction's sender (use gather_counters)."""
        if self._ran:
            (ks, i_s), (kd, i_d) = self._link_ends(link)
            if self.owner_of(ks, i_s) != self.rank or self.owner_of(kd, i_d) != self.rank:
                raise RuntimeError(f"link direction {link}: its counters are kept by MPI ranks "
                                   f"{self.owner_of(ks, i_s)} (sender) and {self.owner_of(kd, i_d)} "
                                   f"(receiver), this is rank {self.rank}: use "
                                   f"rdmasim.mpi.gather_counters(sim)")
        return _core.SimCore.link_stats(self, link)

    @property
    def messages(self) -> int:
        """Agreements (allgathers) so far."""
        return int(self._x.calls)

    @property
    def bytes_sent(self) -> int:
        """Bytes this rank sent in them."""
        return int(self._x.bytes_sent)

    @property
    def agreement_times(self) -> dict[str, float]:
        """Wall seconds this rank spent in agreements so far (``agree``), split into the
        communicator's calls (``mpi``: waiting for the slowest rank and the transfer), the Python
        glue of the exchange call (``python``) and writing and reading the messages in C (``pack``)."""
        mpi = self._x.mpi_ns
        return {"agree": self._agree_ns / 1e9, "mpi": mpi / 1e9,
                "python": max(self._exchange_ns - mpi, 0) / 1e9,
                "pack": max(self._agree_ns - self._exchange_ns, 0) / 1e9}

    def run(self, until_ps: int = _core.INT64_MAX, max_events: int = 0, watch_host: int = -1,
            watch_cq: int = -1, watch_count: int = 0) -> int:
        """As SimCore.run, this rank's partitions only; then every rank's flow results here."""
        self._sync()
        pt = self.partitioning
        assert pt is not None
        _core.rank_set(self, self.n_ranks, self.rank, owners(pt.parts, self.n_ranks), self._x)
        why = self.par_check(max_events, watch_host)
        if why is not None:
            raise ValueError(why)
        self._x.error = None
        try:
            reason = _core.SimCore.run(self, until_ps, max_events, watch_host, watch_cq, watch_count)
        except MemoryError as exc:
            self._count_times()
            if self._x.error is not None:
                err = self._x.error
                raise RuntimeError(f"MPI rank {self.rank}: the exchange failed: {err!r}") from err
            raise RuntimeError(str(exc)) from None
        self._count_times()
        self._ran = True
        _core.rank_flows_in(self, self._comm.allgather(_core.rank_flows_out(self)))
        return reason

    def _count_times(self) -> None:
        _, agree_ns, exchange_ns = _core.rank_times(self)
        self._agree_ns += agree_ns
        self._exchange_ns += exchange_ns


def _node(x: Any) -> tuple[str, int]:
    from rdmasim.transport.handle import Host

    return ("h" if isinstance(x, Host) else "s", x.index)


class MpiFabricCore(_core.FabricCore):
    """The fabric calls of an MPI simulation: a switch port's counters only on the rank that runs
    the switch (after a run over ranks)."""

    def __init__(self, core: MpiCore) -> None:
        self._mpi = core

    def port_stats(self, sw: int, port: int) -> Any:
        """As FabricCore.port_stats; RuntimeError on another rank than the switch's (use gather_counters)."""
        core = self._mpi
        if core._ran and core.owner_of("s", sw) != core.rank:
            raise RuntimeError(f"switch {sw}: its counters are kept by MPI rank {core.owner_of('s', sw)}, "
                               f"this is rank {core.rank}: use rdmasim.mpi.gather_counters(sim)")
        return _core.FabricCore.port_stats(self, sw, port)

    def pause_stats(self, kind: int, node: int, port: int) -> Any:
        """As FabricCore.pause_stats; RuntimeError on another rank than the node's."""
        core = self._mpi
        k = "s" if kind == 1 else "h"
        if core._ran and core.owner_of(k, node) != core.rank:
            what = "switch" if k == "s" else "host"
            raise RuntimeError(f"{what} {node}: its pause counters are kept by MPI rank "
                               f"{core.owner_of(k, node)}, this is rank {core.rank}")
        return _core.FabricCore.pause_stats(self, kind, node, port)


class MpiFlowsCore(_core.FlowsCore):
    """The bulk-flow calls of an MPI simulation: after a run over ranks, a flow still running has its
    live counters split over the ranks of its two hosts, so its result and samples are refused."""

    def __init__(self, core: MpiCore) -> None:
        self._mpi = core

    def results(self, first: int, n: int) -> Any:
        """As FlowsCore.results; RuntimeError for a flow still running after a run over ranks."""
        out = _core.FlowsCore.results(self, first, n)
        if self._mpi._ran:
            running = (out["status"] == _core.FLOW_RUNNING).nonzero()[0]
            if len(running):
                raise RuntimeError(f"flow {first + int(running[0])} is still running after a run over MPI "
                                   f"ranks: its live counters are split over the ranks of its hosts; read "
                                   f"results once it finished (run_flows)")
        return out

    def sample(self, cap: int) -> Any:
        """Refused on MPI ranks (the running flows' live counters are split over the ranks)."""
        raise RuntimeError("run_flows(sample_every=...) on MPI ranks: the running flows' live counters are "
                           "split over the ranks of their hosts; sample in one process")


def gather_counters(sim: Any) -> dict[str, Any]:
    """Every link direction's counters (``links``: a list in link-id order, each as
    ``LinkDirection.stats()``) and every switch port's (``switches``: by name, as ``Switch.stats()``),
    each from the rank that ran it (a link's ``delivered`` from its receiver's), on every rank.
    A collective call: every rank calls it.  In one process: the same, read directly."""
    core = sim._core
    fab = sim._fabric_core()
    raw_link = _core.SimCore.link_stats
    raw_port = _core.FabricCore.port_stats
    mine: dict[str, Any] = {"links": {}, "delivered": {}, "switches": {}}
    mpi = isinstance(core, MpiCore)
    for link in sim.links:
        for d in (link.ab, link.ba):
            st = dict(raw_link(core, d.link_id))
            if not mpi or core.owner_of(*_node(d.src)) == core.rank:
                mine["links"][d.link_id] = st
            if not mpi or core.owner_of(*_node(d.dst)) == core.rank:
                mine["delivered"][d.link_id] = st["delivered"]
    for name, sw in sim.switches.items():
        if not mpi or core.owner_of("s", sw.index) == core.rank:
            ports = []
            for i in range(len(sw.ports)):
                d = raw_port(fab, sw.index, i)
                d.update(_core.FabricCore.pause_stats(fab, 1, sw.index, i))
                d.update(fab.credit_stats(1, sw.index, i) or {})
                ports.append(d)
            mine["switches"][name] = ports
    parts = core._comm.allgather(mine) if mpi else [mine]
    links: dict[int, dict[str, Any]] = {}
    delivered: dict[int, int] = {}
    switches: dict[str, Any] = {}
    for p in parts:
        links.update(p["links"])
        delivered.update(p["delivered"])
        switches.update(p["switches"])
    for i, st in links.items():
        st["delivered"] = delivered[i]
    return {"links": [links[i] for i in sorted(links)], "switches": {n: switches[n] for n in sim.switches}}
