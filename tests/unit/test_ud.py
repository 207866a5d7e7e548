"""UD queue pairs (IBA ch. 9/10 over RoCEv2, Linux rxe as the reference): the UD state machine,
SEND / SEND_WITH_IMM as one UD_SEND_ONLY datagram with a DETH, the receiver's Q_Key check, the
40-byte GRH area in front of the payload, the receive completion's fields, silent counted drops
(Q_Key mismatch, no receive posted) and messages longer than the MTU (no packet, no error)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support.verbs_pair import VerbsPair, gid_route

import rdmasim
from rdmasim.capture import read_pcap, read_records
from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs import AH, CQ, MR, PD, QP, SGE, Context, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR
from rdmasim.verbs import enums as e

QKEY = 0x11111111
GRH = 40


class UD(VerbsPair):
    """Two UD QPs in RTS (Q_Keys ``qkey_a``/``qkey_b``, first PSN 0x100), ``src`` patterned on a,
    ``dst`` (0xEE) on b and ``ah_b``, a's address handle for b."""

    def __init__(self, qkey_a: int = QKEY, qkey_b: int = QKEY, mtu: int = 1024) -> None:
        super().__init__(mtu=mtu, seed=5, cqe=32, qp_type=e.IBV_QPT_UD,
                         cap=QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=2, max_recv_sge=2),
                         qkey=(qkey_a, qkey_b), sq_psn=0x100)
        self.src = self.mr_a(8192, e.IBV_ACCESS_LOCAL_WRITE, fill=(np.arange(8192) * 7 + 3).astype(np.uint8))
        self.dst = self.mr_b(8192, e.IBV_ACCESS_LOCAL_WRITE, fill=0xEE)
        self.ah_b = self.ah_to_b()


make_ud = UD


def ud_send(u: UD, wr_id: int, length: int, qkey: int = QKEY, imm: int | None = None,
            rqpn: int | None = None) -> SendWR:
    op = e.IBV_WR_SEND if imm is None else e.IBV_WR_SEND_WITH_IMM
    wr = SendWR(wr_id=wr_id, opcode=op, imm_data=imm or 0, sg=[SGE(u.src.buf, length, u.src.lkey)])
    wr.set_wr_ud(u.ah_b, u.qb.qp_num if rqpn is None else rqpn, qkey)
    return wr


def post_recv(u: UD, wr_id: int, length: int, off: int = 0) -> None:
    u.qb.post_recv(RecvWR(wr_id=wr_id, sg=[SGE(u.dst.buf + off, length, u.dst.lkey)]))


def drain(cq: CQ) -> list:
    _, wcs = cq.poll(len(cq))
    return wcs


def test_ud_state_machine_takes_ud_attributes_only() -> None:
    u = make_ud()
    assert u.qa.qp_state == e.IBV_QPS_RTS
    attr, init = u.qb.query()
    assert attr.qkey == QKEY and init.qp_type == e.IBV_QPT_UD
    t = rdmasim.back_to_back(seed=1)
    ctx = Context(t.a)
    cq = CQ(ctx, 4)
    qp = QP(PD(ctx), QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq))
    # RESET->INIT needs the Q_Key
    with pytest.raises(PyverbsRDMAError, match="missing required attribute.*IBV_QP_QKEY"):
        qp.modify(QPAttr(qp_state=e.IBV_QPS_INIT), e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_INIT, qkey=7),
              e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
    # INIT->RTR: a connected QP's attributes (address vector, remote QPN) are refused
    with pytest.raises(PyverbsRDMAError, match="not allowed here"):
        qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR, dest_qp_num=5), e.IBV_QP_STATE | e.IBV_QP_DEST_QPN)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
    with pytest.raises(PyverbsRDMAError, match="missing required attribute.*IBV_QP_SQ_PSN"):
        qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS), e.IBV_QP_STATE)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTS, sq_psn=3), e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    assert qp.qp_state == e.IBV_QPS_RTS
    # to_rts from RESET walks INIT -> RTR -> RTS with the UD attributes (as pyverbs)
    qp2 = QP(PD(ctx), QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq))
    qp2.to_rts(QPAttr(qkey=9, sq_psn=4))
    assert qp2.qp_state == e.IBV_QPS_RTS and qp2.query()[0].qkey == 9


