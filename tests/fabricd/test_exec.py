"""C verbs programs on the emulated fabric: ``rdmasim exec``, the fabric daemon and
librdmasim_ibverbs.so (docs/c-programs.md).

A small C program (rs_verbs.c, compiled here) checks the data path byte for byte; Debian's
ibverbs-utils and perftest run when installed (skipped with the reason otherwise)."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rdmasim.errors import UserInputError
from rdmasim.fabricd import launch

HERE = Path(__file__).resolve().parent
_names = itertools.count()
needs_build = pytest.mark.skipif(
    not launch.VERBS_H.is_file() or shutil.which("gcc") is None,
    reason="needs gcc and the libibverbs headers (Debian: apt-get install libibverbs-dev gcc)")


def _fabric() -> str:
    return f"test{os.getpid()}x{next(_names)}"


def _exec(fabric: str, *args: str, host: str | None = None, extra: tuple[str, ...] = (),
          env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, *extra]
    if host:
        cmd += ["--host", host]
    return subprocess.Popen([*cmd, "--", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)


def _done(p: subprocess.Popen[str], timeout: float = 240) -> tuple[int, str]:
    out, _ = p.communicate(timeout=timeout)
    return p.returncode, out


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def rs_verbs(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not launch.VERBS_H.is_file() or shutil.which("gcc") is None:
        pytest.skip("needs gcc and the libibverbs headers (Debian: apt-get install libibverbs-dev gcc)")
    exe = tmp_path_factory.mktemp("rs") / "rs_verbs"
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-o", str(exe), str(HERE / "rs_verbs.c"), "-libverbs"],
                   check=True)
    return str(exe)


def test_one_process_two_devices_moves_real_bytes(rs_verbs: str) -> None:
    """WRITE, SEND with immediate and READ between rdmasim0 and rdmasim1 land the program's bytes."""
    rc, out = _done(_exec(_fabric(), rs_verbs, "loop", "20"))
    assert rc == 0, out
    assert "OK" in out


def test_inline_sends_take_the_bytes_at_post(rs_verbs: str) -> None:
    """IBV_SEND_INLINE from unregistered memory the program overwrites right after posting: the
    receiver gets the bytes of the post; above max_inline_data the post fails with EINVAL."""
    rc, out = _done(_exec(_fabric(), rs_verbs, "inline"))
    assert rc == 0, out


def test_completion_channel_fd_and_get_cq_event(rs_verbs: str) -> None:
    """Waiting through a completion channel: poll() on its fd, then ibv_get_cq_event."""
    rc, out = _done(_exec(_fabric(), rs_verbs, "events", "5"))
    assert rc == 0, out


def test_client_server_processes(rs_verbs: str) -> None:
    """Two processes on one fabric (h0 serves, h1 connects over a TCP side channel): the WRITE's
    bytes reach the server's memory, the SENDs both ways complete."""
    fabric, port = _fabric(), _port()
    srv = _exec(fabric, rs_verbs, "server", str(port), host="h0")
    cli = _exec(fabric, rs_verbs, "client", str(port), host="h1")  # it retries its connect
    (rc_c, out_c), (rc_s, out_s) = _done(cli), _done(srv)
    assert (rc_s, rc_c) == (0, 0), out_s + out_c


def test_a_fabric_that_never_goes_quiet_still_serves(rs_verbs: str, tmp_path: Path) -> None:
    """A PFC watchdog polls every 100 us forever: while the server waits on its socket the daemon
    runs the fabric in slices, and the client can still attach."""
    sc = tmp_path / "watchdog.toml"
    sc.write_text('[topology]\nkind = "star"\nn = 2\n\n[switch.watchdog]\nenabled = true\n')
    fabric, port = _fabric(), _port()
    srv = _exec(fabric, rs_verbs, "server", str(port), host="h0", extra=("--scenario", str(sc)))
    cli = _exec(fabric, rs_verbs, "client", str(port), host="h1")
    try:
        (rc_c, out_c), (rc_s, out_s) = _done(cli, 120), _done(srv, 120)
    finally:
        for p in (srv, cli):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert (rc_s, rc_c) == (0, 0), out_s + out_c


