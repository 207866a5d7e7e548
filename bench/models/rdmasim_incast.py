"""incast-8 in rdmasim: RC RDMA WRITEs from N hosts to one receiver through one switch.

Uses ``rdmasim.topology.incast`` (switched fabric: PFC on its lossless priority 3, which all
RoCE traffic maps to by default; DCQCN on the senders with ECN marking at the switch when rdmasim
has them). Path MTU 1024, 100 Gb/s links with 1 us delay.

Without ``rdmasim.topology.incast`` (an rdmasim before the switched fabric), or with
``--topology back_to_back``, this runs a **placeholder**: ``back_to_back`` — ONE sender, ONE
100 Gb/s 1 us link, no switch, no PFC — sending the same total number of data packets. The result
then says ``"placeholder": true`` and is labelled so; it is not incast-8.

Two ways to post the same packets (``--mode``):

* ``write1000`` (default): one 1000-byte RDMA WRITE per data packet (RDMA_WRITE_ONLY, 1000-byte
  payload, the scenario's payload size). Python posts one work request per packet, which is part
  of the measured time.
* ``write1MiB``: 1 MiB WRITEs segmented at MTU 1024, so packets carry 1024-byte payloads
  (2.4 % more bytes than the scenario), and Python posts one work request per 1024 packets.
* ``write1024``, ``write1024-chain``, ``write1024-batch``: one 1024-byte RDMA WRITE per data
  packet (the same packets as ``write1MiB``), posted three ways from Python: one ``post_send``
  per work request (the loop of ``write1000``), ``next_wr`` chains of ``CHAIN_LEN`` new
  ``SendWR`` objects per ``post_send`` (as pyverbs programs build them), or one
  ``QP.post_send_batch`` of numpy arrays per QP. ``write1024-pyverbs`` is the one-by-one loop
  through ``rdmasim.pyverbs`` (its QP class and enums). All post identical work requests, so the
  simulations are identical (same events, packets, simulated time); only the Python cost differs.
* ``flows``: the same packets as bulk flows (``sim.add_flows``: arrays to the C core, each
  sender's bytes as WRITEs of up to 10 MiB chained one after another by dependencies, size-only
  packets with 1024-byte payloads); no Python per message.

Timed (the issue's rule, "from the Python API, including setup"): building the topology, contexts,
PDs, CQs, MRs, QPs, connecting them, posting every WRITE, and running until every WRITE completed.
Data packets are counted from the senders' QP stats (``pkts_sent``, retransmissions included and
reported separately).
"""

from __future__ import annotations

import gc
import inspect
import math
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import PAYLOAD, emit, parser  # noqa: E402

MTU = 1024
MAX_WR = 1 << 16  # rdmasim's max_send_wr per QP (csrc/transport/qp.c RS_MAX_WR)
BIG_MSG_PKTS = 1024  # write1MiB: packets per WRITE
# ECN marking at the switch when DCQCN runs (the DCQCN paper's RED setting: Kmin 5 KB, Kmax 200 KB, 1 %)
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}


def has_incast() -> bool:
    try:
        import rdmasim.topology as t
    except ImportError:
        return False
    return hasattr(t, "incast")


def has_dcqcn() -> bool:
    from rdmasim.sim import Host

    return hasattr(Host, "set_congestion_control")


