"""The clear PSN a request carries (its PSN + clear_psn_offset: every PSN below it acknowledged at
the initiator) releases the target's state below it: a late duplicate below the cleared PSN is
dropped without an ACK (csrc/uet/pds.c)."""

from __future__ import annotations

from rdmasim import codec, topology
from rdmasim.capture import read_records
from rdmasim.flows import describe_status
from rdmasim.peer import ScriptedPeer

RUD_REQ, ACK_CC = 2, 8


def _frames(path):
    return [codec.decode(r.data) for r in read_records(path)[1]]


def _dup(t, peer, psn: int, clear_off: int, a_id: int, b_id: int) -> bytes:
    mac_s, ip_s = t.sim._core.host_info(t.a.index)
    mac_d, ip_d = t.sim._core.host_info(t.b.index)
    return codec.encode({"src_mac": mac_s, "dst_mac": mac_d, "src_ip": ip_s, "dst_ip": ip_d, "tos": 0x02,
                         "ttl": 64, "udp_sport": 0xBEEF, "psn": psn, "payload": bytes(1024),
                         "uet": {"type": RUD_REQ, "next_hdr": 3, "flags": 0x08, "psn_off": clear_off,
                                 "spdcid": a_id, "dpdcid": b_id, "ses_opcode": 1, "ses_flags": 0,
                                 "msg_id": 1, "message_offset": psn * 4096, "request_length": 400 * 4096}})


def _acked_psns(frames, b_id: int) -> list[int]:
    return [f["uet"]["cack_psn"] + f["uet"]["psn_off"] for f in frames
            if f["uet"]["type"] == ACK_CC and f["uet"]["spdcid"] == b_id]


def test_duplicate_below_the_cleared_psn_gets_no_ack(tmp_path) -> None:
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    first, second = tmp_path / "1.pcap", tmp_path / "2.pcap"
    t.sim.capture(str(first))
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [400 * 4096]}, transport="uet")
    t.sim.run(20_000_000)  # well into the flow: the requests clear PSNs far above 3
    t.sim.close_capture()
    frames = _frames(first)
    ack = next(f for f in frames if f["uet"]["type"] == ACK_CC)
    b_id, a_id = ack["uet"]["spdcid"], ack["uet"]["dpdcid"]
    assert 3 in _acked_psns(frames, b_id)
    last = max(f["psn"] for f in frames if f["uet"]["type"] == RUD_REQ)
    t.sim.capture(str(second))
    peer = ScriptedPeer(t.sim, t.a)
    # a late copy of PSN 3 (its own clear offset 0: it clears nothing new)
    peer.send_raw(_dup(t, peer, 3, 0, a_id, b_id), dest=t.b)
    t.sim.run(t.sim.now + 3_000_000)
    t.sim.run_flows()
    t.sim.run()
    t.sim.close_capture()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 400 * 4096
    assert 3 not in _acked_psns(_frames(second), b_id)
    assert last > 3
