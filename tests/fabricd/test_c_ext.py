"""Extended and less common verbs for C programs on the fabric daemon: ibv_create_qp_ex with the
ibv_wr_* builders, ibv_create_cq_ex with ibv_start_poll, ibv_query_device_ex, memory windows,
ibv_resize_cq, asynchronous events and fork (tests/fabricd/rs_ext.c, compiled here)."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rdmasim.fabricd import launch

HERE = Path(__file__).resolve().parent
_names = itertools.count()


@pytest.fixture(scope="module")
def rs_ext(tmp_path_factory: pytest.TempPathFactory) -> str:
    if not launch.VERBS_H.is_file() or shutil.which("gcc") is None:
        pytest.skip("needs gcc and the libibverbs headers (Debian: apt-get install libibverbs-dev gcc)")
    exe = tmp_path_factory.mktemp("rsx") / "rs_ext"
    subprocess.run(["gcc", "-std=gnu11", "-O2", "-Wall", "-o", str(exe), str(HERE / "rs_ext.c"), "-libverbs"],
                   check=True)
    return str(exe)


def _run(*args: str, env: dict[str, str] | None = None, extra: tuple[str, ...] = (),
         fabric: str | None = None, timeout: float = 240) -> tuple[int, str]:
    fabric = fabric or f"ext{os.getpid()}x{next(_names)}"
    p = subprocess.run([sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, *extra, "--", *args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                       env=dict(os.environ, RDMASIM_IDLE_MS="0") if env is None else env)
    return p.returncode, p.stdout


_WATCH = dict(os.environ, RDMASIM_IDLE_MS="0", RDMASIM_WATCH_MEMORY="1")


def test_qp_ex_builders_cq_ex_polling_and_query_device_ex(rs_ext: str) -> None:
    """One ibv_wr_* batch (WRITE, SEND with immediate and inline data, READ into two SGEs), atomics,
    a batch larger than the send queue refused with ENOMEM; completions read with ibv_start_poll and
    the ibv_wc_read_* accessors; ibv_query_device_ex's extended flags and port count."""
    rc, out = _run(rs_ext, "ext")
    assert rc == 0, out
    assert "OK" in out


def test_memory_windows_type_1_and_2(rs_ext: str) -> None:
    """A peer's WRITE through a bound window lands in the window's bytes; past its end, or after
    the window is deallocated, it completes with a remote access error."""
    rc, out = _run(rs_ext, "mw")
    assert rc == 0, out
    assert "OK" in out


def test_resize_cq(rs_ext: str) -> None:
    rc, out = _run(rs_ext, "resize")
    assert rc == 0, out
    assert "OK" in out


def test_async_events_srq_limit_and_last_wqe(rs_ext: str) -> None:
    """async_fd is pollable; ibv_get_async_event returns SRQ_LIMIT_REACHED of the SRQ, then
    QP_LAST_WQE_REACHED of the QP on it when it enters the error state; EAGAIN when non-blocking
    and nothing is due."""
    rc, out = _run(rs_ext, "async")
    assert rc == 0, out
    assert "OK" in out


def test_fork_child_gets_a_private_copy_of_registered_memory(rs_ext: str) -> None:
    rc, out = _run(rs_ext, "fork")
    assert rc == 0, out
    assert "OK" in out


def test_rdma_core_pyverbs_extended_verbs() -> None:
    """rdma-core's own pyverbs (C-backed: Debian python3-pyverbs) through the extended verbs: QPEx's
    wr_* batch, CQEX's start_poll and read_* accessors, a type 1 window bound with bind_mw."""
    exe = "/usr/bin/python3"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not Path(exe).exists() or subprocess.run([exe, "-c", "import pyverbs.qp"], env=env).returncode:
        pytest.skip("needs rdma-core's pyverbs for /usr/bin/python3 (apt-get install python3-pyverbs)")
    if not launch.VERBS_H.is_file() or shutil.which("gcc") is None:
        pytest.skip("needs gcc and the libibverbs headers (Debian: apt-get install libibverbs-dev gcc)")
    rc, out = _run(exe, str(HERE / "pv_ext.py"))
    assert rc == 0, out
    assert "OK" in out
    assert "Errno" not in out  # nothing refused, also as the objects are released at exit


def test_spinning_on_registered_memory_counts_as_waiting(rs_ext: str) -> None:
    """RDMASIM_WATCH_MEMORY: a program that waits for a WRITE's byte by reading its memory in a loop
    (no verbs call) counts as waiting, with the host-time rule off (RDMASIM_IDLE_MS=0): it finishes.
    (Without the watch the daemon never runs the fabric while the program spins: it never does.)"""
    rc, out = _run(rs_ext, "spin", "20", env=_WATCH, timeout=180)
    assert rc == 0, out
    assert "OK" in out


def _connectable(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True


def test_spinning_program_gives_the_same_pcap_bytes(rs_ext: str, tmp_path: Path) -> None:
    """The point where a spinning program waits is one of its own reads, not a span of host time:
    two runs give the same capture."""
    pcaps = []
    for i in range(2):
        fabric, pcap = f"exs{os.getpid()}x{next(_names)}", tmp_path / f"spin{i}.pcap"
        rc, out = _run(rs_ext, "spin", "10", env=_WATCH, extra=("--pcap", str(pcap)), fabric=fabric,
                       timeout=180)
        assert rc == 0, out
        deadline = time.monotonic() + 60  # the daemon closes the capture as it exits
        while _connectable(launch.socket_path(fabric)) and time.monotonic() < deadline:
            time.sleep(0.05)
        pcaps.append(pcap.read_bytes())
    assert len(pcaps[0]) > 24 + 10 * 2 * 60  # header, then a WRITE and an ACK per iteration
    assert pcaps[0] == pcaps[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ib_write_lat") is None, reason="needs Debian's perftest")
def test_write_lat_without_the_idle_rule() -> None:
    """ib_write_lat (which waits by spinning on memory) finishes with RDMASIM_IDLE_MS=0 under the watch."""
    sys.path.insert(0, str(HERE))
    import test_exec

    prog = ["ib_write_lat", "-x", "1", "-n", "20"]
    out_s, out_c = test_exec._pair(test_exec._fabric(), prog, "-p", env=_WATCH)
    assert "t_avg[usec]" in out_c
