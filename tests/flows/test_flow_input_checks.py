"""add_flows against hostile input: every value is checked before the C core reads it (and the core
checks again), refusals name the column, the row and the allowed range, and a refused call leaves
the simulation as it was."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rdmasim import topology, traffic
from rdmasim.checks import MAX_TIME_PS
from rdmasim.traffic import FlowTable


def _sim() -> Any:
    return topology.incast(2, rate="100Gbps", delay="1us", mtu=1024).sim  # hosts 0, 1 -> 2


class _Table:
    """A duck-typed table: columns plus raw CSR arrays, as a user (or a fuzzer) may hand over."""

    def __init__(self, dep_ptr: Any = None, deps: Any = None, **cols: Any) -> None:
        self.flows = {"src": [0, 1], "dst": [2, 2], "size": [1000, 1000], **cols}
        if dep_ptr is not None:
            self.dep_ptr, self.deps = dep_ptr, deps


def _refused(sim: Any, table: Any, exc: type[Exception], match: str, **kw: Any) -> None:
    with pytest.raises(exc, match=match):
        sim.add_flows(table, **kw)
    assert sim._flows_core().counts()["total"] == 0, "a refused call must add nothing"


@pytest.mark.parametrize(
    ("dep_ptr", "deps", "match"),
    [
        ([-4, 0, 1], [0], r"column 'dep_ptr': row 0 = -4 .*allowed \[0, 1\]"),
        ([-(2**40), 0, 1], [0], r"column 'dep_ptr': row 0 = -1099511627776"),
        ([0, 5, 6], [0], r"column 'dep_ptr': row 1 = 5 .*allowed \[0, 1\]"),
        ([0, 0], [], r"'dep_ptr' has 2 entries, it needs len\(flows\) \+ 1 = 3"),
        ([0, 0, 1], [7], r"column 'deps', row 0 = 7: flow 1 depends on a flow outside \[0, 1\]"),
        ([0, 0, 1], [-3], r"column 'deps', row 0 = -3"),
        ([0, 0, 1], [1], r"row 0 = 1: flow 1 depends on itself"),
        ([0.0, 0.0, 1.0], [0], r"column 'dep_ptr': row 0 = 0.0 is not an integer"),
    ],
)
def test_bad_dependency_arrays_are_refused_before_any_read(dep_ptr: Any, deps: Any, match: str) -> None:
    # [-4, 0, 1] read deps[-4] in C (a segfault, or a garbage "dependency 6506")
    exc = TypeError if isinstance(dep_ptr[0], float) else ValueError
    _refused(_sim(), _Table(dep_ptr, deps), exc, match)


def test_a_decreasing_dep_ptr_is_refused() -> None:
    t = _Table([0, 2, 1, 2], [1, 0], src=[0, 1, 0], dst=[2, 2, 1], size=[10, 10, 10])
    _refused(_sim(), t, ValueError, r"column 'dep_ptr', row 2 = 1 is below row 1 = 2")


def test_a_dependency_cycle_is_refused_not_left_waiting_forever() -> None:
    sim = _sim()
    _refused(sim, _Table([0, 1, 2], [1, 0]), ValueError, r"dependency cycle: flow 0 -> 1 -> 0")
    t = FlowTable.from_columns([0, 1, 0], [2, 2, 1], 1000, dep_ptr=[0, 1, 2, 3], deps=[2, 0, 1])
    _refused(sim, t, ValueError, r"cycle: flow .*3 flows can never start")


@pytest.mark.parametrize(
    ("cols", "exc", "match"),
    [
        ({"src": [2**32 + 2, 1]}, ValueError, r"column 'src': row 0 = 4294967298 .*allowed \[0, 2\]"),
        ({"src": np.array([0, 2**32 + 1], dtype=np.uint64)}, ValueError, r"column 'src': row 1 = 4294967297"),
        ({"dst": [2, 2**64 + 2]}, ValueError, r"column 'dst': row 1 = 18446744073709551618"),
        ({"dst": [2, -1]}, ValueError, r"column 'dst': row 1 = -1 .*allowed \[0, 2\]"),
        ({"priority": [3, 259]}, ValueError, r"column 'priority': row 1 = 259 .*allowed \[0, 7\]"),
        ({"verb": [256, 0]}, ValueError, r"column 'verb'.*row 0 = 256 .*allowed \[0, 3\]"),
        ({"size": [1000, 1000.9]}, TypeError,
         r"column 'size': row 1 = 1000.9 .*is not an integer in \[0, 2147483647\]"),
        ({"size": [1000, 2**31]}, ValueError, r"column 'size': row 1 = 2147483648"),
        ({"size": np.array([True, True])}, TypeError, r"column 'size' must hold integers"),
        ({"src": [0, "h1"]}, ValueError, r"column 'src'"),
        ({"start_ps": [0, float("nan")]}, TypeError, r"column 'start_ps': row 1 = nan .*is not an integer"),
        ({"start_ps": [float("inf"), 0]}, TypeError, r"column 'start_ps': row 0 = inf .*is not an integer"),
        ({"start_ps": [0, -5_000_000]}, ValueError, r"column 'start_ps': row 1 = -5000000 .*allowed \[0, "),
        ({"start_ps": [MAX_TIME_PS + 1, 0]}, ValueError,
         rf"row 0 = {MAX_TIME_PS + 1} .*allowed \[0, {MAX_TIME_PS}\]"),
        ({"start_ps": 2.5}, TypeError, r"column 'start_ps'"),
        ({"priority": 9}, ValueError, r"column 'priority': row 0 = 9"),
    ],
)
def test_values_are_refused_not_cast(cols: dict[str, Any], exc: type[Exception], match: str) -> None:
    _refused(_sim(), _Table(**cols), exc, match)


@pytest.mark.parametrize(
    ("knob", "match"),
    [
        ({"timeout": 32}, r"timeout = 32 .*allowed \[0, 31\]"),
        ({"retry_cnt": 8}, r"retry_cnt = 8 .*allowed \[0, 7\]"),
        ({"rnr_retry": -1}, r"rnr_retry = -1"),
        ({"min_rnr_timer": 40}, r"min_rnr_timer = 40"),
        ({"max_rd_atomic": 0}, r"max_rd_atomic = 0 .*allowed \[1, 128\]"),
        ({"recovery": "irn", "irn_window": 0}, r"irn_window = 0 .*allowed \[1, 65536\]"),
        ({"recovery": "irn", "rto_low": "10us", "rto_high": "1us"}, r"rto_high .*allowed \[10000000, "),
        ({"timeout": 14.0}, r"timeout must be an integer"),
    ],
)
def test_a_bad_qp_knob_is_refused_at_add_and_the_sim_stays_usable(knob: dict[str, Any], match: str) -> None:
    # these raised MemoryError at run_flows (the QP state machine refused them when the flow started),
    # and every later run_flows raised it again
    sim = _sim()
    exc = TypeError if isinstance(knob.get("timeout"), float) else ValueError
    _refused(sim, _Table(), exc, match, **knob)
    fs = sim.add_flows(_Table())
    sim.run_flows()
    assert fs.results()["status"].tolist() == [0, 0]


def test_the_core_checks_again_whatever_it_is_handed() -> None:
    """The C side never trusts its caller: hostile arrays straight to the core are ValueErrors."""
    sim = _sim()
    fc = sim._flows_core()
    cfg = {"path_mtu": 3, "timeout": 14, "retry_cnt": 7, "rnr_retry": 7, "min_rnr_timer": 12,
           "max_rd_atomic": 1, "recovery_mode": 0}
    cols = {"src": [0, 1], "dst": [2, 2], "size": [100, 100], "start_ps": [0, 0], "verb": [0, 0],
            "priority": [3, 3]}

    def add(dep_ptr: Any = None, deps: Any = None, cfg: dict[str, Any] = cfg, **over: Any) -> None:
        c = {k: np.array(v) for k, v in {**cols, **over}.items()}
        fc.add(c["src"], c["dst"], c["size"], c["start_ps"], c["verb"], c["priority"],
               None if dep_ptr is None else np.array(dep_ptr), None if deps is None else np.array(deps), cfg)

    for kw, match in [
        ({"dep_ptr": [-4, 0, 1], "deps": [0]}, r"dep_ptr\[0\] = -4: must be 0"),
        ({"dep_ptr": [0, 9, 1], "deps": [0]}, r"dep_ptr\[1\] = 9"),
        ({"dep_ptr": [0, 1, 2], "deps": [1, 0]}, r"dependency cycle: 2 flows"),
        ({"dep_ptr": [0, 0, 1], "deps": [5]}, r"flow 1: dependency 5 is not another flow"),
        ({"start_ps": [-1, 0]}, r"flow 0: start -1 ps outside 0\.\."),
        ({"start_ps": [0, MAX_TIME_PS + 1]}, r"flow 1: start \d+ ps outside"),
        ({"cfg": {**cfg, "timeout": 32}}, r"timeout 32 outside 0\.\.31"),
        ({"cfg": {**cfg, "max_rd_atomic": 0}}, r"max_rd_atomic 0 outside 1\.\.128"),
        ({"cfg": {**cfg, "recovery_mode": 1, "window": 70000, "rto_low_ps": 1, "rto_high_ps": 2}},
         r"IRN window 70000 outside 1\.\.65536"),
        ({"cfg": {**cfg, "recovery_mode": 1, "window": 8, "rto_low_ps": 5, "rto_high_ps": 2}},
         r"rto_low 5 ps, rto_high 2 ps"),
    ]:
        with pytest.raises(ValueError, match=match):
            add(**kw)
        assert fc.counts()["total"] == 0
    add()
    sim.run_flows()
    assert fc.counts() == {"total": 2, "started": 2, "finished": 2, "failed": 0}


def test_flows_near_the_time_limit_keep_the_clock_forward() -> None:
    # a flow starting at 2^63 - 1000 ps once made its QP timers wrap and the clock go negative
    sim = _sim()
    t = FlowTable.from_columns([0], [2], 1000, start_ps=MAX_TIME_PS)
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    assert r["status"].tolist() == [0]
    assert r["started_ps"][0] == MAX_TIME_PS
    assert MAX_TIME_PS < r["finish_ps"][0] < MAX_TIME_PS + 10**9
    assert sim.now >= MAX_TIME_PS


def test_run_until_past_the_time_limit_is_refused() -> None:
    sim = _sim()
    for until in (2**63, MAX_TIME_PS + 1):
        with pytest.raises(
                ValueError, match=rf"until .*= {until} is out of range: allowed \[0, {MAX_TIME_PS}\]"):
            sim.run(until=until)
    with pytest.raises(ValueError, match="negative"):
        sim.run(until=-1)
    with pytest.raises(ValueError, match="until"):
        sim.run_flows(until=2**63 + 5)
    assert sim.now == 0


def test_flow_table_validate_refuses_start_past_the_time_limit() -> None:
    t = FlowTable.from_columns([0], [1], 100, start_ps=MAX_TIME_PS + 1)
    with pytest.raises(ValueError, match=rf"start_ps = {MAX_TIME_PS + 1} .*\[0, {MAX_TIME_PS}\]"):
        t.validate(2)
    with pytest.raises(ValueError, match="start_ps"):
        traffic.incast([1], 0, 100).shifted(2**63 - 5)


def test_sampling_flows_that_run_past_the_time_limit() -> None:
    sim = _sim()
    t = FlowTable.from_columns([0, 1], [2, 2], 100_000, start_ps=MAX_TIME_PS - 2_000_000)
    fs = sim.add_flows(t)
    samples = sim.run_flows(sample_every="1us")
    assert fs.results()["status"].tolist() == [0, 0]
    assert fs.results()["finish_ps"].max() > MAX_TIME_PS  # the flows ran past the limit, the clock too
    assert len(samples.t_ps) and samples.t_ps.max() <= MAX_TIME_PS  # samples stop at the limit
