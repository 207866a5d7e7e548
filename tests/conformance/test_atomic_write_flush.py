"""ATOMIC WRITE (RC opcode 0x1D) and FLUSH (0x1C), as IBA 1.5 annex A19 and Linux rxe have them.

Requester: ATOMIC WRITE carries a RETH (length 8) and the WR's 8 bytes; FLUSH a FETH (placement type
in bits 0-3, selectivity level in bits 4-5) followed by a RETH. Responder (rxe check_op_valid,
check_rkey, atomic_write_reply, process_flush): ATOMIC WRITE needs REMOTE_WRITE on the QP and the
rkey, an 8-byte aligned target and responder resources; FLUSH needs the IBV_ACCESS_FLUSH_* bit of
its placement type on the QP (else an invalid request) and on the rkey (else a remote access error);
level RANGE checks the range, level MR only the region. Both are answered by an RDMA READ response
ONLY with no payload and an ACK AETH (rxe send_read_response_ack). Frames are decoded from the pcap
by the C codec and, independently, by byte offsets of the IBA layout (and by tshark, where its
dissector knows the opcode).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.verbs_pair import VerbsPair

import rdmasim
from rdmasim.capture import read_pcap
from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs import CQ, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR
from rdmasim.verbs import enums as e

ATOMIC_WRITE, FLUSH, READ_RESP_ONLY, ACKNOWLEDGE = 0x1D, 0x1C, 0x10, 0x11
NAK_INV_REQ, NAK_REM_ACCESS = 0x61, 0x62
FLUSH_GLOBAL, FLUSH_PERSISTENT = 1, 2  # ibv_placement_type
FLUSH_RANGE, FLUSH_MR = 0, 1  # ibv_selectivity_level
LW, RW = e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE
FG, FP = e.IBV_ACCESS_FLUSH_GLOBAL, e.IBV_ACCESS_FLUSH_PERSISTENT
ALL = LW | RW | FG | FP
BTH_AT = 14 + 20 + 8  # Ethernet, IPv4, UDP


class Pair(VerbsPair):
    """QP a (requester) -> QP b (responder), back to back, captured."""

    def __init__(self, tmp_path: Path, *, qp_access: int = ALL, mr_access: int = ALL,
                 max_rd_atomic: int = 1) -> None:
        super().__init__(mtu=1024, seed=3, pcap=tmp_path / "cap.pcap", cqe=64,
                         cap=QPCap(max_send_wr=16, max_recv_wr=16), access=qp_access,
                         max_rd_atomic=max_rd_atomic, retry_cnt=1, timeout=8)
        self.rem = self.mr_b(4096, mr_access, fill=0x5A)
        self.n = 0
        self._frames: list[Any] | None = None

    def atomic_write(self, data: bytes, roff: int = 0, rkey: int | None = None, wr_id: int = 1) -> None:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_ATOMIC_WRITE)
        wr.set_wr_atomic_write(self.rem.rkey if rkey is None else rkey, self.rem.buf + roff, data)
        self.qa.post_send(wr)
        self.n += 1

    def flush(self, length: int, ptype: int = FLUSH_GLOBAL, level: int = FLUSH_RANGE, roff: int = 0,
              wr_id: int = 2) -> None:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_FLUSH)
        wr.set_wr_flush(self.rem.rkey, self.rem.buf + roff, length, ptype, level)
        self.qa.post_send(wr)
        self.n += 1

    def wcs(self) -> list[Any]:
        out = self.sim.wait_for(self.cq_a, self.n, timeout="10ms")
        self.sim.run_until_idle()
        return out

    def frames(self) -> list[Any]:
        if self._frames is None:
            self.sim.run_until_idle()
            self.sim.close_capture()
            self._frames = list(read_pcap(self.pcap))
            assert all(fr.fields["icrc_ok"] for fr in self._frames)
        return self._frames

    def ops(self) -> list[int]:
        return [fr.fields["opcode"] for fr in self.frames()]


def raw_frames(pcap: Path) -> list[bytes]:
    """The frames' bytes, read with the pcap layout (no rdmasim code)."""
    data = pcap.read_bytes()
    out, off = [], 24
    while off < len(data):
        incl = struct.unpack_from("<I", data, off + 8)[0]
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def tshark_rows(pcap: Path, *fields: str) -> list[list[str]]:
    args = ["tshark", "-r", str(pcap), "-T", "fields", "-E", "separator=,", "-E", "occurrence=f"]
    for f in fields:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120)
    return [line.split(",") for line in out.stdout.splitlines()]


