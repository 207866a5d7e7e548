"""Step-through and inspection: one frame at a time, with the QP state a student can read."""

from __future__ import annotations

from support.verbs_pair import VerbsPair, write_wr

import rdmasim
from rdmasim.trace import TX
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def build():
    p = VerbsPair(mtu=1024, cqe=8, cap=(QPCap(max_send_wr=4), None), psn_a=10)
    src = p.mr_a(4096, e.IBV_ACCESS_LOCAL_WRITE)
    dst = p.mr_b(4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return p.t, p.qa, p.qb, p.cq_a, write_wr(1, src, dst, 4096)


def test_step_frame_advances_one_frame_at_a_time() -> None:
    t, qa, qb, cqa, wr = build()
    trace = t.sim.trace()
    qa.post_send(wr)  # the first frame leaves at once: the port was idle
    psns = []
    while t.sim.step_frame():
        psns.append(qa.inspect()["req_psn"])
    frames = trace.to_numpy()
    tx = frames[frames["kind"] == TX]
    assert psns == [12, 13, 14, 14]  # after PSN 11, 12, 13 and the ACK from b
    assert len(tx) == 5  # 4 data frames and 1 ACK: each step_frame returned after exactly one
    assert cqa.poll(1)[1][0].ok


def test_inspect_shows_psns_timers_and_the_nak_flag() -> None:
    t, qa, qb, cqa, wr = build()
    t.link.ab.drop(psn=11)
    qa.post_send(wr)
    for _ in range(4):  # PSN 11 (dropped), 12, 13, then b's NAK once 12 arrives out of order
        t.sim.step_frame()
    a, b = qa.inspect(), qb.inspect()
    assert a["state"] == "IBV_QPS_RTS"
    assert (a["req_psn"], a["comp_psn"], a["sq_outstanding"]) == (14, 10, 1)
    assert a["rto_deadline_ps"] > t.sim.now
    assert b["resp_psn"] == 11 and b["nak_sent"] == 1  # PSN 12 arrived out of order: one NAK
    text = qb.explain()
    assert "expects PSN 11" in text and "a NAK was sent" in text
    assert "next_psn=14" in repr(qa)


def test_step_events() -> None:
    t, qa, qb, cqa, wr = build()
    qa.post_send(wr)
    before = t.sim.events
    t.sim.step(3)
    assert t.sim.events == before + 3


def test_switch_explains_queues_and_pauses() -> None:
    t = rdmasim.incast(2, mtu=1024)
    cr = Context(t.receiver)
    pr, cqr = PD(cr), CQ(cr, 10)
    for h in t.senders:
        c = Context(h)
        p, cq = PD(c), CQ(c, 10)
        src = MR(p, 1 << 20, e.IBV_ACCESS_LOCAL_WRITE)
        dst = MR(pr, 1 << 20, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        qa, qb = QP(p, QPInitAttr(scq=cq, rcq=cq)), QP(pr, QPInitAttr(scq=cqr, rcq=cqr))
        connect_qps(qa, qb)
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 1 << 20, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf)
        qa.post_send(wr)
    t.sim.run("20us")  # two senders at line rate into one port: the egress queue builds
    out = t.switch.port_to(t.receiver)
    q = t.switch.inspect_port(out)
    assert q["peer"] == t.receiver.name and q["egress_bytes"][3] > 50_000
    assert f"port {out} -> {t.receiver.name}: prio 3:" in t.switch.explain()
    assert "queued=" in repr(t.switch)
