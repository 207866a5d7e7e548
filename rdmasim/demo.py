"""The demo: a back-to-back RDMA WRITE transfer over a lossy link, with a summary,
a PSN-over-time plot and a pcap for Wireshark."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rdmasim.topology import back_to_back
from rdmasim.units import format_rate, format_time, parse_rate
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
from rdmasim.verbs import enums as e


@dataclass
class DemoConfig:
    """Parameters of the demo transfer."""

    size_bytes: int = 4 * 1024 * 1024
    messages: int = 4
    mtu: int = 1024
    rate: str = "100Gbps"
    delay: str = "1us"
    loss: float = 0.001
    timeout: int = 10
    retry_cnt: int = 7
    seed: int = 1


def run_demo(out_dir: str | Path, cfg: DemoConfig | None = None, plot: bool = True) -> dict[str, Any]:
    """Run the demo into ``out_dir`` (created): ``demo.pcap``, ``summary.json``, ``psn.png``."""
    cfg = cfg or DemoConfig()
    if cfg.messages < 1 or cfg.size_bytes < cfg.messages:
        raise ValueError(f"demo: {cfg.size_bytes:,} bytes in {cfg.messages} message(s): need at least one "
                         "message and at least one byte per message (size >= messages >= 1)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pcap = out / "demo.pcap"

    topo = back_to_back(rate=cfg.rate, delay=cfg.delay, mtu=cfg.mtu, loss_ab=cfg.loss,
                        loss_ba=cfg.loss, seed=cfg.seed)
    sim = topo.sim
    sim.capture(str(pcap))
    ctx_a, ctx_b = Context(topo.a), Context(topo.b)
    pd_a, pd_b = PD(ctx_a), PD(ctx_b)
    cq_a, cq_b = CQ(ctx_a, cfg.messages), CQ(ctx_b, 16)
    src = MR(pd_a, cfg.size_bytes, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(pd_b, cfg.size_bytes, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src.array[:] = np.random.default_rng(cfg.seed).integers(0, 256, cfg.size_bytes, dtype=np.uint8)
    cap = QPCap(max_send_wr=cfg.messages, max_recv_wr=1)
    qp_a = QP(pd_a, QPInitAttr(scq=cq_a, rcq=cq_a, cap=cap))
    qp_b = QP(pd_b, QPInitAttr(scq=cq_b, rcq=cq_b, cap=cap))
    connect_qps(qp_a, qp_b, path_mtu=cfg.mtu, timeout=cfg.timeout, retry_cnt=cfg.retry_cnt)

    chunk = cfg.size_bytes // cfg.messages
    for i in range(cfg.messages):
        n = chunk if i < cfg.messages - 1 else cfg.size_bytes - chunk * i
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf + i * chunk, n, src.lkey)])
        wr.set_wr_rdma(dst.rkey, dst.buf + i * chunk)
        qp_a.post_send(wr)

    wall0 = time.perf_counter()
    wcs = sim.wait_for(cq_a, cfg.messages, timeout=None)
    finish_ps = sim.now  # the last send completion
    sim.run_until_idle()
    wall = time.perf_counter() - wall0
    sim.close_capture()

    stats = qp_a.stats()
    resp = qp_b.stats()
    ab, ba = topo.link.ab.stats(), topo.link.ba.stats()
    summary = {
        "config": asdict(cfg),
        "bytes": cfg.size_bytes,
        "data_intact": bool(np.array_equal(src.array, dst.array)),
        "completions": {e.wc_status_to_str(w.status): sum(1 for x in wcs if x.status == w.status)
                        for w in wcs},
        "sim_time_ps": finish_ps,
        "goodput_bps": cfg.size_bytes * 8 / (finish_ps / 1e12) if finish_ps else 0.0,
        "packets_sent": stats["pkts_sent"],
        "packets_retransmitted": stats["pkts_retx"],
        "naks_received": stats["naks_rcvd"],
        "timeouts": stats["timeouts"],
        "acks_sent": resp["acks_sent"],
        "frames_a_to_b": ab["frames"],
        "frames_dropped_a_to_b": ab["dropped"],
        "frames_b_to_a": ba["frames"],
        "frames_dropped_b_to_a": ba["dropped"],
        "events": sim.events,
        "wall_s": wall,
        "pcap": str(pcap),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if plot:
        summary["plot"] = _plot_psn(pcap, out / "psn.png", cfg)
    return summary


def _plot_psn(pcap: Path, png: Path, cfg: DemoConfig) -> str | None:
    """PSN of every data packet over time; retransmissions and NAKs marked, and the first NAKs
    (or timeouts) zoomed in below so that each Go-Back-N rewind is visible."""
    try:
        from rdmasim.plots import psn_over_time, save
    except ImportError:
        return None
    rate = format_rate(parse_rate(cfg.rate))
    fig = psn_over_time(pcap, title=f"RDMA WRITE of {cfg.size_bytes:,} bytes, MTU {cfg.mtu}, {rate}, "
                        f"i.i.d. loss {cfg.loss:g} each way")
    return str(save(fig, png.with_suffix(""), formats=("png",))[0])


def format_summary(s: dict[str, Any]) -> str:
    """A readable summary table."""
    rows = [
        ("bytes written", f"{s['bytes']:,}"),
        ("data intact at responder", "yes" if s["data_intact"] else "NO"),
        ("completions", ", ".join(f"{k}: {v}" for k, v in s["completions"].items())),
        ("simulated time", format_time(s["sim_time_ps"])),
        ("goodput", format_rate(s["goodput_bps"])),
        ("data packets sent", f"{s['packets_sent']:,}"),
        ("  retransmitted", f"{s['packets_retransmitted']:,}"),
        ("NAKs received", f"{s['naks_received']:,}"),
        ("ACK timeouts", f"{s['timeouts']:,}"),
        ("ACKs sent by responder", f"{s['acks_sent']:,}"),
        ("frames a->b (dropped)", f"{s['frames_a_to_b']:,} ({s['frames_dropped_a_to_b']:,})"),
        ("frames b->a (dropped)", f"{s['frames_b_to_a']:,} ({s['frames_dropped_b_to_a']:,})"),
        ("events", f"{s['events']:,}"),
        ("wall time", f"{s['wall_s']:.3f} s"),
        ("pcap", s["pcap"]),
    ]
    if s.get("plot"):
        rows.append(("plot", s["plot"]))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)
