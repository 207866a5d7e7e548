"""A pyverbs program as it would run on two RDMA devices, with only the device names chosen for
rdmasim's emulated ones. It waits for its completions with a completion channel."""

import sys

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ, CompChannel
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

names = [d.name.decode() for d in get_device_list()]
ctx, peer_ctx = Context(name=names[0]), Context(name=names[1])
pd, peer_pd = PD(ctx), PD(peer_ctx)
channel = CompChannel(ctx)
cq, peer_cq = CQ(ctx, 16, None, channel, 0), CQ(peer_ctx, 16)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
peer_mr = MR(peer_pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=16)))
peer_qp = QP(peer_pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=peer_cq, rcq=peer_cq, cap=QPCap(max_recv_wr=16)))

for me, other, gid in ((qp, peer_qp, peer_ctx.query_gid(1, 0)), (peer_qp, qp, ctx.query_gid(1, 0))):
    attr = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE,
                  path_mtu=e.IBV_MTU_1024, dest_qp_num=other.qp_num, rq_psn=0, sq_psn=0,
                  timeout=14, retry_cnt=7)
    attr.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid), is_global=1, port_num=1)
    me.to_init(attr)
    me.to_rtr(attr)
    me.to_rts(attr)

msg = "hello from " + names[0]
mr.write(msg, len(msg))
wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 4096, mr.lkey)])
wr.set_wr_rdma(peer_mr.rkey, peer_mr.buf)
cq.req_notify()
qp.post_send(wr, None)
channel.get_cq_event(cq)
cq.ack_events(1)
nc, wcs = cq.poll()
assert nc == 1 and wcs[0].status == e.IBV_WC_SUCCESS, wcs
print(names[0], "->", names[1], peer_mr.read(len(msg), 0).decode(), "wr_id", wcs[0].wr_id, *sys.argv[1:])
