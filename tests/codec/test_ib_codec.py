"""InfiniBand framing in the C codec (csrc/codec/ib_codec.c, vcrc.c; docs/infiniband.md).

The CRCs are checked against computations written here from their definitions (IBA vol. 1 7.8):
the ICRC is CRC-32 (zlib's, an implementation we did not write) over the packet with LRH:VL and
BTH byte 4 (Resv8a: FECN, BECN) set to ones; the VCRC is CRC-16 with polynomial 0x100B, register
all-ones, bits fed least-significant first, the register inverted at the end -- computed bit by bit
in the polynomial's own (unreflected) orientation, not with the codec's reflected table.
"""

from __future__ import annotations

import zlib

import pytest

from rdmasim import codec

LRH, BTH, ICRC, VCRC = 8, 12, 4, 2
WRITE_ONLY, WRITE_FIRST, SEND_ONLY, ACK, READ_REQUEST = 0x0A, 0x06, 0x04, 0x11, 0x0C


def ib_pkt(**kw: object) -> dict[str, object]:
    f: dict[str, object] = {"link_layer": codec.LL_IB, "opcode": SEND_ONLY, "dest_qpn": 0x1234, "psn": 77,
                            "ib_dlid": 0x0102, "ib_slid": 0x0A0B, "ib_sl": 5, "ib_vl": 2}
    f.update(kw)
    return f


def reverse_bits(v: int, n: int) -> int:
    return int(f"{v:0{n}b}"[::-1], 2)


def vcrc_from_definition(data: bytes) -> int:
    """CRC-16 x^16 + x^12 + x^3 + x + 1 (0x100B): each byte's bit 0 first into an MSB-out shift
    register preset to ones; the complemented register, read out bit-reversed to match the LSB-first
    transmission (the value whose little-endian bytes are on the wire)."""
    reg = 0xFFFF
    for byte in data:
        for i in range(8):
            feedback = ((byte >> i) & 1) ^ (reg >> 15)
            reg = (reg << 1) & 0xFFFF
            if feedback:
                reg ^= 0x100B
    return reverse_bits(~reg & 0xFFFF, 16)


def icrc_from_definition(pkt_before_icrc: bytes) -> int:
    masked = bytearray(pkt_before_icrc)
    masked[0] |= 0xF0          # LRH:VL
    masked[LRH + 4] = 0xFF     # BTH:Resv8a (FECN, BECN, reserved)
    return zlib.crc32(bytes(masked))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 1023, 4096])
def test_lrh_and_lengths_follow_the_iba_layout(n: int) -> None:
    payload = bytes((i * 7) & 0xFF for i in range(n))
    wire = codec.encode(ib_pkt(payload=payload))
    pad = -n % 4
    assert len(wire) == LRH + BTH + n + pad + ICRC + VCRC == codec.frame_len(ib_pkt(payload=payload))
    assert wire[0] == 2 << 4                  # VL 2, LVer 0
    assert wire[1] == (5 << 4) | 2            # SL 5, LNH 2 = IBA local (BTH next, no GRH)
    assert int.from_bytes(wire[2:4], "big") == 0x0102
    assert int.from_bytes(wire[4:6], "big") == (len(wire) - VCRC) // 4  # PktLen: LRH .. ICRC in words
    assert (len(wire) - VCRC) % 4 == 0
    assert int.from_bytes(wire[6:8], "big") == 0x0A0B
    bth = wire[LRH:LRH + BTH]
    assert bth[0] == SEND_ONLY and (bth[1] >> 4) & 3 == pad
    assert int.from_bytes(bth[5:8], "big") == 0x1234 and int.from_bytes(bth[9:12], "big") == 77
    assert wire[LRH + BTH:LRH + BTH + n] == payload and wire[LRH + BTH + n:LRH + BTH + n + pad] == bytes(pad)


@pytest.mark.parametrize("fields", [
    {"opcode": WRITE_FIRST, "reth_va": 0x1122334455667788, "reth_rkey": 0xABCD, "reth_len": 9000,
     "payload": b"x" * 1024},
    {"opcode": ACK, "aeth_syndrome": 0x1F, "aeth_msn": 0x123456},
    {"opcode": READ_REQUEST, "reth_va": 64, "reth_rkey": 7, "reth_len": 4096, "ackreq": 1},
    {"opcode": SEND_ONLY, "payload": b"abc", "se": 1, "becn": 1},
])
def test_crcs_match_their_definitions_and_the_packet_round_trips(fields: dict[str, object]) -> None:
    wire = codec.encode(ib_pkt(**fields))
    body, icrc, vcrc = wire[:-6], wire[-6:-2], wire[-2:]
    assert icrc == icrc_from_definition(body).to_bytes(4, "little")
    assert codec.ib_icrc(body) == icrc_from_definition(body)
    assert vcrc == vcrc_from_definition(wire[:-2]).to_bytes(2, "little")
    assert codec.ib_vcrc(wire[:-2]) == vcrc_from_definition(wire[:-2])
    d = codec.decode_ib(wire)
    assert d["icrc_ok"] and d["vcrc_ok"] and not d["truncated"]
    for k, v in ib_pkt(**fields).items():
        assert d[k] == v, k
    assert codec.encode(d) == wire  # decode output feeds encode


def test_vcrc_of_the_standard_check_string() -> None:
    """The codec's table and the bit-by-bit definition agree on the CRC catalogues' check input
    "123456789", and the empty input gives the complemented preset."""
    assert codec.ib_vcrc(b"123456789") == vcrc_from_definition(b"123456789")
    assert codec.ib_vcrc(b"") == 0  # ones preset, complemented, no data


