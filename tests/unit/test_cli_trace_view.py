"""`rdmasim trace FILE` builds the ladder of a saved trace once for the printed diagram (a capped
trace has 2 million records: every build is most of the command's time and memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rdmasim.ladder._model as model
from rdmasim import ladder
from rdmasim.cli import main


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = model.build

    def counting(records, names):  # type: ignore[no-untyped-def]
        calls.append(len(records))
        return real(records, names)

    monkeypatch.setattr(model, "build", counting)
    return calls


def test_the_printed_ladder_is_built_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    saved = ladder.example_write(size=3072, mtu=1024, drop_psn=[1]).save(tmp_path / "t.npz")
    calls = _count_builds(monkeypatch)
    assert main(["trace", str(saved)]) == 0
    assert len(calls) == 1
    assert "WRITE" in capsys.readouterr().out
    # a bad window is still refused before anything is printed
    assert main(["trace", str(saved), "--around", "psn=99"]) == 2
    assert capsys.readouterr().out == ""


def test_several_outputs_check_the_window_before_writing_any(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    saved = ladder.example_write(size=3072, mtu=1024, drop_psn=[1]).save(tmp_path / "t.npz")
    svg = tmp_path / "l.svg"
    assert main(["trace", str(saved), "--around", "psn=99", "--svg", str(svg)]) == 2
    assert not svg.exists()
