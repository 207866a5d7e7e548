"""The receiving NIC's checks against frames a scripted peer sends on purpose: a wrong ICRC,
bytes that do not parse (reserved opcode, cut short), and the peer's own MSN keeping.

IBA: a packet failing the ICRC check, or one that cannot be parsed, is dropped silently (no ACK,
no NAK, no memory access). rxe: rxe_recv.c drops on a failed header check or rxe_icrc_check.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import rdmasim
from rdmasim import codec
from rdmasim.capture import read_records
from rdmasim.peer import ScriptedPeer, corrupt_icrc
from rdmasim.verbs import CQ, MR, PD, QP, Context, QPCap, QPInitAttr
from rdmasim.verbs import enums as e

OP_WRITE_ONLY, OP_ACK, OP_SEND_ONLY = 0x0A, 0x11, 0x04
RESERVED_OPCODE = 0x1F  # RC opcodes 0x18..0x1F are reserved (IBA table 35)


def setup(**attrs):
    topo = rdmasim.back_to_back(mtu=1024)
    peer = ScriptedPeer(topo.sim, topo.b, qpn=0x99, **attrs)
    ctx = Context(topo.a)
    pd = PD(ctx)
    cq = CQ(ctx, 32)
    qp = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
    peer.connect(qp, qp_psn=100, peer_psn=0)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return topo, peer, ctx, qp, mr


def write_frame(peer: ScriptedPeer, mr: MR, data: bytes, psn: int = 0) -> dict:
    f = peer.template()
    f.update(opcode=OP_WRITE_ONLY, psn=psn, ackreq=1, reth_va=mr.buf, reth_rkey=mr.rkey,
             reth_len=len(data), payload=data)
    return f


def test_write_with_bad_icrc_is_dropped_silently_and_counted() -> None:
    topo, peer, ctx, qp, mr = setup()
    peer.send(write_frame(peer, mr, b"\xab" * 64), bad_icrc=True)
    peer.run(until="50us")
    assert mr.read(64) == bytes(64)          # not executed
    assert peer.received == []               # neither ACK nor NAK
    assert ctx.rx_counters()["bad_icrc"] == 1
    assert qp.inspect()["resp_psn"] == 0     # the responder did not move
    # the same frame with its ICRC right is executed and acknowledged
    peer.send(write_frame(peer, mr, b"\xab" * 64))
    peer.run(until="100us")
    assert mr.read(64) == b"\xab" * 64
    assert [(p["opcode"], p["psn"], p["aeth_syndrome"]) for p in peer.received] == [(OP_ACK, 0, 0x1F)]
    assert ctx.rx_counters() == {"unknown_qp": 0, "bad_state": 0, "bad_icrc": 1, "malformed": 0}


def test_bytes_with_a_wrong_icrc_sent_through_send_are_dropped() -> None:
    topo, peer, ctx, qp, mr = setup()
    raw = corrupt_icrc(codec.encode(write_frame(peer, mr, b"\x01" * 8)))
    assert codec.decode(raw)["icrc_ok"] is False
    peer.send(raw)
    peer.send_raw(raw)
    peer.run(until="50us")
    assert mr.read(8) == bytes(8) and peer.received == []
    assert ctx.rx_counters()["bad_icrc"] == 2


def test_bad_response_icrc_is_dropped_and_the_requester_retries() -> None:
    """An ACK with a wrong ICRC is not seen: the WRITE is acknowledged only by the good one."""
    topo, peer, ctx, qp, mr = setup()
    from rdmasim.verbs import SGE, SendWR

    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(mr.buf, 16, mr.lkey)])
    wr.set_wr_rdma(0x1234, 0x100000)
    qp.post_send(wr)
    peer.run(lambda p, pkt: p.send(p.reply(pkt, opcode=OP_ACK, aeth_syndrome=0x1F), bad_icrc=True),
             until="20us")
    assert qp.stats()["acks_rcvd"] == 0 and ctx.rx_counters()["bad_icrc"] == 1
    peer.ack(100)
    peer.run(until="40us")
    assert qp.stats()["acks_rcvd"] == 1


def test_capture_shows_the_wrong_icrc_as_sent(tmp_path: Path) -> None:
    scapy_all = pytest.importorskip("scapy.all")
    scapy_roce = pytest.importorskip("scapy.contrib.roce")
    topo, peer, ctx, qp, mr = setup()
    pcap = tmp_path / "bad.pcap"
    topo.sim.capture(str(pcap))
    raw = corrupt_icrc(codec.encode(write_frame(peer, mr, b"\x5a" * 32)))
    peer.send_raw(raw)
    peer.run(until="10us")
    topo.sim.close_capture()
    frames = read_records(pcap)[1]
    assert len(frames) == 1 and frames[0].data == raw  # exactly the bytes sent, wrong ICRC included
    # an ICRC we did not compute: scapy's, over the captured frame
    pkt = scapy_all.Ether(frames[0].data)
    wire_icrc = pkt[scapy_roce.BTH].icrc
    pkt[scapy_roce.BTH].icrc = None
    right = scapy_all.raw(pkt)[-4:]
    assert wire_icrc != int.from_bytes(right, "big")
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-r", str(pcap), "-d", "udp.port==4791,infiniband", "-T", "fields",
                              "-e", "infiniband.invariant.crc"], capture_output=True, text=True, check=True)
        assert int(out.stdout.strip(), 16) == wire_icrc


@pytest.mark.parametrize("how", ["reserved-opcode", "cut-short", "not-ip", "lengths-disagree"])
def test_frames_that_do_not_parse_are_dropped_and_counted(how: str, tmp_path: Path) -> None:
    topo, peer, ctx, qp, mr = setup()
    good = codec.encode(write_frame(peer, mr, b"\x77" * 100))
    if how == "reserved-opcode":
        raw = bytearray(good)
        raw[14 + 20 + 8] = RESERVED_OPCODE
        raw = bytes(raw)
    elif how == "cut-short":
        raw = good[:50]
    elif how == "not-ip":
        raw = good[:12] + b"\x86\xdd" + good[14:]
    else:
        raw = bytearray(good)
        raw[16:18] = (int.from_bytes(good[16:18], "big") + 40).to_bytes(2, "big")
        raw = bytes(raw)
    with pytest.raises(ValueError):
        codec.decode(raw)
    with pytest.raises(rdmasim.verbs.PyverbsError, match="send_raw"):
        peer.send(raw)  # the checked send refuses it, naming the unchecked one
    pcap = tmp_path / "raw.pcap"
    topo.sim.capture(str(pcap))
    peer.send_raw(raw)
    peer.run(until="50us")
    topo.sim.close_capture()
    assert mr.read(100) == bytes(100) and peer.received == []
    assert ctx.rx_counters()["malformed"] == 1
    assert qp.qp_state == e.IBV_QPS_RTS and qp.inspect()["resp_psn"] == 0
    frames = read_records(pcap)[1]
    assert [f.data for f in frames] == [raw + bytes(max(0, 60 - len(raw)))]
    # the QP still works: the good frame after the bad one is executed
    peer.send(good)
    peer.run(until="100us")
    assert mr.read(100) == b"\x77" * 100


def test_send_raw_refuses_what_cannot_be_a_frame() -> None:
    topo, peer, ctx, qp, mr = setup()
    with pytest.raises(rdmasim.verbs.PyverbsError, match="allowed 1..4096"):
        peer.send_raw(b"")
    with pytest.raises(rdmasim.verbs.PyverbsError, match="allowed 1..4096"):
        peer.send_raw(bytes(4097))
    with pytest.raises(TypeError):
        peer.send_raw("abc")  # type: ignore[arg-type]


def test_auto_msn_counts_each_request_message_once() -> None:
    """Three 2-packet WRITEs; the last packet of the second is lost once, so the requester goes back
    and resends 103..105: the peer's MSN ends at 3, not 4 or 5, and each ACK carries the count so far."""
    topo, peer, ctx, qp, mr = setup(auto_msn=True)
    from rdmasim.verbs import SGE, SendWR

    for i in range(3):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(mr.buf, 2000, mr.lkey)])
        wr.set_wr_rdma(0x1234, 0x100000)
        qp.post_send(wr)
    topo.link.ab.drop(psn=103)  # lost once on the way
    state = {"expected": 100, "naked": False}

    def handler(p: ScriptedPeer, pkt: dict) -> None:
        if pkt["psn"] != state["expected"]:
            if not state["naked"]:
                state["naked"] = True
                p.ack(state["expected"], 0x60)  # NAK sequence error
            return
        state["expected"] += 1
        if pkt["ackreq"]:
            p.send(p.reply(pkt, opcode=OP_ACK, aeth_syndrome=0x1F))

    peer.run(handler, until="1ms")
    assert [pkt["psn"] for pkt in peer.received] == [100, 101, 102, 104, 105, 103, 104, 105]
    assert peer.msn == 3
    acks = [(s["psn"], s["aeth_msn"]) for s in peer.sent
            if s.get("opcode") == OP_ACK and s["aeth_syndrome"] == 0x1F]
    assert acks == [(101, 1), (103, 2), (105, 3)]
    assert qp.stats()["acks_rcvd"] == 3


