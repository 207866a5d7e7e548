"""UC queue pairs (IBV_QPT_UC) in the C core, as IBA 9.7.5 / rxe: RC's SEND and RDMA WRITE packets
with UC opcodes; no ACKs and no retransmission (a WQE completes once its last packet is sent); READ
and atomics refused at post; on a PSN gap the responder drops the rest of that message and
resynchronises at the next FIRST/ONLY; loss loses messages, counted; UC's own state table."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from support.verbs_pair import VerbsPair, gid_route

import rdmasim
from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs import CQ, PD, QP, SGE, Context, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR
from rdmasim.verbs import enums as e

MTU = 1024


class Uc(VerbsPair):
    """A UC (or ``qp_type``) pair at 10 Gb/s, 2 us, ``src`` patterned on a, a writable ``dst`` on b."""

    def __init__(self, qp_type: int = e.IBV_QPT_UC) -> None:
        super().__init__(rate="10Gbps", delay="2us", mtu=MTU, seed=1, cqe=64, qp_type=qp_type,
                         cap=QPCap(max_send_wr=16, max_recv_wr=16))
        pattern = (np.arange(16384) * 7 % 251).astype(np.uint8)
        self.src = self.mr_a(16384, e.IBV_ACCESS_LOCAL_WRITE, fill=pattern)
        self.dst = self.mr_b(16384, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)


make_uc = Uc


def send(u: Uc, wr_id: int, off: int, length: int, opcode: int = e.IBV_WR_SEND, imm: int = 0) -> None:
    w = SendWR(wr_id=wr_id, opcode=opcode, sg=[SGE(u.src.buf + off, length, u.src.lkey)], imm_data=imm)
    if opcode in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM):
        w.set_wr_rdma(u.dst.rkey, u.dst.buf + 8192)
    u.qa.post_send(w)


def recv(u: Uc, wr_id: int, length: int = 4096, off: int = 0) -> None:
    u.qb.post_recv(RecvWR(wr_id=wr_id, sg=[SGE(u.dst.buf + off, length, u.dst.lkey)]))


def test_send_and_write_arrive_without_acks_and_complete_when_sent() -> None:
    u = make_uc()
    recv(u, 10)
    recv(u, 11, 16)
    send(u, 1, 0, 3000)  # 3 packets: SEND FIRST, MIDDLE, LAST
    send(u, 2, 100, 2500, e.IBV_WR_RDMA_WRITE_WITH_IMM, imm=0x01020304)
    first = u.t.sim.wait_for(u.cq_a, 1)[0]
    assert first.ok and first.wr_id == 1
    assert len(u.cq_b) == 0  # the sender completed before the last packet arrived: no ACK awaited
    u.t.sim.run_until_idle()
    assert [w.wr_id for w in u.cq_a.poll(8)[1]] == [2]
    got = u.cq_b.poll(8)[1]
    assert [(w.wr_id, w.opcode, w.byte_len) for w in got] == [
        (10, e.IBV_WC_RECV, 3000), (11, e.IBV_WC_RECV_RDMA_WITH_IMM, 2500)]
    assert got[1].imm_data == 0x01020304
    assert bytes(u.dst.read(3000)) == bytes(u.src.read(3000))
    assert bytes(u.dst.read(2500, 8192)) == bytes(u.src.read(2500, 100))
    sa, sb = u.qa.stats(), u.qb.stats()
    assert sa["pkts_sent"] == 6 and sa["pkts_retx"] == 0
    assert sb["acks_sent"] == 0 and sb["naks_sent"] == 0  # UC: nothing comes back
    assert u.t.link.ba.stats()["frames"] == 0


@pytest.mark.parametrize("opcode", [e.IBV_WR_RDMA_READ, e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                                    e.IBV_WR_ATOMIC_CMP_AND_SWP])
def test_read_and_atomics_are_refused_at_post(opcode: int) -> None:
    u = make_uc()
    w = SendWR(wr_id=1, opcode=opcode, sg=[SGE(u.src.buf, 8, u.src.lkey)])
    if opcode == e.IBV_WR_RDMA_READ:
        w.set_wr_rdma(u.dst.rkey, u.dst.buf)
    else:
        w.set_wr_atomic(u.dst.rkey, u.dst.buf, 1, 0)
    with pytest.raises(PyverbsRDMAError, match="not supported on a UC QP") as ex:
        u.qa.post_send(w)
    assert ex.value.error_code == 22


@pytest.mark.parametrize("lost_psn", [0, 1, 2])  # FIRST, MIDDLE or LAST of the first message
def test_a_lost_packet_loses_its_message_and_the_next_one_is_taken(lost_psn: int) -> None:
    u = make_uc()
    u.t.link.ab.drop(psn=lost_psn)
    recv(u, 10)
    recv(u, 11, off=4096)
    send(u, 1, 0, 3000)       # PSNs 0-2, one of them lost
    send(u, 2, 4000, 3000)    # PSNs 3-5: FIRST/MIDDLE/LAST
    send(u, 3, 8000, 100)     # PSN 6: ONLY
    u.t.sim.run_until_idle()
    assert [(w.wr_id, w.ok) for w in u.cq_a.poll(8)[1]] == [(1, True), (2, True), (3, True)]  # no retries
    got = u.cq_b.poll(8)[1]
    # message 1 is lost; its receive WQE (10) is reused, from offset 0, by message 2
    assert [(w.wr_id, w.byte_len) for w in got] == [(10, 3000), (11, 100)]
    assert bytes(u.dst.read(3000)) == bytes(u.src.read(3000, 4000))
    s = u.qb.stats()
    assert s["uc_msgs_dropped"] == 1
    assert s["uc_pkts_dropped"] == 2 - lost_psn  # the rest of the lost message after the gap
    assert u.qa.stats()["pkts_retx"] == 0


def test_a_write_with_a_lost_packet_is_lost_and_later_ones_land() -> None:
    u = make_uc()
    u.t.link.ab.drop(psn=1)
    send(u, 1, 0, 3000, e.IBV_WR_RDMA_WRITE)  # PSNs 0-2
    send(u, 2, 0, 100, e.IBV_WR_RDMA_WRITE)   # PSN 3: WRITE ONLY
    u.t.sim.run_until_idle()
    # the first 1024 bytes of WRITE 1 landed before the gap; WRITE 2 rewrote the first 100
    assert bytes(u.dst.read(100, 8192)) == bytes(u.src.read(100))
    assert bytes(u.dst.read(1024, 8192 + 1024)) == bytes(1024)  # the lost packet's bytes never came
    assert u.qb.stats()["uc_msgs_dropped"] == 1


def test_irn_recovery_is_refused_on_uc() -> None:
    t = rdmasim.back_to_back()
    ctx = Context(t.a)
    pd, cq = PD(ctx), CQ(ctx, 4)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UC, scq=cq, rcq=cq))
    with pytest.raises(PyverbsRDMAError, match="not UD or UC"):
        qp.set_recovery("irn")


def test_no_receive_wqe_drops_the_message_without_rnr() -> None:
    u = make_uc()
    send(u, 1, 0, 200)
    u.t.sim.run_until_idle()
    assert u.cq_a.poll(4)[1][0].ok  # completed as sent
    assert len(u.cq_b) == 0 and u.qb.stats()["uc_msgs_dropped"] == 1
    assert u.qb.stats()["naks_sent"] == 0 and u.qb.qp_state == e.IBV_QPS_RTS
    recv(u, 10)
    send(u, 2, 0, 200)
    u.t.sim.run_until_idle()
    assert [w.wr_id for w in u.cq_b.poll(4)[1]] == [10]


def test_uc_and_rc_take_only_their_own_opcodes() -> None:
    p = VerbsPair(rate="10Gbps", delay="1us", mtu=MTU, cqe=8, qp_type=(e.IBV_QPT_UC, e.IBV_QPT_RC))
    uc, rc, t = p.qa, p.qb, p.t  # a mismatched pair: each drops the other's packets
    src = p.mr_a(64, e.IBV_ACCESS_LOCAL_WRITE)
    rc.post_recv(RecvWR(wr_id=1, sg=[]))
    uc.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 8, src.lkey)]))
    t.sim.run_until_idle()
    assert p.ctx_b.rx_counters()["bad_state"] == 1 and len(p.cq_b) == 0


def test_uc_state_table_takes_uc_attributes_only() -> None:
    t = rdmasim.back_to_back()
    ctx = Context(t.a)
    pd, cq = PD(ctx), CQ(ctx, 4)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_UC, scq=cq, rcq=cq))
    qp.to_init(QPAttr(qp_access_flags=e.IBV_ACCESS_REMOTE_WRITE))
    av = QPAttr(qp_state=e.IBV_QPS_RTR, path_mtu=e.IBV_MTU_1024, dest_qp_num=0x11, rq_psn=0,
                max_dest_rd_atomic=1, min_rnr_timer=12)
    av.ah_attr = gid_route(t.b.gid)
    base = e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
    with pytest.raises(PyverbsRDMAError, match="IBV_QP_MAX_DEST_RD_ATOMIC.*not allowed"):
        qp.modify(av, base | e.IBV_QP_MAX_DEST_RD_ATOMIC)
    with pytest.raises(PyverbsRDMAError, match="missing required attribute.*IBV_QP_RQ_PSN"):
        qp.modify(av, base & ~e.IBV_QP_RQ_PSN)
    qp.modify(av, base)
    rts = QPAttr(qp_state=e.IBV_QPS_RTS, sq_psn=5, timeout=14)
    with pytest.raises(PyverbsRDMAError, match="IBV_QP_TIMEOUT.*not allowed"):
        qp.modify(rts, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN | e.IBV_QP_TIMEOUT)
    with pytest.raises(PyverbsRDMAError, match="missing required attribute.*IBV_QP_SQ_PSN"):
        qp.modify(rts, e.IBV_QP_STATE)
    qp.modify(rts, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    assert qp.qp_state == e.IBV_QPS_RTS


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not on PATH")
def test_uc_frames_decode_in_tshark(tmp_path: Path) -> None:
    u = make_uc()
    pcap = tmp_path / "uc.pcap"
    u.t.sim.capture(str(pcap))
    recv(u, 10)
    recv(u, 11)
    send(u, 1, 0, 2100)  # SEND FIRST, MIDDLE, LAST
    send(u, 2, 0, 8, imm=0x0A0B0C0D, opcode=e.IBV_WR_SEND_WITH_IMM)  # SEND ONLY with immediate
    send(u, 3, 0, 1500, e.IBV_WR_RDMA_WRITE)  # WRITE FIRST, LAST
    send(u, 4, 0, 16, e.IBV_WR_RDMA_WRITE_WITH_IMM, imm=7)  # WRITE ONLY with immediate
    u.t.sim.run_until_idle()
    u.t.sim.close_capture()
    fields = ["_ws.malformed", "_ws.expert", "infiniband.bth.opcode", "infiniband.bth.destqp",
              "infiniband.bth.psn", "infiniband.reth.dmalen"]
    cmd = ["tshark", "-r", str(pcap), "-T", "fields", "-E", "occurrence=f"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [dict(zip(fields, line.split("\t"), strict=True)) for line in out.splitlines()]
    ops = [0x20, 0x21, 0x22, 0x25, 0x26, 0x28, 0x2B]
    assert [int(r["infiniband.bth.opcode"]) for r in rows] == ops
    assert [int(r["infiniband.bth.psn"]) for r in rows] == list(range(7))
    for r in rows:
        assert r["_ws.malformed"] == "" and r["_ws.expert"] == "", r
        assert int(r["infiniband.bth.destqp"], 0) == u.qb.qp_num
    assert int(rows[4]["infiniband.reth.dmalen"]) == 1500 and int(rows[6]["infiniband.reth.dmalen"]) == 16
    info = subprocess.run(["tshark", "-r", str(pcap)], capture_output=True, text=True, check=True,
                          timeout=120).stdout
    for name in ("UC Send First", "UC Send Middle", "UC Send Last", "UC Send Only Immediate",
                 "UC RDMA Write First", "UC RDMA Write Last", "UC RDMA Write Only Immediate"):
        assert name in info, (name, info)
