"""HPC patterns: nearest-neighbour halo exchange on a 2-D or 3-D process grid, with barriers and a compute
phase per rank between communication phases, repeated for a number of timesteps.

Every timestep of every rank is, as flows of one table (LOCAL flows have no packets, see
:mod:`rdmasim.traffic.table`):

1. *compute*: a LOCAL flow holding the rank's compute time for the step (:class:`Compute` draws it);
2. *halo*: one flow of ``face_size`` bytes to each grid neighbour (two per dimension of size > 1; none
   past a non-periodic edge). Without ``overlap`` the sends wait for the compute; with it they start with
   it (the boundary is sent while the interior is computed);
3. *join*: a LOCAL flow waiting for the rank's compute, its sends and the faces sent to it;
4. *barrier* (``"dissemination"``, ``"tree"`` or ``"none"``) of ``barrier_size``-byte messages; the
   next timestep's compute waits for the rank's exit from it (or for the join, without a barrier).

Dissemination barrier (Hensgen, Finkel and Manber 1988): ceil(log2 P) rounds; in round k rank r sends to
r + 2^k (mod P) once it has sent round k-1 and received round k-1. Tree barrier: a binary tree over the
ranks (parent (r-1)/2): each rank reports to its parent once it and its children have arrived, and the
root's release travels back down.

:func:`halo_model_ps` is the alpha-beta model of one run on an idle fabric (docs/hpc-patterns.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rdmasim.checks import MAX_TIME_PS
from rdmasim.workload.traffic._common import (
    Hosts,
    check_priority,
    deps_csr,
    flow_size,
    host_array,
    size_bytes,
    time_ps,
)
from rdmasim.workload.traffic.table import LOCAL, FlowTable, verb_code

DISTRIBUTIONS = ("constant", "normal", "lognormal", "exponential")
BARRIERS = ("dissemination", "tree", "none")
MAX_TIMESTEPS = 100_000


@dataclass(frozen=True)
class Compute:
    """A rank's compute time per timestep, drawn from a distribution with a seed.

    ``dist``: ``"constant"`` (always ``mean``), ``"normal"`` (mean ``mean``, standard deviation ``std``;
    a negative draw is drawn again, so it is a normal truncated at 0), ``"lognormal"`` (mean ``mean``,
    ``sigma`` the standard deviation of the log) or ``"exponential"`` (mean ``mean``). Times are ps or
    strings like ``"20us"``. Draws are rounded to whole ps.
    """

    dist: str = "constant"
    mean: int | str = 0
    std: int | str = 0
    sigma: float = 0.0
    seed: int = 1

    def __post_init__(self) -> None:
        if self.dist not in DISTRIBUTIONS:
            raise ValueError(f"compute dist = {self.dist!r}: allowed {', '.join(DISTRIBUTIONS)}")
        time_ps(self.mean, "compute mean")
        time_ps(self.std, "compute std")
        if isinstance(self.sigma, bool) or not isinstance(self.sigma, (int, float)) or not (
                0.0 <= self.sigma <= 10.0):
            raise ValueError(f"compute sigma = {self.sigma!r} must be a number in [0, 10]")
        if self.dist != "normal" and time_ps(self.std, "compute std"):
            raise ValueError(f"compute std applies only to dist 'normal', not {self.dist!r}")
        if self.dist != "lognormal" and self.sigma:
            raise ValueError(f"compute sigma applies only to dist 'lognormal', not {self.dist!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"compute seed = {self.seed!r} must be an int >= 0")

    def draw(self, timesteps: int, ranks: int) -> np.ndarray:
        """Compute times (int64 ps), shape (timesteps, ranks); the same for the same seed."""
        mean = time_ps(self.mean, "compute mean")
        shape = (timesteps, ranks)
        if self.dist == "constant" or mean == 0:
            return np.full(shape, mean, dtype=np.int64)
        rng = np.random.default_rng(self.seed)
        if self.dist == "exponential":
            out = rng.exponential(mean, shape)
        elif self.dist == "lognormal":
            mu = math.log(mean) - self.sigma**2 / 2  # so that the mean is `mean`
            out = rng.lognormal(mu, self.sigma, shape)
        else:
            std = time_ps(self.std, "compute std")
            out = rng.normal(mean, std, shape)
            bad = out < 0
            while bad.any():
                out[bad] = rng.normal(mean, std, int(bad.sum()))
                bad = out < 0
        out = np.rint(out)
        if (out > MAX_TIME_PS).any():
            raise ValueError(f"compute {self.dist}: a draw of {float(out.max()):.3g} ps is past the latest "
                             f"time allowed ({MAX_TIME_PS} ps)")
        return out.astype(np.int64)


def _compute_spec(compute: Compute | int | str) -> Compute:
    return compute if isinstance(compute, Compute) else Compute("constant", compute)


def grid_neighbours(dims: Sequence[int], periodic: bool = True) -> list[list[int]]:
    """Each rank's neighbours on the grid ``dims`` (row-major ranks), -1 and +1 along each dimension of
    size > 1; past a non-periodic edge there is none. On a periodic dimension of size 2 both faces go
    to the same rank (two messages, as an MPI code sends them)."""
    dims = _check_dims(dims)
    p = math.prod(dims)
    strides = [math.prod(dims[d + 1:]) for d in range(len(dims))]
    out: list[list[int]] = []
    for r in range(p):
        coord = [(r // strides[d]) % dims[d] for d in range(len(dims))]
        mine = []
        for d, size in enumerate(dims):
            if size == 1:
                continue
            for step in (-1, 1):
                c = coord[d] + step
                if not 0 <= c < size:
                    if not periodic:
                        continue
                    c %= size
                mine.append(r + (c - coord[d]) * strides[d])
        out.append(mine)
    return out


def _check_dims(dims: Sequence[int]) -> list[int]:
    out = list(dims) if isinstance(dims, (list, tuple)) else None
    if out is None or len(out) not in (2, 3) or any(
            isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in out):
        raise ValueError(f"dims = {dims!r} must be 2 or 3 ints >= 1 (the process grid)")
    if math.prod(out) < 2:
        raise ValueError(f"dims = {dims!r}: the grid needs at least 2 ranks")
    return [int(d) for d in out]


class _Flows:
    """Flows with dependencies and holds, added in an order that respects them (so acyclic)."""

    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []
        self.size: list[int] = []
        self.local: list[bool] = []
        self.hold: list[int] = []
        self.deps: list[list[int]] = []

    def add(self, src: int, dst: int, size: int, deps: Sequence[int] = (), *, hold: int = 0,
            local: bool = False) -> int:
        self.src.append(src)
        self.dst.append(dst)
        self.size.append(size)
        self.local.append(local)
        self.hold.append(hold)
        self.deps.append(sorted({d for d in deps if d >= 0}))
        return len(self.src) - 1

    def compute(self, rank: int, hold: int, deps: Sequence[int] = ()) -> int:
        return self.add(rank, rank, 0, deps, hold=hold, local=True)

    def table(self, hosts: np.ndarray, start: int | str, verb: str | int, priority: int,
              group: str | None) -> FlowTable:
        ptr, flat = deps_csr(self.deps)
        code = verb_code(verb)
        if code == LOCAL:
            raise ValueError("verb = 'LOCAL': the messages of a pattern cross the fabric "
                             "(WRITE, READ or SEND)")
        verbs = np.where(np.asarray(self.local, dtype=bool), LOCAL, code)
        return FlowTable.from_columns(
            hosts[np.asarray(self.src, dtype=np.int64)], hosts[np.asarray(self.dst, dtype=np.int64)],
            np.asarray(self.size, dtype=np.int64), time_ps(start, "start"), verb=verbs,
            priority=check_priority(priority), group=-1 if group is None else 0,
            groups=() if group is None else (group,), hold_ps=np.asarray(self.hold, dtype=np.int64),
            dep_ptr=ptr, deps=flat)


def _barrier(flows: _Flows, arrive: Sequence[int], kind: str, size: int) -> list[int]:
    """Add a barrier among ``len(arrive)`` ranks (rank r arrives when flow ``arrive[r]`` finishes);
    returns the flow after which each rank leaves it."""
    p = len(arrive)
    if kind == "none" or p < 2:
        return list(arrive)
    if kind == "dissemination":
        last_out, last_in = list(arrive), [-1] * p
        for k in range(math.ceil(math.log2(p))):
            dist = 1 << k
            out = [flows.add(r, (r + dist) % p, size, (last_out[r], last_in[r])) for r in range(p)]
            last_out = out
            last_in = [out[(r - dist) % p] for r in range(p)]
        return [flows.compute(r, 0, (last_out[r], last_in[r])) for r in range(p)]
    if kind != "tree":
        raise ValueError(f"barrier = {kind!r}: allowed {', '.join(BARRIERS)}")
    up = [-1] * p
    for r in range(p - 1, 0, -1):  # children (higher ranks) report before their parents
        kids = [up[c] for c in (2 * r + 1, 2 * r + 2) if c < p]
        up[r] = flows.add(r, (r - 1) // 2, size, [arrive[r], *kids])
    gathered = flows.compute(0, 0, [arrive[0], *(up[c] for c in (1, 2) if c < p)])
    leave = [gathered] + [-1] * (p - 1)
    for r in range(1, p):  # parents release before their children
        leave[r] = flows.add((r - 1) // 2, r, size, (leave[(r - 1) // 2],))
    return leave


def halo_exchange(
    dims: Sequence[int],
    face_size: int | str,
    *,
    timesteps: int = 1,
    periodic: bool = True,
    compute: Compute | int | str = 0,
    extra_compute: Mapping[int, int | str] | None = None,
    barrier_kind: str = "dissemination",
    barrier_size: int | str = 8,
    overlap: bool = False,
    hosts: Hosts | None = None,
    start: int | str = 0,
    verb: str | int = "WRITE",
    priority: int = 3,
    group: str | None = "halo",
) -> FlowTable:
    """Halo exchange on the process grid ``dims`` (2 or 3 ints; ranks row-major) for ``timesteps`` steps.

    ``face_size``: bytes sent to each neighbour per step. ``compute``: each rank's compute time per
    step (a time, or a :class:`Compute` distribution); ``extra_compute``: rank -> time added to its
    compute in every step (a straggler). ``barrier_kind``: ``"dissemination"``, ``"tree"`` or ``"none"``,
    of ``barrier_size``-byte messages. ``overlap``: send the halo while computing (module docstring).
    ``hosts``: the ranks' hosts (default ``0 .. P-1``; P = the product of ``dims``).
    """
    dims = _check_dims(dims)
    p = math.prod(dims)
    h = host_array(p if hosts is None else hosts, "hosts")
    if h.size != p:
        raise ValueError(f"halo_exchange: dims {dims} make {p} ranks, but {h.size} hosts are given")
    face = flow_size(face_size, "face_size")
    bsize = flow_size(barrier_size, "barrier_size")
    if isinstance(timesteps, bool) or not isinstance(timesteps, (int, np.integer)) or not (
            1 <= timesteps <= MAX_TIMESTEPS):
        raise ValueError(f"timesteps = {timesteps!r} must be an int in [1, {MAX_TIMESTEPS}]")
    if barrier_kind not in BARRIERS:
        raise ValueError(f"barrier = {barrier_kind!r}: allowed {', '.join(BARRIERS)}")
    work = _compute_spec(compute).draw(int(timesteps), p)
    for rank, extra in (extra_compute or {}).items():
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < p:
            raise ValueError(f"extra_compute: rank {rank!r} is not a rank in [0, {p - 1}]")
        work[:, rank] += time_ps(extra, f"extra_compute[{rank}]")
    nbrs = grid_neighbours(dims, periodic)
    flows = _Flows()
    ready = [-1] * p
    for t in range(int(timesteps)):
        comp = [flows.compute(r, int(work[t, r]), (ready[r],)) for r in range(p)]
        sends: list[list[int]] = [[] for _ in range(p)]
        into: list[list[int]] = [[] for _ in range(p)]
        for r in range(p):
            after = ready[r] if overlap else comp[r]
            for n in nbrs[r]:
                f = flows.add(r, n, face, (after,))
                sends[r].append(f)
                into[n].append(f)
        join = [flows.compute(r, 0, [comp[r], *sends[r], *into[r]]) for r in range(p)]
        ready = _barrier(flows, join, barrier_kind, bsize)
    return flows.table(h, start, verb, priority, group)


def barrier_rounds(p: int, kind: str) -> int:
    """Dependent message hops of one barrier of ``p`` ranks: ceil(log2 p) (dissemination), twice the
    binary tree's depth (tree), 0 (none)."""
    if kind == "none" or p < 2:
        return 0
    if kind == "dissemination":
        return math.ceil(math.log2(p))
    if kind == "tree":
        return 2 * (p.bit_length() - 1)  # depth of the tree with parent (r-1)/2: floor(log2 p)
    raise ValueError(f"barrier = {kind!r}: allowed {', '.join(BARRIERS)}")


