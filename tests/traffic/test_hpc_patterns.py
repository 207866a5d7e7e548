"""Halo exchange: grid neighbours, flow structure, compute distributions, and its alpha-beta model.

The model (rdmasim.traffic.hpc.halo_model_ps) uses alpha and beta measured on the same idle star
(collective_util.alpha_beta) and the measured time of one barrier-sized message. Tolerance: 1% of the
model, for grids that are periodic or use the dissemination barrier (on a non-periodic grid with a tree
barrier the model is an upper bound: the ranks deepest in the tree are the grid's corners, whose halo is
smaller than the interior's; measured 4.7% under it for 4x4). The table in docs/hpc-patterns.md comes from
the same code: python docs/gen_hpc.py
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from collective_util import alpha_beta
from hpc_util import run, span

from rdmasim import traffic as tr
from rdmasim.traffic.critical_path import analyze
from rdmasim.traffic.hpc import Compute, barrier_rounds, grid_neighbours, halo_exchange, halo_model_ps
from rdmasim.traffic.table import LOCAL

US = 1_000_000
TOL = 0.01
_MSG: list[int] = []


def barrier_msg_ps(size: int = 8) -> int:
    """Measured time of one ``size``-byte message between two hosts of the idle star."""
    if not _MSG:
        res, _ = run(tr.FlowTable.from_columns([0], [1], [size]), 2)
        _MSG.append(span(res))
    return _MSG[0]


def test_grid_neighbours() -> None:
    nb = grid_neighbours([4, 3], periodic=True)
    assert len(nb) == 12 and all(len(n) == 4 for n in nb)
    assert sorted(nb[0]) == sorted([9, 3, 2, 1])  # (0,0): up (3,0), down (1,0), left (0,2), right (0,1)
    open_ = grid_neighbours([4, 3], periodic=False)
    assert sorted(len(n) for n in open_) == [2] * 4 + [3] * 6 + [4] * 2  # corners, edges, interior
    for grid in (open_, grid_neighbours([2, 2, 2]), grid_neighbours([3, 1, 5], periodic=False)):
        pairs = [(r, q) for r, n in enumerate(grid) for q in n]  # a neighbour of mine has me as one
        assert sorted(pairs) == sorted((q, r) for r, q in pairs)
    assert [len(n) for n in grid_neighbours([2, 2, 2])] == [6] * 8  # periodic size 2: both faces, one rank


def test_flow_structure() -> None:
    dims, steps = [4, 2], 3
    t = halo_exchange(dims, "64KiB", timesteps=steps, compute="5us", barrier_kind="dissemination")
    t.validate(8)
    f = t.flows
    local = f["verb"] == LOCAL
    p, sends = 8, 8 * 4
    rounds = math.ceil(math.log2(p))
    assert int(local.sum()) == steps * 3 * p  # compute, join, barrier exit
    assert int((~local).sum()) == steps * (sends + rounds * p)
    assert set(f["size"][~local].tolist()) == {64 << 10, 8}
    assert (f["src"][local] == f["dst"][local]).all() and (f["size"][local] == 0).all()
    assert set(f["hold_ps"][local].tolist()) == {0, 5 * US}
    assert t.groups == ["halo"]
    t.topological_order()  # acyclic


@pytest.mark.parametrize(("dims", "periodic", "barrier", "face", "compute_us", "overlap"), [
    ([4, 2], True, "dissemination", 64 << 10, 0, False),
    ([4, 4], True, "tree", 8 << 10, 5, False),
    ([4, 4], False, "dissemination", 256 << 10, 20, False),
    ([2, 2, 2], True, "dissemination", 128 << 10, 10, True),
    ([4, 4], True, "tree", 8 << 10, 5, True),
    ([4, 2], True, "none", 1 << 20, 0, False),
])
def test_halo_time_matches_the_model(dims: list[int], periodic: bool, barrier: str, face: int,
                                     compute_us: int, overlap: bool) -> None:
    p = math.prod(dims)
    t = halo_exchange(dims, face, timesteps=3, periodic=periodic, compute=compute_us * US,
                      barrier_kind=barrier, overlap=overlap)
    res, _ = run(t, p)
    ab = alpha_beta()
    model = halo_model_ps(dims, face, ab.alpha_ps, ab.beta_ps_per_byte, timesteps=3, periodic=periodic,
                          compute_ps=compute_us * US, barrier_kind=barrier, overlap=overlap,
                          barrier_msg_ps=barrier_msg_ps())
    assert abs(span(res) / model - 1) <= TOL, f"{span(res)} ps vs model {model:.0f} ps"


def test_overlap_hides_the_shorter_of_compute_and_halo() -> None:
    dims, face, compute = [4, 2], 256 << 10, 200 * US  # halo ~ 4.4 + 1 MiB x 82 ps = 90 us < compute
    plain, _ = run(halo_exchange(dims, face, timesteps=2, compute=compute), 8)
    hidden, _ = run(halo_exchange(dims, face, timesteps=2, compute=compute, overlap=True), 8)
    ab = alpha_beta()
    halo = ab.alpha_ps + 4 * face * ab.beta_ps_per_byte
    saved = span(plain) - span(hidden)
    assert abs(saved / (2 * halo) - 1) <= TOL


def test_random_compute_costs_the_slowest_rank_each_step() -> None:
    """With a barrier, each timestep lasts the slowest rank's compute plus the communication."""
    dims, steps = [4, 2], 5
    comp = Compute("lognormal", mean=20 * US, sigma=0.5, seed=7)
    t = halo_exchange(dims, 16 << 10, timesteps=steps, compute=comp)
    res, _ = run(t, 8)
    ab = alpha_beta()
    comm = halo_model_ps(dims, 16 << 10, ab.alpha_ps, ab.beta_ps_per_byte, timesteps=steps,
                         barrier_msg_ps=barrier_msg_ps())
    slowest = int(comp.draw(steps, 8).max(axis=1).sum())
    assert abs(span(res) / (comm + slowest) - 1) <= TOL


