"""Where a collective's time went: each rank's wait and the critical path through its flows.

Both read a finished run: the :class:`~rdmasim.traffic.FlowTable` that was run (its dependencies) and
:meth:`rdmasim.flows.FlowSet.results` (one row per flow, in table order). Definitions (docs/hpc-patterns.md):

- A flow is *ready* at ``max(start_ps, finish of each dependency)``; it starts ``hold_ps`` later (its
  compute phase) and finishes at ``finish_ps``. A rank is *busy* while one of the flows it sends (or a
  LOCAL flow on it) is between its ready time and its finish: computing in a hold or moving bytes.
- The collective runs from the earliest ``start_ps`` to the latest ``finish_ps``. A rank's ``done_ps`` is
  the last finish of a flow it sends or receives. Its ``blocked_ps`` is the time from the collective's
  start to ``done_ps`` it was not busy: it had nothing to run until data from another rank arrived. Its
  ``tail_ps`` is the time from ``done_ps`` to the collective's end: idle while others finish.
  ``wait_ps = blocked_ps + tail_ps`` (the collective's time less the rank's busy time).
- The critical path starts at the last flow to finish and steps back to the dependency that finished
  last (the one that made the flow ready), until a flow that waited for nothing (or whose own start
  time was later than its dependencies). Each step's time is its hold (compute on its sending rank) plus
  its transfer (on its links).
- A transfer's *excess* is its time less the median time of the run's flows of the same size and verb (what
  that message takes when nothing is wrong). The *bottleneck* is the rank with the most compute on the path
  or the link with the most excess on it, whichever is larger; ``""`` when that is under 1% of the
  collective's time (the time is the pattern's own: no rank or link stands out).

Links: with the simulator given, a flow's transfer is charged to one link of its path: a link direction
that dropped frames if the flow retransmitted (a lossy or failed link, on the data's way or the ACKs'; a
link inside a multi-switch fabric is found by its drop counters, since the path a flow's ECMP hash took is
not recorded), else the slower of its two edge links (its source's uplink and its destination's downlink);
with the two equally fast, the fabric between its two edge switches (``"fabric leaf1->leaf0"``: ECMP
collisions, a slow spine link) or, under one switch, the source's uplink. A flow that retransmitted where
no link counted a drop (frames stuck in a switch queue behind a failed link) is charged to its path,
``"path SRC->DST (retransmitted)"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rdmasim.checks import MAX_TIME_PS
from rdmasim.workload.traffic.table import FLOW_DTYPE, LOCAL, FlowTable

if TYPE_CHECKING:
    from rdmasim._protocols import NetSim as Simulator  # what the analysis reads of a simulation

_VERBS = ("WRITE", "READ", "SEND", "LOCAL")


@dataclass(frozen=True)
class PathStep:
    """One flow of the critical path (times in ps)."""

    flow: int
    src: str
    dst: str
    verb: str
    size_bytes: int
    ready_ps: int
    hold_ps: int
    started_ps: int
    finish_ps: int
    retx_pkts: int
    #: where its transfer time is charged ("" for a LOCAL flow)
    link: str

    @property
    def transfer_ps(self) -> int:
        """Time from its start to its finish (0 for a LOCAL flow)."""
        return self.finish_ps - self.started_ps


@dataclass(frozen=True)
class RankWait:
    """One rank's time in the collective (ps); ``wait_ps = blocked_ps + tail_ps``."""

    rank: int
    host: str
    busy_ps: int
    blocked_ps: int
    tail_ps: int
    done_ps: int

    @property
    def wait_ps(self) -> int:
        """Time the rank could run nothing: blocked on others' data, then idle at the end."""
        return self.blocked_ps + self.tail_ps


