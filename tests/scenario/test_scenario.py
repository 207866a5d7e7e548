"""Scenario files: validation errors, the CLI's validate/run, examples end to end, determinism."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rdmasim.cli import main
from rdmasim.results import read_table
from rdmasim.scenario import ScenarioError, load, loads, run_scenario
from rdmasim.scenario.docs import render
from rdmasim.scenario.traffic import traffic_table

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))

MINIMAL = """
[[flows]]
src = "a"
dst = "b"
size = "64KiB"
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    return [str(p) for p in info.value.problems]


def test_minimal_file_gets_documented_defaults() -> None:
    sc = loads(MINIMAL)
    assert sc["topology.kind"] == "back_to_back"
    assert sc["link.rate"] == 100 * 10**9
    assert sc["simulation.seed"] == 1
    assert sc.arrays["flows"][0]["verb"] == "WRITE"
    assert sc.arrays["flows"][0]["size"] == 65536


def test_unknown_key_has_suggestion_file_and_path() -> None:
    (msg,) = problems(MINIMAL + "[link]\nrat = '10Gbps'\n")
    assert msg.startswith("s.toml: link.rat = '10Gbps': unknown key; did you mean 'rate'?")
    assert "allowed:" in msg and "delay" in msg


def test_unknown_key_in_array_row() -> None:
    (msg,) = problems(MINIMAL + "[[flows]]\nsrc='a'\ndst='b'\nsise=10\n")
    assert "s.toml: flows[1].sise = 10: unknown key; did you mean 'size'?" in msg


def test_wrong_type_names_value_and_allowed() -> None:
    (msg,) = problems(MINIMAL + "[simulation]\nseed = 'one'\n")
    assert "s.toml: simulation.seed = 'one': expected an integer, got str" in msg
    assert "allowed: int in 0..9" in msg


def test_out_of_range_names_range() -> None:
    (msg,) = problems(MINIMAL + "[qp]\nretry_cnt = 9\n")
    assert msg == "s.toml: qp.retry_cnt = 9: out of range (allowed: int in 0..7)"


def test_bad_unit_and_choice() -> None:
    msgs = problems(MINIMAL + "[link]\nrate = '100Gbsp'\nmtu = 1500\n")
    assert len(msgs) == 2  # all errors at once
    assert any("link.rate = '100Gbsp': cannot read rate" in m for m in msgs)
    assert any(
        "link.mtu = 1500: not an allowed value (allowed: one of 256, 512, 1024, 2048, 4096)" in m
        for m in msgs
    )


def test_semantic_errors() -> None:
    msgs = problems(
        "[[flows]]\nsrc = 'a'\ndst = 'c'\n[qp]\nmtu = 4096\n[link]\nmtu = 1024\n[topology]\nn = 4\n"
    )
    joined = "\n".join(msgs)
    assert "topology.n = 4: does not apply to topology kind 'back_to_back'" in joined
    msgs = problems("[[flows]]\nsrc = 'a'\ndst = 'c'\n[qp]\nmtu = 4096\n[link]\nmtu = 1024\n")
    joined = "\n".join(msgs)
    assert "flows[0].dst = 'c': unknown host" in joined and "(allowed: a, b)" in joined
    assert "qp.mtu = 4096: larger than link.mtu (1024)" in joined
    assert "no traffic" in problems("[simulation]\nseed = 2\n")[0]


def test_cc_override_suggestion() -> None:
    (msg,) = problems(
        MINIMAL + "[congestion_control]\nalgorithm='dcqcn'\n[congestion_control.overrides]\n"
        "rate_timr = '10us'\n"
    )
    assert "congestion_control.overrides.rate_timr" in msg and "did you mean 'rate_timer'" in msg


def test_cc_override_byte_counter_must_be_an_integer() -> None:
    """byte_counter = 0.5 used to reach the core as 0 (the byte counter off)."""
    (msg,) = problems(
        MINIMAL + "[congestion_control]\nalgorithm='dcqcn'\n[congestion_control.overrides]\n"
        "byte_counter = 0.5\n"
    )
    assert "congestion_control.overrides.byte_counter" in msg
    assert "byte_counter=0.5: allowed an integer >= 0" in msg


