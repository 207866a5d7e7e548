"""The emulated rdma_cm (rdmasim/fabricd/cm.py, rdmasim/pyverbs/cmid.py): a passive and an active
side in two processes on one fabric daemon connect, move data and disconnect as with librdmacm
(docs/pyverbs.md, "The connection manager")."""

from __future__ import annotations

import errno
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rdmasim.errors import PyverbsRDMAError

PROG = str(Path(__file__).resolve().parent / "pv_cm.py")
_names = itertools.count()


def _run(mode: str) -> tuple[int, str]:
    fabric = f"pvcm{os.getpid()}x{next(_names)}"
    cmd = [sys.executable, "-m", "rdmasim", "exec", "--fabric", fabric, "--", sys.executable, PROG, mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    return p.returncode, p.stdout + p.stderr


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
