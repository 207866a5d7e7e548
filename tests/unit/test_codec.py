"""RoCEv2 / PFC wire codec: ICRC vectors, round trips, scapy and tshark cross-checks, fuzzing."""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdmasim import codec
from rdmasim.capture import read_records

# --- an independent statement of protocol.md 1.5 (which headers each opcode carries) ----------

RETH, AETH, IMM, IETH, ATOMIC, ATOMICACK, CNP = (
    "reth",
    "aeth",
    "imm",
    "ieth",
    "atomic",
    "atomicack",
    "cnp",
)
DETH = "deth"
FETH = "feth"  # FLUSH: placement type and selectivity level; the codec keeps the word in "imm"
# opcode -> (extension headers in wire order, carries payload)
OPCODES: dict[int, tuple[tuple[str, ...], bool]] = {
    0x00: ((), True),
    0x01: ((), True),
    0x02: ((), True),
    0x03: ((IMM,), True),
    0x04: ((), True),
    0x05: ((IMM,), True),
    0x06: ((RETH,), True),
    0x07: ((), True),
    0x08: ((), True),
    0x09: ((IMM,), True),
    0x0A: ((RETH,), True),
    0x0B: ((RETH, IMM), True),
    0x0C: ((RETH,), False),
    0x0D: ((AETH,), True),
    0x0E: ((), True),
    0x0F: ((AETH,), True),
    0x10: ((AETH,), True),
    0x11: ((AETH,), False),
    0x12: ((AETH, ATOMICACK), False),
    0x13: ((ATOMIC,), False),
    0x14: ((ATOMIC,), False),
    0x16: ((IETH,), True),
    0x17: ((IETH,), True),
    0x1C: ((FETH, RETH), False),  # FLUSH
    0x1D: ((RETH,), True),  # ATOMIC WRITE
    0x64: ((DETH,), True),
    0x65: ((DETH, IMM), True),
    0x81: ((CNP,), False),
}
EXT_SIZE = {DETH: 8, FETH: 4, RETH: 16, AETH: 4, IMM: 4, IETH: 4, ATOMIC: 28, ATOMICACK: 8, CNP: 16}
EXT_FIELDS = {
    DETH: ("deth_qkey", "src_qpn"),
    FETH: ("imm",),
    RETH: ("reth_va", "reth_rkey", "reth_len"),
    AETH: ("aeth_syndrome", "aeth_msn"),
    IMM: ("imm",),
    IETH: ("imm",),
    ATOMIC: ("atomic_va", "atomic_rkey", "atomic_swap_add", "atomic_compare"),
    ATOMICACK: ("atomic_orig",),
    CNP: (),
}
ROCE_FIELDS = (
    "dst_mac",
    "src_mac",
    "tos",
    "ttl",
    "ip_id",
    "src_ip",
    "dst_ip",
    "udp_sport",
    "opcode",
    "se",
    "mig",
    "fecn",
    "becn",
    "ackreq",
    "pkey",
    "dest_qpn",
    "psn",
)


def ext_bytes(p: dict) -> bytes:
    """Extension headers packed by the test itself (struct), for comparison with the C encoder."""
    out = b""
    for h in OPCODES[p["opcode"]][0]:
        if h == DETH:  # Q_Key, a reserved byte, the source QP
            out += struct.pack("!II", p["deth_qkey"], p["src_qpn"])
        elif h == RETH:
            out += struct.pack("!QII", p["reth_va"], p["reth_rkey"], p["reth_len"])
        elif h == AETH:
            out += struct.pack("!I", p["aeth_syndrome"] << 24 | p["aeth_msn"])
        elif h in (IMM, IETH, FETH):
            out += struct.pack("!I", p["imm"])
        elif h == ATOMIC:
            out += struct.pack(
                "!QIQQ",
                p["atomic_va"],
                p["atomic_rkey"],
                p["atomic_swap_add"],
                p["atomic_compare"],
            )
        elif h == ATOMICACK:
            out += struct.pack("!Q", p["atomic_orig"])
        elif h == CNP:
            out += bytes(16)
    return out


def u(bits: int) -> st.SearchStrategy[int]:
    return st.integers(0, (1 << bits) - 1)


