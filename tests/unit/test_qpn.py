"""A host's QP numbers (csrc/transport/qpn.c): handed out in order, cyclically over 0x11..limit,
skipping those in use and those the table cannot place; found through a table indexed by the
number's low bits that grows with the QPs alive at once, not with the QPs ever created nor with the
span of live numbers. Checked against a plain Python model, and
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
    """Cyclic allocation over [BASE, limit], skipping numbers in use and numbers whose slot in a
    table of `slots` (64 at first, doubled to stay at most 7/8 full until there is a slot per
    number) holds a live number."""

    def __init__(self, limit: int) -> None:
        self.limit, self.next, self.live, self.slots = limit, BASE, {}, 0

    def add(self, token: int) -> int | None:
        if len(self.live) == self.limit - BASE + 1:
            return None
        while self.slots <= self.limit and len(self.live) + 1 > self.slots - self.slots // 8:
            self.slots = 2 * self.slots if self.slots else 64
        taken = {q & (self.slots - 1) for q in self.live}
        n = self.next
        while n & (self.slots - 1) in taken:
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


def test_an_old_live_number_does_not_make_the_table_grow() -> None:
    """One QP lives while a million short-lived ones come and go: the numbers go on past it, the
    number sharing its slot is passed over each time round, and the table keeps its first size
    (it used to double until the two live numbers had slots of their own: the whole span)."""
    t = _core.QpnTableForTest()
    old = t.add(1)
    given = set()
    for _ in range(1_000_000):
        n = t.add(2)
        given.add(n)
        t.remove(n)
    assert t.find(old) == 1 and t.slots == 64 and t.live == 1
    assert all(n & 63 != old & 63 for n in given) and len(given) == 1_000_000
    assert max(given) < BASE + 1_000_000 * 64 // 63 + 64  # one number in 64 passed over


def test_the_table_stays_at_most_seven_eighths_full() -> None:
    t = _core.QpnTableForTest()
    numbers = [t.add(i + 1) for i in range(1000)]
    assert numbers == list(range(BASE, BASE + 1000)) and t.slots == 2048  # 1000 > 7/8 of 1024
    for n in numbers[:990]:
        t.remove(n)
    assert [t.add(i + 1) for i in range(5)] == list(range(BASE + 1000, BASE + 1005))


@settings(max_examples=80, deadline=None)
# adds two times in three: enough QPs alive, long enough, that numbers come round to slots held by
# live ones and the table doubles
@given(st.integers(BASE, BASE + 400),
       st.lists(st.tuples(st.integers(0, 2).map(bool), st.integers(0, 300)), min_size=150, max_size=500))
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
