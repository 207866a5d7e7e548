# RoCEv2 / PFC wire codec (csrc/codec): encode/decode between dicts and frame bytes,
# ICRC, CRC-32 and a pcap writer.  Control-path and test helpers, not per-packet paths.
from libc.stdint cimport int16_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdio cimport FILE
from libc.errno cimport errno
from libc.string cimport memset

import os


cdef extern from "rdmasim/packet.h":
    enum:
        RS_PKT_ROCE
        RS_PKT_PFC
        RS_PKT_UET
        RS_MAX_PAYLOAD

    ctypedef struct rs_uet_hdr:
        uint8_t type
        uint8_t next_hdr
        uint8_t flags
        uint8_t nack_code
        uint16_t spdcid
        uint16_t dpdcid
        int16_t psn_off
        int16_t sack_off
        uint32_t cack_psn
        uint32_t nack_payload
        uint8_t cc_type
        uint8_t cc_flags
        uint8_t mpr
        uint8_t ses_opcode
        uint64_t sack_bitmap
        uint64_t cc_state
        uint8_t ses_flags
        uint8_t index_gen
        uint16_t msg_id
        uint32_t job_id
        uint16_t pid_on_fep
        uint16_t resource_index
        uint32_t initiator
        uint32_t message_offset
        uint32_t request_length
        uint64_t buffer_offset
        uint64_t mem_key
        uint64_t header_data
        uint32_t credit_target
        uint8_t ccc_id
        uint8_t ses_rc
        uint32_t mod_length
        uint16_t read_msg_id

    ctypedef struct rs_pkt:
        rs_pkt *next
        int64_t t_arrive_ps
        uint8_t *payload
        uint32_t payload_len
        uint16_t kind
        uint8_t link_layer
        uint8_t ib_vl
        uint8_t ib_sl
        uint16_t ib_dlid
        uint16_t ib_slid
        uint32_t src_qpn
        uint16_t src_node
        uint16_t dst_node
        uint8_t priority
        uint8_t dst_mac[6]
        uint8_t src_mac[6]
        uint8_t tos
        uint8_t ttl
        uint16_t ip_id
        uint32_t src_ip
        uint32_t dst_ip
        uint16_t udp_sport
        uint8_t opcode
        uint8_t se
        uint8_t mig
        uint8_t fecn
        uint8_t becn
        uint8_t ackreq
        uint16_t pkey
        uint32_t dest_qpn
        uint32_t psn
        uint64_t reth_va
        uint32_t reth_rkey
        uint32_t reth_len
        uint8_t aeth_syndrome
        uint32_t aeth_msn
        uint32_t imm
        uint32_t deth_qkey
        uint64_t atomic_va
        uint32_t atomic_rkey
        uint64_t atomic_swap_add
        uint64_t atomic_compare
        uint64_t atomic_orig
        uint16_t pfc_class_enable
        uint16_t pfc_quanta[8]
        rs_uet_hdr uet
        uint8_t x_valid
        uint32_t x_rkey
        uint32_t x_len
        uint32_t x_seq
        uint32_t x_sack_psn
        uint64_t x_va
        uint64_t x_off
        uint32_t job_res


