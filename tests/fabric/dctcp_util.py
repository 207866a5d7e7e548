"""The DCTCP incast shared by tests/fabric/test_cc_dctcp_validation.py and docs/gen_dctcp.py.

N senders each run one long RDMA WRITE stream to one receiver through one switch
(``rdmasim.incast``, 100 Gb/s links with 1 us delay, path MTU 1024): the switch port towards the
receiver is the bottleneck. It marks CE on every packet enqueued above K (RED with Kmax = K + 1
byte and Pmax 1: a step). The senders run DCTCP with ``DctcpParams.for_path`` for the path's base
RTT (window = the bandwidth-delay product, +1 MTU per window of data). PFC keeps its default
dynamic threshold, which these queues never reach.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import rdmasim
from rdmasim.analytic import jain_index
from rdmasim.cc_dctcp import DctcpParams
from rdmasim.fabric import QueueSampler
from tests.long_writes import start_long_writes

LINE_BPS = 100e9
DELAY_PS = 1_000_000
MTU = 1024
PRIO = 3
SAMPLE_PS = 100_000
FCS_BYTES, WIRE_OVERHEAD_BYTES = 4, 20  # on the wire besides the frame (preamble + SFD + gap: 20)


@dataclass
class DctcpResult:
    n: int
    k_bytes: int
    rates_gbps: list[float]      # payload rate per flow over the second half
    jain: float
    queue_bytes: np.ndarray      # bottleneck queue samples over the second half (every 100 ns)
    q_p5: float
    q_p95: float
    q_mean: float
    pkt_bytes: float             # bytes a data packet occupies in the switch queue (frame, no FCS)
    base_rtt_ps: int             # the path's RTT without queueing (analytical)
    rtt_min_ps: int              # the smallest RTT sample the first sender's DCTCP saw
    bdp_bytes: float             # C x base RTT
    goodput_fraction: float      # sum of payload rates / the payload rate the bottleneck carries
    pause_frames: int
    ecn_marked: int
    ack_frames: int = 0          # frames the switch sent back towards the senders (ACKs)


def base_rtt_ps(data_frame: int, ack_frame: int) -> int:
    """Sender -> switch -> receiver and back: four 1 us links, the data frame serialised twice
    (each hop is store-and-forward) and the ACK twice, each with FCS, preamble and gap."""
    def ser(frame: int) -> float:
        return (frame + FCS_BYTES + WIRE_OVERHEAD_BYTES) * 8 / LINE_BPS * 1e12

    return round(4 * DELAY_PS + 2 * ser(data_frame) + 2 * ser(ack_frame))


def run_dctcp_incast(n: int, k_bytes: int = 20_000, duration_us: int = 10_000, pace: bool = False,
                     seed: int = 1, ack_every: int = 1) -> DctcpResult:
    cfg = {"ecn": {"kmin": k_bytes, "kmax": k_bytes + 1, "pmax": 1.0}}
    t = rdmasim.incast(n, rate="100Gbps", delay="1us", mtu=MTU, seed=seed, switch_config=cfg)
    data_frame, ack_frame = 1082, 62  # WRITE MIDDLE with 1024 B payload; ACK (eth/IPv4/UDP/BTH/AETH/ICRC)
    rtt = base_rtt_ps(data_frame, ack_frame)
    params = DctcpParams.for_path("100Gbps", rtt, mtu=MTU, pace=pace, ack_every=ack_every)
    for h in t.hosts:
        h.set_congestion_control("dctcp", params)
    port = t.switch.port_to(t.receiver)
    sampler = QueueSampler(t.sim, [(t.switch, port, PRIO)], period=SAMPLE_PS,
                           max_samples=duration_us * 1_000_000 // SAMPLE_PS + 10)
    qps, keep = start_long_writes(t, 256 << 20, 16)  # never finishes within the runs used
    half, end = duration_us * 1_000_000 // 2, duration_us * 1_000_000
    t.sim.run(half)
    b0 = [q.stats()["bytes_sent"] for q in qps]
    t.sim.run(end)
    b1 = [q.stats()["bytes_sent"] for q in qps]
    rates = [(y - x) * 8 / ((end - half) * 1e-12) / 1e9 for x, y in zip(b0, b1, strict=True)]
    a = sampler.arrays()
    ts = np.asarray(a["t_ps"], dtype=float)
    q = np.asarray(a["egress_bytes"], dtype=float)[:, 0][ts >= half]
    st = t.switch.port_stats(port)
    pkt = st["queue_tx_bytes"][PRIO] / max(1, st["queue_tx_pkts"][PRIO])
    payload_line = LINE_BPS * MTU / (data_frame + FCS_BYTES + WIRE_OVERHEAD_BYTES) / 1e9
    tot = t.switch.totals()
    cc = qps[0].cc_state() or {}
    return DctcpResult(
        n=n, k_bytes=k_bytes, rates_gbps=rates, jain=jain_index(rates), queue_bytes=q,
        q_p5=float(np.percentile(q, 5)), q_p95=float(np.percentile(q, 95)), q_mean=float(q.mean()),
        pkt_bytes=pkt, base_rtt_ps=rtt, rtt_min_ps=int(cc.get("rtt_min_ps", 0)),
        bdp_bytes=LINE_BPS * rtt * 1e-12 / 8, goodput_fraction=sum(rates) / payload_line,
        pause_frames=tot["pfc_xoff_sent"], ecn_marked=tot["ecn_marked"],
        ack_frames=sum(t.switch.port_stats(t.switch.port_to(h))["tx_pkts"] for h in t.senders),
    )