def test_a_slow_rank_in_the_halo_is_on_the_critical_path() -> None:
    dims, steps, extra = [4, 2], 3, 30 * US
    base, _ = run(halo_exchange(dims, 16 << 10, timesteps=steps, compute=10 * US), 8)
    t = halo_exchange(dims, 16 << 10, timesteps=steps, compute=10 * US, extra_compute={5: extra})
    res, sim = run(t, 8)
    assert abs((span(res) - span(base)) / (steps * extra) - 1) <= TOL  # the barrier lets nothing overlap it
    a = analyze(t, res, sim)
    assert a.compute_by_rank["h5"] == steps * (10 * US + extra)
    assert a.bottleneck == "rank h5"
    wait = a.wait()
    assert wait["h5"] == min(wait.values())


@pytest.mark.parametrize("dist", ["normal", "lognormal", "exponential"])
def test_compute_distributions(dist: str) -> None:
    kw = {"normal": {"std": 5 * US}, "lognormal": {"sigma": 0.5}, "exponential": {}}[dist]
    c = Compute(dist, mean=20 * US, seed=3, **kw)
    d = c.draw(400, 50)
    assert d.dtype == np.int64 and d.shape == (400, 50) and (d >= 0).all()
    assert np.array_equal(d, Compute(dist, mean=20 * US, seed=3, **kw).draw(400, 50))  # seeded
    assert not np.array_equal(d, Compute(dist, mean=20 * US, seed=4, **kw).draw(400, 50))
    assert abs(d.mean() / (20 * US) - 1) <= 0.02  # 20000 draws
    spread = {"normal": 5 * US, "lognormal": 20 * US * math.sqrt(math.exp(0.25) - 1), "exponential": 20 * US}
    assert abs(d.std() / spread[dist] - 1) <= 0.05


def test_barrier_rounds() -> None:
    assert [barrier_rounds(p, "dissemination") for p in (2, 3, 4, 5, 8, 9)] == [1, 2, 2, 3, 3, 4]
    assert [barrier_rounds(p, "tree") for p in (2, 3, 4, 7, 8)] == [2, 2, 4, 4, 6]
    assert barrier_rounds(8, "none") == 0


@pytest.mark.parametrize(("kw", "says"), [
    ({"dims": [8]}, "2 or 3 ints"),
    ({"dims": [1, 1]}, "at least 2 ranks"),
    ({"dims": [2, 0]}, "2 or 3 ints"),
    ({"timesteps": 0}, r"timesteps = 0 must be an int in \[1, 100000\]"),
    ({"barrier_kind": "ring"}, "allowed dissemination, tree, none"),
    ({"hosts": [0, 1, 2]}, "make 4 ranks, but 3 hosts"),
    ({"extra_compute": {4: 10}}, r"rank 4 is not a rank in \[0, 3\]"),
    ({"verb": "LOCAL"}, "cross the fabric"),
    ({"compute": Compute("exponential", mean=1, seed=0)}, None),
])
def test_halo_arguments(kw: dict, says: str | None) -> None:
    args = {"dims": [2, 2], "face_size": 1024, **kw}
    if says is None:
        halo_exchange(**args).validate(4)
        return
    with pytest.raises(ValueError, match=says):
        halo_exchange(**args)


@pytest.mark.parametrize(("kw", "says"), [
    ({"dist": "gamma"}, "allowed constant, normal"),
    ({"dist": "constant", "std": 5}, "std applies only to dist 'normal'"),
    ({"dist": "normal", "sigma": 0.3}, "sigma applies only to dist 'lognormal'"),
    ({"dist": "lognormal", "sigma": -1.0}, r"sigma = -1.0 must be a number in \[0, 10\]"),
    ({"dist": "normal", "mean": "-3us"}, "compute mean"),
    ({"dist": "normal", "seed": -1}, "seed = -1"),
])
def test_compute_arguments(kw: dict, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Compute(**kw)
