"""rdma-core's pyverbs (the real, C-backed package: Debian python3-pyverbs) on the emulated fabric:
an RC QP pair between rdmasim0 and rdmasim1 in one process, a 4 KiB RDMA WRITE, the bytes checked.
Run by tests/fabricd/test_exec.py under ``rdmasim exec`` with the system's python3."""

import pyverbs.enums as e
from pv_rc import walk_to_rts
from pyverbs.addr import GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


def side(name):
    ctx = Context(name=name)
    pd = PD(ctx)
    mr = MR(pd, 8192, ACCESS)
    cq = CQ(ctx, 16)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    return ctx, pd, mr, cq, qp


def connect(me, peer_ctx, peer_qp, psn, peer_psn):
    gr = GlobalRoute(dgid=peer_ctx.query_gid(1, 1), sgid_index=1)
    walk_to_rts(me[4], gr, peer_qp.qp_num, psn, peer_psn, ACCESS)


names = [d.name.decode() for d in get_device_list()]
a, b = side(names[0]), side(names[1])
connect(a, b[0], b[4], 100, 200)
connect(b, a[0], a[4], 200, 100)
data = bytes((i * 7 + 3) & 0xFF for i in range(4096))
a[2].write(data, len(data))
wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(a[2].buf, 4096, a[2].lkey)])
wr.set_wr_rdma(b[2].rkey, b[2].buf + 1024)
a[4].post_send(wr)
n = 0
while n == 0:
    n, wcs = a[3].poll()
assert wcs[0].status == e.IBV_WC_SUCCESS, wcs[0].status
assert b[2].read(4096, 1024) == data
print("OK")
