"""Simulator.step_to: stopping at the next event of a kind (timer firings, RNR waits, NAKs) that
step_frame() jumps over; qp.explain() naming the RNR wait, READs outstanding and rnr_retry 7."""

from __future__ import annotations

import pytest
from support.verbs_pair import VerbsPair

import rdmasim
from rdmasim import trace as tr
from rdmasim.stepping import STEP_KINDS
from rdmasim.verbs import CQ, MR, QP, SGE, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e


def _pair(**connect: int) -> tuple[rdmasim.Simulator, QP, QP, MR, MR, CQ, CQ, object]:
    p = VerbsPair(mtu=1024, seed=1, cqe=16, cap=(QPCap(max_send_wr=8), QPCap(max_recv_wr=8)), **connect)
    acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
    src, dst = p.mr_a(1 << 16, acc), p.mr_b(1 << 16, acc)
    return p.sim, p.qa, p.qb, src, dst, p.cq_a, p.cq_b, p.t


def test_step_to_the_timeout_that_step_frame_jumps_over() -> None:
    sim, qa, _qb, src, dst, cqa, _cqb, topo = _pair(timeout=1, retry_cnt=3)
    topo.link.ab.drop(psn=2)  # the last packet: only the retransmit timer recovers
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 3072, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    lost = sim.step_to("drop")
    assert lost is not None and int(lost["psn"]) == 2
    fired = sim.step_to("timeout")
    assert fired is not None and int(fired["kind"]) == tr.TIMEOUT
    assert sim.now == int(fired["t_ps"]) and int(fired["psn"]) == 0  # oldest unacked: nothing acked
    back = sim.step_to("retry")
    assert back is not None and tr.RETRY_CAUSES[int(back["reason"])] == "timeout"
    done = sim.step_to("completion")
    assert done is not None and int(done["status"]) == 0
    assert sim.step_to("timeout") is None  # idle: nothing more will fire
    assert len(sim.wait_for(cqa, 1)) == 1


def test_step_to_an_rnr_wait_and_explain_names_it() -> None:
    sim, qa, qb, src, dst, cqa, cqb, _ = _pair(rnr_retry=7, min_rnr_timer=14)
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 16, src.lkey)]))
    nak = sim.step_to("rnr-nak")
    assert nak is not None and int(nak["syndrome"]) & 0xE0 == 0x20
    sim.step_to("retry")
    text = qa.explain()
    assert "RNR wait: an RNR NAK paused the requester until" in text
    assert "infinite (rnr_retry 7 = retry forever)" in text
    qb.post_recv(RecvWR(wr_id=2, sg=[SGE(dst.buf, 64, dst.lkey)]))
    assert sim.wait_for(cqb, 1)[0].ok and sim.wait_for(cqa, 1)[0].ok
    assert "RNR wait" not in qa.explain()


def test_explain_counts_reads_outstanding() -> None:
    sim, qa, _qb, src, dst, cqa, _cqb, _ = _pair(max_rd_atomic=4, rnr_retry=3)
    for i in range(3):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_READ, sg=[SGE(src.buf + 1024 * i, 1024, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf)
        qa.post_send(wr)
    sim.run("500ns")  # all three requests on the wire, no response back yet
    text = qa.explain()
    assert "3 READ/atomic request(s) sent and awaiting their responses (at most max_rd_atomic = 4)" \
        in text
    assert "RNR: 3 of rnr_retry 3" in text
    sim.wait_for(cqa, 3)
    assert "READ/atomic request(s)" not in qa.explain()


def test_step_to_refuses_unknown_kinds_before_running() -> None:
    sim, qa, *_ = _pair()
    with pytest.raises(ValueError, match="allowed kinds are frame, arrival"):
        sim.step_to("nack")
    assert sim.events == 0 and set(STEP_KINDS) >= {"timeout", "rnr-nak", "nak", "error"}
    with pytest.raises(ValueError, match="max_events"):
        sim.step_to("frame", max_events=0)