def test_atomic_write_places_eight_bytes_and_is_answered_by_an_empty_read_response(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    value = bytes(range(0xA0, 0xA8))
    p.atomic_write(value, roff=64)
    (wc,) = p.wcs()
    assert (wc.wr_id, wc.status, wc.opcode) == (1, e.IBV_WC_SUCCESS, e.IBV_WC_ATOMIC_WRITE)
    assert p.rem.read(8, 64) == value  # placed as sent
    assert p.rem.read(8, 56) == b"\x5a" * 8 and p.rem.read(8, 72) == b"\x5a" * 8
    req, resp = p.frames()
    f = req.fields
    assert (f["opcode"], f["reth_va"], f["reth_rkey"], f["reth_len"], f["payload"], f["ackreq"]) == (
        ATOMIC_WRITE, p.rem.buf + 64, p.rem.rkey, 8, value, 1)
    assert (resp.fields["opcode"], resp.fields["payload_len"], resp.fields["psn"]) == (READ_RESP_ONLY, 0,
                                                                                       req.fields["psn"])
    assert resp.fields["aeth_syndrome"] & 0xE0 == 0  # an ACK
    # the IBA layout, by byte offset: BTH, RETH (VA, R_Key, DMA length 8), the 8 bytes, ICRC
    raw = raw_frames(p.pcap)[0]
    assert raw[BTH_AT] == ATOMIC_WRITE
    va, rkey, dmalen = struct.unpack_from(">QII", raw, BTH_AT + 12)
    assert (va, rkey, dmalen) == (p.rem.buf + 64, p.rem.rkey, 8)
    assert raw[BTH_AT + 28:BTH_AT + 36] == value
    assert struct.unpack_from(">H", raw, 14 + 2)[0] == 20 + 8 + 12 + 16 + 8 + 4  # IPv4 total length
    if shutil.which("tshark"):  # Wireshark 4.0's dissector names the BTH of any opcode
        rows = tshark_rows(p.pcap, "infiniband.bth.opcode", "infiniband.bth.psn", "_ws.malformed")
        assert [int(r[0]) for r in rows] == [ATOMIC_WRITE, READ_RESP_ONLY]
        assert int(rows[0][1]) == req.fields["psn"]


@pytest.mark.parametrize(("roff", "rkey_ok", "qp_access", "want"), [
    (4, True, LW | RW, e.IBV_WC_REM_INV_REQ_ERR),  # misaligned (rxe RESPST_ERR_MISALIGNED_ATOMIC)
    (4092, True, LW | RW, e.IBV_WC_REM_ACCESS_ERR),  # past the region's end
    (0, False, LW | RW, e.IBV_WC_REM_ACCESS_ERR),  # a wrong rkey
    (0, True, LW | e.IBV_ACCESS_REMOTE_READ, e.IBV_WC_REM_INV_REQ_ERR),  # QP without REMOTE_WRITE
])
def test_atomic_write_responder_checks(tmp_path: Path, roff: int, rkey_ok: bool, qp_access: int,
                                       want: int) -> None:
    p = Pair(tmp_path, qp_access=qp_access)
    p.atomic_write(b"\x01" * 8, roff=roff, rkey=None if rkey_ok else p.rem.rkey ^ 0x100)
    (wc,) = p.wcs()
    assert wc.status == want
    assert p.rem.read(4096) == b"\x5a" * 4096  # nothing placed
    nak = [fr.fields for fr in p.frames() if fr.fields["opcode"] == ACKNOWLEDGE]
    syndrome = NAK_INV_REQ if want == e.IBV_WC_REM_INV_REQ_ERR else NAK_REM_ACCESS
    assert [f["aeth_syndrome"] for f in nak] == [syndrome]


def test_atomic_write_needs_a_region_with_remote_write(tmp_path: Path) -> None:
    p = Pair(tmp_path, mr_access=LW | e.IBV_ACCESS_REMOTE_READ)
    p.atomic_write(b"\x02" * 8)
    (wc,) = p.wcs()
    assert wc.status == e.IBV_WC_REM_ACCESS_ERR


def test_atomic_write_wr_is_checked_at_post() -> None:
    wr = SendWR(opcode=e.IBV_WR_ATOMIC_WRITE)
    with pytest.raises(Exception, match="exactly 8 bytes"):
        wr.set_wr_atomic_write(1, 0, b"\x00" * 7)
    p = VerbsPair(cqe=4)
    mr, qa = p.mr_a(64, LW), p.qa
    bad = SendWR(opcode=e.IBV_WR_ATOMIC_WRITE, sg=[SGE(mr.buf, 8, mr.lkey)])
    with pytest.raises(PyverbsRDMAError, match="takes no SGEs"):
        qa.post_send(bad)


def test_flush_range_global_is_answered_by_an_empty_read_response(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    p.flush(256, FLUSH_GLOBAL | FLUSH_PERSISTENT, FLUSH_RANGE, roff=128)
    (wc,) = p.wcs()
    assert (wc.wr_id, wc.status, wc.opcode) == (2, e.IBV_WC_SUCCESS, e.IBV_WC_FLUSH)
    req, resp = p.frames()
    assert (req.fields["opcode"], req.fields["imm"], req.fields["reth_va"], req.fields["reth_len"],
            req.fields["payload_len"]) == (FLUSH, 0x03, p.rem.buf + 128, 256, 0)
    assert (resp.fields["opcode"], resp.fields["payload_len"], resp.fields["aeth_syndrome"] & 0xE0) == (
        READ_RESP_ONLY, 0, 0)
    raw = raw_frames(p.pcap)[0]
    assert raw[BTH_AT] == FLUSH
    feth, va, rkey, dmalen = struct.unpack_from(">IQII", raw, BTH_AT + 12)  # FETH before RETH
    assert (feth, va, rkey, dmalen) == ((FLUSH_RANGE << 4) | 3, p.rem.buf + 128, p.rem.rkey, 256)
    assert struct.unpack_from(">H", raw, 14 + 2)[0] == 20 + 8 + 12 + 4 + 16 + 4


def test_flush_mr_level_does_not_check_the_range(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    p.flush(1 << 20, FLUSH_GLOBAL, FLUSH_MR)  # longer than the region: level MR flushes it whole
    (wc,) = p.wcs()
    assert wc.status == e.IBV_WC_SUCCESS
    assert p.frames()[0].fields["imm"] == (FLUSH_MR << 4) | FLUSH_GLOBAL


@pytest.mark.parametrize(("qp_access", "mr_access", "ptype", "length", "want"), [
    (LW | RW | FG, LW | RW, FLUSH_GLOBAL, 64, e.IBV_WC_REM_ACCESS_ERR),  # region without FLUSH_GLOBAL
    (LW | RW | FG, LW | RW | FG, FLUSH_PERSISTENT, 64, e.IBV_WC_REM_INV_REQ_ERR),  # QP without PERSISTENT
    (LW | RW, LW | RW | FG, FLUSH_GLOBAL, 64, e.IBV_WC_REM_INV_REQ_ERR),  # QP without FLUSH_GLOBAL
    (LW | RW | FG, LW | RW | FG, FLUSH_GLOBAL, 8192, e.IBV_WC_REM_ACCESS_ERR),  # range past the region
])
def test_flush_responder_checks(tmp_path: Path, qp_access: int, mr_access: int, ptype: int, length: int,
                                want: int) -> None:
    p = Pair(tmp_path, qp_access=qp_access, mr_access=mr_access)
    p.flush(length, ptype)
    (wc,) = p.wcs()
    assert wc.status == want


def test_flush_wr_values_are_checked() -> None:
    wr = SendWR(opcode=e.IBV_WR_FLUSH)
    with pytest.raises(Exception, match="type"):
        wr.set_wr_flush(1, 0, 8, 0, FLUSH_RANGE)
    with pytest.raises(Exception, match="level"):
        wr.set_wr_flush(1, 0, 8, FLUSH_GLOBAL, 2)


def test_atomic_write_and_flush_wait_for_their_response_behind_max_rd_atomic(tmp_path: Path) -> None:
    """Both take a responder resource and get their own response, so max_rd_atomic=1 lets one out at
    a time: the second request leaves only after the first one's response."""
    p = Pair(tmp_path, max_rd_atomic=1)
    p.atomic_write(b"\x11" * 8, roff=0, wr_id=1)
    p.flush(64, wr_id=2)
    assert [wc.status for wc in p.wcs()] == [e.IBV_WC_SUCCESS] * 2
    frs = p.frames()
    assert [fr.fields["opcode"] for fr in frs] == [ATOMIC_WRITE, READ_RESP_ONLY, FLUSH, READ_RESP_ONLY]
    assert frs[2].t_ns >= frs[1].t_ns


@pytest.mark.parametrize("op", ["atomic_write", "flush"])
def test_duplicate_is_answered_again_not_executed_again(tmp_path: Path, op: str) -> None:
    """The response is lost; the requester times out and resends; the responder finds the PSN in
    its resources and answers again (rxe duplicate_request replay) without placing the bytes again."""
    p = Pair(tmp_path)
    p.t.link.ba.drop(psn=0)
    if op == "atomic_write":
        p.atomic_write(b"\x33" * 8)
    else:
        p.flush(64)
    p.sim.run("5us")  # executed, its response dropped
    if op == "atomic_write":
        assert p.rem.read(8) == b"\x33" * 8
    p.rem.array[:8] = 0x44  # a re-execution would overwrite this
    (wc,) = p.wcs()
    assert wc.status == e.IBV_WC_SUCCESS
    assert p.rem.read(8) == b"\x44" * 8
    want = ATOMIC_WRITE if op == "atomic_write" else FLUSH
    assert [(fr.fields["opcode"], fr.fields["psn"]) for fr in p.frames()] == [
        (want, 0), (READ_RESP_ONLY, 0), (want, 0), (READ_RESP_ONLY, 0)]
    assert p.qb.stats()["dup_rcvd"] == 1


# --- the requester against a scripted responder: which answer completes an ATOMIC WRITE ---------


@pytest.mark.parametrize(("answer", "payload", "want"), [
    (READ_RESP_ONLY, b"", e.IBV_WC_SUCCESS),  # as rxe answers
    (READ_RESP_ONLY, b"\x00" * 8, e.IBV_WC_BAD_RESP_ERR),  # a READ response with data does not fit
    (0x12, b"", e.IBV_WC_BAD_RESP_ERR),  # ATOMIC_ACKNOWLEDGE answers atomics only
])
def test_atomic_write_completes_on_an_empty_read_response_only(answer: int, payload: bytes,
                                                               want: int) -> None:
    from peer_case import REMOTE_RKEY, REMOTE_VA, PeerCase

    c = PeerCase(max_rd_atomic=1)
    wr = SendWR(wr_id=7, opcode=e.IBV_WR_ATOMIC_WRITE)
    wr.set_wr_atomic_write(REMOTE_RKEY, REMOTE_VA, b"abcdefgh")
    c.qp.post_send(wr)
    seen: list[dict] = []

    def handler(peer: Any, pkt: dict) -> None:
        if pkt["opcode"] == ATOMIC_WRITE and not seen:
            seen.append(pkt)
            c.respond(answer, pkt["psn"], payload)

    c.peer.run(handler, until="100us")
    assert [(f["reth_va"], f["reth_rkey"], f["reth_len"], f["payload"]) for f in seen] == [
        (REMOTE_VA, REMOTE_RKEY, 8, b"abcdefgh")]
    assert c.statuses() == [(7, want)]


@pytest.mark.parametrize("op", ["atomic_write", "flush"])
def test_scripted_peer_auto_msn_counts_atomic_write_and_flush(op: str) -> None:
    """A scripted responder with auto_msn counts each as one message (rxe: resp.msn++)."""
    from rdmasim.peer import ScriptedPeer

    t = rdmasim.back_to_back()
    peer = ScriptedPeer(t.sim, t.b, qpn=0x99, auto_msn=True)
    ctx = Context(t.a)
    cq = CQ(ctx, 8)
    qp = QP(PD(ctx), QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=4)))
    peer.connect(qp, qp_psn=5, peer_psn=0, max_rd_atomic=1)
    for i in range(2):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_ATOMIC_WRITE if op == "atomic_write" else e.IBV_WR_FLUSH)
        if op == "atomic_write":
            wr.set_wr_atomic_write(0x1234, 0x1000, b"\x00" * 8)
        else:
            wr.set_wr_flush(0x1234, 0x1000, 64, FLUSH_GLOBAL, FLUSH_RANGE)
        qp.post_send(wr)

    def handler(p: ScriptedPeer, pkt: dict) -> None:
        if pkt["opcode"] in (ATOMIC_WRITE, FLUSH):
            p.send(p.reply(pkt, opcode=READ_RESP_ONLY, aeth_syndrome=0x1F))

    peer.run(handler, until="100us")
    assert peer.msn == 2
    n, wcs = cq.poll(8)
    assert [(w.wr_id, w.status) for w in wcs[:n]] == [(0, e.IBV_WC_SUCCESS), (1, e.IBV_WC_SUCCESS)]


@pytest.mark.parametrize("opcode", [e.IBV_WR_ATOMIC_WRITE, e.IBV_WR_FLUSH])
def test_post_refuses_them_on_a_qp_with_max_rd_atomic_0(opcode: int) -> None:
    """Each needs a READ-like response credit: with max_rd_atomic 0 it could never be sent."""
    p = VerbsPair(cqe=4, max_rd_atomic=0)
    qa = p.qa
    wr = SendWR(opcode=opcode)
    if opcode == e.IBV_WR_ATOMIC_WRITE:
        wr.set_wr_atomic_write(1, 0, bytes(8))
    else:
        wr.set_wr_flush(1, 0, 8, FLUSH_GLOBAL, FLUSH_RANGE)
    with pytest.raises(PyverbsRDMAError, match="ATOMIC WRITE/FLUSH on QP .* max_rd_atomic is 0"):
        qa.post_send(wr)
