"""Captures and traces cannot fill the disk unseen: `validate` and `run` estimate the files and
refuse what does not fit the free space; hidden staging folders of killed runs carry their pid and
are removed once that process is gone, saying which."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.results import remove_stale_staging, stage_out_dir, stale_staging

PCAP = ('[outputs]\nplots = false\npcap = true\n[simulation]\nprogress = false\n'
        '[topology]\nkind = "star"\nn = 4\n[traffic.all_to_all]\nsize = "16MiB"\n')
Usage = namedtuple("Usage", "total used free")


def _tiny_disk(monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    import rdmasim.scenario.check as check

    monkeypatch.setattr(check.shutil, "disk_usage", lambda p: Usage(free * 10, free * 9, free))


def test_validate_prints_the_files_a_capture_writes(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(PCAP)
    assert main(["validate", str(f)]) == 0
    out = capsys.readouterr().out
    assert "; writes ~" in out and "(capture " in out


def test_a_capture_larger_than_the_free_space_is_refused_before_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(PCAP)
    out = tmp_path / "res"
    _tiny_disk(monkeypatch, 50_000_000)
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}: outputs.pcap = True: the run would write about " in err
    assert "for the capture, but " in err and "has 50 MB free" in err and "pcap_snaplen" in err
    assert main(["run", str(f), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"into '{out}'" in err and "has 50 MB free" in err
    assert not out.exists() and not any(p.name.startswith(".res.") for p in tmp_path.iterdir())
    # headers only fit
    f.write_text(PCAP.replace("pcap = true\n", "pcap = true\npcap_snaplen = 64\n"))
    assert main(["validate", str(f)]) == 0


def test_staging_folders_carry_the_pid(tmp_path: Path) -> None:
    staging = stage_out_dir(tmp_path / "out")
    assert staging.name.startswith(f".out.partial-{os.getpid()}-")
    assert stale_staging(tmp_path / "out") == []  # this process is running
    shutil.rmtree(staging)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_run_removes_the_staging_folders_of_dead_runs_only(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    dead, alive = _dead_pid(), os.getpid()
    stale = tmp_path / f".res.partial-{dead}-abc123"
    stale.mkdir()
    (stale / "capture.pcap").write_bytes(b"x" * 200_000)
    mine = tmp_path / f".res.partial-{alive}-def456"
    mine.mkdir()
    legacy = tmp_path / ".res.partial-zz9x1"  # an older rdmasim's: no pid, never removed
    legacy.mkdir()
    f = tmp_path / "s.toml"
    f.write_text(f'[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n[outputs]\nplots = false\n'
                 f'dir = "{tmp_path / "res"}"\n')
    # validate says what is there and what run will do
    assert main(["validate", str(f)]) == 0
    err = capsys.readouterr().err
    assert (f"warning: {stale} (0.2 MB): a results folder's hidden staging folder left by process "
            f"{dead}") in err
    assert f"left by process {dead}, no longer running" in err
    assert str(legacy) in err and "remove it by hand" in err
    assert str(mine) not in err
    assert main(["run", str(f), "-q"]) == 0
    err = capsys.readouterr().err
    assert f"rdmasim run: removed {stale} (" in err and f"process {dead}, which is no longer running" in err
    assert not stale.exists() and mine.is_dir() and legacy.is_dir()
    assert (tmp_path / "res" / "metadata.json").is_file()
    assert remove_stale_staging(tmp_path / "res") == []
