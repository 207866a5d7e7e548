"""READ flows on the Ultra Ethernet transport: the reader sends one zero-length READ request carrying
the read length; the host holding the data answers with SES responses with data (csrc/uet/ses_read.c)."""

from __future__ import annotations

import struct

import numpy as np

import rdmasim
from rdmasim import fabric, topology, uet
from rdmasim.flows import describe_status

ETH, IP4, UDP = 14, 20, 8
PDS = ETH + IP4 + UDP


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def _read(t, size: int, **kw):
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size], "verb": ["READ"]}, transport="uet", **kw)
    t.sim.run_flows()
    return fs.results()


def test_uet_read_flow_delivers_its_bytes_in_one_request_rtt_plus_the_data() -> None:
    size = 1_000_003
    r = _read(_pair(), size)
    assert describe_status(int(r["status"][0])) == "ok"
    assert int(r["bytes_delivered"][0]) == size
    assert int(r["retx_pkts"][0]) == 0
    pkts = -(-size // 4096)
    data_ps = (size + pkts * 90) * 8 * 10**12 // 100_000_000_000  # UET overhead <= 90 B a packet
    rtt_ps = 2 * 1_000_000  # the request's way there (1 us) and the data's way back (1 us)
    fct = int(r["fct_ps"][0])
    assert rtt_ps + data_ps * 0.97 <= fct <= rtt_ps + data_ps + 3_000_000


def test_uet_read_moves_the_bytes_from_src_to_dst() -> None:
    t = _pair()
    r = _read(t, 64 * 4096)
    assert int(r["bytes_delivered"][0]) == 64 * 4096
    # the data went host 0 -> host 1; host 1 -> host 0 carried the request and the ACKs only
    ab, ba = t.link.direction(t.a).stats(), t.link.direction(t.b).stats()
    assert ab["delivered"] >= 64 and ba["delivered"] < 64


def test_lost_read_request_is_sent_again_after_the_timeout() -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.b), psn=0)  # the READ request (host 1 -> host 0)
    r = _read(t, 10 * 4096, uet={"rto": "50us"})
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 10 * 4096
    assert int(r["fct_ps"][0]) >= 50_000_000


def test_lost_read_response_is_recovered_by_sack() -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=5)  # a response with data (host 0 -> host 1)
    r = _read(t, 400 * 4096, uet={"reorder_packets": 8})
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 400 * 4096
    assert int(r["retx_pkts"][0]) == 1


def test_sprayed_reads_with_loss_complete() -> None:
    topo = rdmasim.leaf_spine(4, 4, 4, seed=3, switch_config={"path_select": "ecmp", "ecmp_seed": 3})
    spines = {s.name for s in topo.spines}
    for link in topo.sim.links:
        if {link.a.name, link.b.name} & spines:
            for end in (link.a, link.b):
                link.direction(end).set_loss(0.005)
    src = [h.name for row in topo.hosts_by_leaf for h in row]
    dst = [h.name for row in topo.hosts_by_leaf[1:] + topo.hosts_by_leaf[:1] for h in row]
    n = len(src)
    fs = topo.sim.add_flows({"src": src, "dst": dst, "size": [256 * 1024] * n, "verb": ["READ"] * n},
                            transport="uet", uet={"rto": "30us"})
    topo.sim.run_flows()
    topo.sim.run()  # the CLOSE exchanges
    r = fs.results()
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * n
    assert (r["bytes_delivered"] == 256 * 1024).all()
    assert int(r["retx_pkts"].sum()) > 0
    st = [uet.endpoint_stats(topo.sim, h) for h in range(n)]
    assert sum(s["pdcs_created"] for s in st) == n  # one PDC per READ: its responses return on it
    assert all(s["pdcs_live"] == 0 for s in st)


def test_read_places_the_bytes_at_the_reader() -> None:
    t = _pair()
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [50_000], "verb": ["READ"]}, transport="uet",
                         uet={"place_bytes": True})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 50_000
    src, dst = fs.uet_bytes(0)  # the data holder's bytes, the reader's buffer
    assert len(src) == 50_000 and src.count(0) < 1000 and dst == src


def test_read_frames_field_by_field(tmp_path) -> None:
    from rdmasim.capture import read_records

    t = _pair()
    path = tmp_path / "read.pcap"
    t.sim.capture(str(path))
    size = 3 * 4096 + 100
    _read(t, size)
    t.sim.close_capture()
    _, recs = read_records(path)
    reqs, data = [], []
    for rec in recs:
        f = bytes(rec.data)
        (w,) = struct.unpack_from("!H", f, PDS)
        typ, nh = w >> 11, (w >> 7) & 0xF
        if typ == 2 and nh == 3:
            reqs.append(f)
        elif typ == 2 and nh == 5:
            data.append(f)
    # the READ request: a RUD request with the standard SES header, no payload
    assert len(reqs) == 1
    f = reqs[0]
    (total,) = struct.unpack_from("!H", f, ETH + 2)
    assert total == IP4 + UDP + 12 + 44  # nothing after the SES header
    ses = PDS + 12
    assert f[ses] & 0x3F == 2  # UET_READ
    assert f[ses + 1] & 0x03 == 0x03  # SOM | EOM
    assert struct.unpack_from("!I", f, ses + 40)[0] == size  # request_length: the read length
    req_msg = struct.unpack_from("!H", f, ses + 2)[0]
    # the responses with data: RUD requests (the data holder's PSNs) with the 20-byte header
    assert len(data) == 4
    offs = []
    for f in data:
        (total,) = struct.unpack_from("!H", f, ETH + 2)
        rsp = PDS + 12
        plen = total - IP4 - UDP - 12 - 20
        op, rc, msg_id, _rsv = struct.unpack_from("!BBHB", f, rsp)
        assert op >> 6 == 0 and op & 0x3F == 2  # list 0, UET_RESPONSE_W_DATA
        assert rc & 0x3F == 1  # RC_OK
        read_msg, plen_word, mod_len, off = struct.unpack_from("!HHII", f, rsp + 8)
        assert read_msg == req_msg
        assert plen_word & 0x3FFF == plen and plen_word >> 14 == 0
        assert mod_len == size
        offs.append((off, plen))
    assert sorted(offs) == [(0, 4096), (4096, 4096), (8192, 4096), (12288, 100)]


def test_read_with_modes_without_a_pdc_is_refused() -> None:
    import pytest

    for opts in ({"mode": "rudi"}, {"mode": "uud"}, {"cc": "rccc"}):
        t = _pair()
        with pytest.raises(ValueError, match="READ with uet.mode"):
            t.sim.add_flows({"src": [0], "dst": [1], "size": [1000], "verb": ["READ"]}, transport="uet",
                            uet=opts)


def test_read_and_write_take_about_as_long() -> None:
    """A READ is a request's way there plus the data's way back; a WRITE the data's way there plus
    the ACK's way back."""
    rr = _read(_pair(), 1 << 20)
    t = _pair()
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [1 << 20]}, transport="uet")
    t.sim.run_flows()
    w = fs.results()
    assert abs(int(rr["fct_ps"][0]) - int(w["fct_ps"][0])) < 2_000_000
    assert np.all(rr["bytes_delivered"] == w["bytes_delivered"])


def test_read_beyond_the_data_holders_buffer_fails_with_a_remote_access_error() -> None:
    t = _pair()
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [50_000], "verb": ["READ"]}, transport="uet",
                         uet={"target_buffer": 10_000})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "IBV_WC_REM_ACCESS_ERR"
    assert int(r["bytes_delivered"][0]) == 0
