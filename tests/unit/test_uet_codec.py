"""Ultra Ethernet frames, byte by byte: an independent decoder written from the specification's
field tables with Python ``struct`` (no Wireshark UET dissector before 5.0 runs here).

Layouts: UE specification 1.0, packet delivery sublayer headers (RUD/ROD request, ACK, ACK_CC
extension with the SACK bitmap, NACK) and the semantic sublayer standard request header; the
offsets and bit masks were cross-checked against the Wireshark UET dissector
(epan/dissectors/packet-uet.c: pds prologue type 0xf800, next header 0x0780, flags 0x007f; RETX
0x10, AR 0x08, SYN 0x04; SES opcode 0x3f, SOM 0x01, EOM 0x02, payload length 0x3fff)."""

from __future__ import annotations

import struct

import pytest

from rdmasim import codec as _core

UET_PORT = 4793
ETH, IP4, UDP = 14, 20, 8


def _l2l3(frame: bytes) -> tuple[int, int, int]:
    """Ethernet / IPv4 / UDP checks; returns (udp source port, UDP length, IP total length)."""
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    assert ethertype == 0x0800
    ver_ihl, _tos, total, _id, frag, _ttl, proto, _csum = struct.unpack_from("!BBHHHBBH", frame, ETH)
    assert ver_ihl == 0x45 and proto == 17 and frag == 0x4000  # IPv4, UDP, DF
    sport, dport, ulen, ucsum = struct.unpack_from("!HHHH", frame, ETH + IP4)
    assert dport == UET_PORT and ucsum == 0
    assert ulen == total - IP4
    return sport, ulen, total


def _prologue(frame: bytes, off: int) -> tuple[int, int, int]:
    (w,) = struct.unpack_from("!H", frame, off)
    return w >> 11, (w >> 7) & 0xF, w & 0x7F


def _request() -> dict:
    return {"src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", "udp_sport": 0xBEEF, "psn": 0x01020304,
            "payload": bytes(range(200)),
            "uet": {"type": 2, "next_hdr": 3, "flags": 0x10 | 0x08, "psn_off": -3, "spdcid": 0x1111,
                    "dpdcid": 0x2222, "ses_opcode": 1, "ses_flags": 0x02, "msg_id": 0x3333,
                    "index_gen": 7, "job_id": 0xABCDEF, "pid_on_fep": 0x123, "resource_index": 0x456,
                    "buffer_offset": 0x0102030405060708, "initiator": 0xCAFEF00D,
                    "mem_key": 0x1122334455667788, "message_offset": 8192, "request_length": 1 << 20}}


def test_rud_request_with_ses_standard_header_field_by_field() -> None:
    frame = _core.encode(_request())
    sport, ulen, total = _l2l3(frame)
    assert sport == 0xBEEF  # the entropy value travels in the UDP source port
    assert len(frame) == ETH + total == ETH + IP4 + UDP + 12 + 44 + 200
    pds = ETH + IP4 + UDP
    typ, nh, flags = _prologue(frame, pds)
    assert (typ, nh, flags) == (2, 3, 0x18)  # RUD_REQ, SES standard request, RETX|AR
    clear_off, psn, spdcid, dpdcid = struct.unpack_from("!hIHH", frame, pds + 2)
    assert (clear_off, psn, spdcid, dpdcid) == (-3, 0x01020304, 0x1111, 0x2222)
    ses = pds + 12
    op, fl, msg_id, gen = struct.unpack_from("!BBHB", frame, ses)
    assert op & 0x3F == 1 and op >> 6 == 0  # WRITE
    assert fl == 0x02  # EOM, not SOM
    assert (msg_id, gen) == (0x3333, 7)
    assert int.from_bytes(frame[ses + 5:ses + 8], "big") == 0xABCDEF  # job id, 24 bits
    pid, ri, buf_off, initiator, mkey, plen_word, msg_off, req_len = struct.unpack_from(
        "!HHQIQIII", frame, ses + 8)
    assert pid == 0x123 and ri == 0x456
    assert buf_off == 0x0102030405060708 and initiator == 0xCAFEF00D and mkey == 0x1122334455667788
    assert plen_word & 0x3FFF == 200 and plen_word >> 14 == 0  # payload length; reserved bits zero
    assert msg_off == 8192 and req_len == 1 << 20
    assert frame[ses + 44:] == bytes(range(200))
    back = _core.decode(frame)
    assert back["kind"] == 5 and back["psn"] == 0x01020304 and back["payload"] == bytes(range(200))
    assert back["uet"]["message_offset"] == 8192 and back["uet"]["psn_off"] == -3
    assert _core.encode(back) == frame  # decode output feeds encode


