"""RDMA READ, atomics, fence, SQD and memory protection, on the wire and in memory (issue 3).

protocol.md 1.5 (opcodes, AETH placement), 2 (MSN), 3.2-3.4 (READ PSN consumption, max_rd_atomic,
re-issue of a partially answered READ, duplicate READs re-executed, atomics replayed), 4 (SQD) and
5 (NAKs and completion statuses). Every test runs a back-to-back pair a -> b where a is the
requester, captures a pcap and decodes every frame with the C codec; frames from a are requests,
frames from b are responses/ACKs. Timestamps are when the sender started transmitting (ns); a frame
dropped on the link is still in the pcap.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support import wire
from support.verbs_pair import VerbsPair, random_bytes
from support.wire import PSN_MOD, psn_add, timeout_ns

from rdmasim import codec
from rdmasim.capture import read_pcap
from rdmasim.verbs import MR, PD, QP, SGE, QPAttr, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e

RATE_BPS = 100e9
DELAY_NS = 1000
WIRE_OVERHEAD = 24  # FCS + preamble + inter-frame gap, counted in serialisation time

# RC opcodes (protocol.md 1.5)
SEND_ONLY = 0x04
WRITE_FIRST, WRITE_ONLY = 0x06, 0x0A
READ_REQUEST = 0x0C
READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY = 0x0D, 0x0E, 0x0F, 0x10
ACKNOWLEDGE, ATOMIC_ACK, COMPARE_SWAP, FETCH_ADD = 0x11, 0x12, 0x13, 0x14
READ_RESPONSES = {READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY}
RD_ATOMIC_REQUESTS = {READ_REQUEST, COMPARE_SWAP, FETCH_ADD}

SYN_ACK = 0x1F
NAK_INV_REQ, NAK_REM_ACCESS, NAK_REM_OP = 0x61, 0x62, 0x63

ALL_REMOTE = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
              | e.IBV_ACCESS_REMOTE_ATOMIC)
U64 = (1 << 64) - 1


class Pkt(wire.Pkt):
    @property
    def arrival(self) -> float:
        """When its last bit reaches the far end (ns): start + serialisation + propagation."""
        return self.t + (codec.frame_len(self.f) + WIRE_OVERHEAD) * 8 / RATE_BPS * 1e9 + DELAY_NS


class Pair(VerbsPair):
    """Requester QP on host a, responder QP on host b, back to back at 100 Gb/s, 1 us."""

    def __init__(self, tmp_path: Path, *, mtu: int = 1024, psn: int = 0, max_rd_atomic: int = 1,
                 timeout: int = 8, retry_cnt: int = 7, rnr_retry: int = 7, size: int = 1 << 16,
                 n_wr: int = 64, access: int = ALL_REMOTE, seed: int = 5) -> None:
        super().__init__(mtu=mtu, seed=seed, pcap=tmp_path / "cap.pcap", cqe=4 * n_wr,
                         cap=QPCap(max_send_wr=n_wr, max_recv_wr=n_wr), path_mtu=mtu, psn_a=psn,
                         timeout=timeout, retry_cnt=retry_cnt, rnr_retry=rnr_retry, min_rnr_timer=1,
                         max_rd_atomic=max_rd_atomic, access=access)
        self.loc = self.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE, fill=0xEE)
        self.rem = self.mr_b(size, ALL_REMOTE, fill=random_bytes(size, seed))
        self.rem0 = self.rem.array.copy()
        self.rbuf = self.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE)
        self.mtu = mtu
        self.psn = psn
        self.n_posted = 0
        self._frames: list[Pkt] | None = None

    # ---- posting ----
    def _post(self, wr: SendWR) -> None:
        self.qa.post_send(wr)
        self.n_posted += 1

    def read(self, wr_id: int, length: int, loff: int = 0, roff: int = 0,
             flags: int = e.IBV_SEND_SIGNALED, rkey: int | None = None, raddr: int | None = None,
             lkey: int | None = None, lbuf: MR | None = None) -> SendWR:
        lmr = lbuf or self.loc
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_READ, send_flags=flags,
                    sg=[SGE(lmr.buf + loff, length, lmr.lkey if lkey is None else lkey)])
        wr.set_wr_rdma(self.rem.rkey if rkey is None else rkey,
                       self.rem.buf + roff if raddr is None else raddr)
        self._post(wr)
        return wr

    def atomic(self, wr_id: int, op: int, roff: int, compare_add: int, swap: int = 0,
               loff: int = 0, flags: int = e.IBV_SEND_SIGNALED, rkey: int | None = None,
               raddr: int | None = None, lbuf: MR | None = None) -> SendWR:
        lmr = lbuf or self.loc
        wr = SendWR(wr_id=wr_id, opcode=op, send_flags=flags, sg=[SGE(lmr.buf + loff, 8, lmr.lkey)])
        wr.set_wr_atomic(self.rem.rkey if rkey is None else rkey,
                         self.rem.buf + roff if raddr is None else raddr, compare_add, swap)
        self._post(wr)
        return wr

    def write(self, wr_id: int, length: int, loff: int = 0, roff: int = 0,
              flags: int = e.IBV_SEND_SIGNALED) -> SendWR:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, send_flags=flags,
                    sg=[SGE(self.loc.buf + loff, length, self.loc.lkey)])
        wr.set_wr_rdma(self.rem.rkey, self.rem.buf + roff)
        self._post(wr)
        return wr

    def send(self, wr_id: int, length: int, loff: int = 0,
             flags: int = e.IBV_SEND_SIGNALED) -> SendWR:
        self.qb.post_recv(RecvWR(wr_id=wr_id, sg=[SGE(self.rbuf.buf, max(length, 1), self.rbuf.lkey)]))
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_SEND, send_flags=flags,
                    sg=[SGE(self.loc.buf + loff, length, self.loc.lkey)])
        self._post(wr)
        return wr

    # ---- running and reading the capture ----
    def wait(self, n: int | None = None, timeout: str = "1s") -> list[Any]:
        return self.sim.wait_for(self.cq_a, self.n_posted if n is None else n, timeout=timeout)

    def finish_ok(self) -> list[Any]:
        wcs = self.wait()
        assert [w.status for w in wcs] == [e.IBV_WC_SUCCESS] * self.n_posted, wcs
        self.sim.run_until_idle()
        return wcs

    def frames(self) -> list[Pkt]:
        if self._frames is None:
            self.sim.run_until_idle()
            self.sim.close_capture()
            self._frames = [Pkt(fr.t_ns, fr.fields) for fr in read_pcap(self.pcap)]
            assert all(p.icrc_ok for p in self._frames)
        return self._frames

    def requests(self) -> list[Pkt]:
        return [p for p in self.frames() if p.src_ip == self._ip("a")]

    def responses(self) -> list[Pkt]:
        return [p for p in self.frames() if p.src_ip == self._ip("b")]

    def _ip(self, name: str) -> int:
        return self.ip(self.t.a if name == "a" else self.t.b)

    def local_u64(self, loff: int = 0) -> int:
        return int(self.loc.array[loff:loff + 8].view(np.uint64)[0])

    def remote_u64(self, roff: int) -> int:
        return int(self.rem.array[roff:roff + 8].view(np.uint64)[0])

    def set_remote_u64(self, roff: int, value: int) -> None:
        self.rem.array[roff:roff + 8] = np.frombuffer(np.uint64(value).tobytes(), dtype=np.uint8)
        self.rem0[roff:roff + 8] = self.rem.array[roff:roff + 8]


def npsn(length: int, mtu: int) -> int:
    return max(1, math.ceil(length / mtu))


def read_opcodes(n: int) -> list[int]:
    return [READ_ONLY] if n == 1 else [READ_FIRST] + [READ_MIDDLE] * (n - 2) + [READ_LAST]


def check_read_response(p: Pkt, opcode: int, psn: int, payload_len: int, msn: int | None) -> None:
    assert (p.opcode, p.psn, p.payload_len) == (opcode, psn, payload_len), (p.opcode, p.psn)
    assert len(p.payload) == payload_len
    if opcode == READ_MIDDLE:  # no AETH (protocol.md 1.3)
        assert codec.opcode_ext_bytes(READ_MIDDLE) == 0
        assert (p.aeth_syndrome, p.aeth_msn) == (0, 0)
    else:
        assert codec.opcode_ext_bytes(opcode) == 4
        assert p.aeth_syndrome == SYN_ACK
        if msn is not None:
            assert p.aeth_msn == msn


# ---------------------------------------------------------------------------------------------
# READ segmentation, AETH placement, PSN consumption
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mtu", [256, 1024])
@pytest.mark.parametrize("k,d", [(0, 1), (1, -1), (1, 0), (1, 1), (2, 0), (5, 3)])
@pytest.mark.parametrize("psn", [0, PSN_MOD - 2])
def test_read_segmentation_opcodes_aeth_and_psns(tmp_path: Path, mtu: int, k: int, d: int,
                                                 psn: int) -> None:
    length = k * mtu + d
    roff, loff = 3, 5
    pair = Pair(tmp_path, mtu=mtu, psn=psn)
    pair.read(1, length, loff=loff, roff=roff)
    pair.send(2, 10)
    wcs = pair.finish_ok()
    assert (wcs[0].opcode, wcs[0].byte_len) == (e.IBV_WC_RDMA_READ, length)
    assert (wcs[1].opcode, wcs[1].byte_len) == (e.IBV_WC_SEND, 10)
    n = npsn(length, mtu)
    req = pair.requests()
    assert [p.opcode for p in req] == [READ_REQUEST, SEND_ONLY]
    r = req[0]
    assert (r.psn, r.reth_va, r.reth_rkey, r.reth_len) == (psn, pair.rem.buf + roff, pair.rem.rkey, length)
    assert r.payload_len == 0 and r.ackreq == 1
    # the READ occupies n PSNs: the next request's PSN is first + n (mod 2^24)
    assert req[1].psn == psn_add(psn, n)
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    assert len(resp) == n
    for i, (p, op) in enumerate(zip(resp, read_opcodes(n), strict=True)):
        plen = min(mtu, length - i * mtu)
        # MSN counts the READ at its receipt (C9-148); later AETHs: see test_read_response_msn_*
        check_read_response(p, op, psn_add(psn, i), plen, msn=1 if i == 0 else None)
    got = b"".join(p.payload for p in resp)
    assert got == pair.rem.read(length, roff)
    assert pair.loc.read(length, loff) == pair.rem.read(length, roff)
    assert pair.loc.read(loff) == b"\xee" * loff
    assert pair.loc.read(8, loff + length) == b"\xee" * 8, "nothing written past the SGE"
    assert pair.qb.stats()["read_resp_sent"] == n


@pytest.mark.parametrize("psn", [5, PSN_MOD - 1])
def test_zero_length_read_is_one_only_response_one_psn(tmp_path: Path, psn: int) -> None:
    pair = Pair(tmp_path, psn=psn)
    pair.read(1, 0)
    pair.send(2, 4)
    wcs = pair.finish_ok()
    assert (wcs[0].opcode, wcs[0].byte_len) == (e.IBV_WC_RDMA_READ, 0)
    req = pair.requests()
    assert [(p.opcode, p.psn, p.reth_len) for p in req] == [(READ_REQUEST, psn, 0),
                                                          (SEND_ONLY, psn_add(psn, 1), 0)]
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    assert len(resp) == 1
    check_read_response(resp[0], READ_ONLY, psn, 0, msn=1)


def test_reads_between_writes_psns_and_msn(tmp_path: Path) -> None:
    """WRITE(3 pkts) READ(4 PSNs) WRITE(1) READ(1): PSNs are contiguous across kinds and each
    READ response carries the MSN counting every earlier message plus the READ itself."""
    pair = Pair(tmp_path, mtu=256, psn=PSN_MOD - 5)
    pair.write(1, 700, loff=4096, roff=8192)
    pair.read(2, 1000, roff=0)
    pair.write(3, 10, loff=4096, roff=9000)
    pair.read(4, 200, loff=2048, roff=2048)
    pair.finish_ok()
    req = pair.requests()
    p0 = PSN_MOD - 5
    assert [(p.opcode, p.psn) for p in req] == [
        (WRITE_FIRST, p0), (0x07, psn_add(p0, 1)), (0x08, psn_add(p0, 2)),
        (READ_REQUEST, psn_add(p0, 3)), (WRITE_ONLY, psn_add(p0, 7)), (READ_REQUEST, psn_add(p0, 8))]
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    assert [(p.opcode, p.psn) for p in resp] == [
        (READ_FIRST, psn_add(p0, 3)), (READ_MIDDLE, psn_add(p0, 4)), (READ_MIDDLE, psn_add(p0, 5)),
        (READ_LAST, psn_add(p0, 6)), (READ_ONLY, psn_add(p0, 8))]
    assert [p.aeth_msn for p in resp if p.opcode in (READ_FIRST, READ_ONLY)] == [2, 4]
    assert pair.loc.read(1000) == pair.rem.read(1000)
    assert pair.loc.read(200, 2048) == pair.rem.read(200, 2048)


def test_read_response_msn_is_that_of_the_read(tmp_path: Path) -> None:
    pair = Pair(tmp_path, mtu=1024)
    pair.read(1, 3000)
    pair.send(2, 8)
    pair.finish_ok()
    resp = pair.responses()
    assert [(p.opcode, p.psn) for p in resp] == [(READ_FIRST, 0), (READ_MIDDLE, 1), (READ_LAST, 2),
                                                 (ACKNOWLEDGE, 3)]
    assert [p.aeth_msn for p in resp] == [1, 0, 1, 2]


# ---------------------------------------------------------------------------------------------
# max_rd_atomic
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_max_rd_atomic_bounds_outstanding_requests(tmp_path: Path, k: int) -> None:
    """Never more than k READ/atomic requests on the wire without their (last) response having
    reached the requester; with enough work the bound is reached. (rxe rounds max_rd_atomic up to
    a power of two, so k=3 behaves as 4 there; rdmasim keeps the value asked for.)"""
    pair = Pair(tmp_path, mtu=1024, max_rd_atomic=k)
    for i in range(12):
        if i % 3 == 2:
            pair.atomic(i, e.IBV_WR_ATOMIC_FETCH_AND_ADD, roff=32768 + 8 * i, compare_add=1,
                        loff=60000 + 8 * i)
        else:
            pair.read(i, 2048 + 100 * i, loff=1024 * 4 * i, roff=512 * i)
    pair.finish_ok()
    reqs = [p for p in pair.requests() if p.opcode in RD_ATOMIC_REQUESTS]
    assert len(reqs) == 12
    resp = pair.responses()
    done_at = []  # arrival at the requester of each request's last response
    for r in reqs:
        n = npsn(r.reth_len, 1024) if r.opcode == READ_REQUEST else 1
        last = psn_add(r.psn, n - 1)
        (lr,) = [p for p in resp if p.psn == last and p.opcode in (READ_LAST, READ_ONLY, ATOMIC_ACK)]
        done_at.append(lr.arrival)
    peak = 0
    for j, r in enumerate(reqs):
        outstanding = 1 + sum(1 for i in range(j) if done_at[i] > r.t + 1)
        assert outstanding <= k, (j, outstanding)
        peak = max(peak, outstanding)
    assert peak == k
    for i in range(12):
        if i % 3 != 2:
            ln = 2048 + 100 * i
            assert pair.loc.read(ln, 4096 * i) == bytes(pair.rem0[512 * i:512 * i + ln])


def test_max_rd_atomic_zero_refuses_read_and_atomic(tmp_path: Path) -> None:
    pair = Pair(tmp_path, max_rd_atomic=0)
    with pytest.raises(Exception, match="max_rd_atomic"):
        pair.read(1, 100)
    with pytest.raises(Exception, match="max_rd_atomic"):
        pair.atomic(2, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 1)
    pair.n_posted = 0
    pair.write(3, 100)  # other work is unaffected
    assert [w.status for w in pair.wait()] == [e.IBV_WC_SUCCESS]


# ---------------------------------------------------------------------------------------------
# loss: lost responses, lost requests, duplicates
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lost", [1, 2, 3])
def test_lost_middle_response_reissues_read_from_first_missing_byte(tmp_path: Path, lost: int) -> None:
    mtu, length, roff, loff = 1024, 5000, 16, 8
    psn = PSN_MOD - 3  # the PSNs wrap inside the READ
    pair = Pair(tmp_path, mtu=mtu, psn=psn, timeout=14)
    pair.t.link.ba.drop(psn=psn_add(psn, lost))
    pair.read(1, length, loff=loff, roff=roff)
    wcs = pair.finish_ok()
    assert wcs[0].byte_len == length
    assert pair.loc.read(length, loff) == pair.rem.read(length, roff)
    req = pair.requests()
    assert len(req) == 2
    first, again = req
    assert (first.psn, first.reth_va, first.reth_len) == (psn, pair.rem.buf + roff, length)
    assert again.opcode == READ_REQUEST
    assert again.psn == psn_add(psn, lost), "re-issued at the first missing PSN"
    assert again.reth_va == pair.rem.buf + roff + lost * mtu
    assert again.reth_len == length - lost * mtu
    assert again.reth_rkey == pair.rem.rkey
    # recovered by the implied NAK (a later response arrived), not by the 67 ms timer
    sa = pair.qa.stats()
    assert sa["implied_naks"] == 1 and sa["timeouts"] == 0
    assert again.t < first.t + timeout_ns(14) / 10
    # the responder re-executes from the duplicate's PSN: MIDDLE.../LAST, not FIRST
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    n = npsn(length, mtu)
    assert len(resp) == n + (n - lost)
    replay = resp[n:]
    ops = [READ_MIDDLE] * (n - lost - 1) + [READ_LAST]
    for i, (p, op) in enumerate(zip(replay, ops, strict=True)):
        idx = lost + i
        check_read_response(p, op, psn_add(psn, idx), min(mtu, length - idx * mtu), msn=1)
    assert pair.qb.stats()["dup_rcvd"] == 1


def test_lost_read_request_resent_after_timeout(tmp_path: Path) -> None:
    timeout = 10
    pair = Pair(tmp_path, psn=77, timeout=timeout)
    pair.t.link.ab.drop(psn=77)
    pair.read(1, 3000, roff=100)
    pair.finish_ok()
    req = pair.requests()
    assert [(p.opcode, p.psn, p.reth_va, p.reth_len) for p in req] == [
        (READ_REQUEST, 77, pair.rem.buf + 100, 3000)] * 2
    gap = req[1].t - req[0].t
    assert abs(gap - timeout_ns(timeout)) < 100, gap
    assert pair.qa.stats()["timeouts"] == 1
    assert pair.qb.stats()["dup_rcvd"] == 0, "the first request never arrived"
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    assert [p.opcode for p in resp] == [READ_FIRST, READ_MIDDLE, READ_LAST]
    assert pair.loc.read(3000) == pair.rem.read(3000, 100)


def test_lost_last_response_duplicate_read_reexecuted_from_its_psn(tmp_path: Path) -> None:
    """The LAST response is lost: nothing later arrives, so the requester times out and asks for
    the tail only; the responder treats it as a duplicate and re-executes it, reading memory
    again (bytes changed in between are returned as they are now)."""
    mtu, timeout, psn = 1024, 10, 1000
    pair = Pair(tmp_path, mtu=mtu, psn=psn, timeout=timeout)
    pair.t.link.ba.drop(psn=psn + 2)
    pair.read(1, 2600)
    pair.sim.run("20us")  # the first two responses have arrived, the third was dropped
    assert len(pair.cq_a) == 0
    pair.rem.array[2048:2600] = 0x77  # changed before the duplicate is executed
    pair.finish_ok()
    assert pair.loc.read(2048) == bytes(pair.rem0[:2048])
    assert pair.loc.read(552, 2048) == b"\x77" * 552
    req = pair.requests()
    assert [(p.psn, p.reth_va - pair.rem.buf, p.reth_len) for p in req] == [(1000, 0, 2600),
                                                                        (1002, 2048, 552)]
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    # the retransmit timer restarts on progress: it runs from the last response that arrived
    assert abs((req[1].t - resp[1].arrival) - timeout_ns(timeout)) < 100
    assert [(p.opcode, p.psn) for p in resp] == [(READ_FIRST, 1000), (READ_MIDDLE, 1001),
                                                 (READ_LAST, 1002), (READ_LAST, 1002)]
    check_read_response(resp[-1], READ_LAST, 1002, 552, msn=1)
    assert pair.qa.stats()["timeouts"] == 1
    sb = pair.qb.stats()
    assert sb["dup_rcvd"] == 1 and sb["read_resp_sent"] == 4


def test_lost_only_response_whole_read_reexecuted(tmp_path: Path) -> None:
    pair = Pair(tmp_path, psn=9, timeout=9)
    pair.t.link.ba.drop(psn=9)
    pair.read(1, 500, roff=40)
    pair.finish_ok()
    req = pair.requests()
    assert [(p.psn, p.reth_va - pair.rem.buf, p.reth_len) for p in req] == [(9, 40, 500)] * 2
    resp = [p for p in pair.responses() if p.opcode in READ_RESPONSES]
    assert [(p.opcode, p.psn) for p in resp] == [(READ_ONLY, 9), (READ_ONLY, 9)]
    assert pair.loc.read(500) == pair.rem.read(500, 40)
    assert pair.qb.stats()["dup_rcvd"] == 1


def test_ack_past_unanswered_read_is_implied_nak(tmp_path: Path) -> None:
    """READ (response lost) then WRITE: the WRITE's ACK covers a PSN after the READ, so the READ's
    response was lost; the requester retries at once (no timeout) from the READ."""
    pair = Pair(tmp_path, psn=50, timeout=14)
    pair.t.link.ba.drop(psn=50)  # the READ_RESPONSE_ONLY
    pair.read(1, 64)
    pair.write(2, 64, loff=4096, roff=4096)
    wcs = pair.finish_ok()
    assert [w.wr_id for w in wcs] == [1, 2]
    sa = pair.qa.stats()
    assert sa["implied_naks"] == 1 and sa["timeouts"] == 0
    req = pair.requests()
    assert [(p.opcode, p.psn) for p in req[:3]] == [(READ_REQUEST, 50), (WRITE_ONLY, 51),
                                                    (READ_REQUEST, 50)]
    ack = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE][0]
    assert ack.psn == 51
    assert req[2].t < ack.arrival + 100, "retried as soon as the ACK arrived"
    assert pair.loc.read(64) == pair.rem.read(64)


# ---------------------------------------------------------------------------------------------
# atomics
# ---------------------------------------------------------------------------------------------

def test_compare_and_swap_success_and_failure(tmp_path: Path) -> None:
    pair = Pair(tmp_path, psn=300)
    pair.set_remote_u64(64, 0x1122334455667788)
    pair.atomic(1, e.IBV_WR_ATOMIC_CMP_AND_SWP, 64, compare_add=0x1122334455667788,
                swap=0xCAFEBABEDEADBEEF, loff=0)
    pair.atomic(2, e.IBV_WR_ATOMIC_CMP_AND_SWP, 64, compare_add=0x1122334455667788,
                swap=0x42, loff=8)  # fails: the value is now the swapped one
    wcs = pair.finish_ok()
    assert [(w.opcode, w.byte_len) for w in wcs] == [(e.IBV_WC_COMP_SWAP, 8)] * 2
    assert pair.local_u64(0) == 0x1122334455667788  # original value, success
    assert pair.local_u64(8) == 0xCAFEBABEDEADBEEF  # original value, failure
    assert pair.remote_u64(64) == 0xCAFEBABEDEADBEEF
    assert pair.rem.read(64) == bytes(pair.rem0[:64]) and pair.rem.read(64, 72) == bytes(pair.rem0[72:136])
    req = pair.requests()
    assert [(p.opcode, p.psn, p.atomic_va - pair.rem.buf, p.atomic_rkey, p.atomic_compare,
             p.atomic_swap_add) for p in req] == [
        (COMPARE_SWAP, 300, 64, pair.rem.rkey, 0x1122334455667788, 0xCAFEBABEDEADBEEF),
        (COMPARE_SWAP, 301, 64, pair.rem.rkey, 0x1122334455667788, 0x42)]
    assert all(p.ackreq for p in req)
    acks = pair.responses()
    assert [(p.opcode, p.psn, p.aeth_syndrome, p.aeth_msn, p.atomic_orig) for p in acks] == [
        (ATOMIC_ACK, 300, SYN_ACK, 1, 0x1122334455667788),
        (ATOMIC_ACK, 301, SYN_ACK, 2, 0xCAFEBABEDEADBEEF)]
    assert pair.qb.stats()["atomics_executed"] == 2


def test_fetch_and_add_sequence_wraps_mod_2_64(tmp_path: Path) -> None:
    pair = Pair(tmp_path, max_rd_atomic=4)
    start = U64 - 5
    pair.set_remote_u64(0, start)
    adds = [1, 2, 3, 10, 1 << 63, U64]
    for i, a in enumerate(adds):
        pair.atomic(i, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, compare_add=a, loff=8 * i)
    wcs = pair.finish_ok()
    assert [(w.wr_id, w.opcode, w.byte_len) for w in wcs] == [(i, e.IBV_WC_FETCH_ADD, 8)
                                                               for i in range(len(adds))]
    v = start
    for i, a in enumerate(adds):
        assert pair.local_u64(8 * i) == v, i
        v = (v + a) & U64
    assert pair.remote_u64(0) == v
    req = pair.requests()
    assert [(p.opcode, p.atomic_swap_add) for p in req] == [(FETCH_ADD, a) for a in adds]
    assert pair.qb.stats()["atomics_executed"] == len(adds)


def test_lost_atomic_ack_replayed_from_saved_result_never_executed_twice(tmp_path: Path) -> None:
    timeout = 10
    pair = Pair(tmp_path, psn=4000, timeout=timeout)
    pair.set_remote_u64(8, 1000)
    pair.t.link.ba.drop(psn=4000)
    pair.atomic(1, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8, compare_add=5)
    pair.sim.run("20us")
    assert pair.remote_u64(8) == 1005 and len(pair.cq_a) == 0
    pair.set_remote_u64(8, 7777)  # a later change: the replay must not see it, nor add again
    pair.finish_ok()
    assert pair.local_u64(0) == 1000, "the original value of the one execution"
    assert pair.remote_u64(8) == 7777, "the duplicate was not executed"
    req = pair.requests()
    assert [(p.opcode, p.psn, p.atomic_swap_add) for p in req] == [(FETCH_ADD, 4000, 5)] * 2
    assert abs((req[1].t - req[0].t) - timeout_ns(timeout)) < 100
    acks = pair.responses()
    assert [(p.opcode, p.psn, p.atomic_orig) for p in acks] == [(ATOMIC_ACK, 4000, 1000)] * 2
    sb = pair.qb.stats()
    assert sb["atomics_executed"] == 1 and sb["dup_rcvd"] == 1
    assert pair.qa.stats()["timeouts"] == 1


def test_lost_cmp_swap_ack_replayed(tmp_path: Path) -> None:
    pair = Pair(tmp_path, psn=10, timeout=9)
    pair.set_remote_u64(16, 3)
    pair.t.link.ba.drop(psn=10)
    pair.atomic(1, e.IBV_WR_ATOMIC_CMP_AND_SWP, 16, compare_add=3, swap=9)
    pair.finish_ok()
    # executed once (3 -> 9); a re-execution would have failed the compare and returned 9
    assert pair.local_u64(0) == 3 and pair.remote_u64(16) == 9
    assert pair.qb.stats()["atomics_executed"] == 1


@pytest.mark.parametrize("misalign", [1, 4, 7])
def test_misaligned_atomic_rem_inv_req_err(tmp_path: Path, misalign: int) -> None:
    pair = Pair(tmp_path, psn=20)
    pair.atomic(1, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 64 + misalign, compare_add=1)
    pair.write(2, 8)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_REM_INV_REQ_ERR),
                                                  (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert pair.qa.qp_state == e.IBV_QPS_ERR and pair.qb.qp_state == e.IBV_QPS_ERR
    naks = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE]
    assert [(p.psn, p.aeth_syndrome) for p in naks] == [(20, NAK_INV_REQ)]
    assert np.array_equal(pair.rem.array, pair.rem0)
    assert pair.qb.stats()["atomics_executed"] == 0


@pytest.mark.parametrize("target", ["bad_rkey", "out_of_range"])
def test_misaligned_atomic_with_bad_key_is_access_error(tmp_path: Path, target: str) -> None:
    pair = Pair(tmp_path, psn=20)
    if target == "bad_rkey":
        rkey, addr = pair.rem.rkey ^ 0x3300, pair.rem.buf + 4
    else:
        rkey, addr = pair.rem.rkey, pair.rem.buf + pair.rem.length + 4
    pair.atomic(1, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, compare_add=1, rkey=rkey, raddr=addr)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_REM_ACCESS_ERR)]
    naks = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE]
    assert [(p.psn, p.aeth_syndrome) for p in naks] == [(20, NAK_REM_ACCESS)]


def test_atomic_needs_one_8_byte_sge(tmp_path: Path) -> None:
    pair = Pair(tmp_path)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, sg=[SGE(pair.loc.buf, 4, pair.loc.lkey)])
    wr.set_wr_atomic(pair.rem.rkey, pair.rem.buf, 1)
    with pytest.raises(Exception, match="8-byte"):
        pair.qa.post_send(wr)


# ---------------------------------------------------------------------------------------------
# memory protection for READ and atomics (protocol.md 5)
# ---------------------------------------------------------------------------------------------

def _bad_target(pair: Pair, case: str) -> tuple[int, int]:
    """(rkey, remote address) for a READ/atomic of up to 64 bytes that the responder must refuse."""
    if case == "bad_rkey":
        return pair.rem.rkey ^ 0x3300, pair.rem.buf
    if case == "out_of_range":
        return pair.rem.rkey, pair.rem.buf + pair.rem.length  # aligned, just past the end
    if case == "no_remote_perm":
        lw = MR(pair.pd_b, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        pair.keep = lw  # REMOTE_WRITE only: no REMOTE_READ / REMOTE_ATOMIC
        return lw.rkey, lw.buf
    if case == "pd_mismatch":
        other = PD(pair.ctx_b)
        mr = MR(other, 4096, ALL_REMOTE)
        pair.keep = mr
        return mr.rkey, mr.buf
    if case == "deregistered":
        mr = MR(pair.pd_b, 4096, ALL_REMOTE)
        key, addr = mr.rkey, mr.buf
        mr.close()
        return key, addr
    raise AssertionError(case)


ACCESS_CASES = ["bad_rkey", "out_of_range", "no_remote_perm", "pd_mismatch", "deregistered"]


@pytest.mark.parametrize("case", ACCESS_CASES)
@pytest.mark.parametrize("verb", ["read", "fetch_add", "cmp_swap"])
def test_read_and_atomic_remote_access_errors(tmp_path: Path, case: str, verb: str) -> None:
    pair = Pair(tmp_path, psn=600)
    rkey, addr = _bad_target(pair, case)
    if verb == "read":
        pair.read(1, 64, rkey=rkey, raddr=addr)
    else:
        op = e.IBV_WR_ATOMIC_FETCH_AND_ADD if verb == "fetch_add" else e.IBV_WR_ATOMIC_CMP_AND_SWP
        pair.atomic(1, op, 0, compare_add=1, swap=2, rkey=rkey, raddr=addr)
    pair.read(2, 16, loff=4096)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_REM_ACCESS_ERR),
                                                  (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert pair.qa.qp_state == e.IBV_QPS_ERR
    assert pair.qb.qp_state == e.IBV_QPS_ERR
    naks = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE]
    assert [(p.psn, p.aeth_syndrome) for p in naks] == [(600, NAK_REM_ACCESS)]
    assert not [p for p in pair.responses() if p.opcode in READ_RESPONSES | {ATOMIC_ACK}]
    assert pair.loc.read(64) == b"\xee" * 64
    assert np.array_equal(pair.rem.array, pair.rem0)


@pytest.mark.parametrize("verb", ["read", "fetch_add", "write"])
def test_qp_access_flags_forbid_op_rem_inv_req_err(tmp_path: Path, verb: str) -> None:
    allowed = {"read": e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC,
               "fetch_add": e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ,
               "write": e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC}[verb]
    pair = Pair(tmp_path, psn=70, access=e.IBV_ACCESS_LOCAL_WRITE | allowed)
    if verb == "read":
        pair.read(1, 64)
    elif verb == "fetch_add":
        pair.atomic(1, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, compare_add=1)
    else:
        pair.write(1, 64)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_REM_INV_REQ_ERR)]
    naks = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE]
    assert [(p.psn, p.aeth_syndrome) for p in naks] == [(70, NAK_INV_REQ)]
    assert pair.qb.qp_state == e.IBV_QPS_ERR and pair.qa.qp_state == e.IBV_QPS_ERR
    assert np.array_equal(pair.rem.array, pair.rem0)


@pytest.mark.parametrize("case", ["bad_lkey", "out_of_range", "no_local_write", "other_pd"])
@pytest.mark.parametrize("verb", ["read", "fetch_add"])
def test_read_and_atomic_local_sge_errors_loc_prot_err(tmp_path: Path, case: str, verb: str) -> None:
    pair = Pair(tmp_path)
    lbuf, lkey, loff = None, None, 0
    if case == "bad_lkey":
        lkey = pair.loc.lkey ^ 0x1
    elif case == "out_of_range":
        loff = pair.loc.length - 4
    elif case == "no_local_write":
        lbuf = MR(pair.pd_a, 4096, 0)  # a READ/atomic result must be written into the SGE
        pair.keep = lbuf
    else:
        lbuf = MR(PD(pair.ctx_a), 4096, e.IBV_ACCESS_LOCAL_WRITE)
        pair.keep = lbuf
    pair.write(1, 16, loff=1024, roff=1024)  # earlier work, still unacknowledged
    if verb == "read":
        pair.read(2, 8, loff=loff, lkey=lkey, lbuf=lbuf)
    else:
        lmr = lbuf or pair.loc
        wr = SendWR(wr_id=2, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                    sg=[SGE(lmr.buf + loff, 8, lmr.lkey if lkey is None else lkey)])
        wr.set_wr_atomic(pair.rem.rkey, pair.rem.buf, 1)
        pair._post(wr)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    # design.md: a send-side local error flushes the unacknowledged WQEs before it
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_WR_FLUSH_ERR),
                                                  (2, e.IBV_WC_LOC_PROT_ERR)]
    assert not [p for p in pair.requests() if p.opcode in RD_ATOMIC_REQUESTS], "nothing is sent"
    assert pair.qa.qp_state == e.IBV_QPS_ERR
    assert pair.qb.stats()["atomics_executed"] == 0


def test_receive_wqe_with_bad_lkey_rem_op_err_and_loc_qp_op_err(tmp_path: Path) -> None:
    pair = Pair(tmp_path, psn=5)
    pair.qb.post_recv(RecvWR(wr_id=9, sg=[SGE(pair.rbuf.buf, 64, pair.rbuf.lkey ^ 0x2)]))
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(pair.loc.buf, 32, pair.loc.lkey)])
    pair._post(wr)
    pair.sim.run_until_idle()
    _, a = pair.cq_a.poll(10)
    _, b = pair.cq_b.poll(10)
    assert [(w.wr_id, w.status) for w in a] == [(1, e.IBV_WC_REM_OP_ERR)]
    naks = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE]
    assert [(p.psn, p.aeth_syndrome) for p in naks] == [(5, NAK_REM_OP)]
    assert pair.qb.qp_state == e.IBV_QPS_ERR
    assert [(w.wr_id, w.status) for w in b] == [(9, e.IBV_WC_LOC_QP_OP_ERR)]


def test_deregister_mr_while_read_response_pending_raises(tmp_path: Path) -> None:
    """A READ response being sent from an MR keeps it in use: dereg is refused, not torn."""
    pair = Pair(tmp_path, max_rd_atomic=1)
    pair.read(1, 60000)
    pair.sim.run("1500ns")  # request arrived, responses streaming
    with pytest.raises(Exception, match="in use"):
        pair.rem.close()
    pair.finish_ok()
    assert pair.loc.read(60000) == pair.rem.read(60000)


# ---------------------------------------------------------------------------------------------
# fence and SQD
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fence", [True, False])
def test_fenced_write_waits_for_earlier_read(tmp_path: Path, fence: bool) -> None:
    pair = Pair(tmp_path, psn=0)
    pair.read(1, 8192)  # 8 response packets
    flags = e.IBV_SEND_SIGNALED | (e.IBV_SEND_FENCE if fence else 0)
    pair.write(2, 64, loff=16384, roff=16384, flags=flags)
    pair.finish_ok()
    req = pair.requests()
    assert [p.opcode for p in req] == [READ_REQUEST, WRITE_ONLY]
    last = [p for p in pair.responses() if p.opcode == READ_LAST][0]
    if fence:
        assert req[1].t >= last.arrival - 1, "fenced WRITE started before the READ completed"
    else:
        assert req[1].t < last.t, "without a fence the WRITE does not wait"
    assert pair.loc.read(8192) == bytes(pair.rem0[:8192])


def test_fenced_send_waits_for_earlier_atomic_and_all_reads(tmp_path: Path) -> None:
    pair = Pair(tmp_path, max_rd_atomic=4)
    pair.read(1, 4096)
    pair.atomic(2, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, compare_add=1, loff=8192)
    pair.read(3, 2048, loff=4096, roff=4096)
    pair.send(4, 16, flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_FENCE)
    pair.finish_ok()
    req = pair.requests()
    assert [p.opcode for p in req] == [READ_REQUEST, FETCH_ADD, READ_REQUEST, SEND_ONLY]
    # the three READ/atomics were in flight together; the SEND waited for the last answer
    assert req[2].t < pair.responses()[0].t
    answers = [p for p in pair.responses() if p.opcode in (READ_LAST, ATOMIC_ACK)]
    assert req[3].t >= max(p.arrival for p in answers) - 1


def test_fence_does_not_wait_for_earlier_writes(tmp_path: Path) -> None:
    """IBA: the fence orders against earlier READ/atomics only (rxe waits for all earlier WQEs;
    see docs/rc-semantics.md)."""
    pair = Pair(tmp_path)
    pair.write(1, 8192)
    pair.write(2, 64, loff=16384, roff=16384, flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_FENCE)
    pair.finish_ok()
    req = pair.requests()
    first_ack = [p for p in pair.responses() if p.opcode == ACKNOWLEDGE][0]
    assert req[-1].opcode == WRITE_ONLY and req[-1].t < first_ack.arrival


def _to_sqd(qp: QP) -> None:
    qp.modify(QPAttr(qp_state=e.IBV_QPS_SQD), e.IBV_QP_STATE)


def _to_rts_from_sqd(qp: QP) -> None:
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)


def test_sqd_finishes_started_wqes_and_holds_new_ones(tmp_path: Path) -> None:
    pair = Pair(tmp_path, max_rd_atomic=2)
    pair.write(1, 32768)  # 32 packets, ~3 us on the wire
    pair.read(2, 4096, loff=32768, roff=32768)
    pair.sim.run("1us")  # WR 1 is being sent, the READ has not started yet
    _to_sqd(pair.qa)
    pair.write(3, 64, loff=40000, roff=40000)  # posted while in SQD: waits
    pair.read(4, 64, loff=41000, roff=41000)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_SUCCESS)]
    assert pair.qa.qp_state == e.IBV_QPS_SQD
    t_drained = pair.sim.now
    assert pair.rem.read(32768) == pair.loc.read(32768)
    _to_rts_from_sqd(pair.qa)
    wcs = pair.wait(3)
    assert [(w.wr_id, w.status) for w in wcs] == [(i, e.IBV_WC_SUCCESS) for i in (2, 3, 4)]
    req = pair.requests()
    later = [p for p in req if p.opcode in (READ_REQUEST, WRITE_ONLY)]
    assert len(later) == 3 and all(p.t >= t_drained // 1000 for p in later)


def test_sqd_lets_a_started_read_finish_and_responder_keeps_answering(tmp_path: Path) -> None:
    pair = Pair(tmp_path, max_rd_atomic=1)
    pair.read(1, 8192)
    pair.atomic(2, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 0, compare_add=1, loff=9000 - 9000 % 8 + 8)
    pair.sim.run("200ns")  # READ request sent; the atomic waits for a credit
    _to_sqd(pair.qa)
    _to_sqd(pair.qb)  # the responder in SQD still answers (protocol.md 4)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_SUCCESS)]
    assert pair.loc.read(8192) == bytes(pair.rem0[:8192])
    assert pair.qb.stats()["atomics_executed"] == 0
    _to_rts_from_sqd(pair.qa)
    assert [w.wr_id for w in pair.wait(1)] == [2]


# ---------------------------------------------------------------------------------------------
# ordering at the responder: a READ is executed (its data fixed) in PSN order
# ---------------------------------------------------------------------------------------------

def test_read_data_not_changed_by_later_write(tmp_path: Path) -> None:
    pair = Pair(tmp_path, mtu=1024)
    pair.read(1, 8192)
    pair.loc.array[16384:17408] = 0x55
    pair.write(2, 1024, loff=16384, roff=7168)  # overwrites the READ's last KB
    pair.finish_ok()
    assert pair.rem.read(1024, 7168) == b"\x55" * 1024
    assert pair.loc.read(8192) == bytes(pair.rem0[:8192]), "the READ must return memory as of its PSN"


def test_read_data_not_changed_by_later_atomic(tmp_path: Path) -> None:
    pair = Pair(tmp_path, mtu=1024, max_rd_atomic=2)
    pair.read(1, 8192)
    pair.atomic(2, e.IBV_WR_ATOMIC_FETCH_AND_ADD, 8000, compare_add=1, loff=20000)
    pair.finish_ok()
    assert pair.loc.read(8192) == bytes(pair.rem0[:8192])
    assert pair.local_u64(20000) == int(pair.rem0[8000:8008].view(np.uint64)[0])


def test_fatal_nak_does_not_overtake_earlier_read_responses(tmp_path: Path) -> None:
    pair = Pair(tmp_path, psn=0, max_rd_atomic=2,
                access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)  # no REMOTE_WRITE
    pair.read(1, 4096)
    pair.read(2, 100, loff=8192, roff=8192)
    pair.write(3, 10, loff=9000, roff=9000)  # NAK invalid request at PSN 5
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS),
                                                  (3, e.IBV_WC_REM_INV_REQ_ERR)]
    assert pair.loc.read(4096) == bytes(pair.rem0[:4096])
    assert pair.loc.read(100, 8192) == bytes(pair.rem0[8192:8292])
    resp = pair.responses()
    assert [(p.opcode, p.psn) for p in resp] == [(READ_FIRST, 0), (READ_MIDDLE, 1), (READ_MIDDLE, 2),
                                                 (READ_LAST, 3), (READ_ONLY, 4), (ACKNOWLEDGE, 5)]
    assert resp[-1].aeth_syndrome == NAK_INV_REQ


def test_error_nak_past_unanswered_read_retries_the_read(tmp_path: Path) -> None:
    pair = Pair(tmp_path, psn=40, timeout=4, retry_cnt=1)
    pair.t.link.ba.drop(psn=40)  # the READ's only response
    pair.read(1, 64)
    wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(pair.loc.buf + 4096, 16, pair.loc.lkey)])
    wr.set_wr_rdma(pair.rem.rkey ^ 0x3300, pair.rem.buf)  # NAK remote access at PSN 41
    pair._post(wr)
    pair.sim.run_until_idle()
    _, wcs = pair.cq_a.poll(10)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_RETRY_EXC_ERR), (2, e.IBV_WC_WR_FLUSH_ERR)]
    reads = [p for p in pair.requests() if p.opcode == READ_REQUEST]
    assert len(reads) >= 2 and all(p.psn == 40 for p in reads), "the READ is re-issued"
