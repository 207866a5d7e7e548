"""Long RDMA WRITE streams from every sender of an incast into its receiver: what the congestion-
control fabric tests run their algorithms on (each stream outlasts the run)."""

from __future__ import annotations

from typing import Any

from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def start_long_writes(t: Any, size: int, chunks: int) -> tuple[list[QP], list[Any]]:
    """Connect one RC QP per sender of topology ``t`` to its receiver and post ``size`` bytes of
    WRITEs in ``chunks`` unsignaled work requests each.  Returns the senders' QPs and the verbs
    objects the caller must keep alive while it runs."""
    rx = Context(t.receiver)
    prx = PD(rx)
    cq_rx = CQ(rx, 1000)
    qps: list[QP] = []
    keep: list[Any] = [rx, prx, cq_rx]
    step = size // chunks
    for h in t.senders:
        c = Context(h)
        pd = PD(c)
        cq = CQ(c, chunks)
        src = MR(pd, size, e.IBV_ACCESS_LOCAL_WRITE)
        dst = MR(prx, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        qa = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=chunks)))
        qb = QP(prx, QPInitAttr(scq=cq_rx, rcq=cq_rx, cap=QPCap()))
        connect_qps(qa, qb, timeout=14)
        for k in range(chunks):
            wr = SendWR(wr_id=k, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf + k * step, step, src.lkey)],
                        send_flags=0)
            wr.set_wr_rdma(dst.rkey, dst.buf + k * step)
            qa.post_send(wr)
        qps.append(qa)
        keep.append((c, pd, cq, src, dst, qb))
    return qps, keep
