"""RoCEv2 / PFC wire codec: packet fields <-> exact frame bytes, ICRC, pcap; and InfiniBand framing.

Frames are Ethernet II without FCS, as pcap LINKTYPE_ETHERNET stores them. A packet with
``link_layer`` 1 (:data:`LL_IB`) is framed as InfiniBand instead: LRH / BTH ... / ICRC / VCRC, as
LINKTYPE_INFINIBAND stores it (:func:`decode_ib`, docs/infiniband.md). A packet is a
dict keyed by the C ``rs_pkt`` field names (csrc/include/rdmasim/packet.h); see
csrc/include/rdmasim/codec.h for the field conventions (24-bit QPN/PSN/MSN, ``imm`` sent
big-endian and also carrying the IETH rkey, booleans as 0/1).
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from rdmasim import _core

PKT_ROCE = 0
PKT_PFC = 1
#: ``link_layer`` field values: RoCEv2 over Ethernet, native InfiniBand
LL_ROCE = 0
LL_IB = 1
ROCE_UDP_PORT = 4791

_RC_UC_NAMES = {
    0x00: "SEND_FIRST",
    0x01: "SEND_MIDDLE",
    0x02: "SEND_LAST",
    0x03: "SEND_LAST_WITH_IMMEDIATE",
    0x04: "SEND_ONLY",
    0x05: "SEND_ONLY_WITH_IMMEDIATE",
    0x06: "RDMA_WRITE_FIRST",
    0x07: "RDMA_WRITE_MIDDLE",
    0x08: "RDMA_WRITE_LAST",
    0x09: "RDMA_WRITE_LAST_WITH_IMMEDIATE",
    0x0A: "RDMA_WRITE_ONLY",
    0x0B: "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
}

#: BTH opcode -> name, for every opcode the codec knows (RC, UC with a ``UC_`` prefix, UD SEND, CNP).
OPCODE_NAMES: dict[int, str] = {
    **_RC_UC_NAMES,
    0x0C: "RDMA_READ_REQUEST",
    0x0D: "RDMA_READ_RESPONSE_FIRST",
    0x0E: "RDMA_READ_RESPONSE_MIDDLE",
    0x0F: "RDMA_READ_RESPONSE_LAST",
    0x10: "RDMA_READ_RESPONSE_ONLY",
    0x11: "ACKNOWLEDGE",
    0x12: "ATOMIC_ACKNOWLEDGE",
    0x13: "COMPARE_SWAP",
    0x14: "FETCH_ADD",
    0x16: "SEND_LAST_WITH_INVALIDATE",
    0x17: "SEND_ONLY_WITH_INVALIDATE",
    0x1C: "FLUSH",  # FETH (in the "imm" field) + RETH
    0x1D: "ATOMIC_WRITE",  # RETH + 8 payload bytes
    **{0x20 + op: "UC_" + name for op, name in _RC_UC_NAMES.items()},
    0x64: "UD_SEND_ONLY",
    0x65: "UD_SEND_ONLY_WITH_IMMEDIATE",
    0x81: "CNP",
}

Fields = Mapping[str, Any]

CodecError = _core.CodecError
"""The ValueError every codec refusal raises; ``.status`` is the rs_codec_status name."""

#: rs_codec_status value -> name (``0: "OK"``, ``-1: "SHORT"``, ...)
STATUS_NAMES: dict[int, str] = dict(_core.CODEC_STATUS_NAMES)


def encode(fields: Fields) -> bytes:
    """Encode a packet to frame bytes (min 60 bytes, no FCS).

    Missing keys default to kind 0 (RoCE), tos 0x02 (ECT(0)), ttl 64, pkey 0xFFFF, MACs zero,
    everything else 0. ``payload`` is bytes; with only ``payload_len`` the payload is zeros.

    Every field is an int within the width of its header field (``psn``, ``dest_qpn``,
    ``aeth_msn``, ``src_qpn`` 0..2^24-1; ``se``, ``mig``, ``fecn``, ``becn``, ``ackreq`` 0..1 or a
    bool; ``pkey``, ``ip_id``, ``udp_sport`` 16 bits; ``pfc_class_enable`` 0..255; ``payload_len``
    0..4096; ...): anything else (``psn=7.9``, ``se=2``) raises TypeError/ValueError naming the
    field and its range, never a truncated value. A packet the C encoder refuses raises
    :class:`CodecError` naming the codec status."""
    return _core.encode(fields)


def decode(frame: bytes, orig_len: int | None = None) -> dict[str, Any]:
    """Decode a frame to a dict of every rs_pkt field plus ``payload`` (bytes, without pad),
    ``icrc_ok`` (bool) and ``truncated`` (False). Raises :class:`CodecError` (a ValueError) with
    ``.status`` if the frame is not a well-formed RoCEv2 or PFC frame: SHORT, NOT_ROCE, BAD_OPCODE,
    BAD_LENGTH, BAD_FIELD, BAD_IP_CSUM (IPv4 header checksum wrong), IP_FRAGMENT (MF or a fragment
    offset: RoCEv2 is never fragmented), PFC_DST (a PFC frame not sent to 01:80:C2:00:00:01) or
    RUNT (a PFC frame under 60 bytes). A wrong ICRC is not an error: ``icrc_ok`` is False.

    ``orig_len`` greater than ``len(frame)``: the bytes are the start of a longer frame (a pcap
    record of a capture with a snaplen). Every header must be there; ``payload`` is the part
    captured, ``payload_len`` the frame's, ``icrc_ok`` None (not checkable), ``truncated`` True."""
    return _core.decode(frame, orig_len)