@dataclass
class CollectiveAnalysis:
    """Completion time, per-rank wait and the critical path of one run of a table of flows."""

    start_ps: int
    end_ps: int
    ranks: list[RankWait]
    #: first flow of the chain first
    path: list[PathStep]
    #: compute (hold) time on the path per rank name
    compute_by_rank: dict[str, int] = field(default_factory=dict)
    #: transfer time on the path per link (or, without a simulator, per sending rank)
    transfer_by_link: dict[str, int] = field(default_factory=dict)
    #: transfer time on the path beyond the median of same-size flows, per link
    excess_by_link: dict[str, int] = field(default_factory=dict)

    @property
    def time_ps(self) -> int:
        """The collective's completion time: first start to last finish."""
        return self.end_ps - self.start_ps

    @property
    def bottleneck(self) -> str:
        """``"rank NAME"`` (most compute on the path), ``"link NAME"`` (most excess transfer time on it;
        ``"fabric A->B"`` or ``"path SRC->DST ..."`` as charged, module docstring), or ``""`` if none
        reaches 1% of the collective's time."""
        best, what = self.time_ps // 100, ""
        for name, t in self.compute_by_rank.items():
            if t > best:
                best, what = t, f"rank {name}"
        for name, t in self.excess_by_link.items():
            if t > best:
                best, what = t, name if name.startswith(("fabric", "path")) else f"link {name}"
        return what

    def wait(self) -> dict[str, int]:
        """Each rank's wait time (ps), by host name."""
        return {r.host: r.wait_ps for r in self.ranks}

    def as_dict(self) -> dict[str, Any]:
        """Plain types for JSON: times, ranks (with ``wait_ps``), path, shares and the bottleneck."""
        return {
            "time_ps": self.time_ps, "bottleneck": self.bottleneck,
            "ranks": [{**asdict(r), "wait_ps": r.wait_ps} for r in self.ranks],
            "critical_path": [{**asdict(s), "transfer_ps": s.transfer_ps} for s in self.path],
            "compute_by_rank": dict(self.compute_by_rank), "transfer_by_link": dict(self.transfer_by_link),
            "excess_by_link": dict(self.excess_by_link),
        }


def ready_times(table: FlowTable, results: np.ndarray) -> np.ndarray:
    """Each flow's ready time: ``max(start_ps, finish of each dependency)`` (ps)."""
    fin = results["finish_ps"].astype(np.int64)
    ready = table.flows["start_ps"].astype(np.int64).copy()
    counts = np.diff(table.dep_ptr)
    has = np.flatnonzero(counts > 0)
    if has.size:
        latest = np.maximum.reduceat(fin[table.deps], table.dep_ptr[has])
        ready[has] = np.maximum(ready[has], latest)
    return ready


def _union_length(lo: np.ndarray, hi: np.ndarray, clip_hi: int) -> int:
    """Length of the union of intervals ``[lo, hi)`` below ``clip_hi``."""
    hi = np.minimum(hi, clip_hi)
    keep = hi > lo
    lo, hi = lo[keep], hi[keep]
    if not lo.size:
        return 0
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], np.maximum.accumulate(hi[order])
    # an interval starts a new run when it begins after everything before it ended
    new = np.ones(lo.size, dtype=bool)
    new[1:] = lo[1:] > hi[:-1]
    starts = lo[new]
    ends = np.append(hi[np.flatnonzero(new)[1:] - 1], hi[-1])
    return int((ends - starts).sum())


class _Links:
    """Names a flow's links and picks the one its transfer time is charged to (module docstring)."""

    def __init__(self, sim: Simulator) -> None:
        hosts = sorted(sim.hosts.values(), key=lambda h: h.index)
        self.name = [h.name for h in hosts]
        self.up: list[tuple[str, int, int]] = []  # (name, rate, dropped) of each host's sending direction
        self.down: list[tuple[str, int, int]] = []
        self.edge: list[str] = []  # the node at the other end of each host's link
        for h in hosts:
            link = h.link
            if link is None:
                self.up.append(("", 0, 0))
                self.down.append(("", 0, 0))
                self.edge.append("")
                continue
            peer = link.b if link.a is h else link.a
            self.edge.append(peer.name)
            out, back = link.direction(h), link.direction(peer)
            self.up.append((f"{h.name}->{peer.name}", out.rate_bps, out.stats()["dropped"]))
            self.down.append((f"{peer.name}->{h.name}", back.rate_bps, back.stats()["dropped"]))
        edge = {id(h.link) for h in hosts if h.link is not None}
        self.inner = [(f"{d.src.name}->{d.dst.name}", d.stats()["dropped"]) for lk in sim.links
                      if id(lk) not in edge for d in (lk.ab, lk.ba)]

    def charge(self, src: int, dst: int, retx: int) -> str:
        up, down = self.up[src], self.down[dst]
        if retx:
            # data goes src -> dst and ACKs dst -> src: a drop in either makes the sender retransmit
            edges = (up, down, self.up[dst], self.down[src])
            lossy = list(dict.fromkeys(n for n, _, drop in edges if drop))
            lossy = lossy or [n for n, drop in self.inner if drop]
            if len(lossy) == 1:
                return lossy[0]
            if lossy:
                return "fabric links that dropped frames: " + ", ".join(lossy)
            # frames lost where no link counts them (stuck behind a failed link in a switch queue)
            return f"path {self.name[src]}->{self.name[dst]} (retransmitted)"
        if up[0] == down[0] or not down[0]:  # hosts joined by one link: it is both
            return up[0]
        if up[1] != down[1]:
            return down[0] if down[1] < up[1] else up[0]
        if self.edge[src] != self.edge[dst]:  # equal edges, different switches: the time went between them
            return f"fabric {self.edge[src]}->{self.edge[dst]}"
        return up[0]


