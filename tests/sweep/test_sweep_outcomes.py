"""A sweep hides nothing: runs whose flows did not all finish are counted and flagged (and the exit
status says so), the store keeps each run's port counters, queue summaries and collective results,
the summary is a DataFrame, kept runs are named by their parameters, and the scenario file is read
with the checks of ``rdmasim run``."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from sweep_helpers import query

from rdmasim.cli import main
from rdmasim.scenario import ScenarioError
from rdmasim.sweep import STORE_NAME, load_sweep, run_sweep

# 4 senders into h4; at 100 Gb/s every flow ends within 300 us, at 25 Gb/s the two 1 MiB ones do not
INCAST = """
[simulation]
name = "small-incast"
seed = 1
duration = "300us"
progress = false
[topology]
kind = "incast"
n_senders = 4
[link]
rate = "100Gbps"
delay = "1us"
[switch]
threshold = "64KB"
lossless = [3]
[switch.ecn]
kmin = "5KB"
kmax = "200KB"
[[flows]]
src = "h0"
dst = "h4"
size = "4KiB"
[[flows]]
src = "h1"
dst = "h4"
size = "64KiB"
[[flows]]
src = "h2"
dst = "h4"
size = "1MiB"
[[flows]]
src = "h3"
dst = "h4"
size = "1MiB"
[outputs]
sample_interval = "5us"
"""

RATES = {"link.rate": ["25Gbps", "100Gbps"], "congestion_control.algorithm": ["none", "dcqcn"]}


def _unfinished(db: Path) -> int:
    ((n,),) = query(db, "SELECT count(*) FROM flows WHERE status != 'ok'")
    return int(n)


def test_a_run_with_unfinished_flows_is_incomplete_and_its_flows_are_kept_flagged(tmp_path: Path) -> None:
    res = run_sweep(INCAST, RATES, tmp_path, executor="thread", progress=False)
    assert (res.ran, res.failed, res.incomplete) == (4, 0, 2)
    runs = res.runs()
    slow = runs[runs["link.rate"] == "25Gbps"]
    fast = runs[runs["link.rate"] == "100Gbps"]
    assert list(slow["status"]) == ["incomplete"] * 2 and list(fast["status"]) == ["ok"] * 2
    assert (slow["unfinished"] > 0).all() and (fast["unfinished"] == 0).all()
    assert (runs["flows"] == 4).all()
    db = tmp_path / STORE_NAME
    n = _unfinished(db)
    assert n == int(slow["unfinished"].sum()) >= 2
    # every flow is in the store, the finished flows of an incomplete run flagged by their run
    flows = res.flows()
    assert len(flows) == 16
    assert set(flows.loc[flows["link.rate"] == "25Gbps", "run_status"]) == {"incomplete"}
    assert set(flows.loc[flows["link.rate"] == "100Gbps", "run_status"]) == {"ok"}
    summ = res.summary()
    import pandas as pd

    assert isinstance(summ, pd.DataFrame)
    assert list(summ["incomplete"]) == [1, 1, 0, 0] and list(summ["unfinished"]) == list(
        slow["unfinished"]) + [0, 0]
    assert (summ["completed"] + summ["unfinished"] == summ["flows"]).all()
    text = res.summary_text()
    assert "unfinished" in text and str(res) == text
    # an incomplete run is a result: resuming does not run it again
    again = run_sweep(INCAST, RATES, tmp_path, executor="thread", progress=False)
    assert (again.ran, again.skipped) == (0, 4)


def test_cli_reports_unfinished_flows_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scen = tmp_path / "incast.toml"
    scen.write_text(INCAST)
    out = tmp_path / "s"
    rc = main(["sweep", str(scen), "--param", "link.rate=25Gbps,100Gbps", "--out", str(out), "--quiet",
               "--workers", "2", "--no-plot"])
    text = capsys.readouterr().out
    n = _unfinished(out / STORE_NAME)
    assert rc == 1
    assert f"0 failed, 1 incomplete ({n} flows unfinished)" in text
    # resumed, nothing runs; still not a clean sweep
    assert main(["sweep", str(scen), "--param", "link.rate=25Gbps,100Gbps", "--out", str(out), "--quiet",
                 "--no-plot"]) == 1
    assert f"1 incomplete ({n} flows unfinished)" in capsys.readouterr().out


def test_store_keeps_ports_queues_and_collectives(tmp_path: Path) -> None:
    res = run_sweep(INCAST, {"congestion_control.algorithm": ["none", "dcqcn"]}, tmp_path,
                    executor="thread", progress=False)
    ports = res.ports()
    assert {"congestion_control.algorithm", "node", "port", "drops", "ecn_marked", "pfc_xoff_sent",
            "paused_ps"} <= set(ports.columns)
    assert len(ports) == 2 * (5 + 5)  # per run: one switch of 5 ports and 5 host NICs
    runs = res.runs()
    assert {"drops", "ecn_marked", "pfc_xoff_sent", "paused_ps"} <= set(runs.columns)
    by = runs.set_index("congestion_control.algorithm")
    assert by.loc["dcqcn", "ecn_marked"] > 0  # the ECN marks DCQCN reacts to, counted per run
    for algo in ("none", "dcqcn"):
        sub = ports[ports["congestion_control.algorithm"] == algo]
        assert by.loc[algo, "ecn_marked"] == sub["ecn_marked"].sum()
    queues = res.queues()
    assert {"probe", "samples", "mean_egress_bytes", "max_egress_bytes", "paused_fraction"} <= set(
        queues.columns)
    assert (queues["max_egress_bytes"] >= queues["mean_egress_bytes"]).all()
    assert queues["max_egress_bytes"].max() > 0
    summ = res.summary()
    assert {"ecn_marked", "drops", "pfc_xoff_sent"} <= set(summ.columns)

    coll = """
