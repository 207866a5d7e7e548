"""``MR(pd, length, access, address=addr)``: memory from ``rdmasim.pyverbs.mem_alloc`` is
registered in place (the NIC reads and writes that memory); any other address is EFAULT, as
``ibv_reg_mr`` answers for memory it cannot pin; the memory cannot be freed while registered."""

from __future__ import annotations

import ctypes
import errno

import pytest

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs import mem_alloc
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, SendWR
from rdmasim.verbs import connect_qps

RW = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


def _rc_pair() -> tuple[PD, PD, CQ, QP]:
    ca, cb = Context(name="rxe0"), Context(name="rxe1")
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 8), CQ(cb, 8)
    qa = QP(pa, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=4)))
    qb = QP(pb, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, cap=QPCap(max_send_wr=4)))
    connect_qps(qa, qb)
    return pa, pb, cqa, qa


@pytest.mark.parametrize("alloc", ["posix_memalign", "malloc", "mmap"])
def test_mem_alloc_memory_is_registered_in_place(alloc: str) -> None:
    pa, pb, cqa, qa = _rc_pair()
    n = 4096
    if alloc == "mmap":
        src_addr, dst_addr = mem_alloc.mmap(length=n), mem_alloc.mmap(length=n)
    else:
        src_addr, dst_addr = getattr(mem_alloc, alloc)(n), getattr(mem_alloc, alloc)(n)
    ctypes.memmove(src_addr, bytes(range(256)) * 16, n)
    ctypes.memset(dst_addr, 0, n)
    src = MR(pa, n, e.IBV_ACCESS_LOCAL_WRITE, address=src_addr)
    dst = MR(pb, n - 96, RW, address=dst_addr + 64)  # part of a block, at an offset
    assert bytes(src.read(16, 0)) == bytes(range(16))  # the MR's bytes are that memory
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(src.buf, 1000, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    n_done, wcs = 0, []
    while n_done == 0:
        n_done, wcs = cqa.poll()
    assert wcs[0].status == e.IBV_WC_SUCCESS
    assert ctypes.string_at(dst_addr + 64, 1000) == ctypes.string_at(src_addr, 1000)  # the NIC wrote it
    assert ctypes.string_at(dst_addr, 64) == bytes(64)
    src.close()
    dst.close()
    if alloc == "mmap":
        mem_alloc.munmap(src_addr, n)
        mem_alloc.munmap(dst_addr, n)
    else:
        mem_alloc.free(src_addr)
        mem_alloc.free(dst_addr)


def test_other_addresses_are_efault_with_what_to_do() -> None:
    pd = PD(Context(name="rxe0"))
    buf = ctypes.create_string_buffer(64)  # real memory, but not from mem_alloc
    with pytest.raises(PyverbsRDMAError, match="mem_alloc") as ex:
        MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE, address=ctypes.addressof(buf))
    assert ex.value.error_code == errno.EFAULT and "buffer=" in str(ex.value)
    addr = mem_alloc.posix_memalign(64)
    with pytest.raises(PyverbsRDMAError) as ex:  # runs past the end of the block
        MR(pd, 128, e.IBV_ACCESS_LOCAL_WRITE, address=addr)
    assert ex.value.error_code == errno.EFAULT
    mem_alloc.free(addr)
    with pytest.raises(PyverbsRDMAError) as ex:  # freed: no longer registrable
        MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE, address=addr)
    assert ex.value.error_code == errno.EFAULT
    with pytest.raises(PyverbsUserError, match="length"):
        MR(pd, None, e.IBV_ACCESS_LOCAL_WRITE, address=addr)


def test_registered_memory_cannot_be_freed_until_deregistered() -> None:
    pd = PD(Context(name="rxe0"))
    addr = mem_alloc.malloc(256)
    mr = MR(pd, 256, e.IBV_ACCESS_LOCAL_WRITE, address=addr)
    with pytest.raises(PyverbsUserError, match="1 MR\\(s\\) still register"):
        mem_alloc.free(addr)
    pd.close()  # closes the MR
    assert mr._closed
    mem_alloc.free(addr)
