"""Extended and less common verbs for C programs on the fabric daemon: ibv_create_qp_ex with the
ibv_wr_* builders, ibv_create_cq_ex with ibv_start_poll, ibv_query_device_ex, memory windows,
ibv_resize_cq, asynchronous events and fork (tests/fabricd/rs_ext.c, compiled here)."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
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


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    fabric = f"ext{os.getpid()}x{next(_names)}"
    p = subprocess.run([sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, "--", *args],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240,
                       env=dict(os.environ, RDMASIM_IDLE_MS="0") if env is None else env)
    return p.returncode, p.stdout


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
