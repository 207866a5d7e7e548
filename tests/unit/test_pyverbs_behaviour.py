"""The verbs objects behave as real pyverbs programs expect: busy polling lets simulated time
pass, a device reaches its own QPs (loopback), closing cascades, to_rtr/to_rts walk from
earlier states, attributes start zeroed and reject unknown names."""

from __future__ import annotations

import errno
from typing import Any

import pytest

import rdmasim
from rdmasim.errors import PyverbsError, PyverbsRDMAError
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e


def rc_pair(topo: Any = None) -> Any:
    topo = topo or rdmasim.back_to_back(mtu=1024)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 64), CQ(cb, 64)
    cap = QPCap(max_send_wr=8, max_recv_wr=8)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=cap))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=cap))
    connect_qps(qa, qb)
    mra = MR(pa, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    mrb = MR(pb, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return topo, (ca, pa, cqa, qa, mra), (cb, pb, cqb, qb, mrb)


def busy_poll(cq: CQ, limit: int = 10_000) -> list:
    """How every pyverbs program waits: poll until something comes (bounded here so a
    regression fails instead of hanging the suite)."""
    for _ in range(limit):
        n, wcs = cq.poll()
        if n:
            return wcs
    raise AssertionError(f"no completion after {limit} polls")


# ---- Time ----

def test_busy_poll_advances_time_to_the_completion() -> None:
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    qb.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    mra.write(b"hello")
    qa.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 5, mra.lkey)]))
    t0 = topo.sim.now
    [rwc] = busy_poll(cqb)
    assert rwc.wr_id == 7 and rwc.status == e.IBV_WC_SUCCESS and rwc.byte_len == 5
    assert topo.sim.now > t0
    assert mrb.read(5) == b"hello"
    [swc] = busy_poll(cqa)
    assert swc.wr_id == 3 and swc.status == e.IBV_WC_SUCCESS


def test_poll_stops_at_the_first_completion_of_its_cq() -> None:
    """poll runs only until this CQ's completion is due, not to the end of all traffic."""
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    for i in range(4):
        qb.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 4096, mra.lkey)])
    for _ in range(4):
        qa.post_send(wr)
    n, _ = cqb.poll(1)
    assert n == 1
    assert len(cqb) < 4  # the other three were not yet due


def test_poll_on_idle_empty_cq_returns_zero_once_then_raises() -> None:
    _, (_, _, cqa, _, _), _ = rc_pair()
    assert cqa.poll() == (0, [])  # as ibv_poll_cq on an empty CQ
    with pytest.raises(PyverbsRDMAError, match="nothing is in flight") as exc:
        cqa.poll()
    assert "CQ(host=a" in str(exc.value)
    assert exc.value.error_code == errno.ETIMEDOUT
    assert isinstance(exc.value, PyverbsError)  # rdma-core's poll helpers catch PyverbsError


def test_auto_advance_off_leaves_time_to_the_user() -> None:
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    topo.sim.auto_advance = False
    qb.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    qa.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 8, mra.lkey)]))
    t0 = topo.sim.now
    for _ in range(3):
        assert cqb.poll() == (0, [])  # never raises, never advances
    assert topo.sim.now == t0
    topo.sim.run()
    assert cqb.poll()[0] == 1
