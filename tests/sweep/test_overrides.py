"""Overrides applied before validation: a bad one is reported like a bad value in the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sweep_helpers import LOSSY

from rdmasim.cli import main
from rdmasim.scenario import ScenarioError, load
from rdmasim.scenario.load import Problem, parse_override_value
from rdmasim.sweep import run_sweep


def problems(overrides: dict[str, Any]) -> list[Problem]:
    with pytest.raises(ScenarioError) as info:
        load(LOSSY, overrides)
    return info.value.problems


def test_overrides_set_values_rows_and_every_row() -> None:
    sc = load(LOSSY, {"link.loss": 0.01, "simulation.seed": 3, "flows[].size": "8KiB",
                      "flows[1].verb": "WRITE", "impairments.loss[0].probability": 0.5,
                      "switch.ecn.kmin": "1KB", "link.delay": parse_override_value("3us")})
    assert sc["link.loss"] == 0.01 and sc["simulation.seed"] == 3
    assert [r["size"] for r in sc.arrays["flows"]] == [8192] * 3
    assert [r["verb"] for r in sc.arrays["flows"]] == ["WRITE", "WRITE", "SEND"]
    assert sc.arrays["impairments.loss"][0]["probability"] == 0.5
    assert sc["switch.ecn.kmin"] == 1000 and sc["link.delay"] == 3_000_000
    assert sc.overrides["link.loss"] == 0.01
    assert sc.text == LOSSY.read_text()  # the file as written; the overrides are kept beside it


def test_unknown_key_names_file_key_value_suggestion_and_siblings() -> None:
    (p,) = problems({"link.los": 0.1})
    assert p.file == f"{LOSSY} (override)" and p.path == "link.los" and p.value == 0.1
    assert "did you mean 'link.loss'" in p.message
    assert p.allowed == "keys here: delay, layer, loss, mtu, rate"
    (p,) = problems({"flows[].sise": "1KiB"})
    assert "did you mean 'flows[].size'" in p.message and "size" in p.allowed
    (p,) = problems({"simulation": 1})
    assert "is a table" in p.message


def test_wrong_type_and_out_of_range_name_what_is_allowed() -> None:
    wrong, rng, mtu = problems({"link.loss": "lots", "qp.retry_cnt": 9, "link.mtu": 1000})
    assert (wrong.path, wrong.value, wrong.allowed) == ("link.loss", "lots", "float in 0..1")
    assert "expected a number, got str" in wrong.message
    assert (rng.path, rng.value, rng.message) == ("qp.retry_cnt", 9, "out of range")
    assert rng.allowed == "int in 0..7"
    assert mtu.message == "not an allowed value" and "4096" in mtu.allowed
    assert str(wrong) == (f"{LOSSY} (override): link.loss = 'lots': expected a number, got str "
                          "(allowed: float in 0..1)")


def test_rows_must_exist_and_be_named() -> None:
    (p,) = problems({"flows[7].size": "1KiB"})
    assert "the file has 3 [[flows]] row(s)" in p.message
    (p,) = problems({"flows.size": "1KiB"})
    assert "flows[0].size" in p.message
    (p,) = problems({"link[0].rate": "1Gbps"})
    assert "not an array of tables" in p.message


def test_a_file_level_check_broken_by_an_override_names_the_override() -> None:
    (p,) = problems({"qp.mtu": 4096})  # the file's link.mtu is 1024
    assert p.file.endswith("(override)") and p.path == "qp.mtu" and p.allowed == "<= 1024"


def test_cli_bad_param_exits_2_with_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["sweep", str(LOSSY), "--param", "link.los=0,0.1", "--param", "qp.timeout=40",
               "--out", str(tmp_path / "s"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "link.los = 0: unknown key; did you mean 'link.loss'?" in err
    assert "qp.timeout = 40: out of range (allowed: int in 1..31)" in err
    assert not (tmp_path / "s" / "sweep.sqlite").exists()  # nothing ran
    assert main(["sweep", str(LOSSY), "--param", "link.loss", "--out", str(tmp_path / "s")]) == 2
    assert "expected key=value" in capsys.readouterr().err


def test_run_sweep_validates_every_run_before_running_any(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        run_sweep(LOSSY, {"qp.mtu": [1024, 4096], "link.mtu": [1024, 4096]}, tmp_path, progress=False)
    (p,) = info.value.problems  # qp.mtu 4096 with link.mtu 1024: one problem, reported once
    assert (p.path, p.value) == ("qp.mtu", 4096)
    assert not (tmp_path / "sweep.sqlite").exists()
    with pytest.raises(ScenarioError, match="cannot read"):
        run_sweep(tmp_path / "missing.toml", None, tmp_path, progress=False)
    with pytest.raises(ScenarioError, match="cannot read"):
        run_sweep("missing.toml", None, tmp_path, progress=False)
