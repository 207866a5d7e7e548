"""The congestion-control interface's window (transport/cc_qp.c) on a link: a QP whose algorithm
sets a window keeps at most that many request payload bytes unacknowledged, so one flow on an
otherwise idle path moves window / RTT; a window below one packet still sends one at a time; an
ACK-event algorithm gets one ACK per request packet.  Driven through DCTCP with its rate and
marking out of the way (no switch, so no CE marks: the rate stays at the line rate, pacing off,
a fixed window)."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim.cc_dctcp import DctcpParams
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e

MTU = 1024
DELAY_PS = 1_000_000
LINE = 100e9


def ser_ps(frame: int) -> float:
    return (frame + 4 + 20) * 8 / LINE * 1e12  # frame + FCS, preamble + SFD + gap


# back to back: the data packet and its ACK each cross one 1 us link once
RTT_PS = 2 * DELAY_PS + ser_ps(1082) + ser_ps(62)


def one_write(window: int | str, size: int = 4 << 20, algorithm: str = "dctcp"):
    t = rdmasim.back_to_back(mtu=MTU)
    if algorithm == "dctcp":
        p = DctcpParams(window=window, var_win=False, pace=False)
        t.a.set_congestion_control("dctcp", p)
    ca, cb = Context(t.a), Context(t.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 4), CQ(cb, 4)
    src = MR(pa, size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=4)))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=QPCap()))
    connect_qps(qa, qb, path_mtu=MTU, timeout=14)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, size, src.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(dst.rkey, dst.buf)
    ev0 = t.sim.events
    qa.post_send(wr)
    wcs = t.sim.wait_for(cqa, 1, timeout="1s")
    assert wcs and wcs[0].ok
    return t.sim.now, qa.stats(), qa.cc_state(), t.sim.events - ev0


@pytest.mark.parametrize("window", [4 * MTU, 8 * MTU, 16 * MTU, 64 * MTU])
def test_window_limits_a_flow_to_window_per_rtt(window):
    size = 4 << 20
    elapsed, stats, _, _ = one_write(window, size)
    rate = size * 8 / (elapsed * 1e-12)
    payload_line = LINE * MTU / (1082 + 4 + 20)  # above the bandwidth-delay product: the line
    assert rate == pytest.approx(min(window * 8 / (RTT_PS * 1e-12), payload_line), rel=0.02)
    assert stats["pkts_retx"] == 0


def test_window_below_one_packet_sends_one_at_a_time():
    size = 64 * MTU
    elapsed, stats, cc, _ = one_write(1, size)
    # one packet per round trip: 64 RTTs (the last ACK ends it)
    assert elapsed == pytest.approx(64 * RTT_PS, rel=0.01)
    assert stats["pkts_sent"] == 64


def test_ack_event_algorithms_get_an_ack_per_packet():
    _, with_acks, cc, _ = one_write("1MB", size=256 * MTU)
    _, without, _, _ = one_write(0, size=256 * MTU, algorithm="none")
    assert with_acks["acks_rcvd"] == 256 and cc["acks"] == 256
    assert without["acks_rcvd"] < 10  # the A bit only every 65 packets and on the last (rxe)


@pytest.mark.parametrize("window", [4 * MTU, 16 * MTU])
def test_window_bound_flow_costs_two_events_per_packet(window):
    # Each packet costs its arrival at b and its ACK's arrival at a; the ACK that opens the window
    # sends the next packet from that same event.  Waking the QP a second time after the ACK would
    # find the port still serialising and arm a transmit-done event that finds nothing to send
    # (2.5 events per packet here before the completer woke the QP once per ACK).
    elapsed, stats, _, events = one_write(window, size=1024 * MTU)
    assert stats["pkts_sent"] == 1024 and stats["pkts_retx"] == 0
    assert events <= 2 * 1024 + 16
    payload_line = LINE * MTU / (1082 + 4 + 20)
    rate = 1024 * MTU * 8 / (elapsed * 1e-12)
    assert rate == pytest.approx(min(window * 8 / (RTT_PS * 1e-12), payload_line), rel=0.02)
