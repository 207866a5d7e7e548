"""The flow table: the one structure every traffic generator returns and the C side consumes.

A table is a numpy structured array of flows plus a CSR list of dependencies. Flow ``i`` starts at
``max(start_ps[i], finish time of every flow in deps[dep_ptr[i]:dep_ptr[i+1]]) + hold_ps[i]`` (the hold is
a compute phase before it sends). ``src`` is where the data is and ``dst`` where it goes, whatever the verb
(a READ is posted by ``dst`` but still moves ``src -> dst``).

Flows on one connection share a QP pair, as NCCL's channels and MPI's connections send their messages:
``after[i] = k > 0`` posts flow ``i`` on the QP pair of flow ``i - k`` (same ``src``, ``dst``, verb and
priority) once that flow has been posted, so the RC send queue carries them in order and flow ``i``'s
first packet follows flow ``i - k``'s last one on the wire; ``after = 0`` gives a flow a QP pair of its
own. The offset is relative, so :meth:`FlowTable.concat` keeps it.

A ``LOCAL`` flow sends no packets: it finishes the moment it starts, so its duration is its hold. It is a
step of the dependency graph off the fabric - a compute phase (``src == dst``, size 0), the join of a
barrier, an intra-node (NVLink-like) copy whose latency + size/bandwidth is its hold. Only a LOCAL flow may
have ``src == dst`` or size 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from rdmasim.checks import MAX_TIME_PS

FLOW_DTYPE = np.dtype([("src", "<i4"), ("dst", "<i4"), ("size", "<u8"), ("start_ps", "<i8"),
                       ("verb", "u1"), ("priority", "u1"), ("group", "<i4"), ("hold_ps", "<i8"),
                       ("after", "<u4")])
"""One row per flow; ``src``/``dst`` are host indices; ``group`` indexes ``FlowTable.groups`` (-1: none);
``hold_ps`` delays the start past the start time and the dependencies (0: none); ``after`` is how many
rows back the flow before it on its connection is (0: a QP pair of its own; see the module docstring)."""


VERB_CODES: dict[str, int] = {"WRITE": 0, "READ": 1, "SEND": 2, "LOCAL": 3}
"""Verb name -> the code stored in ``FLOW_DTYPE['verb']``."""

LOCAL = VERB_CODES["LOCAL"]
"""The verb code of a flow with no packets (see the module docstring)."""

DEP_RECEIVED = 1
"""``FlowTable.dep_on`` of a dependency on a flow's receipt: its receiver has every byte (WRITE, SEND:
the responder accepted the message's last packet in order; READ, LOCAL: their completion; a flow that
fails: its end), which for a WRITE or SEND comes about half a round trip before its completion."""

MAX_FLOW_SIZE = 2**31 - 1
"""Largest flow size in bytes (one RDMA message)."""

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1


def verb_code(verb: str | int | np.integer[Any]) -> int:
    """The code of ``verb`` (a name from :data:`VERB_CODES`, any case, or a code 0..2)."""
    if isinstance(verb, str):
        code = VERB_CODES.get(verb.upper())
        if code is None:
            raise ValueError(f"unknown verb {verb!r}: expected one of {sorted(VERB_CODES)}")
        return code
    if isinstance(verb, (int, np.integer)) and not isinstance(verb, bool) and 0 <= int(verb) <= LOCAL:
        return int(verb)
    raise ValueError(f"verb {verb!r} is neither a verb name {sorted(VERB_CODES)} nor a code 0..3")


def verb_column(verb: Any) -> npt.NDArray[np.int64]:
    """Verb names or codes (scalar or array) -> int64 codes (range-checked later by validate)."""
    if isinstance(verb, (str, int, np.integer)):
        return np.asarray(verb_code(verb), dtype=np.int64)
    arr = np.asarray(verb)
    if arr.dtype.kind in "US":
        names, inverse = np.unique(arr.astype(str), return_inverse=True)
        codes = np.array([verb_code(str(n)) for n in names], dtype=np.int64)
        return codes[inverse].reshape(arr.shape)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"verb must be names or integer codes, got an array of dtype {arr.dtype}")
    return arr.astype(np.int64)


def _int_column(name: str, value: Any) -> npt.NDArray[np.int64]:
    arr = np.asarray(value)
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > _INT64_MAX:  # astype would wrap it negative
        raise ValueError(f"{name} = {int(arr.max())} does not fit its column (at most {_INT64_MAX})")
    return arr.astype(np.int64)


def _first_bad(mask: npt.NDArray[np.bool_]) -> tuple[int, int]:
    """Index of the first True in ``mask`` and how many are True."""
    bad = np.flatnonzero(mask)
    return int(bad[0]), int(bad.size)


def _more(count: int) -> str:
    return f" (and {count - 1} more)" if count > 1 else ""


@dataclass
class FlowTable:
    """Flows plus their dependencies (CSR) and group labels. See the module docstring for semantics."""

    flows: np.ndarray
    dep_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    deps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    groups: list[str] = field(default_factory=list)
    #: per dependency (parallel to ``deps``): 0 waits for that flow's completion, 1 for the moment
    #: its receiver has every byte (:data:`DEP_RECEIVED`); None: all 0
    dep_on: np.ndarray | None = None
    #: per flow: how many of its dependency events start it (0: all; k: the k-th to happen); None: all 0
    need: np.ndarray | None = None

    def __post_init__(self) -> None:
        # FlowTable(flows) with the default (empty) dependencies: one zero per flow, plus one
        if len(self.dep_ptr) == 1 and len(self.deps) == 0 and len(self.flows) > 0:
            self.dep_ptr = np.zeros(len(self.flows) + 1, dtype=np.int64)

    # ------------------------------------------------------------------ construction
    @classmethod
    def empty(cls) -> FlowTable:
        """A table with no flows."""
        return cls(np.zeros(0, dtype=FLOW_DTYPE))

    @classmethod
    def from_columns(
        cls,
        src: npt.ArrayLike,
        dst: npt.ArrayLike,
        size: npt.ArrayLike,
        start_ps: npt.ArrayLike = 0,
        verb: Any = "WRITE",
        priority: npt.ArrayLike = 3,
        group: npt.ArrayLike = -1,
        *,
        hold_ps: npt.ArrayLike = 0,
        after: npt.ArrayLike = 0,
        groups: Sequence[str] = (),
        dep_ptr: npt.ArrayLike | None = None,
        deps: npt.ArrayLike | None = None,
        dep_on: npt.ArrayLike | None = None,
        need: npt.ArrayLike | None = None,
    ) -> FlowTable:
        """Build a table from columns; each is a scalar (broadcast) or a 1-D array of one common length.

        ``verb`` takes names (``"WRITE"``, ``"READ"``, ``"SEND"``, ``"LOCAL"``) or codes; ``hold_ps`` is each
        flow's hold (ps) after its start time and dependencies; ``after`` chains flows on a connection
        (module docstring). ``dep_ptr``/``deps`` give the
        CSR dependencies (both or neither; default: none); ``dep_on`` (one per dependency: 0 its
        completion, 1 its receipt, :data:`DEP_RECEIVED`) and ``need`` (one per flow: 0 all of its
        dependency events, k the k-th) refine them. Values are range-checked only by :meth:`validate`,
        except that they must fit the column types.
        """
        cols = {
            "src": _int_column("src", src), "dst": _int_column("dst", dst), "size": _int_column("size", size),
            "start_ps": _int_column("start_ps", start_ps), "verb": verb_column(verb),
            "priority": _int_column("priority", priority), "group": _int_column("group", group),
            "hold_ps": _int_column("hold_ps", hold_ps), "after": _int_column("after", after),
        }
        for name, col in cols.items():
            if col.ndim > 1:
                raise ValueError(f"{name} must be a scalar or a 1-D array, got shape {col.shape}")
        try:
            bcast = np.broadcast_arrays(*cols.values())
        except ValueError:
            lengths = {k: v.shape[0] for k, v in cols.items() if v.ndim == 1}
            raise ValueError(f"columns have different lengths: {lengths}") from None
        n = bcast[0].size if bcast[0].ndim else 1
        flows = np.zeros(n, dtype=FLOW_DTYPE)
        limits = {"src": (-(2**31), _INT32_MAX), "dst": (-(2**31), _INT32_MAX), "size": (0, 2**63 - 1),
                  "verb": (0, 255), "priority": (0, 255), "group": (-(2**31), _INT32_MAX),
                  "after": (0, 2**32 - 1)}
        for (name, _), col in zip(cols.items(), bcast, strict=True):
            col = col.reshape(-1)
            lo, hi = limits.get(name, (-(2**63), 2**63 - 1))
            out = (col < lo) | (col > hi)
            if out.any():
                i, count = _first_bad(out)
                raise ValueError(f"flow {i}{_more(count)}: {name} = {int(col[i])} does not fit its column "
                                 f"[{lo}, {hi}]")
            flows[name] = col
        if (dep_ptr is None) != (deps is None):
            raise ValueError("give both dep_ptr and deps, or neither")
        if dep_ptr is None:
            ptr = np.zeros(n + 1, dtype=np.int64)
            dd = np.zeros(0, dtype=np.int32)
        else:
            ptr = np.asarray(dep_ptr, dtype=np.int64)
            dd = np.asarray(deps, dtype=np.int32)
        return cls(flows, ptr, dd, list(groups),
                   None if dep_on is None else np.asarray(dep_on, dtype=np.uint8),
                   None if need is None else np.asarray(need, dtype=np.uint32))

    @classmethod
    def concat(cls, *tables: FlowTable) -> FlowTable:
        """One table holding ``tables`` in order; dependency indices and group ids are offset to match.

        Groups are not merged: two tables that both use the label ``"ring-allreduce"`` keep two group ids.
        """
        if not tables:
            return cls.empty()
        flows = np.concatenate([t.flows for t in tables]).astype(FLOW_DTYPE, copy=False)
        ptrs = [np.zeros(1, dtype=np.int64)]
        deps = []
        groups: list[str] = []
        flow_off = 0
        dep_off = 0
        for i, t in enumerate(tables):
            if len(t.dep_ptr) != len(t) + 1:
                raise ValueError(f"table {i}: dep_ptr has length {len(t.dep_ptr)}, expected {len(t) + 1}")
            g = flows["group"][flow_off:flow_off + len(t)]
            g[g >= 0] += len(groups)
            ptrs.append(np.asarray(t.dep_ptr[1:], dtype=np.int64) - int(t.dep_ptr[0]) + dep_off)
            deps.append(np.asarray(t.deps[t.dep_ptr[0]:t.dep_ptr[-1]], dtype=np.int64) + flow_off)
            groups.extend(t.groups)
            flow_off += len(t)
            dep_off += int(t.dep_ptr[-1] - t.dep_ptr[0])
        all_deps = np.concatenate(deps)
        if flow_off > _INT32_MAX:
            raise ValueError(f"{flow_off} flows do not fit int32 dependency indices")
        dep_on = need = None
        if any(t.dep_on is not None for t in tables):
            dep_on = np.concatenate([np.zeros(int(t.dep_ptr[-1] - t.dep_ptr[0]), np.uint8) if t.dep_on is None
                                     else np.asarray(t.dep_on[t.dep_ptr[0]:t.dep_ptr[-1]], np.uint8)
                                     for t in tables])
        if any(t.need is not None for t in tables):
            need = np.concatenate([np.zeros(len(t), np.uint32) if t.need is None
                                   else np.asarray(t.need, np.uint32) for t in tables])
        return cls(flows, np.concatenate(ptrs), all_deps.astype(np.int32), groups, dep_on, need)

    def shifted(self, dt_ps: int) -> FlowTable:
        """A copy with every ``start_ps`` moved by ``dt_ps`` (dependencies and groups unchanged)."""
        flows = self.flows.copy()
        if len(flows):  # in Python ints: a shift past the time limit is refused, never wrapped
            lo, hi = int(flows["start_ps"].min()) + int(dt_ps), int(flows["start_ps"].max()) + int(dt_ps)
            if lo < 0 or hi > MAX_TIME_PS:
                raise ValueError(f"shifted({dt_ps}): start_ps would span {lo} .. {hi}, "
                                 f"outside [0, {MAX_TIME_PS}]")
        flows["start_ps"] += np.int64(dt_ps)
        return FlowTable(flows, self.dep_ptr.copy(), self.deps.copy(), list(self.groups),
                         None if self.dep_on is None else self.dep_on.copy(),
                         None if self.need is None else self.need.copy())

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return int(self.flows.shape[0])

    def deps_of(self, i: int) -> np.ndarray:
        """The flows that must finish before flow ``i`` starts."""
        return self.deps[self.dep_ptr[i]:self.dep_ptr[i + 1]]

    @property
    def total_bytes(self) -> int:
        """Sum of all flow sizes."""
        return int(self.flows["size"].sum(dtype=np.uint64))

    def topological_order(self) -> np.ndarray:
        """Flow indices in an order where every flow comes after its dependencies.

        Raises ValueError naming a cycle if there is none. Level-by-level Kahn in numpy: O(n + e) work.
        """
        from rdmasim.workload.traffic._graph import topological_order

        return topological_order(len(self), self.dep_ptr, self.deps)

    # ------------------------------------------------------------------ checking
    def validate(self, n_hosts: int) -> FlowTable:
        """Check every field against the contract; raise ValueError naming flow, field, value and range.

        Returns ``self`` so it can be chained.
        """
        f = self.flows
        if not isinstance(f, np.ndarray) or f.dtype != FLOW_DTYPE or f.ndim != 1:
            raise ValueError(f"flows must be a 1-D array of FLOW_DTYPE, got {getattr(f, 'dtype', type(f))}")
        n = len(f)
        checks: list[tuple[str, np.ndarray, int, int]] = [
            ("src", f["src"], 0, n_hosts - 1), ("dst", f["dst"], 0, n_hosts - 1),
            ("size", f["size"], 1 if (f["verb"] != LOCAL).all() else 0, MAX_FLOW_SIZE),
            ("verb", f["verb"], 0, LOCAL),
            ("priority", f["priority"], 0, 7), ("group", f["group"], -1, len(self.groups) - 1),
        ]
        for name, col, lo, hi in checks:
            bad = (col < lo) | (col > hi)
            if bad.any():
                i, count = _first_bad(bad)
                raise ValueError(f"flow {i}{_more(count)}: {name} = {int(col[i])} is outside [{lo}, {hi}]"
                                 + (f" (n_hosts = {n_hosts})" if name in ("src", "dst") else ""))
        bad_start = (f["start_ps"] < 0) | (f["start_ps"] > MAX_TIME_PS)
        if bad_start.any():
            i, count = _first_bad(bad_start)
            raise ValueError(f"flow {i}{_more(count)}: start_ps = {int(f['start_ps'][i])} is outside "
                             f"[0, {MAX_TIME_PS}] (MAX_TIME_PS)")
        bad_hold = (f["hold_ps"] < 0) | (f["hold_ps"] > MAX_TIME_PS)
        if bad_hold.any():
            i, count = _first_bad(bad_hold)
            raise ValueError(f"flow {i}{_more(count)}: hold_ps = {int(f['hold_ps'][i])} is outside "
                             f"[0, {MAX_TIME_PS}] (MAX_TIME_PS)")
        net = f["verb"] != LOCAL
        same = (f["src"] == f["dst"]) & net
        if same.any():
            i, count = _first_bad(same)
            raise ValueError(f"flow {i}{_more(count)}: src = dst = {int(f['src'][i])}; "
                             "a flow needs two different hosts (only a LOCAL flow may have src = dst)")
        empty = (f["size"] == 0) & net
        if empty.any():
            i, count = _first_bad(empty)
            raise ValueError(f"flow {i}{_more(count)}: size = 0 is outside [1, {MAX_FLOW_SIZE}] "
                             "(only a LOCAL flow may have size 0)")
        check_after("flows", f["after"], f["src"], f["dst"], f["verb"], f["priority"])
        self._validate_deps(n)
        return self

    def _validate_deps(self, n: int) -> None:
        check_deps(n, self.dep_ptr, self.deps, after=self.flows["after"])


def check_after(what: str, after: np.ndarray, src: np.ndarray, dst: np.ndarray, verb: np.ndarray,
                priority: np.ndarray) -> None:
    """Check the ``after`` column (module docstring): each offset reaches an earlier flow of the same
    connection (src, dst, verb, priority; not LOCAL), and no flow is followed by two. ValueError names
    ``what``, the row, the value and the rule; cycles with the dependencies are :func:`check_deps`'s."""
    a = np.asarray(after, dtype=np.int64)
    rows = np.flatnonzero(a)
    if not rows.size:
        return
    back = a[rows] > rows
    if back.any():
        i = int(rows[back][0])
        raise ValueError(f"{what}: column 'after', row {i} = {int(a[i])} is outside [0, {i}] "
                         "(the flow before it on its connection is an earlier row)")
    prev = rows - a[rows]
    other = ((src[prev] != src[rows]) | (dst[prev] != dst[rows]) | (verb[prev] != verb[rows])
             | (priority[prev] != priority[rows]) | (verb[rows] == LOCAL))
    if other.any():
        i = int(rows[other][0])
        raise ValueError(f"{what}: column 'after', row {i} = {int(a[i])} names row {i - int(a[i])}, which is "
                         "not on its connection (the same src, dst, verb and priority; not LOCAL)")
    uniq, counts = np.unique(prev, return_counts=True)
    if (counts > 1).any():
        j = int(uniq[counts > 1][0])
        two = rows[prev == j][:2]
        raise ValueError(f"{what}: column 'after': rows {int(two[0])} and {int(two[1])} both follow row {j}; "
                         "a connection posts its flows one after the other")


