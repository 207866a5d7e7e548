"""IBA chapter 9 RC rules, case by case, modelled on roce-sim's transport-error list: ghost and
implied ACKs, implied NAKs, NAK codes, RNR and retry limits, duplicate and out-of-sequence
requests of every kind, unexpected opcodes in both directions, and PSN wrap on each path.

The real QP (host a) faces a ScriptedPeer (host b): as requester it sends from ``qp_psn`` and the
peer plays the responder; as responder it expects ``peer_psn`` and the peer plays the requester.
Every case asserts the work completions, the PSNs on the wire and the bytes in memory."""

from __future__ import annotations

import struct

import pytest
from peer_case import PeerCase, pattern
from support.wire import Op, Syn

from rdmasim.peer import ScriptedPeer
from rdmasim.verbs import enums as e

MAX_PSN = (1 << 24) - 1
WRAP = MAX_PSN - 1  # a first PSN whose message crosses 2^24


def psn(base: int, i: int) -> int:
    return (base + i) & MAX_PSN


def ack_all(case: PeerCase):
    """A responder that ACKs every packet with the A bit, at its PSN."""
    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] != Op.ACK and pkt["ackreq"]:
            case.respond(Op.ACK, pkt["psn"])
    return handler


# =============================================================================================
# The real QP as requester
# =============================================================================================

@pytest.mark.parametrize("start", [100, WRAP])
def test_ghost_ack_for_a_psn_never_sent_is_ignored(start: int) -> None:
    """An ACK for a PSN past everything sent (IBA: "ghost" ACK) acknowledges nothing."""
    c = PeerCase(qp_psn=start, timeout=8, retry_cnt=1)
    c.post(e.IBV_WR_RDMA_WRITE, 3000, wr_id=1)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["ackreq"] and not c.peer.sent:
            c.respond(Op.ACK, psn(start, 1000))
        elif pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler, until="3ms")
    # the ghost ACK completed nothing: the WRITE went again after the timeout and then completed
    assert c.sent() == [(Op.WRITE_FIRST, start), (Op.WRITE_MIDDLE, psn(start, 1)),
                        (Op.WRITE_LAST, psn(start, 2))] * 2
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS)]
    assert c.qp.stats()["bad_responses"] == 1 and c.qp.stats()["timeouts"] == 1


@pytest.mark.parametrize("start", [100, WRAP])
def test_implied_ack_completes_every_earlier_wr(start: int) -> None:
    """One ACK for the last PSN of three WRITEs completes all three, in order (IBA coalesced ACK)."""
    c = PeerCase(qp_psn=start)
    c.post(e.IBV_WR_RDMA_WRITE, 2048, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=2, off=4096)
    c.post(e.IBV_WR_RDMA_WRITE, 1024, wr_id=3, off=8192)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] == psn(start, 3):
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_FIRST, start), (Op.WRITE_LAST, psn(start, 1)),
                        (Op.WRITE_ONLY, psn(start, 2)), (Op.WRITE_ONLY, psn(start, 3))]
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS), (3, e.IBV_WC_SUCCESS)]
    # the payloads on the wire are the region's bytes
    assert b"".join(p["payload"] for p in c.peer.received[:2]) == c.mem(0, 2048)


@pytest.mark.parametrize("start", [100, WRAP])
def test_nak_sequence_error_acks_before_and_resends_from_the_naked_psn(start: int) -> None:
    c = PeerCase(qp_psn=start)
    c.post(e.IBV_WR_RDMA_WRITE, 1024, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 2048, wr_id=2, off=4096)
    naked: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] == psn(start, 2) and not naked:
            naked.append(1)
            c.respond(Op.ACK, psn(start, 1), syndrome=Syn.NAK_SEQ)  # expected start+1: start is acked
        elif pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_ONLY, start), (Op.WRITE_FIRST, psn(start, 1)),
                        (Op.WRITE_LAST, psn(start, 2)), (Op.WRITE_FIRST, psn(start, 1)),
                        (Op.WRITE_LAST, psn(start, 2))]
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS)]
    assert c.qp.stats()["naks_rcvd"] == 1


