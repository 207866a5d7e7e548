"""Bulk flows start at max(start time, time added, finish of every dependency), whatever order
their start times come in: the core keeps ready flows in a FIFO while they arrive in (start, id)
order and in a heap otherwise (csrc/workload/flows.c), and must always start the earliest."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rdmasim import topology, traffic

US = 1_000_000  # ps


def _expected_start(r: np.ndarray, added_ps: int, dep_ptr: list[int], deps: list[int]) -> list[int]:
    out = []
    for i in range(len(r)):
        waits = [int(r["finish_ps"][d]) for d in deps[dep_ptr[i]:dep_ptr[i + 1]]]
        out.append(max([int(r["start_ps"][i]), added_ps] + waits))
    return out


def _batch(draw: st.DrawFn, n: int) -> tuple[list[int], list[int], list[int], list[int]]:
    # few distinct start times, so that ties (broken by flow id) are common
    start = draw(st.lists(st.sampled_from([0, 1, 2, 3, 5, 8, 13]), min_size=n, max_size=n))
    size = draw(st.lists(st.integers(1, 6000), min_size=n, max_size=n))
    dep_ptr, deps = [0], []
    for i in range(n):
        if i:
            deps += sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=2))))
        dep_ptr.append(len(deps))
    return [t * US for t in start], size, dep_ptr, deps


@st.composite
def batches(draw: st.DrawFn) -> list[tuple[list[int], list[int], list[int], list[int]]]:
    return [_batch(draw, draw(st.integers(1, 25))) for _ in range(draw(st.integers(1, 3)))]


@settings(max_examples=40, deadline=None)
@given(batches(), st.integers(0, 10))
def test_each_flow_starts_when_due_in_any_arrival_order(plan, gap_us: int) -> None:
    sim = topology.incast(4, rate="100Gbps", delay="1us", mtu=1024).sim
    added = []
    for start, size, dep_ptr, deps in plan:
        n = len(start)
        table = traffic.FlowTable.from_columns(src=[i % 4 for i in range(n)], dst=[4] * n, size=size,
                                               start_ps=start, dep_ptr=dep_ptr, deps=deps)
        added.append((sim.now, sim.add_flows(table), dep_ptr, deps))
        sim.run_flows(until=sim.now + gap_us * US)  # later batches arrive while others run
    sim.run_flows()
    for added_ps, fs, dep_ptr, deps in added:
        r = fs.results()
        assert (r["status"] == 0).all()
        assert r["started_ps"].tolist() == _expected_start(r, added_ps, dep_ptr, deps)


def test_many_flows_due_at_once_start_in_id_order_with_late_comers_first_when_earlier() -> None:
    sim = topology.incast(4, rate="100Gbps", delay="1us", mtu=1024).sim
    n = 2000
    # most start together (the in-order FIFO), a reversed run at later times (the heap)
    start = [0] * 1500 + [int(t) for t in np.arange(500, 0, -1) * US // 100]
    fs = sim.add_flows(traffic.FlowTable.from_columns(src=np.arange(n) % 4, dst=[4] * n, size=[2000] * n,
                                                      start_ps=start))
    sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all()
    assert (r["started_ps"] == r["start_ps"]).all()
