"""The small teaching scenario behind ``rdmasim trace``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from rdmasim import trace as tr


def example_write(size: int = 3072, mtu: int = 1024, drop_psn: Iterable[int] | int | None = 1,
                  loss: float = 0.0, op: str = "write", seed: int = 1, rate: str = "100Gbps",
                  delay: str = "1us", timeout: int = 10, retry_cnt: int = 7,
                  pcap: str | Path | None = None, max_records: int | None = 100_000,
                  recovery: str = "gbn") -> tr.Trace:
    """Run one RDMA WRITE (or SEND, ``op="send"``) of ``size`` bytes from ``a`` to ``b`` back to
    back with tracing on, dropping the first transmission of each PSN in ``drop_psn`` (a→b) and
    losing frames i.i.d. with ``loss`` each way. Returns the stopped Trace.

    With the defaults (3 packets, PSN 1 dropped) the ladder shows the NAK (PSN sequence error)
    and the Go-Back-N resend of PSNs 1 and 2; with ``recovery="irn"`` the NAK for PSN 2 (a selective
    ACK) and the resend of PSN 1 only.
    """
    from rdmasim.topology import back_to_back
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    if op not in ("write", "send"):
        raise ValueError(f"op must be 'write' or 'send', got {op!r}")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    topo = back_to_back(rate=rate, delay=delay, mtu=mtu, loss_ab=loss, loss_ba=loss, seed=seed)
    sim = topo.sim
    if pcap is not None:
        sim.capture(str(pcap))
    drops = [drop_psn] if isinstance(drop_psn, int) else list(drop_psn or [])
    for psn in drops:
        topo.link.ab.drop(psn=psn)
    t = sim.trace(max_records=max_records)
    ctx_a, ctx_b = Context(topo.a), Context(topo.b)
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    cq_a, cq_b = CQ(ctx_a, 8), CQ(ctx_b, 8)
    n = max(size, 1)
    src = MR(pd_a, n, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd_b, n, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.array[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
    qa = QP(pd_a, QPInitAttr(scq=cq_a, rcq=cq_a, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qb = QP(pd_b, QPInitAttr(scq=cq_b, rcq=cq_b, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    connect_qps(qa, qb, path_mtu=mtu, timeout=timeout, retry_cnt=retry_cnt, recovery=recovery)
    if op == "send":
        qb.post_recv(RecvWR(wr_id=100, sg=[SGE(dst.buf, n, dst.lkey)]))
        qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, size, src.lkey)]))
    else:
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, size, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf)
        qa.post_send(wr)
    sim.run_until_idle()
    if pcap is not None:
        sim.close_capture()
    t.stop()
    return t