def _kwargs_for(fn: Any, **kw: Any) -> dict[str, Any]:
    """The subset of ``kw`` that ``fn`` accepts (the fabric API is young; stay tolerant)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return kw
    return {k: v for k, v in kw.items() if k in params}


def build(senders: int, topology: str, cc: str, seed: int) -> tuple[Any, Any, list[Any], Any, dict[str, Any]]:
    """Returns (topology object, sim, sender hosts, receiver host, facts about what was built)."""
    import rdmasim

    facts: dict[str, Any] = {}
    use_dcqcn = cc == "dcqcn" or (cc == "auto" and has_dcqcn())
    if topology == "auto":
        topology = "incast" if has_incast() else "back_to_back"
    if topology == "incast":
        from rdmasim import topology as t

        switch_config: dict[str, Any] = {"ports": senders + 1}
        if use_dcqcn:
            switch_config["ecn"] = ECN
        topo = t.incast(senders, **_kwargs_for(t.star, rate="100Gbps", delay="1us", mtu=MTU, seed=seed,
                                               switch_config=switch_config))
        sim, snd, rcv = topo.sim, list(topo.senders), topo.receiver
        facts.update(topology="incast", placeholder=False, switch_config=repr(switch_config),
                     pfc="on (switch lossless priority 3; all RoCE traffic maps to it by default)")
    else:
        topo = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=MTU, seed=seed, names=("s0", "r"))
        sim, snd, rcv = topo.sim, [topo.a], topo.b
        facts.update(topology="back_to_back", placeholder=True, pfc="n/a (no switch)")
    if use_dcqcn:
        for h in snd + [rcv]:
            h.set_congestion_control("dcqcn")
    facts["cc"] = "dcqcn" if use_dcqcn else "none (line rate)"
    return topo, sim, snd, rcv, facts


FLOW_MSG = 10 << 20  # bytes per chained WRITE flow in mode "flows"
#: modes posting one 1024-byte WRITE per data packet, and how each posts its work requests
PER_PACKET_MODES = {"write1024": "loop", "write1024-chain": "chain", "write1024-batch": "batch",
                    "write1024-pyverbs": "loop"}
CHAIN_LEN = 256  # work requests per post_send in mode write1024-chain


def _pyverbs_classes() -> tuple[Any, Any, Any]:
    """Mode ``write1024-pyverbs``: QP, QPInitAttr (RC) and the enums of ``rdmasim.pyverbs``."""
    import functools

    import rdmasim.pyverbs.enums as pe
    from rdmasim.pyverbs.qp import QP, QPInitAttr

    return QP, functools.partial(QPInitAttr, qp_type=pe.IBV_QPT_RC), pe


def _post_chains(qp: Any, src: Any, dst: Any, sizes: list[int], msg_bytes: int, slots: int) -> None:
    """Mode ``write1024-chain``: new SendWRs linked by ``next_wr``, ``CHAIN_LEN`` per post_send;
    the same work requests as the one-by-one loop (only the last one signaled)."""
    from rdmasim.verbs import SGE, SendWR
    from rdmasim.verbs import enums as e

    write, signaled, last = e.IBV_WR_RDMA_WRITE, e.IBV_SEND_SIGNALED, len(sizes) - 1
    lkey, rkey, base = src.lkey, dst.rkey, dst.buf
    for start in range(0, len(sizes), CHAIN_LEN):
        head = prev = None
        for i in range(start, min(start + CHAIN_LEN, len(sizes))):
            wr = SendWR(wr_id=i, opcode=write, sg=[SGE(src.buf, sizes[i], lkey)],
                        send_flags=signaled if i == last else 0)
            wr.set_wr_rdma(rkey, base + (i % slots) * msg_bytes)
            if prev is None:
                head = wr
            else:
                prev.next_wr = wr
            prev = wr
        qp.post_send(head)


def _post_batch(qp: Any, src: Any, dst: Any, sizes: list[int], msg_bytes: int, slots: int) -> None:
    """Mode ``write1024-batch``: every work request of the QP in one ``post_send_batch``."""
    import numpy as np

    from rdmasim.verbs import enums as e

    i = np.arange(len(sizes), dtype=np.uint64)
    flags = np.zeros(len(sizes), dtype=np.uint32)
    flags[-1] = e.IBV_SEND_SIGNALED
    qp.post_send_batch(e.IBV_WR_RDMA_WRITE, src.buf, np.asarray(sizes, dtype=np.uint32), src.lkey,
                       remote_addr=dst.buf + (i % slots) * msg_bytes, rkey=dst.rkey, wr_id=i,
                       send_flags=flags)


def _run_flows(rdmasim: Any, topo: Any, sim: Any, snd_hosts: list, rcv_host: Any, facts: dict, total: int,
               t0: float, import_s: float, senders: int) -> dict:
    """Mode ``flows``: every sender's share of ``total`` packets as chained bulk WRITE flows."""
    import numpy as np

    from rdmasim.traffic import FlowTable

    per_host = total // len(snd_hosts)
    nbytes = per_host * MTU
    sizes = [FLOW_MSG] * (nbytes // FLOW_MSG) + ([nbytes % FLOW_MSG] if nbytes % FLOW_MSG else [])
    k = len(sizes)
    src = np.repeat([h.index for h in snd_hosts], k)
    dep_ptr = np.zeros(len(src) + 1, dtype=np.int64)
    chained = np.arange(len(src)) % k != 0  # each flow but a sender's first waits for the one before
    dep_ptr[1:] = np.cumsum(chained)
    deps = np.nonzero(chained)[0].astype(np.int32) - 1
    table = FlowTable.from_columns(src=src, dst=np.full(len(src), rcv_host.index),
                                   size=np.tile(sizes, len(snd_hosts)), dep_ptr=dep_ptr, deps=deps)
    fs = sim.add_flows(table, mtu=MTU)
    t_posted = time.perf_counter()
    sim.run_flows()
    wall = time.perf_counter() - t0
    res = fs.results()
    if (res["status"] != 0).any():
        raise RuntimeError("a flow failed")
    retx = int(res["retx_pkts"].sum())
    sent = int(sum(-(-int(s) // MTU) for s in res["size"])) + retx
    switch = getattr(topo, "switch", None)
    if switch is not None and hasattr(switch, "totals"):
        facts["switch_totals"] = {k: int(v) for k, v in switch.totals().items()}
    cc_name = "DCQCN" if facts["cc"] == "dcqcn" else "no CC"
    return {
        "simulator": "rdmasim",
        "label": f"rdmasim incast-{senders} RC bulk flows (10 MiB WRITEs, 1024-B payloads), PFC, {cc_name}",
        "scenario": f"incast-{senders}",
        "mode": "flows",
        "packets": sent,
        "packets_expected": total,
        "packets_retx": retx,
        "payload_bytes": MTU,
        "wall_s": wall,
        "setup_s": t_posted - t0,
        "run_s": wall - (t_posted - t0),
        "import_s": import_s,
        "timed": "Python API: topology + flow table + add_flows + run to completion",
        "sim_time_s": sim.now / 1e12,
        "events": sim.events,
        "qps_per_sender": 1,
        "rdmasim_version": getattr(rdmasim, "__version__", "?"),
        **facts,
    }


def run(senders: int, packets_per_sender: int, mode: str = "write1000", topology: str = "auto",
        cc: str = "auto", seed: int = 1) -> dict:
    t_import = time.perf_counter()
    import rdmasim
    from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, SendWR, connect_qps
    from rdmasim.verbs import enums as e

    if mode == "write1024-pyverbs":  # the loop of write1024 through rdmasim.pyverbs' QP and enums
        QP, QPInitAttr, e = _pyverbs_classes()  # noqa: N806
    import_s = time.perf_counter() - t_import

    total = senders * packets_per_sender
    t0 = time.perf_counter()
    topo, sim, snd_hosts, rcv_host, facts = build(senders, topology, cc, seed)
    if mode == "flows":
        return _run_flows(rdmasim, topo, sim, snd_hosts, rcv_host, facts, total, t0, import_s, senders)
    # The placeholder has one sender: it sends all packets of all senders.
    per_host = total // len(snd_hosts)
    if mode == "write1000":
        msg_bytes, pkts_per_msg = PAYLOAD, 1
    elif mode == "write1MiB":
        msg_bytes, pkts_per_msg = BIG_MSG_PKTS * MTU, BIG_MSG_PKTS
    elif mode in PER_PACKET_MODES:
        msg_bytes, pkts_per_msg = MTU, 1
    else:
        raise ValueError(f"mode {mode!r}")
    # messages per host: full ones, then one shorter message for any remainder
    full, rest = divmod(per_host, pkts_per_msg)
    sizes = [msg_bytes] * full + ([rest * MTU] if rest else [])
    qps_per_host = max(1, math.ceil(len(sizes) / MAX_WR))
    buf = max(msg_bytes, 1 << 16)

    ctx_r = Context(rcv_host)
    pd_r = PD(ctx_r)
    cq_r = CQ(ctx_r, 1)
    dst = MR(pd_r, buf, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    senders_state = []
    for h in snd_hosts:
        ctx = Context(h)
        pd = PD(ctx)
        cq = CQ(ctx, qps_per_host)
        src = MR(pd, buf, e.IBV_ACCESS_LOCAL_WRITE)
        qps = []
        for q in range(qps_per_host):
            n_wr = len(sizes[q::qps_per_host])
            qp = QP(pd, QPInitAttr(scq=cq, rcq=cq, cap=QPCap(max_send_wr=max(1, n_wr)), sq_sig_all=0))
            qr = QP(pd_r, QPInitAttr(scq=cq_r, rcq=cq_r, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
            connect_qps(qp, qr, path_mtu=MTU, timeout=14)
            qps.append(qp)
        senders_state.append((cq, src, qps))

    write, signaled = e.IBV_WR_RDMA_WRITE, e.IBV_SEND_SIGNALED
    slots = max(1, buf // msg_bytes)
    for _cq, src, qps in senders_state:
        # One SendWR reused for every post (as C code reuses its ibv_send_wr): post_send copies it.
        sge = SGE(src.buf, msg_bytes, src.lkey)
        wr = SendWR(opcode=write, sg=[sge], send_flags=0)
        wr.set_wr_rdma(dst.rkey, dst.buf)
        for q, qp in enumerate(qps):
            mine = sizes[q::qps_per_host]
            if PER_PACKET_MODES.get(mode) in ("chain", "batch"):
                poster = _post_chains if PER_PACKET_MODES[mode] == "chain" else _post_batch
                poster(qp, src, dst, mine, msg_bytes, slots)
                continue
            last = len(mine) - 1
            for i, size in enumerate(mine):
                wr.wr_id = i
                sge.length = size
                wr.remote_addr = dst.buf + (i % slots) * msg_bytes
                wr.send_flags = signaled if i == last else 0  # one completion per QP
                qp.post_send(wr)
    t_posted = time.perf_counter()
    for cq, _src, qps in senders_state:
        wcs = sim.wait_for(cq, len(qps), timeout=None)
        bad = [w for w in wcs if not w.ok]
        if bad:
            raise RuntimeError(f"WRITE failed: {bad[0]!r}")
    wall = time.perf_counter() - t0

    stats = [qp.stats() for _cq, _src, qps in senders_state for qp in qps]
    sent = sum(s["pkts_sent"] for s in stats)
    retx = sum(s["pkts_retx"] for s in stats)
    switch = getattr(topo, "switch", None)
    if switch is not None and hasattr(switch, "totals"):
        facts["switch_totals"] = {k: int(v) for k, v in switch.totals().items()}
    how = "1000-B WRITEs" if mode == "write1000" else "1 MiB WRITEs, 1024-B payloads"
    if mode in PER_PACKET_MODES:
        posted = {"loop": "one by one", "chain": "in next_wr chains", "batch": "as numpy batches"}
        how = f"1024-B WRITEs, one per packet, posted {posted[PER_PACKET_MODES[mode]]}"
        if mode == "write1024-pyverbs":
            how += " through rdmasim.pyverbs"
    if facts["placeholder"]:
        label = f"rdmasim PLACEHOLDER b2b 1 sender: {how}"
    else:
        cc_name = "DCQCN" if facts["cc"] == "dcqcn" else "no CC"
        label = f"rdmasim incast-{senders} RC {how}, PFC, {cc_name}"
    payload = PAYLOAD if mode == "write1000" else MTU  # write1024*: MTU too
    return {
        "simulator": "rdmasim",
        "label": label,
        "scenario": f"incast-{senders}" if not facts["placeholder"] else f"back_to_back-1x{total}",
        "mode": mode,
        "packets": sent,
        "packets_expected": total,
        "packets_retx": retx,
        "payload_bytes": payload,
        "wall_s": wall,
        "setup_s": t_posted - t0,
        "run_s": wall - (t_posted - t0),
        "import_s": import_s,
        "timed": "Python API: topology + verbs setup + posting + run to completion",
        "sim_time_s": sim.now / 1e12,
        "events": sim.events,
        "qps_per_sender": qps_per_host,
        "rdmasim_version": getattr(rdmasim, "__version__", "?"),
        **facts,
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["write1000", "write1MiB", "flows", *PER_PACKET_MODES],
                   default="write1000",
                   help="1000-byte WRITEs (one packet each, default), 1 MiB WRITEs (1024-byte payloads), "
                        "bulk flows, or 1024-byte WRITEs one per packet posted one by one / in chains / "
                        "as numpy batches")
    p.add_argument("--topology", choices=["auto", "incast", "back_to_back"], default="auto",
                   help="auto: incast when rdmasim.topology has it, else the back_to_back placeholder")
    p.add_argument("--cc", choices=["auto", "none", "dcqcn"], default="auto",
                   help="congestion control: auto = DCQCN when rdmasim has it")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for i in range(a.repeat):
        gc.collect()  # free the previous run's reference cycles before timing the next
        r = run(a.senders, a.packets_per_sender, a.mode, a.topology, a.cc, a.seed)
        r["repeat_index"] = i
        emit(r)


if __name__ == "__main__":
    main()
