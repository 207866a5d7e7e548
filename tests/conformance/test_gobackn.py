"""Go-Back-N RC behaviour on the wire (protocol.md 1.5, 1.7, 2, 3).

Every test captures a pcap of a back-to-back transfer a -> b and decodes every frame with the C
codec: data packets (a -> b) and ACK/NAKs (b -> a) are checked field by field: opcode, PSN, A bit,
RETH, payload length, AETH syndrome and MSN, and timestamps (ns). A frame dropped on a link is
still in the pcap (the sender did transmit it) but never reaches the far end.
"""

from __future__ import annotations

import math
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.verbs_pair import CapturedPair
from support.wire import PSN_MOD, Pkt, psn_add, psn_diff, timeout_ns

from rdmasim import codec
from rdmasim.capture import read_pcap
from rdmasim.verbs import enums as e

ACK = 0x11
SYN_ACK = 0x1F
SYN_NAK_SEQ = 0x60

# RC opcodes (protocol.md 1.5)
SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_LAST_IMM, SEND_ONLY, SEND_ONLY_IMM = range(0x00, 0x06)
(WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_LAST_IMM, WRITE_ONLY,
 WRITE_ONLY_IMM) = range(0x06, 0x0C)

# (first, middle, last, only) per verbs opcode
OPCODE_SETS = {
    e.IBV_WR_RDMA_WRITE: (WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY),
    e.IBV_WR_RDMA_WRITE_WITH_IMM: (WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST_IMM, WRITE_ONLY_IMM),
    e.IBV_WR_SEND: (SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY),
    e.IBV_WR_SEND_WITH_IMM: (SEND_FIRST, SEND_MIDDLE, SEND_LAST_IMM, SEND_ONLY_IMM),
}
RETH_OPCODES = {WRITE_FIRST, WRITE_ONLY, WRITE_ONLY_IMM}
IMM_OPCODES = {SEND_LAST_IMM, SEND_ONLY_IMM, WRITE_LAST_IMM, WRITE_ONLY_IMM}


class Pair(CapturedPair):
    """Two connected RC QPs a -> b (Go-Back-N) on a captured back-to-back link."""

    def __init__(self, tmp_path: Path, *, path_mtu: int | None = None, timeout: int = 8,
                 retry_cnt: int = 7, **kw: Any) -> None:
        super().__init__(tmp_path, path_mtu=path_mtu, timeout=timeout, retry_cnt=retry_cnt, **kw)

    def finish(self) -> tuple[list[Pkt], list[Pkt]]:
        """Run to completion; check every WR succeeded; return (data frames, ACK frames)."""
        wcs = self.sim.wait_for(self.cq_a, self.n_posted, timeout="1s")
        assert [w.status for w in wcs] == [e.IBV_WC_SUCCESS] * self.n_posted, wcs
        assert [w.wr_id for w in wcs] == list(range(self.n_posted))
        self.sim.run_until_idle()
        self.sim.close_capture()
        frames = [Pkt(fr.t_ns, fr.fields) for fr in read_pcap(self.pcap)]
        data = [p for p in frames if p.src_ip == self.a_ip]
        acks = [p for p in frames if p.src_ip == self.b_ip]
        assert len(data) + len(acks) == len(frames)
        assert all(p.opcode != ACK for p in data)
        assert all(p.opcode == ACK for p in acks)
        assert all(p.icrc_ok for p in frames)
        return data, acks

    def intact(self, length: int, offset: int = 0) -> bool:
        return np.array_equal(self.src.array[offset:offset + length],
                              self.dst.array[offset:offset + length])


def expected_opcodes(length: int, mtu: int, verb: int) -> list[int]:
    first, middle, last, only = OPCODE_SETS[verb]
    n = max(1, math.ceil(length / mtu))
    if n == 1:
        return [only]
    return [first] + [middle] * (n - 2) + [last]


# ---------------------------------------------------------------------------------------------
# segmentation
# ---------------------------------------------------------------------------------------------

SEG_CASES = [
    # (length, link mtu, path mtu or None)
    (0, 1024, None),
    (1, 256, None),
    (255, 256, None),
    (256, 256, None),
    (257, 256, None),
    (1024, 1024, None),
    (1025, 1024, None),
    (3 * 1024, 1024, None),
    (5000, 1024, None),
    (3 * 4096 + 7, 4096, None),
    (2048 * 5 - 1, 2048, None),
    (2000, 4096, 512),  # path MTU below the link MTU
]