def check_deps(n: int, dep_ptr: Any, deps: Any, what: str = "flows",
               after: npt.ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``dep_ptr``/``deps`` checked as the CSR dependencies of ``n`` flows, as (int64, int32) arrays.

    Every value is checked before any is used as an index: integer dtypes, ``dep_ptr`` of length
    ``n + 1`` starting at 0, non-decreasing and ending at ``len(deps)``, each dependency another flow
    in ``[0, n - 1]``, and no cycle (a flow on one would wait forever; a flow also waits for the one
    ``after`` rows back to be posted, if ``after`` is given). Errors are ValueError or
    TypeError naming ``what``, the column, the row and the allowed range.
    """
    from rdmasim.checks import check_int_array
    from rdmasim.workload.traffic._graph import topological_order

    raw_ptr = np.asarray(dep_ptr)
    raw_deps = np.asarray(deps)
    if raw_deps.ndim != 1:
        raise ValueError(f"{what}: column 'deps' must be one-dimensional, got shape {raw_deps.shape}")
    n_deps = raw_deps.shape[0]
    ptr = check_int_array(f"{what}: column 'dep_ptr'", raw_ptr, 0, n_deps, np.int64)
    if ptr.shape[0] != n + 1:
        raise ValueError(f"{what}: column 'dep_ptr' has {ptr.shape[0]} entries, "
                         f"it needs len(flows) + 1 = {n + 1}")
    if ptr[0] != 0 or ptr[-1] != n_deps:
        row, val, want = (0, int(ptr[0]), 0) if ptr[0] != 0 else (n, int(ptr[-1]), n_deps)
        raise ValueError(f"{what}: column 'dep_ptr', row {row} = {val}: must be {want} (dep_ptr starts at 0 "
                         f"and ends at len(deps) = {n_deps})")
    counts = np.diff(ptr)
    if (counts < 0).any():
        i, _ = _first_bad(counts < 0)
        raise ValueError(f"{what}: column 'dep_ptr', row {i + 1} = {int(ptr[i + 1])} is below row {i} = "
                         f"{int(ptr[i])}: dep_ptr must not decrease")
    dd = check_int_array(f"{what}: column 'deps'", raw_deps, -(2**63), 2**63 - 1, np.int64)
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    out = (dd < 0) | (dd >= n)
    if out.any():
        e, count = _first_bad(out)
        raise ValueError(f"{what}: column 'deps', row {e} = {int(dd[e])}: flow {int(owner[e])}{_more(count)} "
                         f"depends on a flow outside [0, {n - 1}]")
    dd = dd.astype(np.int32)
    selfdep = dd == owner
    if selfdep.any():
        e, count = _first_bad(selfdep)
        raise ValueError(f"{what}: column 'deps', row {e} = {int(dd[e])}: flow {int(owner[e])}"
                         f"{_more(count)} depends on itself")
    try:
        if after is not None and np.any(after):
            a = np.asarray(after, dtype=np.int64)
            extra = a > 0
            cptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts + extra, out=cptr[1:])
            cdd = np.empty(int(cptr[-1]), dtype=np.int64)
            k = np.arange(dd.size) - ptr[:-1][owner]
            cdd[cptr[:-1][owner] + k] = dd
            cdd[cptr[1:][extra] - 1] = np.flatnonzero(extra) - a[extra]
            topological_order(n, cptr, cdd)
        else:
            topological_order(n, ptr, dd)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    return ptr, dd
