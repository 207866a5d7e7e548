"""Requester error paths against a scripted responder: RNR with packets in flight, malformed and
mismatched responses, retry limits.  Each case checks the WC status, the QP state, the PSNs on the
wire and the bytes in memory (docs/rc-semantics.md lists the rule each case shows)."""

from __future__ import annotations

from pathlib import Path

import pytest
from peer_case import REMOTE_VA, PeerCase, pattern
from support.verbs_pair import CapturedPair
from support.wire import Op, Syn

from rdmasim.capture import read_pcap
from rdmasim.peer import ScriptedPeer
from rdmasim.verbs import SGE, RecvWR, SendWR
from rdmasim.verbs import enums as e

# ---------------------------------------------------------------------------------------------
# RNR with more than one packet in flight (rnr_retry = 7 is infinite)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("retry_cnt", [7, 1])
def test_rnr_retry_7_is_infinite_with_packets_in_flight(tmp_path: Path, retry_cnt: int) -> None:
    """A 3-packet SEND to a QP with no receive: every round the FIRST draws an RNR NAK and the
    packet behind it a NAK sequence error.  Those NAKs belong to one retry sequence, which uses
    retry_cnt once (rxe `started_retry`); rnr_retry 7 never runs out: the SEND completes once a
    receive is posted, after far more than 8 rounds."""
    p = CapturedPair(tmp_path, mtu=1024, size=4096, rnr_retry=7, retry_cnt=retry_cnt, min_rnr_timer=1)
    p.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(p.src.buf, 2500, p.src.lkey)]))
    p.sim.run("400us")  # RNR timer 10 us + 2 us round trip: more than 25 rounds
    assert len(p.cq_a) == 0 and p.qa.qp_state == e.IBV_QPS_RTS
    assert p.qa.stats()["rnr_naks_rcvd"] >= 25
    p.qb.post_recv(RecvWR(wr_id=7, sg=[SGE(p.dst.buf, 4096, p.dst.lkey)]))
    wcs = p.sim.wait_for(p.cq_a, 1)
    p.sim.run_until_idle()
    p.sim.close_capture()
    assert [(w.wr_id, w.status, w.byte_len) for w in wcs] == [(1, e.IBV_WC_SUCCESS, 2500)]
    n, rwcs = p.cq_b.poll(4)
    assert [(w.wr_id, w.status, w.byte_len) for w in rwcs[:n]] == [(7, e.IBV_WC_SUCCESS, 2500)]
    assert p.dst.read(2500) == p.src.read(2500)
    frames = [f.fields for f in read_pcap(p.pcap)]
    sends = [(f["opcode"], f["psn"]) for f in frames if f["opcode"] <= 0x05]
    naks = [(f["aeth_syndrome"], f["psn"]) for f in frames if f["opcode"] == Op.ACK]
    rnr_rounds = p.qa.stats()["rnr_naks_rcvd"]
    # every round resends the whole message from PSN 0, in order; the last round is accepted
    assert sends == [(Op.SEND_FIRST, 0), (Op.SEND_MIDDLE, 1), (Op.SEND_LAST, 2)] * (rnr_rounds + 1)
    # each refused round: RNR NAK for 0 (0x20 | min_rnr_timer 1), then one NAK sequence error for
    # the gap behind it (the responder NAKs a gap once; an in-order packet re-arms it, as rxe's
    # check_psn clears sent_psn_nak); finally the ACK of 2
    assert naks == [(0x21, 0), (Syn.NAK_SEQ, 0)] * rnr_rounds + [(Syn.ACK, 2)]
    assert p.qa.stats()["naks_rcvd"] == rnr_rounds and p.qa.stats()["timeouts"] == 0


# ---------------------------------------------------------------------------------------------
# Malformed READ responses: never SUCCESS without the packet that ends the message
# ---------------------------------------------------------------------------------------------


def _answer_read(case: PeerCase, opcodes: list[int], data: bytes, lens: list[int] | None = None) -> None:
    """Answer the first READ request with ``opcodes`` at consecutive PSNs (payload lengths ``lens``,
    default one PMTU each) and nothing else."""
    answered: list[int] = []
    pmtu = case.mtu

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] != Op.READ_REQ or answered:
            return
        answered.append(pkt["psn"])
        off = 0
        for i, op in enumerate(opcodes):
            n = lens[i] if lens is not None else pmtu
            case.respond(op, pkt["psn"] + i, data[off:off + n],
                         syndrome=None if op == Op.READ_MIDDLE else Syn.ACK)
            off += n

    case.peer.run(handler, until="200us")