@pytest.mark.parametrize("length,mtu,path_mtu", SEG_CASES)
@pytest.mark.parametrize("start_psn", [0, PSN_MOD - 2])
def test_write_segmentation(tmp_path: Path, length: int, mtu: int, path_mtu: int | None,
                            start_psn: int) -> None:
    pair = Pair(tmp_path, mtu=mtu, path_mtu=path_mtu, psn=start_psn, size=max(length, 1) + 64)
    pmtu = path_mtu or mtu
    offset = 8
    pair.post(length, offset=offset)
    data, acks = pair.finish()
    n = max(1, math.ceil(length / pmtu))
    assert len(data) == n
    assert [p.opcode for p in data] == expected_opcodes(length, pmtu, e.IBV_WR_RDMA_WRITE)
    assert [p.psn for p in data] == [psn_add(start_psn, i) for i in range(n)]
    assert all(p.dest_qpn == pair.qb.qp_num for p in data)
    for i, p in enumerate(data):
        if i == 0:
            assert (p.reth_va, p.reth_rkey, p.reth_len) == (pair.dst.buf + offset, pair.dst.rkey,
                                                            length)
        else:
            assert (p.reth_va, p.reth_rkey, p.reth_len) == (0, 0, 0), "RETH only on FIRST/ONLY"
        want = pmtu if i < n - 1 else length - (n - 1) * pmtu
        assert p.payload_len == want
        assert p.payload == pair.src.read(want, offset + i * pmtu)
    assert pair.intact(length, offset)
    # one ACK, for the last packet, counting one message
    assert [(a.psn, a.aeth_syndrome, a.aeth_msn) for a in acks] == [(data[-1].psn, SYN_ACK, 1)]
    assert acks[0].dest_qpn == pair.qa.qp_num


@pytest.mark.parametrize("verb", [e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND,
                                  e.IBV_WR_SEND_WITH_IMM])
@pytest.mark.parametrize("length", [0, 100, 512, 513, 2000])
def test_other_opcodes_segmentation(tmp_path: Path, verb: int, length: int) -> None:
    mtu = 512
    pair = Pair(tmp_path, mtu=mtu, psn=PSN_MOD - 1, size=4096)
    pair.post(length, opcode=verb, imm=socket.htonl(0x12345678))  # imm_data is __be32
    data, acks = pair.finish()
    n = max(1, math.ceil(length / mtu))
    ops = [p.opcode for p in data]
    assert ops == expected_opcodes(length, mtu, verb)
    assert [p.psn for p in data] == [psn_add(PSN_MOD - 1, i) for i in range(n)]
    for p in data:
        if p.opcode in RETH_OPCODES:
            assert (p.reth_va, p.reth_rkey, p.reth_len) == (pair.dst.buf, pair.dst.rkey, length)
        else:
            assert p.reth_len == 0 and p.reth_rkey == 0 and p.reth_va == 0
        if p.opcode in IMM_OPCODES:
            assert p.imm == 0x12345678
    assert sum(p.payload_len for p in data) == length
    assert all(p.payload_len == mtu for p in data[:-1])
    assert pair.intact(length)
    assert [(a.psn, a.aeth_syndrome, a.aeth_msn) for a in acks] == [(data[-1].psn, SYN_ACK, 1)]


def test_psn_wraps_inside_long_message(tmp_path: Path) -> None:
    start = PSN_MOD - 10
    pair = Pair(tmp_path, mtu=256, psn=start, size=64 * 256)
    pair.post(20 * 256 + 3)
    data, _ = pair.finish()
    psns = [p.psn for p in data]
    assert psns == [(start + i) % PSN_MOD for i in range(21)]
    assert 0xFFFFFF in psns and 0 in psns
    assert pair.intact(20 * 256 + 3)


# ---------------------------------------------------------------------------------------------
# A bit, ACKs and MSN
# ---------------------------------------------------------------------------------------------

