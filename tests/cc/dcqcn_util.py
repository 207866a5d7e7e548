"""The DCQCN-on-a-fabric experiment shared by tests/cc/test_dcqcn_fabric.py and docs/gen_dcqcn.py.

N senders each run one long RDMA WRITE stream to a common receiver through one switch (an
incast on ``rdmasim.topology.incast``): every host link is 100 Gb/s, so the switch port towards the
receiver is the single bottleneck. The switch marks ECN with the paper's RED profile
(Kmin 5 KB, Kmax 200 KB, Pmax 1 %, on enqueue) and runs PFC on priority 3 with a *static* XOFF
threshold (``XOFF``, shared bytes of one ingress queue): the default dynamic threshold (free buffer
>> 3 = 1.5 MB of a 12 MB buffer) is never reached by these flows, because an RC QP stops at 128
unacknowledged PSNs (rxe's RXE_MAX_UNACKED_PSNS), i.e. at most ~138 KB per flow on the wire and in
the queues with 1 KB MTU. With the static threshold PFC fires without congestion control (each ACK,
one per 66 packets, releases a ~71 KB burst into one ingress queue), but the no-CC queue is still
the level those windows set: it is the same with the threshold out of reach
(tests/cc/test_dcqcn_fabric.py checks this).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import rdmasim
from rdmasim.analytic import jain_index
from rdmasim.cc import DcqcnParams
from rdmasim.fabric import QueueSampler
from tests.long_writes import start_long_writes

LINE_BPS = 100e9
MTU = 1024
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}
KMIN, KMAX, PMAX = 5_000, 200_000, 0.01
XOFF = "64KB"
PRIO = 3  # the default DSCP map puts RoCE data in priority 3 (lossless, ECN-marked)


@dataclass
class Result:
    n: int
    cc: str | None
    duration_us: int
    rates_gbps: list[float]           # bytes_sent over the second half, per flow
    jain: float
    t_us: np.ndarray                  # queue samples (whole run)
    queue_bytes: np.ndarray           # bottleneck egress queue, priority 3
    queue_mean: float                 # time-averaged over the second half
    queue_min: float
    queue_max: float
    pause_frames: int                 # XOFF frames (incl. refreshes) the switch sent
    xon_frames: int
    ecn_marked: int
    cnps: list[int]
    wire_bytes_per_pkt: float         # bytes a data packet occupies in the switch queue
    trace_t_us: list[float] = field(default_factory=list)
    trace_rate_gbps: list[list[float]] = field(default_factory=list)  # [flow][sample]
    dcqcn: list[dict[str, Any]] = field(default_factory=list)
    cc_states: list[dict[str, Any]] = field(default_factory=list)  # qp.cc_state() at the end (any algorithm)
    ack_frames: int = 0               # frames the switch sent towards the senders (ACKs, CNPs), whole run

    @property
    def sum_gbps(self) -> float:
        return sum(self.rates_gbps)


def run_incast(n: int, cc: str | None = "dcqcn", params: DcqcnParams | None = None, duration_us: int = 20_000,
               *, trace_every_us: float = 0.0, sample_period_ps: int | None = None, seed: int = 1,
               xoff: str = XOFF) -> Result:
    """Run the incast for ``duration_us`` of simulated time (see the module docstring)."""
    params = params if params is not None else DcqcnParams.paper()
    cfg = {"ecn": ECN, "threshold": xoff}
    t = rdmasim.incast(n, rate="100Gbps", delay="1us", mtu=MTU, seed=seed, switch_config=cfg)
    for h in t.hosts:
        h.set_congestion_control(cc, params)
    port = t.switch.port_to(t.receiver)
    if sample_period_ps is None:  # at most 50k samples
        sample_period_ps = max(1_000_000, duration_us * 1_000_000 // 50_000)
    sampler = QueueSampler(t.sim, [(t.switch, port, PRIO)], period=sample_period_ps,
                           max_samples=duration_us * 1_000_000 // sample_period_ps + 10)
    # never finishes within the runs used (> 100 Gb/s x 100 ms)
    qps, keep = start_long_writes(t, 1536 << 20, 64)

    half_ps = duration_us * 1_000_000 // 2
    end_ps = duration_us * 1_000_000
    trace_t: list[float] = []
    trace: list[list[float]] = [[] for _ in qps]

    def advance(to_ps: int) -> None:
        if not trace_every_us:
            t.sim.run(to_ps)
            return
        step_ps = int(trace_every_us * 1_000_000)
        while t.sim.now < to_ps:
            t.sim.run(min(to_ps, (t.sim.now // step_ps + 1) * step_ps))
            trace_t.append(t.sim.now / 1e6)
            for i, q in enumerate(qps):
                r = q.rate_bps
                trace[i].append((r if r > 0 else LINE_BPS) / 1e9)

    advance(half_ps)
    b0 = [q.stats()["bytes_sent"] for q in qps]
    advance(end_ps)
    b1 = [q.stats()["bytes_sent"] for q in qps]
    rates = [(y - x) * 8 / ((end_ps - half_ps) * 1e-12) / 1e9 for x, y in zip(b0, b1, strict=True)]

    a = sampler.arrays()
    ts = np.asarray(a["t_ps"], dtype=float)
    qb_ = np.asarray(a["egress_bytes"], dtype=float)[:, 0]
    sel = ts >= half_ps
    st = t.switch.port_stats(port)
    tot = t.switch.totals()
    return Result(
        n=n, cc=cc, duration_us=duration_us, rates_gbps=rates, jain=jain_index(rates),
        t_us=ts / 1e6, queue_bytes=qb_, queue_mean=float(qb_[sel].mean()), queue_min=float(qb_[sel].min()),
        queue_max=float(qb_[sel].max()), pause_frames=tot["pfc_xoff_sent"], xon_frames=tot["pfc_xon_sent"],
        ecn_marked=tot["ecn_marked"], cnps=[q.stats()["cnps_rcvd"] for q in qps],
        wire_bytes_per_pkt=st["queue_tx_bytes"][PRIO] / max(1, st["queue_tx_pkts"][PRIO]),
        trace_t_us=trace_t, trace_rate_gbps=trace,
        dcqcn=[q.dcqcn_state() or {} for q in qps], cc_states=[q.cc_state() or {} for q in qps],
        ack_frames=sum(t.switch.port_stats(t.switch.port_to(h))["tx_pkts"] for h in t.senders),
    )


def queue_period_us(t_us: np.ndarray, q: np.ndarray) -> float:
    """Dominant period of a queue trace (from the FFT peak of the de-meaned signal), in us."""
    x = q - q.mean()
    if len(x) < 8 or not x.any():
        return float("nan")
    dt = float(np.median(np.diff(t_us)))
    spec = np.abs(np.fft.rfft(x))
    freqs = np.fft.rfftfreq(len(x), dt)
    k = int(np.argmax(spec[1:]) + 1)
    return 1.0 / freqs[k]
