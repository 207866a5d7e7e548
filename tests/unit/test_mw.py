"""Memory windows (rxe_mw.c rules, IBA 10.6.7): binding type 1 and type 2 windows, remote access
through a window's key (its range, access, PD and QP), local and remote invalidation, dealloc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.verbs_pair import VerbsPair

from rdmasim.capture import read_pcap
from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs import (
    CQ,
    MR,
    MW,
    PD,
    QP,
    SGE,
    Context,
    MWBind,
    MWBindInfo,
    QPCap,
    QPInitAttr,
    RecvWR,
    SendWR,
    connect_qps,
)
from rdmasim.verbs import enums as e

LW = e.IBV_ACCESS_LOCAL_WRITE
IBV_WC_WITH_INV = 8  # verbs.h ibv_wc_flags


class Pair(VerbsPair):
    """Two connected RC QPs; b's 256-byte region may be bound to windows."""

    def __init__(self, tmp_path: Path | None = None) -> None:
        super().__init__(mtu=1024, seed=3, pcap=None if tmp_path is None else tmp_path / "cap.pcap", cqe=32,
                         cap=QPCap(max_send_wr=8, max_recv_wr=8))
        self.src = self.mr_a(256, LW)
        self.src.write(b"\x42" * 256)
        self.dst = self.mr_b(256, LW | e.IBV_ACCESS_MW_BIND)

    def run(self) -> None:
        self.t.sim.run_until_idle()

    def bind1(self, mw: MW, off: int, length: int, access: int, wr_id: int = 7) -> list:
        self.qb.bind_mw(mw, MWBind(MWBindInfo(self.dst, self.dst.buf + off, length, access),
                                   e.IBV_SEND_SIGNALED, wr_id=wr_id))
        self.run()
        return self.cq_b.poll(8)[1]

    def bind2(self, mw: MW, off: int, length: int, access: int, qp: QP | None = None) -> tuple[int, list]:
        wr = SendWR(wr_id=8, opcode=e.IBV_WR_BIND_MW)
        wr.set_bind_wr(mw, MWBindInfo(self.dst, self.dst.buf + off, length, access))
        (qp or self.qb).post_send(wr)
        self.run()
        return wr.rkey, self.cq_b.poll(8)[1]

    def remote(self, opcode: int, rkey: int, off: int, length: int = 64, qp: QP | None = None) -> int:
        wr = SendWR(wr_id=1, opcode=opcode, sg=[SGE(self.src.buf, length, self.src.lkey)])
        wr.set_wr_rdma(rkey, self.dst.buf + off)
        (qp or self.qa).post_send(wr)
        self.run()
        wcs = (self.cq_a if qp is None else qp.scq).poll(8)[1]  # type: ignore[attr-defined]
        assert len(wcs) == 1
        return wcs[0].status


def statuses(wcs: list) -> list[tuple[int, int, int]]:
    return [(w.wr_id, w.status, w.opcode) for w in wcs]


def test_type1_window_grants_only_its_range() -> None:
    p = Pair()
    mw = MW(p.pd_b, 1)
    old = int(mw.rkey)
    wcs = p.bind1(mw, 64, 64, e.IBV_ACCESS_REMOTE_WRITE)
    assert statuses(wcs) == [(7, e.IBV_WC_SUCCESS, e.IBV_WC_BIND_MW)]
    assert int(mw.rkey) == (old & ~0xFF) | ((old + 1) & 0xFF)  # ibv_inc_rkey, as rxe's provider
    assert p.remote(e.IBV_WR_RDMA_WRITE, mw.rkey, 64) == e.IBV_WC_SUCCESS
    assert p.dst.read(256) == bytes(64) + b"\x42" * 64 + bytes(128)
    # one byte past the window: the region would allow it, the window does not (IBA; rxe checks the MR)
    assert p.remote(e.IBV_WR_RDMA_WRITE, mw.rkey, 65) == e.IBV_WC_REM_ACCESS_ERR


