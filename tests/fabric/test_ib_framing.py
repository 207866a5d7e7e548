"""An InfiniBand fabric (``Simulator(link_layer="ib")``, docs/infiniband.md): frame length and
serialisation (LRH + BTH + ext + payload + pad + ICRC + VCRC, plus the SDP/EGP delimiters), the
capture (LINKTYPE_INFINIBAND and ERF) read back by rdmasim and by Wireshark, LIDs, and no PFC."""

from __future__ import annotations

import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from rdmasim import Simulator, codec, topology
from rdmasim.capture import read_pcap, read_records
from rdmasim.errors import PyverbsRDMAError

TSHARK = shutil.which("tshark")
RATE = 100_000_000_000
MTU = 4096
# one data packet of a WRITE after the first: LRH 8 + BTH 12 + payload + ICRC 4 + VCRC 2 on IB, plus
# the start and end delimiters (one symbol each); Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload
# + ICRC 4 + FCS 4 + preamble/SFD 8 + inter-frame gap 12 on RoCE
IB_WIRE = 8 + 12 + MTU + 4 + 2 + 2
ROCE_WIRE = 14 + 20 + 8 + 12 + MTU + 4 + 4 + 8 + 12


def _write(link_layer: str, n_pkts: int, capture: Path | None = None, ib_format: str = "infiniband"):
    sim = Simulator(link_layer=link_layer)
    a, b = sim.add_host("a"), sim.add_host("b")
    link = sim.connect(a, b, rate=RATE, delay="1us", mtu=MTU)
    if capture is not None:
        sim.capture(capture, ib_format=ib_format)
    fs = sim.add_flows({"src": [0], "dst": [1], "size": [n_pkts * MTU], "verb": ["WRITE"]})
    sim.run_flows()
    if capture is not None:
        sim.close_capture()
    r = fs.results()
    assert r["bytes_delivered"][0] == n_pkts * MTU
    return sim, link, int(r["finish_ps"][0])


@pytest.mark.parametrize(("link_layer", "wire"), [("ib", IB_WIRE), ("roce", ROCE_WIRE)])
def test_one_long_write_runs_at_line_rate_less_exactly_the_wire_overhead(link_layer: str, wire: int) -> None:
    """Each further MTU packet of one WRITE costs exactly its wire time: goodput = rate x
    payload / (payload + overhead), to the picosecond."""
    _, _, t1 = _write(link_layer, 100)
    _, link, t2 = _write(link_layer, 300)
    per_pkt_ps = Fraction(t2 - t1, 200)
    assert per_pkt_ps == Fraction(wire * 8 * 10**12, RATE)
    goodput = Fraction(200 * MTU * 8 * 10**12, t2 - t1)
    assert goodput == Fraction(RATE * MTU, wire)
    # the link's busy time is the sum of the frames' wire times (frame + delimiters on IB)
    st = link.ab.stats()
    extra = 2 if link_layer == "ib" else 24
    assert st["busy_ps"] == (st["bytes"] + extra * st["frames"]) * 8 * 10**12 // RATE


def test_ib_capture_reads_back_with_lids_and_good_crcs(tmp_path: Path) -> None:
    sim, link, _ = _write("ib", 3, tmp_path / "ib.pcap")
    a, b = sim.hosts["a"], sim.hosts["b"]
    assert (a.lid, b.lid) == (1, 2) and a.ib_gid == "fe80::ff:fe00:1"
    _, recs = read_records(tmp_path / "ib.pcap")
    assert Path(tmp_path / "ib.pcap").read_bytes()[20:24] == (247).to_bytes(4, "little")
    frames = [fr.fields for fr in read_pcap(tmp_path / "ib.pcap")]
    data = [f for f in frames if f["ib_slid"] == a.lid]
    acks = [f for f in frames if f["ib_slid"] == b.lid]
    assert [f["opcode"] for f in data] == [0x06, 0x07, 0x08] and acks and acks[-1]["opcode"] == 0x11
    assert all(f["icrc_ok"] and f["vcrc_ok"] and f["link_layer"] == codec.LL_IB for f in frames)
    assert all(f["ib_dlid"] == b.lid for f in data) and all(f["ib_dlid"] == a.lid for f in acks)
    assert [f["psn"] for f in data] == [0, 1, 2]
    assert {(f["ib_sl"], f["ib_vl"]) for f in frames} == {(3, 3)}  # default class 3, SL2VL identity
    assert [len(r.data) for r in recs[:3]] == [8 + 12 + 16 + MTU + 6, 8 + 12 + MTU + 6, 8 + 12 + MTU + 6]
    assert link.ab.stats()["bytes"] == sum(len(r.data) for r in recs if r.data[6:8] == b"\x00\x01")


def _vcrc(data: bytes) -> int:
    reg = 0xFFFF  # CRC-16 0x100B, bit 0 of each byte first, preset ones, complemented (IBA 7.8.2)
    for byte in data:
        for i in range(8):
            fb = ((byte >> i) & 1) ^ (reg >> 15)
            reg = ((reg << 1) & 0xFFFF) ^ (0x100B if fb else 0)
    return int(f"{~reg & 0xFFFF:016b}"[::-1], 2)


def _icrc(pkt: bytes) -> int:
    import zlib
    m = bytearray(pkt)
    m[0] |= 0xF0
    m[8 + 4] = 0xFF
    return zlib.crc32(bytes(m))