cdef extern from "rdmasim/codec.h":
    enum:
        RS_CODEC_OK
        RS_CODEC_ERR_SHORT
        RS_CODEC_ERR_NOT_ROCE
        RS_CODEC_ERR_BAD_OPCODE
        RS_CODEC_ERR_BAD_LENGTH
        RS_CODEC_ERR_BAD_ICRC
        RS_CODEC_ERR_BAD_FIELD
        RS_CODEC_ERR_BAD_IP_CSUM
        RS_CODEC_ERR_IP_FRAGMENT
        RS_CODEC_ERR_PFC_DST
        RS_CODEC_ERR_RUNT
        RS_CODEC_ERR_BAD_VCRC
        RS_IB_LRH_BYTES
        RS_LINKTYPE_ETHERNET
        RS_LINKTYPE_INFINIBAND

    ctypedef struct rs_pcap:
        FILE *fp
        uint64_t frames

    int rs_opcode_ext_bytes(uint8_t opcode)
    size_t rs_frame_len(const rs_pkt *p)
    int rs_encode(const rs_pkt *p, uint8_t *out, size_t cap)
    int rs_decode(const uint8_t *buf, size_t len, rs_pkt *p)
    int rs_decode_captured(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p)
    uint32_t rs_icrc(const uint8_t *frame, size_t len)
    uint32_t rs_crc32(uint32_t crc, const uint8_t *data, size_t len)
    int rs_pcap_open(rs_pcap *pc, const char *path, uint32_t snaplen)
    int rs_pcap_open_linktype(rs_pcap *pc, const char *path, uint32_t snaplen, uint32_t linktype)
    int rs_ib_decode_captured(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p)
    uint32_t rs_ib_icrc(const uint8_t *pkt, size_t len)
    uint16_t rs_ib_vcrc(const uint8_t *data, size_t len)
    int rs_pcap_write(rs_pcap *pc, const rs_pkt *p, int64_t t_ps)
    int rs_pcap_close(rs_pcap *pc)


_CODEC_STATUS = {
    RS_CODEC_OK: "OK",
    RS_CODEC_ERR_SHORT: "SHORT",
    RS_CODEC_ERR_NOT_ROCE: "NOT_ROCE",
    RS_CODEC_ERR_BAD_OPCODE: "BAD_OPCODE",
    RS_CODEC_ERR_BAD_LENGTH: "BAD_LENGTH",
    RS_CODEC_ERR_BAD_ICRC: "BAD_ICRC",
    RS_CODEC_ERR_BAD_FIELD: "BAD_FIELD",
    RS_CODEC_ERR_BAD_IP_CSUM: "BAD_IP_CSUM",
    RS_CODEC_ERR_IP_FRAGMENT: "IP_FRAGMENT",
    RS_CODEC_ERR_PFC_DST: "PFC_DST",
    RS_CODEC_ERR_RUNT: "RUNT",
    RS_CODEC_ERR_BAD_VCRC: "BAD_VCRC",
}
CODEC_STATUS_NAMES = dict(_CODEC_STATUS)


class CodecError(ValueError):
    """The codec refused a frame or a packet: ``status`` is the rs_codec_status name (``"SHORT"``,
    ``"BAD_IP_CSUM"``, ...), ``code`` its negative value."""

    def __init__(self, msg, status, code):
        super().__init__(msg)
        self.status = status
        self.code = code

# Allowed values of each scalar field encode() takes: the width of its header field on the wire
# (BTH PSN and QPN 24 bits, SE 1 bit, ...), or of the rs_pkt member for simulator metadata.
_U = lambda bits: (0, (1 << bits) - 1)  # noqa: E731
_FIELD_RANGE = {
    "t_arrive_ps": (0, (1 << 63) - 1), "payload_len": (0, RS_MAX_PAYLOAD), "kind": (0, 1),
    "src_qpn": _U(24), "src_node": _U(16), "dst_node": _U(16), "priority": (0, 7),
    "tos": _U(8), "ttl": _U(8), "ip_id": _U(16), "src_ip": _U(32), "dst_ip": _U(32), "udp_sport": _U(16),
    "opcode": _U(8), "se": _U(1), "mig": _U(1), "fecn": _U(1), "becn": _U(1), "ackreq": _U(1),
    "pkey": _U(16), "dest_qpn": _U(24), "psn": _U(24),
    "reth_va": _U(64), "reth_rkey": _U(32), "reth_len": _U(32),
    "aeth_syndrome": _U(8), "aeth_msn": _U(24), "imm": _U(32), "deth_qkey": _U(32),
    "atomic_va": _U(64), "atomic_rkey": _U(32), "atomic_swap_add": _U(64), "atomic_compare": _U(64),
    "atomic_orig": _U(64),
    "pfc_class_enable": _U(8),  # the class-enable vector's high octet is reserved (0)
    # InfiniBand (link_layer 1): LRH fields
    "link_layer": (0, 1), "ib_vl": _U(4), "ib_sl": _U(4), "ib_dlid": _U(16), "ib_slid": _U(16),
}
_ONE_BIT = frozenset(("se", "mig", "fecn", "becn", "ackreq"))