[simulation]
progress = false
[topology]
kind = "star"
n = 4
[link]
rate = "100Gbps"
delay = "1us"
[traffic.collective]
kind = "allreduce"
algorithm = "ring"
size = "64KiB"
"""
    c = run_sweep(coll, {"link.delay": ["1us", "4us"]}, tmp_path / "c", executor="thread", progress=False)
    rows = c.collectives()
    assert list(rows["link.delay"]) == ["1us", "4us"] and set(rows["collective"]) == {"allreduce/ring"}
    assert (rows["time_ps"] > 0).all() and (rows["busbw_Bps"] > 0).all()
    assert rows["time_ps"].iloc[1] > rows["time_ps"].iloc[0]
    s = c.summary()
    assert list(s["collective_time_ps"]) == list(rows["time_ps"])
    assert list(s["busbw_Bps"]) == pytest.approx(list(rows["busbw_Bps"]))
    assert "busbw" in c.summary_text()


def test_kept_runs_are_named_by_their_parameters(tmp_path: Path) -> None:
    res = run_sweep(INCAST, {"congestion_control.algorithm": ["none", "dcqcn"], "link.rate": ["100Gbps"],
                             "switch.lossless": [[3], [3, 4]]},
                    tmp_path, seeds=1, executor="thread", keep_runs=True, progress=False)
    names = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert names == sorted(f"algorithm={a},rate=100Gbps,lossless={lo},seed=1"
                           for a in ("none", "dcqcn") for lo in ("3", "3_4"))
    assert all((tmp_path / "runs" / n / "metadata.json").is_file() for n in names)
    assert sorted(res.runs()["run_name"]) == names


def test_run_names_are_unique_and_filesystem_safe() -> None:
    from rdmasim.sweep.grid import run_names

    names = run_names([{"impairments.loss[0].probability": 0.1, "impairments.gilbert[0].loss_in_bad": 1},
                       {"a.x": "b/c", "b.x": "b_c"}, {"a.x": "b_c", "b.x": "b/c"},
                       {"simulation.name": "x" * 400}])
    assert len(set(names)) == 4
    assert names[0] == "probability=0.1,loss_in_bad=1"
    assert names[1].startswith("a.x=b_c,b.x=b_c") and names[1] != names[2]
    assert all(len(n.encode()) <= 200 and "/" not in n and not n.startswith(".") for n in names)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_sweep_over_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "f.toml"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def go() -> None:
        try:
            run_sweep(fifo, None, tmp_path / "s", executor="thread", progress=False)
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            done.append(exc)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the reader so the thread ends
        with open(fifo, "w") as fh:
            fh.write("")
        t.join(5)
        pytest.fail("run_sweep blocked reading a named pipe")
    assert isinstance(done[0], ScenarioError) and "(file)" in str(done[0])
    with pytest.raises(ScenarioError, match="regular file"):
        run_sweep(Path("/dev/zero"), None, tmp_path / "z", executor="thread", progress=False)


def test_summary_of_a_loaded_sweep_is_a_dataframe(tmp_path: Path) -> None:
    run_sweep(INCAST, {"link.rate": ["100Gbps"]}, tmp_path, executor="thread", progress=False)
    res = load_sweep(tmp_path)
    s = res.summary()
    assert list(s["link.rate"]) == ["100Gbps"] and int(s["runs"].iloc[0]) == 1
    assert "100Gbps" in res.summary_text()