def test_second_nak_of_one_retry_sequence_does_not_use_retry_cnt() -> None:
    """retry_cnt 1: a NAK sequence error starts a retry; a second NAK for the same PSN before any
    progress belongs to the same sequence (rxe started_retry) and neither fails nor resends."""
    c = PeerCase(retry_cnt=1)
    c.post(e.IBV_WR_RDMA_WRITE, 3072, wr_id=1)
    seen: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        seen.append(pkt["psn"])
        if len(seen) in (2, 3):  # 101 and 102 of the first pass: the peer "lost" 100
            c.respond(Op.ACK, 100, syndrome=Syn.NAK_SEQ)
        elif len(seen) > 3 and pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_FIRST, 100), (Op.WRITE_MIDDLE, 101), (Op.WRITE_LAST, 102)] * 2
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS)]
    assert c.qp.stats()["naks_rcvd"] == 2


def test_stale_ack_below_the_oldest_unacknowledged_psn_is_ignored() -> None:
    c = PeerCase(timeout=8, retry_cnt=0)
    c.post(e.IBV_WR_RDMA_WRITE, 1024, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 1024, wr_id=2, off=1024)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] == 100:
            c.respond(Op.ACK, 100)
        elif pkt["psn"] == 101:
            c.respond(Op.ACK, 100)  # old news: 101 stays unacknowledged

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_ONLY, 100), (Op.WRITE_ONLY, 101)]
    # the second WRITE times out (retry_cnt 0): RETRY_EXC_ERR, QP to ERR
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_RETRY_EXC_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR


@pytest.mark.parametrize(("syndrome", "status"), [
    (Syn.NAK_INV, e.IBV_WC_REM_INV_REQ_ERR),
    (Syn.NAK_ACC, e.IBV_WC_REM_ACCESS_ERR),
    (Syn.NAK_OP, e.IBV_WC_REM_OP_ERR),
    (0x64, e.IBV_WC_REM_OP_ERR),  # reserved NAK code: rxe check_ack's default
])
def test_fatal_nak_fails_the_wr_and_flushes_the_rest(syndrome: int, status: int) -> None:
    c = PeerCase()
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=2, off=4096)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=3, off=8192)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] == 100:
            c.respond(Op.ACK, 100)
        elif pkt["psn"] == 101:
            c.respond(Op.ACK, 101, syndrome=syndrome)

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_ONLY, 100), (Op.WRITE_ONLY, 101), (Op.WRITE_ONLY, 102)]
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, status), (3, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR


@pytest.mark.parametrize("syndrome", [0x40, 0x5F])
def test_ack_with_reserved_aeth_type_is_bad_response(syndrome: int) -> None:
    """AETH type 0b10 is reserved: not an acknowledgement (rxe check_ack: COMPST_ERROR); the WR
    fails at once with IBV_WC_BAD_RESP_ERR and the rest flush."""
    c = PeerCase(timeout=14, retry_cnt=7)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=2, off=4096)
    c.peer.run(lambda p, pkt: c.respond(Op.ACK, pkt["psn"], syndrome=syndrome) if pkt["psn"] == 100 else None)
    assert c.sent() == [(Op.WRITE_ONLY, 100), (Op.WRITE_ONLY, 101)]
    assert c.statuses() == [(1, e.IBV_WC_BAD_RESP_ERR), (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qp.qp_state == e.IBV_QPS_ERR and c.qp.stats()["timeouts"] == 0


@pytest.mark.parametrize("start", [100, MAX_PSN])
@pytest.mark.parametrize("retry_cnt", [0, 2, 7])
def test_retry_cnt_timeouts_then_retry_exc_err(retry_cnt: int, start: int) -> None:
    """A silent responder: the WRITE goes 1 + retry_cnt times, one timeout apart, then
    IBV_WC_RETRY_EXC_ERR.  retry_cnt 7 is seven retries (IBA; rxe never counts 7 down)."""
    c = PeerCase(qp_psn=start, timeout=1, retry_cnt=retry_cnt)  # 8.192 us
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=2, off=4096)
    c.peer.run()
    # both WRITEs go each round (Go-Back-N from the oldest unacknowledged PSN)
    assert c.sent() == [(Op.WRITE_ONLY, start), (Op.WRITE_ONLY, psn(start, 1))] * (1 + retry_cnt)
    assert c.statuses() == [(1, e.IBV_WC_RETRY_EXC_ERR), (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qp.stats()["timeouts"] == 1 + retry_cnt
    t = [p["t_ps"] for p in c.peer.received if p["psn"] == start]
    gaps = {b - a for a, b in zip(t, t[1:], strict=False)}
    assert len(gaps) <= 1 and all(g >= 8_192_000 for g in gaps)


@pytest.mark.parametrize("start", [100, MAX_PSN])
@pytest.mark.parametrize("rnr_retry", [0, 3])
def test_rnr_retry_limit(rnr_retry: int, start: int) -> None:
    """Each RNR NAK waits its timer and resends the NAKed PSN; rnr_retry of them are allowed, the
    next one is IBV_WC_RNR_RETRY_EXC_ERR.  An RNR NAK for a later PSN acknowledges the ones before."""
    c = PeerCase(qp_psn=start, rnr_retry=rnr_retry)
    c.post(e.IBV_WR_RDMA_WRITE, 100, wr_id=1)
    c.post(e.IBV_WR_SEND, 100, wr_id=2, off=4096)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.WRITE_ONLY:
            return  # acknowledged implicitly by the RNR NAK for the SEND
        c.respond(Op.ACK, psn(start, 1), syndrome=0x20 | 1)  # RNR, 10 us

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_ONLY, start)] + [(Op.SEND_ONLY, psn(start, 1))] * (1 + rnr_retry)
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_RNR_RETRY_EXC_ERR)]
    assert c.qp.stats()["rnr_naks_rcvd"] == 1 + rnr_retry and c.qp.qp_state == e.IBV_QPS_ERR


