"""incast-8 in rdmasim: RC RDMA WRITEs from N hosts to one receiver through one switch.

Uses ``rdmasim.topology.incast`` (switched fabric: PFC on its lossless priority 3, which all
RoCE traffic maps to by default; DCQCN on the senders with ECN marking at the switch when rdmasim
has them). Path MTU 1024, 100 Gb/s links with 1 us delay.

Without ``rdmasim.topology.incast`` (an rdmasim before the switched fabric), or with
``--topology back_to_back``, this runs a **placeholder**: ``back_to_back`` — ONE sender, ONE
100 Gb/s 1 us link, no switch, no PFC — sending the same total number of data packets. The result
then says ``"placeholder": true`` and is labelled so; it is not incast-8.

Four ways to send the same data packets (``--mode``); ``SIMULATES`` says what each one simulates:

* ``write1000``: verbs API, one 1000-byte RDMA WRITE per data packet (RDMA_WRITE_ONLY carrying
  1000 payload bytes). Python posts one work request per packet.
* ``write1MiB``: verbs API, 1 MiB WRITEs segmented at MTU 1024 (1024 payload bytes per packet),
  one work request per 1024 packets.
* ``flows``: bulk flows (``sim.add_flows``): each sender's bytes as 10 MiB WRITEs chained by
  dependencies. A flow runs on its own new QP pair and on a size-only region (no payload bytes
  are stored or copied), so DCQCN starts every 10 MiB chunk at line rate again.
* ``flows1qp``: bulk flows, ONE flow per sender carrying the sender's whole share: one QP pair per
  sender for the whole run, the same traffic as the verbs modes (size-only, no payload bytes).
* ``write1024``, ``write1024-chain``, ``write1024-batch``: one 1024-byte RDMA WRITE per data
  packet (the same packets as ``write1MiB``), posted three ways from Python: one ``post_send``
  per work request (the loop of ``write1000``), ``next_wr`` chains of ``CHAIN_LEN`` new
  ``SendWR`` objects per ``post_send`` (as pyverbs programs build them), or one
  ``QP.post_send_batch`` of numpy arrays per QP. ``write1024-pyverbs`` is the one-by-one loop
  through ``rdmasim.pyverbs`` (its QP class and enums). All post identical work requests, so the
  simulations are identical (same events, packets, simulated time); only the Python cost differs.

Counted from the simulation's own counters: data packets delivered once are the senders' first
transmissions. Verbs modes: ``pkts_sent - pkts_retx`` of the senders' QPs (``pkts_retx`` counts the
request packets whose PSN was sent before). Bulk modes (whose QPs are destroyed when their flow
ends): the frames the senders' NICs put on their links (in incast a WRITE sender transmits data
packets only) minus the flows' ``retx_pkts``. Retransmissions are reported apart.

Timed: ``import_s`` (importing rdmasim and what the run uses: paid by a process's first run only),
``setup_s`` (topology, verbs objects or
the flow table, posting every WRITE), ``run_s`` (the event loop only: ``sim.wait_for`` /
``sim.run_flows``); ``whole_s`` = all three.
"""

from __future__ import annotations

import gc
import math
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from incast_common import PAYLOAD, emit, finish, parser  # noqa: E402

MTU = 1024
MAX_WR = 1 << 16  # rdmasim's max_send_wr per QP (csrc/transport/qp.c RS_MAX_WR)
BIG_MSG_PKTS = 1024  # write1MiB: packets per WRITE
FLOW_CHUNK = 10 << 20  # bytes per chained WRITE flow in mode "flows"
# ECN marking at the switch when DCQCN runs (the DCQCN paper's RED setting: Kmin 5 KB, Kmax 200 KB, 1 %)
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}
VERBS_MODES = ("write1000", "write1MiB", "write1024", "write1024-chain", "write1024-batch",
               "write1024-pyverbs")
MODES = (*VERBS_MODES, "flows", "flows1qp")