def test_ud_send_recv_bytes_grh_area_and_wc_fields(tmp_path: Path) -> None:
    u = make_ud()
    pcap = tmp_path / "ud.pcap"
    u.sim.capture(str(pcap))
    post_recv(u, 70, GRH + 300)
    u.qa.post_send(ud_send(u, 1, 200, imm=0x1234ABCD))
    u.sim.run_until_idle()
    u.sim.close_capture()
    (sw,) = drain(u.cq_a)
    assert (sw.wr_id, sw.status, sw.opcode, sw.byte_len) == (1, e.IBV_WC_SUCCESS, e.IBV_WC_SEND, 200)
    (rw,) = drain(u.cq_b)
    assert (rw.wr_id, rw.status, rw.opcode) == (70, e.IBV_WC_SUCCESS, e.IBV_WC_RECV)
    assert rw.byte_len == GRH + 200
    assert rw.wc_flags == e.IBV_WC_GRH | e.IBV_WC_WITH_IMM
    assert rw.imm_data == 0x1234ABCD
    assert rw.src_qp == u.qa.qp_num and rw.qp_num == u.qb.qp_num
    assert rw.pkey_index == 0 and rw.sl == 0
    # one datagram on the wire, nothing back (no ACK in UD)
    _, recs = read_records(pcap)
    assert len(recs) == 1
    frame = recs[0].data
    got = u.dst.read(GRH + 200)
    # GRH area for RoCEv2 over IPv4: 20 zero bytes, then the IPv4 header as received
    assert got[:20] == bytes(20)
    assert got[20:40] == frame[14:34]
    assert got[40:] == u.src.read(200)
    assert u.dst.read(GRH + 210)[GRH + 200:] == b"\xee" * 10  # nothing past the message
    (f,) = [fr.fields for fr in read_pcap(pcap)]
    assert f["opcode"] == 0x65 and f["deth_qkey"] == QKEY and f["src_qpn"] == u.qa.qp_num
    assert f["dest_qpn"] == u.qb.qp_num and f["psn"] == 0x100 and f["ackreq"] == 0


def test_ud_send_without_imm_and_psn_advances() -> None:
    u = make_ud()
    post_recv(u, 1, GRH + 64)
    post_recv(u, 2, GRH + 64, off=1024)
    u.qa.post_send(ud_send(u, 10, 0))
    u.qa.post_send(ud_send(u, 11, 64))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.byte_len, w.wc_flags) for w in drain(u.cq_b)] == [
        (1, GRH, e.IBV_WC_GRH), (2, GRH + 64, e.IBV_WC_GRH)]
    assert u.qa.inspect()["req_psn"] == 0x102
    assert u.qa.stats()["pkts_sent"] == 2


def test_ud_qkey_mismatch_is_dropped_and_counted() -> None:
    u = make_ud()
    post_recv(u, 5, GRH + 64)
    u.qa.post_send(ud_send(u, 1, 16, qkey=QKEY + 1))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(u.cq_a)] == [(1, e.IBV_WC_SUCCESS)]
    assert drain(u.cq_b) == []
    assert u.qb.stats()["ud_qkey_dropped"] == 1
    assert u.qb.qp_state == e.IBV_QPS_RTS
    # the receive WQE is still there for the next datagram with the right Q_Key
    u.qa.post_send(ud_send(u, 2, 16))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.byte_len) for w in drain(u.cq_b)] == [(5, GRH + 16)]


def test_ud_qkey_high_bit_means_the_senders_own_qkey() -> None:
    u = make_ud(qkey_a=QKEY)
    post_recv(u, 5, GRH + 64)
    u.qa.post_send(ud_send(u, 1, 16, qkey=0x80000000))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(u.cq_b)] == [(5, e.IBV_WC_SUCCESS)]
    v = make_ud(qkey_a=QKEY + 2)  # the sender's own qkey differs from the receiver's: dropped
    post_recv(v, 5, GRH + 64)
    v.qa.post_send(ud_send(v, 1, 16, qkey=0x80000000))
    v.sim.run_until_idle()
    assert drain(v.cq_b) == [] and v.qb.stats()["ud_qkey_dropped"] == 1


def test_ud_without_receive_is_dropped_and_counted_no_rnr() -> None:
    u = make_ud()
    u.qa.post_send(ud_send(u, 1, 16))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(u.cq_a)] == [(1, e.IBV_WC_SUCCESS)]
    assert u.qb.stats()["ud_no_recv_dropped"] == 1
    assert u.qa.stats()["rnr_naks_rcvd"] == 0 and u.qb.stats()["naks_sent"] == 0
    post_recv(u, 9, GRH + 64)  # posted later: the dropped datagram does not come back
    u.sim.run_until_idle()
    assert drain(u.cq_b) == []


