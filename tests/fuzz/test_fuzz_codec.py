"""Fuzzing the wire codec: random and mutated frames never crash the decoder (it returns fields or
raises CodecError with a known status), and every packet of in-range field values round-trips.

The default run is bounded to a few seconds; the ``slow`` variants run many more examples.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmasim import codec

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KNOWN_OPCODES = sorted(codec.OPCODE_NAMES)
CARRIES_DATA = {op for op, name in codec.OPCODE_NAMES.items()
                if ("SEND" in name or "WRITE" in name or "RESPONSE" in name) and "REQUEST" not in name}

# header field -> bits on the wire (what encode accepts: 0 .. 2^bits - 1)
WIRE_BITS = {
    "tos": 8, "ttl": 8, "ip_id": 16, "src_ip": 32, "dst_ip": 32, "udp_sport": 16,
    "se": 1, "mig": 1, "fecn": 1, "becn": 1, "ackreq": 1, "pkey": 16, "dest_qpn": 24, "psn": 24,
    "reth_va": 64, "reth_rkey": 32, "reth_len": 32, "aeth_syndrome": 8, "aeth_msn": 24, "imm": 32,
    "atomic_va": 64, "atomic_rkey": 32, "atomic_swap_add": 64, "atomic_compare": 64, "atomic_orig": 64,
}
BTH_AND_IP = ("tos", "ttl", "ip_id", "src_ip", "dst_ip", "udp_sport", "opcode", "se", "mig", "fecn", "becn",
              "ackreq", "pkey", "dest_qpn", "psn")


@st.composite
def roce_fields(draw: Any) -> dict[str, Any]:
    op = draw(st.sampled_from(KNOWN_OPCODES))
    f: dict[str, Any] = {name: draw(st.integers(0, (1 << bits) - 1)) for name, bits in WIRE_BITS.items()}
    f["opcode"] = op
    f["dst_mac"] = draw(st.binary(min_size=6, max_size=6))
    f["src_mac"] = draw(st.binary(min_size=6, max_size=6))
    f["payload"] = draw(st.binary(max_size=300)) if op in CARRIES_DATA else b""
    return f


@st.composite
def pfc_fields(draw: Any) -> dict[str, Any]:
    return {"kind": codec.PKT_PFC, "src_mac": draw(st.binary(min_size=6, max_size=6)),
            "pfc_class_enable": draw(st.integers(0, 255)),
            "pfc_quanta": draw(st.lists(st.integers(0, 0xFFFF), min_size=8, max_size=8))}


def _decode_or_status(frame: bytes, orig_len: int | None = None) -> dict[str, Any] | str:
    """What decode does with ``frame``: its fields, or the status of the CodecError (nothing else)."""
    try:
        d = codec.decode(frame, orig_len)
    except codec.CodecError as exc:
        assert exc.status in codec.STATUS_NAMES.values() and exc.status != "OK"
        assert codec.STATUS_NAMES[exc.code] == exc.status
        return exc.status
    assert d["kind"] in (codec.PKT_ROCE, codec.PKT_PFC)
    assert len(d["payload"]) <= d["payload_len"] <= 4096
    return d


# ---- decode never crashes ----


def _random_bytes(data: Any) -> None:
    head = data.draw(st.sampled_from([b"", bytes(12) + b"\x08\x00", bytes(12) + b"\x88\x08\x01\x01",
                                      b"\x01\x80\xc2\x00\x00\x01" + bytes(6) + b"\x88\x08\x01\x01"]))
    frame = head + data.draw(st.binary(max_size=200))
    _decode_or_status(frame)
    _decode_or_status(frame, data.draw(st.integers(0, 70000)))


@FAST
@given(st.data())
def test_random_bytes_decode_or_get_a_status(data: Any) -> None:
    _random_bytes(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_random_bytes_decode_or_get_a_status_long(data: Any) -> None:
    _random_bytes(data)


def _bit_ignored(frame: bytes, at: int, bit: int) -> bool:
    """Bits of an encoded RoCE frame no integrity check covers: the MACs (the FCS is not in the
    frame), the UDP checksum and BTH's FECN/BECN/reserved byte (masked out of the ICRC as variant),
    BTH's resv7, Ethernet padding after the IP datagram."""
    ip_end = 14 + int.from_bytes(frame[16:18], "big")
    return at < 12 or at in (40, 41, 46) or at >= ip_end or (at == 50 and bit < 7)