@pytest.mark.parametrize("start", [100, MAX_PSN])
def test_implied_nak_retry_limit_exceeded(start: int) -> None:
    """The READ's response never comes; the ACK of the WRITE behind it is an implied NAK (one per
    retry sequence), later rounds end by timeout: 1 + retry_cnt rounds, then IBV_WC_RETRY_EXC_ERR."""
    c = PeerCase(qp_psn=start, timeout=1, retry_cnt=2)
    c.post(e.IBV_WR_RDMA_READ, 64, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 64, wr_id=2, off=4096)
    before = c.mem(0, 64)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.WRITE_ONLY:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.READ_REQ, start), (Op.WRITE_ONLY, psn(start, 1))] * 3
    assert c.statuses() == [(1, e.IBV_WC_RETRY_EXC_ERR), (2, e.IBV_WC_WR_FLUSH_ERR)]
    s = c.qp.stats()
    assert (s["implied_naks"], s["timeouts"]) == (1, 2) and c.mem(0, 64) == before


@pytest.mark.parametrize("start", [100, MAX_PSN])
def test_implied_nak_retry_limit_not_exceeded(start: int) -> None:
    """The first READ response is lost; the WRITE's ACK implies it: the READ is re-issued at once
    (no timeout) and both WRs complete, in order."""
    c = PeerCase(qp_psn=start, timeout=14, retry_cnt=1)
    c.post(e.IBV_WR_RDMA_READ, 64, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 64, wr_id=2, off=4096)
    data = pattern(64, seed=61)
    reads: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.READ_REQ:
            reads.append(pkt["psn"])
            if len(reads) > 1:
                c.respond(Op.READ_ONLY, pkt["psn"], data)
        elif pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.READ_REQ, start), (Op.WRITE_ONLY, psn(start, 1))] * 2
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS)]
    assert c.mem(0, 64) == data
    s = c.qp.stats()
    assert (s["implied_naks"], s["timeouts"]) == (1, 0)