def test_som_packet_carries_header_data_instead_of_offset() -> None:
    f = _request()
    f["uet"].update(ses_flags=0x01, header_data=0xDEADBEEF00000001)
    frame = _core.encode(f)
    ses = ETH + IP4 + UDP + 12
    assert struct.unpack_from("!Q", frame, ses + 32)[0] == 0xDEADBEEF00000001


def test_ack_cc_with_sack_bitmap_field_by_field() -> None:
    f = {"udp_sport": 77, "src_ip": "10.0.0.2", "dst_ip": "10.0.0.1",
         "uet": {"type": 8, "next_hdr": 0, "flags": 0x20, "psn_off": 5, "cack_psn": 1000,
                 "spdcid": 2, "dpdcid": 1, "cc_type": 0, "mpr": 64, "sack_off": -1,
                 "sack_bitmap": 0x8000_0000_0000_00F1, "cc_state": 0x0102030405060708}}
    frame = _core.encode(f)
    _l2l3(frame)
    pds = ETH + IP4 + UDP
    assert _prologue(frame, pds) == (8, 0, 0x20)  # ACK_CC, no SES header, M (ECN marked)
    ack_off, cack, spdcid, dpdcid = struct.unpack_from("!hIHH", frame, pds + 2)
    assert (ack_off, cack, spdcid, dpdcid) == (5, 1000, 2, 1)
    cc, mpr, sack_off, bitmap, state = struct.unpack_from("!BBhQQ", frame, pds + 12)
    assert cc >> 4 == 0 and mpr == 64 and sack_off == -1
    assert bitmap == 0x8000_0000_0000_00F1 and state == 0x0102030405060708
    assert len(frame) == max(60, pds + 32)
    assert _core.decode(frame)["uet"]["sack_bitmap"] == 0x8000_0000_0000_00F1


def test_nack_field_by_field() -> None:
    f = {"psn": 42, "uet": {"type": 10, "next_hdr": 0, "flags": 0x10, "nack_code": 1, "spdcid": 9,
                            "dpdcid": 8, "nack_payload": 50}}
    frame = _core.encode(f)
    pds = ETH + IP4 + UDP
    assert _prologue(frame, pds) == (10, 0, 0x10)
    code, vendor, psn, spdcid, dpdcid, payload = struct.unpack_from("!BBIHHI", frame, pds + 2)
    assert (code, vendor, psn, spdcid, dpdcid, payload) == (1, 0, 42, 9, 8, 50)  # TRIMMED
    assert len(frame) == 60  # 58 bytes of headers, padded to the Ethernet minimum


def test_rud_cc_request_carries_ccc_id_and_credit_target() -> None:
    f = _request()
    f["uet"].update(type=13, ccc_id=0x5A, credit_target=0xABCDEF)
    frame = _core.encode(f)
    pds = ETH + IP4 + UDP
    assert _prologue(frame, pds) == (13, 3, 0x18)  # RUD_CC_REQ, SES standard request
    clear_off, psn, spdcid, dpdcid, ccc, ct_hi, ct_lo = struct.unpack_from("!hIHHBBH", frame, pds + 2)
    assert (clear_off, psn, spdcid, dpdcid, ccc) == (-3, 0x01020304, 0x1111, 0x2222, 0x5A)
    assert (ct_hi << 16) | ct_lo == 0xABCDEF  # credit_target:24
    ses = pds + 16  # the 16-byte CC request header, then the SES standard header
    assert struct.unpack_from("!B", frame, ses)[0] & 0x3F == 1 and frame[ses + 44:] == bytes(range(200))
    back = _core.decode(frame)
    assert back["uet"]["credit_target"] == 0xABCDEF and back["uet"]["ccc_id"] == 0x5A
    assert _core.encode(back) == frame


