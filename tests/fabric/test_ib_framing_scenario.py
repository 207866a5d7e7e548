"""`link.layer` in scenario files: an InfiniBand fabric runs with IB framing (its capture is
LINKTYPE_INFINIBAND, its flows pay IB's smaller per-packet overhead); a bad value names the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.capture import read_pcap
from rdmasim.scenario import ScenarioError, loads, run_scenario

INCAST = """
[simulation]
progress = false
[topology]
kind = "incast"
n_senders = 2
[link]
rate = "100Gbps"
delay = "1us"
{layer}
[qp]
mtu = 1024
[traffic.incast]
size = "256KB"
[outputs]
pcap = true
plots = false
"""


def _run(layer: str, out: Path):
    sc = loads(INCAST.format(layer=layer), "ib.toml")
    return sc, run_scenario(sc, out_dir=str(out), progress=False)


def test_link_layer_ib_frames_the_whole_fabric_as_infiniband(tmp_path: Path) -> None:
    sc, res = _run('layer = "ib"', tmp_path / "ib")
    assert sc.values["link.layer"] == "ib"
    assert all(f.status == "ok" for f in res.flows)
    cap = next((tmp_path / "ib").rglob("capture.pcap"))
    assert cap.read_bytes()[20:24] == (247).to_bytes(4, "little")
    frames = [fr.fields for fr in read_pcap(cap)]
    assert frames and all(f["link_layer"] == 1 and f["icrc_ok"] and f["vcrc_ok"] for f in frames)
    assert {f["ib_slid"] for f in frames} == {1, 2, 3}  # the LIDs of the three hosts
    _, roce = _run("", tmp_path / "roce")
    # IB's per-packet overhead (28 B with delimiters) is below RoCE's (86 B): the incast ends sooner
    assert max(f.fct_ps for f in res.flows) < max(f.fct_ps for f in roce.flows)


def test_a_bad_link_layer_names_the_key_and_the_choices() -> None:
    with pytest.raises(ScenarioError) as info:
        loads(INCAST.format(layer='layer = "ethernet"'), "ib.toml")
    assert "link.layer" in str(info.value) and "roce" in str(info.value) and "ib" in str(info.value)


def _totals(res) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in res.switches.values():
        for k, v in s["totals"].items():
            out[k] = out.get(k, 0) + int(v)
    return out


def test_an_ib_scenario_runs_credits_by_default_and_does_not_drop(tmp_path: Path) -> None:
    # 4 senders into one port, 2 MB each: without flow control the switch tail-drops on IB
    heavy = INCAST.replace("n_senders = 2", "n_senders = 4").replace('size = "256KB"', 'size = "2MB"')
    heavy = heavy.replace("pcap = true", "pcap = false")
    sc = loads(heavy.format(layer='layer = "ib"'), "ib.toml")
    res = run_scenario(sc, out_dir="", progress=False)
    assert all(f.status == "ok" for f in res.flows)
    assert _totals(res)["drops"] == 0 and sum(f.retx_pkts for f in res.flows) == 0
    from rdmasim.scenario.run import flow_control

    assert flow_control(sc.values) == "credits"  # "auto" on IB
    # the switch's egress queue towards the receiver filled its ingress buffers: credits held it
    peak = max(max(p["egress_peak_bytes"]) for s in res.switches.values() for p in s["ports"])
    assert peak > 64_000


def test_pfc_on_an_ib_scenario_is_refused_naming_the_key() -> None:
    text = INCAST.format(layer='layer = "ib"').replace("[qp]", '[switch]\nflow_control = "pfc"\n[qp]')
    with pytest.raises(ScenarioError) as info:
        loads(text, "ib.toml")
    assert "switch.flow_control" in str(info.value) and "credits" in str(info.value)


def test_ib_cc_in_a_scenario_gets_its_marks_and_results_show_credit_stalls() -> None:
    # credits put every SL on VL 0 (vls = 1): the ECN priorities [3] must mark that VL's queues
    text = INCAST.replace("n_senders = 2", "n_senders = 4").replace('size = "256KB"', 'size = "2MB"')
    text = text.replace("pcap = true", "pcap = false").format(layer='layer = "ib"')
    text = text.replace("[qp]", '[congestion_control]\nalgorithm = "ibcc"\n[qp]')
    res = run_scenario(loads(text, "ib.toml"), out_dir="", progress=False)
    assert all(f.status == "ok" for f in res.flows)
    assert _totals(res)["ecn_marked"] > 0 and sum(f.cnps for f in res.flows) > 0
    hosts = [r for r in res.port_rows() if r["kind"] == "host"]
    assert sum(r["credit_stall_ps"] for r in hosts) > 0  # the senders waited for the switch's credits
