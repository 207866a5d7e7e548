"""Go-Back-N efficiency against the analytical result (protocol.md §9.1).

With i.i.d. loss p and m packets resent per loss, the fraction of transmissions that carry new
data is eta = (1 - p) / (1 + (m - 1) p). For NAK-driven recovery m is the pipe: the lost packet
plus everything sent until the NAK (triggered by the next packet) returns, computed here from the
link parameters, not from the simulator. One RoCE-specific correction: if the retransmission of a
lost packet is lost too, the responder has already sent its one NAK for that gap, so recovery waits
for the ACK timeout and the requester has sent a full window (128 PSNs, rxe) by then. That happens
with probability p per loss, so m_eff = m + p * (W - m).
"""

from __future__ import annotations

import math

import pytest
from support.verbs_pair import VerbsPair, post_writes, write_wr

from rdmasim.verbs import QPCap
from rdmasim.verbs import enums as e

RATE = 100e9
DELAY_S = 1e-6
MTU = 1024
# wire bytes per data packet: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + ICRC 4 + FCS 4 + 20
DATA_WIRE = 14 + 20 + 8 + 12 + MTU + 4 + 4 + 20
ACK_WIRE = 14 + 20 + 8 + 12 + 4 + 4 + 4 + 20


def pipe_packets() -> float:
    ser = DATA_WIRE * 8 / RATE
    # lost packet k leaves at 0; k+1 reaches the responder at 2*ser + d; the NAK is back at
    # 2*ser + ack_ser + 2d; the packet on the wire then still completes.
    t_nak = 2 * ser + ACK_WIRE * 8 / RATE + 2 * DELAY_S
    return math.ceil(t_nak / ser)


WINDOW = 128


def efficiency(p: float, m: float) -> float:
    return (1 - p) / (1 + (m - 1) * p)


@pytest.mark.parametrize("p", [0.002, 0.01, 0.03])
def test_gbn_efficiency_matches_formula(p: float) -> None:
    n_msgs, size = 8, 64 * 1024 * 1024  # 65,536 packets: +-4 % sampling error at p=0.01
    pair = VerbsPair(mtu=MTU, loss_ab=p, seed=11, cqe=(n_msgs, 1),
                     cap=(QPCap(max_send_wr=n_msgs), QPCap()), timeout=8)
    qa = pair.qa
    src = pair.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = pair.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    post_writes(qa, src, dst, n_msgs)
    wcs = pair.sim.wait_for(pair.cq_a, n_msgs, timeout=None)
    assert all(w.ok for w in wcs)
    needed = size // MTU
    measured = needed / qa.stats()["pkts_sent"]
    m = pipe_packets()
    expected = efficiency(p, m + p * (WINDOW - m))
    assert measured == pytest.approx(expected, rel=0.05), (measured, expected, m)


def test_single_loss_costs_exactly_the_pipe() -> None:
    """One dropped packet mid-message costs itself plus what was sent before the NAK came back."""
    size = 1 << 20
    pair = VerbsPair(mtu=MTU, seed=1, cqe=1, cap=QPCap())
    pair.t.link.ab.drop(psn=100)
    qa = pair.qa
    src = pair.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = pair.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa.post_send(write_wr(1, src, dst, size))
    assert pair.sim.wait_for(pair.cq_a, 1)[0].ok
    assert qa.stats()["pkts_sent"] - size // MTU == pipe_packets()
    assert qa.stats()["naks_rcvd"] == 1