# Scalar rs_pkt fields, in struct order; "payload", the MACs and pfc_quanta are handled apart.
_PKT_INT_FIELDS = (
    "t_arrive_ps", "payload_len", "kind", "src_qpn", "src_node", "dst_node", "priority",
    "tos", "ttl", "ip_id", "src_ip", "dst_ip", "udp_sport",
    "opcode", "se", "mig", "fecn", "becn", "ackreq", "pkey", "dest_qpn", "psn",
    "reth_va", "reth_rkey", "reth_len", "aeth_syndrome", "aeth_msn", "imm", "deth_qkey",
    "atomic_va", "atomic_rkey", "atomic_swap_add", "atomic_compare", "atomic_orig",
    "pfc_class_enable", "link_layer", "ib_vl", "ib_sl", "ib_dlid", "ib_slid",
)
_PKT_KEYS = frozenset(_PKT_INT_FIELDS + ("payload", "dst_mac", "src_mac", "pfc_quanta", "uet"))
# Ultra Ethernet headers (kind 5, given as the "uet" sub-dict): field -> (signed, bits)
_UET_FIELDS = {
    "type": (False, 5), "next_hdr": (False, 4), "flags": (False, 7), "nack_code": (False, 8),
    "spdcid": (False, 16), "dpdcid": (False, 16), "psn_off": (True, 16), "sack_off": (True, 16),
    "cack_psn": (False, 32), "nack_payload": (False, 32), "cc_type": (False, 4), "cc_flags": (False, 4),
    "mpr": (False, 8), "ses_opcode": (False, 6), "sack_bitmap": (False, 64), "cc_state": (False, 64),
    "ses_flags": (False, 8), "index_gen": (False, 8), "msg_id": (False, 16), "job_id": (False, 24),
    "pid_on_fep": (False, 12), "resource_index": (False, 12), "initiator": (False, 32),
    "message_offset": (False, 32), "request_length": (False, 32), "buffer_offset": (False, 64),
    "mem_key": (False, 64), "header_data": (False, 64), "credit_target": (False, 24), "ccc_id": (False, 8),
    "ses_rc": (False, 6), "mod_length": (False, 32), "read_msg_id": (False, 16),
}
# Keys decode() adds that encode() accepts and ignores, so decode output feeds encode.
_DECODE_ONLY_KEYS = frozenset(("icrc_ok", "vcrc_ok", "truncated"))
# Encode buffer: largest frame is headers (54) + 32 B ext + 4096 payload + 3 pad + ICRC.
cdef enum:
    _FRAME_CAP = 4352


def _codec_error(int status, str what):
    name = _CODEC_STATUS.get(status, str(status))
    return CodecError(f"{what}: RS_CODEC_ERR_{name} ({status})", name, status)


cdef object _checked_field(str name, object v):
    """The field's value as a Python int within its range, or a TypeError/ValueError naming it."""
    from rdmasim.checks import check_int
    if name in _ONE_BIT and isinstance(v, bool):  # a flag given as a bool is unambiguous
        v = int(v)
    lo, hi = _FIELD_RANGE[name]
    return check_int(f"encode: field {name}", v, lo, hi)


