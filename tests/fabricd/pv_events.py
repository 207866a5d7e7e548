"""Completion events, SRQs (with their limit event), CQ resizing, re-registration and memory windows
of rdmasim.pyverbs on the fabric daemon: one process, rxe0 and rxe1, an RC pair. The receiver's QP
takes its receives from an SRQ armed at its limit, and its CQ (resized) is on a completion channel,
armed before the SEND; ``get_cq_event`` waits in the daemon for it, the channel's fd is readable
when it is due, then the poll finds the completion; ``get_async_event`` returns the SRQ's
IBV_EVENT_SRQ_LIMIT_REACHED; a region re-registered with MW_BIND access gets a type 1 window, which
a WRITE goes through; a WRITE lands in a bytearray the program registered. Prints ``OK``. Run by
tests/fabricd/test_pyverbs_daemon.py under ``rdmasim exec``."""

import select

import rdmasim.pyverbs as ns

ns.install()
import pyverbs.enums as e  # noqa: E402
from pv_rc import walk_to_rts  # noqa: E402
from pyverbs.addr import GlobalRoute  # noqa: E402
from pyverbs.cq import CQ, CompChannel  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR, MW, MWBind, MWBindInfo  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.qp import QP, QPCap, QPInitAttr  # noqa: E402
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr  # noqa: E402
from pyverbs.wr import SGE, RecvWR, SendWR  # noqa: E402


def side(name, channel=False):
    ctx = Context(name=name)
    pd = PD(ctx)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    ch = CompChannel(ctx) if channel else None
    cq = CQ(ctx, 16, None, ch, 0)
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=8, max_sge=1))) if channel else None
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq,
                           cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    return ctx, mr, ch, cq, qp, srq


def connect(a, b):
    gr = GlobalRoute(dgid=str(b[0].query_gid(1, 0)))
    walk_to_rts(a[4], gr, b[4].qp_num, 0, 0, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)


a, b = side("rxe0"), side("rxe1", channel=True)
connect(a, b)
connect(b, a)
for i in range(3):  # to the SRQ, armed at 3: the SEND takes one, so its limit event comes
    b[5].post_recv(RecvWR(wr_id=9 + i, num_sge=1, sg=[SGE(b[1].buf, 4096, b[1].lkey)]))
b[5].modify(SrqAttr(srq_limit=3), e.IBV_SRQ_LIMIT)
assert b[5].query().max_wr >= 8 and b[5].query().srq_limit == 3
b[3].resize(32)  # ibv_resize_cq on the daemon
assert b[3].cqe == 32
b[3].req_notify()
assert not select.select([b[2].fd], [], [], 0)[0]  # nothing due yet
a[1].write(b"e" * 512, 512)
a[4].post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(a[1].buf, 512, a[1].lkey)]))
b[2].get_cq_event(b[3])
b[3].ack_events(1)
n, wcs = b[3].poll()
assert n == 1 and wcs[0].wr_id == 9 and wcs[0].byte_len == 512, wcs
assert b[1].read(512, 0) == b"e" * 512
assert not select.select([b[2].fd], [], [], 0)[0]  # the event was taken
ev = b[0].get_async_event()
assert ev.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED and ev.element is b[5], ev
ev.ack()

# a type 1 memory window over a region re-registered for binding, then WRITTEN through its rkey
pd_b = b[4].pd
mr2 = MR(pd_b, 4096, e.IBV_ACCESS_LOCAL_WRITE)
mr2.rereg(e.IBV_REREG_MR_CHANGE_ACCESS, access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
          | e.IBV_ACCESS_MW_BIND)
mw = MW(pd_b, e.IBV_MW_TYPE_1)
b[4].bind_mw(mw, MWBind(MWBindInfo(mr2, mr2.buf, 4096, e.IBV_ACCESS_REMOTE_WRITE), e.IBV_SEND_SIGNALED))
n, wcs = b[3].poll()
assert n == 1 and wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].opcode == e.IBV_WC_BIND_MW, wcs
a[1].write(b"w" * 64, 64)
wr = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(a[1].buf, 64, a[1].lkey)])
wr.set_wr_rdma(mw.rkey, mr2.buf + 128)
a[4].post_send(wr)
done = []
while not any(w.wr_id == 2 for w in done):  # (the SEND's completion comes first)
    done += a[3].poll(4)[1]
assert all(w.status == e.IBV_WC_SUCCESS for w in done), done
assert mr2.read(64, 128) == b"w" * 64

# a buffer of the program's own (its pages move into shared memory, contents kept), WRITTEN by the peer
own = bytearray(b"o" * 6000)
mr3 = MR(pd_b, access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE, buffer=own)
assert mr3.read(4, 0) == b"oooo"
wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(a[1].buf, 64, a[1].lkey)])
wr.set_wr_rdma(mr3.rkey, mr3.buf + 1000)
a[4].post_send(wr)
done = []
while not any(w.wr_id == 3 for w in done):
    done += a[3].poll(4)[1]
assert all(w.status == e.IBV_WC_SUCCESS for w in done), done
assert bytes(own[1000:1064]) == b"w" * 64 and bytes(own[990:1000]) == b"o" * 10

# what the daemon does not serve says so (EOPNOTSUPP, naming the call), not a TypeError
import errno  # noqa: E402

from pyverbs.pyverbs_error import PyverbsRDMAError  # noqa: E402

for call in (lambda: b[3].poll_batch(), lambda: b[4].inspect()):
    try:
        call()
        raise AssertionError("served")
    except PyverbsRDMAError as exc:
        assert exc.error_code == errno.EOPNOTSUPP and "rdmasim exec" in str(exc), exc
print("OK")
