"""What rdma-core's own pyverbs tests need from rdmasim.pyverbs beyond the data path: every name
their helpers import, provider modules that answer EOPNOTSUPP, mem_alloc, the device queries,
the extended QP post API, completion events after polling, and MR re-registration."""

from __future__ import annotations

import ctypes
import errno
import importlib
import socket
from pathlib import Path

import pytest
from support.pyverbs_pair import poll, qpex_loopback

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs import mem_alloc
from rdmasim.pyverbs.cq import CQ, CompChannel
from rdmasim.pyverbs.device import Context, get_device_list
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR
from rdmasim.verbs import connect_qps

NEEDS = Path(__file__).parent.parent / "pyverbs_suite" / "needs.md"


def _needs() -> list[tuple[str, list[str]]]:
    block = NEEDS.read_text().split("```")[1]
    out = []
    for line in block.strip().splitlines():
        mod, names = line.split(":", 1)
        wanted = [] if names.strip().startswith("(") else [n.strip() for n in names.split(",")]
        out.append((mod.strip(), wanted))
    return out


@pytest.mark.parametrize(("module", "names"), _needs(), ids=[m for m, _ in _needs()])
def test_every_name_rdma_cores_tests_import(module: str, names: list[str]) -> None:
    mod = importlib.import_module("rdmasim." + module)
    missing = [n for n in names if not hasattr(mod, n)]
    assert not missing, f"rdmasim.{module} lacks {missing}"


@pytest.mark.parametrize(("module", "name"), [
    ("providers.mlx5.mlx5dv", "Mlx5Context"), ("providers.mlx5.mlx5dv", "Mlx5QP"),
    ("providers.mlx5.mlx5dv_objects", "Mlx5DvObj"), ("providers.efa.efadv", "EfaCQ"),
    ("dmabuf", "DmaBuf"), ("device", "DM"), ("device", "FdArr"), ("mr", "DMMR"),
    ("mr", "DmaBufMR"), ("srq", "SrqInitAttrEx"),
])
def test_absent_features_answer_eopnotsupp(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(f"rdmasim.pyverbs.{module}"), name)
    with pytest.raises(PyverbsRDMAError) as exc:
        cls(object(), 1)
    assert exc.value.error_code == errno.EOPNOTSUPP


def test_mem_alloc_is_real_memory() -> None:
    addr = mem_alloc.posix_memalign(8192, 4096)
    try:
        assert addr % 4096 == 0
        assert ctypes.string_at(addr, 8192) == bytes(8192)  # zeroed, as pyverbs
        mem_alloc.writebe32(addr, 0x01020304, 1)
        assert ctypes.string_at(addr + 4, 4) == b"\x01\x02\x03\x04"
    finally:
        mem_alloc.free(addr)
    m = mem_alloc.mmap(length=4096)
    ctypes.memset(m, 7, 4096)
    mem_alloc.madvise(m, 4096)  # MADV_DONTNEED: a private anonymous page reads back as zeros
    assert ctypes.string_at(m, 4) == bytes(4)
    mem_alloc.munmap(m, 4096)


def test_device_queries_as_libibverbs() -> None:
    ctx = Context(name=get_device_list()[0].name.decode())
    assert ctx.query_device().vendor_id == 0xFFFFFF  # rxe's RXE_VENDOR_ID
    entry = ctx.query_gid_ex(1, 0)
    assert entry.gid_str() == ctx.query_gid(1, 0).gid and entry.gid_type == 2
    assert [x.gid_index for x in ctx.query_gid_table(1024)] == [0]
    with pytest.raises(PyverbsRDMAError) as exc:
        ctx.query_gid_ex(1, 5)
    assert exc.value.error_code == errno.ENODATA
    with pytest.raises(PyverbsRDMAError) as exc:
        ctx.query_gid_table(0)
    assert exc.value.error_code == -errno.EINVAL  # libibverbs returns -errno here
    assert ctx.query_pkey(1, 0) == 0xFFFF and ctx.get_pkey_index(1, 0xFFFF) == 0
    with pytest.raises(PyverbsRDMAError, match="Failed to query port 3: Invalid argument"):
        ctx.query_port(3)
    with pytest.raises(PyverbsRDMAError) as exc:
        CQ(ctx, 10, None, None, ctx.num_comp_vectors)
    assert exc.value.error_code == errno.EINVAL