cdef int _set_int(rs_pkt *p, str name, object v) except -1:
    # One branch per field: Cython structs have no by-name access. Overflow -> OverflowError.
    if name == "t_arrive_ps": p.t_arrive_ps = v
    elif name == "payload_len": p.payload_len = v
    elif name == "kind": p.kind = v
    elif name == "src_qpn": p.src_qpn = v
    elif name == "src_node": p.src_node = v
    elif name == "dst_node": p.dst_node = v
    elif name == "priority": p.priority = v
    elif name == "tos": p.tos = v
    elif name == "ttl": p.ttl = v
    elif name == "ip_id": p.ip_id = v
    elif name == "src_ip": p.src_ip = v
    elif name == "dst_ip": p.dst_ip = v
    elif name == "udp_sport": p.udp_sport = v
    elif name == "opcode": p.opcode = v
    elif name == "se": p.se = v
    elif name == "mig": p.mig = v
    elif name == "fecn": p.fecn = v
    elif name == "becn": p.becn = v
    elif name == "ackreq": p.ackreq = v
    elif name == "pkey": p.pkey = v
    elif name == "dest_qpn": p.dest_qpn = v
    elif name == "psn": p.psn = v
    elif name == "reth_va": p.reth_va = v
    elif name == "reth_rkey": p.reth_rkey = v
    elif name == "reth_len": p.reth_len = v
    elif name == "aeth_syndrome": p.aeth_syndrome = v
    elif name == "aeth_msn": p.aeth_msn = v
    elif name == "imm": p.imm = v
    elif name == "deth_qkey": p.deth_qkey = v
    elif name == "atomic_va": p.atomic_va = v
    elif name == "atomic_rkey": p.atomic_rkey = v
    elif name == "atomic_swap_add": p.atomic_swap_add = v
    elif name == "atomic_compare": p.atomic_compare = v
    elif name == "atomic_orig": p.atomic_orig = v
    elif name == "pfc_class_enable": p.pfc_class_enable = v
    elif name == "link_layer": p.link_layer = v
    elif name == "ib_vl": p.ib_vl = v
    elif name == "ib_sl": p.ib_sl = v
    elif name == "ib_dlid": p.ib_dlid = v
    elif name == "ib_slid": p.ib_slid = v
    # simulator metadata, never on the wire (PacketPoolForTest writes them; encode does not take them)
    elif name == "x_valid": p.x_valid = v
    elif name == "x_rkey": p.x_rkey = v
    elif name == "x_len": p.x_len = v
    elif name == "x_seq": p.x_seq = v
    elif name == "x_sack_psn": p.x_sack_psn = v
    elif name == "x_va": p.x_va = v
    elif name == "x_off": p.x_off = v
    elif name == "job_res": p.job_res = v
    else:
        raise KeyError(name)
    return 0


cdef object _ip_int(str name, object v):
    # Accept "10.0.0.1" as well as an int.
    if isinstance(v, str):
        import ipaddress
        try:
            return int(ipaddress.IPv4Address(v))
        except ValueError as exc:
            raise ValueError(f"encode: field {name} = {v!r} is not an IPv4 address: {exc}") from None
    return v


cdef bytes _fill_pkt(rs_pkt *p, object fields):
    """Fill *p from a dict; returns the payload bytes object, which must outlive *p."""
    memset(p, 0, sizeof(rs_pkt))
    p.tos = 0x02  # ECT(0): RoCEv2 traffic is ECN-capable
    p.ttl = 64
    p.pkey = 0xFFFF
    unknown = set(fields) - _PKT_KEYS - _DECODE_ONLY_KEYS
    if unknown:
        raise ValueError(f"unknown rs_pkt field(s): {sorted(unknown)}")
    uet = fields.get("uet")
    for name in _PKT_INT_FIELDS:
        if name in fields:
            v = fields[name]
            if name == "kind" and uet is not None and v == RS_PKT_UET:
                continue  # set below with the UET headers
            if name == "psn" and uet is not None:  # the PDS PSN is 32 bits (BTH's: 24)
                from rdmasim.checks import check_int
                p.psn = check_int("encode: field psn", v, 0, 0xFFFFFFFF)
                continue
            if name in ("src_ip", "dst_ip"):
                v = _ip_int(name, v)
            _set_int(p, name, _checked_field(name, v))
    for name in ("dst_mac", "src_mac"):
        if name in fields:
            if not isinstance(fields[name], (bytes, bytearray, memoryview)):  # bytes(6) is six zeros
                raise TypeError(f"encode: field {name} must be 6 bytes, not {fields[name]!r}")
            mac = bytes(fields[name])
            if len(mac) != 6:
                raise ValueError(f"{name} must be 6 bytes, got {len(mac)}")
            for i in range(6):
                if name == "dst_mac":
                    p.dst_mac[i] = mac[i]
                else:
                    p.src_mac[i] = mac[i]
    if "pfc_quanta" in fields:
        q = list(fields["pfc_quanta"])
        if len(q) != 8:
            raise ValueError(f"pfc_quanta must have 8 entries, got {len(q)}")
        from rdmasim.checks import check_int
        for i in range(8):
            p.pfc_quanta[i] = check_int(f"encode: field pfc_quanta[{i}]", q[i], 0, 0xFFFF)
    if uet is not None:
        _fill_uet(p, uet)
    cdef bytes payload = None
    if fields.get("payload") is not None:
        if not isinstance(fields["payload"], (bytes, bytearray, memoryview)):  # bytes(5) is five zeros
            raise TypeError(f"encode: field payload must be bytes, not {type(fields['payload']).__name__}")
        payload = bytes(fields["payload"])
        if len(payload) > RS_MAX_PAYLOAD:
            raise ValueError(f"encode: field payload has {len(payload)} bytes: allowed 0..{RS_MAX_PAYLOAD}")
        if "payload_len" in fields and fields["payload_len"] != len(payload):
            raise ValueError(
                f"payload_len={fields['payload_len']} but len(payload)={len(payload)}")
        p.payload_len = <uint32_t>len(payload)
        if len(payload):
            p.payload = <uint8_t *><const unsigned char *>payload
    return payload