def analyze(table: FlowTable, results: np.ndarray, sim: Simulator | None = None,
            hosts: Any = None) -> CollectiveAnalysis:
    """Wait times and critical path of ``table`` as run (``results`` row ``i`` is table flow ``i``).

    ``sim``: the simulator it ran on (host names and links); ``hosts``: the ranks' host indices in rank
    order (default: every host a flow touches, by index). Every flow must have finished (failed flows
    count: they finish with an error status); otherwise ValueError names how many have not.
    """
    n = len(table)
    if len(results) != n:
        raise ValueError(f"analyze: {len(results)} result rows for a table of {n} flows")
    if n == 0:
        raise ValueError("analyze: the table has no flows")
    fin = results["finish_ps"].astype(np.int64)
    if (fin < 0).any():
        raise ValueError(f"analyze: {int(np.count_nonzero(fin < 0))} of {n} flows have not finished "
                         "(run longer, or the flows they wait for failed to start)")
    f = table.flows
    src = results["src"].astype(np.int64)
    dst = results["dst"].astype(np.int64)
    hold = f["hold_ps"].astype(np.int64)
    started = results["started_ps"].astype(np.int64)
    ready = ready_times(table, results)
    start, end = int(f["start_ps"].min()), int(fin.max())
    links = _Links(sim) if sim is not None else None

    def name(h: int) -> str:
        return links.name[h] if links is not None else f"host {h}"

    rank_hosts = (np.unique(np.concatenate([src, dst])) if hosts is None
                  else np.asarray(hosts, dtype=np.int64))
    # one pass per rank over its own flows (sorted by sender), not over the whole table
    top = int(max(src.max(), dst.max(), rank_hosts.max(initial=0))) + 1
    last = np.full(top, start, dtype=np.int64)
    np.maximum.at(last, src, fin)
    np.maximum.at(last, dst, fin)
    by_src = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[by_src], np.arange(top + 1))
    ranks = []
    for r, h in enumerate(rank_hosts.tolist()):
        mine = by_src[bounds[h]:bounds[h + 1]]
        done = int(last[h])
        busy = _union_length(started[mine] - hold[mine], fin[mine], done)
        ranks.append(RankWait(r, name(h), busy, done - start - busy, end - done, done))

    chain = []
    i = int(np.argmax(fin))
    while True:
        chain.append(i)
        d = table.deps_of(i)
        if not d.size:
            break
        j = int(d[np.argmax(fin[d])])
        if fin[j] < int(f["start_ps"][i]):  # its own start time, not a dependency, held it back
            break
        i = j
    chain.reverse()
    typical = _typical_transfer(f, started, fin)
    path, compute, transfer, excess = [], {}, {}, {}
    for i in chain:
        verb = int(f["verb"][i])
        retx = int(results["retx_pkts"][i])
        s, t = int(src[i]), int(dst[i])
        link = "" if verb == LOCAL else (links.charge(s, t, retx) if links is not None else f"send {name(s)}")
        step = PathStep(i, name(s), name(t), _VERBS[verb], int(f["size"][i]), int(ready[i]), int(hold[i]),
                        int(started[i]), int(fin[i]), retx, link)
        path.append(step)
        if step.hold_ps:
            compute[step.src] = compute.get(step.src, 0) + step.hold_ps
        if link and step.transfer_ps:
            transfer[link] = transfer.get(link, 0) + step.transfer_ps
            extra = step.transfer_ps - typical[(verb, step.size_bytes)]
            if extra > 0:
                excess[link] = excess.get(link, 0) + extra
    return CollectiveAnalysis(start, end, ranks, path, compute, transfer, excess)