def test_ack_request_bit_every_66th_packet_and_at_message_end(tmp_path: Path) -> None:
    mtu = 256
    sizes = [1, 200 * mtu + 5, 3 * mtu, 70 * mtu, 64 * mtu, 10]
    pair = Pair(tmp_path, mtu=mtu, psn=PSN_MOD - 100, size=sum(sizes) + 16)
    off = 0
    last_psns = []
    psn = pair.psn
    for s in sizes:
        pair.post(s, offset=off)
        npk = max(1, math.ceil(s / mtu))
        psn = psn_add(psn, npk)
        last_psns.append(psn_add(psn, -1))
        off += s
    data, acks = pair.finish()
    assert len(data) == sum(max(1, math.ceil(s / mtu)) for s in sizes)
    assert [p.psn for p in data] == [psn_add(pair.psn, i) for i in range(len(data))]
    ends = {i for i, p in enumerate(data) if p.opcode in (WRITE_LAST, WRITE_ONLY)}
    abits = [i for i, p in enumerate(data) if p.ackreq]
    # every message's last packet asks for an ACK
    assert ends <= set(abits)
    assert {data[i].psn for i in ends} == set(last_psns)
    # and a packet inside a message asks for one exactly when the 65 before it did not
    # (rxe_req.c: `noack_pkts++ > RXE_MAX_PKT_PER_ACK`, 64; a message's last packet resets the count)
    prev = -1
    for i in abits:
        if i in ends:
            assert i - prev <= 66, f"{i - prev} packets between A bits (after index {prev})"
        else:
            assert i - prev == 66, f"mid-message A bit {i - prev} packets after the previous one"
        prev = i
    assert prev == len(data) - 1
    # mid-message A bits exist (the 200-packet message needs them)
    assert len(abits) > len(ends)

    # the responder ACKs exactly the A-bit packets, in order, PSN = that packet's PSN
    assert [a.psn for a in acks] == [data[i].psn for i in abits]
    assert all(a.aeth_syndrome == SYN_ACK for a in acks)
    # MSN = messages completed up to and including that packet
    for a in acks:
        completed = sum(1 for lp in last_psns if psn_diff(lp, a.psn) <= 0)
        assert a.aeth_msn == completed, (a.psn, a.aeth_msn, completed)
    assert acks[-1].aeth_msn == len(sizes)
    assert pair.qb.stats()["acks_sent"] == len(acks)
    assert pair.intact(sum(sizes))


def test_msn_counts_sends_and_writes(tmp_path: Path) -> None:
    pair = Pair(tmp_path, mtu=1024, size=1 << 16)
    verbs = [e.IBV_WR_SEND, e.IBV_WR_RDMA_WRITE, e.IBV_WR_SEND_WITH_IMM,
             e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_RDMA_WRITE]
    for i, v in enumerate(verbs):
        pair.post(1500, offset=i * 2048, opcode=v, imm=i)
    data, acks = pair.finish()
    assert len(data) == 2 * len(verbs)
    assert [a.aeth_msn for a in acks] == list(range(1, len(verbs) + 1))
    assert [a.psn for a in acks] == [p.psn for p in data if p.ackreq]


# ---------------------------------------------------------------------------------------------
# loss: NAK and Go-Back-N
# ---------------------------------------------------------------------------------------------

def _first_arrival_ns(p: Pkt, pair: Pair) -> float:
    """When the last bit of ``p`` reaches the far end (ns): frame + FCS + preamble/IFG (24 B)
    serialised at the link rate, plus the propagation delay. pcap times are truncated to ns."""
    ser_ns = (codec.frame_len(p.f) + 24) * 8 / (pair.t.link.rate_bps / 1e9)
    return p.t + ser_ns + pair.delay_ns