def test_same_program_same_pcap_bytes(rs_verbs: str, tmp_path: Path) -> None:
    """Simulated time passes only while the program waits in a verbs call: two runs, same bytes."""
    env = dict(os.environ, RDMASIM_IDLE_MS="0")
    pcaps = []
    for i in range(2):
        pcap = tmp_path / f"run{i}.pcap"
        fabric = _fabric()
        rc, out = _done(_exec(fabric, rs_verbs, "loop", "30", extra=("--pcap", str(pcap)), env=env))
        assert rc == 0, out
        deadline = time.monotonic() + 60  # the daemon closes the capture as it exits
        while _connectable(launch.socket_path(fabric)) and time.monotonic() < deadline:
            time.sleep(0.05)
        pcaps.append(pcap.read_bytes())
    assert len(pcaps[0]) > 24 + 30 * 2 * 60  # header, then at least a WRITE and an ACK per iteration
    assert pcaps[0] == pcaps[1]


def test_two_processes_same_pcap_bytes(rs_verbs: str, tmp_path: Path) -> None:
    """Client and server in two processes, the server's exec starting the fabric with --pcap: two
    runs give the same capture."""
    env = dict(os.environ, RDMASIM_IDLE_MS="0")
    pcaps = []
    for i in range(2):
        fabric, port, pcap = _fabric(), _port(), tmp_path / f"pair{i}.pcap"
        srv = _exec(fabric, rs_verbs, "server", str(port), host="h0", extra=("--pcap", str(pcap)), env=env)
        deadline = time.monotonic() + 60  # its exec holds the fabric's lock once it starts the daemon
        while not _locked(launch.socket_path(fabric).with_suffix(".lock")) and time.monotonic() < deadline:
            time.sleep(0.02)
        cli = _exec(fabric, rs_verbs, "client", str(port), host="h1", env=env)
        (rc_c, out_c), (rc_s, out_s) = _done(cli), _done(srv)
        assert (rc_s, rc_c) == (0, 0), out_s + out_c
        deadline = time.monotonic() + 60  # the daemon closes the capture as it exits
        while _connectable(launch.socket_path(fabric)) and time.monotonic() < deadline:
            time.sleep(0.05)
        pcaps.append(pcap.read_bytes())
    from rdmasim.capture import read_pcap

    assert len(list(read_pcap(str(tmp_path / "pair0.pcap")))) >= 8  # WRITE, SENDs and their ACKs, per link
    assert pcaps[0] == pcaps[1]


def test_killed_program_leaves_the_daemon_serving(rs_verbs: str) -> None:
    """A program killed mid-run: the daemon releases its objects and serves the next program."""
    fabric = _fabric()
    holder = _exec(fabric, "sleep", "120")  # keeps the daemon up between the programs
    try:
        victim = _exec(fabric, rs_verbs, "loop", "100000000")
        time.sleep(3)
        assert victim.poll() is None
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=30)
        rc, out = _done(_exec(fabric, rs_verbs, "loop", "10"))
        assert rc == 0, out
        log = launch.socket_path(fabric).with_suffix(".log").read_text()
        assert "Traceback" not in log
    finally:
        holder.kill()
        holder.wait()


