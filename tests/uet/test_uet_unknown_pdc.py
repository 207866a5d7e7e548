"""A request for a PDC its target does not know (closed, or never opened) is answered by a NACK
with code INV_DPDCID; an initiator that gets one ends the flow with an error completion instead
of retransmitting (csrc/uet/endpoint.c)."""

from __future__ import annotations

from rdmasim import codec, topology, uet
from rdmasim.capture import read_records
from rdmasim.flows import describe_status
from rdmasim.peer import ScriptedPeer

RUD_REQ, NACK = 2, 10
NACK_INV_DPDCID = 0x0E


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def _forged_request(peer: ScriptedPeer, dst, *, psn: int, spdcid: int, dpdcid: int) -> bytes:
    mac_s, ip_s = peer.sim._core.host_info(peer.host.index)
    mac_d, ip_d = peer.sim._core.host_info(dst.index)
    return codec.encode({"src_mac": mac_s, "dst_mac": mac_d, "src_ip": ip_s, "dst_ip": ip_d, "tos": 0x02,
                         "ttl": 64, "udp_sport": 0xBEEF, "psn": psn, "payload": bytes(100),
                         "uet": {"type": RUD_REQ, "next_hdr": 3, "flags": 0x08, "spdcid": spdcid,
                                 "dpdcid": dpdcid, "ses_opcode": 1, "ses_flags": 0x03, "msg_id": 1,
                                 "request_length": 100}})


def test_request_for_a_closed_or_unknown_pdc_is_nacked_inv_dpdcid(tmp_path) -> None:
    t = _pair()
    path = tmp_path / "unknown.pcap"
    t.sim.capture(str(path))
    # a flow b -> a that ends and closes: a's PDC id for it is closed afterwards
    fs = t.sim.add_flows({"src": [1], "dst": [0], "size": [8 * 4096]}, transport="uet")
    t.sim.run_flows()
    t.sim.run()
    assert describe_status(int(fs.results()["status"][0])) == "ok"
    assert uet.endpoint_stats(t.sim, 0)["pdcs_live"] == 0
    peer = ScriptedPeer(t.sim, t.b)
    _, recs = read_records(path)
    old_id = next(codec.decode(r.data)["uet"]["spdcid"] for r in recs
                  if codec.decode(r.data)["uet"]["type"] == 8)  # a's id, from its ACKs
    peer.send_raw(_forged_request(peer, t.a, psn=3, spdcid=0x4242, dpdcid=old_id), dest=t.a)
    peer.send_raw(_forged_request(peer, t.a, psn=7, spdcid=0x4343, dpdcid=0x7777), dest=t.a)  # never opened
    t.sim.run(t.sim.now + 10_000_000)
    t.sim.close_capture()
    _, recs = read_records(path)
    nacks = [codec.decode(r.data) for r in recs]
    nacks = [f for f in nacks if f["uet"]["type"] == NACK]
    assert [(f["psn"], f["uet"]["nack_code"], f["uet"]["spdcid"], f["uet"]["dpdcid"]) for f in nacks] == [
        (3, NACK_INV_DPDCID, old_id, 0x4242), (7, NACK_INV_DPDCID, 0x7777, 0x4343)]
    assert uet.endpoint_stats(t.sim, 0)["rx_unknown"] == 2


def test_inv_dpdcid_nack_ends_the_flow_with_an_error_completion(tmp_path) -> None:
    t = _pair()
    path = tmp_path / "flow.pcap"
    t.sim.capture(str(path))
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [400 * 4096]}, transport="uet")
    t.sim.run(20_000_000)  # the PDC is set up and the data flowing
    t.sim.close_capture()
    assert describe_status(int(fs.results()["status"][0])) == "running"
    ack = next(f for f in (codec.decode(r.data) for r in read_records(path)[1]) if f["uet"]["type"] == 8)
    b_id, a_id = ack["uet"]["spdcid"], ack["uet"]["dpdcid"]
    peer = ScriptedPeer(t.sim, t.b)
    mac_s, ip_s = t.sim._core.host_info(t.b.index)
    mac_d, ip_d = t.sim._core.host_info(t.a.index)
    peer.send_raw(codec.encode({"src_mac": mac_s, "dst_mac": mac_d, "src_ip": ip_s, "dst_ip": ip_d,
                                "tos": 0x02, "ttl": 64, "udp_sport": 0xBEEF, "psn": 5,
                                "uet": {"type": NACK, "next_hdr": 0, "flags": 0, "nack_code": NACK_INV_DPDCID,
                                        "spdcid": b_id, "dpdcid": a_id, "nack_payload": 0}}), dest=t.a)
    t.sim.run_flows()
    t.sim.run()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "IBV_WC_REM_INV_REQ_ERR"
    assert int(r["bytes_delivered"][0]) == 0
    assert int(r["finish_ps"][0]) < 25_000_000  # at the NACK, not after the message
    assert uet.endpoint_stats(t.sim, 0)["pdcs_live"] == 0