@pytest.mark.parametrize("lost_index", [1, 5, 30])
def test_single_loss_one_nak_then_go_back_n(tmp_path: Path, lost_index: int) -> None:
    mtu, npk = 1024, 100
    start = PSN_MOD - 20
    pair = Pair(tmp_path, mtu=mtu, psn=start, size=npk * mtu)
    lost = psn_add(start, lost_index)
    pair.t.link.ab.drop(psn=lost)
    pair.post(npk * mtu)
    data, acks = pair.finish()

    naks = [a for a in acks if a.aeth_syndrome & 0xE0 == SYN_NAK_SEQ & 0xE0]
    assert [(a.psn, a.aeth_syndrome) for a in naks] == [(lost, SYN_NAK_SEQ)], "exactly one NAK"
    nak = naks[0]
    assert nak.aeth_msn == 0  # nothing completed yet

    # several later packets reached b out of order before the NAK went out
    ooo = [p for p in data if psn_diff(p.psn, lost) > 0 and _first_arrival_ns(p, pair) <= nak.t + 1
           and p.t < nak.t]
    assert len(ooo) >= 1
    originals = [p for p in data if p.t < nak.t + pair.delay_ns]
    late_ooo = [p for p in originals if psn_diff(p.psn, lost) > 0]
    assert len(late_ooo) >= 3, "several packets after the hole were sent before the NAK arrived"

    # before the NAK can reach a, PSNs only go forward (no retransmission yet)
    assert [p.psn for p in originals] == [psn_add(start, i) for i in range(len(originals))]
    # the first data packet sent after a receives the NAK is the lost one, then Go-Back-N
    nak_rx = _first_arrival_ns(nak, pair)
    after = [p for p in data if p.t > nak_rx + 1]
    assert after, "no retransmission"
    assert after[0].psn == lost
    last = psn_add(start, npk - 1)
    retx_psns = [p.psn for p in after]
    assert retx_psns == [psn_add(lost, i) for i in range(psn_diff(last, lost) + 1)]
    # frames in the ambiguous window [nak arrival - delay, nak arrival] are originals
    assert len(originals) + len(after) + sum(
        1 for p in data if nak.t + pair.delay_ns <= p.t <= nak_rx + 1) == len(data)
    # the retransmitted lost packet carries the original payload (and, for FIRST, RETH)
    orig_lost = next(p for p in data if p.psn == lost)
    assert after[0].opcode == orig_lost.opcode
    assert after[0].payload == orig_lost.payload

    assert pair.intact(npk * mtu)
    sa, sb = pair.qa.stats(), pair.qb.stats()
    assert sb["naks_sent"] == 1 and sa["naks_rcvd"] == 1
    assert sa["timeouts"] == 0
    # retransmissions = frames whose PSN had been sent before (the rest are first sends)
    sent_before = {p.psn for p in data[: len(data) - len(after)]}
    assert sa["pkts_retx"] == sum(1 for p in after if p.psn in sent_before)
    assert sa["pkts_sent"] == len(data)
    assert pair.t.link.ab.stats()["dropped"] == 1
    # Go-Back-N abandons the rest of the first pass: b discarded exactly the packets after the
    # hole sent before the rewind (they all reach b before the retransmitted one, same FIFO)
    first_pass = data[: len(data) - len(after)]
    arrived_ooo = [p for p in first_pass if psn_diff(p.psn, lost) > 0]
    assert len(first_pass) < npk
    assert sb["ooo_dropped"] == len(arrived_ooo)
    # the final ACK acknowledges the whole message
    assert (acks[-1].psn, acks[-1].aeth_syndrome, acks[-1].aeth_msn) == (last, SYN_ACK, 1)


@pytest.mark.parametrize("timeout", [5, 8, 10])
def test_tail_loss_recovers_by_timeout(tmp_path: Path, timeout: int) -> None:
    mtu, npk = 1024, 4
    start = PSN_MOD - 2
    pair = Pair(tmp_path, mtu=mtu, psn=start, timeout=timeout, size=npk * mtu)
    last = psn_add(start, npk - 1)
    pair.t.link.ab.drop(psn=last)
    pair.post(npk * mtu - 10)
    data, acks = pair.finish()

    assert not [a for a in acks if a.aeth_syndrome != SYN_ACK], "tail loss must not cause a NAK"
    first_tx = data[:npk]
    assert [p.psn for p in first_tx] == [psn_add(start, i) for i in range(npk)]
    retx = data[npk:]
    assert retx, "nothing was retransmitted"
    # the retransmission restarts at the oldest unacknowledged PSN (no ACK came: the first)
    assert retx[0].psn == start
    assert [p.psn for p in retx] == [psn_add(start, i) for i in range(npk)]
    gap = retx[0].t - first_tx[0].t
    want = timeout_ns(timeout)
    assert abs(gap - want) <= 500, (gap, want)
    # nothing was on the wire while the timer ran
    assert retx[0].t - first_tx[-1].t > 0.99 * want - 1000
    assert pair.qa.stats()["timeouts"] == 1
    assert pair.qb.stats()["naks_sent"] == 0
    # the resent packets b already has are duplicates, each answered with an ACK for the last
    # PSN b accepted (expected - 1) and the MSN so far; the resent tail completes the message
    prev = psn_add(last, -1)
    assert [(a.psn, a.aeth_syndrome, a.aeth_msn) for a in acks] == (
        [(prev, SYN_ACK, 0)] * (npk - 1) + [(last, SYN_ACK, 1)])
    assert pair.qb.stats()["dup_rcvd"] == npk - 1
    assert pair.intact(npk * mtu - 10)