def test_ud_datagram_longer_than_the_receive_wqe_is_dropped_and_the_wqe_kept() -> None:
    # rxe class D (drop_msg): no completion, the receive WQE waits for a datagram that fits
    u = make_ud()
    post_recv(u, 3, GRH + 15)
    u.qa.post_send(ud_send(u, 1, 16))
    u.sim.run_until_idle()
    assert drain(u.cq_b) == [] and u.qb.stats()["ud_len_dropped"] == 1
    assert u.qb.qp_state == e.IBV_QPS_RTS
    u.qa.post_send(ud_send(u, 2, 15))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.status, w.byte_len) for w in drain(u.cq_b)] == [(3, e.IBV_WC_SUCCESS, GRH + 15)]


def test_ud_message_longer_than_mtu_emits_nothing_and_raises_no_error(tmp_path: Path) -> None:
    # IBA C10-93.1.1 (and rxe): no packet, no error; the WQE completes and its PSN is used
    u = make_ud()
    post_recv(u, 1, GRH + 2048)
    pcap = tmp_path / "mtu.pcap"
    u.sim.capture(str(pcap))
    u.qa.post_send(ud_send(u, 1, 1025))
    u.qa.post_send(ud_send(u, 2, 1024))  # exactly one MTU is one packet
    u.sim.run_until_idle()
    u.sim.close_capture()
    assert [(w.wr_id, w.status) for w in drain(u.cq_a)] == [(1, e.IBV_WC_SUCCESS), (2, e.IBV_WC_SUCCESS)]
    assert u.qa.stats()["ud_too_long_dropped"] == 1 and u.qa.stats()["pkts_sent"] == 1
    frames = [f.fields for f in read_pcap(pcap)]
    assert [(f["psn"], f["payload_len"]) for f in frames] == [(0x101, 1024)]
    assert [(w.wr_id, w.byte_len) for w in drain(u.cq_b)] == [(1, GRH + 1024)]


def test_ud_send_needs_send_opcode_and_an_address_handle() -> None:
    u = make_ud()
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(u.src.buf, 8, u.src.lkey)])
    wr.set_wr_ud(u.ah_b, u.qb.qp_num, QKEY)
    with pytest.raises(PyverbsRDMAError, match="UD QP sends IBV_WR_SEND"):
        u.qa.post_send(wr)
    with pytest.raises(rdmasim.verbs.PyverbsUserError, match="set_wr_ud"):
        u.qa.post_send(SendWR(wr_id=2, sg=[SGE(u.src.buf, 8, u.src.lkey)]))