def test_window_access_is_checked() -> None:
    p = Pair()
    mw = MW(p.pd_b, 1)
    p.bind1(mw, 0, 128, e.IBV_ACCESS_REMOTE_READ)
    assert p.remote(e.IBV_WR_RDMA_READ, mw.rkey, 0) == e.IBV_WC_SUCCESS
    assert p.remote(e.IBV_WR_RDMA_WRITE, mw.rkey, 0) == e.IBV_WC_REM_ACCESS_ERR


def test_old_window_key_and_region_key_do_not_grant_access() -> None:
    p = Pair()
    mw = MW(p.pd_b, 1)
    old = int(mw.rkey)
    p.bind1(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    assert p.remote(e.IBV_WR_RDMA_WRITE, old, 0) == e.IBV_WC_REM_ACCESS_ERR
    p2 = Pair()
    assert p2.remote(e.IBV_WR_RDMA_WRITE, p2.dst.rkey, 0) == e.IBV_WC_REM_ACCESS_ERR  # MR: no REMOTE_WRITE


def test_bind_needs_mw_bind_access_on_the_region() -> None:
    p = Pair()
    plain = MR(p.pd_b, 64, LW)
    mw = MW(p.pd_b, 1)
    p.qb.bind_mw(mw, MWBind(MWBindInfo(plain, plain.buf, 64, e.IBV_ACCESS_REMOTE_WRITE), e.IBV_SEND_SIGNALED))
    p.run()
    assert [w.status for w in p.cq_b.poll(8)[1]] == [e.IBV_WC_MW_BIND_ERR]  # C10-73
    assert p.qb.inspect()["state"] == "IBV_QPS_ERR"  # a failed local operation ends the QP, as rxe


def test_bind_outside_the_region_fails() -> None:
    p = Pair()
    mw = MW(p.pd_b, 1)
    assert [w.status for w in p.bind1(mw, 128, 256, e.IBV_ACCESS_REMOTE_WRITE)] == [e.IBV_WC_MW_BIND_ERR]


def test_type1_unbind_by_zero_length() -> None:
    p = Pair()
    mw = MW(p.pd_b, 1)
    p.bind1(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    assert p.remote(e.IBV_WR_RDMA_WRITE, mw.rkey, 0) == e.IBV_WC_SUCCESS
    assert [w.status for w in p.bind1(mw, 0, 0, 0)] == [e.IBV_WC_SUCCESS]
    assert p.remote(e.IBV_WR_RDMA_WRITE, mw.rkey, 0) == e.IBV_WC_REM_ACCESS_ERR


def test_type2_window_is_bound_to_its_qp() -> None:
    p = Pair()
    mw = MW(p.pd_b, 2)
    rkey, wcs = p.bind2(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    assert statuses(wcs) == [(8, e.IBV_WC_SUCCESS, e.IBV_WC_BIND_MW)]
    assert p.remote(e.IBV_WR_RDMA_WRITE, rkey, 0) == e.IBV_WC_SUCCESS
    # a second connection into the same PD: the window answers only on the QP that bound it
    ctx_a2, ctx_b2 = Context(p.t.a), p.pd_b.ctx
    pd_a2 = PD(ctx_a2)
    cq_a2, cq_b2 = CQ(ctx_a2, 8), CQ(ctx_b2, 8)
    qa2 = QP(pd_a2, QPInitAttr(scq=cq_a2, rcq=cq_a2, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qb2 = QP(p.pd_b, QPInitAttr(scq=cq_b2, rcq=cq_b2, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    connect_qps(qa2, qb2)
    src2 = MR(pd_a2, 64, LW)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src2.buf, 64, src2.lkey)])
    wr.set_wr_rdma(rkey, p.dst.buf)
    qa2.post_send(wr)
    p.run()
    assert [w.status for w in cq_a2.poll(4)[1]] == [e.IBV_WC_REM_ACCESS_ERR]


# ---- zero-based type 2 windows: the remote address is an offset from the window's start ----

ZB_START, ZB_LEN = 64, 128  # the window covers dst[64:192]
ZB_ACCESS = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC


def zero_based(p: Pair) -> int:
    """Bind a zero-based type 2 window over dst[64:192] through p.qb; its rkey."""
    rkey, wcs = p.bind2(MW(p.pd_b, 2), ZB_START, ZB_LEN, ZB_ACCESS | e.IBV_ACCESS_ZERO_BASED)
    assert statuses(wcs) == [(8, e.IBV_WC_SUCCESS, e.IBV_WC_BIND_MW)]
    return rkey


def at(p: Pair, wr: SendWR) -> tuple[int, bytes]:
    """Post ``wr`` on p.qa, run; its status and the first 64 bytes of p.src afterwards."""
    p.qa.post_send(wr)
    p.run()
    (wc,) = p.cq_a.poll(8)[1]
    return wc.status, p.src.read(64)


def rdma(p: Pair, opcode: int, rkey: int, va: int, length: int) -> SendWR:
    wr = SendWR(wr_id=1, opcode=opcode, sg=[SGE(p.src.buf, length, p.src.lkey)])
    wr.set_wr_rdma(rkey, va)
    return wr


def atomic(p: Pair, opcode: int, rkey: int, va: int, compare_add: int, swap: int = 0) -> SendWR:
    wr = SendWR(wr_id=1, opcode=opcode, sg=[SGE(p.src.buf, 8, p.src.lkey)])
    wr.set_wr_atomic(rkey, va, compare_add, swap)
    return wr


def test_zero_based_window_write_and_read_take_offsets() -> None:
    """IBA 10.6.7 / rxe check_rkey (resp.offset = mw->addr): address 100 under a zero-based
    window is byte 100 of the window, i.e. region byte 64 + 100."""
    p = Pair()
    rkey = zero_based(p)
    assert at(p, rdma(p, e.IBV_WR_RDMA_WRITE, rkey, 100, 28))[0] == e.IBV_WC_SUCCESS
    assert p.dst.read(256) == bytes(164) + b"\x42" * 28 + bytes(64)
    p.dst.write(bytes(range(256)))
    status, got = at(p, rdma(p, e.IBV_WR_RDMA_READ, rkey, 0, 64))
    assert status == e.IBV_WC_SUCCESS and got == bytes(range(64, 128))
    status, got = at(p, rdma(p, e.IBV_WR_RDMA_READ, rkey, ZB_LEN - 64, 64))  # the window's last byte
    assert status == e.IBV_WC_SUCCESS and got == bytes(range(128, 192))


def test_zero_based_window_atomics_take_offsets() -> None:
    p = Pair()
    rkey = zero_based(p)
    p.dst.write((5).to_bytes(8, "little"), offset=ZB_START + 8)
    status, got = at(p, atomic(p, e.IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, 8, 3))
    assert status == e.IBV_WC_SUCCESS and got[:8] == (5).to_bytes(8, "little")
    status, got = at(p, atomic(p, e.IBV_WR_ATOMIC_CMP_AND_SWP, rkey, 8, 8, 77))
    assert status == e.IBV_WC_SUCCESS and got[:8] == (8).to_bytes(8, "little")
    assert p.dst.read(8, ZB_START + 8) == (77).to_bytes(8, "little")
    assert p.dst.read(8, 8) == bytes(8)  # region byte 8 (the offset taken as an address) untouched


@pytest.mark.parametrize("make", [
    lambda p, k: rdma(p, e.IBV_WR_RDMA_WRITE, k, 100, 29),        # one byte past the window
    lambda p, k: rdma(p, e.IBV_WR_RDMA_READ, k, ZB_LEN - 63, 64),  # one byte past the window
    lambda p, k: rdma(p, e.IBV_WR_RDMA_WRITE, k, ZB_LEN, 1),       # starts at the window's end
    lambda p, k: atomic(p, e.IBV_WR_ATOMIC_FETCH_AND_ADD, k, ZB_LEN, 1),
    lambda p, k: rdma(p, e.IBV_WR_RDMA_WRITE, k, p.dst.buf + ZB_START, 8),  # the address, not the offset
], ids=["write", "read", "write-at-end", "atomic-at-end", "absolute-address"])
def test_zero_based_window_bounds(make: Any) -> None:
    """An offset + length beyond the window's length is a remote access error (the region's
    bytes after the window are not granted), and so is the window's address taken as absolute."""
    p = Pair()
    rkey = zero_based(p)
    before = p.dst.read(256)
    assert at(p, make(p, rkey))[0] == e.IBV_WC_REM_ACCESS_ERR
    assert p.dst.read(256) == before


def test_type2_local_invalidate() -> None:
    p = Pair()
    mw = MW(p.pd_b, 2)
    rkey, _ = p.bind2(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    p.qb.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_LOCAL_INV, imm_data=rkey))
    p.run()
    assert statuses(p.cq_b.poll(8)[1]) == [(3, e.IBV_WC_SUCCESS, e.IBV_WC_LOCAL_INV)]
    assert p.remote(e.IBV_WR_RDMA_WRITE, rkey, 0) == e.IBV_WC_REM_ACCESS_ERR


def test_local_invalidate_of_a_type1_window_fails() -> None:
    p = Pair()
    mw = MW(p.pd_b, 1)
    p.bind1(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    p.qb.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_LOCAL_INV, imm_data=int(mw.rkey)))
    p.run()
    assert [w.status for w in p.cq_b.poll(8)[1]] == [e.IBV_WC_LOC_QP_OP_ERR]  # rxe_invalidate_mw


def test_send_with_invalidate(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    mw = MW(p.pd_b, 2)
    rkey, _ = p.bind2(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    recv = MR(p.pd_b, 64, LW)
    p.qb.post_recv(RecvWR(wr_id=9, sg=[SGE(recv.buf, 64, recv.lkey)]))
    p.qa.post_send(SendWR(wr_id=4, opcode=e.IBV_WR_SEND_WITH_INV, imm_data=rkey,
                          sg=[SGE(p.src.buf, 16, p.src.lkey)]))
    p.run()
    assert statuses(p.cq_a.poll(8)[1]) == [(4, e.IBV_WC_SUCCESS, e.IBV_WC_SEND)]
    (wc,) = p.cq_b.poll(8)[1]
    assert (wc.wr_id, wc.status, wc.byte_len) == (9, e.IBV_WC_SUCCESS, 16)
    assert wc.wc_flags & IBV_WC_WITH_INV and not wc.wc_flags & e.IBV_WC_WITH_IMM
    assert wc.imm_data == rkey  # invalidated_rkey (the union with imm_data)
    assert recv.read(16) == b"\x42" * 16
    assert p.remote(e.IBV_WR_RDMA_WRITE, rkey, 0) == e.IBV_WC_REM_ACCESS_ERR
    p.t.sim.close_capture()
    inv = [f.fields for f in read_pcap(tmp_path / "cap.pcap") if f.fields["opcode"] == 0x17]
    assert len(inv) == 1 and inv[0]["imm"] == rkey  # the codec keeps the IETH word in "imm"
    if shutil.which("tshark"):  # a decoder we did not write
        out = subprocess.run(["tshark", "-r", str(tmp_path / "cap.pcap"), "-T", "fields", "-E", "separator=,",
                              "-E", "occurrence=f",
                              "-e", "infiniband.bth.opcode", "-e", "infiniband.ieth", "-e", "_ws.malformed",
                              "-Y", "infiniband.bth.opcode == 23"],
                             capture_output=True, text=True, check=True, timeout=120)
        rows = [line.split(",") for line in out.stdout.splitlines()]
        assert [(int(op), ieth.replace(":", ""), bad) for op, ieth, bad in rows] == [(23, f"{rkey:08x}", "")]


def test_multi_packet_send_with_invalidate_ends_with_send_last_inv(tmp_path: Path) -> None:
    p = Pair(tmp_path)
    mw = MW(p.pd_b, 2)
    rkey, _ = p.bind2(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    big_src = MR(p.pd_a, 2048 + 10, LW)
    recv = MR(p.pd_b, 4096, LW)
    p.qb.post_recv(RecvWR(wr_id=9, sg=[SGE(recv.buf, 4096, recv.lkey)]))
    p.qa.post_send(SendWR(wr_id=4, opcode=e.IBV_WR_SEND_WITH_INV, imm_data=rkey,
                          sg=[SGE(big_src.buf, 2058, big_src.lkey)]))
    p.run()
    p.t.sim.close_capture()
    ops = [f.fields["opcode"] for f in read_pcap(tmp_path / "cap.pcap") if f.fields["opcode"] <= 0x17
           and f.fields["opcode"] not in (0x11, 0x12)]
    assert ops == [0x00, 0x01, 0x16]  # SEND_FIRST, SEND_MIDDLE, SEND_LAST_WITH_INVALIDATE
    (wc,) = p.cq_b.poll(8)[1]
    assert wc.byte_len == 2058 and wc.imm_data == rkey and wc.wc_flags & IBV_WC_WITH_INV


def test_send_with_invalidate_of_an_unknown_key_fails_the_receive() -> None:
    p = Pair()
    recv = MR(p.pd_b, 64, LW)
    p.qb.post_recv(RecvWR(wr_id=9, sg=[SGE(recv.buf, 64, recv.lkey)]))
    p.qa.post_send(SendWR(wr_id=4, opcode=e.IBV_WR_SEND_WITH_INV, imm_data=0x1234567,
                          sg=[SGE(p.src.buf, 16, p.src.lkey)]))
    p.run()
    assert [w.status for w in p.cq_b.poll(8)[1]] == [e.IBV_WC_REM_INV_REQ_ERR]  # rxe: class J
    assert [w.status for w in p.cq_a.poll(8)[1]] == [e.IBV_WC_REM_INV_REQ_ERR]


def test_dealloc_revokes_the_key_and_a_bound_region_cannot_be_deregistered() -> None:
    p = Pair()
    mw = MW(p.pd_b, 2)
    rkey, _ = p.bind2(mw, 0, 128, e.IBV_ACCESS_REMOTE_WRITE)
    with pytest.raises(PyverbsRDMAError, match="memory window"):
        p.dst.close()
    mw.close()
    assert p.remote(e.IBV_WR_RDMA_WRITE, rkey, 0) == e.IBV_WC_REM_ACCESS_ERR
    p.dst.close()


def test_local_operations_complete_in_send_queue_order() -> None:
    """A bind posted behind an RDMA WRITE completes after it (no PSN, but SQ order)."""
    p = Pair()
    peer_dst = MR(p.pd_a, 64, LW | e.IBV_ACCESS_REMOTE_WRITE)
    w = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(p.dst.buf, 64, p.dst.lkey)])
    w.set_wr_rdma(peer_dst.rkey, peer_dst.buf)
    p.qb.post_send(w)
    mw = MW(p.pd_b, 2)
    b = SendWR(wr_id=2, opcode=e.IBV_WR_BIND_MW)
    b.set_bind_wr(mw, MWBindInfo(p.dst, p.dst.buf, 64, e.IBV_ACCESS_REMOTE_READ))
    p.qb.post_send(b)
    p.run()
    assert statuses(p.cq_b.poll(8)[1]) == [(1, e.IBV_WC_SUCCESS, e.IBV_WC_RDMA_WRITE),
                                           (2, e.IBV_WC_SUCCESS, e.IBV_WC_BIND_MW)]


def test_window_types() -> None:
    p = Pair()
    with pytest.raises(PyverbsRDMAError) as exc:
        MW(p.pd_b, 3)
    assert exc.value.error_code == 22  # EINVAL, as ib_uverbs_alloc_mw
    with pytest.raises(PyverbsRDMAError, match="type 1"):
        p.qb.bind_mw(MW(p.pd_b, 2), MWBind(MWBindInfo(p.dst, p.dst.buf, 64, 0), e.IBV_SEND_SIGNALED))


def test_local_operations_are_refused_where_they_are_not_emulated() -> None:
    p = VerbsPair(seed=3, cqe=8, cap=QPCap(max_send_wr=4, max_recv_wr=4), recovery="irn")
    qa = p.qa
    assert qa.inspect()["recovery"] == "irn"
    for op in (e.IBV_WR_LOCAL_INV, e.IBV_WR_SEND_WITH_INV):
        with pytest.raises(PyverbsRDMAError, match="IRN"):
            qa.post_send(SendWR(wr_id=1, opcode=op, imm_data=0x1234))
    assert qa.inspect()["sq_outstanding"] == 0