def test_lost_ack_timeout_duplicate_gets_ack_for_expected_minus_one(tmp_path: Path) -> None:
    mtu, npk = 1024, 3
    start = PSN_MOD - 1
    timeout = 8
    pair = Pair(tmp_path, mtu=mtu, psn=start, timeout=timeout, size=npk * mtu)
    pair.t.link.ba.drop(nth=0)  # the ACK of the message
    pair.post(npk * mtu)
    data, acks = pair.finish()
    last = psn_add(start, npk - 1)

    assert [p.psn for p in data[:npk]] == [psn_add(start, i) for i in range(npk)]
    retx = data[npk:]
    assert retx and retx[0].psn == start
    assert [p.psn for p in retx] == [psn_add(start, i) for i in range(len(retx))]
    assert abs((retx[0].t - data[0].t) - timeout_ns(timeout)) <= 500
    # first ACK (dropped on b->a) acknowledged the message; every later one answers duplicates
    assert (acks[0].psn, acks[0].aeth_syndrome, acks[0].aeth_msn) == (last, SYN_ACK, 1)
    dup_acks = acks[1:]
    assert dup_acks, "the duplicate was not answered"
    for a in dup_acks:
        assert (a.psn, a.aeth_syndrome, a.aeth_msn) == (last, SYN_ACK, 1)  # expected - 1
        assert a.t > retx[0].t
    assert pair.intact(npk * mtu)
    sa, sb = pair.qa.stats(), pair.qb.stats()
    assert sa["timeouts"] == 1
    assert sb["dup_rcvd"] == len(retx)
    assert sb["naks_sent"] == 0
    assert pair.t.link.ba.stats()["dropped"] == 1


def test_lost_ack_each_duplicate_packet_is_acked(tmp_path: Path) -> None:
    """rxe duplicate_request(): every duplicate SEND/WRITE packet gets an ACK for expected-1
    (C9-105), whether or not it has the A bit."""
    npk = 3
    pair = Pair(tmp_path, mtu=1024, psn=100, timeout=8, size=npk * 1024)
    pair.t.link.ba.drop(nth=0)
    pair.post(npk * 1024)
    data, acks = pair.finish()
    retx = data[npk:]
    assert len(retx) == npk
    assert [a.psn for a in acks[1:]] == [100 + npk - 1] * npk


def test_lost_ack_covered_by_later_ack_no_retransmission(tmp_path: Path) -> None:
    """ACKs are cumulative: losing the first of two ACKs costs nothing."""
    pair = Pair(tmp_path, mtu=1024, psn=5, timeout=8, size=8192)
    pair.t.link.ba.drop(nth=0)
    pair.post(1024, offset=0)
    pair.post(1024, offset=1024)
    data, acks = pair.finish()
    assert [p.psn for p in data] == [5, 6]
    assert [(a.psn, a.aeth_msn) for a in acks] == [(5, 1), (6, 2)]
    assert pair.qa.stats()["timeouts"] == 0
    assert pair.intact(2048)