def test_validate_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.toml"
    good.write_text(MINIMAL)
    assert main(["validate", str(good)]) == 0
    assert "ok" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text(MINIMAL + "[qp]\ntimeout = 0\nmtuu = 1\n")
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: qp.timeout = 0: out of range" in err and "did you mean 'mtu'" in err
    assert "2 problem(s)" in err
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("[link\n")
    assert main(["validate", str(syntax)]) == 2


def test_docs_in_sync() -> None:
    assert (ROOT / "docs" / "scenarios.md").read_text() == render(), (
        "regenerate: python -m rdmasim.scenario.docs > docs/scenarios.md"
    )


def _check_sense(rows: list[dict[str, Any]], n: int) -> None:
    assert len(rows) == n
    for r in rows:
        assert r["status"] == "ok", r
        assert int(r["bytes_delivered"]) == int(r["size_bytes"]), r
        assert int(r["fct_ps"]) >= int(r["ideal_fct_ps"]) > 0, r
        assert int(r["finish_ps"]) == int(r["start_ps"]) + int(r["fct_ps"])
        assert float(r["slowdown"]) >= 1.0


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_examples_run_end_to_end(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(path)]) == 0
    out = tmp_path / "out"
    deadlock = path.stem == "pfc_deadlock"  # its flows never finish, by design: exit status 1
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == (1 if deadlock else 0)
    assert "flows completed" in capsys.readouterr().out
    rows = read_table(out, "flows").to_dict("records")
    sc = load(path)
    n = len(traffic_table(sc)[0])
    if deadlock:
        assert len(rows) == n and all(r["status"] == "incomplete" for r in rows)
    else:
        _check_sense(rows, n)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["seed"] == sc.values["simulation.seed"] and meta["rdmasim_version"]
    assert (out / "scenario.toml").read_text() == path.read_text()
    counters = json.loads((out / "switch_counters.json").read_text())
    assert isinstance(counters, dict)


def test_incast_uses_pfc_or_dcqcn_and_drops_nothing(tmp_path: Path) -> None:
    res = run_scenario(load(ROOT / "examples" / "incast.toml"), out_dir="", progress=False)
    tot = res.switches["s0"]["totals"]
    assert tot["drops"] == 0
    assert tot["ecn_marked"] > 0 and sum(f.cnps for f in res.flows) > 0
    # the receiver's link carries every byte: the last flow cannot finish before size*8/rate
    total = sum(f.size_bytes for f in res.flows)
    assert max(f.finish_ps for f in res.flows if f.finish_ps) >= total * 8 * 10**12 // (100 * 10**9)


def test_same_seed_same_table_and_loss_recovered(tmp_path: Path) -> None:
    sc = load(ROOT / "examples" / "lossy_b2b.toml")
    a = run_scenario(sc, out_dir="", progress=False).flows_csv()
    b = run_scenario(load(ROOT / "examples" / "lossy_b2b.toml"), out_dir="", progress=False).flows_csv()
    assert a == b
    text = (
        (ROOT / "examples" / "lossy_b2b.toml")
        .read_text()
        .replace("probability = 0.001", "probability = 0.02")
    )
    res = run_scenario(loads(text), out_dir="", progress=False)
    assert all(f.status == "ok" for f in res.flows)
    assert sum(f.retx_pkts for f in res.flows) > 0


