"""Dependencies on a flow's receipt (``FlowTable.dep_on`` = DEP_RECEIVED) and on the k-th of a
flow's dependency events (``FlowTable.need``).

A WRITE's receiver has every byte when its responder accepts the message's last packet in order; its
completion comes when that packet's ACK is back at the sender, half a round trip later. A flow that
waits for the receipt starts then; one that needs k of its dependencies starts at the k-th event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmasim import topology
from rdmasim.traffic import DEP_RECEIVED, FlowTable

US = 1_000_000
KIB = 1 << 10


def _run(table: FlowTable, n: int = 4, recovery: str | None = None) -> np.ndarray:
    sim = topology.star(n, rate="100Gbps", delay="4us", mtu=4096).sim
    fs = sim.add_flows(table, recovery=recovery)
    sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all()
    return r


def _pair(on: int, recovery: str | None = None) -> np.ndarray:
    t = FlowTable.from_columns(src=[0, 2], dst=[1, 3], size=[256 * KIB, 4 * KIB], dep_ptr=[0, 0, 1], deps=[0],
                               dep_on=[on])
    return _run(t, recovery=recovery)


@pytest.mark.parametrize("recovery", ["gbn", "irn"])
def test_receipt_is_half_a_round_trip_before_completion(recovery: str) -> None:
    done, recv = _pair(0, recovery), _pair(DEP_RECEIVED, recovery)
    assert done["finish_ps"][0] == recv["finish_ps"][0]
    assert done["started_ps"][1] == done["finish_ps"][0]
    early = int(recv["finish_ps"][0] - recv["started_ps"][1])
    assert 8 * US <= early < 9 * US, early  # the ACK's two 4 us links back, plus its serialization


def test_receipt_of_each_message_on_one_connection() -> None:
    """Three messages on one QP pair: a flow waiting for the second's receipt starts between the
    first's and the third's."""
    t = FlowTable.from_columns(src=[0, 0, 0, 2, 2], dst=[1, 1, 1, 3, 3],
                               size=[64 * KIB] * 3 + [KIB, KIB],
                               after=[0, 1, 1, 0, 0], dep_ptr=[0, 0, 0, 0, 1, 2], deps=[1, 1],
                               dep_on=[DEP_RECEIVED, 0])
    r = _run(t)
    recv2, done2 = int(r["started_ps"][3]), int(r["started_ps"][4])
    assert done2 == r["finish_ps"][1]
    assert r["finish_ps"][0] - 9 * US < recv2 < done2 - 8 * US  # the second's bytes, not the first's
    assert recv2 > r["finish_ps"][0] - 8 * US


def test_need_starts_at_the_kth_completion() -> None:
    t = FlowTable.from_columns(src=[0, 2, 1, 3, 1], dst=[1, 3, 0, 2, 2],
                               size=[4 * KIB, 512 * KIB, KIB, KIB, KIB],
                               dep_ptr=[0, 0, 0, 2, 4, 6], deps=[0, 1, 0, 1, 0, 1], need=[0, 0, 1, 2, 0])
    r = _run(t)
    assert r["started_ps"][2] == r["finish_ps"][0] < r["finish_ps"][1]
    assert r["started_ps"][3] == r["finish_ps"][1] == r["started_ps"][4]  # need 2 of 2 = all (0)


def _core_add(dep_on: Any, need: Any) -> None:
    sim = topology.star(3, rate="100Gbps", delay="1us", mtu=4096).sim
    core = sim._flows_core()
    cfg = {"path_mtu": 5, "timeout": 14, "retry_cnt": 7, "rnr_retry": 7, "min_rnr_timer": 12,
           "max_rd_atomic": 1, "recovery_mode": 0}
    try:
        core.add(np.zeros(2, np.int32), np.ones(2, np.int32), np.full(2, 100, np.uint64),
                 np.zeros(2, np.int64), np.zeros(2, np.uint8), np.full(2, 3, np.uint8),
                 np.asarray([0, 0, 1]), np.asarray([0]), cfg, None, None, dep_on, need)
    finally:
        assert core.counts()["total"] == 0


@pytest.mark.parametrize(("dep_on", "need", "match"), [
    (np.asarray([2], np.uint8), None, "dep_on 2 outside 0..1"),
    (None, np.asarray([0, 2], np.uint32), "flow 1: need 2 outside 0..1"),
    (None, np.asarray([1, 0], np.uint32), "flow 0: need 1 outside 0..0"),
])
def test_the_core_refuses_bad_dep_on_and_need(dep_on: Any, need: Any, match: str) -> None:
    """The C side checks them again (the Python checks are bypassed here)."""
    with pytest.raises(ValueError, match=match):
        _core_add(dep_on, need)


@pytest.mark.parametrize(("kw", "match"), [
    ({"dep_on": [3]}, "column 'dep_on'"),
    ({"dep_on": [0, 1]}, "'dep_on' has 2 entries: it needs one per dependency, 1"),
    ({"need": [0, 2]}, "column 'need', row 1 = 2 is outside \\[0, 1\\]"),
])
def test_add_flows_refuses_bad_dep_on_and_need(kw: dict[str, Any], match: str) -> None:
    t = FlowTable.from_columns(src=[0, 0], dst=[1, 1], size=[KIB, KIB], dep_ptr=[0, 0, 1], deps=[0], **kw)
    sim = topology.star(3, rate="100Gbps", delay="1us", mtu=4096).sim
    with pytest.raises(ValueError, match=match):
        sim.add_flows(t)


def test_concat_keeps_dep_on_and_need() -> None:
    a = FlowTable.from_columns(src=[0, 0], dst=[1, 1], size=[KIB, KIB], dep_ptr=[0, 0, 1], deps=[0])
    b = FlowTable.from_columns(src=[0, 0], dst=[1, 1], size=[KIB, KIB], dep_ptr=[0, 0, 1], deps=[0],
                               dep_on=[DEP_RECEIVED], need=[0, 1])
    c = FlowTable.concat(a, b)
    assert c.deps.tolist() == [0, 2] and c.dep_on is not None and c.need is not None
    assert c.dep_on.tolist() == [0, 1] and c.need.tolist() == [0, 0, 0, 1]


FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def _dags(draw: Any) -> FlowTable:
    """Up to 6 flows, each depending on some earlier ones, on completion or receipt, needing k of them."""
    n = draw(st.integers(1, 6))
    pairs = [(a, b) for a in range(4) for b in range(4) if a != b]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=n, max_size=n))
    ptr, deps, on, need = [0], [], [], []
    for i in range(n):
        mine = draw(st.lists(st.integers(0, i - 1), max_size=3, unique=True)) if i else []
        deps += mine
        on += draw(st.lists(st.integers(0, 1), min_size=len(mine), max_size=len(mine)))
        need.append(draw(st.integers(0, len(mine))))
        ptr.append(len(deps))
    return FlowTable.from_columns(src=[a for a, _ in chosen], dst=[b for _, b in chosen],
                                  size=draw(st.lists(st.integers(1, 20000), min_size=n, max_size=n)),
                                  verb=draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
                                  dep_ptr=ptr, deps=deps, dep_on=on, need=need)


@FAST
@given(_dags())
def test_random_receipt_and_count_dependencies_are_honoured(t: FlowTable) -> None:
    """Each flow starts at the k-th of its dependency events: a completion is the flow's finish, a
    receipt comes after the flow's start and no later than its finish."""
    r = _run(t)
    assert t.dep_on is not None and t.need is not None
    for i in range(len(t)):
        lo, hi = int(t.dep_ptr[i]), int(t.dep_ptr[i + 1])
        if lo == hi:
            assert r["started_ps"][i] == 0
            continue
        k = int(t.need[i]) or hi - lo
        early = sorted(int(r["finish_ps"][d]) if not on else int(r["started_ps"][d]) + 1
                       for d, on in zip(t.deps[lo:hi], t.dep_on[lo:hi], strict=True))
        late = sorted(int(r["finish_ps"][d]) for d in t.deps[lo:hi])
        assert early[k - 1] <= r["started_ps"][i] <= late[k - 1]
        if not t.dep_on[lo:hi].any():
            assert r["started_ps"][i] == late[k - 1]