@pytest.mark.parametrize("start", [100, MAX_PSN])
def test_local_ack_timeout_retry_limit_not_exceeded(start: int) -> None:
    """The first transmission goes unanswered: one timeout later the WRITE is resent from its first
    PSN and completes."""
    c = PeerCase(qp_psn=start, timeout=1, retry_cnt=1)
    c.post(e.IBV_WR_RDMA_WRITE, 2048, wr_id=1)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if len(c.peer.received) > 2 and pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.WRITE_FIRST, start), (Op.WRITE_LAST, psn(start, 1))] * 2
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS)] and c.qp.stats()["timeouts"] == 1


@pytest.mark.parametrize("start", [100, MAX_PSN])
def test_atomic_across_the_psn_wrap(start: int) -> None:
    c = PeerCase(qp_psn=start)
    c.post_atomic(e.IBV_WR_ATOMIC_CMP_AND_SWP, wr_id=1, compare_add=5, swap=9)
    c.post(e.IBV_WR_RDMA_WRITE, 8, wr_id=2, off=4096)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == 0x13:
            assert (pkt["atomic_compare"], pkt["atomic_swap_add"]) == (5, 9)
            c.respond(Op.ATOMIC_ACK, pkt["psn"], atomic_orig=0x0102030405060708)
        elif pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(0x13, start), (Op.WRITE_ONLY, psn(start, 1))]
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS)]
    assert struct.unpack("<Q", c.mem(0, 8))[0] == 0x0102030405060708


@pytest.mark.parametrize("start", [100, WRAP])
def test_read_across_the_psn_wrap(start: int) -> None:
    """A 3-packet READ starting at 2^24 - 2 occupies 2^24 - 2, 2^24 - 1 and 0; the next request
    takes PSN 1."""
    c = PeerCase(qp_psn=start)
    c.post(e.IBV_WR_RDMA_READ, 2500, wr_id=1)
    c.post(e.IBV_WR_RDMA_WRITE, 10, wr_id=2, off=8192)
    data = pattern(2500, seed=11)

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] == Op.READ_REQ:
            c.respond(Op.READ_FIRST, pkt["psn"], data[:1024])
            c.respond(Op.READ_MIDDLE, psn(pkt["psn"], 1), data[1024:2048], syndrome=None)
            c.respond(Op.READ_LAST, psn(pkt["psn"], 2), data[2048:])
        elif pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    assert c.sent() == [(Op.READ_REQ, start), (Op.WRITE_ONLY, psn(start, 3))]
    assert c.peer.received[0]["reth_len"] == 2500
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS)]
    assert c.mem(0, 2500) == data


def test_read_response_for_nothing_outstanding_is_dropped() -> None:
    """A response nobody asked for (unexpected opcode at the requester) changes nothing."""
    c = PeerCase()
    before = c.mem(0, 256)
    c.post(e.IBV_WR_RDMA_WRITE, 16, wr_id=1, off=4096)
    c.peer.run(ack_all(c))
    c.respond(Op.READ_ONLY, 100, b"\xee" * 256)  # stale: PSN already acknowledged
    c.respond(Op.READ_ONLY, 101, b"\xee" * 256)  # a PSN never sent
    c.respond(Op.ATOMIC_ACK, 101, atomic_orig=5)
    c.peer.run()
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS)]
    assert c.qp.qp_state == e.IBV_QPS_RTS and c.mem(0, 256) == before
    assert c.qp.stats()["bad_responses"] == 2


# =============================================================================================
# The real QP as responder
# =============================================================================================

@pytest.mark.parametrize("start", [0, MAX_PSN])
def test_duplicate_send_is_acked_again_and_not_delivered_twice(start: int) -> None:
    c = PeerCase(peer_psn=start)
    c.post_recv(2048, wr_id=8, off=0)
    c.post_recv(2048, wr_id=9, off=4096)
    msg, other = pattern(1500, seed=21), pattern(1500, seed=22)
    c.request(Op.SEND_FIRST, start, msg[:1024])
    c.request(Op.SEND_LAST, psn(start, 1), msg[1024:], ackreq=1)
    c.peer.run()
    c.request(Op.SEND_FIRST, start, other[:1024])  # the whole message again, other bytes
    c.request(Op.SEND_LAST, psn(start, 1), other[1024:], ackreq=1)
    c.peer.run()
    # every duplicate packet is ACKed with the last PSN accepted, A bit or not (rxe duplicate_request)
    assert c.acks() == [(Syn.ACK, psn(start, 1))] * 3
    wcs = c.wcs()
    assert [(w.wr_id, w.status, w.opcode, w.byte_len) for w in wcs] == [
        (8, e.IBV_WC_SUCCESS, e.IBV_WC_RECV, 1500)]
    assert c.mem(0, 1500) == msg
    assert c.qp.stats()["dup_rcvd"] == 2


