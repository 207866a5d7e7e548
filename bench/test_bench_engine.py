"""pytest-benchmark: engine micro-benches and small scenario benches (measurements, not tests).

* event queue (``rdmasim._core.EventQueueForTest``): a "hold" operation — pop the earliest event
  and re-arm its timer a pseudo-random delay later — with 16, 1k and 1M events pending;
* packet pool (``rdmasim._core.PacketPoolForTest.churn``, a loop in C): release the oldest packet
  and take a new one, with 1k and 100k packets in flight;
* codec (``rdmasim.codec``): encode and decode one RDMA_WRITE_MIDDLE frame with a 1024-byte payload;
* scenarios: a back-to-back RDMA WRITE at MTU 1024, incast-8 through bench/models/rdmasim_incast.py
  (the back_to_back placeholder on an rdmasim without rdmasim.topology.incast; extra_info says which),
  and a random permutation on a 32-host leaf-spine (bulk flows, PFC, ECN and DCQCN).

All of these are driven from Python, so the micro-benches include one Python -> C call per operation:
they bound the Python-visible cost, not the C hot loop alone. Rates go to ``extra_info``; nothing
asserts on wall time. Run: python -m pytest bench/ --benchmark-enable --benchmark-only
"""

from __future__ import annotations

import os
import random
import sys
import time

import pytest

from rdmasim import _core, codec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))

import rdmasim_incast  # noqa: E402


def _median_s(benchmark) -> float:
    """The median round in seconds; NaN when benchmarking is off (--benchmark-disable, the
    default of this repository's pytest configuration: each bench then runs once as a test)."""
    return benchmark.stats.stats.median if benchmark.stats else float("nan")


HOLD_OPS = 10_000  # hold operations per benchmark round


def _filled_queue(pending: int, seed: int = 1) -> tuple[_core.EventQueueForTest, list[int]]:
    rng = random.Random(seed)
    q = _core.EventQueueForTest(pending, pending)
    for i in range(pending):
        q.arm(i, rng.randrange(1, 1_000_000_000))
    # pseudo-random re-arm delays, drawn once so the benched loop does not pay for the RNG
    return q, [rng.randrange(1, 1_000_000_000) for _ in range(1024)]


@pytest.mark.parametrize("pending", [16, 1_000, 1_000_000], ids=["16", "1k", "1M"])
def test_eventq_hold(benchmark, pending: int) -> None:
    q, delays = _filled_queue(pending)
    pop, arm = q.pop, q.arm

    def hold() -> None:
        for k in range(HOLD_OPS):
            t, _seq, i = pop()
            arm(i, t + delays[k & 1023])

    benchmark.pedantic(hold, rounds=20, iterations=1, warmup_rounds=1)
    assert len(q) == pending
    benchmark.extra_info["pending"] = pending
    benchmark.extra_info["hold_ops_per_s"] = HOLD_OPS / _median_s(benchmark)
    benchmark.extra_info["heap"] = q.heap_stats()


POOL_OPS = 1_000_000


@pytest.mark.parametrize("in_flight", [1_000, 100_000], ids=["1k", "100k"])
def test_pool_churn(benchmark, in_flight: int) -> None:
    """One release and one allocation per operation, the oldest packet out first (a link's FIFO)."""
    pool = _core.PacketPoolForTest()
    benchmark.pedantic(pool.churn, args=(POOL_OPS, in_flight), rounds=5, iterations=1, warmup_rounds=1)
    assert pool.in_use == 0
    benchmark.extra_info["in_flight"] = in_flight
    benchmark.extra_info["packet_bytes"] = pool.size
    benchmark.extra_info["ops_per_s"] = POOL_OPS / _median_s(benchmark)


