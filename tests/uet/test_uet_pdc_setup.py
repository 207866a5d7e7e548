"""PDC establishment and close (csrc/uet/pdc_setup.c): SYN on the first requests until the target's
first ACK, the target's PDC created from a SYN, and the CLOSE / ACK exchange that releases both
PDC ids when the message is done."""

from __future__ import annotations

from rdmasim import codec, fabric, topology, uet
from rdmasim.capture import read_records
from rdmasim.flows import describe_status

RUD_REQ, ACK, ACK_CC, CTRL = 2, 7, 8, 11
SYN, AR, RETX = 0x04, 0x08, 0x10
CTL_CLOSE = 4


def _pair():
    return topology.back_to_back(rate="100Gbps", delay="1us", mtu=4096)


def _run(tmp_path, t, size: int, **uet_opts):
    path = tmp_path / "pdc.pcap"
    t.sim.capture(str(path))
    fs = t.sim.add_flows({"src": [0], "dst": [1], "size": [size]}, transport="uet", uet=uet_opts or None)
    t.sim.run_flows()
    t.sim.run()  # the close exchange goes on after the flow's completion
    t.sim.close_capture()
    _, recs = read_records(path)
    return fs.results(), [codec.decode(r.data) for r in recs]


def test_syn_until_the_first_ack_then_the_targets_pdc_id(tmp_path) -> None:
    t = _pair()
    r, frames = _run(tmp_path, t, 64 * 4096)
    assert describe_status(int(r["status"][0])) == "ok"
    data = [f for f in frames if f["uet"]["type"] == RUD_REQ]
    acks = [f for f in frames if f["uet"]["type"] == ACK_CC]
    syn = [f for f in data if f["uet"]["flags"] & SYN]
    # SYN on a prefix of the requests: those sent before the first ACK came back
    assert syn and data[: len(syn)] == syn and len(syn) < len(data)
    for f in syn:  # pdc_mode 0, psn_offset = PSN - start PSN (0) where dpdcid goes
        assert f["uet"]["dpdcid"] == f["psn"]
    target_id = acks[0]["uet"]["spdcid"]
    assert target_id != 0 and acks[0]["uet"]["dpdcid"] == data[0]["uet"]["spdcid"]
    assert all(f["uet"]["dpdcid"] == target_id for f in data[len(syn):])
    st_i, st_t = uet.endpoint_stats(t.sim, 0), uet.endpoint_stats(t.sim, 1)
    assert st_i["syn_sent"] == len(syn) and st_t["pdcs_created"] == 1


def test_close_exchange_releases_both_pdc_ids(tmp_path) -> None:
    t = _pair()
    r, frames = _run(tmp_path, t, 16 * 4096)
    data = [f for f in frames if f["uet"]["type"] == RUD_REQ]
    close = [f for f in frames if f["uet"]["type"] == CTRL]
    assert len(close) == 1
    c = close[0]
    assert c["uet"]["next_hdr"] == CTL_CLOSE and c["uet"]["flags"] & AR
    assert c["psn"] == max(f["psn"] for f in data) + 1  # the next PSN
    assert c["uet"]["spdcid"] == data[0]["uet"]["spdcid"]
    # the last frame: the target's plain ACK of the CLOSE's PSN
    last = frames[-1]
    assert last["uet"]["type"] == ACK and last["uet"]["cack_psn"] == c["psn"]
    assert last["uet"]["dpdcid"] == c["uet"]["spdcid"] and last["uet"]["spdcid"] == c["uet"]["dpdcid"]
    si, st = uet.endpoint_stats(t.sim, 0), uet.endpoint_stats(t.sim, 1)
    assert si["closes_sent"] == 1 and si["pdcs_released"] == 1 and st["pdcs_closed"] == 1
    assert si["pdcs_live"] == 0 and st["pdcs_live"] == 0


def test_a_lost_close_goes_again_and_a_closed_target_acknowledges_it_again(tmp_path) -> None:
    # drop the target's ACK of the CLOSE (the last frame the target sends): the CLOSE goes again at
    # the timeout and the target, closed already, answers it from the packet alone
    ref = _pair()
    ref.sim.add_flows({"src": [0], "dst": [1], "size": [16 * 4096]}, transport="uet", uet={"rto": "20us"})
    ref.sim.run_flows()
    ref.sim.run()
    from_target = ref.link.direction(ref.b).stats()["delivered"]
    t = _pair()
    fabric.add_drop_rule(t.link.direction(t.b), nth=from_target - 1, count=1)
    r, frames = _run(tmp_path, t, 16 * 4096, rto="20us")
    close = [f for f in frames if f["uet"]["type"] == CTRL]
    assert len(close) == 2 and close[1]["uet"]["flags"] & RETX
    si, st = uet.endpoint_stats(t.sim, 0), uet.endpoint_stats(t.sim, 1)
    assert si["closes_sent"] == 2 and si["pdcs_released"] == 1 and st["pdcs_closed"] == 1
    assert si["pdcs_live"] == 0 and st["pdcs_live"] == 0 and si["close_gave_up"] == 0


def test_many_flows_open_and_close_and_leave_no_pdc_behind() -> None:
    t = _pair()
    n = 50
    fs = t.sim.add_flows({"src": [0, 1] * (n // 2), "dst": [1, 0] * (n // 2), "size": [20_000] * n},
                         transport="uet")
    t.sim.run_flows()
    t.sim.run()
    r = fs.results()
    assert [describe_status(int(s)) for s in r["status"]] == ["ok"] * n
    a, b = uet.endpoint_stats(t.sim, 0), uet.endpoint_stats(t.sim, 1)
    assert a["pdcs_created"] + b["pdcs_created"] == n
    assert a["pdcs_closed"] + b["pdcs_closed"] == n and a["pdcs_released"] + b["pdcs_released"] == n
    assert a["pdcs_live"] == 0 and b["pdcs_live"] == 0


def test_rudi_and_uud_have_no_syn_and_no_close(tmp_path) -> None:
    for mode in ("rudi", "uud"):
        t = _pair()
        _, frames = _run(tmp_path, t, 8 * 4096, mode=mode)
        assert not any(f["uet"]["type"] == CTRL for f in frames)
        assert not any(f["uet"]["flags"] & SYN for f in frames if f["uet"]["type"] in (4, 6))
        assert uet.endpoint_stats(t.sim, 0)["pdcs_live"] == 0
