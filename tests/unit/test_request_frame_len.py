"""The frame length a request packet is sent with (what its link counts and its rate limiter
meters) is its encoded frame's, for every opcode and payload length one QP sends in turn: a
message's packets reuse the length measured for the packet before when opcode and payload length
are the same (requester.c), and only then."""

from __future__ import annotations

from pathlib import Path

from support.verbs_pair import CapturedPair

from rdmasim.capture import read_records
from rdmasim.verbs import enums as e


def test_link_bytes_are_the_encoded_frames(tmp_path: Path) -> None:
    p = CapturedPair(tmp_path, mtu=1024, size=1 << 16)
    # FIRST/MIDDLE/LAST with full and odd last packets, ONLY of several lengths (pads 0..3), with
    # and without immediate data, and SENDs: the same QP, one after the other
    w, wi = e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM
    for length, op in [(4096, w), (3001, w), (1024, w), (1, w), (2, w), (1023, wi), (2050, wi),
                       (1500, e.IBV_WR_SEND), (1024, e.IBV_WR_SEND_WITH_IMM), (4095, w), (0, w)]:
        p.post(length, opcode=op, imm=7)
    p.sim.run_until_idle()
    wcs = p.cq_a.poll(64)[1]
    assert len(wcs) == p.n_posted and all(w.status == e.IBV_WC_SUCCESS for w in wcs)
    p.sim.close_capture()
    _, records = read_records(p.pcap)
    a_mac = records[0].data[6:12]  # the first frame is a request from host a
    from_a = [r for r in records if r.data[6:12] == a_mac]
    sent = p.t.link.direction(p.t.a).stats()
    assert len(from_a) == sent["frames"] == 4 + 3 + 1 + 1 + 1 + 1 + 3 + 2 + 1 + 4 + 1
    assert sum(r.orig_len for r in from_a) == sent["bytes"]