@pytest.mark.parametrize("start", [0, MAX_PSN])
def test_duplicate_write_is_acked_and_memory_not_written_again(start: int) -> None:
    c = PeerCase(peer_psn=start)
    first, dup = pattern(64, seed=31), pattern(64, seed=32)
    c.request(Op.WRITE_ONLY, start, first, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=64)
    c.peer.run()
    c.request(Op.WRITE_ONLY, start, dup, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=64)
    c.peer.run()
    assert c.acks() == [(Syn.ACK, start), (Syn.ACK, start)]
    assert c.mem(0, 64) == first and c.wcs() == []


@pytest.mark.parametrize("start", [0, MAX_PSN])
def test_duplicate_read_is_executed_again(start: int) -> None:
    """A duplicate READ is answered again from memory as it is now, at the duplicate's PSNs."""
    c = PeerCase(peer_psn=start)
    c.request(Op.READ_REQ, start, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=1500)
    c.peer.run()
    first = [(p["opcode"], p["psn"], p["payload"]) for p in c.peer.received]
    c.mr.array[:4] = [1, 2, 3, 4]
    c.request(Op.READ_REQ, start, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=1500)
    c.peer.run()
    again = [(p["opcode"], p["psn"], p["payload"]) for p in c.peer.received[2:]]
    assert [(op, p) for op, p, _ in first] == [(Op.READ_FIRST, start), (Op.READ_LAST, psn(start, 1))]
    assert [(op, p) for op, p, _ in again] == [(Op.READ_FIRST, start), (Op.READ_LAST, psn(start, 1))]
    assert again[0][2] == c.mem(0, 1024) and again[0][2][:4] == b"\x01\x02\x03\x04"
    assert first[1][2] == again[1][2] == c.mem(1024, 476)
    assert c.qp.stats()["dup_rcvd"] == 1


@pytest.mark.parametrize("start", [0, MAX_PSN])
def test_duplicate_atomic_is_answered_from_the_saved_result(start: int) -> None:
    c = PeerCase(peer_psn=start)
    c.mr.array[:8] = list(struct.pack("<Q", 40))
    for _ in range(2):
        c.request(Op.FETCH_ADD, start, ackreq=1, atomic_va=c.mr.buf, atomic_rkey=c.mr.rkey, atomic_swap_add=2)
        c.peer.run()
    answers = [(p["opcode"], p["psn"], p["atomic_orig"], p["aeth_syndrome"]) for p in c.peer.received]
    assert answers == [(Op.ATOMIC_ACK, start, 40, Syn.ACK), (Op.ATOMIC_ACK, start, 40, Syn.ACK)]
    assert struct.unpack("<Q", c.mem(0, 8))[0] == 42  # executed once
    assert c.qp.stats()["atomics_executed"] == 1


@pytest.mark.parametrize("start", [0, MAX_PSN])
def test_out_of_sequence_request_is_naked_once_per_gap_and_dropped(start: int) -> None:
    c = PeerCase(peer_psn=start)
    before = c.mem(0, 256)
    for i in (1, 2, 3):  # start itself "lost"
        c.request(Op.WRITE_ONLY, psn(start, i), b"\xaa" * 16, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey,
                  reth_len=16)
    c.peer.run()
    assert c.acks() == [(Syn.NAK_SEQ, start)]  # one NAK carrying the expected PSN
    assert c.mem(0, 256) == before and c.qp.qp_state == e.IBV_QPS_RTS
    # the resend from the expected PSN is accepted; a new gap draws a new NAK
    c.request(Op.WRITE_ONLY, start, b"\xbb" * 16, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey,
              reth_len=16)
    c.request(Op.WRITE_ONLY, psn(start, 5), b"\xcc" * 16, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey,
              reth_len=16)
    c.peer.run()
    assert c.acks() == [(Syn.NAK_SEQ, start), (Syn.ACK, start), (Syn.NAK_SEQ, psn(start, 1))]
    assert c.mem(0, 16) == b"\xbb" * 16 and c.mem(16, 240) == before[16:]