cdef int _fill_uet(rs_pkt *p, object uet) except -1:
    from rdmasim.checks import check_int
    if not isinstance(uet, dict):
        raise TypeError(f"encode: field uet must be a dict of UET header fields, not {type(uet).__name__}")
    unknown = set(uet) - set(_UET_FIELDS)
    if unknown:
        raise ValueError(f"unknown UET header field(s): {sorted(unknown)}; known: {sorted(_UET_FIELDS)}")
    p.kind = RS_PKT_UET
    for name, (signed, bits) in _UET_FIELDS.items():
        if name not in uet:
            continue
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        v = check_int(f"encode: field uet.{name}", uet[name], lo, hi)
        if name == "type": p.uet.type = v
        elif name == "next_hdr": p.uet.next_hdr = v
        elif name == "flags": p.uet.flags = v
        elif name == "nack_code": p.uet.nack_code = v
        elif name == "spdcid": p.uet.spdcid = v
        elif name == "dpdcid": p.uet.dpdcid = v
        elif name == "psn_off": p.uet.psn_off = v
        elif name == "sack_off": p.uet.sack_off = v
        elif name == "cack_psn": p.uet.cack_psn = v
        elif name == "nack_payload": p.uet.nack_payload = v
        elif name == "cc_type": p.uet.cc_type = v
        elif name == "cc_flags": p.uet.cc_flags = v
        elif name == "mpr": p.uet.mpr = v
        elif name == "ses_opcode": p.uet.ses_opcode = v
        elif name == "sack_bitmap": p.uet.sack_bitmap = v
        elif name == "cc_state": p.uet.cc_state = v
        elif name == "ses_flags": p.uet.ses_flags = v
        elif name == "index_gen": p.uet.index_gen = v
        elif name == "msg_id": p.uet.msg_id = v
        elif name == "job_id": p.uet.job_id = v
        elif name == "pid_on_fep": p.uet.pid_on_fep = v
        elif name == "resource_index": p.uet.resource_index = v
        elif name == "initiator": p.uet.initiator = v
        elif name == "message_offset": p.uet.message_offset = v
        elif name == "request_length": p.uet.request_length = v
        elif name == "buffer_offset": p.uet.buffer_offset = v
        elif name == "mem_key": p.uet.mem_key = v
        elif name == "header_data": p.uet.header_data = v
        elif name == "credit_target": p.uet.credit_target = v
        elif name == "ccc_id": p.uet.ccc_id = v
        elif name == "ses_rc": p.uet.ses_rc = v
        elif name == "mod_length": p.uet.mod_length = v
        elif name == "read_msg_id": p.uet.read_msg_id = v
    return 0