@pytest.mark.parametrize("ctl", [7, 8])  # CREDIT, CREDIT_REQ
def test_credit_control_packet_field_by_field(ctl: int) -> None:
    f = {"psn": 99, "uet": {"type": 11, "next_hdr": ctl, "flags": 0, "spdcid": 4, "dpdcid": 3,
                            "nack_payload": 0x00123456}}
    frame = _core.encode(f)
    pds = ETH + IP4 + UDP
    assert _prologue(frame, pds) == (11, ctl, 0)  # CTRL, the control type in the next-header bits
    opaque, psn, spdcid, dpdcid, payload = struct.unpack_from("!HIHHI", frame, pds + 2)
    assert (opaque, psn, spdcid, dpdcid, payload) == (0, 99, 4, 3, 0x123456)
    assert len(frame) == 60
    assert _core.decode(frame)["uet"]["nack_payload"] == 0x123456


def test_ack_with_ses_response_field_by_field() -> None:
    f = {"uet": {"type": 8, "next_hdr": 4, "flags": 0, "cack_psn": 255, "spdcid": 2, "dpdcid": 1,
                 "cc_type": 1, "cc_state": 0x00ABCD << 40, "ses_opcode": 1, "ses_rc": 0x1D,
                 "msg_id": 0x4242, "index_gen": 3, "job_id": 0x010203, "mod_length": 1 << 20}}
    frame = _core.encode(f)
    pds = ETH + IP4 + UDP
    assert _prologue(frame, pds) == (8, 4, 0)  # ACK_CC, SES response
    cc = struct.unpack_from("!B", frame, pds + 12)[0]
    assert cc >> 4 == 1  # cc_type credit
    credit = int.from_bytes(frame[pds + 24:pds + 27], "big")  # CC state: credit:24 first
    assert credit == 0x00ABCD
    rsp = pds + 32
    op, rc, msg_id, gen = struct.unpack_from("!BBHB", frame, rsp)
    assert op >> 6 == 0 and op & 0x3F == 1  # list 0, UET_RESPONSE
    assert rc >> 6 == 0 and rc & 0x3F == 0x1D  # version 0, BAD_ADDR
    assert (msg_id, gen) == (0x4242, 3)
    assert int.from_bytes(frame[rsp + 5:rsp + 8], "big") == 0x010203
    assert struct.unpack_from("!I", frame, rsp + 8)[0] == 1 << 20  # modified length
    assert len(frame) == pds + 32 + 12
    back = _core.decode(frame)
    assert back["uet"]["ses_rc"] == 0x1D and back["uet"]["mod_length"] == 1 << 20
    assert _core.encode(back) == frame