#: what each mode simulates (one line; compare.py prints it under the table)
SIMULATES = {
    "write1000": "verbs API: one 1000-byte RDMA WRITE posted from Python per data packet; real bytes "
                 "copied between registered buffers",
    "write1MiB": "verbs API: 1 MiB RDMA WRITEs posted from Python, segmented at MTU 1024; real bytes "
                 "copied between registered buffers",
    **{m: f"verbs API: one 1024-byte RDMA WRITE per data packet, posted from Python {how}; real bytes "
          "copied between registered buffers" for m, how in (
              ("write1024", "one post_send each"), ("write1024-chain", "in next_wr chains"),
              ("write1024-batch", "as numpy batches (QP.post_send_batch)"),
              ("write1024-pyverbs", "one post_send each through rdmasim.pyverbs"))},
    "flows": "bulk flows: each sender's bytes as 10 MiB WRITEs chained one after another, each on a NEW "
             "QP pair (DCQCN restarts at line rate every chunk); size-only, no payload bytes",
    "flows1qp": "bulk flows: one WRITE flow per sender with its whole share, one QP pair per sender "
                "(the verbs modes' traffic); size-only, no payload bytes",
}

def _import() -> float:
    """Import everything a run uses; returns the seconds it took (~0 after a process's first run)."""
    t = time.perf_counter()
    import numpy  # noqa: F401

    import rdmasim  # noqa: F401
    import rdmasim.pyverbs.enums  # noqa: F401  (mode write1024-pyverbs: not timed as its setup)
    import rdmasim.pyverbs.qp  # noqa: F401
    import rdmasim.topology  # noqa: F401
    import rdmasim.traffic  # noqa: F401
    import rdmasim.verbs  # noqa: F401
    return time.perf_counter() - t


def has_incast() -> bool:
    try:
        import rdmasim.topology as t
    except ImportError:
        return False
    return hasattr(t, "incast")


def has_dcqcn() -> bool:
    from rdmasim.sim import Host

    return hasattr(Host, "set_congestion_control")


def build(senders: int, topology: str, cc: str, seed: int, loss: float = 0.0, nic_profile: str = "rxe",
          ack_req_interval: int | None = None) -> tuple[Any, Any, list[Any], Any, dict[str, Any]]:
    """Returns (topology object, sim, sender hosts, receiver host, facts about what was built).

    ``loss``: i.i.d. loss probability of each data frame on its way into the receiver (the
    receiver's link, switch to receiver; 0 = lossless), to exercise retransmission.
    ``ack_req_interval``: the NIC profile's AckReq cadence on every host (None: the profile's own).
    """
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
        topo = t.incast(senders, rate="100Gbps", delay="1us", mtu=MTU, seed=seed, switch_config=switch_config)
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
    if nic_profile != "rxe" or ack_req_interval is not None:  # rxe is every host's default
        over = {} if ack_req_interval is None else {"ack_req_interval": ack_req_interval}
        for h in snd + [rcv]:
            h.set_nic_profile(nic_profile, **over)
    facts["nic_profile"] = nic_profile
    if ack_req_interval is not None:
        facts["ack_req_interval"] = ack_req_interval
    if loss:
        link = rcv.link
        link.direction(link.b if link.a is rcv else link.a).set_loss(loss)
        facts["loss"] = f"{loss} i.i.d. on the receiver's link (into the receiver)"
    return topo, sim, snd, rcv, facts


def sim_counters(topo: Any, sim: Any, snd_hosts: list[Any]) -> dict[str, Any]:
    """Whole-simulation counters: events, frames on every link direction (each hop counted),
    frames the senders' NICs transmitted, ECN marks and the switch totals."""
    frames = sum(d.stats()["frames"] for link in sim.links for d in (link.ab, link.ba))
    sender_frames = sum(h.link.direction(h).stats()["frames"] for h in snd_hosts)
    out: dict[str, Any] = {"events": int(sim.events), "frames": int(frames),
                           "sender_frames": int(sender_frames),
                           "sim_time_s": sim.now / 1e12, "ecn_marks": None}
    switch = getattr(topo, "switch", None)
    if switch is not None:
        totals = {k: int(v) for k, v in switch.totals().items()}
        out["switch_totals"] = totals
        out["ecn_marks"] = totals["ecn_marked"]
    return out


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