def test_second_daemon_on_a_fabric_is_refused(rs_verbs: str) -> None:
    fabric = _fabric()
    holder = _exec(fabric, "sleep", "60")
    try:
        deadline = time.monotonic() + 60
        while _connectable(launch.socket_path(fabric)) is False and time.monotonic() < deadline:
            time.sleep(0.05)
        r = subprocess.run([sys.executable, "-m", "rdmasim.fabricd", "--fabric", fabric], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 3
        assert f"fabric {fabric!r} already has a daemon" in r.stderr
    finally:
        holder.kill()
        holder.wait()


def test_a_connection_that_never_says_hello_does_not_end_the_daemon() -> None:
    # a probe (or a program that dies before its first verbs call) connects and goes: the daemon
    # waits on for the programs it was started for
    fabric = _fabric()
    daemon = subprocess.Popen([sys.executable, "-m", "rdmasim.fabricd", "--fabric", fabric],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while _connectable(launch.socket_path(fabric)) is False and time.monotonic() < deadline:
            time.sleep(0.05)
        for _ in range(3):
            _connectable(launch.socket_path(fabric))
        time.sleep(1.0)
        assert daemon.poll() is None, daemon.communicate()[0]
    finally:
        daemon.kill()
        daemon.wait()


def _locked(lock: Path) -> bool:
    import fcntl

    if not lock.exists():
        return False
    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
    return False


def _connectable(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


@needs_build
def test_unknown_host_is_refused_naming_the_hosts() -> None:
    rc, out = _done(_exec(_fabric(), "true", host="h9"))
    assert rc == 2
    assert "--host 'h9': the fabric's hosts are ['h0', 'h1']" in out


def test_missing_headers_name_the_debian_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(launch, "VERBS_H", tmp_path / "nonexistent" / "verbs.h")
    with pytest.raises(UserInputError, match="apt-get install libibverbs-dev"):
        launch.build_library(tmp_path / "lib.so")


def test_program_without_exec_says_how_to_run(tmp_path: Path) -> None:
    """The library preloaded without a daemon: the program finds no device and is told why."""
    if not launch.VERBS_H.is_file() or shutil.which("gcc") is None:
        pytest.skip("needs gcc and the libibverbs headers")
    lib = launch.library()
    if shutil.which("ibv_devices") is None:
        pytest.skip("needs Debian's ibverbs-utils (ibv_devices)")
    env = {k: v for k, v in os.environ.items() if k != "RDMASIM_FABRIC_SOCKET"}
    env["LD_PRELOAD"] = str(lib)
    r = subprocess.run(["ibv_devices"], capture_output=True, text=True, env=env, timeout=60)
    assert "RDMASIM_FABRIC_SOCKET is not set" in r.stderr
    assert "rdmasim exec" in r.stderr


def _system_pyverbs() -> str | None:
    """A python3 whose ``import pyverbs`` is rdma-core's (Debian python3-pyverbs), or None."""
    exe = "/usr/bin/python3"
    if not Path(exe).exists():
        return None
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([exe, "-c", "import pyverbs.device"], capture_output=True, env=env)
    return exe if r.returncode == 0 else None


@needs_build
def test_rdma_core_pyverbs_on_the_daemon() -> None:
    """rdma-core's own pyverbs (C-backed, over libibverbs) runs on the daemon unchanged: a WRITE's
    bytes land in the peer's region."""
    exe = _system_pyverbs()
    if exe is None:
        pytest.skip("needs rdma-core's pyverbs for /usr/bin/python3 (apt-get install python3-pyverbs)")
    rc, out = _done(_exec(_fabric(), exe, str(HERE / "pv_write.py")))
    assert rc == 0, out
    assert "OK" in out


# ---- Debian's binaries, unmodified ----
needs_utils = pytest.mark.skipif(shutil.which("ibv_rc_pingpong") is None,
                                 reason="needs Debian's ibverbs-utils (apt-get install ibverbs-utils)")
needs_perftest = pytest.mark.skipif(shutil.which("ib_write_bw") is None,
                                    reason="needs Debian's perftest (apt-get install perftest)")


@needs_build
@needs_utils
def test_ibv_devinfo_lists_the_emulated_devices() -> None:
    rc, out = _done(_exec(_fabric(), "ibv_devinfo", "-v", host="h1"))
    assert rc == 0, out
    assert out.index("hca_id:\trdmasim1") < out.index("hca_id:\trdmasim0")  # --host h1: h1's NIC first
    assert "link_layer:\t\tEthernet" in out
    assert "GID[  1]:\t\t::ffff:10.0.0.1, RoCE v2" in out
    assert "GID[  0]:\t\tfe80::ff:fe00:1, RoCE v2" in out


def _listening(port: int) -> bool:
    """Whether a TCP socket listens on ``port`` (read from /proc: connecting would take the
    server's one accept)."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _pair(fabric: str, prog: list[str], port_flag: str, extra: tuple[str, ...] = (),
          env: dict[str, str] | None = None, client_extra: tuple[str, ...] = ()) -> tuple[str, str]:
    port = _port()
    srv = _exec(fabric, *prog, port_flag, str(port), host="h0", extra=extra, env=env)
    try:
        deadline = time.monotonic() + 120
        while not _listening(port) and srv.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        cli = _exec(fabric, *prog, port_flag, str(port), "localhost", host="h1", extra=client_extra, env=env)
        (rc_c, out_c), (rc_s, out_s) = _done(cli), _done(srv)
    finally:
        for p in (srv, locals().get("cli")):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert (rc_s, rc_c) == (0, 0), f"server:\n{out_s}\nclient:\n{out_c}"
    return out_s, out_c


@needs_build
@needs_utils
@pytest.mark.parametrize("prog", ["ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong",
                                  "ibv_srq_pingpong"])
def test_pingpong_client_server(prog: str) -> None:
    out_s, out_c = _pair(_fabric(), [prog, "-g", "1", "-n", "20"], "-p")
    assert "20 iters in" in out_s and "20 iters in" in out_c


@needs_build
@needs_utils
def test_rc_pingpong_with_events_and_buffer_check() -> None:
    _pair(_fabric(), ["ibv_rc_pingpong", "-g", "1", "-n", "10", "-e", "-c"], "-p")


@needs_build
@needs_utils
def test_sim_clock_pingpong_reports_the_fabric() -> None:
    """--sim-clock: the time rc_pingpong reads is simulated, so it reports the fabric's round trip:
    microseconds (a 4 KiB message each way over two 1 us hops), not the host's milliseconds."""
    env = dict(os.environ, RDMASIM_IDLE_MS="0")
    _, out_c = _pair(_fabric(), ["ibv_rc_pingpong", "-g", "1", "-n", "50"], "-p", extra=("--sim-clock",),
                     env=env, client_extra=("--sim-clock",))
    line = [ln for ln in out_c.splitlines() if "usec/iter" in ln][0]
    usec = float(line.split("=")[1].split()[0])
    assert 4 < usec < 10  # 2 x (2 hops x 1 us + 4 KiB at 100 Gb/s per hop) and the ACKs


@needs_build
@needs_perftest
@pytest.mark.parametrize("prog", ["ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw"])
def test_perftest_bw(prog: str) -> None:
    out_s, out_c = _pair(_fabric(), [prog, "-x", "1", "-n", "20"], "-p")
    assert "MsgRate[Mpps]" in out_c


@needs_build
@needs_perftest
@pytest.mark.slow
def test_perftest_write_lat() -> None:
    """ib_write_lat waits by spinning on memory: it runs through the idle rule (RDMASIM_IDLE_MS)."""
    out_s, out_c = _pair(_fabric(), ["ib_write_lat", "-x", "1", "-n", "20"], "-p")
    assert "t_avg[usec]" in out_c


@needs_build
@needs_perftest
def test_write_bw_over_a_lossy_link_retransmits(tmp_path: Path) -> None:
    """1 % loss on every link: ib_write_bw still finishes, and the capture shows resent PSNs."""
    sc = tmp_path / "lossy.toml"
    sc.write_text('[topology]\nkind = "star"\nn = 2\n\n[link]\nrate = "100Gbps"\nloss = 0.01\n')
    pcap = tmp_path / "lossy.pcap"
    _pair(_fabric(), ["ib_write_bw", "-x", "1", "-n", "200", "-s", "4096", "-t", "8"], "-p",
          extra=("--scenario", str(sc), "--pcap", str(pcap)))
    from rdmasim.capture import read_pcap

    sent: dict[int, int] = {}  # PSN -> frames captured (each frame once per link: twice on the star)
    for f in read_pcap(str(pcap)):
        x = f.fields
        if x["opcode"] in (6, 7, 8, 10):  # RDMA WRITE first/middle/last/only
            sent[x["psn"]] = sent.get(x["psn"], 0) + 1
    assert len(sent) >= 200
    assert max(sent.values()) > 2  # more than once per link: resent
    if shutil.which("tshark"):  # an independent decoder reads the whole capture
        r = subprocess.run(["tshark", "-r", str(pcap), "-q"], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
