"""Conformance cases written against a real rdmasim QP with a scripted remote end."""

from __future__ import annotations

import numpy as np
import pytest

import rdmasim
from rdmasim.peer import ScriptedPeer
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR
from rdmasim.verbs import enums as e

ACK, NAK_SEQ, NAK_INV = 0x1F, 0x60, 0x61
OP_ACK, OP_READ_FIRST, OP_READ_MIDDLE, OP_READ_LAST = 0x11, 0x0D, 0x0E, 0x0F


def setup(mtu: int = 1024, **attrs):
    topo = rdmasim.back_to_back(mtu=mtu)
    peer = ScriptedPeer(topo.sim, topo.b, qpn=0x99)
    ctx = Context(topo.a)
    pd = PD(ctx)
    cq = CQ(ctx, 32)
    qp = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    peer.connect(qp, qp_psn=100, **attrs)
    mr = MR(pd, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return topo, peer, qp, cq, mr


def post_write(qp: QP, mr: MR, length: int, wr_id: int = 1) -> None:
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(mr.buf, length, mr.lkey)])
    wr.set_wr_rdma(0x1234, 0x100000)
    qp.post_send(wr)


def test_ack_on_request_completes_the_write() -> None:
    topo, peer, qp, cq, mr = setup()
    post_write(qp, mr, 3000)
    peer.run(lambda p, pkt: p.ack(pkt["psn"]) if pkt["ackreq"] else None)
    assert [pkt["opcode"] for pkt in peer.received] == [0x06, 0x07, 0x08]
    assert [pkt["psn"] for pkt in peer.received] == [100, 101, 102]
    n, wcs = cq.poll(2)
    assert n == 1 and wcs[0].ok and wcs[0].byte_len == 3000


def test_ghost_ack_for_a_psn_never_sent_is_ignored() -> None:
    topo, peer, qp, cq, mr = setup(timeout=8, retry_cnt=1)
    post_write(qp, mr, 3000)
    peer.run(lambda p, pkt: p.ack(50_000) if pkt["ackreq"] else None, until="100us")
    assert cq.poll(1)[0] == 0  # nothing completed by the ghost ACK
    assert qp.stats()["bad_responses"] == 1


def test_nak_sequence_error_mid_message_resends_from_that_psn() -> None:
    topo, peer, qp, cq, mr = setup()
    post_write(qp, mr, 4096)  # PSNs 100..103
    naked = []

    def handler(p: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] == 103 and not naked:
            naked.append(1)
            p.ack(101, NAK_SEQ)  # "expected 101": 100 is implicitly acknowledged
        elif pkt["ackreq"]:
            p.ack(pkt["psn"])

    peer.run(handler)
    psns = [pkt["psn"] for pkt in peer.received]
    assert psns == [100, 101, 102, 103, 101, 102, 103]
    # the resent first packet is a MIDDLE without RETH: the message is not restarted
    assert peer.received[4]["opcode"] == 0x07 and peer.received[4]["reth_len"] == 0
    assert qp.stats()["naks_rcvd"] == 1 and cq.poll(1)[1][0].ok


