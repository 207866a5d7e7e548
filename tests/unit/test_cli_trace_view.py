"""`rdmasim trace FILE` builds the ladder of a saved trace once for the printed diagram, and only
from the records its window draws (a capped trace has 2 million records: a row per record was
most of the command's time and memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rdmasim.ladder._window as window
from rdmasim import ladder
from rdmasim.cli import main
from rdmasim.ladder._model import Builder


def _count_builds(monkeypatch: pytest.MonkeyPatch) -> list[Builder]:
    """The builders of ladder rows the window code makes (each counts the records it was fed)."""
    made: list[Builder] = []

    class Counting(Builder):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(window, "Builder", Counting)
    return made


def test_the_printed_ladder_is_built_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    saved = ladder.example_write(size=3072, mtu=1024, drop_psn=[1]).save(tmp_path / "t.npz")
    made = _count_builds(monkeypatch)
    assert main(["trace", str(saved)]) == 0
    assert len(made) == 1
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


def test_max_frames_0_prints_every_frame(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The hint of a focused trace says ``--max-frames 0 shows all``: it does."""
    from rdmasim import trace as tr

    t = ladder.example_write(size=1 << 20, loss=0.01)
    saved = t.save(tmp_path / "long.npz")
    total = int((t.to_numpy()["kind"] == tr.TX).sum())
    assert total > 1000
    assert main(["trace", str(saved)]) == 0
    focused = capsys.readouterr().out
    assert "--max-frames 0 shows all" in focused
    assert main(["trace", str(saved), "--max-frames", "0"]) == 0
    out = capsys.readouterr().out
    assert sum("──" in line for line in out.splitlines()) == total
    assert "focused" not in out and "more frames after this window" not in out