def test_a_dropped_middle_packet_is_a_gap_nak_sequence_error_for_its_psn() -> None:
    """WRITE FIRST (psn 0), MIDDLE with a bad ICRC (psn 1, dropped), LAST (psn 2): the responder sees
    PSN 2 while expecting 1 and answers one NAK sequence error carrying PSN 1; FIRST's bytes are
    placed, nothing after it; resending 1 and 2 completes the message."""
    topo, peer, ctx, qp, mr = setup()
    data = bytes(range(256)) * 12  # 3 x 1024
    first = write_frame(peer, mr, data[:1024])
    first.update(opcode=0x06, reth_len=len(data), ackreq=0)
    middle = peer.template()
    middle.update(opcode=0x07, psn=1, payload=data[1024:2048])
    last = peer.template()
    last.update(opcode=0x08, psn=2, ackreq=1, payload=data[2048:])
    peer.send(first)
    peer.send(middle, bad_icrc=True)
    peer.send(last)
    peer.run(until="50us")
    assert [(p["opcode"], p["psn"], p["aeth_syndrome"]) for p in peer.received] == [(OP_ACK, 1, 0x60)]
    assert ctx.rx_counters()["bad_icrc"] == 1
    assert mr.read(1024) == data[:1024] and mr.read(2048, 1024) == bytes(2048)
    peer.send(middle)
    peer.send(last)
    peer.run(until="100us")
    assert [(p["opcode"], p["psn"], p["aeth_syndrome"]) for p in peer.received[1:]] == [(OP_ACK, 2, 0x1F)]
    assert mr.read(len(data)) == data


def test_peer_arguments_are_checked() -> None:
    topo, peer, ctx, qp, mr = setup()
    with pytest.raises(ValueError, match="ack psn"):
        peer.ack(-1)
    with pytest.raises(ValueError, match="ack syndrome"):
        peer.ack(0, 0x100)
    other = rdmasim.back_to_back()
    with pytest.raises(ValueError, match="not a host of this simulation"):
        ScriptedPeer(topo.sim, other.b)
    with pytest.raises(ValueError, match="not a host of this simulation"):
        peer.send_raw(b"\0" * 60, dest=other.a)
