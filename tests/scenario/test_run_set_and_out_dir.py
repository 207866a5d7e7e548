"""``rdmasim run --set KEY=VALUE`` (the parser of ``sweep --param``) and the default results folder:
``results/<file stem>``, numbered rather than replacing an earlier run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.scenario import load, loads, run_scenario

SC = """
[simulation]
seed = 1
progress = false
[topology]
kind = "back_to_back"
[[flows]]
src = "a"
dst = "b"
size = "8KiB"
[outputs]
plots = false
"""


@pytest.fixture
def scen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "tiny.toml"
    p.write_text(SC)
    return p


def test_default_results_folder_is_named_by_the_file_and_never_replaced(
        scen: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load(scen).values["outputs.dir"] == "results/tiny"
    assert main(["run", str(scen), "-q"]) == 0
    out = capsys.readouterr().out
    assert (scen.parent / "results" / "tiny" / "metadata.json").is_file()
    assert "results: results/tiny" in out
    assert main(["run", str(scen), "-q", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    second = scen.parent / "results" / "tiny-2"
    assert json.loads((second / "metadata.json").read_text())["seed"] == 2
    assert json.loads((scen.parent / "results" / "tiny" / "metadata.json").read_text())["seed"] == 1
    assert "results: results/tiny-2 (results/tiny holds an earlier run)" in out
    # the Python API numbers the default folder the same way
    res = run_scenario(load(scen), progress=False)
    assert Path(res.files["metadata"]).parent == Path("results/tiny-3")
    # a folder the file names is the user's: replaced, and the output says so
    named = scen.parent / "named.toml"
    named.write_text(SC + 'dir = "mine"\n')
    assert main(["run", str(named), "-q"]) == 0
    capsys.readouterr()
    assert main(["run", str(named), "-q"]) == 0
    assert "results: mine (replaced the earlier run there)" in capsys.readouterr().out


def test_a_string_scenario_defaults_to_its_name() -> None:
    assert loads(SC).values["outputs.dir"] == "results/run"
    named = SC.replace("seed = 1", 'seed = 1\nname = "my run/1"')
    assert loads(named).values["outputs.dir"] == "results/my_run_1"


def test_set_overrides_values_as_sweep_param_does(scen: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", str(scen), "-q", "--set", "flows[].size=16KiB", "--set", "link.rate=25Gbps",
               "--set", "simulation.seed=5", "--out", "o"])
    assert rc == 0
    meta = json.loads((scen.parent / "o" / "metadata.json").read_text())
    assert meta["seed"] == 5
    # the file is written as it is, the values set beside it: the run can be reproduced
    assert meta["overrides"] == {"flows[].size": "16KiB", "link.rate": "25Gbps", "simulation.seed": 5}
    assert (scen.parent / "o" / "scenario.toml").read_text() == SC
    out = capsys.readouterr().out
    assert "16,384" in out


@pytest.mark.parametrize(("args", "says"), [
    (["--set", "link.los=0.1"], "link.los = 0.1: unknown key; did you mean 'link.loss'?"),
    (["--set", "link.loss=2"], "link.loss = 2: out of range (allowed: float in 0..1)"),
    (["--set", "link.loss"], "--set 'link.loss': expected key=value"),
    (["--set", "link.loss=0,0.1"],
     "--set 'link.loss=0,0.1': one value (several are for rdmasim sweep --param)"),
    (["--set", "link.loss=0", "--set", "link.loss=0.1"], "--set 'link.loss' given twice"),
    (["--seed", "3", "--set", "simulation.seed=4"], "--seed and --set simulation.seed"),
])
def test_bad_set_is_one_line_naming_the_key_exit_2(scen: Path, capsys: pytest.CaptureFixture[str],
                                                    args: list[str], says: str) -> None:
    assert main(["run", str(scen), "-q", *args]) == 2
    err = capsys.readouterr().err
    assert says in err
    assert len([ln for ln in err.splitlines() if "problem(s)" not in ln]) == 1
    assert not (scen.parent / "results").exists()
