"""`rdmasim import hpcc` turns the HPCC ns-3 simulator's input files (config.txt, topology.txt,
flow.txt, trace.txt, in the formats its scratch/third.cc reads) into a scenario that validates and
runs, names every key it cannot map, and refuses bad input with one line naming file, line and
value; `rdmasim export-fct` writes the results as ns-3's fct.txt."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.hpcc.fct import FIRST_SPORT, ip_node, node_ip, parse_fct
from rdmasim.scenario import load

# 5 nodes: hosts 0, 1, 3, 4 and switch 2 (ids as ns-3 numbers them; a trailing explanation line as in
# the repository's topology.txt)
TOPOLOGY = """5 1 4
2
0 2 100Gbps 0.001ms 0
1 2 100Gbps 1000ns 0
3 2 100Gbps 0.001ms 0.001
4 2 100Gbps 0.001ms 0
src0 dst0 rate delay error_rate
"""
FLOWS = """3
0 4 3 100 60000 0.000001
1 4 3 200 30000 0.000002
0 4 3 100 1000 0.000003
"""
TRACE = """2
2 4

First line: tracing node #
"""
CONFIG = """ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1
PACKET_PAYLOAD_SIZE 1000
TOPOLOGY_FILE mix/topology.txt
FLOW_FILE mix/flow.txt
TRACE_FILE mix/trace.txt
TRACE_OUTPUT_FILE mix/mix.tr
FCT_OUTPUT_FILE mix/fct.txt
PFC_OUTPUT_FILE mix/pfc.txt
SIMULATOR_STOP_TIME 0.01
CC_MODE 3
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
MIN_RATE 100Mb/s
DCTCP_RATE_AI 1000Mb/s
ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0
HAS_WIN 1
GLOBAL_T 1
VAR_WIN 1
FAST_REACT 1
U_TARGET 0.95
MI_THRESH 0
INT_MULTI 1
MULTI_RATE 0
SAMPLE_FEEDBACK 0
PINT_LOG_BASE 1.05
PINT_PROB 1.0
RATE_BOUND 1
ACK_HIGH_PRIO 0
LINK_DOWN 0 0 0
ENABLE_TRACE 1
KMAX_MAP 2 25000000000 400 100000000000 1600
KMIN_MAP 2 25000000000 100 100000000000 400
PMAX_MAP 2 25000000000 0.2 100000000000 0.2
BUFFER_SIZE 32
QLEN_MON_FILE mix/qlen.txt
QLEN_MON_START 2000000000
QLEN_MON_END 2010000000
FOO_BAR 7
"""
#: host 0 with a second NIC port (as the repository's ali_32host_10rack.txt: two links per host)
DUAL_HOMED = TOPOLOGY.replace("5 1 4", "5 1 5").replace(
    "4 2 100Gbps 0.001ms 0\n", "4 2 100Gbps 0.001ms 0\n0 2 25Gbps 1us 0\n"
)
#: the keys of CONFIG that rdmasim cannot express (each must be named)
UNSUPPORTED = [
    "PFC_OUTPUT_FILE",
    "QLEN_MON_FILE",
    "QLEN_MON_START",
    "QLEN_MON_END",
    "FOO_BAR",
    "TRACE_FILE node selection",
]
#: DCQCN/DCTCP/PINT keys HPCC does not read
UNUSED = [
    "ALPHA_RESUME_INTERVAL",
    "RATE_DECREASE_INTERVAL",
    "CLAMP_TARGET_RATE",
    "RP_TIMER",
    "EWMA_GAIN",
    "FAST_RECOVERY_TIMES",
    "RATE_HAI",
    "DCTCP_RATE_AI",
    "PINT_LOG_BASE",
    "PINT_PROB",
]


def _mix(
    tmp: Path, config: str = CONFIG, topology: str = TOPOLOGY, flows: str = FLOWS, trace: str = TRACE
) -> Path:
    """An ns-3 `simulation/` folder: mix/config.txt naming mix/topology.txt etc."""
    mix = tmp / "sim" / "mix"
    mix.mkdir(parents=True)
    (mix / "config.txt").write_text(config)
    (mix / "topology.txt").write_text(topology)
    (mix / "flow.txt").write_text(flows)
    (mix / "trace.txt").write_text(trace)
    return mix


def _import(tmp: Path, src: Path, *extra: str) -> tuple[int, Path]:
    out = tmp / "imported.toml"
    return main(["import", "hpcc", str(src), "-o", str(out), *extra]), out


def test_imported_scenario_maps_topology_flows_and_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _import(tmp_path, _mix(tmp_path))
    assert code == 0
    v = load(out).values
    assert v["topology.kind"] == "explicit"
    assert v["topology.hosts"] == ["h0", "h1", "h3", "h4"] and v["topology.switches"] == ["s2"]
    links = load(out).arrays["topology.links"]
    assert [(r["a"], r["b"], r["rate"], r["delay"]) for r in links] == [
        ("h0", "s2", "100Gbps", "1us"),
        ("h1", "s2", "100Gbps", "1us"),
        ("h3", "s2", "100Gbps", "1us"),
        ("h4", "s2", "100Gbps", "1us"),
    ]
    loss = load(out).arrays["impairments.loss"]
    assert [(r["link"], r["probability"]) for r in loss] == [(["h3", "s2"], 0.001)]
    flows = load(out).arrays["flows"]
    assert [(f["src"], f["dst"], f["size"], f["start"], f["priority"]) for f in flows] == [
        ("h0", "h4", 60000, 1_000_000, 3),
        ("h1", "h4", 30000, 2_000_000, 3),
        ("h0", "h4", 1000, 3_000_000, 3),
    ]
    assert v["congestion_control.algorithm"] == "hpcc"
    assert v["congestion_control.hpcc.eta"] == 0.95 and v["congestion_control.hpcc.max_stage"] == 0
    assert v["congestion_control.hpcc.ai_rate"] == "50Mbps" and v["congestion_control.hpcc.ack_every"] == 1
    # T as ns-3: 2 x 2 us propagation + a 1000 B packet at 100 Gb/s on each of 2 hops (80 ns each)
    assert v["congestion_control.hpcc.base_rtt"] == 4_160_000
    assert (v["switch.ecn.kmin"], v["switch.ecn.kmax"], v["switch.ecn.pmax"]) == (400_000, 1_600_000, 0.2)
    assert v["switch.buffer"] == 32 * 1024 * 1024
    assert v["nic.overrides"]["max_unacked_psns"] == 1 << 22 and v["nic.overrides"]["ack_req_interval"] == 1
    assert v["qp.mtu"] == 1024 and v["qp.recovery"] == "gbn"
    assert v["simulation.duration"] == 10**10
    assert v["outputs.trace"] is False  # trace.txt names 2 of 5 nodes: not expressible
    text = out.read_text()
    assert re.search(r"^mtu = 1024 +# PACKET_PAYLOAD_SIZE 1000 -> 1024", text, re.M)
    printed = capsys.readouterr().out
    assert "note: PACKET_PAYLOAD_SIZE 1000" in printed and "qp.mtu = 1024" in printed


def test_every_unsupported_key_is_named_in_the_file_and_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _import(tmp_path, _mix(tmp_path) / "config.txt")
    assert code == 0
    printed = capsys.readouterr().out
    text = out.read_text()
    block = text.split("# NOT SUPPORTED")[1].split("\n\n")[0]
    for key in UNSUPPORTED:
        assert f"not supported: {key}" in printed, key
        assert f"#   - {key}" in block, key
    for key in UNUSED:
        assert f"not used: {key}" in printed, key
        assert f"#   - {key}" in text, key
    assert f"{len(UNSUPPORTED)} key(s) not supported, {len(UNUSED)} not used" in printed


def test_strict_refuses_unsupported_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _import(tmp_path, _mix(tmp_path), "--strict")
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "FOO_BAR" in err[0] and "(--strict)" in err[0]


def test_import_validates_and_runs_and_fct_txt_parses_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _import(tmp_path, _mix(tmp_path))
    assert code == 0
    assert main(["validate", str(out)]) == 0
    res = tmp_path / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    fct = tmp_path / "fct.txt"
    assert main(["export-fct", str(res), "--format", "hpcc", "-o", str(fct)]) == 0
    text = fct.read_text()
    first = text.splitlines()[0].split()
    assert first[:6] == ["0b000001", "0b000401", "10000", "100", "60000", "1000"]  # h0 -> h4, ns
    assert all(re.fullmatch(r"[0-9a-f]{8}", c) for c in first[:2])
    lines = parse_fct(text)
    assert [(ip_node(x.sip), ip_node(x.dip), x.sport, x.dport, x.size, x.start_time) for x in lines] == [
        (0, 4, FIRST_SPORT, 100, 60000, 1000),
        (1, 4, FIRST_SPORT, 200, 30000, 2000),
        (0, 4, FIRST_SPORT + 1, 100, 1000, 3000),
    ]
    from rdmasim.results import read_table

    flows = read_table(res, "flows").sort_values("flow_id")
    assert [x.fct for x in lines] == [(int(p) + 500) // 1000 for p in flows["fct_ps"]]
    assert [x.standalone_fct for x in lines] == [(int(p) + 500) // 1000 for p in flows["ideal_fct_ps"]]
    assert all(x.fct >= x.standalone_fct > 0 for x in lines)


def test_node_ip_is_ns3s() -> None:
    assert node_ip(0) == 0x0B000001 and node_ip(4) == 0x0B000401 and node_ip(300) == 0x0B012C01
    assert all(ip_node(node_ip(i)) == i for i in (0, 1, 255, 256, 347, 65535))


@pytest.mark.parametrize(
    "cc, algo, key, value",
    [
        ("1", "dcqcn", "congestion_control.overrides", None),
        ("7", "timely", "congestion_control.timely.hai_factor", 2.0),
        ("8", "dctcp", "congestion_control.dctcp.ai_rate", 10**9),
    ],
)
def test_other_cc_modes_map_and_validate(tmp_path: Path, cc: str, algo: str, key: str, value: object) -> None:
    code, out = _import(tmp_path, _mix(tmp_path, CONFIG.replace("CC_MODE 3", f"CC_MODE {cc}")))
    assert code == 0
    v = load(out).values
    assert v["congestion_control.algorithm"] == algo
    assert v["congestion_control.notification_point"] == (algo == "dcqcn")  # CNPs only where read
    if value is not None:
        assert v[key] == value
    else:
        ov = v[key]
        assert (ov["rate_timer"], ov["alpha_timer"], ov["rate_reduce_period"]) == ("900us", "1us", "4us")
        assert ov["alpha_update_on_timer"] and ov["byte_counter"] == 0 and ov["cnp_interval"] == 0
        assert not ov["clamp_tgt_rate"] and ov["clamp_tgt_rate_after_time_inc"]
        assert (ov["g"], ov["ai_rate"], ov["hai_rate"], ov["fast_recovery_steps"]) == (
            0.00390625,
            "50Mbps",
            "100Mbps",
            1,
        )
    assert main(["validate", str(out)]) == 0


def _bad(tmp: Path, capsys: pytest.CaptureFixture[str], src: Path) -> str:
    code, out = _import(tmp, src)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not out.exists()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize(
    "what, kw, expect",
    [
        (
            "link rate",
            {"topology": TOPOLOGY.replace("1 2 100Gbps 1000ns", "1 2 fast 1000ns")},
            "topology.txt:4: link 1 rate = 'fast'",
        ),
        (
            "link count",
            {"topology": "5 1 9\n2\n0 2 100Gbps 1us 0\n"},
            "topology.txt:3: file ends where link 1 src",
        ),
        (
            "zero rate",
            {"config": CONFIG.replace("RATE_AI 50Mb/s", "RATE_AI 0Mb/s")},
            "config.txt:18: RATE_AI = ",
        ),
        (
            "dual-homed host",
            {"topology": DUAL_HOMED},
            "topology.txt:7: host 0 has a second link (the first on line 3)",
        ),
        ("switch as flow end", {"flows": "1\n2 4 3 100 1000 0\n"}, "flow.txt:2: flow 0 src = 2: a switch"),
        (
            "flow size",
            {"flows": "1\n0 4 3 100 0 0\n"},
            "flow.txt:2: flow 0 size = 0: out of range (allowed: 1..",
        ),
        ("start time", {"flows": "1\n0 4 3 100 10 soon\n"}, "flow.txt:2: flow 0 start_time = 'soon'"),
        (
            "priority",
            {"flows": "1\n0 4 9 100 10 0\n"},
            "flow.txt:2: flow 0 priority = 9: out of range (allowed: 0..7)",
        ),
        (
            "PINT",
            {"config": CONFIG.replace("CC_MODE 3", "CC_MODE 10")},
            "config.txt:11: CC_MODE = 10 (HPCC-PINT): rdmasim has no such congestion control",
        ),
        (
            "ack interval",
            {"config": CONFIG.replace("L2_ACK_INTERVAL 1", "L2_ACK_INTERVAL 0")},
            "config.txt:24: L2_ACK_INTERVAL = 0",
        ),
        (
            "kmax map",
            {
                "config": CONFIG.replace(
                    "KMAX_MAP 2 25000000000 400 100000000000 1600", "KMAX_MAP 1 25000000000 400"
                )
            },
            "KMAX_MAP has no entry for switch port rate(s) 100000000000 b/s",
        ),
        (
            "number",
            {"config": CONFIG.replace("U_TARGET 0.95", "U_TARGET high")},
            "config.txt:30: U_TARGET = 'high'",
        ),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, kw: dict[str, str], expect: str
) -> None:
    line = _bad(tmp_path, capsys, _mix(tmp_path, **kw))
    assert line.startswith("rdmasim import: error: ") and expect in line, line


def test_missing_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mix = _mix(tmp_path)
    (mix / "flow.txt").unlink()
    line = _bad(tmp_path, capsys, mix)
    assert "flow.txt" in line and "config.txt" in line and "not found" in line


def test_folder_without_config_uses_third_cc_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mix = _mix(tmp_path)
    (mix / "config.txt").unlink()
    # third.cc's default L2_ACK_INTERVAL is 0: no flow would complete, so the import is refused
    assert "L2_ACK_INTERVAL = 0" in _bad(tmp_path, capsys, mix)


def test_config_doc_explanations_are_ignored(tmp_path: Path) -> None:
    doc = "\n".join(f"{line} {{an explanation, with: punctuation}}" for line in CONFIG.splitlines())
    code, out = _import(tmp_path, _mix(tmp_path, doc))
    assert code == 0 and load(out).values["congestion_control.hpcc.eta"] == 0.95


def test_tracing_every_node_turns_the_trace_on_and_unread_lines_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ns-3 skips ids past the last node (the repository's trace.txt lists 348 ids for 66 nodes)
    mix = _mix(tmp_path, trace="7\n0 1 2 3 4 5 300\n", flows=FLOWS + "1 0 3 100 5 0\n")
    code, out = _import(tmp_path, mix)
    assert code == 0 and load(out).values["outputs.trace"] is True
    quiet = capsys.readouterr().out  # lines not read are said without -v
    assert "note: flow.txt: 1 line(s) after the 3 declared flows are not read" in quiet
    assert "past the last node" not in quiet
    assert _import(tmp_path, mix, "-v")[0] == 0
    printed = capsys.readouterr().out
    assert "TRACE_FILE node selection" not in printed
    assert "2 node id(s) past the last node skipped" in printed
    assert "flow.txt: 1 line(s) after the 3 declared flows are not read" in printed


STAR = """
[topology]
kind = "star"
n = 3
[[flows]]
src = "h0"
dst = "h2"
size = "16KiB"
[[flows]]
src = "h0"
dst = "h2"
size = "4KiB"
start = "1us"
[outputs]
plots = false
"""


def test_export_of_a_scenario_not_imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sc = tmp_path / "star.toml"
    sc.write_text(STAR)
    res = tmp_path / "res"
    assert main(["run", str(sc), "--out", str(res), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["export-fct", str(res)]) == 0  # stdout
    captured = capsys.readouterr()
    assert ("note: standalone_fct: the run's ideal FCT 'wire' (headers and a packet per hop, as ns-3's)"
            in captured.err)
    lines = parse_fct(captured.out)
    assert [(x.sip, x.dip, x.sport, x.dport, x.size, x.start_time) for x in lines] == [
        (node_ip(0), node_ip(2), FIRST_SPORT, 100, 16384, 0),
        (node_ip(0), node_ip(2), FIRST_SPORT + 1, 100, 4096, 1000),
    ]
    assert "dport 100 for every flow" in captured.err


def test_export_of_a_folder_without_results_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export-fct", str(tmp_path), "-o", str(tmp_path / "fct.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rdmasim export-fct: error:" in err[0] and "flows.parquet or flows.csv" in err[0]
    assert not (tmp_path / "fct.txt").exists()


def test_parse_fct_names_a_short_line() -> None:
    with pytest.raises(ValueError, match=r"fct.txt:2: 3 columns \(allowed: 8"):
        parse_fct("0b000001 0b000101 10000 100 1 0 5 4\n0b000001 0b000101 1\n")


def test_a_host_without_link_is_left_out_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # node 5: a host no link reaches (ns-3 runs with it; rdmasim hosts need a link)
    topo = TOPOLOGY.replace("5 1 4", "6 1 4")
    code, out = _import(tmp_path, _mix(tmp_path, topology=topo))
    assert code == 0 and load(out).values["topology.hosts"] == ["h0", "h1", "h3", "h4"]
    assert (
        "note: topology.txt: 1 host(s) with no link and no flow left out (rdmasim hosts need a link): 5"
        in (capsys.readouterr().out)
    )
    assert main(["validate", str(out)]) == 0
    line = _bad(tmp_path / "b", capsys, _mix(tmp_path / "b", topology=topo, flows="1\n0 5 3 100 10 0\n"))
    assert "flow.txt:2: flow dst = 5: host 5 has no link in topology.txt" in line


def test_an_absent_key_that_does_not_map_says_it_is_third_ccs_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = "\n".join(line for line in CONFIG.splitlines() if not line.startswith(("MULTI_RATE", "VAR_WIN")))
    code, out = _import(tmp_path, _mix(tmp_path, config))
    printed = capsys.readouterr().out
    assert code == 0
    assert (
        "not supported: MULTI_RATE 1 (absent: third.cc's default): rdmasim's HPCC keeps one rate" in printed
    )
    assert "not supported: VAR_WIN 0 (absent: third.cc's default): ns-3 keeps the window" in printed
    assert "#   - MULTI_RATE 1 (absent: third.cc's default)" in out.read_text()


def test_written_toml_reads_back_exactly() -> None:
    import tomllib

    from rdmasim.hpcc.toml_out import Table, render

    odd = 'a "quoted" \\ path/ü\tx'
    vals = {"s": odd, "i": 2**62, "f": 0.00390625, "b": False, "l": ["h0", "s2"], "t": {"k": 1, "m": "x"}}
    text = render(
        ["header", "", "  - a note"], [Table("x", vals, after={"i": "why"}), Table("y", {"v": 1}, array=True)]
    )
    assert tomllib.loads(text) == {"x": vals, "y": [{"v": 1}]}
    assert text.startswith("# header\n#\n#   - a note\n") and "i = 4611686018427387904  # why" in text
