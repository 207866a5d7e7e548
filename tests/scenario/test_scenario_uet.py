"""Scenario files run their flows on the Ultra Ethernet transport ([transport] kind = "uet", [uet])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rdmasim.results import UET_ENDPOINT_COLUMNS, read_table
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


# --- the [uet] keys that follow the Python API's options (rdmasim.uet.DEFAULTS) ---

def test_every_python_uet_option_is_a_scenario_key() -> None:
    from rdmasim.scenario.schema import SCHEMA
    from rdmasim.transport.uet import DEFAULTS

    assert sorted(k for k in DEFAULTS if f"uet.{k}" not in SCHEMA) == []


def test_max_pdcs_refuses_a_syn_and_the_sender_tries_again_at_the_timeout() -> None:
    # the receiver holds one PDC: the second sender's SYN is NACKed NO_PDC_AVAIL and sent again at
    # the timeout (200 us), so one flow ends after it
    res = run_scenario(loads(UET + "max_pdcs = 1\n"), out_dir="", progress=False)
    assert [(r.status, r.bytes_delivered) for r in res.flows] == [("ok", 512 * 1024)] * 2
    assert sum(r.nack_pkts for r in res.flows) > 0
    assert max(r.fct_ps for r in res.flows) >= 200_000_000
    free = run_scenario(loads(UET), out_dir="", progress=False)
    assert max(r.fct_ps for r in free.flows) < 200_000_000


@pytest.mark.parametrize("uet, status", [('target_access = "read"\n', "IBV_WC_REM_ACCESS_ERR"),
                                         ('target_buffer = "64KiB"\n', "IBV_WC_REM_ACCESS_ERR"),
                                         ('target_access = "write"\n', "ok")])
def test_target_buffer_and_access_reach_the_flows(uet: str, status: str) -> None:
    res = run_scenario(loads(UET + uet), out_dir="", progress=False)
    assert [r.status for r in res.flows] == [status] * 2


def test_nscc_base_rtt_reaches_nscc() -> None:
    base = UET + 'cc = "nscc"\n'
    fct = {rtt: [r.fct_ps for r in run_scenario(loads(base + f'nscc_base_rtt = "{rtt}"\n'), out_dir="",
                                                 progress=False).flows] for rtt in ("2us", "50us")}
    assert fct["2us"] != fct["50us"]


def test_place_bytes_puts_the_flows_bytes_in_its_frames(tmp_path: Path) -> None:
    from rdmasim.capture import read_records

    def payload_bytes(extra: str, out: Path) -> int:
        run_scenario(loads(UET + extra + '[outputs]\npcap = true\n'), out_dir=str(out), progress=False)
        recs = read_records(out / "capture.pcap")[1]
        return sum(sum(1 for b in r.data[-256:] if b) for r in recs if len(r.data) > 1000)

    assert payload_bytes("", tmp_path / "a") == 0
    assert payload_bytes("place_bytes = true\n", tmp_path / "b") > 0


@pytest.mark.parametrize("uet, key, allowed", [
    ("max_pdcs = 70000\n", "uet.max_pdcs", "0..65535"),
    ("max_pdcs = -1\n", "uet.max_pdcs", "0..65535"),
    ('target_access = "none"\n', "uet.target_access", "'rw', 'read', 'write'"),
    ('target_buffer = "-1KiB"\n', "uet.target_buffer", "a size"),
    ('nscc_base_rtt = "2s"\n', "uet.nscc_base_rtt", "0..1000000000000 ps"),
    ("nscc_base_rtt = 5\n", "uet.nscc_base_rtt", "unit"),   # a time needs its unit
    ('idle_close = "2s"\n', "uet.idle_close", "0..1000000000000 ps"),
    ('idle_close = "-1us"\n', "uet.idle_close", "0..1000000000000 ps"),
    ('place_bytes = "yes"\n', "uet.place_bytes", "true or false"),
])
def test_a_bad_uet_key_is_refused_naming_it(uet: str, key: str, allowed: str) -> None:
    with pytest.raises(ScenarioError) as ei:
        loads(UET + uet, "u.toml")
    (line,) = [ln for ln in str(ei.value).splitlines() if key in ln]
    assert line.startswith("u.toml: ") and uet.split(" = ")[1].strip().strip('"') in line and allowed in line


@pytest.mark.parametrize("uet, key, words", [
    ('nscc_base_rtt = "10us"\n', "uet.nscc_base_rtt", "NSCC"),          # cc is 'none': no effect
    ('mode = "rudi"\nmax_pdcs = 1\n', "uet.max_pdcs", "rudi"),           # no PDC at the target
    ('mode = "uud"\nidle_close = "10us"\n', "uet.idle_close", "uud"),   # no PDC to close
    ('target_buffer = "64KiB"\n', "uet.target_buffer", "IBV_WC_REM_ACCESS_ERR"),
    ('target_access = "read"\n', "uet.target_access", "IBV_WC_REM_ACCESS_ERR"),
])
def test_validate_warns_about_a_uet_key_that_does_nothing_or_fails_flows(uet: str, key: str,
                                                                         words: str) -> None:
    from rdmasim.scenario.check import validate

    (p,) = [p for p in validate(loads(UET + uet, "u.toml"))[1] if p.path == key]
    assert words in p.message and "u.toml" in str(p)
    assert not [p for p in validate(loads(UET, "u.toml"))[1] if p.path.startswith("uet.")]
    assert not [p for p in validate(loads(UET + 'cc = "nscc"\nnscc_base_rtt = "10us"\nmax_pdcs = 1\n'
                                          'idle_close = "10us"\n'
                                          'target_buffer = "512KiB"\ntarget_access = "write"\n',
                                          "u.toml"))[1] if p.path.startswith("uet.")]


@pytest.mark.parametrize("gen", ["collective", "incast"])
def test_a_transport_per_generator_is_refused_saying_what_sets_it(gen: str) -> None:
    # [transport] kind applies to every flow of a scenario: a generator's own transport is refused
    # with that said, not as a bare unknown key
    text = (COLLECTIVE.replace('chunk_size = "32KiB"', 'chunk_size = "32KiB"\ntransport = "uet"')
            if gen == "collective" else UET.replace('size = "512KiB"', 'size = "512KiB"\ntransport = "uet"'))
    with pytest.raises(ScenarioError) as ei:
        loads(text, "c.toml")
    (p,) = [p for p in ei.value.problems if p.path == f"traffic.{gen}.transport"]
    assert "[transport] kind" in p.message and "every flow" in p.message
    assert "transport.kind" in p.allowed


def test_a_transport_per_flow_row_or_override_is_refused_the_same_way(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as ei:
        loads(COLLECTIVE, "c.toml", overrides={"traffic.collective.transport": "uet"})
    (p,) = [p for p in ei.value.problems if p.path == "traffic.collective.transport"]
    assert "[transport] kind" in p.message
    rows = ('[transport]\nkind = "uet"\n[topology]\nkind = "back_to_back"\n'
            '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\ntransport = "roce"\n')
    f = tmp_path / "f.toml"
    f.write_text(rows)
    r = subprocess.run([sys.executable, "-m", "rdmasim", "validate", str(f)], capture_output=True, text=True)
    assert r.returncode == 2 and "1 problem" in r.stdout + r.stderr
    (line,) = [ln for ln in (r.stdout + r.stderr).splitlines() if "flows[0].transport" in ln]
    assert "[transport] kind" in line and "'roce'" in line


def test_scenario_results_carry_the_uet_endpoint_counters(tmp_path: Path) -> None:
    # the receiver holds one PDC: its refusals show in the results (table uet_endpoints, summary)
    text = UET + 'max_pdcs = 1\n[outputs]\nformats = ["csv"]\nplots = false\n'
    res = run_scenario(loads(text), out_dir=str(tmp_path / "r"), progress=False)
    ep = res.uet_endpoints
    assert set(ep) == {"h0", "h1", "h2"}
    assert ep["h2"]["pdcs_refused"] > 0 and ep["h2"]["pdcs_created"] == 2
    assert ep["h0"]["syn_sent"] >= 1 and ep["h1"]["syn_sent"] >= 1 and ep["h2"]["syn_sent"] == 0
    back = read_table(tmp_path / "r", "uet_endpoints").set_index("node")
    assert list(back.columns) == list(UET_ENDPOINT_COLUMNS[1:])
    for host, st in ep.items():
        assert back.loc[host].to_dict() == st
    refused = ep["h2"]["pdcs_refused"]
    assert f"{refused:,} SYNs refused" in res.summary()
    free = run_scenario(loads(UET), out_dir="", progress=False)
    assert free.uet_endpoints["h2"]["pdcs_refused"] == 0


def test_roce_results_have_no_uet_endpoint_table(tmp_path: Path) -> None:
    text = TWO_SENDER_INCAST + '[outputs]\nformats = ["csv"]\nplots = false\n'
    res = run_scenario(loads(text), out_dir=str(tmp_path / "r"), progress=False)
    assert res.uet_endpoints == {} and "uet_endpoints" not in res.frames()
    assert not (tmp_path / "r" / "uet_endpoints.csv").exists()
    assert "PDCs" not in res.summary()


def test_idle_close_reaches_the_flows(monkeypatch: pytest.MonkeyPatch) -> None:
    from rdmasim.sim import Simulator

    seen: list[object] = []
    add = Simulator.add_flows

    def spy(self: Simulator, *a: object, **kw: object) -> object:
        seen.append(kw.get("uet"))
        return add(self, *a, **kw)

    monkeypatch.setattr(Simulator, "add_flows", spy)
    on = run_scenario(loads(UET + 'idle_close = "30us"\n'), out_dir="", progress=False)
    assert [r.status for r in on.flows] == ["ok", "ok"]
    assert seen[-1]["idle_close"] == 30_000_000  # type: ignore[index]
    run_scenario(loads(UET), out_dir="", progress=False)
    assert seen[-1]["idle_close"] == 0  # type: ignore[index]