def test_second_gap_nak_only_after_first_gap_filled(tmp_path: Path) -> None:
    mtu, npk = 1024, 60
    start = PSN_MOD - 5
    pair = Pair(tmp_path, mtu=mtu, psn=start, size=npk * mtu)
    p1, p2 = psn_add(start, 4), psn_add(start, 12)
    pair.t.link.ab.drop(psn=p1)
    # p2 is lost twice: the original (hidden behind gap 1) and its first retransmission
    pair.t.link.ab.drop(psn=p2, count=2)
    pair.post(npk * mtu)
    data, acks = pair.finish()

    naks = [a for a in acks if a.aeth_syndrome == SYN_NAK_SEQ]
    assert [a.psn for a in naks] == [p1, p2]
    assert all((a.aeth_syndrome & 0xE0) != 0x60 or a.aeth_syndrome == SYN_NAK_SEQ for a in acks)
    # the NAK for gap 2 comes only after the retransmitted p1 reached b (gap 1 filled)
    p1_sends = [p for p in data if p.psn == p1]
    assert len(p1_sends) >= 2
    assert naks[1].t >= _first_arrival_ns(p1_sends[1], pair) - 1
    # while gap 1 was open, the original p2 hole (and everything else) drew no second NAK
    p2_sends = [p for p in data if p.psn == p2]
    assert len(p2_sends) == 3
    assert naks[0].t < _first_arrival_ns(p2_sends[0], pair) + 2 * pair.delay_ns
    # Go-Back-N from p2 after the second NAK
    nak2_rx = _first_arrival_ns(naks[1], pair)
    after = [p for p in data if p.t > nak2_rx + 1]
    assert after[0].psn == p2
    assert pair.intact(npk * mtu)
    sa, sb = pair.qa.stats(), pair.qb.stats()
    assert sb["naks_sent"] == 2 and sa["naks_rcvd"] == 2
    assert sa["timeouts"] == 0


def test_two_holes_in_one_window_single_nak(tmp_path: Path) -> None:
    """Both holes in the first transmission only: the second is behind the first NAK's gap,
    so b sends one NAK; the Go-Back-N resend fills both."""
    mtu, npk = 1024, 40
    pair = Pair(tmp_path, mtu=mtu, psn=1000, size=npk * mtu)
    pair.t.link.ab.drop(psn=1003)
    pair.t.link.ab.drop(psn=1010)
    pair.post(npk * mtu)
    data, acks = pair.finish()
    naks = [a for a in acks if a.aeth_syndrome == SYN_NAK_SEQ]
    assert [a.psn for a in naks] == [1003]
    assert pair.qb.stats()["naks_sent"] == 1
    assert pair.intact(npk * mtu)


def test_timeout_after_partial_ack_resends_only_unacked_tail(tmp_path: Path) -> None:
    """A long message gets mid-message ACKs (A bit every <= 64 packets); if its tail is lost the
    retry starts at the oldest unacknowledged PSN, not at the message start, as a MIDDLE packet
    without RETH (rxe req_retry skips the acked packets)."""
    mtu, npk = 256, 100
    start = PSN_MOD - 50
    pair = Pair(tmp_path, mtu=mtu, psn=start, timeout=6, size=npk * mtu)
    last = psn_add(start, npk - 1)
    pair.t.link.ab.drop(psn=last)
    pair.post(npk * mtu)
    data, acks = pair.finish()
    first_pass = data[:npk]
    mid_acked = [a.psn for a in acks if a.t < first_pass[-1].t + 2 * pair.delay_ns + 1000
                 and psn_diff(a.psn, last) < 0]
    assert mid_acked, "no mid-message ACK"
    resume = psn_add(max(mid_acked, key=lambda p: psn_diff(p, start)), 1)
    retx = data[npk:]
    assert retx[0].psn == resume
    assert [p.psn for p in retx] == [psn_add(resume, i) for i in range(psn_diff(last, resume) + 1)]
    assert retx[0].opcode == WRITE_MIDDLE and retx[0].reth_len == 0
    assert retx[-1].opcode == WRITE_LAST and retx[-1].ackreq
    assert pair.qa.stats()["timeouts"] == 1
    assert pair.intact(npk * mtu)


def test_lost_nak_recovered_by_timeout(tmp_path: Path) -> None:
    """The NAK is sent once per gap: if it is lost, later out-of-order packets draw no second
    NAK and the requester recovers by its timer, resending from the hole."""
    mtu, npk = 1024, 20
    pair = Pair(tmp_path, mtu=mtu, psn=500, timeout=7, size=npk * mtu)
    pair.t.link.ab.drop(psn=503)
    pair.t.link.ba.drop(nth=0)  # the NAK
    pair.post(npk * mtu)
    data, acks = pair.finish()
    naks = [a for a in acks if a.aeth_syndrome == SYN_NAK_SEQ]
    assert [a.psn for a in naks] == [503]
    assert [p.psn for p in data[:npk]] == list(range(500, 500 + npk))
    retx = data[npk:]
    # nothing was acknowledged (the message's only A bit is on its last packet), so the retry
    # restarts at the message start; 500..502 are duplicates at b
    assert retx[0].psn == 500
    assert [p.psn for p in retx] == list(range(500, 500 + npk))
    assert abs((retx[0].t - data[0].t) - timeout_ns(7)) <= 500
    sa, sb = pair.qa.stats(), pair.qb.stats()
    assert sa["timeouts"] == 1 and sa["naks_rcvd"] == 0 and sb["naks_sent"] == 1
    assert sb["dup_rcvd"] == 3
    assert pair.intact(npk * mtu)


