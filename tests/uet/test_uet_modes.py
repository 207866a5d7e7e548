"""UET delivery modes (csrc/uet/pds.c): ROD delivers in PSN order and goes back on a packet that
arrives out of order, RUDI answers every request without a PDC at the target, UUD never
acknowledges nor resends and counts what the fabric lost."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim import codec, fabric, topology
from rdmasim.capture import read_records
from rdmasim.flows import describe_status

ROD_REQ, RUDI_REQ, RUDI_RESP, UUD_REQ, ACK_CC, NACK = 3, 4, 5, 6, 8, 10


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def _frames(tmp_path, setup, run):
    path = tmp_path / "uet.pcap"
    setup.sim.capture(str(path))
    out = run()
    setup.sim.close_capture()
    _, recs = read_records(path)
    return out, [codec.decode(r.data) for r in recs]


def _shifted_permutation(n: int, size: int, uet: dict | None = None, seed: int = 1):
    topo = rdmasim.leaf_spine(n, n, n, seed=seed, switch_config={"path_select": "ecmp", "ecmp_seed": seed})
    src = [h.name for row in topo.hosts_by_leaf for h in row]
    dst = [h.name for row in topo.hosts_by_leaf[1:] + topo.hosts_by_leaf[:1] for h in row]
    fs = topo.sim.add_flows({"src": src, "dst": dst, "size": [size] * len(src)}, transport="uet", uet=uet)
    return topo, fs


def test_rod_under_spraying_delivers_in_psn_order_and_pays_in_resends(tmp_path) -> None:
    topo, fs = _shifted_permutation(2, 256 * 1024, uet={"mode": "rod"})
    r, frames = _frames(tmp_path, topo, lambda: (topo.sim.run_flows(), fs.results())[1])
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * 4
    assert (r["bytes_delivered"] == 256 * 1024).all()
    data = [f for f in frames if f["uet"]["type"] == ROD_REQ]
    acks = [f for f in frames if f["uet"]["type"] == ACK_CC]
    nacks = [f for f in frames if f["uet"]["type"] == NACK]
    assert data and acks and len({f["udp_sport"] for f in data}) > 8  # sprayed
    # the target never holds a PSN above its cumulative one: no SACK bit beyond it, ever
    for a in acks:
        u = a["uet"]
        below = -u["sack_off"] + 1  # bits of PSNs base .. cack
        assert u["sack_bitmap"] >> below == 0
    # what arrived early was dropped and NACKed (ROD_OOO, payload: the PSN expected), and resent
    assert nacks and all(n["uet"]["nack_code"] == 0x0D for n in nacks)
    # (the capture holds each frame once per link it crossed)
    assert int(r["retx_pkts"].sum()) > 0 and 0 < int(r["nack_pkts"].sum()) <= len(nacks)


def test_rod_costs_resends_where_rud_costs_none_on_a_sprayed_leaf_spine() -> None:
    res = {}
    for mode in ("rud", "rod"):
        topo, fs = _shifted_permutation(4, 1 << 20, uet={"mode": mode})
        topo.sim.run_flows()
        r = fs.results()
        assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * 16
        assert (r["bytes_delivered"] == 1 << 20).all()
        res[mode] = (int(r["retx_pkts"].sum()), int(r["fct_ps"].max()))
    assert res["rud"][0] == 0
    assert res["rod"][0] > 0 and res["rod"][1] > res["rud"][1]


def test_rod_on_one_path_retransmits_nothing() -> None:
    t = _pair()
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [1 << 20]}, transport="uet", uet={"mode": "rod"})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["retx_pkts"][0]) == 0
    assert int(r["nack_pkts"][0]) == 0


def test_rod_loss_goes_back_to_the_lost_psn() -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=5)
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [40 * 4096]}, transport="uet", uet={"mode": "rod"})
    t.sim.run_flows()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == 40 * 4096
    # one NACK (for the first PSN after the hole); PSN 5 and what followed it in flight go again
    assert int(r["nack_pkts"][0]) == 1
    assert int(r["retx_pkts"][0]) > 1


def test_uud_loses_what_the_fabric_drops_and_never_resends(tmp_path) -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), psn=5)
    size = 40 * 4096
    fs_holder = {}

    def run():
        fs_holder["fs"] = t.sim.add_flows({"src": [0], "dst": [1], "size": [size]}, transport="uet",
                                          uet={"mode": "uud"})
        t.sim.run_flows()
        return fs_holder["fs"].results()

    r, frames = _frames(tmp_path, t, run)
    assert describe_status(int(r["status"][0])) == "ok"
    assert int(r["bytes_delivered"][0]) == size - 4096
    assert int(r["lost_pkts"][0]) == 1 and int(r["retx_pkts"][0]) == 0
    types = {f["uet"]["type"] for f in frames}
    assert types == {UUD_REQ}  # no ACK, no NACK, no resend
    assert len(frames) == 40 and all(f["uet"]["flags"] == 0 for f in frames)  # 40 sent, once each


def test_uud_without_loss_delivers_everything_at_line_rate() -> None:
    t = _pair()
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [1 << 20]}, transport="uet", uet={"mode": "uud"})
    t.sim.run_flows()
    r = fs.results()
    assert int(r["bytes_delivered"][0]) == 1 << 20 and int(r["lost_pkts"][0]) == 0
    pkts = (1 << 20) // 4096
    # no window: the last byte arrives one serialisation train plus a link delay after the first
    train = pkts * (4096 + 4 + 20 + 8 + 20 + 14 + 4 + 20) * 8 * 10**12 // 100_000_000_000
    assert int(r["fct_ps"][0]) < train + 2_000_000


def test_rudi_answers_each_request_and_resends_a_lost_one(tmp_path) -> None:
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.a), nth=3)  # the fourth request
    size = 20 * 4096
    holder = {}

    def run():
        holder["fs"] = t.sim.add_flows({"src": [0], "dst": [1], "size": [size]}, transport="uet",
                                       uet={"mode": "rudi", "rto": "20us"})
        t.sim.run_flows()
        return holder["fs"].results()

    r, frames = _frames(tmp_path, t, run)
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == size
    assert int(r["retx_pkts"][0]) == 1
    reqs = [f for f in frames if f["uet"]["type"] == RUDI_REQ]
    resps = [f for f in frames if f["uet"]["type"] == RUDI_RESP]
    assert len(reqs) == 21 and len(resps) == 20  # one request lost, one response per arrival
    assert {f["psn"] for f in resps} == {f["psn"] for f in reqs}  # pkt_ids echoed
    assert len({f["psn"] >> 16 for f in reqs}) == 1  # the initiator's context in the high bits


@pytest.mark.parametrize("uet, match", [
    ({"mode": "tcp"}, r"uet\.mode = 'tcp'"),
    ({"mode": "uud", "trim": True}, r"uet\.trim"),
    ({"mode": "rudi", "trim": True}, r"uet\.trim"),
])
def test_bad_mode_options_are_refused_naming_the_key(uet: dict, match: str) -> None:
    t = _pair()
    with pytest.raises(ValueError, match=match):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [1000]}, transport="uet", uet=uet)
