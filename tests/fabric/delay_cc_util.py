"""The long-flow incast shared by the TIMELY and Swift validations (tests/fabric/test_cc_timely_
validation.py, test_cc_swift_validation.py) and docs/gen_delay_cc.py.

N senders each run one long RDMA WRITE stream to one receiver through one switch
(``rdmasim.incast``, 100 Gb/s links with 1 us delay, path MTU 1024): the switch port towards the
receiver is the only queue. ECN marking is off (both algorithms read delay, not marks); PFC keeps
its default dynamic threshold. Over the second half of the run, every ``rtt_sample_us`` each
sender's congestion-control state is read (``qp.cc_state()``: its last RTT sample, rate, window).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import rdmasim
from rdmasim.analytic import jain_index
from rdmasim.fabric import QueueSampler
from tests.long_writes import start_long_writes

LINE_BPS = 100e9
DELAY_PS = 1_000_000
MTU = 1024
PRIO = 3
SAMPLE_PS = 100_000
FCS_BYTES, WIRE_OVERHEAD_BYTES = 4, 20  # on the wire besides the frame (preamble + SFD + gap: 20)
DATA_FRAME, ACK_FRAME = 1082, 62        # WRITE MIDDLE with 1024 B payload; ACK
PAYLOAD_LINE_BPS = LINE_BPS * MTU / (DATA_FRAME + FCS_BYTES + WIRE_OVERHEAD_BYTES)


def base_rtt_ps() -> int:
    """Sender -> switch -> receiver and back: four 1 us links, the data frame serialised twice
    (each hop is store-and-forward) and the ACK twice, each with FCS, preamble and gap."""
    def ser(frame: int) -> float:
        return (frame + FCS_BYTES + WIRE_OVERHEAD_BYTES) * 8 / LINE_BPS * 1e12

    return round(4 * DELAY_PS + 2 * ser(DATA_FRAME) + 2 * ser(ACK_FRAME))


@dataclass
class IncastResult:
    n: int
    rates_gbps: list[float]          # payload rate per flow over the second half
    jain: float
    queue_bytes: np.ndarray          # bottleneck queue samples over the second half (every 100 ns)
    rtt_ps: np.ndarray               # RTT samples of every sender over the second half
    goodput_fraction: float          # sum of payload rates / the payload rate the bottleneck carries
    pause_frames: int
    states: list[dict[str, Any]] = field(default_factory=list)  # each sender's CC state at the end
    state_series: list[list[dict[str, Any]]] = field(default_factory=list)  # per read, per sender


def run_incast(n: int, algorithm: str, params: Any, duration_us: int = 4_000, rtt_sample_us: float = 2.0,
               seed: int = 1, ecn: dict[str, Any] | None = None) -> IncastResult:
    """``ecn``: the switch's ECN settings (``rdmasim.fabric`` ecn keys); None = marking off."""
    cfg = {"ecn": ecn if ecn is not None else {"priorities": []}}
    t = rdmasim.incast(n, rate="100Gbps", delay="1us", mtu=MTU, seed=seed, switch_config=cfg)
    for h in t.hosts:
        h.set_congestion_control(algorithm, params)
    port = t.switch.port_to(t.receiver)
    sampler = QueueSampler(t.sim, [(t.switch, port, PRIO)], period=SAMPLE_PS,
                           max_samples=duration_us * 1_000_000 // SAMPLE_PS + 10)
    qps, keep = start_long_writes(t, 256 << 20, 16)  # never finishes within the runs used
    half, end = duration_us * 1_000_000 // 2, duration_us * 1_000_000
    t.sim.run(half)
    b0 = [q.stats()["bytes_sent"] for q in qps]
    step_ps = round(rtt_sample_us * 1_000_000)
    series: list[list[dict[str, Any]]] = []
    now = half
    while now < end:
        now = min(end, now + step_ps)
        t.sim.run(now)
        series.append([q.cc_state() or {} for q in qps])
    b1 = [q.stats()["bytes_sent"] for q in qps]
    rates = [(y - x) * 8 / ((end - half) * 1e-12) / 1e9 for x, y in zip(b0, b1, strict=True)]
    a = sampler.arrays()
    ts = np.asarray(a["t_ps"], dtype=float)
    q = np.asarray(a["egress_bytes"], dtype=float)[:, 0][ts >= half]
    rtts = np.asarray([s.get("rtt_last_ps", 0) for row in series for s in row], dtype=float)
    return IncastResult(
        n=n, rates_gbps=rates, jain=jain_index(rates), queue_bytes=q, rtt_ps=rtts,
        goodput_fraction=sum(rates) / (PAYLOAD_LINE_BPS / 1e9),
        pause_frames=t.switch.totals()["pfc_xoff_sent"], states=series[-1], state_series=series,
    )
