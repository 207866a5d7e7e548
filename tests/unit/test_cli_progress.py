"""The command line: progress bars on a terminal (none on a pipe, none under -q), -v for more,
``python -m rdmasim``, and every command's errors as one line with exit status 2."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from rdmasim.progress import Progress

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
SCENARIO = ('[simulation]\nname = "cli"\n[topology]\nkind = "star"\nn = 3\n'
            '[[flows]]\nsrc = "h0"\ndst = "h2"\nsize = "256KiB"\n[[flows]]\nsrc = "h1"\ndst = "h2"\n'
            'size = "256KiB"\n[outputs]\nplots = false\n')


def _in_pty(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run ``python argv`` on a pseudo terminal (80 x 24); its exit status and everything it wrote."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout and stderr are the terminal
        os.chdir(cwd)
        os.execvpe(sys.executable, [sys.executable, *argv], ENV)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    out = b""
    try:
        while chunk := os.read(fd, 65536):
            out += chunk
    except OSError:  # the child closed the terminal
        pass
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def _py(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=ENV, cwd=cwd,
                          timeout=300)


def test_python_dash_m_rdmasim_works(tmp_path: Path) -> None:
    from rdmasim import __version__

    proc = _py("-m", "rdmasim", "--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip() == f"rdmasim {__version__}"
    assert _py("-m", "rdmasim", "--help", cwd=tmp_path).stdout.startswith("usage: rdmasim")


def test_run_draws_a_progress_bar_on_a_terminal_only(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO)
    rc, text = _in_pty(["-m", "rdmasim", "run", "s.toml", "--out", "o"], tmp_path)
    assert rc == 0, text
    bars = [ln for ln in text.replace("\r", "\n").splitlines() if ln.startswith("cli: ")]
    assert bars and "100%|" in bars[-1] and "flows 2/2" in bars[-1] and "M events/s" in bars[-1]
    # -q (before or after the command): no bar, the same summary
    for argv in (["-m", "rdmasim", "-q", "run", "s.toml", "--out", "o"],
                 ["-m", "rdmasim", "run", "s.toml", "--out", "o", "-q"]):
        rc, quiet = _in_pty(argv, tmp_path)
        assert rc == 0 and "%|" not in quiet and "flows completed: 2/2" in quiet
    # a pipe (not a terminal): no bar, nothing but the summary on stderr
    proc = _py("-m", "rdmasim", "run", "s.toml", "--out", "o", cwd=tmp_path)
    assert proc.returncode == 0 and "%|" not in proc.stderr and proc.stderr == ""


def test_trace_of_a_scenario_shows_progress_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO)
    rc, text = _in_pty(["-m", "rdmasim", "trace", "s.toml", "--max-frames", "5"], tmp_path)
    assert rc == 0, text
    bars = [ln for ln in text.replace("\r", "\n").splitlines() if ln.startswith("cli: ")]
    assert bars and "100%|" in bars[-1], text
    rc, quiet = _in_pty(["-m", "rdmasim", "trace", "s.toml", "--max-frames", "5", "-q"], tmp_path)
    assert rc == 0 and "%|" not in quiet and "──" in quiet


def test_sweep_and_demo_show_progress_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO)
    rc, text = _in_pty(["-m", "rdmasim", "sweep", "s.toml", "--param", "flows[].size=8KiB,16KiB",
                        "--out", "sw", "--workers", "1"], tmp_path)
    assert rc == 0, text
    lines = text.replace("\r", "\n").splitlines()
    assert any(ln.startswith("sweep: 100%|") and "2/2 runs, 0 skipped, 0 failed" in ln for ln in lines), text
    demo = ["-m", "rdmasim", "demo", "--out", "d", "--size", "64KiB", "--messages", "1"]
    rc, text = _in_pty(demo, tmp_path)
    assert rc == 0, text
    lines = text.replace("\r", "\n").splitlines()
    from rdmasim.demo_scenarios import BUNDLED

    for name in BUNDLED:  # a bar per bundled scenario, finished
        assert any(ln.startswith(f"{name}: 100%|") for ln in lines), name


def test_progress_bar_is_tty_aware() -> None:
    pipe = io.StringIO()
    p = Progress("x", None, pipe)
    p.update(0.5, "half")
    p.close()
    assert not p.enabled and pipe.getvalue() == ""
    forced = io.StringIO()
    p = Progress("x", True, forced)
    p.update(0.5, "half way")
    p.close()
    assert "x:  50%|" in forced.getvalue() and "| half way [" in forced.getvalue()
    off = io.StringIO()
    p = Progress("x", False, off)
    p.update(1.0, "done")
    p.close()
    assert off.getvalue() == ""


def test_verbose_run_lists_every_flow(tmp_path: Path) -> None:
    many = SCENARIO + "".join('[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "1KiB"\n' for _ in range(25))
    (tmp_path / "s.toml").write_text(many.replace("[outputs]\nplots = false\n", "") +
                                     "[outputs]\nplots = false\n")
    short = _py("-m", "rdmasim", "run", "s.toml", "--out", "o", cwd=tmp_path)
    assert "... 7 more flows (rdmasim run -v shows all)" in short.stdout
    full = _py("-m", "rdmasim", "run", "s.toml", "--out", "o", "-v", cwd=tmp_path)
    assert "more flows" not in full.stdout and full.stdout.count(" ok") >= 27
    assert "s.toml: " in full.stderr  # the estimate


@pytest.mark.parametrize("argv, message", [
    (["trace", "nonexist.npz"], "rdmasim trace: error: trace file 'nonexist.npz': cannot read: No such file"),
    (["trace", "README.txt"], "rdmasim trace: error: trace file 'README.txt': not a trace saved by rdmasim"),
    (["run", "nonexist.toml"], "nonexist.toml: (file): cannot read: No such file or directory"),
    (["validate", "nonexist.toml"], "nonexist.toml: (file): cannot read: No such file or directory"),
    (["sweep", "nonexist.toml"], "nonexist.toml: (file): cannot read: No such file or directory"),
    (["pyverbs-run", "nonexist.py"], "rdmasim pyverbs-run: error: nonexist.py: no such file"),
    (["demo", "--size", "12 parsecs"], "rdmasim demo: error: cannot read size '12 parsecs'"),
    (["demo", "--size", "0"], "rdmasim demo: error: demo: 0 bytes in 4 message(s): need at least one message "
                              "and at least one byte per message"),
    (["run"], "rdmasim run: error: the following arguments are required: file"),
])
def test_every_command_error_is_one_line_with_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    (tmp_path / "README.txt").write_text("not a trace\n")
    proc = _py("-m", "rdmasim", *argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(message), proc.stderr
    # a scenario's problems: one line each plus the count; anything else: exactly one line
    assert len(proc.stderr.splitlines()) == (2 if argv[0] in ("run", "validate", "sweep") and
                                            argv[1:] else 1), proc.stderr
    # -v adds the traceback for a bug report
    if argv[0] == "trace":
        verbose = _py("-m", "rdmasim", "-v", *argv, cwd=tmp_path)
        assert verbose.returncode == 2 and "Traceback" in verbose.stderr
