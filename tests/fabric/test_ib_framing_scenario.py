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
