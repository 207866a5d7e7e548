"""A READ's responses with data travel on the READ request's PDC, from its target (the data
holder) to its initiator (the reader): no PDC of their own, no SYN, one close (csrc/uet/ses_read.c)."""

from __future__ import annotations

import rdmasim
from rdmasim import codec, topology, uet
from rdmasim.capture import read_records
from rdmasim.flows import describe_status

RUD_REQ, ACK_CC, CTRL = 2, 8, 11
SYN = 0x04
NH_REQ_STD, NH_RSP_DATA = 3, 5


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def test_read_responses_use_the_read_requests_pdc_in_reverse(tmp_path) -> None:
    t = _pair()
    path = tmp_path / "read.pcap"
    t.sim.capture(str(path))
    size = 20 * 4096
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size], "verb": ["READ"]}, transport="uet")
    t.sim.run_flows()
    t.sim.run()  # the close exchange after the flow
    t.sim.close_capture()
    r = fs.results()
    assert describe_status(int(r["status"][0])) == "ok" and int(r["bytes_delivered"][0]) == size
    _, recs = read_records(path)
    frames = [codec.decode(rec.data) | {"t_ns": rec.t_ns} for rec in recs]
    reqs = [f for f in frames if f["uet"]["type"] == RUD_REQ and f["uet"]["next_hdr"] == NH_REQ_STD]
    data = [f for f in frames if f["uet"]["type"] == RUD_REQ and f["uet"]["next_hdr"] == NH_RSP_DATA]
    assert len(reqs) == 1 and len(data) == 20
    reader_ip, holder_ip = reqs[0]["src_ip"], reqs[0]["dst_ip"]
    reader_id = reqs[0]["uet"]["spdcid"]
    holder_acks = [f for f in frames if f["uet"]["type"] == ACK_CC and f["src_ip"] == holder_ip]
    holder_id = holder_acks[0]["uet"]["spdcid"]
    assert holder_id != 0 and holder_acks[0]["uet"]["dpdcid"] == reader_id
    # the data: from the data holder's id to the reader's, on the established PDC (no SYN)
    for f in data:
        assert f["src_ip"] == holder_ip and f["dst_ip"] == reader_ip
        assert (f["uet"]["spdcid"], f["uet"]["dpdcid"]) == (holder_id, reader_id)
        assert not f["uet"]["flags"] & SYN
    # the reader acknowledges the data on the same PDC, from its own id
    reader_acks = [f for f in frames if f["uet"]["type"] == ACK_CC and f["src_ip"] == reader_ip]
    assert reader_acks
    assert all((f["uet"]["spdcid"], f["uet"]["dpdcid"]) == (reader_id, holder_id) for f in reader_acks)
    # one PDC, one close: the reader's CLOSE after both directions are done
    closes = [f for f in frames if f["uet"]["type"] == CTRL]
    assert len(closes) == 1 and closes[0]["src_ip"] == reader_ip
    assert closes[0]["t_ns"] >= max(f["t_ns"] for f in reader_acks)
    holder, reader = uet.endpoint_stats(t.sim, 0), uet.endpoint_stats(t.sim, 1)
    assert holder["syn_sent"] == 0 and reader["pdcs_created"] == 0
    assert holder["pdcs_created"] == 1 and holder["pdcs_closed"] == 1
    assert holder["pdcs_live"] == 0 and reader["pdcs_live"] == 0
    assert holder["rx_unknown"] == 0 and reader["rx_unknown"] == 0


def test_sprayed_reads_under_loss_share_the_request_pdc() -> None:
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
    topo.sim.run()
    r = fs.results()
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * n
    assert (r["bytes_delivered"] == 256 * 1024).all()
    assert int(r["retx_pkts"].sum()) > 0
    st = [uet.endpoint_stats(topo.sim, h) for h in range(n)]
    assert sum(s["pdcs_created"] for s in st) == n  # one PDC per READ, created by its request's SYN
    assert all(s["pdcs_live"] == 0 for s in st)