@st.composite
def roce_packets(draw, opcodes=tuple(OPCODES), max_payload: int = 4096) -> dict:
    op = draw(st.sampled_from(opcodes))
    p = {
        "kind": codec.PKT_ROCE,
        "opcode": op,
        "dst_mac": draw(st.binary(min_size=6, max_size=6)),
        "src_mac": draw(st.binary(min_size=6, max_size=6)),
        "tos": draw(u(8)),
        "ttl": draw(u(8)),
        "ip_id": draw(u(16)),
        "src_ip": draw(u(32)),
        "dst_ip": draw(u(32)),
        "udp_sport": draw(u(16)),
        "se": draw(u(1)),
        "mig": draw(u(1)),
        "fecn": draw(u(1)),
        "becn": draw(u(1)),
        "ackreq": draw(u(1)),
        "pkey": draw(u(16)),
        "dest_qpn": draw(u(24)),
        "psn": draw(u(24)),
    }
    for h in OPCODES[op][0]:
        for name in EXT_FIELDS[h]:
            bits = {"aeth_syndrome": 8, "aeth_msn": 24, "src_qpn": 24}.get(name)
            if bits is None:
                bits = (
                    64
                    if name
                    in ("reth_va", "atomic_va", "atomic_swap_add", "atomic_compare", "atomic_orig")
                    else 32
                )
            p[name] = draw(u(bits))
    p["payload"] = draw(st.binary(max_size=max_payload)) if OPCODES[op][1] else b""
    return p


def full(p: dict) -> dict:
    """p with every extension field present (zero where the opcode does not carry it)."""
    q = dict(p)
    for names in EXT_FIELDS.values():
        for name in names:
            q.setdefault(name, 0)
    return q


@st.composite
def pfc_packets(draw) -> dict:
    return {
        "kind": codec.PKT_PFC,
        "src_mac": draw(st.binary(min_size=6, max_size=6)),
        "pfc_class_enable": draw(u(8)),
        "pfc_quanta": draw(st.lists(u(16), min_size=8, max_size=8)),
    }


# --- ICRC test vectors (protocol.md 1.4) ------------------------------------------------------

ETH = bytes.fromhex("0c42a10000010c42a10000020800")
CNP_VECTOR = (
    ETH
    + bytes.fromhex("45c2003c718c400040119161 0a001101 0a001201")
    + bytes.fromhex("000012b700280000")
    + bytes.fromhex("8100ffff40000118 00000000")
    + bytes(16)
)
CNP_ICRC_WIRE = bytes.fromhex("82fd002a")
UC_VECTOR = (
    ETH
    + bytes.fromhex("45010040047840004011b4d5 c0a80007 c0a80007")
    + bytes.fromhex("c00012b7002caca2")
    + bytes.fromhex("2460ffff000000d3 00cf1710")
    + bytes.fromhex("4630818be28935d90e9a95505401be885e500000")
)
UC_ICRC_WIRE = bytes.fromhex("78f353f3")
UDP_CSUM = slice(14 + 20 + 6, 14 + 20 + 8)


@pytest.mark.parametrize(
    ("frame", "wire"), [(CNP_VECTOR, CNP_ICRC_WIRE), (UC_VECTOR, UC_ICRC_WIRE)], ids=["cnp", "uc"]
)
def test_icrc_vectors(frame: bytes, wire: bytes) -> None:
    assert codec.icrc(frame) == int.from_bytes(wire, "little")
    d = codec.decode(frame + wire)
    assert d["icrc_ok"]
    again = codec.encode(d)
    # We always send UDP checksum 0 (the UC capture has one); it is masked out of the ICRC.
    expect = bytearray(frame + wire)
    expect[UDP_CSUM] = b"\x00\x00"
    assert again == bytes(expect)


def test_icrc_vector_fields() -> None:
    cnp = codec.decode(CNP_VECTOR + CNP_ICRC_WIRE)
    assert (cnp["opcode"], cnp["becn"], cnp["fecn"], cnp["dest_qpn"], cnp["tos"]) == (
        0x81,
        1,
        0,
        0x118,
        0xC2,
    )
    uc = codec.decode(UC_VECTOR + UC_ICRC_WIRE)
    assert (uc["opcode"], uc["mig"], uc["psn"], uc["dest_qpn"]) == (0x24, 1, 13571856, 0xD3)
    assert uc["payload_len"] == 18 and uc["payload"] == UC_VECTOR[-20:-2]
    assert codec.OPCODE_NAMES[uc["opcode"]] == "UC_SEND_ONLY"


def test_icrc_mismatch_still_decodes() -> None:
    bad = bytearray(CNP_VECTOR + CNP_ICRC_WIRE)
    bad[-1] ^= 1
    d = codec.decode(bytes(bad))
    assert not d["icrc_ok"] and d["opcode"] == 0x81
    # Variant fields are masked: changing ECN, TTL or FECN keeps the ICRC valid (a router that
    # changes ECN or TTL updates the IPv4 header checksum, which the ICRC does not cover).
    var = bytearray(CNP_VECTOR + CNP_ICRC_WIRE)
    var[14 + 1] = 0x03
    var[14 + 8] = 1
    var[14 + 28 + 4] = 0x80
    assert codec.decode(bytes(_with_ip_checksum(var)))["icrc_ok"]


