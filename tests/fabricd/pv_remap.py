"""Memory registered, deregistered, unmapped, then mapped again at the same address and registered
again (as rdma-core's ODP tests do, one after another in one process): the second registration's
pages are the new mapping's, so a WRITE from the peer lands where the program reads. rdmasim.pyverbs
on the fabric daemon, rxe0 and rxe1 in one process. Prints ``OK``. Run by
tests/fabricd/test_pyverbs_daemon.py under ``rdmasim exec``."""

import ctypes
import mmap

import rdmasim.pyverbs as ns

ns.install()
import pyverbs.enums as e  # noqa: E402
from pv_rc import walk_to_rts  # noqa: E402
from pyverbs.addr import GlobalRoute  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import SGE, SendWR  # noqa: E402

from rdmasim.pyverbs import mem_alloc  # noqa: E402

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
SIZE = 8192


def side(name):
    ctx = Context(name=name)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    return ctx, pd, cq, qp


def connect(me, peer, psn, peer_psn):
    gr = GlobalRoute(dgid=str(peer[0].query_gid(1, 0)))
    walk_to_rts(me[3], gr, peer[3].qp_num, psn, peer_psn, ACCESS)


a, b = side("rxe0"), side("rxe1")
connect(a, b, 100, 200)
connect(b, a, 200, 100)
src = MR(a[1], SIZE, ACCESS)
where = 0
for round_ in range(3):
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (0x10 if where else 0)  # MAP_FIXED: the same address
    addr = mem_alloc.mmap(where, SIZE, flags=flags)
    assert addr == where or not where
    where = addr
    dst = MR(b[1], SIZE, ACCESS, address=addr)
    data = bytes([0x41 + round_]) * SIZE
    src.write(data, SIZE)
    wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(src.buf, SIZE, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    a[3].post_send(wr)
    n = 0
    while n == 0:
        n, wcs = a[2].poll()
    assert wcs[0].status == e.IBV_WC_SUCCESS, wcs[0].status
    got = ctypes.string_at(addr, SIZE)
    assert got == data, (round_, got[:8])
    dst.close()
    mem_alloc.munmap(addr, SIZE)
print("OK")
