"""On-demand paging as Linux rxe has it (rxe_init_device_param with ODP, rxe_ib_advise_mr):
the capabilities it advertises, ODP MRs over process memory, and ``PD.advise_mr`` prefetch."""

from __future__ import annotations

import ctypes
import errno

import pytest
from support.pyverbs_pair import poll

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs import mem_alloc
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR
from rdmasim.verbs import connect_qps

_ODP = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_ON_DEMAND


def test_odp_caps_are_rxes() -> None:
    caps = Context(name="rxe0").query_device_ex().odp_caps
    assert caps.general_caps == e.IBV_ODP_SUPPORT  # no IBV_ODP_SUPPORT_IMPLICIT
    b = e.ibv_odp_transport_cap_bits
    assert caps.rc_odp_caps == (b.IBV_ODP_SUPPORT_SEND | b.IBV_ODP_SUPPORT_RECV | b.IBV_ODP_SUPPORT_WRITE
                                | b.IBV_ODP_SUPPORT_READ | b.IBV_ODP_SUPPORT_ATOMIC
                                | b.IBV_ODP_SUPPORT_SRQ_RECV | b.IBV_ODP_SUPPORT_FLUSH
                                | b.IBV_ODP_SUPPORT_ATOMIC_WRITE)
    assert caps.ud_odp_caps == b.IBV_ODP_SUPPORT_SEND | b.IBV_ODP_SUPPORT_RECV | b.IBV_ODP_SUPPORT_SRQ_RECV
    assert caps.uc_odp_caps == 0


def test_a_send_between_odp_mrs_over_pages_dropped_with_madvise() -> None:
    sides = []
    for dev in ("rxe0", "rxe1"):
        ctx = Context(name=dev)
        pd = PD(ctx)
        cq = CQ(ctx, 8)
        addr = mem_alloc.mmap(length=4096)
        mr = MR(pd, 4096, _ODP, address=addr)
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=2, max_recv_wr=2)))
        sides.append((pd, cq, addr, mr, qp))
    (pda, cqa, addra, mra, qpa), (pdb, cqb, addrb, mrb, qpb) = sides
    connect_qps(qpa, qpb)
    ctypes.memset(addrb, 0x55, 4096)
    mem_alloc.madvise(addrb, 4096)  # the receive buffer's page is gone: the NIC faults it in
    ctypes.memmove(addra, b"odp bytes", 9)
    pda.advise_mr(e._IBV_ADVISE_MR_ADVICE_PREFETCH, e._IBV_ADVISE_MR_FLAG_FLUSH, [SGE(mra.buf, 9, mra.lkey)])
    qpb.post_recv(RecvWR(wr_id=2, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    qpa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mra.buf, 9, mra.lkey)]))
    assert poll(cqa)[0].status == e.IBV_WC_SUCCESS
    assert poll(cqb)[0].byte_len == 9
    assert ctypes.string_at(addrb, 10) == b"odp bytes\x00"


def test_advise_mr_refusals_as_rxe() -> None:
    ctx = Context(name="rxe0")
    pd = PD(ctx)
    odp = MR(pd, 64, _ODP)
    plain = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    flush = e._IBV_ADVISE_MR_FLAG_FLUSH
    bad_advice = e._IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT + 1
    cases = [((bad_advice, flush, [SGE(odp.buf, 8, odp.lkey)]), errno.EOPNOTSUPP),
             ((e._IBV_ADVISE_MR_ADVICE_PREFETCH, 2, [SGE(odp.buf, 8, odp.lkey)]), errno.EOPNOTSUPP),
             ((e._IBV_ADVISE_MR_ADVICE_PREFETCH, flush, [SGE(plain.buf, 8, plain.lkey)]), errno.EINVAL),
             ((e._IBV_ADVISE_MR_ADVICE_PREFETCH, flush, [SGE(odp.buf, 8, 0xDEAD00)]), errno.ENOENT),
             ((e._IBV_ADVISE_MR_ADVICE_PREFETCH, flush, [SGE(odp.buf + 60, 8, odp.lkey)]), errno.EFAULT)]
    for args, err in cases:
        with pytest.raises(PyverbsRDMAError) as exc:
            pd.advise_mr(*args)
        assert exc.value.error_code == err, args
    for advice in (e._IBV_ADVISE_MR_ADVICE_PREFETCH, e._IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                   e._IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT):
        assert pd.advise_mr(advice, 0, [SGE(odp.buf, 64, odp.lkey)]) == 0  # asynchronous prefetch too


def test_madvise_of_an_mrs_buf_applies_to_the_memory_behind_it() -> None:
    pd = PD(Context(name="rxe0"))
    addr = mem_alloc.mmap(length=4096)
    mr = MR(pd, 4096, _ODP, address=addr)
    ctypes.memset(addr, 0x77, 4096)
    mem_alloc.madvise(mr.buf, 4096)  # pyverbs programs pass MR.buf, the process address there
    assert ctypes.string_at(addr, 4) == bytes(4)  # MADV_DONTNEED: the private page reads as zeros
    with pytest.raises(PyverbsRDMAError) as exc:
        mem_alloc.madvise(mr.buf + 8192, 4096)  # neither an MR's range nor mapped memory
    assert exc.value.error_code == errno.ENOMEM
    mr.close()
    mem_alloc.munmap(addr, 4096)


def test_munmap_under_an_odp_mr_is_done_when_the_mr_is_deregistered() -> None:
    pd = PD(Context(name="rxe0"))
    addr = mem_alloc.mmap(length=4096)
    mr = MR(pd, 4096, _ODP, address=addr)
    mem_alloc.munmap(addr, 4096)  # allowed: an ODP MR does not pin its pages
    assert mem_alloc.block_of(addr, 1) is None  # released for the program
    with pytest.raises(Exception, match="already unmapped"):
        mem_alloc.munmap(addr, 4096)
    ctypes.memset(addr, 1, 8)  # still mapped until the MR goes
    mr.close()
    plain_addr = mem_alloc.mmap(length=4096)
    plain = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE, address=plain_addr)
    with pytest.raises(Exception, match="still register"):  # a pinned MR: deregister first
        mem_alloc.munmap(plain_addr, 4096)
    plain.close()
    mem_alloc.munmap(plain_addr, 4096)


def test_an_mr_may_cover_the_whole_page_an_mmap_of_fewer_bytes_maps() -> None:
    pd = PD(Context(name="rxe0"))
    addr = mem_alloc.mmap(length=1024)  # the kernel maps a whole page
    mr = MR(pd, 1064, _ODP, address=addr)  # rdma-core's test_odp_ud_traffic registers 1024 + GRH
    assert mr.length == 1064
    with pytest.raises(PyverbsRDMAError) as exc:
        MR(pd, mem_alloc._PAGE + 1, _ODP, address=addr)  # beyond the mapped page
    assert exc.value.error_code == errno.EFAULT
    mr.close()
    mem_alloc.munmap(addr, 1024)
