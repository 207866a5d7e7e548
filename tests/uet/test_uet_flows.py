"""Bulk flows on the Ultra Ethernet transport (csrc/uet): PDCs with RUD, SACK and retransmission."""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim import fabric, topology
from rdmasim.flows import describe_status


def _pair(**kw: object):
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096, **kw)


def test_two_host_uet_flow_delivers_exactly_its_bytes() -> None:
    t = _pair()
    size = 1_000_003  # not a multiple of the MTU: the last packet is short
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size]}, transport="uet")
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok"
    assert int(r["bytes_delivered"][0]) == size
    assert int(r["retx_pkts"][0]) == 0 and int(r["nack_pkts"][0]) == 0
    pkts = -(-size // 4096)
    # every data packet crossed the link once; the ACKs came back on the other direction
    ab = t.link.ab.stats() if hasattr(t.link, "ab") else None
    if ab is not None:
        assert ab["delivered"] == pkts
    # at least the bytes at line rate (with UET's 98 header bytes per packet)
    assert int(r["fct_ps"][0]) >= (size + pkts * 98) * 8 * 10**12 // 100_000_000_000


def test_uet_and_roce_flows_share_a_nic() -> None:
    t = _pair()
    roce = t.sim.add_flows({"src": [0], "dst": [1], "size": [2_000_000]})
    uet = t.sim.add_flows({"src": [0], "dst": [1], "size": [2_000_000]}, transport="uet")
    t.sim.run_flows()
    for fs in (roce, uet):
        r = fs.results()
        assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 2_000_000
    # they shared the wire: each took longer than it would alone
    alone = _pair()
    solo = alone.sim.add_flows({"src": [0], "dst": [1], "size": [2_000_000]}, transport="uet")
    alone.sim.run_flows()
    assert int(uet.results()["fct_ps"][0]) > int(solo.results()["fct_ps"][0]) * 1.5


def test_dropped_packet_is_recovered_by_a_sack_retransmission() -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=5)  # the sixth data packet, first transmission
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [400 * 4096]}, transport="uet",
                         uet={"reorder_packets": 8})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok"
    assert int(r["bytes_delivered"][0]) == 400 * 4096
    assert int(r["retx_pkts"][0]) == 1  # only the lost PSN went again
    # found by the SACK gap: it costs far less than the retransmit timer (100 us) would have
    clean = _pair()
    ref = clean.sim.add_flows({"src": [0], "dst": [1], "size": [400 * 4096]}, transport="uet")
    clean.sim.run_flows()
    assert int(r["fct_ps"][0]) - int(ref.results()["fct_ps"][0]) < 10_000_000


def test_lost_last_packet_is_recovered_by_the_timeout() -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=9)  # the last of 10: no later PSN reveals the gap
    # ack_every 1: PSN 8 is acknowledged before the timer fires (with coalescing, a PSN still
    # unacknowledged then goes again too)
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [10 * 4096]}, transport="uet",
                         uet={"rto": "50us", "ack_every": 1})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["retx_pkts"][0]) == 1
    assert int(r["fct_ps"][0]) >= 50_000_000


@pytest.mark.parametrize("kw, match", [
    ({"uet": {"window": 10}}, "uet.window"),
    ({"uet": {"bogus": 1}}, "unknown option"),
    ({"uet": {"mode": "bogus"}}, "mode"),
    ({"transport": "roce", "uet": {}}, "need transport='uet'"),
    ({"transport": "uet", "recovery": "irn"}, "recovery"),
    ({"transport": "tcp"}, "transport"),
])
def test_bad_uet_options_are_refused_naming_the_key(kw: dict, match: str) -> None:
    t = _pair()
    kw.setdefault("transport", "uet")
    with pytest.raises((ValueError, TypeError), match=match):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [1000]}, **kw)


def test_many_uet_flows_incast_complete() -> None:
    inc = topology.incast(4, rate="100Gbps", delay="1us", mtu=4096)
    n = 4
    fs = inc.sim.add_flows({"src": np.arange(n), "dst": np.full(n, n), "size": np.full(n, 500_000)},
                           transport="uet")
    inc.sim.run_flows()
    r = fs.results()
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * n
    assert (r["bytes_delivered"] == 500_000).all()


def test_capture_holds_uet_frames_with_per_packet_entropy(tmp_path) -> None:
    from rdmasim import codec
    from rdmasim.capture import read_records

    t = _pair()
    path = tmp_path / "uet.pcap"
    t.sim.capture(str(path))
    t.sim.add_flows({"src": [0], "dst": [1], "size": [64 * 4096]}, transport="uet")
    t.sim.run_flows()
    t.sim.close_capture()
    _, recs = read_records(path)
    frames = [codec.decode(r.data) for r in recs]
    data = [f for f in frames if f["uet"]["type"] == 2]
    acks = [f for f in frames if f["uet"]["type"] == 8]
    assert len(data) == 64 and acks
    assert sorted(f["psn"] for f in data) == list(range(64))
    assert len({f["udp_sport"] for f in data}) > 16  # a new entropy per packet
    assert sum(f["payload_len"] for f in data) == 64 * 4096
    assert data[0]["uet"]["ses_flags"] & 1 and data[-1]["uet"]["ses_flags"] & 2  # SOM, EOM
    assert acks[-1]["uet"]["cack_psn"] == 63


def test_a_flow_on_a_reused_pdc_runs_as_on_a_fresh_one() -> None:
    # a PDC released by the close exchange is reused by the next flow of its host; its PSN slots
    # start clear again (pds.c clears only the slots the last flow used, and a new ring as it goes)
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    results = []
    for _ in range(2):
        fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [300 * 4096]}, transport="uet",
                             uet={"window": 65536})
        t.sim.run_flows()
        results.append(fs.results())
    first, second = results
    for key in ("status", "bytes_delivered", "retx_pkts", "nack_pkts"):
        assert int(first[key][0]) == int(second[key][0]), key
    assert describe_status(int(second["status"][0])) == "ok"
