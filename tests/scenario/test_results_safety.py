"""Finished results are never lost or mixed: the folder is checked before the run, written whole
or not at all (a full disk leaves the previous results as they were), and Ctrl-C stops a run
cleanly, keeping the flows so far marked incomplete."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import resource
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from rdmasim.errors import ResultsWriteError, UserInputError
from rdmasim.results import pyarrow_available, read_table
from rdmasim.scenario import loads, run_scenario

ROOT = Path(__file__).resolve().parents[2]
SMALL = '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n[outputs]\nplots = false\n'
#: 64 flows: a flows.csv of several kB
MANY = (
    '[topology]\nkind = "star"\nn = 8\n[traffic.all_to_all]\nsize = "4KiB"\n'
    "[outputs]\nplots = false\n[simulation]\nprogress = false\n"
)


def _env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [e.get("PYTHONPATH")])])
    return e


def _siblings(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def test_an_unusable_folder_is_found_before_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rdmasim.scenario.run as run_mod

    def no_build(*a: object, **k: object) -> None:
        raise AssertionError("the simulation was built although its results cannot be written")

    monkeypatch.setattr(run_mod, "build", no_build)
    afile = tmp_path / "f"
    afile.write_text("x")
    with pytest.raises(
        ResultsWriteError, match=f"results folder '{afile / 'out'}': cannot write in '{afile}'"
    ):
        run_scenario(loads(SMALL), out_dir=str(afile / "out"), progress=False)
    with pytest.raises(UserInputError, match="exists and is not a folder"):
        run_scenario(loads(SMALL), out_dir=str(afile), progress=False)
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(UserInputError, match=r"holds files that are not rdmasim results \(notes.txt\)"):
        run_scenario(loads(SMALL), out_dir=str(other), progress=False)
    assert (other / "notes.txt").read_text() == "keep me" and afile.read_text() == "x"


def test_a_second_run_replaces_the_first_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_scenario(loads(SMALL + "pcap = true\ntrace = true\n"), out_dir=str(out), progress=False)
    assert {"capture.pcap", "trace.npz"} <= {p.name for p in out.iterdir()}
    second = run_scenario(loads(MANY), out_dir=str(out), progress=False)
    names = {p.name for p in out.iterdir()}
    # nothing of the first run is left beside the second
    assert "capture.pcap" not in names and "trace.npz" not in names
    assert names == {Path(p).name for p in second.files.values()}
    assert len(read_table(out, "flows")) == len(second.flows) == 56 != len(first.flows)
    assert json.loads((out / "metadata.json").read_text())["flows"] == 56
    assert _siblings(out) == []


def test_a_write_that_fails_leaves_the_previous_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run_scenario(loads(SMALL), out_dir=str(out), progress=False)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (tmp_path / "many.toml").write_text(MANY)

    def small_files() -> None:  # a disk that takes 1,500 bytes per file: a write that fails part way
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rdmasim.cli",
            "run",
            str(tmp_path / "many.toml"),
            "--out",
            str(out),
            "--quiet",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    # the first table written hits the limit (flows.parquet with pyarrow, flows.csv without)
    table = "flows.parquet" if pyarrow_available() else "flows.csv"
    assert line.startswith(f"rdmasim run: error: cannot write the results to '{out}': {table}: "), line
    assert "File too large" in line
    assert line.endswith(f"(nothing written; '{out}' is as it was before the run)")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert _siblings(out) == []


def test_ctrl_c_stops_the_run_and_keeps_the_flows_so_far(tmp_path: Path) -> None:
    scenario = tmp_path / "long.toml"
    # a run of minutes: Ctrl-C comes long before its end
    scenario.write_text(
        '[simulation]\nduration = "10s"\n[topology]\nkind = "star"\nn = 8\n'
        '[traffic.poisson]\nload = 0.9\nduration = "200ms"\n[outputs]\nplots = false\n'
    )
    out = tmp_path / "out"
    # on a terminal, so that the progress bar shows when the simulation is running
    pid, fd = pty.fork()
    if pid == 0:
        # as a shell on a terminal starts it: a run started in the background (`cmd &` in a script)
        # inherits SIGINT ignored, and exec keeps that
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execvpe(sys.executable, [sys.executable, "-m", "rdmasim.cli", "run", str(scenario), "--out",
                                    str(out)], _env())
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    seen = b""
    code = None
    try:
        deadline = time.monotonic() + 120
        while b"events/s" not in seen:  # the progress bar's first update: the simulation is running
            assert time.monotonic() < deadline
            seen += os.read(fd, 256)
        os.kill(pid, signal.SIGINT)
        try:
            while chunk := os.read(fd, 4096):
                seen += chunk
        except OSError:  # the child closed the terminal
            pass
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    finally:
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    err = seen.decode(errors="replace").replace("\r", "\n")
    assert code == 130, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("rdmasim run: interrupted at simulated time ")
    assert f'partial results (metadata.json: "complete": false) in {out / "metadata.json"}' in last
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["complete"] is False
    rows = read_table(out, "flows").to_dict("records")
    assert len(rows) == meta["flows"] > meta["completed"]
    assert {r["status"] for r in rows} <= {"ok", "incomplete"}
    assert f"{meta['completed']} of {meta['flows']} flows finished" in last
    assert _siblings(out) == []
