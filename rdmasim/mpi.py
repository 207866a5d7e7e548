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

Per-node counters (links, switch ports, QPs) are each rank's own: a rank's copy of a node another
rank runs is stale (docs/scaling.md "Several machines").
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

    @property
    def messages(self) -> int:
        """Agreements (allgathers) so far."""
        return int(self._x.calls)

    @property
    def bytes_sent(self) -> int:
        """Bytes this rank sent in them."""
        return int(self._x.bytes_sent)

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
            if self._x.error is not None:
                raise RuntimeError(f"MPI rank {self.rank}: the exchange failed: {self._x.error!r}") from self._x.error
            raise RuntimeError(str(exc)) from None
        _core.rank_flows_in(self, self._comm.allgather(_core.rank_flows_out(self)))
        return reason
