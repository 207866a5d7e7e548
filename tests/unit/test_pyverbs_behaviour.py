"""The verbs objects behave as real pyverbs programs expect: busy polling lets simulated time
pass, a device reaches its own QPs (loopback), closing cascades, to_rtr/to_rts walk from
earlier states, attributes start zeroed and reject unknown names."""

from __future__ import annotations

import errno
from typing import Any

import pytest
from support.verbs_pair import VerbsPair

import rdmasim
from rdmasim.errors import PyverbsError, PyverbsRDMAError
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e


def rc_pair(topo: Any = None) -> Any:
    p = VerbsPair(topology=topo or rdmasim.back_to_back(mtu=1024), cqe=64,
                  cap=QPCap(max_send_wr=8, max_recv_wr=8))
    mra = p.mr_a(4096, e.IBV_ACCESS_LOCAL_WRITE)
    mrb = p.mr_b(4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    return p.t, (p.ctx_a, p.pd_a, p.cq_a, p.qa, mra), (p.ctx_b, p.pd_b, p.cq_b, p.qb, mrb)


def busy_poll(cq: CQ, limit: int = 10_000) -> list:
    """How every pyverbs program waits: poll until something comes (bounded here so a
    regression fails instead of hanging the suite)."""
    for _ in range(limit):
        n, wcs = cq.poll()
        if n:
            return wcs
    raise AssertionError(f"no completion after {limit} polls")


# ---- Time ----

def test_busy_poll_advances_time_to_the_completion() -> None:
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    qb.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    mra.write(b"hello")
    qa.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 5, mra.lkey)]))
    t0 = topo.sim.now
    [rwc] = busy_poll(cqb)
    assert rwc.wr_id == 7 and rwc.status == e.IBV_WC_SUCCESS and rwc.byte_len == 5
    assert topo.sim.now > t0
    assert mrb.read(5) == b"hello"
    [swc] = busy_poll(cqa)
    assert swc.wr_id == 3 and swc.status == e.IBV_WC_SUCCESS


def test_poll_stops_at_the_first_completion_of_its_cq() -> None:
    """poll runs only until this CQ's completion is due, not to the end of all traffic."""
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    for i in range(4):
        qb.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 4096, mra.lkey)])
    for _ in range(4):
        qa.post_send(wr)
    n, _ = cqb.poll(1)
    assert n == 1
    assert len(cqb) < 4  # the other three were not yet due


def test_poll_on_idle_empty_cq_returns_zero_then_a_spinning_loop_raises() -> None:
    topo, (_, _, cqa, _, _), _ = rc_pair()
    for _ in range(topo.sim.idle_poll_limit - 1):
        assert cqa.poll() == (0, [])  # as ibv_poll_cq on an empty CQ
    with pytest.raises(PyverbsRDMAError, match="nothing is in flight") as exc:
        cqa.poll()
    assert "CQ(host=a" in str(exc.value)
    assert exc.value.error_code == errno.ETIMEDOUT
    assert isinstance(exc.value, PyverbsError)  # rdma-core's poll helpers catch PyverbsError


def test_busy_poll_loop_waiting_for_nothing_fails_instead_of_hanging() -> None:
    _, (_, _, cqa, _, _), _ = rc_pair()
    with pytest.raises(PyverbsRDMAError, match="nothing is in flight"):
        npolled = 0
        while npolled == 0:
            npolled, _ = cqa.poll()


def test_idle_polls_count_only_while_nothing_happens() -> None:
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    topo.sim.idle_poll_limit = 3
    assert cqb.poll() == (0, []) and cqb.poll() == (0, [])
    qb.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    qa.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 8, mra.lkey)]))
    assert busy_poll(cqb)[0].wr_id == 7  # progress resets the count
    assert cqb.poll() == (0, []) and cqb.poll() == (0, [])
    with pytest.raises(PyverbsRDMAError):
        cqb.poll()


def test_auto_advance_off_leaves_time_to_the_user() -> None:
    topo, (_, _, cqa, qa, mra), (_, _, cqb, qb, mrb) = rc_pair()
    topo.sim.auto_advance = False
    qb.post_recv(RecvWR(wr_id=7, num_sge=1, sg=[SGE(mrb.buf, 4096, mrb.lkey)]))
    qa.post_send(SendWR(wr_id=3, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mra.buf, 8, mra.lkey)]))
    t0 = topo.sim.now
    for _ in range(3):
        assert cqb.poll() == (0, [])  # never raises, never advances
    assert topo.sim.now == t0
    topo.sim.run()
    assert cqb.poll()[0] == 1


# ---- Loopback ----

def one_device(topo: Any = None) -> Any:
    topo = topo or rdmasim.back_to_back(mtu=1024)
    ctx = Context(topo.a)
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    cap = QPCap(max_send_wr=8, max_recv_wr=8)
    q1 = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=cap))
    q2 = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=cap))
    return topo, ctx, pd, cq, q1, q2


