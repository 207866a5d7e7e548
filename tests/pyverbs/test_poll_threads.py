"""``CQ.poll()`` in threaded programs (an empty CQ returns 0 for as long as another thread may
still post, as ``ibv_poll_cq``) and ``CompChannel.fd``."""

from __future__ import annotations

import errno
import select
import threading
import time

import pytest
from support.pyverbs_pair import poll

from rdmasim.errors import PyverbsRDMAError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs import simulation
from rdmasim.pyverbs.cq import CQ, CompChannel
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR
from rdmasim.verbs import connect_qps


def _pair() -> tuple[CQ, QP, MR, CQ, QP, MR]:
    sides = []
    for dev in ("rxe0", "rxe1"):
        ctx = Context(name=dev)
        pd = PD(ctx)
        cq = CQ(ctx, 16)
        mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
        sides.append((cq, qp, mr))
    connect_qps(sides[0][1], sides[1][1])
    return (*sides[0], *sides[1])


def test_a_thread_polls_an_empty_cq_past_the_idle_limit_until_another_thread_posts() -> None:
    cqa, qa, mra, cqb, qb, mrb = _pair()
    limit = simulation().idle_poll_limit
    empty_polls = 0
    spun = threading.Event()
    got: list[object] = []

    def server() -> None:
        nonlocal empty_polls
        qb.post_recv(RecvWR(wr_id=9, sg=[SGE(mrb.buf, 64, mrb.lkey)]))
        try:
            while True:
                n, wcs = cqb.poll()
                if n:
                    got.extend(wcs)
                    return
                empty_polls += 1
                if empty_polls == 3 * limit:
                    spun.set()
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
            got.append(exc)
            spun.set()

    t = threading.Thread(target=server)
    t.start()
    assert spun.wait(600), "the polling thread never spun"
    assert not got, got  # no ETIMEDOUT while this thread could still post
    mra.write(b"from the client thread", 22)
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mra.buf, 22, mra.lkey)]))
    t.join(600)
    assert not t.is_alive()
    assert len(got) == 1 and getattr(got[0], "wr_id", None) == 9, got
    assert mrb.read(22, 0) == b"from the client thread"
    assert poll(cqa)[0].status == e.IBV_WC_SUCCESS


def test_a_single_threaded_program_spinning_on_nothing_still_gets_etimedout() -> None:
    cqa, *_ = _pair()
    with pytest.raises(PyverbsRDMAError) as exc:
        while cqa.poll()[0] == 0:
            pass
    assert exc.value.error_code == errno.ETIMEDOUT
    assert "no other thread" in str(exc.value)


def test_comp_channel_fd_is_readable_while_an_event_waits() -> None:
    cqa, qa, mra, cqb, _, _ = _pair()
    ctx = cqb.ctx
    channel = CompChannel(ctx)
    cq = CQ(ctx, 8, None, channel)
    assert isinstance(channel.fd, int) and channel.fd >= 0
    assert select.select([channel.fd], [], [], 0)[0] == []  # nothing armed, nothing waiting
    qp = QP(PD(ctx), QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_recv_wr=2)))
    mr = MR(qp.pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    qa = QP(qa.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=2)))
    connect_qps(qa, qp)
    qp.post_recv(RecvWR(wr_id=5, sg=[SGE(mr.buf, 64, mr.lkey)]))
    cq.req_notify()
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mra.buf, 8, mra.lkey)]))
    poll(cqa)  # simulated time passes: the receive completes on the armed CQ
    assert select.select([channel.fd], [], [], 0)[0] == [channel.fd]
    channel.get_cq_event(cq)
    cq.ack_events(1)
    assert select.select([channel.fd], [], [], 0)[0] == []  # taken
    assert poll(cq)[0].wr_id == 5
    channel.close()
    assert channel.fd == -1


def test_a_thread_waits_in_get_cq_event_until_another_thread_posts() -> None:
    cqa, qa, mra, cqb, _, _ = _pair()
    ctx = cqb.ctx
    channel = CompChannel(ctx)
    cq = CQ(ctx, 8, None, channel)
    qp = QP(PD(ctx), QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_recv_wr=2)))
    mr = MR(qp.pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    qa = QP(qa.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=2)))
    connect_qps(qa, qp)
    qp.post_recv(RecvWR(wr_id=5, sg=[SGE(mr.buf, 64, mr.lkey)]))
    cq.req_notify()
    waiting = threading.Event()
    outcome: list[object] = []

    def waiter() -> None:
        waiting.set()
        try:
            channel.get_cq_event(cq)  # nothing in flight yet: a real ibv_get_cq_event blocks
            outcome.append("event")
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
            outcome.append(exc)

    t = threading.Thread(target=waiter)
    t.start()
    assert waiting.wait(600)
    time.sleep(0.2)  # let the waiter find the simulation idle (not an assertion on time)
    assert not outcome, outcome
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mra.buf, 8, mra.lkey)]))
    t.join(600)
    assert outcome == ["event"]
    cq.ack_events(1)
    assert poll(cq)[0].wr_id == 5


def test_a_thread_waits_in_get_async_event_until_another_thread_posts() -> None:
    from rdmasim.pyverbs.srq import SRQ, SrqAttr, SrqInitAttr

    cqa, qa, mra, cqb, _, _ = _pair()
    ctx = cqb.ctx
    pd = PD(ctx)
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=4, max_sge=1)))
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqb, rcq=cqb, srq=srq, cap=QPCap(max_recv_wr=1)))
    qa = QP(qa.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=2)))
    connect_qps(qa, qp)
    for i in range(2):
        srq.post_recv(RecvWR(wr_id=i, sg=[SGE(mr.buf, 64, mr.lkey)]))
    srq.modify(SrqAttr(srq_limit=2), e.IBV_SRQ_LIMIT)  # the first WQE taken raises the event
    waiting = threading.Event()
    outcome: list[object] = []

    def waiter() -> None:
        waiting.set()
        try:
            outcome.append(ctx.get_async_event().event_type)
        except BaseException as exc:  # noqa: BLE001 (reported by the main thread)
            outcome.append(exc)

    t = threading.Thread(target=waiter)
    t.start()
    assert waiting.wait(600)
    time.sleep(0.2)  # let the waiter find the simulation idle (not an assertion on time)
    assert not outcome, outcome
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mra.buf, 8, mra.lkey)]))
    t.join(600)
    assert outcome == [e.IBV_EVENT_SRQ_LIMIT_REACHED]
