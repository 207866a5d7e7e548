"""Sweeps on a process pool and on a thread pool passed in: one store, the right rows, resume."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sweep_helpers import FLOWS_PER_RUN, GRID, LOSSY, query

from rdmasim.cli import main
from rdmasim.results import FLOW_COLUMNS
from rdmasim.sweep import STORE_NAME, load_sweep, plan, run_sweep


def test_process_pool_sweep_2x2_into_one_store(tmp_path: Path) -> None:
    res = run_sweep(LOSSY, GRID, tmp_path, max_workers=2, progress=False)
    assert (res.ran, res.skipped, res.failed) == (4, 0, 0)
    db = tmp_path / STORE_NAME
    assert db.is_file() and not (tmp_path / "runs").exists()  # run folders only with keep_runs
    keys = [s.run_key for s in plan(LOSSY.read_text(), GRID)]
    assert sorted(r[0] for r in query(db, "SELECT run_key FROM runs WHERE status = 'ok'")) == sorted(keys)
    counts = dict(query(db, "SELECT run_key, count(*) FROM flows GROUP BY run_key"))
    assert counts == {k: FLOWS_PER_RUN for k in keys}
    assert query(db, "PRAGMA journal_mode") == [("wal",)]
    cols = [r[1] for r in query(db, "PRAGMA table_info(flows)")]
    assert cols == ["run_key", *FLOW_COLUMNS]

    flows = res.flows()
    assert len(flows) == 4 * FLOWS_PER_RUN
    assert list(flows.columns[:3]) == ["run_key", "flows[].size", "impairments.loss[0].probability"]
    assert set(flows.groupby("flows[].size")["size_bytes"].unique().map(tuple)) == {(8192,), (32768,)}
    assert (flows["status"] == "ok").all()
    runs = res.runs()
    assert list(runs["status"]) == ["ok"] * 4 and set(runs["seed"]) == {7}  # the file's seed
    rows = res.summary_rows()
    assert [(r["flows[].size"], r["impairments.loss[0].probability"]) for r in rows] == [
        ("8KiB", 0.0), ("8KiB", 0.05), ("32KiB", 0.0), ("32KiB", 0.05)]
    assert all(r["runs"] == 1 and r["completed"] == FLOWS_PER_RUN and r["p99_fct_ps"] > 0 for r in rows)

    again = run_sweep(LOSSY, GRID, tmp_path, max_workers=2, progress=False)
    assert (again.ran, again.skipped) == (0, 4)
    assert len(load_sweep(tmp_path).flows()) == 4 * FLOWS_PER_RUN


def test_thread_pool_passed_in_seeds_and_a_failing_run(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import rdmasim.scenario.run as run_mod

    real = run_mod.run_scenario

    def failing(sc, *a, **k):  # type: ignore[no-untyped-def]
        # a run that passes validation and fails while it runs (unknown links are refused up front)
        if sc.values["link.delay"] == 3_000_000:
            raise RuntimeError("zz: the run failed")
        return real(sc, *a, **k)

    monkeypatch.setattr(run_mod, "run_scenario", failing)
    grid = {"flows[].size": ["8KiB"], "link.delay": ["1us", "3us"]}
    with ThreadPoolExecutor(max_workers=2) as pool:
        res = run_sweep(str(LOSSY), grid, tmp_path, seeds=2, executor=pool, progress=False)
        assert (res.ran, res.failed) == (4, 2)
        runs = res.runs_records()
        bad = [r for r in runs if r["status"] == "error"]
        assert len(bad) == 2 and all("zz" in r["error"] for r in bad)
        assert sorted(r["simulation.seed"] for r in runs if r["status"] == "ok") == [1, 2]
        assert len(res.flows_records()) == 2 * FLOWS_PER_RUN  # a failed run has no flow rows
        (row,) = [r for r in res.summary_rows() if r["failed"]]
        assert row["runs"] == 0 and row["flows"] == 0
        # resume: the ok runs are kept, the failed ones run again
        res2 = run_sweep(str(LOSSY), grid, tmp_path, seeds=2, executor=pool, progress=False)
        assert (res2.ran, res2.skipped, res2.failed) == (2, 2, 2)
        pool.submit(int).result()  # the pool passed in is not shut down
        # no resume: everything again, replacing the stored rows
        res3 = run_sweep(str(LOSSY), grid, tmp_path, seeds=2, executor="thread", resume=False,
                         progress=False)
        assert (res3.ran, res3.skipped) == (4, 0)
        assert len(res3.flows_records()) == 2 * FLOWS_PER_RUN


def test_cli_sweep_prints_a_row_per_combination(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    argv = ["sweep", str(LOSSY), "--param", "flows[].size=8KiB,16KiB", "--seeds", "2", "--workers", "2",
            "--out", str(out), "--quiet", "--keep-runs"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "4 runs: 4 ran on 2 worker processes, 0 already in the store, 0 failed" in text
    lines = [ln for ln in text.splitlines() if ln.strip().startswith(("8KiB", "16KiB"))]
    # runs, incomplete, failed ... completed
    assert len(lines) == 2 and all(ln.split()[1:4] == ["2", "0", "0"] and "6/6" in ln.split() for ln in lines)
    assert sorted(p.parent.name for p in (out / "runs").glob("*/metadata.json")) == [
        f"size={s},seed={k}" for s in ("16KiB", "8KiB") for k in (1, 2)]
    assert main(argv) == 0
    assert "0 ran, 4 already in the store" in capsys.readouterr().out
    with pytest.raises(FileNotFoundError):
        load_sweep(tmp_path / "nothing")


def test_a_sweep_point_that_cannot_fit_in_memory_is_refused_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rdmasim.scenario import ScenarioError, check

    text = '[topology]\nkind = "fat_tree"\nk = 4\n[[flows]]\nsrc = "h0_0_0"\ndst = "h1_0_0"\nsize = "4KiB"\n'
    # k = 64 needs about 4.5 GB, 3.1 GB of it routing tables; k = 4 is tiny: on a 2 GB machine
    monkeypatch.setattr(check, "physical_memory", lambda: 2_000_000_000)
    with pytest.raises(ScenarioError) as err:
        run_sweep(text, {"topology.k": [4, 64]}, tmp_path / "sw", executor="thread", progress=False)
    (p,) = err.value.problems
    assert str(p).startswith("<string> (override): topology = 'fat_tree': the run would need about 4")
    assert "of it for the routing tables (run topology.k = 64) (allowed: runs that fit in " in str(p)
    assert not (tmp_path / "sw").exists()