@pytest.mark.parametrize("start", [0, MAX_PSN])
def test_send_across_the_psn_wrap(start: int) -> None:
    c = PeerCase(peer_psn=start)
    c.post_recv(4096, wr_id=8)
    msg = pattern(2100, seed=41)
    c.request(Op.SEND_FIRST, start, msg[:1024])
    c.request(Op.SEND_MIDDLE, psn(start, 1), msg[1024:2048])
    c.request(Op.SEND_LAST, psn(start, 2), msg[2048:], ackreq=1)
    c.peer.run()
    assert c.acks() == [(Syn.ACK, psn(start, 2))]
    wcs = c.wcs()
    assert [(w.wr_id, w.status, w.byte_len) for w in wcs] == [(8, e.IBV_WC_SUCCESS, 2100)]
    assert c.mem(0, 2100) == msg


@pytest.mark.parametrize(("first", "then"), [
    (Op.WRITE_FIRST, Op.SEND_LAST),     # a SEND packet inside a WRITE message
    (Op.SEND_FIRST, Op.WRITE_MIDDLE),   # a WRITE packet inside a SEND message
    (Op.SEND_FIRST, Op.READ_REQ),       # a READ inside a SEND message
    (Op.WRITE_FIRST, Op.WRITE_FIRST),   # a new message before the last one ended
])
def test_unexpected_opcode_in_a_message_is_invalid_request(first: int, then: int) -> None:
    """IBA opcode sequence check: NAK invalid request at the offending PSN, QP to ERR, receive
    flushed, nothing more written."""
    c = PeerCase()
    c.post_recv(4096, wr_id=8)
    before = c.mem(0, 4096)
    reth = dict(reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=2048)
    c.request(first, 0, b"\x11" * 1024, **(reth if first == Op.WRITE_FIRST else {}))
    c.request(then, 1, b"" if then == Op.READ_REQ else b"\x22" * 1024, ackreq=1,
              **(reth if then in (Op.READ_REQ, Op.WRITE_FIRST) else {}))
    c.peer.run()
    assert c.acks() == [(Syn.NAK_INV, 1)]
    assert c.qp.qp_state == e.IBV_QPS_ERR
    assert c.statuses() == [(8, e.IBV_WC_WR_FLUSH_ERR)]
    if first == Op.WRITE_FIRST:  # the first packet was placed, the offending one not
        assert c.mem(0, 1024) == b"\x11" * 1024 and c.mem(1024, 1024) == before[1024:2048]


def test_response_opcode_sent_as_a_request_reaches_the_completer_and_is_dropped() -> None:
    """A READ response or ACK addressed to a QP with no outstanding request is not a request:
    the responder does not execute or answer it."""
    c = PeerCase()
    before = c.mem(0, 256)
    c.respond(Op.READ_ONLY, 100, b"\x55" * 256)  # PSN 100: the QP has sent nothing yet
    c.respond(Op.ACK, 100)
    c.peer.run()
    assert c.peer.received == [] and c.mem(0, 256) == before
    assert c.qp.qp_state == e.IBV_QPS_RTS and c.qp.stats()["bad_responses"] == 2


