"""Shared receive queues: QPs created with ``QPInitAttr(srq=...)`` take their receive WQEs from the
SRQ in posting order as messages arrive (RC and UD), an empty SRQ is an RNR for RC, a QP going to
ERR leaves the SRQ's WQEs alone, and the SRQ's limits and lifetime rules."""

from __future__ import annotations

import errno
from dataclasses import dataclass

import numpy as np
import pytest
from support.verbs_pair import TwoHosts

import rdmasim
from rdmasim.verbs import (
    CQ,
    MR,
    PD,
    QP,
    SGE,
    SRQ,
    PyverbsRDMAError,
    QPAttr,
    QPCap,
    RecvWR,
    SendWR,
    SrqAttr,
    SrqInitAttr,
)
from rdmasim.verbs import enums as e


@dataclass
class Env:
    t: rdmasim.topology.BackToBack
    pd_b: PD
    cq_a: CQ
    cq_b: CQ
    srq: SRQ
    qa: list[QP]
    qb: list[QP]
    src: MR
    dst: MR

    @property
    def sim(self) -> rdmasim.Simulator:
        return self.t.sim


def make_env(n: int = 2, max_wr: int = 8, rnr_retry: int = 7) -> Env:
    h = TwoHosts(seed=3)
    srq = SRQ(h.pd_b, SrqInitAttr(SrqAttr(max_wr=max_wr, max_sge=2)))
    qa, qb = [], []
    for _ in range(n):
        a, b = h.qp_pair(cap=QPCap(max_send_wr=8), srq_b=srq, rnr_retry=rnr_retry, min_rnr_timer=1)
        qa.append(a)
        qb.append(b)
    src = h.mr_a(8192, e.IBV_ACCESS_LOCAL_WRITE, fill=(np.arange(8192) * 13 + 1).astype(np.uint8))
    dst = h.mr_b(8192, e.IBV_ACCESS_LOCAL_WRITE)
    return Env(h.t, h.pd_b, h.cq_a, h.cq_b, srq, qa, qb, src, dst)


def srq_recv(env: Env, wr_id: int, off: int, length: int = 1024) -> None:
    env.srq.post_recv(RecvWR(wr_id=wr_id, sg=[SGE(env.dst.buf + off, length, env.dst.lkey)]))


def send(env: Env, qp: QP, wr_id: int, off: int, length: int) -> None:
    qp.post_send(SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, sg=[SGE(env.src.buf + off, length, env.src.lkey)]))


def drain(cq: CQ) -> list:
    _, wcs = cq.poll(len(cq))
    return wcs


def test_qps_take_srq_wqes_in_posting_order() -> None:
    env = make_env()
    for i in range(3):
        srq_recv(env, 100 + i, i * 1024)
    send(env, env.qa[1], 1, 0, 100)  # QP 1 first: it gets the oldest WQE
    env.sim.run_until_idle()
    send(env, env.qa[0], 2, 200, 300)
    env.sim.run_until_idle()
    send(env, env.qa[1], 3, 600, 1500)  # two packets, longer than WQE 102's 1024 bytes
    env.sim.run_until_idle()
    wcs = drain(env.cq_b)
    assert [(w.wr_id, w.qp_num, w.status) for w in wcs][:2] == [
        (100, env.qb[1].qp_num, e.IBV_WC_SUCCESS), (101, env.qb[0].qp_num, e.IBV_WC_SUCCESS)]
    assert [w.byte_len for w in wcs[:2]] == [100, 300]
    assert env.dst.read(100) == env.src.read(100)
    assert env.dst.read(300, 1024) == env.src.read(300, 200)
    # the third message is longer than WQE 102: a local length error on that QP only
    assert [(w.wr_id, w.status) for w in wcs[2:]] == [(102, e.IBV_WC_LOC_LEN_ERR)]
    assert env.qb[1].qp_state == e.IBV_QPS_ERR and env.qb[0].qp_state == e.IBV_QPS_RTS


