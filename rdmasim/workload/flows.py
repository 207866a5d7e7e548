"""Bulk flows: traffic handed to the C core as arrays (many flows, no Python per flow or packet).

A flow moves ``size`` bytes from host ``src`` to host ``dst`` with one RC work request (WRITE and
SEND are posted by ``src``, READ by ``dst``). At its start time the core creates a connected QP
pair for it through the same QP state machine verbs users drive, posts the work request on a
*size-only* memory region (packets carry lengths and headers, not payload bytes), and when the
requester completes it, records the finish time and counters, starts the flows that waited for
it, and destroys the pair. Memory therefore follows the flows in flight, not the flows in total.

A flow with dependencies starts at ``max(start, finish of each dependency) + hold_ps``: collectives
(:mod:`rdmasim.traffic`) are tables of flows with dependencies, and the hold is a compute phase
before a flow sends. A ``LOCAL`` flow (verb 3) sends no packets and finishes as it starts: a step
off the fabric (compute, a barrier's join, an intra-node copy whose duration is its hold).

Example::

    sim = topology.incast(8).sim
    flows = sim.add_flows({"src": range(8), "dst": [8] * 8, "size": [1 << 20] * 8})
    sim.run_flows()
    res = flows.results()          # numpy structured array, one row per flow
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rdmasim import _core
from rdmasim.checks import MAX_TIME_PS, UINT32_MAX, check_int, check_int_array, check_time_ps, exact_array
from rdmasim.units import parse_time
from rdmasim.workload.traffic.table import (
    LOCAL,
    MAX_FLOW_SIZE,
    VERB_CODES,
    check_after,
    check_deps,
    verb_column,
)

if TYPE_CHECKING:
    from rdmasim._protocols import NetSim as Simulator  # what bulk flows need of a simulation

#: verb code -> name (the codes are rdmasim.traffic.VERB_CODES)
VERB_NAMES: tuple[str, ...] = tuple(sorted(VERB_CODES, key=VERB_CODES.__getitem__))
_MTU_ENUM = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
_RECOVERY = {"gbn": 0, "irn": 1, "ooo": 2}

#: columns of :meth:`FlowSet.results` (times in ps; -1 where not reached). Every column with a unit
#: names it, as in the results folder's tables: ``size_bytes`` (``"size"`` is kept as a deprecated
#: numpy field title, an alias of the same column, for code written before the rename).
RESULT_DTYPE = np.dtype(
    [
        ("flow_id", "<i8"),
        ("src", "<i4"),
        ("dst", "<i4"),
        ("verb", "u1"),
        ("priority", "u1"),
        (("size", "size_bytes"), "<u8"),
        ("start_ps", "<i8"),
        ("hold_ps", "<i8"),
        ("started_ps", "<i8"),
        ("finish_ps", "<i8"),
        ("fct_ps", "<i8"),
        ("bytes_delivered", "<u8"),
        ("retx_pkts", "<u8"),
        ("cnps", "<u8"),
        ("pause_ps", "<i8"),
        ("status", "<u4"),
        ("nack_pkts", "<u8"),
        ("trimmed_pkts", "<u8"),
        ("lost_pkts", "<u8"),
    ]
)

#: Rows :meth:`FlowSet.results` reads from the C table at a time (bounds its temporary memory)
RESULTS_CHUNK = 65536

#: ``status`` values besides the ibv_wc_status codes of finished flows
WAITING = _core.FLOW_WAITING
RUNNING = _core.FLOW_RUNNING


def _column(cols: Any, name: str, n: int | None, default: Any = None) -> np.ndarray | None:
    names = cols.dtype.names if isinstance(cols, np.ndarray) else tuple(cols)
    if name not in names:
        if default is None:
            return None
        return np.full(n if n is not None else 0, default)
    v = cols[name]
    if isinstance(v, str) or np.ndim(v) == 0:  # a scalar applies to every flow
        huge = isinstance(v, int) and not -(1 << 63) <= v < (1 << 63)  # kept exact, refused by its check
        return np.full(n if n is not None else 1, v, dtype=object if huge else None)
    return exact_array(v)


@dataclass
class FlowSet:
    """Flows added by one :meth:`Simulator.add_flows` call: ids ``first .. first + n - 1``."""

    sim: Simulator
    first: int
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    start_ps: np.ndarray
    verb: np.ndarray
    priority: np.ndarray
    group: np.ndarray | None = None
    groups: list[str] = field(default_factory=list)
    hold_ps: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.src)

    def uet_bytes(self, i: int) -> tuple[bytes, bytes]:
        """Flow ``i`` of this set (0-based) added with ``uet={"place_bytes": True}``: its source bytes
        and its target buffer as the target holds them now (``target_buffer`` bytes, else its
        size). ValueError for a flow without them."""
        if not 0 <= i < len(self):
            raise IndexError(f"uet_bytes: flow {i} outside 0..{len(self) - 1}")
        from rdmasim.errors import PyverbsRDMAError

        try:
            src, dst = self.sim._flows_core().uet_bytes(self.first + i)
        except PyverbsRDMAError as e:
            raise ValueError(f"uet_bytes: flow {i}: {e}") from None
        return bytes(src), bytes(dst)

    def results(self) -> np.ndarray:
        """One row per flow (:data:`RESULT_DTYPE`); running flows show their live counters."""
        n = len(self)
        out = np.zeros(n, dtype=RESULT_DTYPE)
        for name, col in (("src", self.src), ("dst", self.dst), ("verb", self.verb),
                          ("priority", self.priority), ("size_bytes", self.size),
                          ("start_ps", self.start_ps)):
            out[name] = col
        if self.hold_ps is not None:
            out["hold_ps"] = self.hold_ps
        core = self.sim._flows_core()
        # The C rows are read a chunk at a time: the memory beyond the table returned stays one
        # chunk's worth (a full-size copy of the raw rows was 88 bytes per flow at the peak).
        for lo in range(0, n, RESULTS_CHUNK):
            hi = min(n, lo + RESULTS_CHUNK)
            raw = core.results(self.first + lo, hi - lo)
            o = out[lo:hi]
            o["flow_id"] = np.arange(self.first + lo, self.first + hi)
            o["started_ps"] = raw["start_ps"]
            o["finish_ps"] = raw["finish_ps"]
            done = raw["finish_ps"] >= 0
            o["fct_ps"] = np.where(done, raw["finish_ps"] - raw["start_ps"], -1)
            for name in ("bytes_delivered", "retx_pkts", "cnps", "pause_ps", "status"):
                o[name] = raw[name]
            o["nack_pkts"] = raw["uet_nacks"]
            o["trimmed_pkts"] = raw["uet_trims"]
            o["lost_pkts"] = raw["uet_lost"]
        return out


FLOW_COLUMNS = ("src", "dst", "size", "start_ps", "verb", "priority", "group", "hold_ps", "after")
"""Columns add_flows reads (``group``, a FlowTable's grouping, is carried and not used here)."""


def add_flows(sim: Simulator, table: Any, *, mtu: int | None = None, timeout: int = 14, retry_cnt: int = 7,
              rnr_retry: int = 7, min_rnr_timer: int = 12, max_rd_atomic: int = 1,
              recovery: str | None = None, irn_window: int | None = None, rto_low: str | int = "100us",
              rto_high: str | int = "320us", rto_low_packets: int = 3, transport: str = "roce",
              uet: Mapping[str, Any] | None = None) -> FlowSet:
    """Add flows to ``sim`` (see the module docstring); returns their :class:`FlowSet`.

    ``table``: a :class:`rdmasim.traffic.FlowTable`, a numpy structured array, or a mapping of
    columns. Columns: ``src``, ``dst`` (host indices or names), ``size`` (bytes, 1..2^31-1), and
    optionally ``start_ps`` (integer ps, 0..:data:`rdmasim.checks.MAX_TIME_PS`, default 0),
    ``hold_ps`` (the same range, default 0: the flow starts this long after its start time and
    dependencies allow), ``verb`` (0/1/2/3 or "WRITE"/"READ"/"SEND"/"LOCAL", default WRITE; only a
    LOCAL flow, which sends no packets, may have ``src == dst`` or size 0), ``priority`` (0..7,
    default 3; DSCP 8 x priority), ``after`` (default 0: a QP pair of the flow's own; k > 0: the flow
    is posted on the QP pair of flow ``i - k``, the flow before it on its connection, once that one was
    posted, so the pair's send queue carries them in order; same src, dst, verb and priority, each flow
    followed by at most one, at most 65536 on one pair). Dependencies come from a FlowTable's
    ``dep_ptr``/``deps`` (CSR, indices within the table; no cycles). QP attributes apply to every flow
    of the call: ``mtu`` in bytes (default: the smallest link MTU), ``timeout`` (0..31), ``retry_cnt``
    (0..7), ``rnr_retry`` (0..7), ``min_rnr_timer`` (0..31), ``max_rd_atomic`` (1..128) as in
    :func:`rdmasim.verbs.connect_qps`; ``recovery`` "gbn", "irn" or "ooo" (``irn_window`` 1..65536
    packets, ``0 < rto_low <= rto_high``, ``rto_low_packets`` 0..2^32-1). "ooo" is IRN's placement
    with a reorder-tolerant receiver (docs/multipath.md): every host of the call needs a NIC
    profile with ``ooo_placement`` (its ``reorder_time`` applies; the longest among the receivers).
    The default (None) is "ooo" when every host of the call has such a profile, else "gbn".

    ``transport`` "roce" (default: the IB transport's RC QP pairs) or "uet": each flow is one
    Ultra Ethernet message over a PDC of its own (WRITE or SEND; a READ is the reader's READ request
    and the data holder's responses with data, modes "rud"/"rod" and cc "none"/"nscc"; docs/uet.md),
    with the options of the ``uet`` mapping (:data:`rdmasim.uet.DEFAULTS`: ``mode``, ``lb``, ``cc``,
    ``window``, ``reorder_packets``, ``ack_every``, ``rto``, ``rto_estimate``, ``rto_min``, ``rto_max``,
    ``trim``, ``place_bytes``, ``target_buffer``, ``target_access``,
    ``max_pdcs``) and ``mtu`` as its payload per
    packet; UUD flows (``mode`` "uud") report the data packets the fabric lost in ``lost_pkts``; a
    flow chained by ``after`` starts when the one before it sent its last packet.
    ``uet`` with transport "roce", or ``recovery``/``irn_window`` with "uet", is refused.

    Every value is checked before anything is added: an integer column holding a float, a value
    outside its range or a dependency cycle raises TypeError/ValueError naming the column, the row
    and the allowed range, and leaves ``sim`` as it was.
    """
    cols = getattr(table, "flows", table)
    if isinstance(cols, Mapping):
        cols = {k: cols[k] for k in cols}
    elif not (isinstance(cols, np.ndarray) and cols.dtype.names):
        raise TypeError(f"add_flows: the table must be a FlowTable, a structured numpy array or a mapping of "
                        f"columns, not {type(table).__name__}")
    names = cols.dtype.names if isinstance(cols, np.ndarray) else tuple(cols)
    unknown = [c for c in (names or ()) if c not in FLOW_COLUMNS]
    if unknown:  # a misspelt column would otherwise fall back to its default without a word
        raise ValueError(f"unknown flow column(s) {', '.join(map(repr, unknown))}; the columns are "
                         f"{', '.join(FLOW_COLUMNS)}")
    src = _column(cols, "src", None)
    dst = _column(cols, "dst", None)
    size = _column(cols, "size", None)
    if src is None or dst is None or size is None:
        raise ValueError("flows need at least the columns src, dst and size")
    if src.ndim != 1:
        raise ValueError(f"add_flows: column 'src' must be one-dimensional, got shape {src.shape}")
    n = len(src)
    if n > UINT32_MAX:
        raise ValueError(f"add_flows: {n} flows in one call, at most {UINT32_MAX}")
    src, dst = _hosts(sim, src, "src"), _hosts(sim, dst, "dst")
    start = _column(cols, "start_ps", n, 0)
    verb_raw = _column(cols, "verb", n, 0)
    prio = _column(cols, "priority", n, 3)
    assert start is not None and verb_raw is not None and prio is not None
    verb = verb_column(verb_raw) if np.asarray(verb_raw).dtype.kind in "US" else verb_raw
    hold = _column(cols, "hold_ps", n, 0)
    assert hold is not None
    verb_a = check_int_array("add_flows: column 'verb' (0 WRITE, 1 READ, 2 SEND, 3 LOCAL)", verb, 0, LOCAL,
                             np.uint8)
    size_a = check_int_array("add_flows: column 'size'", size, 0, MAX_FLOW_SIZE, np.uint64)  # 0: LOCAL only
    start_a = check_int_array("add_flows: column 'start_ps'", start, 0, MAX_TIME_PS, np.int64)
    hold_a = check_int_array("add_flows: column 'hold_ps'", hold, 0, MAX_TIME_PS, np.int64)
    prio_a = check_int_array("add_flows: column 'priority'", prio, 0, 7, np.uint8)
    after = _column(cols, "after", n, 0)
    assert after is not None
    after_a = check_int_array("add_flows: column 'after'", after, 0, UINT32_MAX, np.uint32)
    lengths = {"dst": len(dst), "size": len(size_a), "start_ps": len(start_a), "hold_ps": len(hold_a),
               "verb": len(verb_a), "priority": len(prio_a), "after": len(after_a)}
    if set(lengths.values()) != {n}:
        raise ValueError(f"add_flows: flow columns have different lengths: src has {n}, "
                         + ", ".join(f"{k} {v}" for k, v in lengths.items()))
    check_after("add_flows", after_a, src, dst, verb_a, prio_a)
    net = verb_a != LOCAL
    empty = np.flatnonzero((size_a == 0) & net)
    if empty.size:
        raise ValueError(f"add_flows: column 'size': row {int(empty[0])} = 0 is outside the allowed "
                         f"[1, {MAX_FLOW_SIZE}] (only a LOCAL flow, verb 3, may have size 0)")
    same = np.flatnonzero((src == dst) & net)
    if same.size:
        raise ValueError(f"add_flows: row {int(same[0])}: src and dst are both host {int(src[same[0]])}; "
                         "a flow needs two different hosts (only a LOCAL flow, verb 3, may have src = dst)")
    dep_ptr = getattr(table, "dep_ptr", None)
    deps = getattr(table, "deps", None)
    if (dep_ptr is None) != (deps is None):
        raise ValueError("add_flows: the table has only one of dep_ptr and deps; give both or neither")
    if dep_ptr is not None:
        dep_ptr, deps = check_deps(n, dep_ptr, deps, "add_flows", after_a)
    dep_on, need = _dep_kinds(table, n, dep_ptr, deps)
    if dep_ptr is not None and not len(deps):
        dep_ptr = deps = None
    if transport not in ("roce", "uet"):
        raise ValueError(f"add_flows: transport = {transport!r}: allowed 'roce' or 'uet'")
    if transport == "roce" and uet is not None:
        raise ValueError("add_flows: uet options need transport='uet' (the flows run on RoCE)")
    if transport == "uet":
        for name, value in (("recovery", recovery), ("irn_window", irn_window)):
            if value is not None:
                raise ValueError(f"add_flows: {name} = {value!r} is a RoCE QP option: transport 'uet' "
                                 "has its own loss recovery (SACK, NACK, timeout)")
        reads = np.flatnonzero(verb_a == VERB_CODES["READ"])
        opts = dict(uet or {})
        mode, cc = opts.get("mode", "rud"), opts.get("cc", "none")
        if reads.size and (mode not in ("rud", "rod") or cc == "rccc"):
            raise ValueError(f"add_flows: row {int(reads[0])}: verb READ with uet.mode = {mode!r}, uet.cc = "
                             f"{cc!r}: a UET READ needs mode 'rud' or 'rod' (a PDC for its responses) and "
                             "cc 'none' or 'nscc'")
        recovery = "gbn"
    recovery, reorder_ps = _recovery_of(sim, recovery, src, dst, net)
    cfg = _flow_cfg(sim, mtu=mtu, timeout=timeout, retry_cnt=retry_cnt, rnr_retry=rnr_retry,
                    min_rnr_timer=min_rnr_timer, max_rd_atomic=max_rd_atomic, recovery=recovery,
                    irn_window=irn_window, rto_low=rto_low, rto_high=rto_high,
                    rto_low_packets=rto_low_packets)
    if recovery == "ooo":
        cfg["reorder_ps"] = reorder_ps
    if transport == "uet":
        from rdmasim.transport.uet import uet_params

        link_mtu = mtu if mtu is not None else min((link.mtu for link in sim.links), default=1024)
        cfg["uet"] = uet_params(sim, link_mtu, uet)
    first = sim._flows_core().add(src, dst, size_a, start_a, verb_a, prio_a, dep_ptr, deps, cfg, hold_a,
                                  after_a if after_a.any() else None, dep_on, need)
    has_group = getattr(cols, "dtype", None) is not None and "group" in (cols.dtype.names or ())
    return FlowSet(sim, int(first), src, dst, size_a, start_a, verb_a, prio_a,
                   np.asarray(cols["group"]) if has_group else None, list(getattr(table, "groups", [])),
                   hold_ps=hold_a)


def _dep_kinds(table: Any, n: int, dep_ptr: np.ndarray | None,
               deps: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A table's ``dep_on`` (one per dependency, 0 on completion or 1 on receipt) and ``need`` (one per
    flow, 0 all or 1..its dependencies), checked; None where all are 0."""
    dep_on, need = getattr(table, "dep_on", None), getattr(table, "need", None)
    n_deps = 0 if deps is None else len(deps)
    if dep_on is not None:
        dep_on = check_int_array("add_flows: column 'dep_on' (0 completion, 1 receipt)", dep_on, 0, 1,
                                 np.uint8)
        if len(dep_on) != n_deps:
            raise ValueError(f"add_flows: column 'dep_on' has {len(dep_on)} entries: it needs one per "
                             f"dependency, {n_deps}")
        if not dep_on.any():
            dep_on = None
    if need is not None:
        need = check_int_array("add_flows: column 'need'", need, 0, UINT32_MAX, np.uint32)
        if len(need) != n:
            raise ValueError(f"add_flows: column 'need' has {len(need)} entries: it needs one per flow, {n}")
        have = np.zeros(n, np.int64) if dep_ptr is None else np.diff(dep_ptr)
        bad = np.flatnonzero(need.astype(np.int64) > have)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"add_flows: column 'need', row {i} = {int(need[i])} is outside "
                             f"[0, {int(have[i])}] (its number of dependencies; 0 = all)")
        if not need.any():
            need = None
    return dep_on, need


def _recovery_of(sim: Simulator, recovery: str | None, src: np.ndarray, dst: np.ndarray,
                 net: np.ndarray) -> tuple[str, int]:
    """The loss recovery of an add_flows call and, for "ooo", the receivers' reorder time (ps)."""
    if recovery is not None and (not isinstance(recovery, str) or recovery not in _RECOVERY):
        raise ValueError(f"add_flows: recovery = {recovery!r}: allowed one of {sorted(_RECOVERY)} or None "
                         "(the NICs': 'ooo' when every host's profile has ooo_placement, else 'gbn')")
    if recovery not in (None, "ooo"):
        return recovery, 0
    if recovery is None and not any(h.nic_profile.ooo_placement for h in sim.hosts.values()):
        return "gbn", 0
    by_index = {h.index: h for h in sim.hosts.values()}
    used = [int(i) for i in np.unique(np.concatenate([src[net], dst[net]]))]
    profiles = {i: by_index[i].nic_profile for i in used}
    lacking = [i for i, p in profiles.items() if not p.ooo_placement]
    if recovery is None:
        if lacking or not used:
            return "gbn", 0
    elif lacking:
        h = by_index[lacking[0]]
        raise ValueError(f"add_flows: recovery = 'ooo' needs out-of-order placement at both ends, but host "
                         f"{h.name!r} has NIC profile {h.nic_profile.name!r} (ooo_placement false); allowed "
                         "'gbn' or 'irn' there, or a profile with ooo_placement (cx7-ar, ib-ar)")
    receivers = [int(i) for i in np.unique(dst[net])]
    return "ooo", max(profiles[i].reorder_ps for i in receivers)


def _flow_cfg(sim: Simulator, *, mtu: int | None, timeout: int, retry_cnt: int, rnr_retry: int,
              min_rnr_timer: int, max_rd_atomic: int, recovery: str, irn_window: int | None,
              rto_low: str | int, rto_high: str | int, rto_low_packets: int) -> dict[str, Any]:
    """The QP knobs of add_flows, checked against the ranges the QP state machine enforces (which
    would otherwise refuse them only when the first flow starts, inside run_flows)."""
    if mtu is None:
        mtu = min((link.mtu for link in sim.links), default=1024)
    if isinstance(mtu, bool) or mtu not in _MTU_ENUM:
        raise ValueError(f"add_flows: mtu = {mtu!r}: allowed one of {sorted(_MTU_ENUM)}")
    if not isinstance(recovery, str) or recovery not in _RECOVERY:
        raise ValueError(f"add_flows: recovery = {recovery!r}: allowed one of {sorted(_RECOVERY)}")
    cfg: dict[str, Any] = {
        "path_mtu": _MTU_ENUM[mtu],
        "timeout": check_int("add_flows: timeout", timeout, 0, 31),
        "retry_cnt": check_int("add_flows: retry_cnt", retry_cnt, 0, 7),
        "rnr_retry": check_int("add_flows: rnr_retry", rnr_retry, 0, 7),
        "min_rnr_timer": check_int("add_flows: min_rnr_timer", min_rnr_timer, 0, 31),
        "max_rd_atomic": check_int("add_flows: max_rd_atomic", max_rd_atomic, 1, _core.FLOW_MAX_RD_ATOMIC),
        "recovery_mode": _RECOVERY[recovery],
    }
    if recovery in ("irn", "ooo"):
        from rdmasim.transport.irn import irn_bdp_window

        first_link = next(iter(sim.links), None)
        window = irn_window if irn_window is not None else irn_bdp_window(first_link, mtu)
        low = check_time_ps("add_flows: rto_low", parse_time(rto_low), 1)
        cfg.update(window=check_int("add_flows: irn_window", window, 1, _core.FLOW_MAX_IRN_WINDOW),
                   rto_low_pkts=check_int("add_flows: rto_low_packets", rto_low_packets, 0, UINT32_MAX),
                   rto_low_ps=low, rto_high_ps=check_time_ps("add_flows: rto_high (>= rto_low)",
                                                             parse_time(rto_high), low))
    return cfg


def _hosts(sim: Simulator, col: np.ndarray, name: str) -> np.ndarray:
    if col.dtype.kind in "US" or (col.dtype == object and all(isinstance(h, str) for h in col)):
        try:
            return np.array([sim.hosts[str(h)].index for h in col], dtype=np.int32)
        except KeyError as exc:
            names = ", ".join(list(sim.hosts)[:10]) + (" ..." if len(sim.hosts) > 10 else "")
            raise ValueError(f"add_flows: column {name!r}: no host named {exc.args[0]!r} "
                             f"(hosts: {names})") from None
    n_hosts = len(sim.hosts)
    if n_hosts == 0:
        raise ValueError(f"add_flows: column {name!r}: the simulation has no hosts")
    return check_int_array(f"add_flows: column {name!r}", col, 0, n_hosts - 1, np.int32)


@dataclass
class FlowSamples:
    """Time series of running flows, one row per (sample time, flow): ``t_ps``, ``flow_id``,
    ``bytes_acked`` (payload bytes delivered so far) and ``rate_bps`` (the data sender's paced
    rate; 0 = line rate, no limit)."""

    t_ps: np.ndarray
    flow_id: np.ndarray
    bytes_acked: np.ndarray
    rate_bps: np.ndarray
    missed: int = 0

    def as_dict(self) -> dict[str, np.ndarray]:
        """The columns as a dict (what rdmasim.plots and pandas.DataFrame take)."""
        return {"t_ps": self.t_ps, "flow_id": self.flow_id, "bytes_acked": self.bytes_acked,
                "rate_bps": self.rate_bps}


def run_flows(sim: Simulator, until: str | int | None = None, *, sample_every: str | int | None = None,
              progress: Callable[[int, int, dict[str, int]], Any] | None = None,
              chunk_events: int = 200_000, max_samples: int = 10_000_000) -> FlowSamples | None:
    """Run until every flow added so far has finished (or ``until``). With ``sample_every``
    (simulated time), records :class:`FlowSamples` of the running flows and returns them (at
    most ``max_samples`` rows; later samples are dropped and counted in ``missed``).
    ``progress(now_ps, events, counts)`` is called every ``chunk_events`` events and at the end.
    """
    fc = sim._flows_core()
    until_ps = _core.INT64_MAX if until is None else check_time_ps("run_flows: until", parse_time(until))
    period = (None if sample_every is None
              else check_time_ps("run_flows: sample_every", parse_time(sample_every), 1))
    parts: list[tuple[np.ndarray, ...]] = []
    n_samples = missed = 0
    fc.stop_when_done(True)
    try:
        origin = sim.now
        next_sample = sim.now if period is not None else _core.INT64_MAX
        while True:
            counts = fc.counts()
            if counts["finished"] == counts["total"]:
                break
            if period is not None and counts["started"] == counts["finished"]:
                # Nothing runs, so each sample until a flow starts would be empty: go event by event
                # to the next start rather than stop at every period (flows a day away, sampled every
                # microsecond, looped 10^11 times). Then back on the sample grid, as if stopped on it.
                reason = sim._core.run(until_ps, 1)
                if reason == _core.RUN_MAX_EVENTS:
                    sim._core.run(sim.now)  # the rest of this instant, as a stop at a period does
                    next_sample = origin + -(-(sim.now - origin) // period) * period
                    if next_sample > MAX_TIME_PS:
                        next_sample = _core.INT64_MAX
                    continue
                if reason == _core.RUN_IDLE or (reason == _core.RUN_UNTIL and sim.now >= until_ps):
                    break
                continue
            if next_sample <= sim.now and period is not None:
                ids, nbytes, rate = fc.sample(max(0, counts["started"] - counts["finished"]))
                if n_samples + len(ids) <= max_samples:
                    parts.append((np.full(len(ids), sim.now, dtype=np.int64), ids, nbytes, rate))
                    n_samples += len(ids)
                else:
                    missed += len(ids)
                next_sample = sim.now + period
                if next_sample > MAX_TIME_PS:  # no time may pass the limit: no samples after it
                    next_sample = _core.INT64_MAX
            stop_at = min(until_ps, next_sample)
            reason = sim._core.run(stop_at, chunk_events if progress else 0)
            if progress and reason == _core.RUN_MAX_EVENTS:
                progress(sim.now, sim.events, fc.counts())
            if reason == _core.RUN_FLOWS_DONE:
                # the last flow's QP pair is freed by a flow event at this same instant
                sim._core.run(sim.now)
                break
            if reason == _core.RUN_IDLE:
                break
            if reason == _core.RUN_UNTIL and sim.now >= until_ps:
                break
    finally:
        fc.stop_when_done(False)
    if progress:
        progress(sim.now, sim.events, fc.counts())
    if period is None:
        return None
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return FlowSamples(z, z.astype(np.uint64), z.astype(np.uint64), z.astype(np.float64), missed)
    cat = [np.concatenate([p[i] for p in parts]) for i in range(4)]
    return FlowSamples(cat[0], cat[1], cat[2], cat[3], missed)


def describe_status(status: int) -> str:
    """``"ok"``, ``"waiting"``, ``"running"`` or the ibv_wc_status name of a failed flow."""
    from rdmasim.verbs import enums as e

    if status == WAITING:
        return "waiting"
    if status == RUNNING:
        return "running"
    return "ok" if status == 0 else e.wc_status_to_str(int(status))


def summarize(results: np.ndarray) -> dict[str, Any]:
    """Counts and FCT statistics (ps) of a :meth:`FlowSet.results` array."""
    ok = results[(results["status"] == 0) & (results["finish_ps"] >= 0)]
    fct = ok["fct_ps"].astype(np.float64)
    return {
        "flows": int(len(results)),
        "completed": int(len(ok)),
        "failed": int(np.count_nonzero((results["status"] < WAITING) & (results["status"] != 0))),
        "bytes_delivered": int(results["bytes_delivered"].sum()),
        "mean_fct_ps": float(fct.mean()) if len(fct) else float("nan"),
        "p99_fct_ps": float(np.percentile(fct, 99)) if len(fct) else float("nan"),
        "retx_pkts": int(results["retx_pkts"].sum()),
    }


__all__: Sequence[str] = [
    "FlowSamples", "FlowSet", "RESULT_DTYPE", "RUNNING", "VERB_CODES", "VERB_NAMES", "WAITING", "add_flows",
    "describe_status", "run_flows", "summarize",
]
