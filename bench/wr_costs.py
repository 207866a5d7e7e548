"""What one work request costs from Python, piece by piece, in microseconds (median of rounds).

Building an ``SGE``, a ``SendWR`` (as pyverbs programs write it) and ``set_wr_rdma``; the field
stores of a loop that reuses one work request (``bench/models/rdmasim_incast.py``'s one-by-one
loop); one ``post_send`` of that work request; and one row of ``post_send_batch``. The posts go to
an RC QP in RTS that is never run (its send queue holds them all), so only posting is timed.

    python bench/wr_costs.py
"""

from __future__ import annotations

import argparse
import statistics
import timeit
from typing import Any

import numpy as np

import rdmasim
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def _qp(n: int) -> tuple[Any, Any, Any, Any]:
    """A connected RC QP with room for ``n`` work requests, its source MR and the target MR."""
    topo = rdmasim.back_to_back()
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 1), CQ(cb, 1)
    src = MR(pa, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=n), sq_sig_all=0))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
    connect_qps(qa, qb)
    return topo, qa, src, dst


def _round(n: int) -> dict[str, float]:
    """One timing of each operation, ``n`` times: microseconds per operation."""
    write = e.IBV_WR_RDMA_WRITE
    keep, qp, src, dst = _qp(n)
    sge = SGE(src.buf, 1024, src.lkey)
    wr = SendWR(opcode=write, sg=[sge], send_flags=0)
    wr.set_wr_rdma(dst.rkey, dst.buf)
    lkey, rkey, buf, base = src.lkey, dst.rkey, src.buf, dst.buf
    post = qp.post_send

    def stores() -> None:  # the loop of the one-by-one mode, without its post_send
        for i in range(n):
            wr.wr_id = i
            sge.length = 1024
            wr.remote_addr = base + (i % 64) * 1024
            wr.send_flags = 0

    def posts() -> None:
        for _ in range(n):
            post(wr)

    times = {
        "SGE(addr, length, lkey)": timeit.timeit(lambda: SGE(buf, 1024, lkey), number=n) / n,
        "SendWR(wr_id=, opcode=, sg=[sge], send_flags=)":
            timeit.timeit(lambda: SendWR(wr_id=1, opcode=write, sg=[sge], send_flags=0), number=n) / n,
        "wr.set_wr_rdma(rkey, addr)": timeit.timeit(lambda: wr.set_wr_rdma(rkey, base), number=n) / n,
        "loop of four field stores, per pass": timeit.timeit(stores, number=1) / n,
        "qp.post_send(wr)": timeit.timeit(posts, number=1) / n,
    }
    keep, qp, src, dst = _qp(n)  # an empty send queue for the batch
    i = np.arange(n, dtype=np.uint64)
    lengths = np.full(n, 1024, dtype=np.uint32)
    remote = dst.buf + (i % 64) * 1024
    times["post_send_batch, per row"] = timeit.timeit(
        lambda: qp.post_send_batch(write, src.buf, lengths, src.lkey, remote_addr=remote, rkey=dst.rkey,
                                   wr_id=i), number=1) / n
    del keep
    return {k: v * 1e6 for k, v in times.items()}


def measure(n: int, rounds: int) -> dict[str, float]:
    """Microseconds per operation, each the median of ``rounds`` timings of ``n`` operations."""
    runs = [_round(n) for _ in range(rounds)]
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=50_000, help="operations per timing")
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    print(f"microseconds per operation, median of {a.rounds} rounds of {a.n}")
    for name, us in measure(a.n, a.rounds).items():
        print(f"{name:50s} {us:6.3f}")


if __name__ == "__main__":
    main()