def test_icrc_ignores_what_a_switch_may_change_and_the_vcrc_does_not() -> None:
    base = codec.encode(ib_pkt(payload=b"data"))
    for change in ({"ib_vl": 7}, {"fecn": 1}, {"becn": 1}):
        other = codec.encode(ib_pkt(**{"payload": b"data", **change}))
        assert other[-6:-2] == base[-6:-2], change   # ICRC invariant
        assert other[-2:] != base[-2:], change       # VCRC covers every bit
    for change in ({"ib_sl": 1}, {"ib_dlid": 9}, {"ib_slid": 9}, {"psn": 78}, {"payload": b"dat!"}):
        assert codec.encode(ib_pkt(**{"payload": b"data", **change}))[-6:-2] != base[-6:-2], change


def test_a_corrupted_packet_is_reported_not_refused() -> None:
    wire = bytearray(codec.encode(ib_pkt(payload=b"0123456789")))
    bad_vcrc = bytes(wire[:-1]) + bytes([wire[-1] ^ 1])
    d = codec.decode_ib(bad_vcrc)
    assert d["vcrc_ok"] is False and d["icrc_ok"] is True
    wire[LRH + BTH + 3] ^= 0x40  # a payload bit: both CRCs catch it
    d = codec.decode_ib(bytes(wire))
    assert d["vcrc_ok"] is False and d["icrc_ok"] is False
    bad_icrc = codec.encode(ib_pkt(payload=b"zz"))
    fixed_vcrc = bytearray(bad_icrc)
    fixed_vcrc[-6] ^= 0xFF  # the ICRC wrong, the VCRC recomputed over it (as a switch would)
    fixed_vcrc[-2:] = codec.ib_vcrc(bytes(fixed_vcrc[:-2])).to_bytes(2, "little")
    d = codec.decode_ib(bytes(fixed_vcrc))
    assert d["vcrc_ok"] is True and d["icrc_ok"] is False


def test_switch_congestion_mark_travels_as_fecn() -> None:
    wire = codec.encode(ib_pkt(tos=0x03))  # ECN CE set by a switch
    assert wire[LRH + 4] & 0x80
    assert codec.decode_ib(wire)["fecn"] == 1


def test_a_capture_cut_by_a_snaplen_decodes_its_headers() -> None:
    wire = codec.encode(ib_pkt(opcode=WRITE_ONLY, reth_len=2000, payload=b"p" * 2000))
    d = codec.decode_ib(wire[:64], orig_len=len(wire))
    assert d["truncated"] and d["icrc_ok"] is None and d["vcrc_ok"] is None
    assert d["payload_len"] == 2000 and d["payload"] == b"p" * (64 - LRH - BTH - 16)
    assert d["reth_len"] == 2000 and d["ib_dlid"] == 0x0102


def test_bad_values_name_the_field_or_status() -> None:
    with pytest.raises(ValueError, match="ib_sl"):
        codec.encode(ib_pkt(ib_sl=16))
    with pytest.raises(ValueError, match="ib_vl"):
        codec.encode(ib_pkt(ib_vl=16))
    with pytest.raises(ValueError, match="link_layer"):
        codec.encode(ib_pkt(link_layer=2))
    with pytest.raises(codec.CodecError) as e:  # a PFC frame has no InfiniBand form
        codec.encode({"link_layer": codec.LL_IB, "kind": codec.PKT_PFC, "pfc_class_enable": 8})
    assert e.value.status == "BAD_FIELD"
    wire = bytearray(codec.encode(ib_pkt()))
    wire[1] = (wire[1] & 0xFC) | 3  # LNH 3: a GRH follows (not modelled)
    with pytest.raises(codec.CodecError) as e:
        codec.decode_ib(bytes(wire))
    assert e.value.status == "NOT_ROCE"
    with pytest.raises(codec.CodecError) as e:
        codec.decode_ib(codec.encode(ib_pkt())[:-3])
    assert e.value.status == "SHORT"


def test_roce_framing_is_untouched_by_the_ib_fields() -> None:
    """The IB fields are ignored on a RoCE frame: it encodes as before, bit for bit."""
    roce = {"opcode": SEND_ONLY, "dest_qpn": 0x1234, "psn": 77, "payload": b"abc"}
    assert codec.encode(roce) == codec.encode({**roce, "ib_dlid": 5, "ib_slid": 6, "ib_sl": 3, "ib_vl": 1})
    assert len(codec.encode(roce)) == 14 + 20 + 8 + 12 + 3 + 1 + 4


def test_every_cut_and_every_bit_flip_decodes_or_is_refused_cleanly() -> None:
    """No prefix of a packet and no single flipped bit makes the decoder read out of bounds or
    accept a corrupted packet as good (the VCRC covers every bit)."""
    wire = codec.encode(ib_pkt(opcode=WRITE_FIRST, reth_len=100, payload=bytes(range(37))))
    for n in range(len(wire)):
        with pytest.raises(codec.CodecError):
            codec.decode_ib(wire[:n])
    for i in range(len(wire) * 8):
        bad = bytearray(wire)
        bad[i // 8] ^= 1 << (i % 8)
        try:
            d = codec.decode_ib(bytes(bad))
        except codec.CodecError:
            continue
        assert not d["vcrc_ok"] or not d["icrc_ok"] or d["payload_len"] != 37, i