@pytest.mark.parametrize("bad, match", [
    ({"type": 2, "next_hdr": 0}, "BAD_FIELD"),   # a request without its SES header
    ({"type": 7, "next_hdr": 3}, "BAD_FIELD"),   # an ACK with one
    ({"type": 13, "next_hdr": 0}, "BAD_FIELD"),  # a CC request without its SES header
    ({"type": 12, "next_hdr": 0}, "BAD_FIELD"),  # a type the codec does not frame (NACK_CCX)
    ({"type": 8, "next_hdr": 5}, "BAD_FIELD"),   # an ACK with a response-with-data header
])
def test_inconsistent_headers_are_refused(bad: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _core.encode({"uet": bad})


def test_uet_field_out_of_range_names_it() -> None:
    with pytest.raises(ValueError, match=r"uet.job_id"):
        _core.encode({"uet": {"type": 2, "next_hdr": 3, "job_id": 1 << 24}})


def test_rudi_uud_and_control_headers_field_by_field() -> None:
    """RUDI request / response (8 bytes: prologue, reserved:16, pkt_id:32), UUD request (4 bytes:
    prologue, reserved:16) and the control packet (16 bytes: prologue with the control type in the
    next-header bits, probe_opaque:16, psn:32, spdcid:16, dpdcid:16, payload:32), as the
    Wireshark dissector's dissect_pds_rudi_req_rsp / UUD case / dissect_pds_ctl read them."""
    pds = ETH + IP4 + UDP
    req = _request()
    req["uet"].update(type=4, flags=0x10)
    req["psn"] = 0x00070009
    frame = _core.encode(req)
    assert _prologue(frame, pds) == (4, 3, 0x10)
    assert struct.unpack_from("!HI", frame, pds + 2) == (0, 0x00070009)
    assert len(frame) == pds + 8 + 44 + 200
    back = _core.decode(frame)
    assert back["psn"] == 0x00070009 and back["uet"]["type"] == 4 and back["payload_len"] == 200

    resp = {"src_ip": "10.0.0.2", "dst_ip": "10.0.0.1", "udp_sport": 7, "psn": 0x00070009,
            "uet": {"type": 5, "next_hdr": 0, "flags": 0x20}}
    frame = _core.encode(resp)
    assert _prologue(frame, pds) == (5, 0, 0x20)
    assert struct.unpack_from("!HI", frame, pds + 2) == (0, 0x00070009)
    assert _core.decode(frame)["psn"] == 0x00070009

    req = _request()
    req["uet"].update(type=6, flags=0)
    frame = _core.encode(req)
    assert _prologue(frame, pds) == (6, 3, 0)
    assert struct.unpack_from("!H", frame, pds + 2) == (0,)
    assert len(frame) == pds + 4 + 44 + 200
    op, = struct.unpack_from("!B", frame, pds + 4)
    assert op & 0x3F == 1  # the SES header follows at once
    assert _core.decode(frame)["uet"]["type"] == 6

    ctl = {"src_ip": "10.0.0.1", "dst_ip": "10.0.0.2", "udp_sport": 9, "psn": 1000,
           "uet": {"type": 11, "next_hdr": 4, "flags": 0x08, "psn_off": 0, "spdcid": 0x11, "dpdcid": 0x22,
                   "nack_payload": 0}}
    frame = _core.encode(ctl)
    assert _prologue(frame, pds) == (11, 4, 0x08)  # CTRL, control type CLOSE, AR
    assert struct.unpack_from("!HIHHI", frame, pds + 2) == (0, 1000, 0x11, 0x22, 0)
    back = _core.decode(frame)["uet"]
    assert (back["type"], back["next_hdr"], back["spdcid"], back["dpdcid"]) == (11, 4, 0x11, 0x22)


def test_response_with_data_field_by_field() -> None:
    """A READ's data: a RUD request whose next header is the 20-byte SES response with data
    (Wireshark's dissect_ses_resp_data: opcode, return code, message id, reserved, job id,
    read_req_message_id, reserved:2 | payload_length:14, modified length, message offset)."""
    f = {"psn": 77, "payload": bytes(range(100)),
         "uet": {"type": 2, "next_hdr": 5, "flags": 0x08, "spdcid": 5, "dpdcid": 6, "ses_opcode": 2,
                 "ses_rc": 1, "msg_id": 0x1234, "job_id": 0x0A0B0C, "read_msg_id": 0x4321,
                 "mod_length": 1 << 20, "message_offset": 8192}}
    frame = _core.encode(f)
    _, _, total = _l2l3(frame)
    pds = ETH + IP4 + UDP
    assert total == IP4 + UDP + 12 + 20 + 100
    assert _prologue(frame, pds) == (2, 5, 0x08)  # RUD_REQ, SES response with data, AR
    rsp = pds + 12
    op, rc, msg_id, rsv = struct.unpack_from("!BBHB", frame, rsp)
    assert (op, rc, msg_id, rsv) == (2, 1, 0x1234, 0)  # list 0 / RESPONSE_W_DATA, ver 0 / RC_OK
    assert int.from_bytes(frame[rsp + 5:rsp + 8], "big") == 0x0A0B0C
    read_msg, plen, mod_len, off = struct.unpack_from("!HHII", frame, rsp + 8)
    assert (read_msg, plen, mod_len, off) == (0x4321, 100, 1 << 20, 8192)
    assert frame[rsp + 20:] == bytes(range(100))
    back = _core.decode(frame)
    assert back["uet"]["read_msg_id"] == 0x4321 and back["uet"]["message_offset"] == 8192
    assert back["payload_len"] == 100
    assert _core.encode(back) == frame