cdef dict _uet_to_dict(const rs_pkt *p):
    u = &p.uet
    return {
        "type": u.type, "next_hdr": u.next_hdr, "flags": u.flags, "nack_code": u.nack_code,
        "spdcid": u.spdcid, "dpdcid": u.dpdcid, "psn_off": u.psn_off, "sack_off": u.sack_off,
        "cack_psn": u.cack_psn, "nack_payload": u.nack_payload, "cc_type": u.cc_type,
        "cc_flags": u.cc_flags, "mpr": u.mpr, "ses_opcode": u.ses_opcode, "sack_bitmap": u.sack_bitmap,
        "cc_state": u.cc_state, "ses_flags": u.ses_flags, "index_gen": u.index_gen, "msg_id": u.msg_id,
        "job_id": u.job_id, "pid_on_fep": u.pid_on_fep, "resource_index": u.resource_index,
        "initiator": u.initiator, "message_offset": u.message_offset,
        "request_length": u.request_length, "buffer_offset": u.buffer_offset, "mem_key": u.mem_key,
        "header_data": u.header_data, "credit_target": u.credit_target, "ccc_id": u.ccc_id,
        "ses_rc": u.ses_rc, "mod_length": u.mod_length, "read_msg_id": u.read_msg_id,
    }


cdef dict _pkt_to_dict(const rs_pkt *p, const uint8_t *base, bytes frame):
    d = {
        "t_arrive_ps": p.t_arrive_ps, "payload_len": p.payload_len, "kind": p.kind,
        "src_qpn": p.src_qpn, "src_node": p.src_node, "dst_node": p.dst_node,
        "priority": p.priority,
        "dst_mac": bytes([p.dst_mac[i] for i in range(6)]),
        "src_mac": bytes([p.src_mac[i] for i in range(6)]),
        "tos": p.tos, "ttl": p.ttl, "ip_id": p.ip_id, "src_ip": p.src_ip, "dst_ip": p.dst_ip,
        "udp_sport": p.udp_sport,
        "opcode": p.opcode, "se": p.se, "mig": p.mig, "fecn": p.fecn, "becn": p.becn,
        "ackreq": p.ackreq, "pkey": p.pkey, "dest_qpn": p.dest_qpn, "psn": p.psn,
        "reth_va": p.reth_va, "reth_rkey": p.reth_rkey, "reth_len": p.reth_len,
        "aeth_syndrome": p.aeth_syndrome, "aeth_msn": p.aeth_msn, "imm": p.imm,
        "deth_qkey": p.deth_qkey,
        "atomic_va": p.atomic_va, "atomic_rkey": p.atomic_rkey,
        "atomic_swap_add": p.atomic_swap_add, "atomic_compare": p.atomic_compare,
        "atomic_orig": p.atomic_orig,
        "pfc_class_enable": p.pfc_class_enable,
        "pfc_quanta": [p.pfc_quanta[i] for i in range(8)],
        "link_layer": p.link_layer, "ib_vl": p.ib_vl, "ib_sl": p.ib_sl,
        "ib_dlid": p.ib_dlid, "ib_slid": p.ib_slid,
    }
    if p.kind == RS_PKT_UET:
        d["uet"] = _uet_to_dict(p)
    if p.payload != NULL and p.payload_len:
        off = <size_t>(p.payload - base)
        d["payload"] = frame[off:off + p.payload_len]
    else:
        d["payload"] = b""
    return d


def encode(fields):
    """Encode a dict of rs_pkt fields to frame bytes (Ethernet II, no FCS).

    Missing keys default to kind 0 (RoCE), tos 0x02, ttl 64, pkey 0xFFFF, everything else 0.
    Raises ValueError naming the rs_codec_status if the C encoder rejects the packet."""
    cdef rs_pkt p
    cdef uint8_t buf[_FRAME_CAP]
    keep = _fill_pkt(&p, fields)  # noqa: F841 -- keeps the payload buffer alive
    cdef int n = rs_encode(&p, buf, _FRAME_CAP)
    if n < 0:
        raise _codec_error(n, "encode failed")
    return bytes(buf[:n])