def test_empty_srq_is_rnr_for_rc_then_a_posted_wqe_is_used() -> None:
    env = make_env(n=1)
    send(env, env.qa[0], 1, 0, 64)
    env.sim.run("30us")
    assert len(env.cq_a) == 0 and env.qa[0].stats()["rnr_naks_rcvd"] >= 1
    srq_recv(env, 7, 0)
    env.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(env.cq_a)] == [(1, e.IBV_WC_SUCCESS)]
    assert [(w.wr_id, w.byte_len) for w in drain(env.cq_b)] == [(7, 64)]


def test_qp_error_leaves_the_srq_wqes_for_other_qps() -> None:
    env = make_env()
    srq_recv(env, 1, 0)
    srq_recv(env, 2, 1024)
    env.qb[0].modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    env.sim.run_until_idle()
    assert drain(env.cq_b) == []  # nothing of the SRQ was flushed
    send(env, env.qa[1], 5, 0, 10)
    send(env, env.qa[1], 6, 0, 20)
    env.sim.run_until_idle()
    assert [(w.wr_id, w.byte_len, w.qp_num) for w in drain(env.cq_b)] == [
        (1, 10, env.qb[1].qp_num), (2, 20, env.qb[1].qp_num)]


def test_ud_qp_with_an_srq() -> None:
    h = TwoHosts(seed=4, cqe=8)
    t, cq_b = h.t, h.cq_b
    srq = SRQ(h.pd_b, SrqInitAttr(SrqAttr(max_wr=4, max_sge=1)))
    qa, qb = h.qp_pair(qp_type=e.IBV_QPT_UD, srq_b=srq, qkey=5)
    src = h.mr_a(64, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(b"datagram", 8)
    dst = h.mr_b(128, e.IBV_ACCESS_LOCAL_WRITE)
    srq.post_recv(RecvWR(wr_id=9, sg=[SGE(dst.buf, 128, dst.lkey)]))
    wr = SendWR(wr_id=1, sg=[SGE(src.buf, 8, src.lkey)])
    wr.set_wr_ud(h.ah_to_b(), qb.qp_num, 5)
    qa.post_send(wr)
    t.sim.run_until_idle()
    _, wcs = cq_b.poll(4)
    assert [(w.wr_id, w.byte_len, w.src_qp) for w in wcs] == [(9, 48, qa.qp_num)]
    assert dst.read(8, 40) == b"datagram"
    # longer than the SRQ's WQE: that WQE completes IBV_WC_REM_INV_REQ_ERR (rxe class E), QP stays up
    srq.post_recv(RecvWR(wr_id=10, sg=[SGE(dst.buf, 44, dst.lkey)]))
    qa.post_send(wr)
    t.sim.run_until_idle()
    _, wcs = cq_b.poll(4)
    assert [(w.wr_id, w.status) for w in wcs] == [(10, e.IBV_WC_REM_INV_REQ_ERR)]
    assert qb.qp_state == e.IBV_QPS_RTS


def test_srq_rules() -> None:
    env = make_env(n=1, max_wr=2)
    with pytest.raises(PyverbsRDMAError, match="SRQ"):
        env.qb[0].post_recv(RecvWR(wr_id=1, sg=[SGE(env.dst.buf, 8, env.dst.lkey)]))
    srq_recv(env, 1, 0)
    srq_recv(env, 2, 0)
    with pytest.raises(PyverbsRDMAError, match="full \\(max_wr=2\\)"):
        srq_recv(env, 3, 0)
    env2 = make_env(n=1)
    sg3 = [SGE(env2.dst.buf, 8, env2.dst.lkey)] * 3
    with pytest.raises(PyverbsRDMAError, match="max_sge"):
        env2.srq.post_recv(RecvWR(wr_id=4, sg=sg3))
    with pytest.raises(PyverbsRDMAError, match="max_wr=0"):
        SRQ(env.pd_b, SrqInitAttr(SrqAttr(max_wr=0)))
    assert env.srq.query().max_wr == 2
    with pytest.raises(PyverbsRDMAError, match="srq_limit=5 exceeds max_wr=4") as exc:
        SRQ(env.pd_b, SrqInitAttr(SrqAttr(max_wr=4, srq_limit=5)))
    assert exc.value.error_code == errno.EINVAL
    with pytest.raises(PyverbsRDMAError, match="still used"):
        env.srq.close()
    env.qb[0].modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    env.qb[0].close()
    env.srq.close()