def _one_flip(data: Any) -> None:
    """One bit flipped in a RoCE frame: decode refuses it, or flags the ICRC, unless the bit is one
    nothing covers."""
    frame = bytearray(codec.encode(data.draw(roce_fields())))
    at, bit = data.draw(st.integers(0, len(frame) - 1)), data.draw(st.integers(0, 7))
    frame[at] ^= 1 << bit
    out = _decode_or_status(bytes(frame))
    if isinstance(out, dict) and out["icrc_ok"]:
        assert _bit_ignored(bytes(frame), at, bit), f"byte {at} bit {bit} flipped and still decoded as good"


@FAST
@given(st.data())
def test_a_flipped_bit_is_caught_unless_nothing_covers_it(data: Any) -> None:
    _one_flip(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_a_flipped_bit_is_caught_unless_nothing_covers_it_long(data: Any) -> None:
    _one_flip(data)


def _mutated(data: Any) -> None:
    fields = data.draw(st.one_of(roce_fields(), pfc_fields()))
    frame = bytearray(codec.encode(fields))
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "set", "cut", "grow", "insert", "delete"]))
        at = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        if kind == "flip" and frame:
            frame[at] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set" and frame:
            frame[at] = data.draw(st.sampled_from([0, 0xFF, 0x80, 0x45, 0x11, 0x12, 0xB7]))
        elif kind == "cut":
            del frame[at:]
        elif kind == "grow":
            frame += data.draw(st.binary(min_size=1, max_size=64))
        elif kind == "insert":
            frame[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and frame:
            del frame[at:at + data.draw(st.integers(1, 8))]
    out = _decode_or_status(bytes(frame))
    cut = data.draw(st.integers(0, len(frame)))
    _decode_or_status(bytes(frame[:cut]), len(frame))  # a capture with a snaplen
    if isinstance(out, dict) and out["kind"] == codec.PKT_ROCE and out["icrc_ok"]:
        # whatever decodes as a good RoCE frame re-encodes to a frame that decodes to the same fields
        assert {k: v for k, v in codec.decode(codec.encode(out)).items()} == out


@FAST
@given(st.data())
def test_mutated_frames_decode_or_get_a_status(data: Any) -> None:
    _mutated(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_mutated_frames_decode_or_get_a_status_long(data: Any) -> None:
    _mutated(data)


# ---- encode -> decode round trip for every in-range value ----


def _round_trip(fields: dict[str, Any]) -> None:
    frame = codec.encode(fields)
    assert len(frame) == codec.frame_len(fields) >= 60
    d = codec.decode(frame)
    if fields.get("kind") == codec.PKT_PFC:
        assert (d["kind"], d["pfc_class_enable"], d["pfc_quanta"], d["src_mac"]) == (
            codec.PKT_PFC, fields["pfc_class_enable"], fields["pfc_quanta"], fields["src_mac"])
        return
    assert d["icrc_ok"] is True
    for name in BTH_AND_IP:
        assert d[name] == fields[name], name
    for name in ("payload", "dst_mac", "src_mac"):
        assert d[name] == fields[name], name
    assert codec.encode(d) == frame  # the decoded fields (extension headers included) say it all


@FAST
@given(st.one_of(roce_fields(), pfc_fields()))
def test_encode_decode_round_trip(fields: dict[str, Any]) -> None:
    _round_trip(fields)


@pytest.mark.slow
@LONG
@given(st.one_of(roce_fields(), pfc_fields()))
def test_encode_decode_round_trip_long(fields: dict[str, Any]) -> None:
    _round_trip(fields)


# ---- encode refuses every out-of-range value by name ----

HOSTILE = st.one_of(
    st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
    st.none(), st.text(max_size=3), st.binary(max_size=3),
)


def _hostile_field(data: Any) -> None:
    fields = data.draw(roce_fields())
    name = data.draw(st.sampled_from(sorted(WIRE_BITS)))
    value = data.draw(HOSTILE)
    fields[name] = value
    bits = WIRE_BITS[name]
    ok = (isinstance(value, int) and 0 <= value < (1 << bits)
          and (not isinstance(value, bool) or bits == 1))
    if name in ("src_ip", "dst_ip") and isinstance(value, str):
        ok = None  # a dotted-quad string is also an address: either outcome is fine
    try:
        frame = codec.encode(fields)
    except (TypeError, ValueError) as exc:
        assert ok is not True, f"{name}={value!r} refused: {exc}"
        assert name in str(exc)
        return
    assert ok is not False, f"{name}={value!r} was accepted"
    decoded = codec.decode(frame)
    if ok and name in BTH_AND_IP:
        assert decoded[name] == int(value)


@FAST
@given(st.data())
def test_encode_refuses_hostile_field_values_by_name(data: Any) -> None:
    _hostile_field(data)


@pytest.mark.slow
@LONG
@given(st.data())
def test_encode_refuses_hostile_field_values_by_name_long(data: Any) -> None:
    _hostile_field(data)
