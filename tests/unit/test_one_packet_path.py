"""One-packet messages resolve their memory keys once: the requester's SGE check before the first
packet gives the bytes of a one-SGE, one-packet SEND/WRITE (no second look-up when the packet is
built), and the responder's RETH check gives the place of a WRITE's first packet. The same runs
with every packet resolving its keys itself (``SimCore._set_key_recheck(True)``, the path before
the shortcut) must give the same simulation: frame for frame, the same completions, the same
bytes in memory and the same counters, with loss (retransmitted one-packet messages), errors
(bad lkey, bad rkey, range) and UD datagrams."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.verbs_pair import ALL_REMOTE, TwoHosts, random_bytes

from rdmasim.verbs import SGE, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e

SLOT = 2048


def _wc(w: Any) -> tuple:
    return (w.wr_id, w.status, w.opcode, w.byte_len, w.imm_data, w.wc_flags)


def _drain(cq: Any) -> list[tuple]:
    _, wcs = cq.poll(len(cq))
    return [_wc(w) for w in wcs]


def _rc_mix(tmp: Path, recheck: bool, loss: float) -> dict[str, Any]:
    """SEND/WRITE/READ of one packet (one and two SGEs, 0 to 1024 bytes) among multi-packet ones,
    over a link that drops ``loss`` of the frames both ways."""
    h = TwoHosts(mtu=1024, loss_ab=loss, loss_ba=loss, seed=11, pcap=tmp / f"rc{int(recheck)}.pcap", cqe=256)
    h.sim._core._set_key_recheck(recheck)
    src = h.mr_a(16 * SLOT, ALL_REMOTE, fill=random_bytes(16 * SLOT, 1))
    dst = h.mr_b(16 * SLOT, ALL_REMOTE, fill=random_bytes(16 * SLOT, 2))
    cap = QPCap(max_send_wr=64, max_recv_wr=64, max_send_sge=2, max_recv_sge=2)
    qa, qb = h.qp_pair(cap=cap, sq_sig_all=0, timeout=8, retry_cnt=7)
    for k in range(20):
        qb.post_recv(RecvWR(wr_id=500 + k, sg=[SGE(dst.buf + 15 * SLOT, SLOT, dst.lkey)]))
    ops = [(e.IBV_WR_RDMA_WRITE, 1024), (e.IBV_WR_RDMA_WRITE, 1), (e.IBV_WR_RDMA_WRITE, 0),
           (e.IBV_WR_RDMA_WRITE_WITH_IMM, 700), (e.IBV_WR_SEND, 1000), (e.IBV_WR_SEND_WITH_IMM, 64),
           (e.IBV_WR_RDMA_READ, 1024), (e.IBV_WR_RDMA_WRITE, 3000), (e.IBV_WR_SEND, 0),
           (e.IBV_WR_RDMA_READ, 1), (e.IBV_WR_RDMA_WRITE, 999)]
    n = 0
    for rnd in range(3):
        for i, (op, length) in enumerate(ops):
            slot = (rnd * len(ops) + i) % 14
            if i % 3 == 2 and length >= 2:  # two SGEs making one packet
                half = length // 2
                sg = [SGE(src.buf + slot * SLOT, half, src.lkey),
                      SGE(src.buf + slot * SLOT + SLOT // 2, length - half, src.lkey)]
            else:
                sg = [SGE(src.buf + slot * SLOT, length, src.lkey)]
            wr = SendWR(wr_id=n, opcode=op, sg=sg, imm_data=0x0A0B0C00 + n,
                        send_flags=e.IBV_SEND_SIGNALED if n % 2 else 0)
            wr.set_wr_rdma(dst.rkey, dst.buf + ((slot + 1) % 14) * SLOT)
            qa.post_send(wr)
            n += 1
    last = SendWR(wr_id=999, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 8, src.lkey)],
                  send_flags=e.IBV_SEND_SIGNALED)
    last.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(last)
    h.sim.run_until_idle()
    h.sim.close_capture()
    return {"pcap": hashlib.sha256(h.pcap.read_bytes()).hexdigest(), "now": h.sim.now, "events": h.sim.events,
            "wc_a": _drain(h.cq_a), "wc_b": _drain(h.cq_b), "src": src.array.tobytes(),
            "dst": dst.array.tobytes(), "qa": qa.stats(), "qb": qb.stats()}


def _errors(tmp: Path, recheck: bool, case: str) -> dict[str, Any]:
    """A one-packet WRITE/SEND whose key or range is wrong, between good one-packet WRITEs."""
    h = TwoHosts(mtu=1024, seed=4, pcap=tmp / f"err{case}{int(recheck)}.pcap")
    h.sim._core._set_key_recheck(recheck)
    src = h.mr_a(4 * SLOT, ALL_REMOTE, fill=random_bytes(4 * SLOT, 3))
    dst = h.mr_b(4 * SLOT, ALL_REMOTE, fill=0)
    qa, qb = h.qp_pair(cap=QPCap(max_send_wr=8, max_recv_wr=8), timeout=8, retry_cnt=1)
    qb.post_recv(RecvWR(wr_id=77, sg=[SGE(dst.buf, SLOT, dst.lkey)]))
    bad = {"lkey": dict(lkey=src.lkey + 1), "rkey": dict(rkey=dst.rkey + 1),
           "range": dict(raddr=dst.buf + 4 * SLOT - 100),
           "src_range": dict(addr=src.buf + 4 * SLOT - 100)}[case]
    for k in range(3):
        kw = bad if k == 1 else {}
        wr = SendWR(wr_id=k, opcode=e.IBV_WR_RDMA_WRITE,
                    sg=[SGE(kw.get("addr", src.buf + k * 512), 512, kw.get("lkey", src.lkey))],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(kw.get("rkey", dst.rkey), kw.get("raddr", dst.buf + k * 512))
        qa.post_send(wr)
    h.sim.run_until_idle()
    h.sim.close_capture()
    return {"pcap": h.pcap.read_bytes(), "now": h.sim.now, "wc_a": _drain(h.cq_a), "wc_b": _drain(h.cq_b),
            "dst": dst.array.tobytes(), "qa": qa.stats(), "qb": qb.stats(),
            "state": (qa.qp_state, qb.qp_state)}


def _ud(tmp: Path, recheck: bool) -> dict[str, Any]:
    h = TwoHosts(mtu=1024, seed=5, pcap=tmp / f"ud{int(recheck)}.pcap")
    h.sim._core._set_key_recheck(recheck)
    src = h.mr_a(4096, e.IBV_ACCESS_LOCAL_WRITE, fill=random_bytes(4096, 4))
    dst = h.mr_b(8192, e.IBV_ACCESS_LOCAL_WRITE, fill=0xEE)
    qa, qb = h.qp_pair(qp_type=e.IBV_QPT_UD, cap=QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=2))
    ah = h.ah_to_b()
    for k in range(4):
        qb.post_recv(RecvWR(wr_id=k, sg=[SGE(dst.buf + k * 2048, 2048, dst.lkey)]))
    for k, length in enumerate((1024, 1, 0, 600)):
        sg = [SGE(src.buf + k * 100, length, src.lkey)]
        if k == 3:
            sg = [SGE(src.buf, 300, src.lkey), SGE(src.buf + 2000, 300, src.lkey)]
        wr = SendWR(wr_id=10 + k, opcode=e.IBV_WR_SEND, sg=sg)
        wr.set_wr_ud(ah, qb.qp_num, 0x11111111)
        qa.post_send(wr)
    h.sim.run_until_idle()
    h.sim.close_capture()
    return {"pcap": h.pcap.read_bytes(), "wc_a": _drain(h.cq_a), "wc_b": _drain(h.cq_b),
            "dst": dst.array.tobytes(), "qa": qa.stats(), "qb": qb.stats()}


@pytest.mark.parametrize("loss", [0.0, 0.05])
def test_one_packet_messages_same_with_and_without_the_shortcut(tmp_path: Path, loss: float) -> None:
    fast, ref = _rc_mix(tmp_path, False, loss), _rc_mix(tmp_path, True, loss)
    assert fast["wc_a"] and fast["wc_b"]  # completions on both sides
    assert fast["wc_a"][-1][0] == 999 and all(w[1] == e.IBV_WC_SUCCESS for w in fast["wc_a"] + fast["wc_b"])
    if loss:
        assert fast["qa"]["pkts_retx"] > 0  # one-packet messages were sent again
    assert fast == ref


@pytest.mark.parametrize("case", ["lkey", "rkey", "range", "src_range"])
def test_bad_key_or_range_of_a_one_packet_write_same_with_and_without_the_shortcut(tmp_path: Path,
                                                                                   case: str) -> None:
    fast, ref = _errors(tmp_path, False, case), _errors(tmp_path, True, case)
    status = {w[0]: w[1] for w in fast["wc_a"]}
    want = e.IBV_WC_LOC_PROT_ERR if case in ("lkey", "src_range") else e.IBV_WC_REM_ACCESS_ERR
    assert status[1] == want  # the bad work request (those before it unacknowledged: flushed)
    assert fast == ref


def test_ud_datagrams_same_with_and_without_the_shortcut(tmp_path: Path) -> None:
    fast, ref = _ud(tmp_path, False), _ud(tmp_path, True)
    assert [w[1] for w in fast["wc_b"]] == [e.IBV_WC_SUCCESS] * 4
    assert fast == ref
    got = np.frombuffer(fast["dst"], dtype=np.uint8)
    assert got[40:41].tobytes() != b"\xee"  # the 1-byte datagram landed after the GRH area
