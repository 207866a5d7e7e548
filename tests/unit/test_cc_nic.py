"""Congestion control at the NIC: CNP generation (notification point) and pacing at the
DCQCN rate (reaction point), driven through a scripted peer."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim.cc import DcqcnParams
from rdmasim.peer import ScriptedPeer
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR
from rdmasim.verbs import enums as e
from rdmasim.verbs.qp import QPAttr

US = 1_000_000


def setup(params: DcqcnParams | None = None, algorithm: str | None = "dcqcn"):
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024)
    topo.a.set_congestion_control(algorithm, params)
    peer = ScriptedPeer(topo.sim, topo.b, qpn=0x99)
    ctx = Context(topo.a)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    qp = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=64)))
    peer.connect(qp)
    mr = MR(pd, 1 << 20, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return topo, peer, qp, cq, mr


def test_ce_marked_packets_get_at_most_one_cnp_per_interval() -> None:
    p = DcqcnParams.paper(cnp_interval="50us")
    topo, peer, qp, cq, mr = setup(p)
    for i in range(40):
        qp.post_recv(RecvWR(wr_id=i, sg=[SGE(mr.buf + i * 64, 64, mr.lkey)]))
    # 40 CE-marked SENDs, one every 5 us: 200 us of marks -> CNPs at 0, 50, 100, 150 us
    for i in range(40):
        f = peer.template()
        f.update(opcode=0x04, psn=i, tos=0x03, payload=b"\0" * 64)
        topo.sim.run(i * 5 * US)
        peer.send(f)
    peer.run()
    cnps = [pkt for pkt in peer.received if pkt["opcode"] == 0x81]
    assert len(cnps) == 4
    assert all(c["becn"] == 1 and c["dest_qpn"] == 0x99 and c["psn"] == 0 for c in cnps)
    assert all(c["tos"] >> 2 == 48 for c in cnps)  # CNPs use DSCP 48
    gaps = [b["t_ps"] - a["t_ps"] for a, b in zip(cnps, cnps[1:], strict=False)]
    assert all(g >= 50 * US for g in gaps)
    assert qp.stats()["ce_rcvd"] == 40 and qp.stats()["cnps_sent"] == 4


def test_no_cnp_without_notification_point() -> None:
    topo, peer, qp, cq, mr = setup(algorithm=None)
    topo.a.set_congestion_control(None, notification_point=False)
    qp.post_recv(RecvWR(wr_id=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    f = peer.template()
    f.update(opcode=0x04, psn=0, tos=0x03, payload=b"\0" * 64)
    peer.send(f)
    peer.run()
    assert not [p for p in peer.received if p["opcode"] == 0x81]


def test_cnp_halves_the_rate_and_packets_are_paced() -> None:
    topo, peer, qp, cq, mr = setup(DcqcnParams.paper(byte_counter=0))
    cnp = peer.template()
    cnp.update(opcode=0x81, becn=1, psn=0)
    peer.send(cnp)
    topo.sim.run(10 * US)
    assert qp.rate_bps == pytest.approx(50e9)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(mr.buf, 32 * 1024, mr.lkey)])
    wr.set_wr_rdma(0x1234, 0x100000)
    qp.post_send(wr)
    peer.run(lambda p, pkt: p.ack(pkt["psn"]) if pkt["ackreq"] else None, until=topo.sim.now + 40 * US)
    data = [pkt for pkt in peer.received if pkt["opcode"] in (0x06, 0x07, 0x08)]
    assert len(data) == 32
    gaps = [b["t_ps"] - a["t_ps"] for a, b in zip(data[1:], data[2:], strict=False)]  # same size
    wire_bits = (14 + 20 + 8 + 12 + 1024 + 4 + 4 + 20) * 8
    assert all(g == pytest.approx(wire_bits / 50e9 * 1e12, rel=1e-3) for g in gaps)  # 50 Gb/s, not 100
    st = qp.dcqcn_state()
    assert st["cnps"] == 1 and st["decreases"] == 1


def test_rate_recovers_to_line_rate_after_cnps_stop() -> None:
    topo, peer, qp, cq, mr = setup(DcqcnParams.paper(byte_counter=0, rate_timer="10us"))
    cnp = peer.template()
    cnp.update(opcode=0x81, becn=1, psn=0)
    peer.send(cnp)
    topo.sim.run(2 * US)
    assert qp.rate_bps < 100e9
    topo.sim.run(20_000 * US)  # fast recovery, additive increase: back to line rate
    assert qp.rate_bps == pytest.approx(100e9)


def test_qp_state_shows_alpha_decayed_by_the_periods_without_a_cnp() -> None:
    """qp.dcqcn_state()["alpha"] is the current alpha: the stored value decayed by the alpha
    periods counted since (alpha_decays), (1 - g) per period, not the value at the last CNP."""
    p = DcqcnParams.paper(byte_counter=0, rate_timer="1s")  # the rate stays cut: alpha keeps running
    topo, peer, qp, cq, mr = setup(p)
    cnp = peer.template()
    cnp.update(opcode=0x81, becn=1, psn=0)
    peer.send(cnp)
    topo.sim.run(1 * US)
    after_cnp = qp.dcqcn_state()
    assert after_cnp["alpha"] == pytest.approx(1.0) and after_cnp["alpha_decays"] == 0
    topo.sim.run(topo.sim.now + (10 * 55 + 20) * US)  # ten alpha periods (K = 55 us), no CNP
    st = qp.dcqcn_state()
    assert st["alpha_decays"] == 10
    assert st["alpha"] == pytest.approx((1 - p.g) ** 10, rel=1e-12)


def test_cc_state_is_per_qp_and_starts_fresh_after_reset_and_reuse() -> None:
    """A reset QP and a QP that reuses a destroyed one's memory (the QP slab) both start at line
    rate with no DCQCN history; a QP reaching RTS after CC was turned off has no state."""
    topo, peer, qp, cq, mr = setup(DcqcnParams.paper(byte_counter=0))
    cnp = peer.template()
    cnp.update(opcode=0x81, becn=1, psn=0)
    peer.send(cnp)
    topo.sim.run(10 * US)
    assert qp.dcqcn_state()["cnps"] == 1 and qp.rate_bps == pytest.approx(50e9)

    qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)
    peer.connect(qp)
    assert qp.dcqcn_state()["cnps"] == 0 and qp.rate_bps == pytest.approx(100e9)

    pd = qp.pd
    cq2 = CQ(pd.ctx, 8)
    qp.close()
    reused = QP(pd, QPInitAttr(scq=cq2, rcq=cq2, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    peer.connect(reused)
    assert reused.dcqcn_state()["cnps"] == 0 and reused.rate_bps == pytest.approx(100e9)

    topo.a.set_congestion_control(None)  # QPs that reach RTS afterwards run at line rate, no state
    plain = QP(pd, QPInitAttr(scq=cq2, rcq=cq2, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    peer.connect(plain)
    assert plain.dcqcn_state() is None and plain.rate_bps == 0.0


def test_qp_created_before_cc_was_turned_on_gets_it_at_rts() -> None:
    """CC state sits after the QP when the host ran CC at creation; a QP created before gets a
    block of its own when it reaches RTS, and works the same (rate cut by a CNP)."""
    topo, peer, qp, cq, mr = setup(algorithm=None)
    early = QP(qp.pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    qp.close()
    topo.a.set_congestion_control("dcqcn", DcqcnParams.paper(byte_counter=0))
    peer.connect(early)
    assert early.dcqcn_state()["cnps"] == 0 and early.rate_bps == pytest.approx(100e9)
    cnp = peer.template()
    cnp.update(opcode=0x81, becn=1, psn=0)
    peer.send(cnp)
    topo.sim.run(10 * US)
    assert early.dcqcn_state()["cnps"] == 1 and early.rate_bps == pytest.approx(50e9)
    early.close()
