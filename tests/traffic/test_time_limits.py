"""Generators and collectives against times past the core's limit and against huge Poisson tables:
start times are computed in Python ints and refused past MAX_TIME_PS (they once wrapped in int64 and
ran at t=0), and a Poisson table too large to build is refused before anything is allocated."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from rdmasim import traffic as tr
from rdmasim.checks import MAX_TIME_PS
from rdmasim.traffic.cdfs import SizeCDF


def test_incast_stagger_past_the_limit_is_refused() -> None:
    with pytest.raises(ValueError, match=rf"incast: start \+ stagger_ps.* is past .*{MAX_TIME_PS}"):
        tr.incast(range(1, 5), 0, 100, stagger_ps=2**62)
    t = tr.incast(range(1, 5), 0, 100, stagger_ps=2**60)  # 3 x 2^60 fits: exact, increasing
    assert t.flows["start_ps"].tolist() == [0, 2**60, 2**61, 3 * 2**60]


def test_all_to_all_rounds_never_wrap() -> None:
    # round 3 started at (3-1) x 2^62 = 2^63, which wrapped negative and ran before round 2
    with pytest.raises(ValueError, match=r"all_to_all: start \+ stagger_ps per round"):
        tr.all_to_all(4, 100, stagger_ps=2**62)
    t = tr.all_to_all(4, 100, start=2**60, stagger_ps=2**60)
    starts = t.flows["start_ps"]
    assert (np.diff(starts) >= 0).all() and int(starts.max()) == 3 * 2**60
    t.validate(4)


@pytest.mark.parametrize("start", [MAX_TIME_PS + 1, 2**63 - 1, "200000000s"])
def test_start_times_past_the_limit_are_refused_everywhere(start: int | str) -> None:
    for make in (lambda: tr.ring_allreduce(4, "1MiB", start=start),
                 lambda: tr.halving_doubling_allreduce(4, "1MiB", start=start),
                 lambda: tr.moe_all_to_all(3, 100, start=start),
                 lambda: tr.permutation(4, 100, seed=1, start=start),
                 lambda: tr.incast([1], 0, 100, start=start)):
        with pytest.raises(ValueError, match=rf"start .*allowed \[0, {MAX_TIME_PS}\]"):
            make()


def test_poisson_arrivals_stay_below_the_limit() -> None:
    with pytest.raises(ValueError, match=r"poisson: start \+ duration_ps"):
        tr.poisson(4, 0.5, "100Gbps", "1ms", start=MAX_TIME_PS - 10**6, seed=1)
    t = tr.poisson(4, 0.5, "100Gbps", "1ms", start=MAX_TIME_PS - 10**9, seed=1)
    assert len(t) and int(t.flows["start_ps"].max()) <= MAX_TIME_PS
    t.validate(4)


def test_a_huge_poisson_table_is_refused_before_allocating() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"duration_ps = 100000000000000000 .*flows .*over max_flows = "
                                             rf"{tr.POISSON_MAX_FLOWS}"):
            tr.poisson(16, 0.5, "100Gbps", "100000s", seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20  # it once allocated 11 GiB here
    with pytest.raises(ValueError, match="max_flows = 100"):
        tr.poisson(4, 0.5, "100Gbps", "10ms", seed=1, max_flows=100)
    assert 100 < len(tr.poisson(4, 0.5, "100Gbps", "10ms", seed=1, max_flows=10_000)) < 10_000


def test_poisson_with_zero_byte_sizes_is_a_clear_error() -> None:
    zero = SizeCDF((0.0, 0.0), (0.5, 1.0), name="zeros")  # sizes round up to 1 byte
    with pytest.raises(ValueError, match="mean flow size 1 B .*max_flows"):
        tr.poisson(4, 0.5, "100Gbps", "1s", size_cdf=zero, seed=1)


def test_from_columns_refuses_uint64_values_that_would_wrap() -> None:
    with pytest.raises(ValueError, match="start_ps = 18446744073709551615 does not fit"):
        tr.FlowTable.from_columns([0], [1], 100, start_ps=np.array([2**64 - 1], dtype=np.uint64))
