"""Split a fabric into partitions for a parallel run: which node runs where, and the lookahead.

A conservative parallel run gives each partition its own event queue; a frame that crosses to
another partition arrives no sooner than its link's propagation delay after it was sent, so the
partitions may run ahead of each other by the smallest delay of a link between two partitions (the
*lookahead*) without missing anything.  A good split cuts few links and balances the hosts.

The split: the fabric's top tier (the switches farthest from any host) is taken away; what stays
connected below it is one group — a pod of a fat tree, a leaf and its hosts in a leaf-spine, a host
alone under a single switch.  Groups go to partitions in order of their lowest host index, each
partition taking groups until it holds its share of the hosts; the top-tier switches are dealt out
in turn.  Every node belongs to one partition, and a host always shares its partition with its
first switch.
"""

from __future__ import annotations

import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

from rdmasim import _core
from rdmasim.transport.handle import Host


@dataclass(frozen=True)
class Partitioning:
    """Where each node runs: ``host_part[i]`` for host index i, ``switch_part[j]`` for switch index j;
    ``lookahead_ps`` is the smallest propagation delay of a link whose ends are in different
    partitions (None when no link is cut), ``cut_links`` how many links are cut."""

    parts: int
    host_part: tuple[int, ...]
    switch_part: tuple[int, ...]
    lookahead_ps: int | None
    cut_links: int

    def hosts_in(self, p: int) -> int:
        """Hosts of partition ``p``."""
        return sum(1 for x in self.host_part if x == p)


@dataclass(frozen=True)
class ParallelStats:
    """What the partitioned runs of a simulation did, summed over its runs (since the fabric was last
    partitioned).  Counts of the model and the split, not of the machine: the same on any load.

    A *job* is a step every partition runs (a lookahead window, the run up to a global event, the
    pass that stops at the last flow's finish); with threads, the threads take its partitions and
    the caller waits for all (``barriers``: two synchronisations per job).  ``critical_path`` sums
    over jobs what any assignment of the partitions to the run's threads takes at least: the events
    of the busiest partition or an equal share of all, whichever is more;
    ``critical_path_partitions`` the busiest partition's (one thread per partition).  Global events
    run on one thread between jobs and count whole in both."""

    runs: int
    jobs: int
    barriers: int
    windows: int
    global_events: int
    events: int  # handled in jobs (by the partitions)
    critical_path: int
    critical_path_partitions: int
    cpu_jobs_ns: int  # CPU time of the partitions in jobs, each thread's own clock
    cpu_critical_path_ns: int  # over jobs, the most CPU time one thread spent in it
    cpu_serial_ns: int  # CPU time of the calling thread between jobs
    part_events: tuple[int, ...]

    @property
    def total_events(self) -> int:
        """Every event handled: the partitions' and the global ones."""
        return self.events + self.global_events

    @property
    def speedup_bound(self) -> float:
        """Total events over the critical path: the speed-up over one thread that the run's threads
        can reach at most with these jobs (free synchronisation, every event of equal cost)."""
        return self.total_events / max(self.critical_path + self.global_events, 1)

    @property
    def speedup_bound_partitions(self) -> float:
        """As :attr:`speedup_bound` with one thread per partition."""
        return self.total_events / max(self.critical_path_partitions + self.global_events, 1)

    @property
    def cpu_speedup_bound(self) -> float:
        """As :attr:`speedup_bound` in CPU time: the partitions' CPU time plus the serial part over the
        CPU critical path plus the serial part.  Each thread's clock runs only while the thread
        runs, so a loaded machine changes it little (through shared caches); waits at barriers are
        not in it."""
        serial = self.cpu_serial_ns
        return (self.cpu_jobs_ns + serial) / max(self.cpu_critical_path_ns + serial, 1)

    @property
    def events_per_job(self) -> float:
        """Events the partitions handled per job, on average."""
        return self.events / max(self.jobs, 1)

    @property
    def balance(self) -> float:
        """The busiest partition's events over the mean (1.0: equal shares)."""
        if not self.part_events or not sum(self.part_events):
            return 1.0
        return max(self.part_events) * len(self.part_events) / sum(self.part_events)


def parallel_stats(sim: Any) -> ParallelStats | None:
    """What the partitioned runs of ``sim`` (a :class:`rdmasim.Simulator` made with ``partitions`` or
    ``threads``) did so far; None for a simulation that is not partitioned or before its first run
    split into partitions."""
    core = getattr(sim, "_core", None)
    if not isinstance(core, PartitionedCore):
        return None
    v = core.par_stats()
    if not v:
        return None
    return ParallelStats(*v[:11], part_events=tuple(v[11:]))


def _node(x: Any) -> tuple[str, int]:
    return ("h" if isinstance(x, Host) else "s", x.index)


