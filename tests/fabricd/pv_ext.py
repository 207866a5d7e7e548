"""rdma-core's pyverbs (Debian python3-pyverbs, C-backed) using the extended verbs on the emulated
fabric: CQEX (ibv_create_cq_ex, start_poll/next_poll/end_poll, read_* accessors), QPEx
(ibv_create_qp_ex, wr_start / wr_rdma_write / wr_set_sge / wr_send_imm / wr_complete) and a type 1
memory window, between rdmasim0 and rdmasim1 in one process. Run by tests/fabricd/test_c_ext.py
under ``rdmasim exec`` with the system's python3."""

import pyverbs.enums as e
from pv_rc import walk_to_rts
from pyverbs.addr import GlobalRoute
from pyverbs.cq import CQEX, CqInitAttrEx
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD
from pyverbs.qp import QPCap, QPEx, QPInitAttrEx
from pyverbs.wr import SGE, RecvWR

ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_MW_BIND
OPS = e.IBV_QP_EX_WITH_RDMA_WRITE | e.IBV_QP_EX_WITH_SEND_WITH_IMM


def side(name):
    ctx = Context(name=name)
    pd = PD(ctx)
    mr = MR(pd, 8192, ACCESS)
    cq = CQEX(ctx, CqInitAttrEx(cqe=16, wc_flags=e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM))
    init = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, pd=pd, cap=QPCap(max_send_wr=4, max_recv_wr=4),
                        comp_mask=e.IBV_QP_INIT_ATTR_PD | e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                        send_ops_flags=OPS)
    qp = QPEx(ctx, init)
    return ctx, pd, mr, cq, qp


def connect(me, peer_ctx, peer_qp, psn, peer_psn):
    gr = GlobalRoute(dgid=peer_ctx.query_gid(1, 1), sgid_index=1)
    walk_to_rts(me[4], gr, peer_qp.qp_num, psn, peer_psn, ACCESS)


def poll(cq):
    """(wr_id, status, opcode, byte_len) of the next completion, through start_poll."""
    while cq.start_poll(None) != 0:  # ENOENT: nothing yet
        pass
    out = (cq.wr_id, cq.status, cq.read_opcode(), cq.read_byte_len())
    imm = cq.read_imm_data() if cq.read_wc_flags() & e.IBV_WC_WITH_IMM else None
    cq.end_poll()
    return out, imm


names = [d.name.decode() for d in get_device_list()]
a, b = side(names[0]), side(names[1])
connect(a, b[0], b[4], 100, 200)
connect(b, a[0], a[4], 200, 100)
data = bytes((i * 7 + 3) & 0xFF for i in range(4096))
a[2].write(data, len(data))
b[4].post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(b[2].buf + 6000, 64, b[2].lkey)]))
qp = a[4]
qp.wr_start()
qp.wr_id = 1
qp.wr_flags = e.IBV_SEND_SIGNALED
qp.wr_rdma_write(b[2].rkey, b[2].buf + 1024)
qp.wr_set_sge(SGE(a[2].buf, 4096, a[2].lkey))
qp.wr_id = 2
qp.wr_send_imm(0x01020304)
qp.wr_set_sge(SGE(a[2].buf, 32, a[2].lkey))
qp.wr_complete()
(wr1, st1, _, _), _ = poll(a[3])
(wr2, st2, _, _), _ = poll(a[3])
assert (wr1, st1, wr2, st2) == (1, 0, 2, 0), (wr1, st1, wr2, st2)
assert b[2].read(4096, 1024) == data
(wr, st, op, length), imm = poll(b[3])
assert (wr, st, op, length) == (9, 0, e.IBV_WC_RECV, 32), (wr, st, op, length)
assert imm is not None and b[2].read(32, 6000) == data[:32]

mw = MW(b[1], e.IBV_MW_TYPE_1)
info = MWBindInfo(b[2], b[2].buf + 7000, 512, e.IBV_ACCESS_REMOTE_WRITE)
b[4].bind_mw(mw, MWBind(info, e.IBV_SEND_SIGNALED))
(wr, st, _, _), _ = poll(b[3])
assert st == 0, st
qp.wr_start()
qp.wr_id = 3
qp.wr_rdma_write(mw.rkey, b[2].buf + 7000)
qp.wr_set_sge(SGE(a[2].buf, 256, a[2].lkey))
qp.wr_complete()
(wr, st, _, _), _ = poll(a[3])
assert (wr, st) == (3, 0), (wr, st)
assert b[2].read(256, 7000) == data[:256]
mw.close()  # before its region (a region with a window bound to it is not deregistered, as on rxe)
print("OK")
