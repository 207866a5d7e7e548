"""QP.post_send / post_recv and SRQ.post_recv are the C posters' own methods (no Python frame per
post): they still refuse a destroyed QP or SRQ with the same error, fill bad_wr (a list or a
work request of the kind), take SRQ chains in one call, and leave a subclass's override alone."""

from __future__ import annotations

import numpy as np
import pytest
from support.verbs_pair import TwoHosts

from rdmasim.verbs import (
    QP,
    SGE,
    SRQ,
    PyverbsRDMAError,
    PyverbsUserError,
    QPCap,
    QPInitAttr,
    RecvWR,
    SendWR,
    SrqAttr,
    SrqInitAttr,
)
from rdmasim.verbs import enums as e


def _srq_env():
    h = TwoHosts(seed=5)
    srq = SRQ(h.pd_b, SrqInitAttr(SrqAttr(max_wr=8, max_sge=1)))
    a, b = h.qp_pair(cap=QPCap(max_send_wr=8), srq_b=srq)
    dst = h.mr_b(4096, e.IBV_ACCESS_LOCAL_WRITE)
    src = h.mr_a(4096, e.IBV_ACCESS_LOCAL_WRITE, fill=(np.arange(4096) % 251).astype(np.uint8))
    return h, srq, a, b, src, dst


def test_srq_chain_posts_in_order_and_delivers() -> None:
    h, srq, a, _b, src, dst = _srq_env()
    first = RecvWR(wr_id=10, sg=[SGE(dst.buf, 1024, dst.lkey)])
    first.next_wr = RecvWR(wr_id=11, sg=[SGE(dst.buf + 1024, 1024, dst.lkey)])
    assert srq.post_recv.__self__ is srq._poster  # the C poster's method, bound on the SRQ
    srq.post_recv(first)
    for i in range(2):
        a.post_send(SendWR(wr_id=i, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf + 1024 * i, 1024, src.lkey)]))
    wcs = h.t.sim.wait_for(h.cq_b, 2)
    assert [w.wr_id for w in wcs] == [10, 11] and all(w.ok for w in wcs)
    assert bytes(dst.read(2048)) == bytes(src.read(2048))


def test_srq_bad_wr_list_and_recvwr() -> None:
    _h, srq, *_ = _srq_env()
    good = RecvWR(wr_id=1, sg=[])
    good.next_wr = RecvWR(wr_id=2, sg=[])
    good.next_wr.num_sge = 5  # more SGEs than it has: refused by the checks
    bad: list[RecvWR] = []
    with pytest.raises(PyverbsUserError, match="SRQ.post_recv work request 1"):
        srq.post_recv(good, bad)
    assert [w.wr_id for w in bad] == [2]
    into = RecvWR()
    wrong = RecvWR(wr_id=7, sg=[])
    wrong.num_sge = 5
    with pytest.raises(PyverbsUserError):
        srq.post_recv(wrong, into)
    assert into.wr_id == 7


def test_destroyed_qp_and_srq_refuse_posts() -> None:
    h, srq, a, b, src, dst = _srq_env()
    a.close()
    with pytest.raises(PyverbsRDMAError, match="QP.post_send: QP 0x[0-9a-f]+ is destroyed"):
        a.post_send(SendWR(opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 8, src.lkey)]))
    with pytest.raises(PyverbsRDMAError, match="QP.post_recv: QP 0x[0-9a-f]+ is destroyed"):
        a.post_recv(RecvWR(sg=[]))
    b.close()
    srq.close()
    with pytest.raises(PyverbsRDMAError, match="SRQ.post_recv: .* is destroyed"):
        srq.post_recv(RecvWR(sg=[SGE(dst.buf, 8, dst.lkey)]))


def test_subclass_override_is_kept() -> None:
    calls: list[int] = []

    class CountingQP(QP):
        def post_send(self, send_wr, bad_wr=None):  # type: ignore[no-untyped-def]
            calls.append(send_wr.wr_id)
            super().post_send(send_wr, bad_wr)

    h = TwoHosts(seed=6)
    qp = CountingQP(h.pd_a, QPInitAttr(scq=h.cq_a, rcq=h.cq_a, cap=QPCap(max_send_wr=4)))
    assert "post_send" not in vars(qp)  # the override is what runs
    with pytest.raises(PyverbsRDMAError):  # a RESET QP refuses sends, after the override ran
        qp.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, sg=[]))
    assert calls == [3]


def test_pyverbs_qp_posts_through_the_poster_and_fills_a_sendwr_bad_wr() -> None:
    from rdmasim.pyverbs.qp import QP as PyverbsQP

    h = TwoHosts(seed=7)
    qp = PyverbsQP(h.pd_a, QPInitAttr(scq=h.cq_a, rcq=h.cq_a, cap=QPCap(max_send_wr=4)))
    assert qp.post_send.__self__ is qp._poster and qp.post_recv.__self__ is qp._recv_poster
    bad = SendWR()
    with pytest.raises(PyverbsRDMAError):  # RESET: refused by the NIC, reported in bad_wr
        qp.post_send(SendWR(wr_id=9, opcode=e.IBV_WR_SEND, sg=[]), bad)
    assert bad.wr_id == 9
