"""A target with `max_pdcs` PDCs open refuses a new one (NACK NO_PDC_AVAIL: the initiator sends its
SYN again at the retransmit timeout) and asks the initiators of PDCs whose message it has whole to
close them (control packet REQ_CLOSE); an initiator whose CLOSE went sends it again at once
(csrc/uet/endpoint.c)."""

from __future__ import annotations

import pytest

from rdmasim import codec, fabric, topology, uet
from rdmasim.capture import read_records
from rdmasim.flows import describe_status

RUD_REQ, ACK, NACK, CTRL = 2, 7, 10, 11
CTL_CLOSE, CTL_REQ_CLOSE = 4, 5
NO_PDC_AVAIL = 0x04


def test_max_pdcs_refuses_a_syn_and_the_initiator_tries_again() -> None:
    t = topology.star(4, rate="100Gbps", delay="1us", mtu=4096)
    fs = t.sim.add_flows({"src": [0, 1, 2], "dst": [3, 3, 3], "size": [16 * 4096] * 3}, transport="uet",
                         uet={"max_pdcs": 1, "rto": "50us"})
    t.sim.run_flows()
    t.sim.run()
    r = fs.results()
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * 3
    assert (r["bytes_delivered"] == 16 * 4096).all()
    st = uet.endpoint_stats(t.sim, 3)
    assert st["pdcs_refused"] > 0 and st["pdcs_created"] == 3 and st["pdcs_live"] == 0
    # one PDC at a time: the first flow goes at once, the others wait for a retry after the timeout
    fct = sorted(int(x) for x in r["fct_ps"])
    assert fct[0] < 50_000_000 <= fct[1]
    assert int(r["nack_pkts"].sum()) > 0


def test_target_under_pressure_asks_for_a_lost_close_again(tmp_path) -> None:
    t = topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)
    fabric.add_drop_rule(t.link.direction(t.a), nth=4)  # flow A's CLOSE (after its 4 data packets)
    path = tmp_path / "req_close.pcap"
    t.sim.capture(str(path))
    fs = t.sim.add_flows({"src": [0, 0], "dst": [1, 1], "size": [4 * 4096] * 2, "start_ps": [0, 20_000_000]},
                         transport="uet", uet={"max_pdcs": 1, "rto": "100us"})
    t.sim.run_flows()
    t.sim.run()
    t.sim.close_capture()
    r = fs.results()
    assert [describe_status(int(s)) for s in r["status"]] == ["ok", "ok"]
    recs = read_records(path)[1]
    frames = [(rec.t_ns, codec.decode(rec.data)) for rec in recs]
    a_id = next(f["uet"]["spdcid"] for _, f in frames if f["uet"]["type"] == RUD_REQ)
    req = [(ts, f) for ts, f in frames if f["uet"]["type"] == CTRL and f["uet"]["next_hdr"] == CTL_REQ_CLOSE]
    assert len(req) == 1 and req[0][1]["uet"]["dpdcid"] == a_id
    assert req[0][1]["psn"] == 4  # the next PSN the target expects on A's PDC
    closes = [ts for ts, f in frames if f["uet"]["type"] == CTRL and f["uet"]["next_hdr"] == CTL_CLOSE
              and f["uet"]["spdcid"] == a_id]
    # the capture shows the CLOSE sent again right after the request (the first one was dropped
    # before the capture point or after it), well before A's own 100 us timeout
    assert closes and min(ts for ts in closes if ts >= req[0][0]) < req[0][0] + 5_000
    refused = [f for _, f in frames if f["uet"]["type"] == NACK and f["uet"]["nack_code"] == NO_PDC_AVAIL]
    assert refused
    st = uet.endpoint_stats(t.sim, 1)
    assert st["close_reqs_sent"] == 1 and st["pdcs_refused"] == len(refused) and st["pdcs_live"] == 0


def test_max_pdcs_is_checked() -> None:
    t = topology.back_to_back()
    with pytest.raises(ValueError, match="max_pdcs"):
        t.sim.add_flows({"src": [0], "dst": [1], "size": [1000]}, transport="uet", uet={"max_pdcs": 0})
