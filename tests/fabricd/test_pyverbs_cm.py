"""The emulated rdma_cm (rdmasim/fabricd/cm.py, rdmasim/pyverbs/cmid.py): a passive and an active
side in two processes on one fabric daemon connect, move data and disconnect as with librdmacm
(docs/pyverbs.md, "The connection manager")."""

from __future__ import annotations

import errno
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rdmasim.errors import PyverbsRDMAError
from rdmasim.fabricd import launch

PROG = str(Path(__file__).resolve().parent / "pv_cm.py")
_names = itertools.count()


def _run(mode: str, extra: tuple[str, ...] = (), fabric: str | None = None) -> tuple[int, str]:
    fabric = fabric or f"pvcm{os.getpid()}x{next(_names)}"
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, *extra, "--", sys.executable, PROG,
           mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    return p.returncode, p.stdout + p.stderr


def _locked(lock: Path) -> bool:
    import fcntl

    with open(lock, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def test_same_connection_same_pcap_bytes(tmp_path: Path) -> None:
    """The CM's messages take no simulated time and the data path waits as for any program: two
    runs of the async exchange (SEND both ways, WRITE, READ) give the same capture."""
    pcaps = []
    for i in range(2):
        pcap, fabric = tmp_path / f"cm{i}.pcap", f"pvcm{os.getpid()}x{next(_names)}"
        rc, out = _run("async", ("--pcap", str(pcap)), fabric)
        assert rc == 0, out
        deadline = time.monotonic() + 60  # the daemon closes the capture, then exits (its lock goes)
        while _locked(launch.socket_path(fabric).with_suffix(".lock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        pcaps.append(pcap.read_bytes())
    assert len(pcaps[0]) > 24 + 4 * (256 + 58)  # at least the two SENDs, the WRITE and the READ response
    assert pcaps[0] == pcaps[1]


@pytest.mark.parametrize("mode", ["async", "sync", "reject", "nobody", "multicast"])
def test_passive_and_active_processes(mode: str) -> None:
    """async: CONNECT_REQUEST with the active side's private data, ESTABLISHED with the passive
    side's, SEND both ways, WRITE and READ, DISCONNECTED on both sides and the QP in ERR; sync:
    rdma_create_ep-style identifiers with blocking connect/accept; reject: REJECTED carrying the
    reject's private data; nobody: a connect to a port nobody listens on is REJECTED; multicast:
    UD identifiers join a group, a send to it (QPN 0xFFFFFF) reaches the other member, and after
    it leaves, nothing does."""
    rc, out = _run(mode)
    assert rc == 0, out
    assert "OK passive" in out and "OK active" in out


def test_a_killed_peer_disconnects_and_the_daemon_serves_on() -> None:
    """The active process is killed once connected: the passive side sees DISCONNECTED, its QP is
    in the error state with the posted receive flushed, and it can bind a new identifier."""
    rc, out = _run("killed")
    assert rc == 0, out
    assert "OK passive" in out and "OK active" in out


def test_refusals() -> None:
    """An address no host has (EADDRNOTAVAIL, naming it), a port in use (EADDRINUSE), connect
    before resolve (EINVAL), resolving an unknown address (ADDR_ERROR event)."""
    rc, out = _run("errors")
    assert rc == 0, out
    assert "OK errors" in out


def test_in_one_process_without_a_daemon_it_says_how_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from rdmasim.pyverbs import _devices, cmid

    monkeypatch.delenv("RDMASIM_FABRIC_SOCKET", raising=False)
    _devices.reset()
    with pytest.raises(PyverbsRDMAError) as exc:
        cmid.CMEventChannel()
    assert exc.value.error_code == errno.EOPNOTSUPP
    assert "rdmasim exec" in str(exc.value)
