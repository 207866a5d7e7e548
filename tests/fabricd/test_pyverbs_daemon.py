"""rdmasim's own pyverbs in processes served by the fabric daemon (``rdmasim exec -- python ...``):
two processes, or a program and its forked child, share one emulated fabric and its registered
memory (docs/pyverbs.md, "Several processes")."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from rdmasim.fabricd import launch

HERE = Path(__file__).resolve().parent
PROG = str(HERE / "pv_cs.py")
_names = itertools.count()


def _fabric() -> str:
    return f"pvd{os.getpid()}x{next(_names)}"


def _exec(fabric: str, *args: str, host: str | None = None, extra: tuple[str, ...] = (),
          env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, *extra]
    if host:
        cmd += ["--host", host]
    return subprocess.Popen([*cmd, "--", sys.executable, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def _done(p: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        return -1, out
    return p.returncode, out


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _connectable(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def _locked(lock: Path) -> bool:
    import fcntl

    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def test_client_and_server_processes_write_and_send() -> None:
    """Server on h0, client on h1, each its own process: the client's RDMA WRITE lands in the
    server's MR and its SEND with immediate arrives with the data and the immediate."""
    fabric, port = _fabric(), _port()
    srv = _exec(fabric, PROG, "server", str(port), host="h0")
    cli = _exec(fabric, PROG, "client", str(port), host="h1")
    (rc_c, out_c), (rc_s, out_s) = _done(cli), _done(srv)
    assert (rc_s, rc_c) == (0, 0), out_s + out_c
    assert "OK server" in out_s and "OK client" in out_c


def test_a_forked_child_shares_the_fabric() -> None:
    """The program forks after talking to the daemon: the child attaches on a connection of its
    own and connects a QP to its parent's."""
    rc, out = _done(_exec(_fabric(), PROG, "fork"))
    assert rc == 0, out
    assert "OK server" in out and "OK client" in out


def test_pyverbs_run_with_fabric_runs_on_the_daemon() -> None:
    """``rdmasim pyverbs-run --fabric NAME prog.py`` is ``rdmasim exec --fabric NAME -- rdmasim
    pyverbs-run prog.py``: the forked child shares the fabric (in one process it could not)."""
    p = subprocess.run([sys.executable, "-m", "rdmasim", "pyverbs-run", "--fabric", _fabric(), PROG, "fork"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK server" in p.stdout and "OK client" in p.stdout


def test_completion_channel_events_through_the_daemon() -> None:
    """A CQ on a CompChannel, armed with req_notify: get_cq_event waits in the daemon until the
    SEND's completion is due; the channel's fd is readable only while the event waits. The
    receive comes from an SRQ."""
    rc, out = _done(_exec(_fabric(), str(HERE / "pv_events.py")))
    assert rc == 0, out
    assert out.strip().endswith("OK"), out


def test_same_two_processes_same_pcap_bytes(tmp_path: Path) -> None:
    """Simulated time passes only while both processes wait (in verbs calls, or idle outside them
    longer than RDMASIM_IDLE_MS, as a Python process blocked on its side channel is): two runs of
    the client/server pair give the same capture, byte for byte."""
    env = dict(os.environ)
    pcaps = []
    for i in range(2):
        pcap = tmp_path / f"run{i}.pcap"
        fabric, port = _fabric(), _port()
        srv = _exec(fabric, PROG, "server", str(port), host="h0", extra=("--pcap", str(pcap)), env=env)
        deadline = time.monotonic() + 60  # the server's exec starts the daemon (with --pcap) first
        while not _connectable(launch.socket_path(fabric)) and time.monotonic() < deadline:
            time.sleep(0.05)
        cli = _exec(fabric, PROG, "client", str(port), host="h1", env=env)
        (rc_c, out_c), (rc_s, out_s) = _done(cli), _done(srv)
        assert (rc_s, rc_c) == (0, 0), out_s + out_c
        deadline = time.monotonic() + 60  # the daemon closes the capture, then exits (its lock goes)
        while _locked(launch.socket_path(fabric).with_suffix(".lock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        pcaps.append(pcap)
    a, b = (p.read_bytes() for p in pcaps)
    assert len(a) > 24 + 16 * 4  # header and the WRITE, SEND and their ACKs
    assert a == b


def test_a_finalizer_during_a_request_neither_hangs_nor_mixes_requests() -> None:
    """CompChannels in reference cycles, collected while the thread waits for another request's
    answer (as in rdma-core's whole runner): their destroy goes after that request."""
    rc, out = _done(_exec(_fabric(), str(HERE / "pv_gc.py")), timeout=60)
    assert rc == 0, out
    assert out.strip().endswith("OK"), out


def test_memory_mapped_again_at_the_same_address_is_the_new_mapping() -> None:
    """Register, deregister, unmap, map again at the same address, register: the peer's WRITE
    lands in the new mapping (the daemon is given its pages, not the old ones)."""
    rc, out = _done(_exec(_fabric(), str(HERE / "pv_remap.py")), timeout=60)
    assert rc == 0, out
    assert out.strip().endswith("OK"), out