def test_explicit_graph_and_link_failure(tmp_path: Path) -> None:
    text = """
[topology]
kind = "explicit"
hosts = ["x", "y"]
switches = ["s1", "s2"]
[[topology.links]]
a = "x"
b = "s1"
[[topology.links]]
a = "s1"
b = "s2"
[[topology.links]]
a = "s1"
b = "s2"
delay = "3us"
[[topology.links]]
a = "s2"
b = "y"
rate = "40Gbps"
[[impairments.failures]]
link = ["s1", "s2"]
at = "5us"
[[flows]]
src = "x"
dst = "y"
size = "200KB"
verb = "SEND"
[outputs]
dir = "%s"
pcap = true
""" % (tmp_path / "o")
    res = run_scenario(loads(text), progress=False)
    (f,) = res.flows
    assert f.status == "ok" and f.bytes_delivered == 200_000
    assert f.fct_ps >= 200_000 * 8 * 10**12 // (40 * 10**9)
    assert (tmp_path / "o" / "capture.pcap").stat().st_size > 0


def test_unknown_impairment_link_reported() -> None:
    # found by validation, with the file's other problems (before any fabric is built)
    with pytest.raises(
        ScenarioError, match=r"s.toml: impairments.loss\[0\].link = \['a', 'z'\]: no such link"
    ):
        loads(MINIMAL + "[[impairments.loss]]\nlink = ['a', 'z']\nprobability = 0.1\n", "s.toml")


def test_validate_reports_missing_impairment_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(MINIMAL + "[[impairments.failures]]\nlink = ['a', 'q']\nat = '1us'\n")
    assert main(["validate", str(f)]) == 2
    assert (
        "impairments.failures[0].link = ['a', 'q']: no such link (allowed: two nodes a link joins"
        in capsys.readouterr().err
    )


def test_progress_line_and_incomplete_flows(tmp_path: Path) -> None:
    import io

    text = MINIMAL.replace("64KiB", "8MiB") + "[simulation]\nduration = '50us'\n"
    stream = io.StringIO()
    res = run_scenario(loads(text), out_dir="", progress=True, stream=stream)
    line = stream.getvalue()
    assert "sim" in line and "events/s" in line and "ETA" in line and "flows 0/1" in line
    (f,) = res.flows
    assert f.status == "incomplete" and f.finish_ps is None and f.fct_ps is None
    assert res.sim_time_ps == 50 * 10**6
    out = tmp_path / "o"
    p = tmp_path / "s.toml"
    p.write_text(text)
    assert main(["run", str(p), "--out", str(out), "--quiet"]) == 1  # not every flow completed
    (row,) = read_table(out, "flows").to_dict("records")
    assert row["status"] == "incomplete" and pd.isna(row["fct_ps"]) and pd.isna(row["finish_ps"])


def test_link_failure_and_recovery_in_time(tmp_path: Path) -> None:
    base = MINIMAL.replace("64KiB", "1MiB") + "[qp]\ntimeout = 4\n"
    healthy = run_scenario(loads(base), out_dir="", progress=False).flows[0]
    cut = base + "[[impairments.failures]]\nlink = ['a', 'b']\nat = '20us'\nrecover = '200us'\n"
    hurt = run_scenario(loads(cut), out_dir="", progress=False).flows[0]
    assert healthy.status == hurt.status == "ok"
    assert hurt.fct_ps > healthy.fct_ps + 100 * 10**6  # waited out the outage
    assert hurt.retx_pkts > 0


def test_switch_counters_written_without_holding_their_text(tmp_path: Path) -> None:
    """switch_counters.json is streamed to the file: writing it takes far less memory than its
    text (a fabric of 8 k hosts has tens of MB of counters)."""
    import tracemalloc

    import rdmasim
    from rdmasim.results import RunResult

    sw = next(iter(rdmasim.fat_tree(4, seed=1).sim.switches.values()))
    ports, totals = sw.stats(), sw.totals()
    switches = {f"sw{i}": {"totals": dict(totals), "ports": [dict(p) for p in ports * 8]} for i in range(60)}
    res = RunResult(flows=[], switches=switches, seed=1, sim_time_ps=0, events=0, wall_s=0.0)
    tracemalloc.start()
    try:
        res.write_into(tmp_path, formats=["csv"], switch_counters=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    size = (tmp_path / "switch_counters.json").stat().st_size
    assert json.loads((tmp_path / "switch_counters.json").read_text()) == switches
    assert size > 1_000_000 and peak < size / 2, (peak, size)
