"""A sweep with kept runs is refused up front when all its runs' files together do not fit the
free space; the sweep's slowdown table and plots name the ideal FCT's definition."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from sweep_helpers import LOSSY

from rdmasim.cli import main
from rdmasim.scenario.check import estimate
from rdmasim.scenario.load import loads, read_text
from rdmasim.sweep import STORE_NAME, load_sweep, plan, run_sweep

SIZES = {"flows[].size": ["8KiB", "16KiB"]}


def _free(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    """Make every folder's file system report ``free`` bytes free."""
    usage = shutil.disk_usage(".")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: type(usage)(usage.total, usage.total - free, free))


def _per_run(params: dict[str, list[Any]], seeds: int | None = None) -> list[int]:
    text = read_text(LOSSY)
    return [estimate(loads(text, str(LOSSY), s.overrides)).disk_bytes for s in plan(text, params, seeds)]


def test_kept_runs_that_do_not_fit_together_are_refused_before_any_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    need = _per_run(SIZES, seeds=2)
    assert len(need) == 4 and min(need) > 0
    free = max(need) + 1  # each run fits alone, the four together do not
    assert sum(need) > free
    _free(monkeypatch, free)
    out = tmp_path / "s"
    argv = ["sweep", str(LOSSY), "--param", "flows[].size=8KiB,16KiB", "--seeds", "2", "--out", str(out),
            "--quiet", "--keep-runs", "--no-plot"]
    assert main(argv) == 2
    cap = capsys.readouterr()
    (line,) = cap.err.strip().splitlines()
    assert str(out / "runs") in line and "4 runs" in line
    assert f"has {free:,} bytes free" in line and f"about {sum(need):,} bytes of files" in line
    assert not (out / "runs").exists()
    assert not (out / STORE_NAME).exists() or not load_sweep(out).runs_records()
    # without kept runs nothing is written per run: no check of the total
    res = run_sweep(LOSSY, SIZES, out, seeds=2, executor="thread", progress=False)
    assert (res.ran, res.failed) == (4, 0)


def test_kept_runs_that_fit_run_and_only_the_runs_still_to_do_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    need = _per_run(SIZES)
    _free(monkeypatch, sum(need) + 1)
    res = run_sweep(LOSSY, SIZES, tmp_path, executor="thread", keep_runs=True, progress=False)
    assert (res.ran, res.failed) == (2, 0)
    assert len(list((tmp_path / "runs").glob("*/metadata.json"))) == 2
    # both runs are in the store: resuming has nothing to write; a third run alone fits
    grid = {"flows[].size": ["8KiB", "16KiB", "32KiB"]}
    three = _per_run(grid)
    _free(monkeypatch, max(three) + 1)
    res = run_sweep(LOSSY, {"flows[].size": ["8KiB", "16KiB"]}, tmp_path, executor="thread", keep_runs=True,
                    progress=False)
    assert (res.ran, res.skipped) == (0, 2)
    res = run_sweep(LOSSY, grid, tmp_path, executor="thread", keep_runs=True, progress=False)
    assert (res.ran, res.skipped) == (1, 2)  # one run to do: it fits


def test_sweep_slowdown_names_the_ideal_fct(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    res = run_sweep(LOSSY, SIZES, tmp_path / "wire", executor="thread", progress=False)
    assert "slowdown p50/p95/p99 (ideal: wire)" in res.summary_text()
    fig = res.plot("median_slowdown")
    assert "ideal: wire" in fig.axes[0].get_ylabel()
    assert "ideal: wire" in res.slowdown_plot().axes[0].get_ylabel()
    out = tmp_path / "payload"
    argv = ["sweep", str(LOSSY), "--param", "flows[].size=8KiB,16KiB", "--param", "outputs.ideal_fct=payload",
            "--out", str(out), "--quiet", "--workers", "1"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "(ideal: payload)" in text and "ideal: wire" not in text
    res = load_sweep(out)
    assert "ideal: payload" in res.plot("p99_slowdown").axes[0].get_ylabel()
    assert "ideal: payload" in res.slowdown_plot().axes[0].get_ylabel()
    assert set(res.runs()["ideal_fct"]) == {"payload"}


def test_a_sweep_over_the_ideal_fct_says_the_column_tells(tmp_path: Path) -> None:
    res = run_sweep(LOSSY, {"outputs.ideal_fct": ["wire", "payload"]}, tmp_path, executor="thread",
                    progress=False)
    assert res.ideal_fct() == "per outputs.ideal_fct"
    assert "(ideal: per outputs.ideal_fct)" in res.summary_text()
    assert "ideal: per outputs.ideal_fct" in res.plot("median_slowdown").axes[0].get_ylabel()