def test_read_response_skipping_psns_is_an_implied_nak() -> None:
    topo, peer, qp, cq, mr = setup()
    wr = SendWR(wr_id=7, opcode=e.IBV_WR_RDMA_READ, sg=[SGE(mr.buf, 3072, mr.lkey)])
    wr.set_wr_rdma(0x1234, 0x100000)
    qp.post_send(wr)
    data = np.arange(3072, dtype=np.uint32).astype(np.uint8).tobytes()
    requests = []

    def handler(p: ScriptedPeer, pkt: dict) -> None:
        requests.append(pkt)
        if len(requests) == 1:  # answer FIRST, then skip MIDDLE (psn 101): the requester must retry
            p.send(p.reply(pkt, opcode=OP_READ_FIRST, aeth_syndrome=ACK, payload=data[:1024]))
            p.send(p.reply(pkt, psn=102, opcode=OP_READ_LAST, aeth_syndrome=ACK, payload=data[2048:]))
        else:  # the re-issued READ asks for the tail from PSN 101
            assert pkt["opcode"] == 0x0C and pkt["psn"] == 101
            assert pkt["reth_va"] == 0x100000 + 1024 and pkt["reth_len"] == 2048
            p.send(p.reply(pkt, opcode=OP_READ_MIDDLE, payload=data[1024:2048]))
            p.send(p.reply(pkt, psn=102, opcode=OP_READ_LAST, aeth_syndrome=ACK, payload=data[2048:]))

    peer.run(handler)
    assert len(requests) == 2
    assert qp.stats()["implied_naks"] == 1
    n, wcs = cq.poll(1)
    assert wcs[0].ok and wcs[0].opcode == e.IBV_WC_RDMA_READ and mr.read(3072, 0) == data


def test_response_of_the_wrong_kind_fails_the_wr_at_once() -> None:
    """A READ response answering a WRITE: rxe check_ack ends the WR with IBV_WC_FATAL_ERR, QP to ERR
    (no timeout, no retry)."""
    topo, peer, qp, cq, mr = setup(timeout=8, retry_cnt=0)
    post_write(qp, mr, 100)
    peer.run(lambda p, pkt: p.send(p.reply(pkt, opcode=OP_READ_LAST, aeth_syndrome=ACK, payload=b"x" * 4)),
             until="50us")
    assert qp.stats()["bad_responses"] == 1 and qp.stats()["timeouts"] == 0
    n, wcs = cq.poll(2)
    assert n == 1 and wcs[0].status == e.IBV_WC_FATAL_ERR and wcs[0].wr_id == 1
    assert qp.qp_state == e.IBV_QPS_ERR


@pytest.mark.parametrize("opcode", [0x01, 0x07, 0x02])  # MIDDLE/LAST with no message started
def test_unexpected_opcode_gets_nak_invalid_request(opcode: int) -> None:
    topo, peer, qp, cq, mr = setup()
    qp.post_recv(RecvWR(wr_id=3, sg=[SGE(mr.buf, 4096, mr.lkey)]))
    frame = peer.template()
    frame.update(opcode=opcode, psn=0, ackreq=1, payload=b"\0" * 1024)  # the QP expects PSN 0 from us
    peer.send(frame)
    peer.run()
    nak = [p for p in peer.received if p["opcode"] == OP_ACK]
    assert len(nak) == 1 and nak[0]["aeth_syndrome"] == NAK_INV and nak[0]["psn"] == 0
    assert qp.qp_state == e.IBV_QPS_ERR
    n, wcs = cq.poll(2)
    assert n == 1 and wcs[0].status == e.IBV_WC_WR_FLUSH_ERR and wcs[0].wr_id == 3


def test_partial_retry_duplicate_gets_ack_of_last_accepted() -> None:
    topo, peer, qp, cq, mr = setup()
    qp.post_recv(RecvWR(wr_id=3, sg=[SGE(mr.buf, 4096, mr.lkey)]))
    for psn, op in ((0, 0x00), (1, 0x01)):  # SEND_FIRST, SEND_MIDDLE
        f = peer.template()
        f.update(opcode=op, psn=psn, payload=bytes([psn + 1]) * 1024)
        peer.send(f)
    dup = peer.template()
    dup.update(opcode=0x01, psn=1, payload=b"\x09" * 1024)  # resend PSN 1: a duplicate now
    peer.send(dup)
    peer.run()
    acks = [p for p in peer.received if p["opcode"] == OP_ACK]
    assert [(a["aeth_syndrome"], a["psn"]) for a in acks] == [(ACK, 1)]
    assert qp.stats()["dup_rcvd"] == 1
    assert mr.read(1, 1024) == b"\x02"  # the duplicate's bytes were not written
