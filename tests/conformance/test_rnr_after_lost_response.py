"""An RNR NAK that arrives while the READ/atomic at the head of the send queue still waits for its
(lost) response (protocol.md 3.4, 5; rxe_comp.c check_psn).

The RNR NAK names a PSN after the READ/atomic, so the READ/atomic's response was lost: like any
acknowledgement past an unanswered READ/atomic it is an implied NAK (retry from the READ/atomic,
counted in retry_cnt), and the RNR itself is not acted on (rxe returns COMPST_ERROR_RETRY before
looking at the syndrome). The requester must never resend a WQE under another WQE's PSN: a SEND
already accepted (its ACK was ignored behind the unanswered READ/atomic) is resent with its own
PSN, seen as a duplicate, and consumes no second receive.

Requester a -> responder b as in test_read_atomic: READ/FAA (response dropped), SEND 2 (a receive
posted), SEND 3 (no receive at first), distinct lengths so each SEND is known on the wire.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_read_atomic import SEND_ONLY, Pair, psn_add

from rdmasim.verbs import SGE, RecvWR, SendWR
from rdmasim.verbs import enums as e

PSN = 100
LEN2, LEN3 = 16, 32


def _start(tmp_path: Path, head: str, rnr_retry: int, lose_ack2: bool = False) -> Pair:
    pair = Pair(tmp_path, psn=PSN, timeout=14, rnr_retry=rnr_retry)
    pair.t.link.ba.drop(psn=PSN)  # the READ response / atomic acknowledge
    if lose_ack2:  # then the RNR NAK is the first acknowledgement past the head
        pair.t.link.ba.drop(psn=psn_add(PSN, 1))
    if head == "READ":
        pair.read(1, 64, loff=1024, roff=1024)
    else:
        pair.atomic(1, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8, compare_add=5, loff=1024)
    pair.send(2, LEN2)
    pair._post(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, send_flags=e.IBV_SEND_SIGNALED,
                      sg=[SGE(pair.loc.buf + 2048, LEN3, pair.loc.lkey)]))
    return pair


def _send_psns(pair: Pair) -> set[tuple[int, int]]:
    return {(p.payload_len, p.psn) for p in pair.requests() if p.opcode == SEND_ONLY}


@pytest.mark.parametrize("lose_ack2", [False, True])
@pytest.mark.parametrize("head", ["READ", "FAA"])
def test_rnr_nak_behind_lost_response_keeps_each_send_at_its_psn(tmp_path: Path, head: str,
                                                                  lose_ack2: bool) -> None:
    """No receive ever appears for SEND 3 (rnr_retry=1): SEND 3 is the one that fails with
    IBV_WC_RNR_RETRY_EXC_ERR; SEND 2, accepted once, succeeds; the head succeeds, executed once,
    and every request goes out at its own PSN."""
    pair = _start(tmp_path, head, rnr_retry=1, lose_ack2=lose_ack2)
    pair.set_remote_u64(8, 1000)
    wcs = pair.wait()
    assert [(w.wr_id, w.status) for w in wcs] == [
        (1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS), (3, e.IBV_WC_RNR_RETRY_EXC_ERR)]
    assert _send_psns(pair) == {(LEN2, psn_add(PSN, 1)), (LEN3, psn_add(PSN, 2))}
    _, rwcs = pair.cq_b.poll(16)
    assert [(w.wr_id, w.status, w.byte_len) for w in rwcs] == [(2, e.IBV_WC_SUCCESS, LEN2)]
    head_op = {p.opcode for p in pair.requests() if p.psn == PSN}
    assert len(head_op) == 1 and all(p.psn == PSN for p in pair.requests() if p.opcode in head_op)
    if head == "FAA":
        assert pair.local_u64(1024) == 1000 and pair.remote_u64(8) == 1005
        assert pair.qb.stats()["atomics_executed"] == 1
    else:
        assert pair.loc.read(64, offset=1024) == pair.rem.read(64, offset=1024)


@pytest.mark.parametrize("lose_ack2", [False, True])
@pytest.mark.parametrize("head", ["READ", "FAA"])
def test_rnr_nak_behind_lost_response_never_delivers_a_send_twice(tmp_path: Path, head: str,
                                                                  lose_ack2: bool) -> None:
    """The receive for SEND 3 is posted during the RNR wait: it must get SEND 3's bytes, not a
    second copy of SEND 2."""
    pair = _start(tmp_path, head, rnr_retry=7, lose_ack2=lose_ack2)
    pair.loc.array[2048:2048 + LEN3] = 0x33
    pair.sim.run("6us")  # SEND 3 was RNR-NAKed; the RNR timer (10 us) runs
    assert pair.qa.stats()["rnr_naks_rcvd"] >= 1
    pair.qb.post_recv(RecvWR(wr_id=3, sg=[SGE(pair.rbuf.buf + 4096, 64, pair.rbuf.lkey)]))
    wcs = pair.wait()
    assert [(w.wr_id, w.status) for w in wcs] == [(i, e.IBV_WC_SUCCESS) for i in (1, 2, 3)]
    pair.sim.run_until_idle()
    _, rwcs = pair.cq_b.poll(16)
    assert [(w.wr_id, w.status, w.byte_len) for w in rwcs] == [
        (2, e.IBV_WC_SUCCESS, LEN2), (3, e.IBV_WC_SUCCESS, LEN3)]
    assert bytes(pair.rbuf.array[4096:4096 + LEN3]) == b"\x33" * LEN3
    assert _send_psns(pair) == {(LEN2, psn_add(PSN, 1)), (LEN3, psn_add(PSN, 2))}