def _typical_transfer(f: np.ndarray, started: np.ndarray, fin: np.ndarray) -> dict[tuple[int, int], int]:
    """(verb, size) -> the median transfer time of the flows of that verb and size (ps)."""
    net = np.flatnonzero(f["verb"] != LOCAL)
    if not net.size:
        return {}
    key = f["verb"][net].astype(np.int64) * (1 << 40) + f["size"][net].astype(np.int64)
    order = np.argsort(key, kind="stable")
    key, dur = key[order], (fin - started)[net][order]
    cut = np.flatnonzero(np.diff(key)) + 1
    return {(int(k[0]) >> 40, int(k[0]) & ((1 << 40) - 1)): int(np.median(d))
            for k, d in zip(np.split(key, cut), np.split(dur, cut), strict=True)}


def with_compute(table: FlowTable, delays: Mapping[int, int]) -> FlowTable:
    """A copy of ``table`` in which each host ``h`` of ``delays`` computes ``delays[h]`` ps before it
    takes part: a LOCAL flow on it holding that long from the table's first start time is added at the
    end, and every flow the host sends (or runs locally) waits for it. No flow of the host starts before
    ``first start + delays[h]``; what it receives is not held back (a WRITE into it needs nothing from
    it). Hosts with a delay of 0 are left as they are. :meth:`Compute.draw` gives delays from a
    distribution (``dict(zip(hosts, compute.draw(1, len(hosts))[0]))``)."""
    f = table.flows
    rows: list[tuple[int, np.ndarray, int]] = []
    for host, delay in delays.items():
        if isinstance(delay, bool) or not isinstance(delay, (int, np.integer)) or not (
                0 <= delay <= MAX_TIME_PS):
            raise ValueError(f"with_compute: host {host}: delay = {delay!r} must be an int in "
                             f"[0, {MAX_TIME_PS}] (ps)")
        mine = np.flatnonzero(f["src"] == host)
        if not mine.size:
            raise ValueError(f"with_compute: host {host} sends no flow in this table")
        if delay:
            rows.append((int(host), mine, int(delay)))
    if not rows:
        return FlowTable(f.copy(), table.dep_ptr.copy(), table.deps.copy(), list(table.groups))
    n, k = len(table), len(rows)
    late = np.zeros(k, dtype=FLOW_DTYPE)
    waits = np.full(n, -1, dtype=np.int64)  # the new flow each old one waits for (-1: none)
    first = int(f["start_ps"].min())
    for q, (host, mine, delay) in enumerate(rows):
        late[q] = (host, host, 0, first, LOCAL, int(f["priority"][mine[0]]), int(f["group"][mine[0]]), delay,
                   0)
        waits[mine] = n + q
    extra = waits >= 0
    counts = np.concatenate([np.diff(table.dep_ptr) + extra, np.zeros(k, dtype=np.int64)])
    ptr = np.zeros(n + k + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    deps = np.empty(int(ptr[-1]), dtype=np.int32)
    old = np.repeat(np.arange(n), np.diff(table.dep_ptr))  # owner of each existing entry
    deps[ptr[:n][old] + (np.arange(len(table.deps)) - table.dep_ptr[:-1][old])] = table.deps
    deps[ptr[1:n + 1][extra] - 1] = waits[extra]  # the new dependency is each of those flows' last entry
    return FlowTable(np.concatenate([f, late]), ptr, deps, list(table.groups))


def with_straggler(table: FlowTable, host: int, delay_ps: int) -> FlowTable:
    """A copy of ``table`` in which ``host`` arrives ``delay_ps`` late: :func:`with_compute` for one host
    (a LOCAL flow on it holds ``delay_ps`` and every flow it sends waits for it)."""
    if isinstance(delay_ps, bool) or not isinstance(delay_ps, (int, np.integer)) or not (
            0 <= delay_ps <= MAX_TIME_PS):
        raise ValueError(f"with_straggler: delay_ps = {delay_ps!r} must be an int in [0, {MAX_TIME_PS}] (ps)")
    return with_compute(table, {host: int(delay_ps)})


__all__ = ["CollectiveAnalysis", "PathStep", "RankWait", "analyze", "ready_times", "with_compute",
           "with_straggler"]
