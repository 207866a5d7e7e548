"""Memory windows through the pyverbs namespace: docs/pyverbs.md's example runs as written on a
connected RC pair, and the keys it produces give exactly the access the windows grant."""

from __future__ import annotations

import re
from pathlib import Path

from support.pyverbs_pair import poll, qpex_loopback

from rdmasim.pyverbs import enums as e
from rdmasim.pyverbs.addr import AHAttr, GlobalRoute
from rdmasim.pyverbs.cq import CQ
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from rdmasim.pyverbs.wr import SGE, SendWR

DOC = Path(__file__).resolve().parents[2] / "docs" / "pyverbs.md"


def _rc_pair() -> tuple[list, list]:
    ends = []
    for name in ("rxe0", "rxe1"):
        ctx = Context(name=name)
        pd = PD(ctx)
        cq = CQ(ctx, 16)
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=8, max_recv_wr=8)))
        ends.append([ctx, pd, cq, qp])
    for me, other in ((ends[0], ends[1]), (ends[1], ends[0])):
        attr = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                      | e.IBV_ACCESS_REMOTE_READ, path_mtu=e.IBV_MTU_1024, dest_qp_num=other[3].qp_num,
                      rq_psn=0, sq_psn=0, timeout=14, retry_cnt=7, max_rd_atomic=1, max_dest_rd_atomic=1)
        attr.ah_attr = AHAttr(gr=GlobalRoute(dgid=other[0].query_gid(1, 0)), is_global=1, port_num=1)
        me[3].to_rts(attr)
    return ends[0], ends[1]


def test_docs_memory_window_example_runs_and_grants_what_it_says() -> None:
    block = re.search(r"## Memory windows\n.*?```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert block, "docs/pyverbs.md has no memory-window example"
    (ctx, pd, cq, qp), (pctx, ppd, pcq, pqp) = _rc_pair()
    ns: dict = {"pd": pd, "qp": qp}
    exec(compile(block.group(1), "docs/pyverbs.md[memory windows]", "exec"), ns)
    assert [w.opcode for w in poll(cq)] == [e.IBV_WC_BIND_MW]
    assert [(w.opcode, w.status) for w in poll(cq)] == [(e.IBV_WC_BIND_MW, e.IBV_WC_SUCCESS)]  # type 2
    mr, mw1, wr = ns["mr"], ns["mw1"], ns["wr"]
    src = MR(ppd, 2048, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(b"w" * 2048, 2048)

    def remote(opcode: int, rkey: int, addr: int, length: int = 64) -> int:
        s = SendWR(wr_id=5, opcode=opcode, num_sge=1, sg=[SGE(src.buf, length, src.lkey)])
        s.set_wr_rdma(rkey, addr)
        pqp.post_send(s)
        (wc,) = poll(pcq)
        return wc.status

    assert remote(e.IBV_WR_RDMA_WRITE, mw1.rkey, mr.buf) == e.IBV_WC_SUCCESS
    assert mr.read(64, 0) == b"w" * 64
    assert remote(e.IBV_WR_RDMA_READ, wr.rkey, mr.buf + 1024) == e.IBV_WC_SUCCESS
    assert remote(e.IBV_WR_RDMA_WRITE, wr.rkey, mr.buf + 1024) == e.IBV_WC_REM_ACCESS_ERR  # read-only window


def test_qpex_bind_mw_local_inv_and_send_inv() -> None:
    from rdmasim.pyverbs.base import inc_rkey
    from rdmasim.pyverbs.mr import MW, MWBindInfo
    from rdmasim.pyverbs.wr import RecvWR

    ops = e.IBV_QP_EX_WITH_BIND_MW | e.IBV_QP_EX_WITH_LOCAL_INV | e.IBV_QP_EX_WITH_SEND_WITH_INV
    _, pd, qpex, peer, scq, rcq = qpex_loopback(ops, peer_cap=QPCap(max_send_wr=8, max_recv_wr=8))
    mr = MR(pd, 256, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_MW_BIND)
    src = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    src.write(b"p" * 64, 64)

    def peer_write(rkey: int) -> int:
        s = SendWR(wr_id=5, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(src.buf, 64, src.lkey)])
        s.set_wr_rdma(rkey, mr.buf)
        peer.post_send(s)
        return poll(rcq)[0].status

    mw = MW(pd, e.IBV_MW_TYPE_2)
    key = inc_rkey(mw.rkey)
    qpex.wr_start()
    qpex.wr_id, qpex.wr_flags = 0x11, e.IBV_SEND_SIGNALED
    qpex.wr_bind_mw(mw, key, MWBindInfo(mr, mr.buf, 64, e.IBV_ACCESS_REMOTE_WRITE))
    qpex.wr_complete()
    assert [(w.wr_id, w.opcode, w.status) for w in poll(scq)] == [(0x11, e.IBV_WC_BIND_MW, e.IBV_WC_SUCCESS)]
    assert int(mw.rkey) != key  # as libibverbs: ibv_wr_bind_mw leaves mw->rkey to the caller
    assert peer_write(key) == e.IBV_WC_SUCCESS and mr.read(64, 0) == b"p" * 64
    qpex.wr_start()
    qpex.wr_id = 0x12
    qpex.wr_local_inv(key)
    qpex.wr_complete()
    wcs = poll(scq)
    assert [(w.wr_id, w.opcode, w.status) for w in wcs] == [(0x12, e.IBV_WC_LOCAL_INV, e.IBV_WC_SUCCESS)]
    assert peer_write(key) == e.IBV_WC_REM_ACCESS_ERR

    # wr_send_inv: the peer's window, bound through the peer, invalidated by qpex's SEND
    _, pd, qpex, peer, scq, rcq = qpex_loopback(e.IBV_QP_EX_WITH_SEND_WITH_INV,
                                                peer_cap=QPCap(max_send_wr=8, max_recv_wr=8))
    mr = MR(pd, 256, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_MW_BIND)
    mw = MW(pd, e.IBV_MW_TYPE_2)
    b = SendWR(opcode=e.IBV_WR_BIND_MW)
    b.set_bind_wr(mw, MWBindInfo(mr, mr.buf, 64, e.IBV_ACCESS_REMOTE_READ))
    peer.post_send(b)
    assert [w.opcode for w in poll(rcq)] == [e.IBV_WC_BIND_MW]
    peer.post_recv(RecvWR(wr_id=9, num_sge=1, sg=[SGE(mr.buf + 128, 64, mr.lkey)]))
    qpex.wr_start()
    qpex.wr_id, qpex.wr_flags = 0x13, e.IBV_SEND_SIGNALED
    qpex.wr_send_inv(b.rkey)
    qpex.wr_complete()
    assert [(w.wr_id, w.status) for w in poll(scq)] == [(0x13, e.IBV_WC_SUCCESS)]
    (wc,) = poll(rcq)
    assert wc.wr_id == 9 and wc.wc_flags & e.IBV_WC_WITH_INV and wc.imm_data == b.rkey