FIELDS = ("frame.len", "infiniband.lrh.vl", "infiniband.lrh.sl", "infiniband.lrh.lnh", "infiniband.lrh.dlid",
          "infiniband.lrh.slid", "infiniband.lrh.pktlen", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.bth.psn", "infiniband.bth.padcnt", "infiniband.invariant.crc", "infiniband.variant.crc")


def _tshark(path: Path, *extra: str) -> list[list[str]]:
    args = [TSHARK, "-n", "-r", str(path), *extra, "-T", "fields"] + [x for f in FIELDS for x in ("-e", f)]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def _check_wireshark_decode(rows: list[list[str]], pkts: list[bytes]) -> None:
    assert len(rows) == len(pkts)
    for row, pkt in zip(rows, pkts, strict=True):
        f = codec.decode_ib(pkt)
        vals = [int(v, 0) for v in row]
        length, vl, sl, lnh, dlid, slid, pktlen, opcode, qp, psn, pad, icrc, vcrc = vals
        assert (length, vl, sl, lnh) == (len(pkt), f["ib_vl"], f["ib_sl"], 2)
        assert (dlid, slid) == (f["ib_dlid"], f["ib_slid"])
        assert (opcode, qp, psn) == (f["opcode"], f["dest_qpn"], f["psn"])
        assert pktlen * 4 == len(pkt) - 2 and pad == -f["payload_len"] % 4
        # Wireshark shows the CRC fields as the wire bytes read big-endian
        assert icrc.to_bytes(4, "big") == pkt[-6:-2] == _icrc(pkt[:-6]).to_bytes(4, "little")
        assert vcrc.to_bytes(2, "big") == pkt[-2:] == _vcrc(pkt[:-2]).to_bytes(2, "little")


def _no_malformed(path: Path, *extra: str) -> str:
    out = subprocess.run([TSHARK, "-n", "-r", str(path), *extra, "-V"], capture_output=True, text=True,
                         check=True).stdout
    assert "Malformed" not in out and "Exception" not in out
    return out


@pytest.mark.tshark
@pytest.mark.skipif(TSHARK is None, reason="needs tshark")
def test_wireshark_decodes_the_erf_capture_as_sent(tmp_path: Path) -> None:
    path = tmp_path / "ib.erf.pcap"
    _write("ib", 3, path, ib_format="erf")
    assert path.read_bytes()[20:24] == (197).to_bytes(4, "little")
    pkts = [r.data[16:] for r in read_records(path)[1]]  # after the 16-byte ERF record header
    _check_wireshark_decode(_tshark(path), pkts)
    out = _no_malformed(path)
    assert "Type: INFINIBAND (21)" in out and "RDMA WRITE First" in out and "Acknowledge" in out


@pytest.mark.tshark
@pytest.mark.skipif(TSHARK is None, reason="needs tshark")
def test_wireshark_decodes_the_linktype_infiniband_bytes(tmp_path: Path) -> None:
    """Wireshark has no dissector bound to link type 247, so the same records are read under a user
    link type (147) mapped to its InfiniBand dissector: the bytes are exactly the 247 file's."""
    path = tmp_path / "ib.pcap"
    _write("ib", 3, path)
    user = tmp_path / "ib147.pcap"
    data = bytearray(path.read_bytes())
    data[20:24] = (147).to_bytes(4, "little")
    user.write_bytes(bytes(data))
    uat = ["-o", 'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""']
    _check_wireshark_decode(_tshark(user, *uat), [r.data for r in read_records(path)[1]])
    _no_malformed(user, *uat)


def _incast(link_layer: str):
    sim = Simulator(seed=5, link_layer=link_layer)
    topo = topology.incast(8, rate="100Gbps", delay="1us", mtu=1024, sim=sim,
                           switch_config={"buffer": "1MB", "headroom": "64KB"})
    fs = sim.add_flows({"src": np.arange(8), "dst": np.full(8, 8), "size": np.full(8, 256 * 1024)})
    sim.run_flows()
    return topo, fs.results()


def test_an_ib_fabric_sends_no_pfc_and_its_switch_drops_instead() -> None:
    """IB has no PFC: the default lossless class pauses on RoCE; on IB (until a credit module
    provides link-level flow control) the same incast overflows the buffer and recovers by
    Go-Back-N, and no pause frame is ever sent."""
    roce, r_roce = _incast("roce")
    ib, r_ib = _incast("ib")
    t_roce, t_ib = roce.switch.totals(), ib.switch.totals()
    assert t_roce["pfc_xoff_sent"] > 0 and t_roce["drops"] == 0
    assert t_ib["pfc_xoff_sent"] == 0 and t_ib["pfc_xon_sent"] == 0 and t_ib["drops"] > 0
    assert all(h.pause_stats()["pfc_rx_xoff"] == 0 for h in ib.senders)
    assert (r_ib["bytes_delivered"] == 256 * 1024).all() and r_ib["retx_pkts"].sum() > 0


def test_bad_link_layer_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="link_layer 'eth'.*'roce', 'ib'"):
        Simulator(link_layer="eth")
    sim = Simulator()
    with pytest.raises(ValueError, match="ib_format='erf' needs an InfiniBand fabric"):
        sim.capture("/dev/null", ib_format="erf")
    with pytest.raises(ValueError, match="ib_format='pcapng'"):
        Simulator(link_layer="ib").capture("/dev/null", ib_format="pcapng")
    core = Simulator()
    core.add_host()
    with pytest.raises(PyverbsRDMAError, match="before any host"):
        core._core.set_link_layer(1)


def test_pyverbs_port_attr_reports_the_ib_link_layer_and_lid() -> None:
    from rdmasim.pyverbs._devices import IBV_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_INFINIBAND, port_attr

    for layer, want in (("roce", IBV_LINK_LAYER_ETHERNET), ("ib", IBV_LINK_LAYER_INFINIBAND)):
        sim = Simulator(link_layer=layer)
        a, b = sim.add_host("a"), sim.add_host("b")
        sim.connect(a, b)
        attr = port_attr(b)
        assert attr.link_layer == want and attr.lid == (2 if layer == "ib" else 0)