def halo_model_ps(dims: Sequence[int], face_size: int | str, alpha_ps: float, beta_ps_per_byte: float, *,
                  timesteps: int = 1, periodic: bool = True, compute_ps: int = 0,
                  barrier_kind: str = "dissemination", barrier_size: int | str = 8,
                  overlap: bool = False, barrier_msg_ps: float | None = None) -> float:
    """Alpha-beta time of :func:`halo_exchange` with a constant compute on an idle fabric, one link per
    rank: per timestep, the compute, then (or, with ``overlap``, at the same time) the halo step
    ``alpha + B beta`` where B is the most bytes one rank sends or receives (its faces share its link),
    then ``barrier_rounds`` small messages of ``barrier_msg_ps`` each (default ``alpha + b beta``; a
    message far below the MTU is faster than alpha, which includes the switch's store-and-forward of a
    whole MTU-sized packet, so the validation measures it)."""
    dims = _check_dims(dims)
    face = size_bytes(face_size, "face_size")
    nbrs = grid_neighbours(dims, periodic)
    sent = [len(n) * face for n in nbrs]
    got = [0] * len(nbrs)
    for n in nbrs:
        for q in n:
            got[q] += face
    most = max(max(sent), max(got))
    halo = alpha_ps + most * beta_ps_per_byte if most else 0.0
    step = max(compute_ps, halo) if overlap else compute_ps + halo
    b = size_bytes(barrier_size, "barrier_size")
    rounds = barrier_rounds(math.prod(dims), barrier_kind)
    msg = alpha_ps + b * beta_ps_per_byte if barrier_msg_ps is None else barrier_msg_ps
    return timesteps * (step + rounds * msg)


__all__ = ["BARRIERS", "DISTRIBUTIONS", "Compute", "barrier_rounds", "grid_neighbours",
           "halo_exchange", "halo_model_ps"]