def test_two_qps_of_one_device_connect_and_transfer_without_using_the_link(tmp_path: Any) -> None:
    topo, _, pd, cq, q1, q2 = one_device()
    pcap = tmp_path / "lb.pcap"
    topo.sim.capture(str(pcap))
    connect_qps(q1, q2)  # rdma-core's tests: both QPs on one device, addressed by its own GID
    src = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd, 8192, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.write(bytes(range(256)) * 32)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(src.buf, 8192, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    q1.post_send(wr)
    [wc] = busy_poll(cq)
    assert wc.status == e.IBV_WC_SUCCESS and wc.qp_num == q1.qp_num
    assert dst.read(8192) == src.read(8192)
    topo.sim.close_capture()
    from rdmasim.capture import read_pcap
    assert list(read_pcap(str(pcap))) == []  # looped inside the NIC: nothing on the wire
    # it still took the frames' serialisation time at the port rate (8 x 1 KiB at 100 Gb/s)
    assert topo.sim.now >= 8 * 1024 * 8 * 10


def test_send_recv_between_qps_of_one_device_and_qp_to_itself() -> None:
    topo, _, pd, cq, q1, q2 = one_device()
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    connect_qps(q1, q1)  # a QP connected to itself
    q1.post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(mr.buf + 2048, 2048, mr.lkey)]))
    mr.write(b"self")
    q1.post_send(SendWR(wr_id=8, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 4, mr.lkey)]))
    wcs = busy_poll(cq) + busy_poll(cq)
    assert sorted(w.wr_id for w in wcs) == [8, 9]
    assert all(w.status == e.IBV_WC_SUCCESS for w in wcs)
    assert mr.read(4, 2048) == b"self"


def test_bad_destination_names_the_gid() -> None:
    topo, _, _, _, q1, _ = one_device()
    from rdmasim.verbs import AHAttr, GlobalRoute, QPAttr
    attr = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE, dest_qp_num=1,
                  ah_attr=AHAttr(is_global=1, gr=GlobalRoute(dgid="::ffff:10.9.9.9")))
    with pytest.raises(PyverbsError, match="10.9.9.9"):
        q1.to_rtr(attr)


# ---- Lifetimes ----

def test_context_close_cascades_through_pds_qps_mrs_and_cqs() -> None:
    _, (ca, pa, cqa, qa, mra), _ = rc_pair()
    qa.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mra.buf, 64, mra.lkey)]))
    ca.close()
    assert ca.closed and pa.closed and qa._closed and mra._closed and cqa._closed
    ca.close()  # twice: nothing


def test_with_blocks_close_children_first() -> None:
    topo = rdmasim.back_to_back()
    with Context(topo.a) as ctx:
        with PD(ctx) as pd:
            cq = CQ(ctx, 8)
            qp = QP(pd, QPInitAttr(scq=cq, rcq=cq))
            mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
        assert pd.closed and qp._closed and mr._closed and not cq._closed
    assert cq._closed and ctx.closed


def test_pd_close_destroys_qp_with_send_work_outstanding() -> None:
    _, (_, pa, cqa, qa, mra), (_, _, _, _, mrb) = rc_pair()
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mra.buf, 4096, mra.lkey)])
    wr.set_wr_rdma(mrb.rkey, mrb.buf)
    qa.post_send(wr)
    pa.close()  # destroyed with its work (no completions, as rxe): never EBUSY
    assert qa._closed and mra._closed and pa.closed


def test_qp_close_with_receive_wrs_posted_is_allowed() -> None:
    _, (_, _, cqa, qa, mra), _ = rc_pair()
    qa.post_recv(RecvWR(wr_id=1, num_sge=1, sg=[SGE(mra.buf, 64, mra.lkey)]))
    qa.close()  # ibv_destroy_qp drops them, without completions
    assert len(cqa) == 0
    mra.close()  # no posted WR holds it any more


def test_destroying_a_cq_a_qp_uses_is_still_ebusy() -> None:
    _, (_, _, cqa, qa, _), _ = rc_pair()
    with pytest.raises(PyverbsRDMAError) as exc:
        cqa.close()  # ibv_destroy_cq: EBUSY while a QP uses it
    assert exc.value.error_code == errno.EBUSY
    qa.close()
    cqa.close()


# ---- Transitions ----

def rts_attr(peer: QP) -> Any:
    from rdmasim.verbs import AHAttr, GlobalRoute, QPAttr
    attr = QPAttr()
    attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
    attr.dest_qp_num = peer.qp_num
    attr.ah_attr = AHAttr(is_global=1, gr=GlobalRoute(dgid=peer._host.gid))
    attr.timeout, attr.retry_cnt, attr.rnr_retry, attr.min_rnr_timer = 14, 7, 7, 12
    attr.max_rd_atomic = attr.max_dest_rd_atomic = 1
    return attr