def _label(senders: int, mode: str, facts: dict[str, Any]) -> str:
    how = {"write1000": "verbs, one 1000-B WRITE per packet",
           "write1MiB": "verbs, 1 MiB WRITEs",
           "write1024": "verbs, one 1024-B WRITE per packet",
           "write1024-chain": "verbs, one 1024-B WRITE per packet, next_wr chains",
           "write1024-batch": "verbs, one 1024-B WRITE per packet, numpy batches",
           "write1024-pyverbs": "pyverbs, one 1024-B WRITE per packet",
           "flows": "bulk, 10 MiB chunks, a new QP each",
           "flows1qp": "bulk, one QP per sender"}[mode]
    if facts["placeholder"]:
        return f"rdmasim {mode} PLACEHOLDER b2b 1 sender: {how}"
    return f"rdmasim {mode}: {how}"


def _setting(senders: int, facts: dict[str, Any]) -> str:
    if facts["placeholder"]:
        return "PLACEHOLDER back_to_back, one sender, no switch (not incast)"
    cc = "DCQCN (RED ECN 5 KB/200 KB/1 % at the switch)" if facts["cc"] == "dcqcn" else "no CC"
    return f"incast-{senders} RC through one switch, PFC, {cc}, MTU 1024"


# ---- bulk flows (modes "flows" and "flows1qp") ----

