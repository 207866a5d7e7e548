"""Destroying a QP with send work outstanding and its frames in flight (``ibv_destroy_qp``, as
rxe): allowed; its WRs are dropped without completions, completions already in the CQ stay; the
frames it sent still arrive and are processed by the peer, and what the peer sends back (ACKs,
READ responses) finds no QP and is counted as an unknown-QP drop; a QP created afterwards gets
another number and works; its MRs can be deregistered. Run under ASan/UBSan in CI."""

from __future__ import annotations

import numpy as np
import pytest
from support.verbs_pair import VerbsPair

import rdmasim
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e

SIZE = 64 * 1024


def _pair() -> tuple[rdmasim.topology.BackToBack, Context, Context, PD, PD, CQ, CQ, QP, QP]:
    p = VerbsPair(rate="10Gbps", delay="2us", mtu=1024, seed=5, cqe=64,
                  cap=QPCap(max_send_wr=8, max_recv_wr=8))
    return p.t, p.ctx_a, p.ctx_b, p.pd_a, p.pd_b, p.cq_a, p.cq_b, p.qa, p.qb


@pytest.mark.parametrize("opcode", [e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ])
def test_destroy_with_frames_in_flight(opcode: int) -> None:
    t, ca, cb, pa, pb, cqa, cqb, qa, qb = _pair()
    src = MR(pa, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    src.array[:] = (np.arange(SIZE) % 253).astype(np.uint8)
    dst = MR(pb, SIZE, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ)
    dst.array[:] = 7
    first = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 64, src.lkey)])
    first.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(first)
    while len(cqa) == 0:
        t.sim.step()
    big = SendWR(wr_id=2, opcode=opcode, sg=[SGE(src.buf, SIZE, src.lkey)])
    big.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(big)
    for _ in range(20):  # some of its 64 packets (or READ response packets) on the wire
        t.sim.step_frame()
    assert qa.inspect()["sq_outstanding"] == 1
    qpn = qa.qp_num
    qa.close()  # allowed: ibv_destroy_qp
    assert len(cqa) == 1  # the first WRITE's completion stays in the CQ
    before = ca.rx_counters()["unknown_qp"]
    psn_before = qb.inspect()["resp_psn"]
    t.sim.run_until_idle()
    if opcode == e.IBV_WR_RDMA_READ:  # the READ responses come back to no QP
        assert ca.rx_counters()["unknown_qp"] > before
    else:  # the WRITE packets already on the wire still reach the peer and are written
        assert qb.inspect()["resp_psn"] > psn_before
        assert bytes(dst.read(1024)) == bytes(src.read(1024))
    n, wcs = cqa.poll(8)
    assert n == 1 and wcs[0].wr_id == 1 and wcs[0].qp_num == qpn  # nothing for the dropped WR
    src.close()  # no posted WR holds it any more
    # a new QP on the same host: another number, and it works end to end
    qa2 = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    assert qa2.qp_num != qpn
    qb2 = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    connect_qps(qa2, qb2)
    src2 = MR(pa, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    src2.array[:] = 9
    w = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src2.buf, 4096, src2.lkey)])
    w.set_wr_rdma(dst.rkey, dst.buf)
    qa2.post_send(w)
    wc = t.sim.wait_for(cqa, 1)[0]
    assert wc.ok and wc.wr_id == 3
    assert bytes(dst.read(4096)) == bytes([9]) * 4096


def test_pd_close_with_send_work_outstanding_gives_no_completions() -> None:
    t, ca, cb, pa, pb, cqa, cqb, qa, qb = _pair()
    src = MR(pa, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, SIZE, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    w = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, SIZE, src.lkey)])
    w.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(w)
    t.sim.step_frame()
    pa.close()  # closes the QP (as ibv_destroy_qp) and then the MR
    assert qa._closed and src._closed
    t.sim.run_until_idle()
    assert len(cqa) == 0
