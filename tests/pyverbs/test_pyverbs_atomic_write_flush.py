"""pyverbs' extended-QP ATOMIC WRITE and FLUSH (``wr_atomic_write``, ``wr_flush``) on an emulated
device, as rdma-core's test_qpex drives them, and the device capability bits rxe reports for them."""

from __future__ import annotations

import pytest
from support.pyverbs_pair import poll, qpex_loopback

from rdmasim.errors import PyverbsUserError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR

QP_ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
             | e.IBV_ACCESS_FLUSH_GLOBAL | e.IBV_ACCESS_FLUSH_PERSISTENT)


def test_wr_atomic_write_places_the_eight_bytes() -> None:
    _, pd, qpex, _, scq, _ = qpex_loopback(e.IBV_QP_EX_WITH_ATOMIC_WRITE, access=QP_ACCESS)
    dst = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    dst.write(b"." * 64, 64)
    qpex.wr_start()
    qpex.wr_id, qpex.wr_flags = 0x55, e.IBV_SEND_SIGNALED
    qpex.wr_atomic_write(dst.rkey, dst.buf + 16, b"ccccdddd")
    qpex.wr_complete()
    (wc,) = poll(scq)
    assert (wc.status, wc.wr_id, wc.opcode) == (e.IBV_WC_SUCCESS, 0x55, e.IBV_WC_ATOMIC_WRITE)
    assert dst.read(24, 0) == b"." * 16 + b"ccccdddd"


def test_wr_flush_range_and_mr_and_a_type_the_region_lacks() -> None:
    _, pd, qpex, _, scq, _ = qpex_loopback(e.IBV_QP_EX_WITH_FLUSH, access=QP_ACCESS)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_FLUSH_GLOBAL)
    for length, level in ((100, e.IBV_FLUSH_RANGE), (1 << 23, e.IBV_FLUSH_MR)):
        qpex.wr_start()
        qpex.wr_flags = e.IBV_SEND_SIGNALED
        qpex.wr_flush(mr.rkey, mr.buf, length, e.IBV_FLUSH_GLOBAL, level)
        qpex.wr_complete()
        (wc,) = poll(scq)
        assert (wc.status, wc.opcode) == (e.IBV_WC_SUCCESS, e.IBV_WC_FLUSH)
    qpex.wr_start()
    qpex.wr_flags = e.IBV_SEND_SIGNALED
    qpex.wr_flush(mr.rkey, mr.buf, 8, e.IBV_FLUSH_PERSISTENT, e.IBV_FLUSH_RANGE)  # the MR lacks PERSISTENT
    qpex.wr_complete()
    (wc,) = poll(scq)
    assert wc.status == e.IBV_WC_REM_ACCESS_ERR


def test_wr_atomic_write_needs_its_send_ops_flag_and_eight_bytes() -> None:
    _, pd, qpex, _, _, _ = qpex_loopback(e.IBV_QP_EX_WITH_FLUSH, access=QP_ACCESS)
    qpex.wr_start()
    with pytest.raises(PyverbsUserError, match="IBV_QP_EX_WITH_ATOMIC_WRITE"):
        qpex.wr_atomic_write(1, 0, b"12345678")
    qpex2 = qpex_loopback(e.IBV_QP_EX_WITH_ATOMIC_WRITE, access=QP_ACCESS).qpex
    qpex2.wr_start()
    with pytest.raises(PyverbsUserError, match="exactly 8 bytes"):
        qpex2.wr_atomic_write(1, 0, b"1234")


def test_device_reports_rxe_flush_and_atomic_write_caps() -> None:
    attr = Context(name="rxe0").query_device_ex()
    flags = attr.device_cap_flags_ex
    for bit in (e._IBV_DEVICE_FLUSH_GLOBAL, e._IBV_DEVICE_FLUSH_PERSISTENT, e._IBV_DEVICE_ATOMIC_WRITE):
        assert flags & bit
    assert flags & 0xFFFFFFFF == attr.orig_attr.device_cap_flags
