"""A host's QP numbers (csrc/transport/qpn.c): handed out in order, cyclically over 0x11..limit,
skipping those in use; found through a table indexed by the number's low bits that grows with the
span of live numbers, not with the QPs ever created. Checked against a plain Python model, and
through the verbs API and bulk flows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdmasim
from rdmasim import _core
from rdmasim.verbs import CQ, PD, QP, Context, QPCap, QPInitAttr

BASE = 0x11


class Model:
    """Cyclic allocation over [BASE, limit], skipping numbers in use."""

    def __init__(self, limit: int) -> None:
        self.limit, self.next, self.live = limit, BASE, {}

    def add(self, token: int) -> int | None:
        if len(self.live) == self.limit - BASE + 1:
            return None
        n = self.next
        while n in self.live:
            n = BASE if n == self.limit else n + 1
        self.next = BASE if n == self.limit else n + 1
        self.live[n] = token
        return n


def test_numbers_start_at_0x11_and_run_consecutively() -> None:
    t = _core.QpnTableForTest()
    assert [t.add(i + 1) for i in range(100)] == list(range(BASE, BASE + 100))
    assert t.live == 100 and all(t.find(BASE + i) == i + 1 for i in range(100))


def test_a_full_range_refuses_then_wraps_to_the_free_numbers() -> None:
    t = _core.QpnTableForTest(BASE + 7)  # 8 numbers
    assert [t.add(i + 1) for i in range(8)] == list(range(BASE, BASE + 8))
    with pytest.raises(MemoryError, match="no QP numbers left"):
        t.add(9)
    t.remove(BASE + 2)
    t.remove(BASE + 5)
    assert t.add(10) == BASE + 2  # wrapped: the first free number after the last one given
    assert t.add(11) == BASE + 5
    assert t.find(BASE + 2) == 10 and t.find(BASE + 5) == 11 and t.find(BASE + 3) == 4


def test_the_table_follows_the_live_span_not_the_qps_ever_created() -> None:
    """A million QPs created and destroyed two at a time: the table keeps its first size, and the
    numbers go on (none reused while the range has not gone round)."""
    t = _core.QpnTableForTest()
    for _ in range(500_000):
        a, b = t.add(1), t.add(2)
        t.remove(a)
        t.remove(b)
    assert t.live == 0 and t.slots == 64
    assert t.add(3) == BASE + 1_000_000


def test_an_old_live_number_makes_the_table_grow_to_the_span() -> None:
    t = _core.QpnTableForTest()
    old = t.add(1)
    for _ in range(1000):  # 1000 short-lived QPs while the first one lives
        t.remove(t.add(2))
    assert t.find(old) == 1 and t.slots >= 1001  # two live numbers 1001 apart: no shared slot
    assert t.slots <= 2048


@settings(max_examples=200, deadline=None)
@given(st.integers(BASE, BASE + 200), st.lists(st.tuples(st.booleans(), st.integers(0, 300)), max_size=400))
def test_matches_the_model(limit: int, ops: list[tuple[bool, int]]) -> None:
    t, m = _core.QpnTableForTest(limit), Model(limit)
    token = 0
    for is_add, pick in ops:
        if is_add or not m.live:
            token += 1
            want = m.add(token)
            if want is None:
                with pytest.raises(MemoryError, match="no QP numbers left"):
                    t.add(token)
            else:
                assert t.add(token) == want
        else:
            qpn = sorted(m.live)[pick % len(m.live)]
            del m.live[qpn]
            t.remove(qpn)
        assert t.live == len(m.live)
    for qpn in range(0, limit + 2):
        assert t.find(qpn) == m.live.get(qpn)


def test_a_destroyed_qps_number_is_not_reused_at_once() -> None:
    """Frames still in flight to a destroyed QP must not reach the next one (rxe: cyclic)."""
    topo = rdmasim.back_to_back()
    ctx = Context(topo.a)
    pd, cq = PD(ctx), CQ(ctx, 8)
    attr = QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=1, max_recv_wr=1))
    first = QP(pd, attr)
    n = first.qp_num
    first.close()
    second = QP(pd, attr)
    assert second.qp_num == n + 1


def test_many_sequential_flows_between_two_hosts() -> None:
    """20 k short flows one after another (a new one every 5 us, each done in about 2 us): QP pairs
    created and destroyed by the thousand through the table; every flow finishes, all alike."""
    topo = rdmasim.back_to_back()
    n = 20_000
    fs = topo.sim.add_flows({"src": np.zeros(n, dtype=int), "dst": np.ones(n, dtype=int),
                             "size": np.full(n, 1024), "start_ps": np.arange(n) * 5_000_000})
    topo.sim.run_flows()
    res = fs.results()
    assert (res["status"] == 0).all() and (res["bytes_delivered"] == 1024).all()
    assert res["fct_ps"].max() == res["fct_ps"].min()  # the same path and load every time
