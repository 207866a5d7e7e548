"""SIGTERM and SIGHUP stop `rdmasim run` as Ctrl-C does (partial results kept, a message, exit
128 + the signal number), and a Ctrl-C while the command is still starting is one line, exit 130."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from rdmasim.results import read_table

ROOT = Path(__file__).resolve().parents[2]
LONG = ('[simulation]\nduration = "10s"\n[topology]\nkind = "star"\nn = 8\n'
        '[traffic.poisson]\nload = 0.9\nduration = "200ms"\n[outputs]\nplots = false\n')


def _env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [e.get("PYTHONPATH")])])
    return e


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_keep_the_partial_results(tmp_path: Path, sig: signal.Signals) -> None:
    scenario = tmp_path / "long.toml"
    scenario.write_text(LONG)  # a run of minutes: the signal comes long before its end
    out = tmp_path / "out"
    pid, fd = pty.fork()  # on a terminal: the progress bar shows when the simulation runs
    if pid == 0:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        os.execvpe(sys.executable, [sys.executable, "-m", "rdmasim.cli", "run", str(scenario), "--out",
                                    str(out)], _env())
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
    seen = b""
    code = None
    try:
        deadline = time.monotonic() + 120
        while b"events/s" not in seen:
            assert time.monotonic() < deadline
            seen += os.read(fd, 256)
        os.kill(pid, sig)
        try:
            while chunk := os.read(fd, 4096):
                seen += chunk
        except OSError:
            pass
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    finally:
        if code is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    err = seen.decode(errors="replace").replace("\r", "\n")
    assert code == 128 + sig, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"rdmasim run: interrupted by {sig.name} at simulated time "), last
    assert f'partial results (metadata.json: "complete": false) in {out / "metadata.json"}' in last
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["complete"] is False
    rows = read_table(out, "flows").to_dict("records")
    assert len(rows) == meta["flows"] > meta["completed"]


def test_importing_the_command_line_loads_no_numpy_and_no_core() -> None:
    # what runs before main()'s handler is in place: kept to the standard library
    code = ("import sys, rdmasim.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy' or m == 'rdmasim._core'))")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.strip() == "[]"


def test_ctrl_c_while_starting_is_one_line_and_130(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text('[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n')
    # Ctrl-C arrives while the scenario modules load (as it would in the first few hundred ms)
    code = (
        "import sys\n"
        "class Stop:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'rdmasim.scenario.load':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Stop())\n"
        "from rdmasim.cli import main\n"
        f"sys.exit(main(['validate', {str(f)!r}]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines() == ["rdmasim: interrupted"]


def test_ctrl_c_at_any_moment_of_startup_shows_no_traceback(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text('[[flows]]\nsrc = "a"\ndst = "b"\nsize = "4KiB"\n')
    # from the moment the command's module is loaded (before it Python itself starts, which is
    # not rdmasim's), through the loading of numpy, the C core and the scenario modules
    code = ("import sys, rdmasim.cli\nprint('started', flush=True)\n"
            f"sys.exit(rdmasim.cli.main(['validate', {str(f)!r}]))\n")
    for delay in (0.0, 0.05, 0.1, 0.2, 0.3):
        proc = subprocess.Popen([sys.executable, "-c", code], env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline() == "started\n"
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, (delay, err)
        # interrupted (130), or finished before the signal came (0)
        assert proc.returncode in (0, 130), (delay, proc.returncode, err)
        if proc.returncode == 130:
            assert len(err.splitlines()) == 1 and "interrupted" in err, err


def test_the_package_names_and_submodules_still_load_on_first_use() -> None:
    code = ("import rdmasim; print(rdmasim.units.parse_rate('1Gbps'), rdmasim.back_to_back.__name__, "
            "rdmasim.Simulator.__name__, 'Switch' in dir(rdmasim))")
    proc = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True,
                          timeout=60, check=True)
    assert proc.stdout.split() == ["1000000000", "back_to_back", "Simulator", "True"]