def test_retry_counter_resets_on_progress(tmp_path: Path) -> None:
    """retry_cnt=1 allows one retry per loss episode: the counter is restored whenever an ACK
    shows progress, so three separately recovered losses still succeed."""
    mtu = 1024
    pair = Pair(tmp_path, mtu=mtu, psn=0, retry_cnt=1, timeout=6, size=64 * mtu)
    for k in range(3):
        pair.t.link.ab.drop(psn=k * 8 + 2)
        wr_off = k * 8 * mtu
        pair.post(8 * mtu, offset=wr_off)
        pair.sim.wait_for(pair.cq_a, 1, timeout="1s")
        pair.n_posted = 0  # finish() below only checks what is still unpolled
    pair.post(mtu, offset=30 * mtu)
    data, acks = pair.finish()
    assert pair.qa.stats()["naks_rcvd"] == 3
    assert pair.qa.qp_state == e.IBV_QPS_RTS
    assert pair.intact(24 * mtu)


def test_retry_exhaustion_on_the_wire(tmp_path: Path) -> None:
    """All data lost: retry_cnt + 1 transmissions, spaced by the timeout, then RETRY_EXC_ERR."""
    pair = Pair(tmp_path, mtu=1024, psn=77, retry_cnt=3, timeout=4, size=4096)
    pair.t.link.ab.set_loss(1.0)
    pair.post(100)
    wcs = pair.sim.wait_for(pair.cq_a, 1, timeout="1s")
    assert [w.status for w in wcs] == [e.IBV_WC_RETRY_EXC_ERR]
    pair.sim.run_until_idle()
    pair.sim.close_capture()
    frames = list(read_pcap(pair.pcap))
    assert [f.fields["psn"] for f in frames] == [77] * 4
    gaps = [b.t_ns - a.t_ns for a, b in zip(frames, frames[1:], strict=False)]
    assert all(abs(g - timeout_ns(4)) <= 100 for g in gaps), gaps
    assert pair.qa.stats()["timeouts"] == 4


def test_nak_with_retry_cnt_zero_is_retry_exceeded(tmp_path: Path) -> None:
    """A NAK-sequence retry consumes retry_cnt like a timeout: with retry_cnt=0 the first lost
    packet ends the QP (rxe comp: retry only while retry_cnt > 0)."""
    pair = Pair(tmp_path, mtu=1024, psn=3, retry_cnt=0, timeout=8, size=8 * 1024)
    pair.t.link.ab.drop(psn=5)
    pair.post(8 * 1024)
    wcs = pair.sim.wait_for(pair.cq_a, 1, timeout="1s")
    assert [w.status for w in wcs] == [e.IBV_WC_RETRY_EXC_ERR]
    assert pair.qa.qp_state == e.IBV_QPS_ERR
    assert pair.qa.stats()["naks_rcvd"] == 1


def test_unacked_window_is_128_psns(tmp_path: Path) -> None:
    """rxe stops sending when req.psn would be more than 128 PSNs past comp.psn (the oldest
    unacknowledged PSN): at most 129 PSNs past the last acknowledged one, and that bound is reached."""
    mtu, npk = 256, 600
    start = PSN_MOD - 300
    pair = Pair(tmp_path, mtu=mtu, psn=start, delay="10us", size=npk * mtu)
    pair.post(npk * mtu)
    data, acks = pair.finish()
    assert [p.psn for p in data] == [psn_add(start, i) for i in range(npk)]
    arrivals = sorted((_first_arrival_ns(a, pair), a.psn) for a in acks)
    worst = 0
    for p in data:
        acked = [psn for t, psn in arrivals if t <= p.t]
        last_acked = acked[-1] if acked else psn_add(start, -1)
        ahead = psn_diff(p.psn, last_acked)
        worst = max(worst, ahead)
        assert ahead <= 129, (p.psn, last_acked)
    assert worst == 129, "the window never filled: the test does not exercise it"
    assert pair.intact(npk * mtu)