def test_read_response_without_last_is_bad_response() -> None:
    """1024-byte READ at PMTU 256 answered FIRST, MIDDLE, MIDDLE, MIDDLE: the packet at the READ's
    last PSN does not end the message: IBV_WC_BAD_RESP_ERR, QP to ERR; bytes before it placed."""
    c = PeerCase(mtu=256)
    c.post(e.IBV_WR_RDMA_READ, 1024, wr_id=5)
    before = c.mem(0, 1024)
    data = pattern(1024, seed=3)
    _answer_read(c, [Op.READ_FIRST, Op.READ_MIDDLE, Op.READ_MIDDLE, Op.READ_MIDDLE], data)
    assert c.sent() == [(Op.READ_REQ, 100)]
    assert c.statuses() == [(5, e.IBV_WC_BAD_RESP_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR
    assert c.mem(0, 768) == data[:768] and c.mem(768, 256) == before[768:]
    assert c.qp.stats()["bad_responses"] == 1


@pytest.mark.parametrize(("opcodes", "lens", "bad_at"), [
    ([Op.READ_FIRST, Op.READ_MIDDLE, Op.READ_LAST], [256, 256, 256], 2),       # LAST before the last PSN
    ([Op.READ_ONLY], [256], 0),                                             # ONLY for a 4-packet READ
    ([Op.READ_MIDDLE], [256], 0),                                           # no FIRST
    ([Op.READ_FIRST, Op.READ_FIRST], [256, 256], 1),                           # FIRST again
    ([Op.READ_FIRST, Op.READ_MIDDLE, Op.READ_MIDDLE, Op.READ_LAST], [256, 256, 256, 200], 3),  # LAST short
    ([Op.READ_FIRST, Op.READ_MIDDLE, Op.READ_MIDDLE, Op.READ_LAST], [256, 100, 256, 256], 1),  # MIDDLE short
])
def test_read_response_opcode_or_length_that_does_not_fit_is_bad_response(
        opcodes: list[int], lens: list[int], bad_at: int) -> None:
    c = PeerCase(mtu=256)
    c.post(e.IBV_WR_RDMA_READ, 1024, wr_id=5)
    before = c.mem(0, 1024)
    data = pattern(1024, seed=4)
    _answer_read(c, opcodes, data, lens)
    assert c.statuses() == [(5, e.IBV_WC_BAD_RESP_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR
    good = sum(lens[:bad_at])  # the fitting packets before the bad one were placed
    assert c.mem(0, good) == data[:good] and c.mem(good, 1024 - good) == before[good:]


def test_read_response_last_with_nak_syndrome_is_bad_response() -> None:
    c = PeerCase(mtu=1024)
    c.post(e.IBV_WR_RDMA_READ, 100, wr_id=5)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.READ_REQ:
            c.respond(Op.READ_ONLY, pkt["psn"], b"\x07" * 100, syndrome=0x61)

    c.peer.run(handler, until="100us")
    assert c.statuses() == [(5, e.IBV_WC_BAD_RESP_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR


def test_well_formed_read_response_still_succeeds() -> None:
    c = PeerCase(mtu=256)
    c.post(e.IBV_WR_RDMA_READ, 1000, wr_id=5)
    data = pattern(1000, seed=5)
    _answer_read(c, [Op.READ_FIRST, Op.READ_MIDDLE, Op.READ_MIDDLE, Op.READ_LAST], data, [256, 256, 256, 232])
    wcs = c.wcs()
    assert [(w.wr_id, w.status, w.byte_len) for w in wcs] == [(5, e.IBV_WC_SUCCESS, 1000)]
    assert c.mem(0, 1000) == data and c.qp.qp_state == e.IBV_QPS_RTS


@pytest.mark.parametrize("answered", [2, 3])  # response packets that arrive before the loss
@pytest.mark.parametrize("fresh", [False, True], ids=["continuing", "fresh"])
def test_read_retried_from_the_middle_completes_with_either_answer(answered: int, fresh: bool) -> None:
    """1024-byte READ at PMTU 256: the first ``answered`` response packets arrive, the rest are lost;
    the timeout re-issues the READ for its tail at the first missing PSN.  The responder may
    continue the message there (MIDDLE..LAST, as rxe) or answer the re-issued READ as a new one
    (FIRST..LAST, or ONLY for a one-packet tail, as qib/hfi1; rxe check_ack accepts a FIRST at the
    re-issued READ's first PSN): either way SUCCESS with every byte in place."""
    c = PeerCase(mtu=256, timeout=8, retry_cnt=3)
    c.post(e.IBV_WR_RDMA_READ, 1024, wr_id=5)
    data = pattern(1024, seed=6)
    reqs: list[tuple[int, int, int]] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] != Op.READ_REQ:
            return
        reqs.append((pkt["psn"], pkt["reth_va"], pkt["reth_len"]))
        off = pkt["reth_va"] - REMOTE_VA
        n = pkt["reth_len"] // 256
        if len(reqs) == 1:
            ops = [Op.READ_FIRST] + [Op.READ_MIDDLE] * (answered - 1)
        elif fresh:
            ops = [Op.READ_ONLY] if n == 1 else [Op.READ_FIRST] + [Op.READ_MIDDLE] * (n - 2) + [Op.READ_LAST]
        else:
            ops = [Op.READ_MIDDLE] * (n - 1) + [Op.READ_LAST]
        for i, op in enumerate(ops):
            c.respond(op, pkt["psn"] + i, data[off + 256 * i:off + 256 * (i + 1)],
                      syndrome=None if op == Op.READ_MIDDLE else Syn.ACK)

    c.peer.run(handler, until="5ms")
    tail = 256 * answered
    assert reqs == [(100, REMOTE_VA, 1024), (100 + answered, REMOTE_VA + tail, 1024 - tail)]
    wcs = c.wcs()
    assert [(w.wr_id, w.status, w.byte_len) for w in wcs] == [(5, e.IBV_WC_SUCCESS, 1024)]
    assert c.mem(0, 1024) == data and c.qp.qp_state == e.IBV_QPS_RTS
    assert c.qp.stats()["bad_responses"] == 0 and c.qp.stats()["timeouts"] == 1


def test_read_response_first_at_a_psn_never_re_issued_is_still_bad() -> None:
    """A FIRST is accepted inside a READ only at the PSN its request was re-issued at: FIRST at
    PSN 102 answering a retry from 101 is IBV_WC_BAD_RESP_ERR."""
    c = PeerCase(mtu=256, timeout=8, retry_cnt=3)
    c.post(e.IBV_WR_RDMA_READ, 1024, wr_id=5)
    data = pattern(1024, seed=7)
    reqs: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] != Op.READ_REQ:
            return
        reqs.append(pkt["psn"])
        if len(reqs) == 1:
            c.respond(Op.READ_FIRST, 100, data[:256])
        elif len(reqs) == 2:
            c.respond(Op.READ_MIDDLE, 101, data[256:512], syndrome=None)
            c.respond(Op.READ_FIRST, 102, data[512:768])

    c.peer.run(handler, until="5ms")
    assert reqs == [100, 101]
    assert c.statuses() == [(5, e.IBV_WC_BAD_RESP_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR and c.mem(0, 512) == data[:512]


# ---------------------------------------------------------------------------------------------
# A response of the wrong kind: an immediate error completion (rxe check_ack)
# ---------------------------------------------------------------------------------------------


def test_read_response_answering_a_write_is_fatal_at_once() -> None:
    c = PeerCase(timeout=14, retry_cnt=7)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=3)
    t: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.WRITE_ONLY:
            t.append(pkt["t_ps"])
            c.respond(Op.READ_ONLY, pkt["psn"], b"x" * 4)

    c.peer.run(handler, until="10ms")
    assert c.sent() == [(Op.WRITE_ONLY, 100)]  # nothing resent: no timeout was needed
    wcs = c.wcs()
    assert [(w.wr_id, w.status) for w in wcs] == [(3, e.IBV_WC_FATAL_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR
    assert c.qp.stats()["timeouts"] == 0 and c.qp.stats()["bad_responses"] == 1


def test_atomic_acknowledge_answering_a_read_is_bad_response_at_once() -> None:
    c = PeerCase()
    c.post(e.IBV_WR_RDMA_READ, 64, wr_id=4)
    before = c.mem(0, 64)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.READ_REQ:
            c.respond(Op.ATOMIC_ACK, pkt["psn"], atomic_orig=0x1122334455667788)

    c.peer.run(handler, until="10ms")
    assert c.sent() == [(Op.READ_REQ, 100)]
    assert c.statuses() == [(4, e.IBV_WC_BAD_RESP_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR and c.mem(0, 64) == before
    assert c.qp.stats()["timeouts"] == 0


def test_read_response_answering_an_atomic_is_fatal() -> None:
    c = PeerCase()
    c.post_atomic(e.IBV_WR_ATOMIC_FETCH_AND_ADD, wr_id=6, compare_add=1)
    before = c.mem(0, 8)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == 0x14:
            c.respond(Op.READ_ONLY, pkt["psn"], b"\x01" * 8)

    c.peer.run(handler, until="10ms")
    assert c.statuses() == [(6, e.IBV_WC_FATAL_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR and c.mem(0, 8) == before
