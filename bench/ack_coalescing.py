"""Events and ACK frames per data packet for one-packet RDMA WRITEs, per NIC profile.

    python bench/ack_coalescing.py
"""
from __future__ import annotations

from typing import Any

from rdmasim.topology import back_to_back
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e

CASES: list[tuple[str, dict[str, Any]]] = [
    ("rxe", {}),
    ("rxe", {"ack_coalesce_pkts": 4, "ack_timeout": "2us"}),
    ("cx6", {}),
]


def run(profile: str, over: dict[str, Any], n: int = 4000, size: int = 1024) -> dict[str, float]:
    """n one-packet WRITEs back to back on one QP; per data packet: events, ACK frames."""
    topo = back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=1)
    for h in (topo.a, topo.b):
        h.set_nic_profile(profile, **over)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    qa, qb = CQ(ca, n), CQ(cb, 4)
    src = MR(pa, n * size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, n * size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    cap = QPCap(max_send_wr=n, max_recv_wr=1)
    a = QP(pa, QPInitAttr(scq=qa, rcq=qa, cap=cap))
    b = QP(pb, QPInitAttr(scq=qb, rcq=qb, cap=cap))
    connect_qps(a, b, path_mtu=1024)
    ev0 = topo.sim.events
    for i in range(n):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf + i * size, size, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf + i * size)
        a.post_send(wr)
    topo.sim.wait_for(qa, n, timeout=None)
    topo.sim.run_until_idle()
    data, acks = topo.link.ab.stats()["frames"], topo.link.ba.stats()["frames"]
    return {"events_per_data": (topo.sim.events - ev0) / n, "ack_frames_per_data": acks / data,
            "acks_sent": b.stats()["acks_sent"]}


if __name__ == "__main__":
    for prof, over in CASES:
        r = run(prof, over)
        print(f"{prof:4} {over!s:45} events/data {r['events_per_data']:.2f}  "
              f"ACK frames/data {r['ack_frames_per_data']:.3f}")