def partition(sim: Any, parts: int) -> Partitioning:
    """Split ``sim``'s fabric (a :class:`rdmasim.Simulator` with its hosts, switches and links) into
    ``parts`` partitions (1 up to the number of hosts)."""
    n_hosts = len(sim.hosts)
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= max(n_hosts, 1):
        raise ValueError(f"parts {parts!r}: allowed an int in 1..{max(n_hosts, 1)} (the number of hosts)")
    n_sw = len(sim.switches)
    adj: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for i in range(n_hosts):
        adj[("h", i)] = []
    for j in range(n_sw):
        adj[("s", j)] = []
    for link in sim.links:
        a, b = _node(link.a), _node(link.b)
        adj[a].append(b)
        adj[b].append(a)
    # tier: hops from the nearest host (hosts 0)
    tier = {v: -1 for v in adj}
    todo: deque[tuple[str, int]] = deque()
    for i in range(n_hosts):
        tier[("h", i)] = 0
        todo.append(("h", i))
    while todo:
        v = todo.popleft()
        for w in adj[v]:
            if tier[w] < 0:
                tier[w] = tier[v] + 1
                todo.append(w)
    top = max((t for v, t in tier.items() if v[0] == "s"), default=0)
    top_tier = sorted(v[1] for v, t in tier.items() if v[0] == "s" and (t == top or t < 0))
    if top <= 1:  # hosts under one tier of switches: split the hosts, not the switches
        top_tier = sorted(v[1] for v in adj if v[0] == "s")
    # groups: connected components without the top tier
    in_top = {("s", j) for j in top_tier}
    group_of: dict[tuple[str, int], int] = {}
    groups: list[list[tuple[str, int]]] = []
    for i in range(n_hosts):
        start = ("h", i)
        if start in group_of:
            continue
        g = len(groups)
        members = [start]
        group_of[start] = g
        todo.append(start)
        while todo:
            v = todo.popleft()
            for w in adj[v]:
                if w not in in_top and w not in group_of:
                    group_of[w] = g
                    members.append(w)
                    todo.append(w)
        groups.append(members)
    # groups to partitions in order, each up to its share of the hosts
    host_part = [0] * n_hosts
    switch_part = [-1] * n_sw
    placed = 0
    for members in groups:
        n = sum(1 for v in members if v[0] == "h")
        p = min(placed * parts // max(n_hosts, 1), parts - 1)
        placed += n
        for kind, idx in members:
            if kind == "h":
                host_part[idx] = p
            else:
                switch_part[idx] = p
    rest = [j for j in range(n_sw) if switch_part[j] < 0]  # the top tier (and switches without hosts)
    for k, j in enumerate(rest):
        switch_part[j] = k * parts // max(len(rest), 1)
    lookahead: int | None = None
    cut = 0
    for link in sim.links:
        (ka, ia), (kb, ib) = _node(link.a), _node(link.b)
        pa = host_part[ia] if ka == "h" else switch_part[ia]
        pb = host_part[ib] if kb == "h" else switch_part[ib]
        if pa != pb:
            cut += 1
            lookahead = link.delay_ps if lookahead is None else min(lookahead, link.delay_ps)
    return Partitioning(parts, tuple(host_part), tuple(switch_part), lookahead, cut)


class PartitionedCore(_core.SimCore):
    """The C simulation of a :class:`rdmasim.Simulator` whose runs are split into partitions: before
    each run the fabric is partitioned (again when hosts, switches or links were added since) and
    the C core checks that the run holds nothing a partitioned run cannot (it raises ValueError
    naming the setting otherwise)."""

    def __new__(cls, seed: int, *rest: Any) -> PartitionedCore:  # noqa: D102 (the C handle takes the seed only)
        return _core.SimCore.__new__(cls, seed)

    def __init__(self, seed: int, sim: Any, parts: int, threads: int) -> None:
        self._owner = weakref.ref(sim)
        self._parts = parts
        self._threads = threads
        self._fabric_key: tuple[int, int, int] | None = None
        self.set_partitions(1, threads, [], [])  # the split-independent keys, before any frame
        #: the partitioning of the last run (None before the first)
        self.partitioning: Partitioning | None = None

    def _sync(self) -> None:
        sim = self._owner()
        key = (len(sim.hosts), len(sim.switches), len(sim.links))
        if key == self._fabric_key:
            return
        pt = partition(sim, min(self._parts, max(len(sim.hosts), 1)))
        self.set_partitions(pt.parts, self._threads, pt.host_part, pt.switch_part)
        self.partitioning = pt
        self._fabric_key = key

    def run(self, until_ps: int = _core.INT64_MAX, max_events: int = 0, watch_host: int = -1,
            watch_cq: int = -1, watch_count: int = 0) -> int:
        """As SimCore.run, split into partitions."""
        self._sync()
        why = self.par_check(max_events, watch_host)
        if why is not None:
            raise ValueError(why)
        return super().run(until_ps, max_events, watch_host, watch_cq, watch_count)
