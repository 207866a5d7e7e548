"""``SRQ.modify`` as rxe (rxe_srq.c, rxe_resp.c): ``IBV_SRQ_MAX_WR`` resizes the SRQ keeping the
posted WQEs in order; ``IBV_SRQ_LIMIT`` arms the limit, and the first time a WQE is taken with
fewer than ``srq_limit`` left the NIC raises ``IBV_EVENT_SRQ_LIMIT_REACHED`` once and disarms it;
``query`` reports the armed limit. Through the pyverbs namespace, ``Context.get_async_event``."""

from __future__ import annotations

import errno

import numpy as np
import pytest

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import AsyncEvent, Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPCap, QPInitAttr
from rdmasim.pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR
from rdmasim.verbs import connect_qps

LIMIT_REACHED = int(e.ibv_event_type.IBV_EVENT_SRQ_LIMIT_REACHED)
MAX_WR = int(e.ibv_srq_attr_mask.IBV_SRQ_MAX_WR)
LIMIT = int(e.ibv_srq_attr_mask.IBV_SRQ_LIMIT)


pytestmark = pytest.mark.usefixtures("fresh_pyverbs")


class Pair:
    """An RC QP on rxe0 sending to an RC QP on rxe1 that takes its receives from an SRQ."""

    def __init__(self, max_wr: int = 16) -> None:
        self.ca, self.cb = Context(name="rxe0"), Context(name="rxe1")
        pa, pb = PD(self.ca), PD(self.cb)
        self.cq_a, self.cq_b = CQ(self.ca, 64), CQ(self.cb, 64)
        self.srq = SRQ(pb, SrqInitAttr(SrqAttr(max_wr=max_wr, max_sge=1)))
        self.qa = QP(pa, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq_a, rcq=self.cq_a,
                                    cap=QPCap(max_send_wr=32, max_recv_wr=4)))
        self.qb = QP(pb, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq_b, rcq=self.cq_b, srq=self.srq,
                                    cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        connect_qps(self.qa, self.qb)
        self.src = MR(pa, 4096, e.IBV_ACCESS_LOCAL_WRITE)
        self.src.array[:] = (np.arange(4096) % 251).astype(np.uint8)
        self.dst = MR(pb, 4096, e.IBV_ACCESS_LOCAL_WRITE)

    def post_recv(self, wr_id: int) -> None:
        self.srq.post_recv(RecvWR(wr_id=wr_id, num_sge=1, sg=[SGE(self.dst.buf + 64 * (wr_id % 64), 64,
                                                                   self.dst.lkey)]))

    def send(self, n: int) -> list[int]:
        """n SENDs of 8 bytes, waited for; the receive wr_ids in completion order."""
        for i in range(n):
            self.qa.post_send(SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                                     sg=[SGE(self.src.buf, 8, self.src.lkey)]))
        got: list[int] = []
        while len(got) < n:
            _, wcs = self.cq_b.poll(n - len(got))
            assert all(w.status == e.IBV_WC_SUCCESS for w in wcs)
            got += [w.wr_id for w in wcs]
        self.ca.sim.run_until_idle()  # the ACKs: the sender's completions
        assert self.cq_a.poll(n)[0] == n
        return got


def test_limit_event_once_when_fewer_than_the_limit_remain_then_disarmed() -> None:
    p = Pair()
    for i in range(10):
        p.post_recv(i)
    p.srq.modify(SrqAttr(srq_limit=7), LIMIT)
    assert p.srq.query().srq_limit == 7
    p.send(3)  # 7 left: not fewer than the limit
    assert p.srq.query().srq_limit == 7
    with pytest.raises(PyverbsRDMAError) as ex:  # nothing pending and nothing in flight
        p.cb.get_async_event()
    assert ex.value.error_code == errno.EIO
    p.send(1)  # 6 left: the event, and the limit disarmed
    assert p.srq.query().srq_limit == 0
    ev = p.cb.get_async_event()
    assert isinstance(ev, AsyncEvent) and ev.event_type == LIMIT_REACHED and ev.element is p.srq
    ev.ack()
    p.send(3)  # disarmed: no second event
    with pytest.raises(PyverbsRDMAError):
        p.cb.get_async_event()


def test_get_async_event_runs_the_simulation_until_the_event() -> None:
    p = Pair()
    for i in range(4):
        p.post_recv(i)
    p.srq.modify(SrqAttr(srq_limit=4), LIMIT)  # armed with 4 posted: the first WQE taken raises it
    p.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(p.src.buf, 8, p.src.lkey)]))
    assert len(p.cq_b) == 0
    ev = p.cb.get_async_event()  # blocks (runs simulated time) until the message takes a WQE
    assert ev.event_type == LIMIT_REACHED
    assert p.cb.sim.now > 0 and p.srq.query().srq_limit == 0


def test_limit_armed_at_creation_as_rxe() -> None:
    p = Pair()
    srq = SRQ(PD(p.cb), SrqInitAttr(SrqAttr(max_wr=8, max_sge=1, srq_limit=2)))
    assert srq.query().srq_limit == 2


def test_resize_keeps_posted_wqes_in_order_and_the_device_says_it_can() -> None:
    assert p_flags() & int(e.ibv_device_cap_flags.IBV_DEVICE_SRQ_RESIZE)
    p = Pair(max_wr=4)
    for i in range(4):
        p.post_recv(i)
    assert p.send(2) == [0, 1]  # the ring's head is now in the middle
    p.post_recv(4)
    p.post_recv(5)  # wraps around the 4-entry ring
    with pytest.raises(PyverbsRDMAError, match="full"):
        p.post_recv(6)
    p.srq.modify(SrqAttr(max_wr=8), MAX_WR)
    assert p.srq.query().max_wr == 8
    for i in range(6, 10):
        p.post_recv(i)
    assert p.send(8) == list(range(2, 10))


def p_flags() -> int:
    return Context(name="rxe0").query_device().device_cap_flags


@pytest.mark.parametrize(("attr", "mask", "match"), [
    (SrqAttr(max_wr=2), MAX_WR, "fewer than the 3 WQEs posted"),
    (SrqAttr(max_wr=0), MAX_WR, "max_wr=0 is out of range"),
    (SrqAttr(srq_limit=9), LIMIT, "srq_limit=9 exceeds max_wr=8"),
    (SrqAttr(max_wr=4, srq_limit=5), MAX_WR | LIMIT, "srq_limit=5 exceeds max_wr=4"),
    (SrqAttr(), 4, "bits 0x4"),
])
def test_modify_refusals_are_einval_and_change_nothing(attr: SrqAttr, mask: int, match: str) -> None:
    p = Pair(max_wr=8)
    for i in range(3):
        p.post_recv(i)
    with pytest.raises(PyverbsRDMAError, match=match) as ex:
        p.srq.modify(attr, mask)
    assert ex.value.error_code == errno.EINVAL
    q = p.srq.query()
    assert (q.max_wr, q.srq_limit) == (8, 0)


def test_resize_below_an_armed_limit_is_einval() -> None:
    p = Pair(max_wr=8)
    p.srq.modify(SrqAttr(srq_limit=6), LIMIT)
    with pytest.raises(PyverbsRDMAError, match="below its armed srq_limit=6") as ex:
        p.srq.modify(SrqAttr(max_wr=5), MAX_WR)
    assert ex.value.error_code == errno.EINVAL
    p.srq.modify(SrqAttr(srq_limit=0), LIMIT)  # disarmed: now allowed
    p.srq.modify(SrqAttr(max_wr=5), MAX_WR)
    assert p.srq.query().max_wr == 5