WRITE_MIDDLE = {
    "opcode": 0x07,  # RDMA_WRITE_MIDDLE
    "src_mac": bytes.fromhex("020000000001"),
    "dst_mac": bytes.fromhex("020000000002"),
    "src_ip": "10.0.0.1",
    "dst_ip": "10.0.0.2",
    "udp_sport": 0xC001,
    "dest_qpn": 0x11,
    "psn": 12345,
    "payload": bytes(range(256)) * 4,  # 1024 bytes
}


def test_codec_encode_write_middle(benchmark) -> None:
    frame = benchmark(codec.encode, WRITE_MIDDLE)
    benchmark.extra_info["frame_bytes"] = len(frame)
    benchmark.extra_info["frames_per_s"] = 1 / _median_s(benchmark)


def test_codec_decode_write_middle(benchmark) -> None:
    frame = codec.encode(WRITE_MIDDLE)
    fields = benchmark(codec.decode, frame)
    assert fields["opcode"] == 0x07 and fields["icrc_ok"] and len(fields["payload"]) == 1024
    benchmark.extra_info["frame_bytes"] = len(frame)
    benchmark.extra_info["frames_per_s"] = 1 / _median_s(benchmark)


def _b2b_write(size: int) -> tuple[int, float]:
    import rdmasim
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    t0 = time.perf_counter()
    topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024)
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 1), CQ(cb, 1)
    src = MR(pa, size, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pb, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=1)))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=QPCap(max_send_wr=1)))
    connect_qps(qa, qb)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, size, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    qa.post_send(wr)
    (wc,) = topo.sim.wait_for(cqa, 1, timeout=None)
    assert wc.ok
    return qa.stats()["pkts_sent"], time.perf_counter() - t0


def test_b2b_write_8MiB(benchmark) -> None:
    """One 8 MiB WRITE at MTU 1024 (8192 packets), setup included."""
    packets, _ = benchmark.pedantic(_b2b_write, args=(8 << 20,), rounds=5, iterations=1)
    benchmark.extra_info["data_packets"] = packets
    benchmark.extra_info["packets_per_wall_s"] = packets / _median_s(benchmark)


@pytest.mark.parametrize("mode", ["write1000", "write1MiB"])
def test_incast8_80k(benchmark, mode: str) -> None:
    """incast-8, 10k packets per sender, as bench/compare.py runs it (PFC on, DCQCN when available)."""
    r = benchmark.pedantic(rdmasim_incast.run, args=(8, 10_000, mode), rounds=3, iterations=1)
    benchmark.extra_info.update({k: r[k] for k in ("label", "placeholder", "topology", "cc", "packets")})
    benchmark.extra_info["packets_per_wall_s"] = r["packets"] / _median_s(benchmark)


def _leaf_spine_permutation(size: int) -> tuple[int, int, float]:
    from rdmasim import topology, traffic
    from rdmasim.cc import DcqcnParams

    t0 = time.perf_counter()
    ecn = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}
    sim = topology.leaf_spine(4, 4, 8, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us", mtu=1024,
                              seed=1, switch_config={"ecn": ecn}).sim
    for h in sim.hosts.values():
        h.set_congestion_control("dcqcn", DcqcnParams.paper())
    fs = sim.add_flows(traffic.permutation(len(sim.hosts), size, seed=1))
    sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all()
    packets = int(((r["size_bytes"] + 1023) // 1024).sum() + r["retx_pkts"].sum())
    return packets, sim.now, time.perf_counter() - t0


def test_leaf_spine_permutation_32(benchmark) -> None:
    """32 hosts on 4 leaves and 4 spines (100 Gb/s, 1 us), each sending 4 MB to another (random
    permutation), MTU 1024, PFC, RED ECN and DCQCN; setup included."""
    packets, sim_ps, _ = benchmark.pedantic(_leaf_spine_permutation, args=(4_000_000,), rounds=3,
                                            iterations=1)
    benchmark.extra_info["data_packets"] = packets
    benchmark.extra_info["packets_per_wall_s"] = packets / _median_s(benchmark)
    benchmark.extra_info["sim_s_per_wall_s"] = sim_ps / 1e12 / _median_s(benchmark)