@pytest.mark.parametrize("which", ["other-pd", "other-device", "destroyed"])
def test_ud_send_through_an_unusable_address_handle_is_loc_qp_op_err(which: str) -> None:
    """rxe_get_av finds no address vector for an AH whose PD is not the QP's (another PD of the
    device, or a PD of another device) or that was destroyed: rxe_requester completes the WR
    IBV_WC_LOC_QP_OP_ERR (not a post_send error) and the QP goes to ERR; nothing is sent and the
    WR behind it is flushed."""
    u = make_ud()
    post_recv(u, 1, GRH + 64)
    ah = {"other-pd": lambda: AH(PD(u.pd_a.ctx), attr=gid_route(u.t.b.gid, is_global=0)),
          "other-device": lambda: AH(u.pd_b, attr=gid_route(u.t.b.gid, is_global=0)),
          "destroyed": u.ah_to_b}[which]()
    if which == "destroyed":
        ah.close()
    bad = ud_send(u, 1, 16)
    bad.set_wr_ud(ah, u.qb.qp_num, QKEY)
    u.qa.post_send(bad)
    u.qa.post_send(ud_send(u, 2, 16))
    u.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(u.cq_a)] == [(1, e.IBV_WC_LOC_QP_OP_ERR),
                                                            (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert u.qa.qp_state == e.IBV_QPS_ERR
    assert u.qa.stats()["pkts_sent"] == 0 and drain(u.cq_b) == []


def test_ud_send_through_the_qps_own_address_handle_after_a_good_one_still_works() -> None:
    """The check is per work request: a datagram through a valid AH of the QP's PD is sent
    before a later WR's unusable AH fails the QP."""
    u = make_ud()
    post_recv(u, 1, GRH + 64)
    u.qa.post_send(ud_send(u, 1, 16))
    gone = u.ah_to_b()
    gone.close()
    bad = ud_send(u, 2, 16)
    bad.set_wr_ud(gone, u.qb.qp_num, QKEY)
    u.qa.post_send(bad)
    u.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(u.cq_a)] == [(1, e.IBV_WC_SUCCESS),
                                                            (2, e.IBV_WC_LOC_QP_OP_ERR)]
    assert [(w.wr_id, w.status) for w in drain(u.cq_b)] == [(1, e.IBV_WC_SUCCESS)]


def test_rc_qp_drops_ud_opcodes_and_ud_qp_drops_rc_opcodes() -> None:
    u = make_ud()
    post_recv(u, 1, GRH + 64)
    # a UD datagram to the QPN of an RC QP on host b: dropped by type, counted at the NIC
    ctx_b = u.qb.pd.ctx
    cq = CQ(ctx_b, 4)
    rc = QP(u.qb.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq))
    rc.to_init(QPAttr(qp_access_flags=0))
    before = u.sim._core.host_rx_counters(u.t.b.index)["bad_state"]
    u.qa.post_send(ud_send(u, 1, 8, rqpn=rc.qp_num))
    u.sim.run_until_idle()
    assert u.sim._core.host_rx_counters(u.t.b.index)["bad_state"] == before + 1
    assert len(cq) == 0 and drain(u.cq_b) == []


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not on PATH")
def test_ud_frames_decode_in_tshark(tmp_path: Path) -> None:
    u = make_ud()
    pcap = tmp_path / "ud.pcap"
    u.sim.capture(str(pcap))
    post_recv(u, 1, GRH + 64)
    post_recv(u, 2, GRH + 64, off=512)
    u.qa.post_send(ud_send(u, 1, 33))
    u.qa.post_send(ud_send(u, 2, 8, imm=0xCAFE0001))
    u.sim.run_until_idle()
    u.sim.close_capture()
    fields = ["_ws.malformed", "_ws.expert", "infiniband.bth.opcode", "infiniband.bth.destqp",
              "infiniband.bth.psn", "infiniband.deth.q_key", "infiniband.deth.srcqp", "infiniband.immdt",
              "infiniband.invariant.crc"]
    cmd = ["tshark", "-r", str(pcap), "-T", "fields", "-E", "occurrence=f"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [dict(zip(fields, line.split("\t"), strict=True)) for line in out.splitlines()]
    assert len(rows) == 2
    for row, op, psn in zip(rows, (0x64, 0x65), (0x100, 0x101), strict=True):
        assert row["_ws.malformed"] == "" and row["_ws.expert"] == "", row
        assert int(row["infiniband.bth.opcode"]) == op
        assert int(row["infiniband.bth.destqp"], 0) == u.qb.qp_num
        assert int(row["infiniband.bth.psn"]) == psn
        assert int(row["infiniband.deth.q_key"], 0) == QKEY
        assert int(row["infiniband.deth.srcqp"], 0) == u.qa.qp_num
    # verbs' imm_data is __be32: the wire carries its bytes as they lie in memory
    assert rows[1]["infiniband.immdt"].replace(":", "") == (0xCAFE0001).to_bytes(4, "little").hex()
    info = subprocess.run(["tshark", "-r", str(pcap)], capture_output=True, text=True, check=True,
                          timeout=120).stdout
    assert "UD Send Only" in info, info


def test_ud_datagram_to_a_qp_of_its_own_host_is_looped_back(tmp_path: Path) -> None:
    """RoCE loopback (as for RC): an AH naming the sender's own host reaches a UD QP there,
    looped inside the NIC, not on the link."""
    t = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=5)
    ctx = Context(t.a)
    pd = PD(ctx)
    cq = CQ(ctx, 32)
    cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=2, max_recv_sge=2)
    qs = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq, cap=cap)) for _ in range(2)]
    for qp in qs:
        qp.to_rts(QPAttr(qkey=QKEY, sq_psn=0))
    pcap = tmp_path / "lb.pcap"
    t.sim.capture(str(pcap))
    src = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    src.array[:100] = np.arange(100, dtype=np.uint8)
    dst = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qs[1].post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(dst.buf + 1024, GRH + 100, dst.lkey)]))
    wr = SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(src.buf, 100, src.lkey)])
    wr.set_wr_ud(AH(pd, attr=gid_route(t.a.gid)), qs[1].qp_num, QKEY)
    qs[0].post_send(wr)
    wcs = t.sim.wait_for(cq, 2)
    assert sorted(w.wr_id for w in wcs) == [3, 7]
    assert all(w.status == e.IBV_WC_SUCCESS for w in wcs)
    recv = next(w for w in wcs if w.wr_id == 7)
    assert recv.byte_len == GRH + 100 and recv.src_qp == qs[0].qp_num
    assert bytes(dst.array[1024 + GRH:1024 + GRH + 100]) == bytes(range(100))
    t.sim.close_capture()
    assert list(read_pcap(str(pcap))) == []  # looped inside the NIC: nothing on the wire
