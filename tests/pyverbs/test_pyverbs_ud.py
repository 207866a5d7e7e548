"""UD through the pyverbs namespace as rdma-core's tests drive it: ``QP(pd, init_attr, qp_attr)``
takes a UD QP to RTS, the namespace's AH is the verbs AH a UD send takes, QPInitAttr's cap
shortcuts, ``query`` returning the caps, and ``query_data_in_order`` as rxe answers it."""

from __future__ import annotations

import pytest
from support.pyverbs_pair import ah_to, poll, ud_qp

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.addr import AH, AHAttr
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPInitAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR

QKEY = 0x1234


def test_ud_qp_created_with_an_attr_is_in_rts_and_sends_through_a_namespace_ah() -> None:
    ctx0, ctx1 = Context(name="rxe0"), Context(name="rxe1")
    pd0, pd1 = PD(ctx0), PD(ctx1)
    cq0, cq1 = CQ(ctx0, 8), CQ(ctx1, 8)
    q0, q1 = ud_qp(pd0, cq0, QKEY), ud_qp(pd1, cq1, QKEY)
    assert q0.qp_state == e.IBV_QPS_RTS and q1.qp_state == e.IBV_QPS_RTS
    src = MR(pd0, 256, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(bytes(range(64)), 64)
    dst = MR(pd1, 256, e.IBV_ACCESS_LOCAL_WRITE)
    q1.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(dst.buf, 40 + 64, dst.lkey)]))
    ah = ah_to(pd0, ctx1)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(src.buf, 64, src.lkey)])
    wr.set_wr_ud(ah, q1.qp_num, QKEY)
    q0.post_send(wr)
    wcs = poll(cq1)
    assert wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].byte_len == 40 + 64
    assert wcs[0].src_qp == q0.qp_num
    assert bytes(dst.read(64, 40)) == bytes(range(64))


@pytest.mark.parametrize("which", ["other-device", "destroyed"])
def test_ud_send_through_a_foreign_or_destroyed_ah_completes_loc_qp_op_err(which: str) -> None:
    """As rxe (rxe_get_av: no address vector): an AH of another device's PD, or one destroyed,
    fails the UD send with IBV_WC_LOC_QP_OP_ERR and the QP goes to ERR; nothing arrives."""
    ctx0, ctx1 = Context(name="rxe0"), Context(name="rxe1")
    pd0, pd1 = PD(ctx0), PD(ctx1)
    cq0, cq1 = CQ(ctx0, 8), CQ(ctx1, 8)
    q0, q1 = ud_qp(pd0, cq0, QKEY), ud_qp(pd1, cq1, QKEY)
    src = MR(pd0, 256, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd1, 256, e.IBV_ACCESS_LOCAL_WRITE)
    q1.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(dst.buf, 40 + 64, dst.lkey)]))
    ah = ah_to(pd1 if which == "other-device" else pd0, ctx1)
    if which == "destroyed":
        ah.close()
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(src.buf, 64, src.lkey)])
    wr.set_wr_ud(ah, q1.qp_num, QKEY)
    q0.post_send(wr)
    wcs = poll(cq0)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_LOC_QP_OP_ERR)]
    assert q0.qp_state == e.IBV_QPS_ERR
    assert cq1.poll(4)[0] == 0


def test_a_namespace_ah_without_a_global_route_is_einval() -> None:
    ctx = Context(name="rxe0")
    with pytest.raises(PyverbsRDMAError) as ex:
        AH(PD(ctx), attr=AHAttr(port_num=1))
    assert ex.value.error_code == 22


def test_qp_init_attr_cap_shortcuts_and_query_returns_the_caps() -> None:
    ctx = Context(name="rxe0")
    pd, cq = PD(ctx), CQ(ctx, 8)
    init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq)
    init.max_recv_wr = 7
    init.max_send_sge = 2
    assert (init.cap.max_recv_wr, init.cap.max_send_sge) == (7, 2)
    init.max_send_wr = 0xFFFFFFFF  # what rdma-core's illegal-caps tests set: refused at create
    with pytest.raises(PyverbsRDMAError):
        QP(pd, init)
    init.max_send_wr = 3
    qp = QP(pd, init)
    attr, _ = qp.query(e.IBV_QP_CAP)
    assert (attr.cap.max_send_wr, attr.cap.max_recv_wr, attr.cap.max_send_sge) == (3, 7, 2)
    assert qp.query_data_in_order(e.IBV_WR_SEND) == 0
