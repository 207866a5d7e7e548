"""Objects destroyed while the event queue may still hold entries of their timers.

The queue cancels lazily, so a destroyed QP's retransmit timer can leave entries behind. CI runs
this folder under ASan: reading such an entry must never touch freed memory.
"""

from __future__ import annotations

from rdmasim import topology, traffic
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPAttr, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


def test_bulk_flows_freed_then_run_past_their_timeouts() -> None:
    sim = topology.leaf_spine(2, 2, 4, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us",
                              mtu=1024, seed=7).sim
    for link in sim.links:
        link.ab.set_loss(0.002)
    small = traffic.SizeCDF([1000, 64_000], [0.0, 1.0], "small")
    fs = sim.add_flows(traffic.poisson(8, 0.5, "100Gbps", "1ms", size_cdf=small, seed=2), timeout=8)
    sim.run_flows()
    sim.run(until=sim.now + 100_000_000_000)  # 100 ms: past every RTO the freed QPs had armed
    assert (fs.results()["status"] == 0).all()


def test_destroyed_qp_with_an_armed_timer_then_run_on() -> None:
    topo = topology.back_to_back(rate="100Gbps", delay="1us", mtu=1024)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    qa = QP(pa, QPInitAttr(scq=CQ(ca, 4), rcq=CQ(ca, 4), cap=QPCap(max_send_wr=2)))
    qb = QP(pb, QPInitAttr(scq=CQ(cb, 4), rcq=CQ(cb, 4), cap=QPCap(max_recv_wr=2)))
    connect_qps(qa, qb, timeout=10)
    src = MR(pa, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, 1 << 16, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    topo.link.ab.drop(psn=3)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, src.length, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    topo.sim.run(until="5us")  # the RTO is armed, packets are in flight
    qa.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
    qa.send_cq.poll(4)
    qa.close()
    qb.close()
    # a new QP may reuse the memory; the old entries must stay stale
    qc = QP(pa, QPInitAttr(scq=CQ(ca, 4), rcq=CQ(ca, 4), cap=QPCap(max_send_wr=2)))
    topo.sim.run(until="50ms")
    assert qc.inspect()["state"] == "IBV_QPS_RESET"
