"""Stepping to the next event of a kind (over RNR waits and timers), and qp.explain() naming the
RNR wait, the READs outstanding and rnr_retry=7 as infinite."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def pair(**kw):
    topo = rdmasim.back_to_back(mtu=1024)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 8), CQ(cb, 8)
    src = MR(pa, 8192, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, 8192, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_WRITE)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=4)))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb))
    connect_qps(qa, qb, **kw)
    return topo, qa, qb, src, dst


def test_step_to_jumps_over_the_rnr_wait() -> None:
    topo, qa, qb, src, _ = pair(rnr_retry=7, min_rnr_timer=14)  # 1.28 ms per IBA table 45
    sim = topo.sim
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 16, src.lkey)]))
    nak = sim.step_to("nak")
    assert nak is not None and "RNR_NAK(timer 14 = 1.28 ms)" in str(nak)
    wait = sim.step_to("rnr")  # the NAK arrives at a: its RNR wait starts
    assert wait is not None and wait.node == "a" and "RNR wait" in str(wait)
    text = qa.explain()
    assert "RNR wait" in text and "rnr_retry=7 = infinite" in text
    resend = sim.step_to("frame")
    assert resend is not None and resend.kind == "TX" and "SEND_ONLY psn=0" in str(resend)
    assert resend.t_ps - wait.t_ps == 1_280 * 1_000_000  # the whole wait in one call
    assert "RNR wait" not in qa.explain()


def test_step_to_timeout_and_the_kind_argument_of_step() -> None:
    topo, qa, qb, src, dst = pair(timeout=2, retry_cnt=3)
    topo.link.ab.drop(psn=0)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 100, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    trace = topo.sim.trace()
    qa.post_send(wr)
    ev = topo.sim.step_to("timeout")
    assert ev is not None and ev.t_ps == 4_096_000 * 4 and "TIMEOUT" in str(ev)
    assert topo.sim.now == ev.t_ps
    topo.sim.step(kind="completion")
    assert qa.inspect()["sq_outstanding"] == 0
    assert trace.to_numpy()["kind"].tolist().count(7) == 1  # the user's trace kept the records
    assert topo.sim.step_to("frame") is None  # idle
    with pytest.raises(ValueError, match="allowed frame, arrival"):
        topo.sim.step_to("bogus")


def test_explain_names_reads_outstanding_and_a_finite_rnr_retry() -> None:
    topo, qa, qb, src, dst = pair(max_rd_atomic=2, rnr_retry=3)
    for i in range(2):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_READ, sg=[SGE(src.buf + 4096 * i, 4096, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf)
        qa.post_send(wr)
    topo.sim.step_to("frame")  # the second READ request
    text = qa.explain()
    assert "RDMA READ/atomic requests outstanding" in text and "of max_rd_atomic=2" in text
    assert "of rnr_retry=3 (RNR)" in text