def test_unemulated_qp_type_is_eopnotsupp() -> None:
    ctx = Context(name="rxe0")
    pd, cq = PD(ctx), CQ(ctx, 10)
    with pytest.raises(PyverbsRDMAError) as exc:
        QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq))
    assert exc.value.error_code == errno.EOPNOTSUPP


def test_qpex_posts_a_batch_with_host_order_immediate() -> None:
    ctx, pd, qpex, peer, scq, rcq = qpex_loopback(e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM
                                                  | e.IBV_QP_EX_WITH_SEND)
    src = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.write(b"qpex-data")
    peer.post_recv(RecvWR(wr_id=7, sg=[SGE(dst.buf, 64, dst.lkey)]))
    qpex.wr_start()
    qpex.wr_id, qpex.wr_flags = 0x123, e.IBV_SEND_SIGNALED
    qpex.wr_rdma_write_imm(dst.rkey, dst.buf, 0xAABBCCDD)
    qpex.wr_set_sge(SGE(src.buf, 9, src.lkey))
    qpex.wr_complete()
    (swc,) = poll(scq)
    assert swc.status == e.IBV_WC_SUCCESS and swc.wr_id == 0x123
    (rwc,) = poll(rcq)
    assert rwc.status == e.IBV_WC_SUCCESS and socket.ntohl(rwc.imm_data) == 0xAABBCCDD
    assert dst.read(9, 0) == b"qpex-data"
    qpex.wr_start()
    with pytest.raises(PyverbsUserError, match="IBV_QP_EX_WITH_FLUSH is not in the QP's send_ops_flags"):
        qpex.wr_flush(dst.rkey, dst.buf, 8, 1, 0)
    qpex.wr_send()
    with pytest.raises(PyverbsRDMAError) as exc:
        qpex.wr_set_inline_data(b"x")
    assert exc.value.error_code == errno.EOPNOTSUPP


def test_qpex_refuses_send_ops_it_cannot_post() -> None:
    ctx = Context(name="rxe0")
    pd, cq = PD(ctx), CQ(ctx, 4)
    attr = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, pd=pd,
                        send_ops_flags=e.IBV_QP_EX_WITH_TSO)
    with pytest.raises(PyverbsRDMAError) as exc:
        QPEx(ctx, attr)
    assert exc.value.error_code == errno.EOPNOTSUPP


def test_cq_event_after_earlier_completions_were_polled() -> None:
    ctx = Context(name="rxe0")
    pd = PD(ctx)
    ch = CompChannel(ctx)
    cq, rcq = CQ(ctx, 16, None, ch, 0), CQ(ctx, 16)
    assert cq.comp_channel is ch
    a = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=8)))
    b = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=rcq, rcq=rcq))
    connect_qps(a, b)
    src = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    for i in range(3):  # as rdma-core's poll helper: arm, wait for the event, re-arm, poll
        cq.req_notify()
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 8, src.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(dst.rkey, dst.buf)
        a.post_send(wr)
        ch.get_cq_event(cq)
        cq.ack_events(1)
        n, wcs = cq.poll()
        assert n == 1 and wcs[0].wr_id == i


def test_rereg_access_keeps_the_keys() -> None:
    ctx = Context(name="rxe0")
    pd = PD(ctx)
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    lkey, rkey = mr.lkey, mr.rkey
    assert rkey == lkey  # as rxe_mr_init: one key
    mr.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    assert (mr.lkey, mr.rkey) == (lkey, rkey) and mr.access == 3
    new_pd = PD(ctx)
    mr.rereg(e.IBV_REREG_MR_CHANGE_PD, pd=new_pd)
    assert mr.pd is new_pd and mr.lkey == lkey


def test_optional_access_bits_are_ignored() -> None:
    ctx = Context(name="rxe0")
    mr = MR(PD(ctx), 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_RELAXED_ORDERING)
    assert mr.access == e.IBV_ACCESS_LOCAL_WRITE
