"""``CQ.resize`` as rxe: room for the new number of completions, the ones held kept in order,
EINVAL below what the CQ holds (counting send work already posted) and outside 1..max_cqe. And a
QP's move to RESET leaves its completions in the CQ, as rxe."""

from __future__ import annotations

import pytest
from support.pyverbs_pair import ah_to, ud_qp

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR

QKEY = 0x1234


def _ud_sender(cqe: int) -> tuple[Context, CQ, QP, SendWR]:
    """A UD QP on rxe0 whose send CQ has ``cqe`` entries, and a signaled SEND to rxe1."""
    ctx0, ctx1 = Context(name="rxe0"), Context(name="rxe1")
    pd0, pd1 = PD(ctx0), PD(ctx1)
    cq0, cq1 = CQ(ctx0, cqe), CQ(ctx1, 8)
    q0, q1 = ud_qp(pd0, cq0, QKEY, max_send_wr=16), ud_qp(pd1, cq1, QKEY)
    mr = MR(pd0, 64, e.IBV_ACCESS_LOCAL_WRITE)
    ah = ah_to(pd0, ctx1)
    wr = SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_ud(ah, q1.qp_num, QKEY)
    return ctx0, cq0, q0, wr


def _take(cq: CQ, n: int) -> list[int]:
    """Poll (busy, as a pyverbs program) until ``n`` completions were taken; their wr_ids."""
    ids: list[int] = []
    while len(ids) < n:
        _, wcs = cq.poll(n - len(ids))
        assert all(w.status == e.IBV_WC_SUCCESS for w in wcs)
        ids += [w.wr_id for w in wcs]
    return ids


def test_resize_grows_and_keeps_completions_in_order() -> None:
    _, cq, qp, wr = _ud_sender(3)
    for i in range(3):
        wr.wr_id = i
        qp.post_send(wr)
    assert _take(cq, 2) == [0, 1]
    for i in range(3, 5):  # these wrap around the 3-entry ring
        wr.wr_id = i
        qp.post_send(wr)
    cq.resize(7)  # the two sends complete first (auto_advance), then the ring grows
    assert cq.cqe == 7 and len(cq) == 3
    for i in range(5, 9):
        wr.wr_id = i
        qp.post_send(wr)
    assert _take(cq, 7) == list(range(2, 9))  # 7 completions held in a CQ created with 3: no overrun


def test_resize_below_the_completions_held_is_einval_and_keeps_the_cq() -> None:
    _, cq, qp, wr = _ud_sender(8)
    for i in range(5):
        wr.wr_id = i
        qp.post_send(wr)
    with pytest.raises(PyverbsRDMAError) as ex:
        cq.resize(4)  # the 5 posted sends are counted even though nothing was polled yet
    assert ex.value.error_code == 22
    assert cq.cqe == 8
    cq.resize(5)  # exactly what it holds is allowed
    assert _take(cq, 5) == list(range(5))
    cq.resize(1)  # empty again: shrinking is fine
    assert cq.cqe == 1


@pytest.mark.parametrize("cqe", [0, (1 << 15), 1 << 20])
def test_resize_outside_1_to_max_cqe_is_einval(cqe: int) -> None:
    cq = CQ(Context(name="rxe0"), 4)
    with pytest.raises(PyverbsRDMAError) as ex:
        cq.resize(cqe)
    assert ex.value.error_code == 22 and "max_cqe=32767" in str(ex.value)
    assert cq.cqe == 4


def test_resize_to_max_cqe_is_allowed() -> None:
    cq = CQ(Context(name="rxe0"), 4)
    cq.resize(32767)
    assert cq.cqe == 32767


def test_reset_keeps_the_flush_completions_in_the_cq_as_rxe() -> None:
    """rxe flushes a QP's receive WQEs with IBV_WC_WR_FLUSH_ERR completions when it enters ERR
    (rxe_resp.c flush_recv_queue, notify in the ERROR state), and moving it to RESET
    (rxe_qp_reset) does not touch its CQs: the completions stay to be polled. mlx5's provider
    removes them (mlx5_cq_clean); rdma-core's test_mr_rereg_pd relies on that."""
    ctx = Context(name="rxe0")
    pd = PD(ctx)
    cq = CQ(ctx, 8)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=2, max_recv_wr=2)))
    qp.to_init(QPAttr())
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    qp.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    n, wcs = cq.poll(4)
    assert n == 1 and wcs[0].wr_id == 7 and wcs[0].status == e.IBV_WC_WR_FLUSH_ERR