def decode_ib(frame: bytes, orig_len: int | None = None) -> dict[str, Any]:
    """Decode an InfiniBand packet, from its LRH (LINKTYPE_INFINIBAND), as :func:`decode` does a
    RoCEv2 frame: the LRH gives ``ib_vl``, ``ib_sl``, ``ib_dlid``, ``ib_slid`` (``link_layer`` 1),
    then the same BTH and extension fields. ``icrc_ok`` and ``vcrc_ok`` say whether the two CRCs
    match (None when cut by a snaplen). LNH other than "IBA local" (a GRH) raises NOT_ROCE."""
    return _core.decode_ib(frame, orig_len)


def ib_icrc(packet_without_icrc: bytes) -> int:
    """InfiniBand ICRC of a packet (from its LRH) cut just before its ICRC: CRC-32 with LRH:VL and
    BTH byte 4 set to ones; the wire carries ``value.to_bytes(4, "little")``."""
    return _core.ib_icrc(packet_without_icrc)


def ib_vcrc(data: bytes) -> int:
    """InfiniBand VCRC (CRC-16, polynomial 0x100B) of a packet from its LRH through its ICRC; the
    wire carries ``value.to_bytes(2, "little")``."""
    return _core.ib_vcrc(data)


def icrc(frame_without_icrc: bytes) -> int:
    """RoCEv2 ICRC of an Ethernet frame cut just before its ICRC; the wire carries
    ``value.to_bytes(4, "little")``."""
    return _core.icrc(frame_without_icrc)


def crc32(data: bytes, crc: int = 0) -> int:
    """CRC-32 (IEEE 802.3 / zlib), continuing from ``crc`` like ``zlib.crc32``."""
    return _core.crc32(data, crc)


def frame_len(fields: Fields) -> int:
    """Length in bytes of the frame ``fields`` encodes to; ValueError if it cannot be encoded."""
    return _core.frame_len(fields)


def opcode_ext_bytes(opcode: int) -> int:
    """Extension-header bytes following BTH for ``opcode``; -1 if the codec does not know it."""
    return _core.opcode_ext_bytes(opcode)


class PcapWriter(_core.PcapWriter):
    """Writes frames to a nanosecond pcap file (LINKTYPE_ETHERNET, readable by tshark).

    ``with PcapWriter(path) as w: w.write(fields, t_ps)``; timestamps are picoseconds,
    truncated to nanoseconds. ``snaplen`` 1..65535 keeps the first bytes of each frame (the
    record keeps its real length), 0 whole frames."""

    def __init__(self, path: str | PathLike[str] | None = None, snaplen: int = 0,
                 link_layer: str = "roce") -> None:
        """``link_layer="ib"``: LINKTYPE_INFINIBAND; ``write`` then takes packets with ``link_layer`` 1."""
        super().__init__(path, snaplen, link_layer)


__all__ = [
    "STATUS_NAMES",
    "CodecError",
    "OPCODE_NAMES",
    "LL_IB",
    "LL_ROCE",
    "PKT_PFC",
    "PKT_ROCE",
    "ROCE_UDP_PORT",
    "PcapWriter",
    "crc32",
    "decode",
    "decode_ib",
    "encode",
    "frame_len",
    "ib_icrc",
    "ib_vcrc",
    "icrc",
    "opcode_ext_bytes",
]