def flow_table(snd_hosts: list[Any], rcv_host: Any, per_host_bytes: int, chunk: int | None) -> Any:
    """Each sender's ``per_host_bytes`` as WRITE flows to the receiver: chunks of ``chunk`` bytes
    chained by dependencies (each waits for the one before), or with ``chunk=None`` one flow per
    sender (one QP pair per sender for the whole run)."""
    import numpy as np

    from rdmasim.traffic import FlowTable
    from rdmasim.traffic.table import MAX_FLOW_SIZE

    if chunk is None:
        if per_host_bytes > MAX_FLOW_SIZE:
            raise ValueError(f"flows1qp: {per_host_bytes} bytes per sender in one flow; a flow carries at "
                             f"most {MAX_FLOW_SIZE} bytes (use fewer packets or mode 'flows')")
        chunk = per_host_bytes
    sizes = [chunk] * (per_host_bytes // chunk) + ([per_host_bytes % chunk] if per_host_bytes % chunk else [])
    k = len(sizes)
    src = np.repeat([h.index for h in snd_hosts], k)
    dep_ptr = np.zeros(len(src) + 1, dtype=np.int64)
    chained = np.arange(len(src)) % k != 0  # each flow but a sender's first waits for the one before
    dep_ptr[1:] = np.cumsum(chained)
    deps = np.nonzero(chained)[0].astype(np.int32) - 1
    return FlowTable.from_columns(src=src, dst=np.full(len(src), rcv_host.index),
                                  size=np.tile(sizes, len(snd_hosts)), dep_ptr=dep_ptr, deps=deps)


def _run_flows(mode: str, topo: Any, sim: Any, snd_hosts: list, rcv_host: Any, per_host: int,
               t0: float) -> tuple[dict[str, Any], Any]:
    """Modes ``flows`` / ``flows1qp``: (counts and timings, the FlowSet)."""
    table = flow_table(snd_hosts, rcv_host, per_host * MTU, FLOW_CHUNK if mode == "flows" else None)
    fs = sim.add_flows(table, mtu=MTU)
    t_run = time.perf_counter()
    sim.run_flows()
    t_end = time.perf_counter()
    res = fs.results()
    if (res["status"] != 0).any():
        raise RuntimeError("a flow failed")
    c = sim_counters(topo, sim, snd_hosts)
    retx = int(res["retx_pkts"].sum())
    first = c["sender_frames"] - retx  # a WRITE sender puts data packets only on its link
    return {**c, "packets": first, "packets_retx": retx,
            "payload_bytes_total": int(res["bytes_delivered"].sum()), "cnps": int(res["cnps"].sum()),
            "qp_pairs": len(res), "qps_per_sender": len(res) // len(snd_hosts),  # one QP pair per flow
            "counted": "senders' link frames (data only) minus the flows' retx_pkts",
            "timed_run": "sim.run_flows()", "setup_s": t_run - t0, "post_s": 0.0,
            "run_s": t_end - t_run}, fs


# ---- verbs API (VERBS_MODES) ----

def verbs_sizes(mode: str, per_host: int) -> tuple[int, list[int]]:
    """(bytes of a full message, the message sizes one sender posts) for ``per_host`` packets."""
    if mode == "write1000":
        msg_bytes, pkts_per_msg = PAYLOAD, 1
    elif mode == "write1MiB":
        msg_bytes, pkts_per_msg = BIG_MSG_PKTS * MTU, BIG_MSG_PKTS
    elif mode in PER_PACKET_MODES:
        msg_bytes, pkts_per_msg = MTU, 1
    else:
        raise ValueError(f"mode {mode!r}: the verbs modes are {', '.join(VERBS_MODES)}")
    full, rest = divmod(per_host, pkts_per_msg)  # full messages, then one shorter for the remainder
    return msg_bytes, [msg_bytes] * full + ([rest * MTU] if rest else [])


def verbs_setup(snd_hosts: list[Any], rcv_host: Any, sizes: list[int], msg_bytes: int,
                mode: str = "write1000") -> dict[str, Any]:
    """Contexts, PDs, CQs, MRs and connected RC QP pairs (at most MAX_WR WRs per QP); mode
    ``write1024-pyverbs`` makes its QPs with rdmasim.pyverbs' classes."""
    from rdmasim.verbs import CQ, MR, PD, QP, Context, QPCap, QPInitAttr, connect_qps
    from rdmasim.verbs import enums as e

    if mode == "write1024-pyverbs":  # the loop of write1024 through rdmasim.pyverbs' QP and enums
        QP, QPInitAttr, e = _pyverbs_classes()  # noqa: N806

    qps_per_host = max(1, math.ceil(len(sizes) / MAX_WR))
    buf = max(msg_bytes, 1 << 16)
    ctx_r = Context(rcv_host)
    pd_r = PD(ctx_r)
    cq_r = CQ(ctx_r, 1)
    dst = MR(pd_r, buf, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    senders = []
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
        senders.append((cq, src, qps))
    return {"senders": senders, "dst": dst, "buf": buf, "qps_per_host": qps_per_host,
            "keep": (ctx_r, pd_r, cq_r)}


def verbs_post(state: dict[str, Any], sizes: list[int], msg_bytes: int, mode: str = "write1000") -> None:
    """Post every WRITE: with one ``post_send`` call each, or (PER_PACKET_MODES) in chains or numpy
    batches; the last WR of each QP is signaled."""
    from rdmasim.verbs import SGE, SendWR
    from rdmasim.verbs import enums as e

    write, signaled = e.IBV_WR_RDMA_WRITE, e.IBV_SEND_SIGNALED
    dst, qps_per_host = state["dst"], state["qps_per_host"]
    slots = max(1, state["buf"] // msg_bytes)
    for _cq, src, qps in state["senders"]:
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


def verbs_wait(sim: Any, state: dict[str, Any]) -> None:
    """Run the simulation until every QP's last (signaled) WRITE completed."""
    for cq, _src, qps in state["senders"]:
        wcs = sim.wait_for(cq, len(qps), timeout=None)
        bad = [w for w in wcs if not w.ok]
        if bad:
            raise RuntimeError(f"WRITE failed: {bad[0]!r}")


def verbs_counts(state: dict[str, Any]) -> dict[str, int]:
    """First transmissions, retransmissions, their payload bytes and CNPs from the senders' QPs."""
    stats = [qp.stats() for _cq, _src, qps in state["senders"] for qp in qps]
    return {"packets": sum(s["pkts_sent"] - s["pkts_retx"] for s in stats),
            "packets_retx": sum(s["pkts_retx"] for s in stats),
            "payload_bytes_total": sum(s["bytes_sent"] - s["bytes_retx"] for s in stats),
            "cnps": sum(s["cnps_rcvd"] for s in stats)}


def _run_verbs(mode: str, topo: Any, sim: Any, snd_hosts: list, rcv_host: Any, per_host: int,
               t0: float) -> tuple[dict[str, Any], Any]:
    """The verbs modes (VERBS_MODES): (counts and timings, the verbs state)."""
    msg_bytes, sizes = verbs_sizes(mode, per_host)
    state = verbs_setup(snd_hosts, rcv_host, sizes, msg_bytes, mode)
    t_post = time.perf_counter()
    verbs_post(state, sizes, msg_bytes, mode)
    t_run = time.perf_counter()
    verbs_wait(sim, state)
    t_end = time.perf_counter()
    c = sim_counters(topo, sim, snd_hosts)
    counts = verbs_counts(state)
    if c["sender_frames"] != counts["packets"] + counts["packets_retx"]:  # both are the simulation's
        raise RuntimeError(f"senders' link frames {c['sender_frames']} != QP pkts_sent "
                           f"{counts['packets'] + counts['packets_retx']}")
    n_qps = len(snd_hosts) * state["qps_per_host"]
    return {**c, **counts, "qp_pairs": n_qps, "qps_per_sender": state["qps_per_host"],
            "counted": "senders' QP stats: pkts_sent - pkts_retx",
            "timed_run": "sim.wait_for() (the event loop)", "setup_s": t_run - t0,
            "post_s": t_run - t_post, "run_s": t_end - t_run}, state


def run(senders: int, packets_per_sender: int, mode: str = "write1000", topology: str = "auto",
        cc: str = "auto", seed: int = 1, loss: float = 0.0, keep: dict[str, Any] | None = None,
        capture: str | None = None, nic_profile: str = "rxe",
        ack_req_interval: int | None = None) -> dict:
    """One incast run; returns its result (see the module docstring). ``keep``, when given, receives
    the simulation objects (``sim``, ``topo``, ``state``: the verbs state or the FlowSet) for tests;
    ``capture``: a pcap file of the frames on the senders' links (128 bytes of each), for tests."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: choose from {', '.join(MODES)}")
    import_s = _import()
    import rdmasim

    total = senders * packets_per_sender
    t0 = time.perf_counter()
    topo, sim, snd_hosts, rcv_host, facts = build(senders, topology, cc, seed, loss, nic_profile,
                                                  ack_req_interval)
    if capture:
        sim.capture(capture, snaplen=128, links=snd_hosts)
    per_host = total // len(snd_hosts)  # the placeholder has one sender: it sends every packet
    runner = _run_flows if mode in ("flows", "flows1qp") else _run_verbs
    out, state = runner(mode, topo, sim, snd_hosts, rcv_host, per_host, t0)
    if keep is not None:
        keep.update(sim=sim, topo=topo, state=state)
    payload_total = out.pop("payload_bytes_total")
    return finish({
        "simulator": "rdmasim",
        "label": _label(senders, mode, facts),
        "simulates": f"{_setting(senders, facts)}; {SIMULATES[mode]}",
        "scenario": f"incast-{senders}" if not facts["placeholder"] else f"back_to_back-1x{total}",
        "mode": mode,
        "packets_expected": total,
        "payload_bytes": payload_total / out["packets"] if out["packets"] else 0.0,
        "import_s": import_s,
        "timed_whole": "import + topology + setup (verbs objects or flow table, posting) + run",
        "rdmasim_version": getattr(rdmasim, "__version__", "?"),
        **out,
        **facts,
    })


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--mode", choices=MODES, default="write1000", help="; ".join(f"{k}: {v}" for k, v in
                                                                           SIMULATES.items()))
    p.add_argument("--topology", choices=["auto", "incast", "back_to_back"], default="auto",
                   help="auto: incast when rdmasim.topology has it, else the back_to_back placeholder")
    p.add_argument("--cc", choices=["auto", "none", "dcqcn"], default="auto",
                   help="congestion control: auto = DCQCN when rdmasim has it")
    p.add_argument("--loss", type=float, default=0.0,
                   help="i.i.d. loss probability of data frames into the receiver (default 0)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--nic-profile", default="rxe", help="rdmasim.nic profile of every host (rxe, cx6)")
    p.add_argument("--ack-req-interval", type=int, default=None,
                   help="every host's NIC asks for an ACK on every N-th packet (default: the profile's; "
                   "1 = every packet)")
    a = p.parse_args()
    if not 0.0 <= a.loss < 1.0:
        p.error(f"--loss {a.loss}: allowed 0 <= loss < 1")
    for i in range(a.repeat):
        gc.collect()  # free the previous run's reference cycles before timing the next
        r = run(a.senders, a.packets_per_sender, a.mode, a.topology, a.cc, a.seed, a.loss,
                nic_profile=a.nic_profile, ack_req_interval=a.ack_req_interval)
        r["repeat_index"] = i
        emit(r)


if __name__ == "__main__":
    main()
