"""Scenario files run their flows on the Ultra Ethernet transport ([transport] kind = "uet", [uet])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rdmasim.scenario import ScenarioError, loads, run_scenario
from tests.scenario.cc_flows import TWO_SENDER_INCAST

UET = TWO_SENDER_INCAST + """
[transport]
kind = "uet"
[uet]
lb = "reps"
reorder_packets = 32
rto = "200us"
"""


def test_uet_scenario_runs_and_reports_its_flows() -> None:
    res = run_scenario(loads(UET), out_dir="")
    rows = res.flows
    assert len(rows) == 2
    assert all(r.status == "ok" and r.bytes_delivered == 512 * 1024 for r in rows)
    assert all(r.retx_pkts == 0 and r.nack_pkts == 0 and r.trimmed_pkts == 0 for r in rows)
    assert all(r.fct_ps >= r.ideal_fct_ps for r in rows)


def test_uet_scenario_runs_with_receiver_credit() -> None:
    res = run_scenario(loads(UET.replace('lb = "reps"', 'lb = "reps"\ncc = "rccc"')), out_dir="")
    assert [r.status for r in res.flows] == ["ok", "ok"]
    assert all(r.bytes_delivered == 512 * 1024 for r in res.flows)


@pytest.mark.parametrize("extra, key", [
    ('[uet]\nlb = "reps"\n', "uet.lb"),              # a UET option with RoCE flows
    ('[transport]\nkind = "uet"\n[qp]\nrecovery = "irn"\n', "qp.recovery"),  # a RoCE option with UET
    ('[transport]\nkind = "tcp"\n', "transport.kind"),
    ('[transport]\nkind = "uet"\n[uet]\nmode = "ordered"\n', "uet.mode"),
    ('[transport]\nkind = "uet"\n[uet]\nmode = "uud"\ntrim = true\n', "uet.trim"),  # nothing to ask again
])
def test_a_transport_mismatch_is_refused_naming_the_key(extra: str, key: str) -> None:
    text = TWO_SENDER_INCAST.replace("[qp]\nmtu = 1024\n", "") + extra
    if "[qp]" not in extra:
        text += "[qp]\nmtu = 1024\n"
    with pytest.raises(ScenarioError) as ei:
        loads(text)
    assert any(p.path == key for p in ei.value.problems), str(ei.value)


def test_validate_exits_2_with_one_line_naming_the_key(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(TWO_SENDER_INCAST + '[uet]\nwindow = "64KiB"\n')
    r = subprocess.run([sys.executable, "-m", "rdmasim", "validate", str(f)], capture_output=True, text=True)
    assert r.returncode == 2
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "uet.window" in ln]
    assert len(lines) == 1 and "RoCE" in lines[0]


@pytest.mark.parametrize("mode", ["rod", "rudi", "uud"])
def test_uet_scenario_runs_each_delivery_mode(mode: str) -> None:
    res = run_scenario(loads(UET + f'mode = "{mode}"\n'), out_dir="")
    assert [(r.status, r.bytes_delivered) for r in res.flows] == [("ok", 512 * 1024)] * 2


def test_uet_scenario_runs_read_flows() -> None:
    """An incast of READs: the receiver reads from each sender (uet/ses_read.c)."""
    res = run_scenario(loads(UET.replace('size = "512KiB"', 'size = "512KiB"\nverb = "READ"')), out_dir="")
    assert [r.status for r in res.flows] == ["ok", "ok"]
    assert all(r.bytes_delivered == 512 * 1024 for r in res.flows)


COLLECTIVE = """
[simulation]
progress = false
[topology]
kind = "star"
n = 4
[link]
rate = "100Gbps"
delay = "1us"
[qp]
mtu = 4096
[traffic.collective]
kind = "allreduce"
algorithm = "ring"
size = "1MiB"
chunk_size = "32KiB"
[transport]
kind = "uet"
"""


@pytest.mark.parametrize("uet", ['lb = "reps"\n', 'lb = "oblivious"\ncc = "nscc"\n', 'cc = "rccc"\n',
                                 'mode = "rod"\n', 'mode = "rudi"\n'])
def test_a_collective_runs_on_uet_and_reports_busbw(uet: str) -> None:
    # 4 ranks x 6 steps x 8 chunks: every connection chains 48 flows, one PDC after another
    res = run_scenario(loads(COLLECTIVE + "[uet]\n" + uet, "c.toml"), out_dir="", progress=False)
    assert len(res.flows) == 4 * 6 * 8
    assert all(f.status == "ok" and f.bytes_delivered == f.size_bytes for f in res.flows)
    (row,) = res.collectives
    assert row["collective"] == "allreduce/ring" and row["ranks"] == 4
    assert 0 < row["busbw_over_link_rate"] < 1


def test_a_collective_on_unreliable_delivery_warns_naming_the_key(tmp_path: Path) -> None:
    # it runs (a study of loss-tolerant collectives may want it), but validate says what it means
    sc = loads(COLLECTIVE + '[uet]\nmode = "uud"\n', "c.toml")
    (p,) = [p for p in sc.warnings if p.path == "uet.mode"]
    assert "collective" in p.message and "lost_pkts" in p.message and "rud" in p.allowed
    assert not [w for w in loads(COLLECTIVE, "c.toml").warnings if w.path == "uet.mode"]
    f = tmp_path / "c.toml"
    f.write_text(COLLECTIVE + '[uet]\nmode = "uud"\n')
    r = subprocess.run([sys.executable, "-m", "rdmasim", "validate", str(f)], capture_output=True, text=True)
    assert r.returncode == 0
    assert len([ln for ln in (r.stdout + r.stderr).splitlines() if "uet.mode" in ln]) == 1
    res = run_scenario(sc, out_dir="", progress=False)
    assert all(f.status == "ok" for f in res.flows)


def test_uet_on_an_infiniband_fabric_is_refused_at_load_naming_the_key() -> None:
    # UET runs over UDP/IP on Ethernet: validate says so before anything runs, naming transport.kind
    with pytest.raises(ScenarioError) as ei:
        loads(COLLECTIVE.replace("[link]\n", '[link]\nlayer = "ib"\n'), "c.toml")
    (p,) = [p for p in ei.value.problems if p.path == "transport.kind"]
    assert "link.layer" in p.message and "Ethernet" in p.message
