"""alpha-beta validation of every collective algorithm on an idle lossless star (PFC on, no loss).

alpha and beta are measured on the same fabric (collective_util.measure_alpha_beta). Tolerances:
one flow per step and rank (ring, halving-doubling, recursive doubling, all-gather, reduce-scatter,
all-to-all): within 1% of the Thakur, Rabenseifner and Gropp (2005) formula. Pipelined algorithms (chunked
ring, chain broadcast/reduce, in-network): between the pipelined model (first chunk alone on the link) less
1% and its upper bound (the first chunks of a window sharing the link) plus 3%. The double binary tree: from
the model less 10% (4 ranks, 256 KiB: 0.91 of it; the busiest rank's link carries its leaf traffic in the
other tree while the first chunk fills the tree it is inner in, which the model counts as idle) to 12%
above the bound, because its links stay only about 90% busy (docs/collectives.md).
The table in docs/collectives.md comes from the same code: python docs/gen_collectives.py
"""

from __future__ import annotations

import pytest
from collective_util import CASES, Case, crossing, measure, model_crossover, ring_and_tree

ONE_FLOW_TOL = 0.01
PIPE_LOW, PIPE_HIGH, TREE_LOW, TREE_HIGH = 0.01, 0.03, 0.10, 0.12


def _check(case: Case, p: int, n: int) -> None:
    if case.power_of_two and p & (p - 1):
        pytest.skip("needs a power-of-two rank count")
    t, lo, hi = measure(case, p, n)
    if case.upper is None:
        assert abs(t / lo - 1) <= ONE_FLOW_TOL, f"{case.name}, p={p}, n={n}: {t} ps vs model {lo:.0f} ps"
    else:
        low, high = (TREE_LOW, TREE_HIGH) if "tree" in case.name else (PIPE_LOW, PIPE_HIGH)
        assert lo * (1 - low) <= t <= hi * (1 + high), (
            f"{case.name}, p={p}, n={n}: {t} ps outside the model's [{lo:.0f}, {hi:.0f}] ps")


@pytest.mark.parametrize("p", [4, 8, 16])
@pytest.mark.parametrize("n", [256 << 10, 2 << 20])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_completion_time_matches_the_model(case: Case, p: int, n: int) -> None:
    _check(case, p, n)


@pytest.mark.slow
@pytest.mark.parametrize("p", [4, 8, 16])
@pytest.mark.parametrize("n", [64 << 10, 8 << 20, 32 << 20])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_completion_time_matches_the_model_more_sizes(case: Case, p: int, n: int) -> None:
    _check(case, p, n)


def test_tree_wins_small_ring_wins_large() -> None:
    ring_small, tree_small = ring_and_tree(16, 128 << 10)
    ring_big, tree_big = ring_and_tree(16, 32 << 20)
    assert tree_small < 0.6 * ring_small  # 2 log p steps against 2(p-1)
    assert ring_big < 0.95 * tree_big  # 2(p-1)/p n bytes per link against 2n


@pytest.mark.slow
@pytest.mark.parametrize("p", [8, 16])
def test_ring_tree_crossover_where_the_models_cross(p: int) -> None:
    sizes = [int(2 ** (17 + k / 2)) for k in range(17)]  # 128 KiB .. 32 MiB
    ring, tree = zip(*(ring_and_tree(p, n) for n in sizes), strict=True)
    measured = crossing(sizes, list(tree), list(ring))
    assert measured is not None
    # the tree's links run about 92% busy where the model has 100%, which moves the crossing down: the
    # measured one is 0.88 (p=8) and 0.62 (p=16) of where the models cross (docs/collectives.md)
    assert 0.5 * model_crossover(p) <= measured <= 1.1 * model_crossover(p)
