"""`rdmasim import htsim` turns an htsim connection matrix (.cm, the format csg-htsim's
ConnectionMatrix::load reads) and htsim's topology options into a scenario that validates and runs,
names every field it cannot map, and refuses bad input with one line naming file, line and value
(exit status 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from rdmasim.cli import main
from rdmasim.htsim.cm import read_cm
from rdmasim.results import read_table

# a permutation of 8 hosts, as connection_matrices/gen_permutation.py writes one (start in ps)
PERM8 = """Nodes 8
Connections 8
0->5 id 1 start 0 size 100000
1->4 id 2 start 0 size 100000
2->7 id 3 start 0 size 100000
3->6 id 4 start 0 size 100000
4->0 id 5 start 0 size 100000
5->1 id 6 start 0 size 100000
6->3 id 7 start 0 size 100000
7->2 id 8 start 0 size 100000
"""

# start times, a trigger (as gen_serialn_alltoall.py writes: a flow fires a trigger when sent, the
# next waits on it), a priority and a failure record
SERIAL = """# serial pair
Nodes 4
Connections 3
Triggers 1
Failures 1
0->1 id 1 start 2000000 size 50000 send_done_trigger 1
1->2 id 2 trigger 1 size 50000
2->3 id 3 start 1500000.5 size 20000 prio 5
trigger id 1 oneshot
failure switch_type TOR switch_id 0 link_id 1
"""


def _write(tmp: Path, text: str, name: str = "m.cm") -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def _import(tmp: Path, cm: Path, *extra: str) -> tuple[int, Path]:
    out = tmp / "imported.toml"
    return main(["import", "htsim", str(cm), "-o", str(out), *extra]), out


def test_permutation_of_8_hosts_imports_validates_and_every_flow_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _import(tmp_path, _write(tmp_path, PERM8), "--linkspeed", "50000", "--mtu", "4096")
    assert code == 0
    sc = tomllib.loads(out.read_text())
    assert sc["topology"] == {"kind": "fat_tree", "k": 4}  # the smallest fat tree with >= 8 hosts
    assert sc["link"] == {"rate": "50Gbps", "delay": "1us", "mtu": 4096}
    flows = sc["flows"]
    # htsim numbers fat-tree hosts by pod, edge switch, port: host 5 is pod 1, edge 0, port 1
    assert (flows[0]["src"], flows[0]["dst"], flows[0]["size"], flows[0]["start"]) == (
        "h0_0_0",
        "h1_0_1",
        100000,
        "0ps",
    )
    assert sorted(f["src"] for f in flows) == sorted(f["dst"] for f in flows)  # a permutation
    assert "0 field(s) not supported" in capsys.readouterr().out
    assert main(["validate", str(out)]) == 0
    res = tmp_path / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    done = read_table(res, "flows")
    assert len(done) == 8 and set(done["status"]) == {"ok"}


def test_star_times_and_triggers_named_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cm = _write(tmp_path, SERIAL)
    code, out = _import(tmp_path, cm, "--topology", "star", "--ignore-triggers", "--q", "35")
    assert code == 0
    printed = capsys.readouterr().out
    text = out.read_text()
    for named in (
        "m.cm:7: trigger 1: flow 2 starts at 0",
        "m.cm:6: send_done_trigger 1",
        "m.cm:8: prio 5",
        "m.cm:9: trigger id 1 oneshot",
        "m.cm:10: failure switch_type TOR switch_id 0 link_id 1",
        "q 35 (packets per switch port queue)",
    ):
        assert f"not supported: {named}" in printed, named
        assert named in text, named
    sc = tomllib.loads(text)
    assert sc["topology"] == {"kind": "star", "n": 4}
    assert [(f["src"], f["dst"], f["start"]) for f in sc["flows"]] == [
        ("h0", "h1", "2us"),
        ("h1", "h2", "0ps"),
        ("h2", "h3", "1500ns"),  # htsim truncates the fraction of a picosecond
    ]
    res = tmp_path / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    assert set(read_table(res, "flows")["status"]) == {"ok"}


def test_trigger_maps_to_after_and_the_flow_starts_when_its_trigger_flow_is_done(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _import(tmp_path, _write(tmp_path, SERIAL), "--topology", "star", "-v")
    assert code == 0
    printed = capsys.readouterr().out
    assert "m.cm:7: trigger 1: flow 2 starts when flow 1 is done: after = [1]" in printed
    assert "not supported: m.cm:9: trigger id 1" not in printed and "send_done_trigger 1" not in printed
    flows = tomllib.loads(out.read_text())["flows"]
    assert (flows[0]["id"], flows[1]["after"], flows[1]["start"]) == (1, [1], "0ps")
    res = tmp_path / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    done = read_table(res, "flows")
    assert set(done["status"]) == {"ok"}
    assert done["start_ps"][1] == done["finish_ps"][0]  # htsim's send_done: the sender has its last ACK


def test_barrier_of_two_waits_for_a_completion_and_a_receipt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cm = _write(
        tmp_path,
        "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 5 start 0 size 4000 send_done_trigger 2\n"
        "2->3 id 6 start 0 size 90000 recv_done_trigger 2\n1->2 id 7 trigger 2 size 1000\n"
        "trigger id 2 barrier count 2\n",
    )
    code, out = _import(tmp_path, cm, "--topology", "star", "-v")
    printed = capsys.readouterr().out
    assert code == 0 and "0 field(s) not supported" in printed
    assert ("m.cm:6: trigger 2: flow 7 starts when flow 5 is done; flow 6's bytes have all arrived: "
            "after = [5], after_received = [6]") in printed
    flows = tomllib.loads(out.read_text())["flows"]
    assert (flows[2]["after"], flows[2]["after_received"]) == ([5], [6])
    res = tmp_path / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    done = read_table(res, "flows")
    # flow 6 (90000 B) is the later: flow 7 starts when its bytes are in, before its ACK is back
    assert done["finish_ps"][0] < done["start_ps"][2] < done["finish_ps"][1]


def test_strict_refuses_what_does_not_map(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _import(tmp_path, _write(tmp_path, SERIAL), "--ignore-triggers", "--strict")
    assert code == 2 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "(--strict)" in err[0] and "prio 5" in err[0]


def test_send_done_trigger_nobody_waits_for_maps_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cm = _write(
        tmp_path,
        "Nodes 2\nConnections 1\nTriggers 1\n0->1 id 1 start 0 size 10 send_done_trigger 4\n"
        "trigger id 4 barrier count 2\n",
    )
    code, _ = _import(tmp_path, cm, "--topology", "star", "-v")
    printed = capsys.readouterr().out
    assert code == 0 and "0 field(s) not supported" in printed
    assert "note: m.cm:4: send_done_trigger 4: trigger 4 starts no flow: no effect" in printed


def _bad(tmp: Path, capsys: pytest.CaptureFixture[str], text: str | None, *extra: str) -> str:
    cm = tmp / "bad.cm" if text is None else _write(tmp, text, "bad.cm")
    code, out = _import(tmp, cm, *extra)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and not out.exists(), err
    return err[0]


@pytest.mark.parametrize(
    ("text", "extra", "expect"),
    [
        (None, (), "bad.cm: no such file"),
        (
            "Nodes 8\nConnections 2\n0->5 start 0 size 10\n0-5 start 0 size 10\n",
            (),
            "bad.cm:4: '0-5': not a record",
        ),
        ("Nodes 8\nConnections 1\n0->5 start 0 size ten\n", (), "bad.cm:3: size 'ten': not an integer"),
        (
            "Nodes 8\nConnections 1\n0->5 start 0 size 10 colour red\n",
            (),
            "bad.cm:3: 'colour': unknown connection field",
        ),
        ("Nodes 8\nConnections 1\n0->5 size 10\n", (), "bad.cm:3: 0->5 has no start and no trigger"),
        ("Nodes 8\nConnections 1\n0->5 start 0\n", (), "bad.cm:3: 0->5 has no size"),
        ("Nodes 8\nConnections 2\n0->5 start 0 size 10\n", (), "bad.cm: Connections 2: the file has 1"),
        (
            "Nodes 8\nConnections 1\n0->9 start 0 size 10\n",
            ("--topology", "star"),
            "bad.cm:3: destination host 9: beyond the topology's 8 hosts (allowed: 0..7)",
        ),
        (
            "Nodes 16\nConnections 1\n0->20 start 0 size 10\n",
            (),
            "bad.cm:3: destination host 20: beyond the topology's 16 hosts (allowed: 0..15)",
        ),
        (
            "Nodes 8\nConnections 1\n3->3 start 0 size 10\n",
            (),
            "bad.cm:3: 3->3: a flow from a host to itself",
        ),
        ("Nodes 8\nConnections 1\n0->5 start -1 size 10\n", (), "bad.cm:3: start '-1': not a time"),
        (
            "Nodes 8\nConnections 1\nTriggers 1\n0->5 id 1 trigger 1 size 10\ntrigger id 1 oneshot\n",
            (),
            "bad.cm:4: trigger 1: flow 1 waits on trigger 1, no connection fires it",
        ),
        (
            "Nodes 8\nConnections 3\nTriggers 1\n0->5 id 1 start 0 size 10 send_done_trigger 1\n"
            "1->5 id 2 start 0 size 10 send_done_trigger 1\n2->3 id 3 trigger 1 size 10\n"
            "trigger id 1 oneshot\n",
            (),
            "bad.cm:6: trigger 1: flow 3 waits on trigger 1, oneshot, fired by 2 activations",
        ),
        (
            "Nodes 8\nConnections 3\nTriggers 1\n0->5 id 1 start 0 size 10 send_done_trigger 1\n"
            "2->3 id 2 trigger 1 size 10\n2->4 id 3 trigger 1 size 10\ntrigger id 1 multishot\n",
            (),
            "bad.cm:5: trigger 1: flow 2 waits on trigger 1, multishot, 1 activation(s) for 2 waiting flows: "
            "htsim never starts flow 3 (line 6)",
        ),
        (
            "Nodes 8\nConnections 2\nTriggers 1\n0->5 id 1 start 0 size 10 send_done_trigger 1\n"
            "2->3 id 2 trigger 1 size 10\ntrigger id 1 barrier count 2\n",
            (),
            "bad.cm:5: trigger 1: flow 2 waits on trigger 1, barrier count 2, fired by 1 activation(s): "
            "htsim never fires it",
        ),
        (
            "Nodes 8\nConnections 2\nTriggers 1\n0->5 id 1 start 0 size 10 send_done_trigger 1 "
            "recv_done_trigger 1\n2->3 id 2 trigger 1 size 10\ntrigger id 1 barrier count 1\n",
            (),
            "bad.cm:5: trigger 1: flow 2 waits on trigger 1, barrier count 1, fired by 2 activation(s): "
            "htsim fires it at the 1st activation and aborts at the next",
        ),
        (
            "Nodes 8\nConnections 1\n0->5 id 1 trigger 2 size 10\n",
            ("--ignore-triggers",),
            "bad.cm:3: trigger 2: no 'trigger id 2",
        ),
        ("Nodes 8\nConnections 1\n0->5 start 0 size 10\n# late comment\n", (), "bad.cm:4: '#': not a record"),
        (
            "Nodes 8\nConnections 1\n0->5 start 0 size 10\n",
            ("--k", "2"),
            "--k 2: a fat tree of 2 hosts; bad.cm has Nodes 8",
        ),
        ("Nodes 8\nConnections 1\n0->5 start 0 size 10\n", ("--mtu", "100"), "--mtu 100: smaller than"),
        (
            "Nodes 8\nConnections 1\n0->5 start 0 size 10\n",
            ("--linkspeed", "nan"),
            "--linkspeed nan: out of range",
        ),
        (
            "Nodes 8\nConnections 1\n0->5 start 0 size 10\n",
            ("--hop-latency", "inf"),
            "--hop-latency inf: out of range",
        ),
    ],
)
def test_bad_input_is_one_line_naming_file_line_and_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, extra: tuple[str, ...], expect: str
) -> None:
    assert expect in _bad(tmp_path, capsys, text, *extra)


def test_read_cm_keeps_ids_triggers_and_skipped_header_lines(tmp_path: Path) -> None:
    cm = read_cm(_write(tmp_path, "Nodes 4\nFlowsize 9\n" + SERIAL.split("Nodes 4\n", 1)[1]))
    assert cm.nodes == 4 and [c.flow_id for c in cm.conns] == [1, 2, 3]
    assert cm.conns[0].send_done_trigger == 1 and cm.conns[1].trigger == 1 and cm.conns[1].start_ps is None
    assert cm.triggers[1].type == "oneshot" and cm.skipped == [(2, "Flowsize 9")] and cm.truncated_starts == 1


def test_htsim_options_are_refused_with_format_hpcc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "x.toml"
    assert main(["import", "hpcc", str(tmp_path), "-o", str(out), "--k", "4", "--ignore-triggers"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--k, --ignore-triggers: htsim options" in err[0] and not out.exists()


# a chain: flow 2 starts when flow 1's bytes have all arrived (recv_done_trigger) or when flow 1's
# sender has its last ACK (send_done_trigger); 5 us links make the difference plain
CHAIN = """Nodes 4
Connections 2
Triggers 1
0->1 id 1 start 0 size 200000 {fires} 1
2->3 id 2 trigger 1 size 10000
trigger id 1 oneshot
"""


def _chain(tmp: Path, fires: str) -> tuple[str, dict[str, list[int]]]:
    sub = tmp / fires
    sub.mkdir()
    code, out = _import(sub, _write(sub, CHAIN.format(fires=fires)), "--topology", "star",
                        "--hop-latency", "5", "-v")
    assert code == 0
    res = sub / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    done = read_table(res, "flows")
    assert set(done["status"]) == {"ok"}
    return out.read_text(), {k: [int(x) for x in done[k]] for k in ("start_ps", "finish_ps")}


def test_recv_done_trigger_starts_the_next_flow_when_the_bytes_are_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, recv = _chain(tmp_path, "recv_done_trigger")
    printed = capsys.readouterr().out
    assert ("m.cm:5: trigger 1: flow 2 starts when flow 1's bytes have all arrived: "
            "after_received = [1]") in printed
    assert "half a round" not in printed  # exact now: no note
    assert tomllib.loads(text)["flows"][1]["after_received"] == [1]
    _, sent = _chain(tmp_path, "send_done_trigger")
    assert sent["finish_ps"][0] == recv["finish_ps"][0] == sent["start_ps"][1]
    # half a round trip earlier: the last ACK's way back over two 5 us links (and its serialization)
    early = sent["start_ps"][1] - recv["start_ps"][1]
    assert 10_000_000 <= early < 11_000_000, early


# a multishot trigger three flows fire (two on completion, one on receipt) and two flows wait on:
# htsim starts the first waiting flow at the first activation, the second at the second
MULTI = """Nodes 8
Connections 5
Triggers 1
0->1 id 1 start 0 size 300000 send_done_trigger 3
2->3 id 2 start 0 size 20000 send_done_trigger 3
4->5 id 3 start 0 size 100000 recv_done_trigger 3
6->7 id 4 trigger 3 size 1000
7->6 id 5 trigger 3 size 1000
trigger id 3 multishot
"""


def test_multishot_starts_the_kth_waiting_flow_at_the_kth_activation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _import(tmp_path, _write(tmp_path, MULTI), "--topology", "star", "-v")
    printed = capsys.readouterr().out
    assert code == 0 and "0 field(s) not supported" in printed
    assert ("m.cm:7: trigger 3: flow 4 starts when the 1st of: flow 1 is done; flow 2 is done; flow 3's "
            "bytes have all arrived: after = [1, 2], after_received = [3], after_count = 1") in printed
    flows = tomllib.loads(out.read_text())["flows"]
    assert [(f.get("after_count"), f.get("after"), f.get("after_received")) for f in flows[3:]] == [
        (1, [1, 2], [3]), (2, [1, 2], [3])]
    res = tmp_path / "res"
    assert main(["run", str(out), "--out", str(res), "--quiet"]) == 0
    done = read_table(res, "flows")
    assert set(done["status"]) == {"ok"}
    start, finish = done["start_ps"], done["finish_ps"]
    assert start[3] == finish[1]  # the small flow 2's completion is the first activation
    # the second: flow 3's receipt, before its completion and before the big flow 1's
    assert finish[1] < start[4] < finish[2] < finish[0]
