"""The InfiniBand CC experiments shared by tests/cc/test_ibcc_fabric.py and docs/gen_ibcc.py.

Incast: tests/cc/dcqcn_util.py's (N senders -> one switch -> one receiver, 100 Gb/s links of 1 us,
MTU 1024, RED 5 KB / 200 KB / 1 %, PFC on priority 3 with a static 64 KB XOFF threshold), run with
``cc="ibcc"``.

Hot spot and victim (the classic IB CC experiment, Gran et al., IPDPS 2010): two switches ``sl``
and ``sr`` joined by a 200 Gb/s link; four contributors, ``l0``, ``l1`` on ``sl`` and ``r1``, ``r2``
on ``sr``, each stream to ``r0`` (the hot spot: its 100 Gb/s link is the bottleneck); a victim
``l2`` -> ``r3`` shares ``sl -> sr`` with two of them but not the bottleneck. Every link but
``sl - sr`` is 100 Gb/s; the switches mark and pause as in the incast. Without CC the hot spot's
queue fills, ``sr`` pauses ``sl`` on the shared link and the victim waits behind the contributors'
packets (head-of-line blocking); with CC the contributors slow to their share, the queue stays below
the XOFF threshold and the victim keeps its rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import rdmasim
from rdmasim.analytic import jain_index
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e

MTU = 1024
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}
XOFF = "64KB"
#: payload share of the wire: 1024 B payload in 1102 B on the wire (headers, preamble, IFG)
PAYLOAD_SHARE = 1024 / 1102


class Streams:
    """Long RDMA WRITE streams (one RC QP each) from ``pairs`` of (src, dst) hosts."""

    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        size, chunks = 1536 << 20, 64          # never finishes within the runs used
        self.qps: list[QP] = []
        self._keep: list[Any] = []
        ctx: dict[str, Any] = {}
        for src, dst in pairs:
            for h in (src, dst):
                if h.name not in ctx:
                    c = Context(h)
                    ctx[h.name] = (c, PD(c), CQ(c, 1000))
            _, pa, cqa = ctx[src.name]
            _, pb, cqb = ctx[dst.name]
            a = MR(pa, size, e.IBV_ACCESS_LOCAL_WRITE)
            b = MR(pb, size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
            qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=chunks)))
            qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=QPCap()))
            connect_qps(qa, qb, timeout=14)
            step = size // chunks
            for k in range(chunks):
                wr = SendWR(wr_id=k, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(a.buf + k * step, step, a.lkey)],
                            send_flags=0)
                wr.set_wr_rdma(b.rkey, b.buf + k * step)
                qa.post_send(wr)
            self.qps.append(qa)
            self._keep.append((a, b, qb))
        self._keep.append(ctx)

    def sent(self) -> list[int]:
        return [q.stats()["bytes_sent"] for q in self.qps]


@dataclass
class VictimResult:
    cc: str | None
    duration_us: int
    victim_gbps: float                # payload rate over the second half
    hot_gbps: list[float]             # the four contributors'
    hot_jain: float
    pause_frames: int                 # XOFF frames the switches sent
    paused_us: float                  # time sl's port towards sr was paused (priority 3)
    ccti: list[int]                   # the contributors' CCT index at the end (ibcc)
    victim_becns: int                 # BECNs (CNPs) the victim's QP received (whole run)
    victim_ccti_peak: int             # the highest CCT index the victim's QP reached (ibcc)


def run_victim(cc: str | None = "ibcc", params: Any = None, duration_us: int = 10_000, *, seed: int = 1,
               xoff: str = XOFF, hot: bool = True) -> VictimResult:
    """Run the hot-spot / victim experiment of the module docstring (``hot=False``: the victim
    alone, its rate on this path without congestion: an RC QP's 128 unacknowledged PSNs over the
    three-hop round trip hold it near 84 Gb/s)."""
    cfg = {"ecn": ECN, "threshold": xoff}
    d = rdmasim.topology.dumbbell(3, 4, rate="100Gbps", bottleneck_rate="200Gbps", delay="1us", mtu=MTU,
                                  seed=seed, switch_config=cfg)
    for h in [*d.left, *d.right]:
        h.set_congestion_control(cc, params)
    l0, l1, l2 = d.left
    r0, r1, r2, r3 = d.right
    s = Streams([(l0, r0), (l1, r0), (r1, r0), (r2, r0), (l2, r3)] if hot else [(l2, r3)])
    half_ps, end_ps = duration_us * 1_000_000 // 2, duration_us * 1_000_000
    d.sim.run(half_ps)
    b0 = s.sent()
    port = d.s_left.port_to(d.s_right)
    p0 = d.s_left.port_stats(port)["paused_ps"][3]
    d.sim.run(end_ps)
    b1 = s.sent()
    gbps = [(y - x) * 8 / ((end_ps - half_ps) * 1e-12) / 1e9 for x, y in zip(b0, b1, strict=True)]
    if not hot:
        gbps = [0.0] * 4 + gbps
    tot = d.s_left.totals()["pfc_xoff_sent"] + d.s_right.totals()["pfc_xoff_sent"]
    paused = (d.s_left.port_stats(port)["paused_ps"][3] - p0) / 1e6
    states = [q.cc_state() or {} for q in s.qps]
    if not hot:
        states = [{}] * 4 + states
    return VictimResult(cc=cc, duration_us=duration_us, victim_gbps=gbps[4], hot_gbps=gbps[:4],
                        hot_jain=jain_index(gbps[:4]), pause_frames=tot, paused_us=paused,
                        ccti=[int(st.get("ccti", -1)) for st in states[:4]],
                        victim_becns=s.qps[-1].stats()["cnps_rcvd"],
                        victim_ccti_peak=int(states[4].get("ccti_peak", -1)))


@dataclass
class CreditVictimResult:
    victim_port_marks: int            # ECN (FECN) marks at sl's port to sr (the victim of credit starvation)
    root_port_marks: int              # marks at sr's port to r0 (the hot spot: the root)
    victim_port_stall_us: float       # time sl -> sr was stalled for credits
    victim_becns: int                 # BECNs (CNPs) the victim's QP received
    victim_gbps: float                # the victim's payload rate over the whole run


def run_victim_credits(victim_mask: Any = None, duration_us: int = 2_000, *, seed: int = 1,
                       buffer: str = "32KB", shared_rate: str = "300Gbps") -> CreditVictimResult:
    """The hot-spot / victim experiment over InfiniBand credits (one VL, ``buffer`` per port and VL,
    no PFC) with IB CC on every host. The shared link runs at ``shared_rate``, by default the sum of
    its three senders' (so it is no root of congestion itself); the contributors' packets fill
    ``sr``'s ingress buffer from ``sl``, so ``sl``'s port towards ``sr`` lacks credits -- a victim of
    the hot spot downstream.
    ``victim_mask``: ports of ``sl`` given the annex A10 Victim_Mask bit, as
    :func:`rdmasim.ib_fabric.set_victim_mask` takes them, or ``"shared"``: its port to ``sr`` (None:
    the default, none)."""
    from rdmasim import ib_fabric

    cfg = {"ecn": {**ECN, "priorities": [0]}}  # credits: the queues are VLs; SL 3 on VL 0 of 1
    d = rdmasim.topology.dumbbell(3, 4, rate="100Gbps", bottleneck_rate=shared_rate, delay="1us", mtu=MTU,
                                  seed=seed, switch_config=cfg)
    ib_fabric.enable_credits(d.sim, vls=1, buffer=buffer)
    if victim_mask is not None:
        ports = [d.s_left.port_to(d.s_right)] if victim_mask == "shared" else victim_mask
        ib_fabric.set_victim_mask(d.s_left, ports)
    for h in [*d.left, *d.right]:
        h.set_congestion_control("ibcc", None)
    l0, l1, l2 = d.left
    r0, r1, r2, r3 = d.right
    s = Streams([(l0, r0), (l1, r0), (r1, r0), (r2, r0), (l2, r3)])
    d.sim.run(duration_us * 1_000_000)
    vp = d.s_left.port_stats(d.s_left.port_to(d.s_right))
    rp = d.s_right.port_stats(d.s_right.port_to(r0))
    return CreditVictimResult(victim_port_marks=vp["ecn_marked"], root_port_marks=rp["ecn_marked"],
                              victim_port_stall_us=vp["credit_stall_ps"][0] / 1e6,
                              victim_becns=s.qps[-1].stats()["cnps_rcvd"],
                              victim_gbps=s.sent()[-1] * 8 / (duration_us * 1e-6) / 1e9)