def _with_ip_checksum(frame: bytes | bytearray) -> bytes:
    """``frame`` with its IPv4 header checksum (bytes 24..26) recomputed (RFC 1071)."""
    f = bytearray(frame)
    f[24:26] = b"\0\0"
    total = sum(int.from_bytes(f[i:i + 2], "big") for i in range(14, 34, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    f[24:26] = (~total & 0xFFFF).to_bytes(2, "big")
    return bytes(f)


def test_crc32_matches_zlib() -> None:
    for data in (b"", b"a", b"123456789", bytes(range(256)) * 3):
        assert codec.crc32(data) == zlib.crc32(data)
    assert codec.crc32(b"6789", codec.crc32(b"12345")) == zlib.crc32(b"123456789")
    assert ~codec.crc32(b"\xff" * 8) & 0xFFFFFFFF == 0xDEBB20E3


# --- structure and round trips -------------------------------------------------------------


def test_opcode_table() -> None:
    for op in range(256):
        if op in OPCODES:
            want = sum(EXT_SIZE[h] for h in OPCODES[op][0])
        elif 0x20 <= op <= 0x2B:
            want = sum(EXT_SIZE[h] for h in OPCODES[op - 0x20][0])
        else:
            want = -1
        assert codec.opcode_ext_bytes(op) == want, hex(op)
        if want >= 0:
            assert op in codec.OPCODE_NAMES
    assert codec.OPCODE_NAMES[0x0A] == "RDMA_WRITE_ONLY"


def test_defaults_and_layout() -> None:
    f = codec.encode({"opcode": 0x04})
    assert len(f) == 60  # 58 bytes padded to the Ethernet minimum
    d = codec.decode(f)
    assert (d["tos"], d["ttl"], d["pkey"], d["payload"], d["icrc_ok"]) == (2, 64, 0xFFFF, b"", True)
    assert f[12:14] == b"\x08\x00" and f[14] == 0x45 and f[20:22] == b"\x40\x00"
    assert f[36:38] == (4791).to_bytes(2, "big")
    w = codec.encode({"opcode": 0x0B, "imm": 0x01020304, "payload": b"abcde", "reth_len": 5})
    assert len(w) == codec.frame_len({"opcode": 0x0B, "payload_len": 5})
    bth = w[42:54]
    assert (bth[1] >> 4) & 3 == 3  # PadCnt = (-5) mod 4
    assert w[54 + 16 : 54 + 20] == bytes([1, 2, 3, 4])  # ImmDt big-endian after RETH
    assert w[74:79] == b"abcde" and w[79:82] == bytes(3)
    assert codec.decode(codec.encode({"opcode": 0x04, "payload_len": 7}))["payload"] == bytes(7)


def test_ip_checksum_valid() -> None:
    f = codec.encode({"opcode": 0x0A, "src_ip": "10.0.0.1", "dst_ip": 0x0A000002, "payload": b"x"})
    words = struct.unpack("!10H", f[14:34])
    s = sum(words)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    assert s == 0xFFFF


@pytest.mark.parametrize(
    ("fields", "status"),
    [
        ({"opcode": 0x15}, "BAD_OPCODE"),
        ({"opcode": 0x11, "payload": b"x"}, "BAD_FIELD"),
        # out of their header field's width: refused by name before the C encoder sees them
        ({"opcode": 0x04, "payload_len": 4097}, r"field payload_len = 4097 .*allowed \[0, 4096\]"),
        ({"opcode": 0x04, "psn": 1 << 24}, r"field psn = 16777216 .*allowed \[0, 16777215\]"),
        ({"opcode": 0x04, "dest_qpn": 1 << 24}, r"field dest_qpn = 16777216 .*allowed \[0, 16777215\]"),
        ({"kind": 1, "pfc_class_enable": 0x100}, r"field pfc_class_enable = 256 .*allowed \[0, 255\]"),
        ({"kind": 7}, r"field kind = 7 .*allowed \[0, 1\]"),
    ],
)
def test_encode_rejects(fields: dict, status: str) -> None:
    with pytest.raises(ValueError, match=status):
        codec.encode(fields)
    with pytest.raises(ValueError):
        codec.frame_len(fields)


def test_encode_rejects_bad_python_values() -> None:
    with pytest.raises(ValueError, match="unknown"):
        codec.encode({"opcod": 4})
    with pytest.raises(ValueError, match="tos"):
        codec.encode({"tos": 256})
    with pytest.raises(ValueError, match="payload_len"):
        codec.encode({"payload": b"ab", "payload_len": 3})


@pytest.mark.parametrize(
    ("frame", "status"),
    [
        (b"", "SHORT"),
        (bytes(13), "SHORT"),
        (bytes(12) + b"\x86\xdd" + bytes(60), "NOT_ROCE"),
        (bytes(12) + b"\x88\x08\x00\x01" + bytes(50), "NOT_ROCE"),  # 802.3x PAUSE
        (CNP_VECTOR[:30], "SHORT"),
        (CNP_VECTOR[:23] + b"\x06" + CNP_VECTOR[24:] + CNP_ICRC_WIRE, "NOT_ROCE"),  # TCP
        (CNP_VECTOR[:36] + b"\x12\xb8" + CNP_VECTOR[38:] + CNP_ICRC_WIRE, "NOT_ROCE"),
        (CNP_VECTOR[:42] + b"\x15" + CNP_VECTOR[43:] + CNP_ICRC_WIRE, "BAD_OPCODE"),
        (CNP_VECTOR[:38] + b"\x00\x29" + CNP_VECTOR[40:] + CNP_ICRC_WIRE, "BAD_LENGTH"),
        (CNP_VECTOR + CNP_ICRC_WIRE[:3], "SHORT"),
        (CNP_VECTOR[:14] + b"\x46" + CNP_VECTOR[15:] + CNP_ICRC_WIRE, "BAD_FIELD"),
    ],
)
def test_decode_rejects(frame: bytes, status: str) -> None:
    with pytest.raises(ValueError, match=status):
        codec.decode(frame)


def test_decode_pad_larger_than_payload() -> None:
    f = bytearray(codec.encode({"opcode": 0x04}))
    f[43] |= 0x30  # PadCnt 3 with no payload
    with pytest.raises(ValueError, match="BAD_LENGTH"):
        codec.decode(bytes(f))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(roce_packets())
def test_roce_round_trip(p: dict) -> None:
    frame = codec.encode(p)
    assert (
        len(frame)
        == codec.frame_len(p)
        == max(60, 58 + len(ext_bytes(p)) + len(p["payload"]) + (-len(p["payload"])) % 4)
    )
    d = codec.decode(frame)
    assert d["icrc_ok"]
    for k, v in full(p).items():
        assert d[k] == v, k
    assert d["payload_len"] == len(p["payload"])
    assert codec.encode(d) == frame


@settings(max_examples=100, deadline=None)
@given(pfc_packets())
def test_pfc_round_trip(p: dict) -> None:
    frame = codec.encode(p)
    assert len(frame) == 60 == codec.frame_len(p)
    assert frame[:6] == bytes.fromhex("0180c2000001") and frame[12:16] == bytes.fromhex("88080101")
    assert frame[34:] == bytes(26)
    d = codec.decode(frame)
    assert d["kind"] == codec.PKT_PFC
    for k, v in p.items():
        assert d[k] == v, k
    assert codec.encode(d) == frame


# --- scapy: an ICRC/BTH implementation we did not write -----------------------------------

scapy_all = pytest.importorskip("scapy.all")
scapy_roce = pytest.importorskip("scapy.contrib.roce")


def mac_str(mac: bytes) -> str:
    return ":".join(f"{b:02x}" for b in mac)


def scapy_build(p: dict) -> bytes:
    """Build p with scapy's layers; scapy computes the ICRC (and IP checksum) itself."""
    s = scapy_all
    n = len(p["payload"])
    pad = (-n) % 4
    pkt = (
        s.Ether(dst=mac_str(p["dst_mac"]), src=mac_str(p["src_mac"]))
        / s.IP(
            tos=p["tos"],
            ttl=p["ttl"],
            id=p["ip_id"],
            flags="DF",
            src=str(s.ltoa(p["src_ip"])),
            dst=str(s.ltoa(p["dst_ip"])),
        )
        / s.UDP(sport=p["udp_sport"], dport=4791, chksum=0)
        / scapy_roce.BTH(
            opcode=p["opcode"],
            solicited=p["se"],
            migreq=p["mig"],
            padcount=pad,
            pkey=p["pkey"],
            fecn=p["fecn"],
            becn=p["becn"],
            dqpn=p["dest_qpn"],
            ackreq=p["ackreq"],
            psn=p["psn"],
        )
        / s.Raw(ext_bytes(p) + p["payload"] + bytes(pad))
    )
    raw = s.raw(pkt)
    return raw + bytes(max(0, 60 - len(raw)))


@settings(max_examples=200, deadline=None)
@given(roce_packets(max_payload=600))
def test_matches_scapy_build(p: dict) -> None:
    assert codec.encode(p) == scapy_build(p)


@settings(max_examples=200, deadline=None)
@given(roce_packets(max_payload=600))
def test_scapy_dissects_ours(p: dict) -> None:
    frame = codec.encode(p)
    ip_end = 14 + (frame[16] << 8 | frame[17])
    # Without the Ethernet minimum padding: scapy would count it as BTH payload in the ICRC.
    pkt = scapy_all.Ether(frame[:ip_end])
    if scapy_roce.BTH not in pkt:  # scapy bound the UDP source port to another protocol
        pkt[scapy_all.UDP].decode_payload_as(scapy_roce.BTH)
    bth = pkt[scapy_roce.BTH]
    assert (bth.opcode, bth.dqpn, bth.psn, bth.pkey) == (
        p["opcode"],
        p["dest_qpn"],
        p["psn"],
        p["pkey"],
    )
    assert (bth.fecn, bth.becn, bth.ackreq, bth.solicited, bth.migreq) == (
        p["fecn"],
        p["becn"],
        p["ackreq"],
        p["se"],
        p["mig"],
    )
    assert bth.padcount == (-len(p["payload"])) % 4
    # scapy reads the ICRC field as a big-endian int of the LSB-first wire bytes.
    icrc_off = ip_end - 4
    assert struct.pack("!I", bth.icrc) == frame[icrc_off : icrc_off + 4]
    # And scapy recomputes the same ICRC from the dissected fields.
    bth.icrc = None
    assert scapy_all.raw(pkt)[: icrc_off + 4] == frame[: icrc_off + 4]


def test_scapy_cnp_helper() -> None:
    s = scapy_all
    pkt = (
        s.Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01")
        / s.IP(src="10.0.0.1", dst="10.0.0.2", tos=0xC2, flags="DF", id=7)
        / s.UDP(sport=0, dport=4791, chksum=0)
        / scapy_roce.cnp(0x1234)
    )
    raw = s.raw(pkt)
    d = codec.decode(raw)
    assert d["icrc_ok"] and d["opcode"] == 0x81 and d["dest_qpn"] == 0x1234 and d["becn"] == 1
    assert codec.encode(d) == raw


@settings(max_examples=100, deadline=None)
@given(roce_packets(max_payload=300), u(8), u(20), u(8))
def test_ipv6_icrc_matches_scapy(p: dict, tc: int, fl: int, hlim: int) -> None:
    # rs_icrc also handles IPv6 (encode/decode are IPv4 only): compare with scapy's IPv6 rule.
    s = scapy_all
    pad = (-len(p["payload"])) % 4
    pkt = (
        s.Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
        / s.IPv6(tc=tc, fl=fl, hlim=hlim, src="fe80::1", dst="fe80::2")
        / s.UDP(sport=p["udp_sport"], dport=4791, chksum=0)
        / scapy_roce.BTH(
            opcode=p["opcode"],
            padcount=pad,
            fecn=p["fecn"],
            becn=p["becn"],
            dqpn=p["dest_qpn"],
            psn=p["psn"],
        )
        / s.Raw(ext_bytes(p) + p["payload"] + bytes(pad))
    )
    raw = s.raw(pkt)
    assert codec.icrc(raw[:-4]).to_bytes(4, "little") == raw[-4:]


# --- tshark cross-check ----------------------------------------------------------------------

TSHARK_FIELDS = (
    "frame.number",
    "_ws.malformed",
    "_ws.expert",
    "eth.type",
    "infiniband.bth.opcode",
    "infiniband.bth.psn",
    "infiniband.bth.destqp",
    "infiniband.bth.padcnt",
    "infiniband.bth.p_key",
    "infiniband.reth.va",
    "infiniband.reth.r_key",
    "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome",
    "infiniband.aeth.msn",
    "infiniband.immdt",
    "infiniband.ieth",
    "infiniband.deth.q_key",
    "infiniband.deth.srcqp",
    "infiniband.atomiceth.swapdt",
    "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt",
    "macc.opcode",
    "macc.cbfc.enbv",
    *(f"macc.cbfc.pause_time.c{i}" for i in range(8)),
)


def tshark_pcap_packets() -> list[dict]:
    pkts = []
    for i, op in enumerate(OPCODES):
        n = 0 if not OPCODES[op][1] else (i * 37) % 300
        p = {
            "opcode": op,
            "psn": 0x100000 + i * 977,
            "dest_qpn": 0x11 + i * 4099,
            "src_ip": 0x0A000001,
            "dst_ip": 0x0A000002,
            "udp_sport": 0xC000 + i,
            "dst_mac": bytes.fromhex("020000000002"),
            "src_mac": bytes.fromhex("020000000001"),
            "payload": bytes((j * 7 + i) & 0xFF for j in range(n)),
            "reth_va": 0x1000 * (i + 1),
            "reth_rkey": 0x1234 + i,
            "reth_len": n + 4096,
            "aeth_syndrome": 0x1F,
            "aeth_msn": 5 + i,
            "imm": 0xDEADBE00 + i,
            "atomic_va": 0x2000,
            "atomic_rkey": 0x99,
            "atomic_swap_add": 3 + i,
            "atomic_compare": 4 + i,
            "atomic_orig": 77 + i,
            "deth_qkey": 0x80010000 + i,
            "src_qpn": 0x12 + i * 3,
        }
        if op == 0x81:
            p["becn"] = 1
        pkts.append(
            {
                k: v
                for k, v in p.items()
                if k in ROCE_FIELDS
                or k == "payload"
                or any(k in EXT_FIELDS[h] for h in OPCODES[op][0])
            }
        )
    pkts.append(
        {
            "kind": 1,
            "src_mac": bytes.fromhex("020000000001"),
            "pfc_class_enable": 0x28,
            "pfc_quanta": [0, 0, 0, 0xFFFF, 0, 100, 0, 0],
        }
    )
    return pkts


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not on PATH")
def test_tshark_decodes_our_pcap(tmp_path) -> None:
    pkts = tshark_pcap_packets()
    path = tmp_path / "all_opcodes.pcap"
    with codec.PcapWriter(path) as w:
        for i, p in enumerate(pkts):
            w.write(p, i * 1_234_567)  # 1.234567 us apart, in ps
    assert w.frames == len(pkts)
    cmd = ["tshark", "-r", str(path), "-T", "fields", "-E", "occurrence=f"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    rows = [dict(zip(TSHARK_FIELDS, line.split("\t"), strict=True)) for line in out.splitlines()]
    assert len(rows) == len(pkts)

    for row, p in zip(rows, pkts, strict=True):
        assert row["_ws.malformed"] == "" and row["_ws.expert"] == "", row
        if p.get("kind") == 1:
            assert int(row["macc.opcode"], 0) == 0x0101
            assert int(row["macc.cbfc.enbv"], 0) == p["pfc_class_enable"]
            got = [int(row[f"macc.cbfc.pause_time.c{i}"]) for i in range(8)]
            assert got == p["pfc_quanta"]
            continue
        op = p["opcode"]
        assert int(row["infiniband.bth.opcode"]) == op
        assert int(row["infiniband.bth.psn"]) == p["psn"]
        assert int(row["infiniband.bth.destqp"], 0) == p["dest_qpn"]
        assert int(row["infiniband.bth.padcnt"]) == (-len(p["payload"])) % 4
        hdrs = OPCODES[op][0]
        if op in (0x81, 0x1C, 0x1D):
            # tshark 4.0 shows CNP, FLUSH and ATOMIC WRITE as "Unknown (n)" + vendor data: nothing
            # more to compare (their byte layout is checked against struct packing and scapy above)
            continue
        if RETH in hdrs:
            assert int(row["infiniband.reth.va"], 0) == p["reth_va"]
            assert int(row["infiniband.reth.r_key"], 0) == p["reth_rkey"]
            assert int(row["infiniband.reth.dmalen"]) == p["reth_len"]
        if AETH in hdrs:
            assert int(row["infiniband.aeth.syndrome"], 0) == p["aeth_syndrome"]
            assert int(row["infiniband.aeth.msn"]) == p["aeth_msn"]
        if IMM in hdrs:
            assert row["infiniband.immdt"].replace(":", "") == f"{p['imm']:08x}"
        if IETH in hdrs:
            assert row["infiniband.ieth"].replace(":", "") == f"{p['imm']:08x}"
        if ATOMIC in hdrs:
            assert int(row["infiniband.atomiceth.swapdt"]) == p["atomic_swap_add"]
            assert int(row["infiniband.atomiceth.cmpdt"]) == p["atomic_compare"]
        if ATOMICACK in hdrs:
            assert int(row["infiniband.atomicacketh.origremdt"]) == p["atomic_orig"]
        if DETH in hdrs:
            assert int(row["infiniband.deth.q_key"], 0) == p["deth_qkey"]
            assert int(row["infiniband.deth.srcqp"], 0) == p["src_qpn"]


def test_pcap_file_format(tmp_path) -> None:
    path = tmp_path / "t.pcap"
    frame = codec.encode({"opcode": 0x11})
    with codec.PcapWriter(path) as w:
        w.write({"opcode": 0x11}, 3_000_000_123_456)  # 3 s + 123 ns (+456 ps truncated)
        with pytest.raises(ValueError):
            w.write({"opcode": 0x15}, 0)
    w.close()  # safe twice
    data = path.read_bytes()
    magic, vmaj, vmin, _, _, snap, link = struct.unpack("<IHHiIII", data[:24])
    assert (magic, vmaj, vmin, snap, link) == (0xA1B23C4D, 2, 4, 65535, 1)
    assert struct.unpack("<IIII", data[24:40]) == (3, 123, len(frame), len(frame))
    assert data[40:] == frame
    with pytest.raises(ValueError):
        w.write({"opcode": 0x11}, 0)
    with pytest.raises(OSError):
        codec.PcapWriter(tmp_path / "no" / "such" / "dir.pcap")


def write_pcap(path, pkts: list[dict], snaplen: int = 0) -> None:
    with codec.PcapWriter(path, snaplen) as w:
        for i, p in enumerate(pkts):
            w.write(p, i * 1_234_567)


@pytest.mark.parametrize("snaplen", [1, 14, 60, 82, 128, 1000, 65535])
def test_pcap_snaplen_keeps_each_frames_prefix(tmp_path, snaplen: int) -> None:
    """A snaplen capture stores exactly the first snaplen bytes of what a whole capture stores
    (no ICRC computed for bytes left out, yet the same bytes), with the frame's real length."""
    pkts = tshark_pcap_packets()
    write_pcap(tmp_path / "full.pcap", pkts)
    write_pcap(tmp_path / "snap.pcap", pkts, snaplen)
    snap_full, full = read_records(tmp_path / "full.pcap")
    snap_cut, cut = read_records(tmp_path / "snap.pcap")
    assert (snap_full, snap_cut) == (65535, snaplen)
    assert len(full) == len(cut) == len(pkts)
    for f, c in zip(full, cut, strict=True):
        assert c.t_ns == f.t_ns and c.orig_len == f.orig_len == len(f.data)
        assert c.data == f.data[:snaplen]


def test_pcap_snaplen_out_of_range(tmp_path) -> None:
    for bad in (-1, 65536):
        with pytest.raises(ValueError, match="allowed 1..65535"):
            codec.PcapWriter(tmp_path / "x.pcap", bad)


def test_decode_a_frame_cut_short() -> None:
    """The start of a frame (a snaplen record) decodes its headers like the whole frame; the
    payload is what was captured, payload_len the frame's, the ICRC unchecked."""
    for p in tshark_pcap_packets():
        whole = codec.encode(p)
        full = codec.decode(whole)
        assert full["truncated"] is False and full["icrc_ok"] is True
        if p.get("kind") == 1:  # a PFC frame cut short has nothing to decode
            with pytest.raises(ValueError, match="SHORT"):
                codec.decode(whole[:40], len(whole))
            continue
        hdrs = 54 + codec.opcode_ext_bytes(p["opcode"])
        for cut in sorted({hdrs, hdrs + 1, hdrs + 100, len(whole) - 1}):
            if cut >= len(whole):
                continue
            got = codec.decode(whole[:cut], len(whole))
            assert got["truncated"] is True and got["icrc_ok"] is None
            assert got["payload"] == full["payload"][:max(0, cut - hdrs)]
            assert {k: v for k, v in got.items() if k not in ("payload", "icrc_ok", "truncated")} == \
                {k: v for k, v in full.items() if k not in ("payload", "icrc_ok", "truncated")}
        with pytest.raises(ValueError, match="SHORT"):
            codec.decode(whole[:hdrs - 1], len(whole))
        assert codec.decode(whole, len(whole)) == full  # orig_len == len: an ordinary decode


@pytest.mark.tshark
@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not on PATH")
def test_tshark_decodes_headers_of_a_snaplen_capture(tmp_path) -> None:
    """128 bytes hold every RoCEv2 header: tshark reads the same header fields from the truncated
    capture as from the whole one (it flags the frames as malformed: its InfiniBand dissector looks
    for the ICRC at the frame's end, which the snaplen left out)."""
    pkts = tshark_pcap_packets()
    fields = [f for f in TSHARK_FIELDS if not f.startswith("_ws.")] + ["frame.len"]
    rows = {}
    for name, snap in (("full", 0), ("snap", 128)):
        path = tmp_path / f"{name}.pcap"
        write_pcap(path, pkts, snap)
        cmd = ["tshark", "-r", str(path), "-T", "fields", "-E", "occurrence=f"]
        for f in fields:
            cmd += ["-e", f]
        rows[name] = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout
    assert rows["snap"] == rows["full"] and len(rows["full"].splitlines()) == len(pkts)


# --- robustness: decode never crashes ---------------------------------------------------------


def decode_or_error(frame: bytes) -> None:
    try:
        d = codec.decode(frame)
    except ValueError:
        return
    assert isinstance(d, dict)
    assert len(d["payload"]) == d["payload_len"] <= 4096


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    decode_or_error(data)


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_behind_roce_headers(tail: bytes) -> None:
    # Arbitrary bytes after valid-looking Ethernet/IPv4 headers reach the deeper checks.
    decode_or_error(CNP_VECTOR[:14] + b"\x45" + tail)
    decode_or_error(CNP_VECTOR[:34] + tail)
    decode_or_error(CNP_VECTOR[:42] + tail)
    decode_or_error(bytes(12) + b"\x88\x08\x01\x01" + tail)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(roce_packets(max_payload=64), pfc_packets()),
    st.lists(st.tuples(st.integers(0, 10_000), u(8)), min_size=1, max_size=8),
)
def test_fuzz_mutated_frames(p: dict, edits: list[tuple[int, int]]) -> None:
    frame = bytearray(codec.encode(p))
    for pos, val in edits:
        frame[pos % len(frame)] = val
    decode_or_error(bytes(frame))


@pytest.mark.parametrize("op", [0x0B, 0x12, 0x13, 0x81, 0x04])
def test_every_prefix(op: int) -> None:
    p = {"opcode": op, "payload": b"0123456789"} if OPCODES[op][1] else {"opcode": op}
    frame = codec.encode(p)
    for n in range(len(frame)):
        decode_or_error(frame[:n])
    ip_end = 14 + (frame[16] << 8 | frame[17])
    for n in range(ip_end):
        with pytest.raises(ValueError):
            codec.decode(frame[:n])
    assert codec.decode(frame[:ip_end])["icrc_ok"]
    pfc = codec.encode({"kind": 1, "pfc_class_enable": 1})
    for n in range(len(pfc)):
        decode_or_error(pfc[:n])


def test_crc32_matches_zlib_across_the_eight_byte_steps() -> None:
    import zlib

    import numpy as np

    from rdmasim import codec

    rng = np.random.default_rng(5)
    for n in list(range(0, 40)) + [1023, 1024, 1025, 4096 + 3]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert codec.crc32(data) == zlib.crc32(data), n


# ---- hostile frames and fields: a distinct status for each malformation, no silent truncation ----


def _roce_frame(**fields: object) -> bytes:
    return codec.encode({"opcode": 0x04, "payload": b"abcd", "psn": 5, **fields})


def _decode_status(frame: bytes) -> str:
    with pytest.raises(codec.CodecError) as info:
        codec.decode(frame)
    assert isinstance(info.value, ValueError)
    assert codec.STATUS_NAMES[info.value.code] == info.value.status
    assert f"RS_CODEC_ERR_{info.value.status}" in str(info.value)
    return info.value.status


def test_decode_refuses_a_bad_ipv4_header_checksum() -> None:
    good = _roce_frame()
    bad = bytearray(good)
    bad[24] ^= 0x01  # the checksum itself
    assert _decode_status(bytes(bad)) == "BAD_IP_CSUM"
    ttl = bytearray(good)
    ttl[22] = 7  # TTL is not covered by the ICRC: only the header checksum catches this
    assert _decode_status(bytes(ttl)) == "BAD_IP_CSUM"
    assert codec.decode(_with_ip_checksum(ttl))["ttl"] == 7


@pytest.mark.parametrize("flags_frag", [0x2000, 0x0001, 0x4000 | 0x0B9F, 0x2000 | 0x0010])
def test_decode_refuses_ipv4_fragments(flags_frag: int) -> None:
    f = bytearray(_roce_frame())
    f[20:22] = flags_frag.to_bytes(2, "big")
    assert _decode_status(_with_ip_checksum(f)) == "IP_FRAGMENT"


def test_decode_refuses_pfc_to_a_unicast_address_and_runts() -> None:
    pfc = codec.encode({"kind": codec.PKT_PFC, "src_mac": b"\x02\0\0\0\0\x01", "pfc_class_enable": 8,
                        "pfc_quanta": [0, 0, 0, 0xFFFF, 0, 0, 0, 0]})
    assert codec.decode(pfc)["pfc_quanta"][3] == 0xFFFF
    unicast = b"\x02\x00\x00\x00\x00\x07" + pfc[6:]
    assert _decode_status(unicast) == "PFC_DST"
    other_group = b"\x01\x80\xc2\x00\x00\x02" + pfc[6:]
    assert _decode_status(other_group) == "PFC_DST"
    for n in (34, 40, 59):  # all of the PFC body is there, but a MAC drops frames under 60 bytes
        assert _decode_status(pfc[:n]) == "RUNT"
    assert _decode_status(pfc[:20]) == "RUNT"


@pytest.mark.parametrize(
    ("fields", "exc", "match"),
    [
        ({"psn": 7.9}, TypeError, r"field psn must be an integer in \[0, 16777215\]"),
        ({"psn": 7.0}, TypeError, r"field psn"),
        ({"se": 2}, ValueError, r"field se = 2 .*allowed \[0, 1\]"),
        ({"ackreq": -1}, ValueError, r"field ackreq = -1 .*allowed \[0, 1\]"),
        ({"fecn": 1.0}, TypeError, r"field fecn"),
        ({"tos": 256}, ValueError, r"field tos = 256 .*allowed \[0, 255\]"),
        ({"pkey": 1 << 16}, ValueError, r"field pkey = 65536 .*allowed \[0, 65535\]"),
        ({"aeth_msn": 1 << 24, "opcode": 0x11, "payload": b""}, ValueError, r"field aeth_msn"),
        ({"reth_va": 1 << 64}, ValueError, r"field reth_va = 18446744073709551616"),
        ({"imm": "5"}, TypeError, r"field imm"),
        ({"udp_sport": None}, TypeError, r"field udp_sport"),
        ({"src_mac": 6}, TypeError, r"field src_mac must be 6 bytes"),
        ({"payload": 5}, TypeError, r"field payload must be bytes"),
        ({"kind": 1, "pfc_quanta": [0, 0, 0, 1.5, 0, 0, 0, 0]}, TypeError, r"field pfc_quanta\[3\]"),
    ],
)
def test_encode_refuses_fields_outside_their_header_width(fields: dict, exc: type, match: str) -> None:
    with pytest.raises(exc, match=match):
        _roce_frame(**fields)


def test_encode_takes_flags_as_bools_and_decodes_them_back() -> None:
    d = codec.decode(_roce_frame(se=True, ackreq=False, becn=1))
    assert (d["se"], d["ackreq"], d["becn"]) == (1, 0, 1)