def decode(frame, orig_len=None):
    """Decode frame bytes to a dict of rs_pkt fields plus "payload" (bytes) and "icrc_ok".

    A frame whose ICRC mismatches decodes with icrc_ok False (PFC frames have no ICRC:
    always True); any other codec error raises ValueError naming the rs_codec_status.
    ``orig_len`` > len(frame): the bytes are the start of a longer frame (a pcap record cut by a
    snaplen): the headers decode, "payload" holds the payload bytes captured, "payload_len" is the
    frame's, "icrc_ok" is None (not checked) and "truncated" is True."""
    cdef bytes data = bytes(frame)
    cdef const uint8_t *base = <const uint8_t *><const unsigned char *>data
    cdef rs_pkt p
    cdef size_t n = <size_t>len(data)
    if orig_len is not None:
        from rdmasim.checks import check_int
        orig_len = check_int("decode: orig_len", orig_len, 0, 0xFFFFFFFF)  # a pcap record's 32-bit field
    cdef size_t wire = n if orig_len is None or <size_t>orig_len < n else <size_t>orig_len
    cdef int st = rs_decode_captured(base, n, wire, &p)
    if st != RS_CODEC_OK and st != RS_CODEC_ERR_BAD_ICRC:
        raise _codec_error(st, "decode failed")
    d = _pkt_to_dict(&p, base, data)
    d["truncated"] = wire > n
    if wire > n and p.kind == RS_PKT_UET:
        start = 42 + 12 + 44  # Ethernet + IPv4 + UDP + PDS request + SES standard header
        d["payload"] = data[start:start + p.payload_len]
        d["icrc_ok"] = None
    elif wire > n:
        start = 54 + rs_opcode_ext_bytes(p.opcode)  # Ethernet + IPv4 + UDP + BTH + extensions
        d["payload"] = data[start:start + p.payload_len]
        d["icrc_ok"] = None
    else:
        d["icrc_ok"] = st == RS_CODEC_OK
    return d


def decode_ib(frame, orig_len=None):
    """Decode an InfiniBand packet (from its LRH, as LINKTYPE_INFINIBAND stores it) like decode():
    the dict also has "vcrc_ok"; a wrong ICRC or VCRC is not an error (icrc_ok / vcrc_ok False)."""
    cdef bytes data = bytes(frame)
    cdef const uint8_t *base = <const uint8_t *><const unsigned char *>data
    cdef rs_pkt p
    cdef size_t n = <size_t>len(data)
    if orig_len is not None:
        from rdmasim.checks import check_int
        orig_len = check_int("decode_ib: orig_len", orig_len, 0, 0xFFFFFFFF)
    cdef size_t wire = n if orig_len is None or <size_t>orig_len < n else <size_t>orig_len
    cdef int st = rs_ib_decode_captured(base, n, wire, &p)
    if st not in (RS_CODEC_OK, RS_CODEC_ERR_BAD_ICRC, RS_CODEC_ERR_BAD_VCRC):
        raise _codec_error(st, "decode_ib failed")
    d = _pkt_to_dict(&p, base, data)
    d["truncated"] = wire > n
    if wire > n:
        start = RS_IB_LRH_BYTES + 12 + rs_opcode_ext_bytes(p.opcode)  # LRH + BTH + extensions
        d["payload"] = data[start:start + p.payload_len]
        d["icrc_ok"] = d["vcrc_ok"] = None
    else:
        d["vcrc_ok"] = st != RS_CODEC_ERR_BAD_VCRC
        if st == RS_CODEC_ERR_BAD_VCRC:  # the ICRC is checked after the VCRC: check it here
            d["icrc_ok"] = rs_ib_icrc(base, n - 6) == int.from_bytes(data[n - 6:n - 2], "little")
        else:
            d["icrc_ok"] = st == RS_CODEC_OK
    return d


