"""pytest-benchmark: a large RDMA WRITE over 100 Gb/s back to back, 0% and 1% loss.

Reports emulated data packets per wall second (extra_info) — a measurement, not a test.
Run: python -m pytest bench/ --benchmark-enable --benchmark-only
"""

from __future__ import annotations

import time

import pytest

import rdmasim
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def _median_s(benchmark) -> float:
    """The median round in seconds; NaN when benchmarking is off (--benchmark-disable, the
    default of this repository's pytest configuration: each bench then runs once as a test)."""
    return benchmark.stats.stats.median if benchmark.stats else float("nan")


SIZE = 64 * 1024 * 1024  # 64 MiB per run = 65,536 data packets at MTU 1024
MESSAGES = 16


def write_transfer(loss: float, seed: int = 1) -> tuple[int, float]:
    """One transfer including setup; returns (data packets sent, wall seconds)."""
    t0 = time.perf_counter()
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, loss_ab=loss, loss_ba=loss,
                                seed=seed)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    qa_cq, qb_cq = CQ(ca, MESSAGES), CQ(cb, 1)
    src = MR(pa, SIZE, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, SIZE, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa = QP(pa, QPInitAttr(scq=qa_cq, rcq=qa_cq, cap=QPCap(max_send_wr=MESSAGES)))
    qb = QP(pb, QPInitAttr(scq=qb_cq, rcq=qb_cq, cap=QPCap(max_send_wr=1)))
    connect_qps(qa, qb, timeout=10)
    chunk = SIZE // MESSAGES
    for i in range(MESSAGES):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf + i * chunk, chunk, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf + i * chunk)
        qa.post_send(wr)
    wcs = topo.sim.wait_for(qa_cq, MESSAGES, timeout=None)
    assert all(w.ok for w in wcs)
    return qa.stats()["pkts_sent"], time.perf_counter() - t0


@pytest.mark.parametrize("loss", [0.0, 0.01])
def test_write_64MiB(benchmark, loss: float) -> None:
    result = benchmark.pedantic(write_transfer, args=(loss,), rounds=3, iterations=1)
    packets, wall = result
    benchmark.extra_info["data_packets"] = packets
    benchmark.extra_info["packets_per_wall_s"] = packets / _median_s(benchmark)