@pytest.mark.parametrize("start", ["RESET", "INIT", "RTR"])
def test_to_rts_walks_from_reset_init_or_rtr(start: str) -> None:
    _, _, _, _, q1, q2 = one_device()
    attr = rts_attr(q2)
    if start in ("INIT", "RTR"):
        q1.to_init(attr)
    if start == "RTR":
        q1.to_rtr(attr)
    q1.to_rts(attr)
    assert q1.qp_state == e.IBV_QPS_RTS


def test_to_rtr_from_reset_walks_through_init() -> None:
    _, _, _, _, q1, q2 = one_device()
    q1.to_rtr(rts_attr(q2))
    assert q1.qp_state == e.IBV_QPS_RTR


def test_to_rtr_from_rts_is_still_refused() -> None:
    _, _, _, _, q1, q2 = one_device()
    attr = rts_attr(q2)
    q1.to_rts(attr)
    with pytest.raises(PyverbsRDMAError, match="RTS -> INIT"):
        q1.to_rtr(attr)


# ---- Defaults and validation ----

def test_qpattr_starts_zeroed_as_pyverbs() -> None:
    from rdmasim.verbs import QPAttr
    a = QPAttr()
    assert (a.qp_state, a.cur_qp_state, a.port_num, a.path_mtu) == (
        e.IBV_QPS_INIT, e.IBV_QPS_RESET, 1, e.IBV_MTU_1024)
    for f in ("timeout", "retry_cnt", "rnr_retry", "min_rnr_timer", "max_rd_atomic",
              "max_dest_rd_atomic", "qp_access_flags", "sq_psn", "rq_psn", "dest_qp_num", "qkey"):
        assert getattr(a, f) == 0, f
    assert a.ah_attr is None


def test_misspelt_attributes_raise() -> None:
    from rdmasim.verbs import AHAttr, GlobalRoute, QPAttr
    with pytest.raises(AttributeError, match="retry_count"):
        QPAttr().retry_count = 3  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="is_globl"):
        AHAttr().is_globl = 1  # type: ignore[attr-defined]
    GlobalRoute()  # (keeps working)


def test_ahattr_is_not_global_by_default_and_roce_needs_the_grh() -> None:
    from rdmasim.verbs import AHAttr, GlobalRoute
    _, _, _, _, q1, q2 = one_device()
    assert AHAttr().is_global == 0
    attr = rts_attr(q2)
    attr.ah_attr = AHAttr(gr=GlobalRoute(dgid=q2._host.gid))  # gr without is_global=1
    with pytest.raises(PyverbsRDMAError, match="is_global=0") as exc:
        q1.to_rtr(attr)
    assert exc.value.error_code == errno.EINVAL


def test_post_send_accepts_a_sendwr_as_bad_wr() -> None:
    _, _, pd, _, q1, _ = one_device()  # q1 is in RESET: posting fails
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    bad = SendWR()
    wr = SendWR(wr_id=77, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)])
    with pytest.raises(PyverbsRDMAError, match="RESET"):
        q1.post_send(wr, bad)  # pyverbs' signature: the real error, not an AttributeError
    assert bad.wr_id == 77 and bad.opcode == e.IBV_WR_SEND


def test_post_recv_accepts_a_recvwr_as_bad_wr() -> None:
    _, _, pd, _, q1, _ = one_device()
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    bad = RecvWR()
    with pytest.raises(PyverbsRDMAError, match="RESET"):
        q1.post_recv(RecvWR(wr_id=5, num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)]), bad)
    assert bad.wr_id == 5


def test_a_scripted_peer_turns_auto_advance_off() -> None:
    from rdmasim.peer import ScriptedPeer
    topo = rdmasim.back_to_back()
    assert topo.sim.auto_advance
    ScriptedPeer(topo.sim, topo.b)
    assert not topo.sim.auto_advance


def test_loopback_bypasses_the_link_even_when_it_drops_everything() -> None:
    topo, _, pd, cq, q1, q2 = one_device()
    topo.link.ab.set_loss(1.0)
    topo.link.ba.set_loss(1.0)
    connect_qps(q1, q2)
    mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 2048, mr.lkey)])
    wr.set_wr_rdma(mr.rkey, mr.buf + 2048)
    q1.post_send(wr)
    [wc] = busy_poll(cq)
    assert wc.status == e.IBV_WC_SUCCESS
    assert topo.link.ab.stats()["frames"] == 0 and topo.link.ba.stats()["frames"] == 0
    st = q1.stats()
    assert st["pkts_sent"] == 2 and st["pkts_retx"] == 0 and st["timeouts"] == 0
