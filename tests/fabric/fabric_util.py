"""Helpers for the fabric tests: an RC WRITE flow between two hosts, with verification."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


@dataclass
class Flow:
    src_host: object
    dst_host: object
    qp: QP
    peer: QP
    cq: CQ
    src: MR
    dst: MR
    size: int

    def post(self, wr_id: int = 1) -> None:
        wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(self.src.buf, self.size, self.src.lkey)])
        wr.set_wr_rdma(self.dst.rkey, self.dst.buf)
        self.qp.post_send(wr)

    def delivered(self) -> bool:
        return bool((self.dst.array[: self.size] == self.src.array[: self.size]).all())


def flow(src_host, dst_host, size: int, *, seed: int = 0, traffic_class: int = 0, timeout: int = 14,
         retry_cnt: int = 7, mtu: int | None = None) -> Flow:
    """A connected RC QP pair src -> dst with a patterned source buffer of ``size`` bytes."""
    ca, cb = Context(src_host), Context(dst_host)
    pa, pb = PD(ca), PD(cb)
    cq_a, cq_b = CQ(ca, 64), CQ(cb, 64)
    n = max(size, 1)
    src = MR(pa, n, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, n, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.array[:] = (np.arange(n) * 7 + seed * 13 + 1) % 251
    qa = QP(pa, QPInitAttr(scq=cq_a, rcq=cq_a, cap=QPCap(max_send_wr=16)))
    qb = QP(pb, QPInitAttr(scq=cq_b, rcq=cq_b, cap=QPCap(max_recv_wr=16)))
    connect_qps(qa, qb, timeout=timeout, retry_cnt=retry_cnt, traffic_class=traffic_class, path_mtu=mtu)
    return Flow(src_host, dst_host, qa, qb, cq_a, src, dst, size)


def run_all(sim, flows: list[Flow], timeout: str = "1s") -> None:
    """Post every flow and wait until each one's WRITE completed successfully."""
    for f in flows:
        f.post()
    for f in flows:
        wcs = sim.wait_for(f.cq, 1, timeout=timeout)
        assert wcs[0].status == e.IBV_WC_SUCCESS, (f, wcs)


def assert_buffers_empty(sim) -> None:
    """After the network drained: every switch queue and MMU counter is back to zero (no leaked
    accounting) and no packet is left in the pool."""
    for sw in sim.switches.values():
        for port in range(len(sw.ports)):
            for prio in range(8):
                assert sw.queue_bytes(port, prio) == (0, 0), (sw.name, port, prio)
    assert sim.pool_stats()["pkts_in_use"] == 0, sim.pool_stats()
