"""Packet trimming in switches (NDP; Ultra Ethernet's option): a packet its transport marked
trim_ok is cut to its headers when its egress queue is over the threshold, or when the buffer
would drop it, and the header goes on at the trim priority.  RoCE never marks packets, so it is
never trimmed; the tests mark RoCE frames with the link test hook (``fabric.mark_trim_ok``),
and the RoCE receiver then drops each trimmed frame as one with a wrong ICRC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rdmasim
from rdmasim.capture import read_records
from rdmasim.fabric import mark_trim_ok, switch_config

N_SEND = 4
SIZE = 256 * 1024
THRESHOLD = 16 * 1024


def incast(*, mark: bool, pcap: Path | None = None, **swcfg: Any) -> tuple[Any, Any, Any]:
    """4:1 incast of SIZE-byte WRITEs through one switch; returns (topology, flow results, the
    receiver's port counters at the switch)."""
    topo = rdmasim.topology.incast(N_SEND, mtu=4096, seed=2, switch_config=swcfg)
    sim = topo.sim
    if mark:
        for link in topo.links[:N_SEND]:
            mark_trim_ok(link.ab)  # host -> switch
    if pcap is not None:
        sim.capture(str(pcap), links=[topo.links[N_SEND].ba])  # switch -> receiver
    flows = sim.add_flows({"src": list(range(N_SEND)), "dst": [N_SEND] * N_SEND, "size": [SIZE] * N_SEND})
    sim.run_flows()
    if pcap is not None:
        sim.close_capture()
    return topo, flows.results(), topo.switch.port_stats(N_SEND)


def test_trim_ok_packets_over_the_threshold_go_as_headers_at_the_trim_priority() -> None:
    topo, res, port = incast(mark=True, trimming=True, trim_threshold=THRESHOLD)
    trims = port["trims"]
    assert trims > 0
    assert (res["bytes_delivered"] == SIZE).all()
    # every trimmed header left on the trim priority (7), nothing else did
    assert port["queue_tx_pkts"][7] == trims
    # the data queue never held more than the threshold: what would have gone over was trimmed
    assert port["egress_peak_bytes"][3] <= THRESHOLD
    # the RoCE receiver dropped each header (its ICRC no longer matches) and Go-Back-N resent
    rx = topo.sim._core.host_rx_counters(topo.hosts[N_SEND].index)
    assert rx["bad_icrc"] == trims
    assert res["retx_pkts"].sum() >= trims
    # trims are counted where they happen: only on the port to the receiver
    assert sum(s["trims"] for s in topo.switch.stats()) == trims == topo.switch.totals()["trims"]


def test_roce_is_never_trimmed() -> None:
    topo, res, port = incast(mark=False, trimming=True, trim_threshold=THRESHOLD)
    assert port["trims"] == 0 and port["queue_tx_pkts"][7] == 0
    assert topo.sim._core.host_rx_counters(topo.hosts[N_SEND].index)["bad_icrc"] == 0
    assert res["retx_pkts"].sum() == 0
    assert port["egress_peak_bytes"][3] > THRESHOLD  # the queue built as without trimming


def test_trimming_off_leaves_trim_ok_packets_alone() -> None:
    _, res, port = incast(mark=True)
    assert port["trims"] == 0 and res["retx_pkts"].sum() == 0


def test_a_trimmed_frame_is_its_headers_on_the_wire(tmp_path: Path) -> None:
    pcap = tmp_path / "rx.pcap"
    topo, _, port = incast(mark=True, pcap=pcap, trimming=True, trim_threshold=THRESHOLD)
    _, records = read_records(pcap)
    lens = np.array([r.orig_len for r in records])
    # a WRITE packet cut to Ethernet + IPv4 + UDP + BTH (+ RETH on a FIRST) + ICRC, padded to 60
    # bytes: 58 or 74 bytes of frame, where a full one is 4,154 or more
    short = lens[lens < 100]
    assert len(short) == port["trims"]
    assert set(short.tolist()) <= {60, 74}
    # the link carried the headers only: its bytes are the frames' lengths as captured
    assert topo.links[N_SEND].ba.stats()["bytes"] == int(lens.sum())


def test_a_packet_the_buffer_would_drop_is_trimmed_instead() -> None:
    lossy: dict[str, Any] = {"lossless": (), "lossy_limit": "32KiB"}
    # without trimming the lossy queue drops (counted on the ingress ports)
    topo0, _, _ = incast(mark=True, **lossy)
    assert topo0.switch.totals()["drops_lossy_threshold"] > 0
    # with it (a threshold the queue never reaches), what it would drop goes as a header
    topo, res, port = incast(mark=True, trimming=True, trim_threshold="1MiB", **lossy)
    assert topo.switch.totals()["drops"] == 0
    assert port["trims"] > 0 and port["queue_tx_pkts"][7] == port["trims"]
    assert (res["bytes_delivered"] == SIZE).all()


@pytest.mark.parametrize(("kw", "key"), [
    ({"trimming": "yes"}, "trimming"),
    ({"trim_threshold": 0}, "trim_threshold"),
    ({"trim_threshold": "2TiB"}, "trim_threshold"),
    ({"trim_priority": 8}, "trim_priority"),
])
def test_bad_trimming_settings_are_refused_by_name(kw: dict[str, Any], key: str) -> None:
    with pytest.raises(ValueError, match=key):
        switch_config(**kw)


def test_defaults() -> None:
    cfg = switch_config()
    assert (cfg["trim"], cfg["trim_threshold_bytes"], cfg["trim_prio"]) == (0, 64 * 1024, 7)


SCENARIO = """
[topology]
kind = "star"
n = 3
[switch]
{switch}
[traffic.incast]
size = "64KiB"
"""


def test_scenario_switch_trimming_keys(tmp_path: Path) -> None:
    from rdmasim.scenario import ScenarioError, load, run_scenario
    from rdmasim.scenario.run import build

    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(switch='trimming = true\ntrim_threshold = "16KiB"\ntrim_priority = 6'))
    sc = load(f)
    cfg = next(iter(build(sc).switches.values())).config
    assert (cfg["trim"], cfg["trim_threshold_bytes"], cfg["trim_prio"]) == (1, 16 * 1024, 6)
    res = run_scenario(sc, "", progress=False)
    rows = res.port_rows()
    assert all(r["trimmed_pkts"] == 0 for r in rows)  # RoCE: never trimmed
    assert "trimmed_pkts" in res.frames()["ports"].columns
    for bad, key in (("trim_priority = 8", "switch.trim_priority"),
                     ("trim_threshold = 0", "switch.trim_threshold"),
                     ('trimming = "yes"', "switch.trimming")):
        f.write_text(SCENARIO.format(switch=bad))
        with pytest.raises(ScenarioError, match=key.replace(".", r"\.")):
            load(f)


