"""A sweep store holds one version of a scenario at a time: an edited scenario (or another rdmasim
version) is refused or kept apart, never averaged with the runs of the old one."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import FLOWS_PER_RUN, LOSSY

from rdmasim.cli import main
from rdmasim.errors import UserInputError
from rdmasim.sweep import STORE_NAME, load_sweep, run_sweep
from rdmasim.sweep.grid import run_key, scenario_digest

GRID = {"flows[].size": ["8KiB", "16KiB"]}


def test_an_edited_scenario_is_refused_naming_the_store_and_both_digests(tmp_path: Path) -> None:
    text = LOSSY.read_text()
    edited = text.replace("seed = 7", "seed = 8")
    assert edited != text
    first = run_sweep(text, GRID, tmp_path, executor="thread", progress=False)
    assert (first.ran, first.skipped) == (2, 0)
    # an unchanged scenario resumes
    again = run_sweep(text, GRID, tmp_path, executor="thread", progress=False)
    assert (again.ran, again.skipped) == (0, 2)
    old, new = scenario_digest(text), scenario_digest(edited)
    with pytest.raises(UserInputError) as err:
        run_sweep(edited, GRID, tmp_path, executor="thread", progress=False)
    msg = str(err.value)
    assert str(tmp_path / STORE_NAME) in msg and old in msg and new in msg
    assert "scenario text changed" in msg and "new_version" in msg
    # nothing was added
    assert len(load_sweep(tmp_path).runs_records()) == 2


def test_new_version_keeps_the_old_runs_apart(tmp_path: Path) -> None:
    text = LOSSY.read_text()
    edited = text.replace("seed = 7", "seed = 8")
    run_sweep(text, GRID, tmp_path, executor="thread", progress=False)
    res = run_sweep(edited, GRID, tmp_path, executor="thread", progress=False, new_version=True)
    assert (res.ran, res.skipped) == (2, 0)
    # load_sweep reads the store's current version only: 2 runs, not 4 averaged
    cur = load_sweep(tmp_path)
    runs = cur.runs_records()
    assert len(runs) == 2 and {r["seed"] for r in runs} == {8}
    assert len(cur.flows_records()) == 2 * FLOWS_PER_RUN
    assert all(r["runs"] == 1 for r in cur.summary_rows())
    # the old version is still there, by its digest
    old = load_sweep(tmp_path, version=scenario_digest(text))
    assert {r["seed"] for r in old.runs_records()} == {7}
    # and resuming the new version skips its runs
    again = run_sweep(edited, GRID, tmp_path, executor="thread", progress=False)
    assert (again.ran, again.skipped) == (0, 2)


def test_run_keys_depend_on_the_rdmasim_version() -> None:
    assert run_key("[x]\n", {"a": 1}, version="0.1.0") != run_key("[x]\n", {"a": 1}, version="0.2.0")
    assert scenario_digest("[x]\n", version="0.1.0") != scenario_digest("[x]\n", version="0.2.0")


def test_cli_refuses_an_edited_scenario_and_new_version_starts_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(LOSSY.read_text())
    out = tmp_path / "sw"
    argv = ["sweep", str(f), "--param", "flows[].size=8KiB", "--workers", "1", "--out", str(out), "-q",
            "--no-plot"]
    assert main(argv) == 0
    f.write_text(LOSSY.read_text().replace("seed = 7", "seed = 9"))
    capsys.readouterr()
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.splitlines()
    head = f"rdmasim sweep: error: sweep store '{out / STORE_NAME}' holds the runs of scenario version "
    assert line.startswith(head)
    assert "--new-version" in line and "a new --out" in line
    assert main([*argv, "--new-version"]) == 0
    assert "1 runs: 1 ran" in capsys.readouterr().out