def test_write_middle_and_last_across_the_wrap_then_duplicate_middle() -> None:
    """WRITE_FIRST at 2^24 - 1, MIDDLE at 0, LAST at 1; then the MIDDLE again (duplicate): ACK of
    the last accepted PSN, bytes not written again."""
    c = PeerCase(peer_psn=MAX_PSN)
    data = pattern(3000, seed=51)
    reth = dict(reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=3000)
    c.request(Op.WRITE_FIRST, MAX_PSN, data[:1024], **reth)
    c.request(Op.WRITE_MIDDLE, 0, data[1024:2048])
    c.request(Op.WRITE_LAST, 1, data[2048:], ackreq=1)
    c.peer.run()
    c.request(Op.WRITE_MIDDLE, 0, b"\x99" * 1024, ackreq=1)
    c.peer.run()
    assert c.acks() == [(Syn.ACK, 1), (Syn.ACK, 1)]
    assert c.mem(0, 3000) == data and c.qp.stats()["dup_rcvd"] == 1


def test_read_response_opcodes_at_the_responder() -> None:
    """A READ of one PMTU at the responder is answered READ_RESPONSE_ONLY; of 1 byte more FIRST +
    LAST (the opcode set a requester checks)."""
    c = PeerCase()
    c.request(Op.READ_REQ, 0, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=1024)
    c.request(Op.READ_REQ, 1, ackreq=1, reth_va=c.mr.buf, reth_rkey=c.mr.rkey, reth_len=1025)
    c.peer.run()
    got = [(p["opcode"], p["psn"], len(p["payload"])) for p in c.peer.received]
    assert got == [(Op.READ_ONLY, 0, 1024), (Op.READ_FIRST, 1, 1024), (Op.READ_LAST, 2, 1)]


def test_ack_during_timeout_resend_skips_acknowledged_psns() -> None:
    """The responder got all 64 packets but its ACKs were lost: after the timeout the requester
    resends from the oldest unacknowledged PSN; the cumulative ACK that the first resent packet
    draws arrives mid-resend and the requester stops there (rxe would go on resending up to 163:
    rdmasim differs, see docs/rc-semantics.md)."""
    c = PeerCase(timeout=1, retry_cnt=3)  # 8.192 us; 64 packets take ~5.5 us at 100 Gb/s
    c.post(e.IBV_WR_RDMA_WRITE, 64 * 1024, wr_id=1)
    seen: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        seen.append(pkt["psn"])
        if len(seen) == 65:  # the first resent packet: answer with the ACK that was lost
            c.respond(Op.ACK, 163)

    c.peer.run(handler)
    first, again = seen[:64], seen[64:]
    assert first == list(range(100, 164))
    assert again == list(range(100, 100 + len(again))) and 1 < len(again) < 64
    assert c.statuses() == [(1, e.IBV_WC_SUCCESS)]
    assert c.qp.stats()["timeouts"] == 1


def test_ack_request_count_runs_across_a_retry() -> None:
    """rxe counts packets without the A bit over everything it transmits (`noack_pkts`, reset only
    by an A bit): a Go-Back-N rewind does not restart the count, so in the transmitted sequence,
    resends included, a packet inside a message asks for an ACK exactly 66 packets after the
    previous one that asked."""
    c = PeerCase(mtu=256)
    c.post(e.IBV_WR_RDMA_WRITE, 200 * 256, wr_id=1)  # PSNs 100..299
    naked: list[int] = []

    def handler(peer: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] == 150 and not naked:
            naked.append(len(c.peer.received) - 1)
            c.respond(Op.ACK, 140, syndrome=Syn.NAK_SEQ)  # 100..139 arrived, resend from 140
        elif naked and pkt["ackreq"]:
            c.respond(Op.ACK, pkt["psn"])

    c.peer.run(handler)
    sent = c.peer.received
    rewind = next(i for i in range(naked[0] + 1, len(sent)) if sent[i]["psn"] == 140)
    abits = [i for i, p in enumerate(sent) if p["ackreq"]]
    prev = -1
    for i in abits:
        if sent[i]["opcode"] != Op.WRITE_LAST:
            assert i - prev == 66, (i, prev, sent[i]["psn"])
        prev = i
    # the count did not restart at the rewind: the first A bit after it comes sooner than 66
    first_after = next(i for i in abits if i >= rewind)
    assert first_after - rewind < 65
    assert sent[-1]["psn"] == 299 and c.statuses() == [(1, e.IBV_WC_SUCCESS)]