def uet_incast(*, trim: bool, pcap: Path | None = None, **swcfg: Any) -> tuple[Any, Any, Any]:
    """The 4:1 incast on the Ultra Ethernet transport (its data packets trim_ok when ``trim``)."""
    topo = rdmasim.topology.incast(N_SEND, mtu=4096, seed=2, switch_config=swcfg)
    sim = topo.sim
    if pcap is not None:
        sim.capture(str(pcap), links=[topo.links[N_SEND].ba])
    flows = sim.add_flows({"src": list(range(N_SEND)), "dst": [N_SEND] * N_SEND, "size": [SIZE] * N_SEND},
                          transport="uet", uet={"trim": trim})
    sim.run_flows()
    if pcap is not None:
        sim.close_capture()
    return topo, flows.results(), topo.switch.port_stats(N_SEND)


def test_uet_trimmed_packets_are_nacked_and_resent(tmp_path: Path) -> None:
    pcap = tmp_path / "uet.pcap"
    topo, res, port = uet_incast(trim=True, pcap=pcap, trimming=True, trim_threshold=THRESHOLD)
    trims = port["trims"]
    assert trims > 0 and port["queue_tx_pkts"][7] == trims
    assert (res["bytes_delivered"] == SIZE).all()
    # every header reached its target, which NACKed it at once; the initiator resent each
    assert int(res["trimmed_pkts"].sum()) == trims == int(res["nack_pkts"].sum())
    assert int(res["retx_pkts"].sum()) >= trims
    assert port["egress_peak_bytes"][3] <= THRESHOLD
    # on the wire a trimmed request is its headers (Ethernet, IPv4, UDP, PDS, SES: 98 bytes)
    _, records = read_records(pcap)
    lens = np.array([r.orig_len for r in records])
    assert (lens == 98).sum() == trims
    full = int((lens == 4096 + 98).sum())
    assert full == N_SEND * SIZE // 4096 + int(res["retx_pkts"].sum()) - trims


def test_uet_without_trim_ok_is_not_trimmed() -> None:
    _, res, port = uet_incast(trim=False, trimming=True, trim_threshold=THRESHOLD)
    assert port["trims"] == 0 and int(res["trimmed_pkts"].sum()) == 0
    assert (res["bytes_delivered"] == SIZE).all()


def test_uet_on_a_lossy_fabric_trims_instead_of_dropping() -> None:
    lossy: dict[str, Any] = {"lossless": (), "lossy_limit": "32KiB"}
    topo0, res0, _ = uet_incast(trim=True, **lossy)  # switches without trimming drop
    assert topo0.switch.totals()["drops"] > 0
    topo, res, port = uet_incast(trim=True, trimming=True, trim_threshold="1MiB", **lossy)
    assert topo.switch.totals()["drops"] == 0 and port["trims"] > 0
    assert (res["bytes_delivered"] == SIZE).all() and (res0["bytes_delivered"] == SIZE).all()
    assert int(res["trimmed_pkts"].sum()) == port["trims"]


def test_the_trim_ok_mark_is_no_drop_rule_and_can_be_taken_off() -> None:
    from rdmasim.fabric import drops_pending

    topo = rdmasim.topology.incast(N_SEND, mtu=4096, seed=2,
                                   switch_config={"trimming": True, "trim_threshold": THRESHOLD})
    for link in topo.links[:N_SEND]:
        mark_trim_ok(link.ab)
        link.ab.drop(nth=10**9)  # a drop rule beside it, never reached
        mark_trim_ok(link.ab, False)
        assert drops_pending(link.ab) == 1
    table = {"src": list(range(N_SEND)), "dst": [N_SEND] * N_SEND, "size": [SIZE] * N_SEND}
    flows = topo.sim.add_flows(table)
    topo.sim.run_flows()
    assert topo.switch.port_stats(N_SEND)["trims"] == 0
    assert flows.results()["retx_pkts"].sum() == 0
    with pytest.raises(ValueError, match="on"):
        mark_trim_ok(topo.links[0].ab, 1)  # type: ignore[arg-type]