def ib_icrc(packet_without_icrc):
    """InfiniBand ICRC of a packet (from its LRH) cut just before its ICRC (wire: LSB first)."""
    cdef bytes data = bytes(packet_without_icrc)
    return rs_ib_icrc(<const uint8_t *><const unsigned char *>data, <size_t>len(data))


def ib_vcrc(data):
    """InfiniBand VCRC (CRC-16, polynomial 0x100B) of `data`: a packet from LRH through ICRC."""
    cdef bytes b = bytes(data)
    return rs_ib_vcrc(<const uint8_t *><const unsigned char *>b, <size_t>len(b))


def icrc(frame_without_icrc):
    """RoCEv2 ICRC of a frame given up to, not including, its ICRC (wire order is LSB first)."""
    cdef bytes data = bytes(frame_without_icrc)
    return rs_icrc(<const uint8_t *><const unsigned char *>data, <size_t>len(data))


def crc32(data, uint32_t crc=0):
    """CRC-32 (IEEE 802.3 / zlib), continuing from `crc` like zlib.crc32."""
    cdef bytes b = bytes(data)
    return rs_crc32(crc, <const uint8_t *><const unsigned char *>b, <size_t>len(b))


def frame_len(fields):
    """Length of the frame `fields` would encode to; ValueError if it cannot be encoded."""
    cdef rs_pkt p
    keep = _fill_pkt(&p, fields)  # noqa: F841
    cdef size_t n = rs_frame_len(&p)
    if n == 0:
        raise ValueError("frame_len: fields cannot be encoded (kind, opcode or a field value)")
    return n


def opcode_ext_bytes(uint8_t opcode):
    """Extension-header bytes after BTH for `opcode`, or -1 if the codec does not know it."""
    return rs_opcode_ext_bytes(opcode)


cdef class PcapWriter:
    """Nanosecond pcap (LINKTYPE_ETHERNET) writer over the C encoder; a context manager."""
    cdef rs_pcap pc

    def __cinit__(self):
        self.pc.fp = NULL
        self.pc.frames = 0

    def __init__(self, path=None, snaplen=0, link_layer="roce"):
        if path is not None:
            self.open(path, snaplen, link_layer)

    def open(self, path, snaplen=0, link_layer="roce"):
        """Create/truncate `path` and write the pcap file header (`snaplen` 0: whole frames)."""
        if self.pc.fp != NULL:
            raise ValueError("PcapWriter is already open")
        if not 0 <= snaplen <= 65535:
            raise ValueError(f"snaplen {snaplen}: allowed 1..65535 bytes, or 0 for whole frames")
        from rdmasim.checks import check_path
        cdef bytes bpath = check_path("pcap path", path)
        if link_layer not in ("roce", "ib"):
            raise ValueError(f"PcapWriter link_layer {link_layer!r}: allowed 'roce' or 'ib'")
        cdef uint32_t lt = RS_LINKTYPE_INFINIBAND if link_layer == "ib" else RS_LINKTYPE_ETHERNET
        if rs_pcap_open_linktype(&self.pc, bpath, snaplen, lt) != 0:
            e = errno
            raise OSError(e, os.strerror(e) if e else "pcap open failed", str(path))
        return self

    def write(self, fields, int64_t t_ps):
        """Encode `fields` and append it with timestamp `t_ps` picoseconds."""
        cdef rs_pkt p
        if self.pc.fp == NULL:
            raise ValueError("PcapWriter is not open")
        keep = _fill_pkt(&p, fields)  # noqa: F841
        if rs_frame_len(&p) == 0 or t_ps < 0:
            raise ValueError(f"pcap write: cannot encode these fields at t_ps={t_ps}")
        if rs_pcap_write(&self.pc, &p, t_ps) != 0:
            raise OSError(errno, "pcap write failed")

    @property
    def frames(self):
        """Frames written so far."""
        return self.pc.frames

    def close(self):
        """Flush and close; safe to call twice."""
        if rs_pcap_close(&self.pc) != 0:
            raise OSError("pcap close failed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __dealloc__(self):
        rs_pcap_close(&self.pc)
