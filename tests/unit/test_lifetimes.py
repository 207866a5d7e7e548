"""Objects still in use by others cannot be destroyed (the error says what uses them);
closing a parent closes its children first."""

from __future__ import annotations

import errno

import pytest
from support.verbs_pair import VerbsPair

from rdmasim.errors import PyverbsRDMAError
from rdmasim.verbs import MR, SGE, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e


def pair(timeout: int = 10):
    p = VerbsPair(mtu=1024, cqe=64, cap=QPCap(max_send_wr=8, max_recv_wr=8), timeout=timeout)
    return p.t, (p.ctx_a, p.pd_a, p.cq_a, p.qa), (p.ctx_b, p.pd_b, p.cq_b, p.qb)


def test_pd_and_context_close_their_children_first() -> None:
    """As pyverbs: PD.close closes its QPs and MRs, Context.close its PDs and then its CQs."""
    topo, (ca, pa, cqa, qa), _ = pair()
    mr = MR(pa, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    pa.close()
    assert qa._closed and mr._closed and pa.closed
    assert not cqa._closed
    ca.close()
    assert cqa._closed and ca.closed


def test_cq_used_by_qp_cannot_be_destroyed() -> None:
    _, (ca, pa, cqa, qa), _ = pair()
    with pytest.raises(PyverbsRDMAError, match="still used by 1 QP"):
        cqa.close()
    qa.close()
    cqa.close()


def test_mr_in_a_posted_wr_cannot_be_deregistered_until_it_completes() -> None:
    topo, (ca, pa, cqa, qa), (cb, pb, cqb, qb) = pair()
    src = MR(pa, 8192, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, 8192, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 8192, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    with pytest.raises(PyverbsRDMAError, match="still in use by a posted send work request") as exc:
        src.close()
    assert exc.value.error_code == errno.EBUSY
    assert topo.sim.wait_for(cqa, 1)[0].ok
    src.close()  # completed: now allowed


def test_mr_in_a_posted_receive_cannot_be_deregistered() -> None:
    topo, (ca, pa, cqa, qa), (cb, pb, cqb, qb) = pair()
    buf = MR(pb, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    qb.post_recv(RecvWR(wr_id=5, sg=[SGE(buf.buf, 4096, buf.lkey)]))
    with pytest.raises(PyverbsRDMAError, match="posted receive work request"):
        buf.close()


def test_qp_with_outstanding_work_is_destroyed_without_completions() -> None:
    """ibv_destroy_qp with send work outstanding: allowed; the WRs are dropped without
    completions (rxe), and the MRs they used may be deregistered afterwards."""
    topo, (ca, pa, cqa, qa), (cb, pb, cqb, qb) = pair()
    topo.link.ab.set_loss(1.0)
    src = MR(pa, 4096, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 4096, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    qa.close()
    topo.sim.run_until_idle()  # its retransmit timer went with it: the simulation goes idle
    assert len(cqa) == 0
    src.close()
