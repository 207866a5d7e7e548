"""A READ's responses with data travel on the READ request's PDC, from its target (the data
holder) to its initiator (the reader): no PDC of their own, no SYN, one close (csrc/uet/ses_read.c)."""

from __future__ import annotations

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
