"""Build a scenario's fabric, post its flows at their start times, run, collect per-flow results."""

from __future__ import annotations

import heapq
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from rdmasim import topology
from rdmasim.results import FlowRecord, RunResult
from rdmasim.scenario.load import Problem, Scenario, ScenarioError, host_names
from rdmasim.sim import Host, Link, Simulator
from rdmasim.trace import COMPLETE, FLAG_CQE, FLAG_RECV
from rdmasim.units import format_time
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

_ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
_OPCODES = {"WRITE": e.IBV_WR_RDMA_WRITE, "READ": e.IBV_WR_RDMA_READ, "SEND": e.IBV_WR_SEND}


@dataclass
class FlowSpec:
    """One flow to run: data moves from ``src`` to ``dst``."""

    flow_id: int
    src: str
    dst: str
    size: int
    start_ps: int
    verb: str
    priority: int


def flow_specs(sc: Scenario) -> list[FlowSpec]:
    """Explicit flows then generated ones, numbered in that order."""
    out: list[FlowSpec] = []
    for row in sc.arrays.get("flows", []):
        out.append(
            FlowSpec(
                len(out), row["src"], row["dst"], row["size"], row["start"], row["verb"], row["priority"]
            )
        )
    if sc.has_incast:
        v = sc.values
        hosts = host_names(v)
        rx = v["traffic.incast.receiver"] or hosts[-1]
        senders = v["traffic.incast.senders"] or [h for h in hosts if h != rx]
        for s in senders:
            out.append(
                FlowSpec(
                    len(out),
                    s,
                    rx,
                    v["traffic.incast.size"],
                    v["traffic.incast.start"],
                    v["traffic.incast.verb"],
                    v["traffic.incast.priority"],
                )
            )
    return out


def _switch_config(v: dict[str, Any]) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "buffer": v["switch.buffer"],
        "reserve": v["switch.reserve"],
        "headroom": v["switch.headroom"],
        "threshold": v["switch.threshold"],
        "alpha_shift": v["switch.alpha_shift"],
        "resume_offset": v["switch.resume_offset"],
        "lossless": v["switch.lossless"],
        "pfc_quanta": v["switch.pfc_quanta"],
        "scheduler": v["switch.scheduler"],
        "ecn_mark": v["switch.ecn_mark"],
        # flow priority p is sent with DSCP 8p; map it to p (48 -> 6 as by default)
        "dscp_map": {8 * p: p for p in range(8)},
    }
    if v["switch.ecn.enabled"]:
        cfg["ecn"] = {
            "kmin": v["switch.ecn.kmin"],
            "kmax": v["switch.ecn.kmax"],
            "pmax": v["switch.ecn.pmax"],
            "priorities": v["switch.ecn.priorities"],
        }
    return cfg


def build(sc: Scenario) -> Simulator:
    """The simulator with the scenario's fabric, congestion control and impairments."""
    v = sc.values
    seed, rate, delay, mtu = v["simulation.seed"], v["link.rate"], v["link.delay"], v["link.mtu"]
    kind = v["topology.kind"]
    common: dict[str, Any] = {"rate": rate, "delay": delay, "mtu": mtu, "seed": seed}
    swc = _switch_config(v)
    if kind == "back_to_back":
        sim = topology.back_to_back(**common).sim
    elif kind == "star":
        sim = topology.star(v["topology.n"], switch_config=swc, **common).sim
    elif kind == "incast":
        sim = topology.incast(v["topology.n_senders"], switch_config=swc, **common).sim
    elif kind == "dumbbell":
        sim = topology.dumbbell(
            v["topology.n_left"],
            v["topology.n_right"],
            bottleneck_rate=v["topology.bottleneck_rate"] or None,
            switch_config=swc,
            **common,
        ).sim
    elif kind == "leaf_spine":
        sim = topology.leaf_spine(
            v["topology.leaves"],
            v["topology.spines"],
            v["topology.hosts_per_leaf"],
            host_rate=rate,
            fabric_rate=v["topology.fabric_rate"] or rate,
            delay=delay,
            mtu=mtu,
            seed=seed,
            switch_config=swc,
        ).sim
    elif kind == "fat_tree":
        sim = topology.fat_tree(v["topology.k"], switch_config=swc, **common).sim
    else:
        sim = Simulator(seed)
        rows = sc.arrays.get("topology.links", [])
        degree: dict[str, int] = {}
        for r in rows:
            for end in (r["a"], r["b"]):
                degree[end] = degree.get(end, 0) + 1
        nodes: dict[str, Any] = {h: sim.add_host(h) for h in v["topology.hosts"]}
        for s in v["topology.switches"]:
            nodes[s] = sim.add_switch(s, **{"ports": max(1, degree.get(s, 1)), **swc})
        for r in rows:
            sim.connect(
                nodes[r["a"]], nodes[r["b"]], rate=r["rate"] or rate, delay=r["delay"] or delay, mtu=mtu
            )
    _impair(sc, sim)
    algo = v["congestion_control.algorithm"]
    if algo == "dcqcn":
        from rdmasim.cc import DcqcnParams

        ov = v["congestion_control.overrides"]
        params = (
            DcqcnParams.nvidia(**ov)
            if v["congestion_control.preset"] == "nvidia"
            else DcqcnParams.paper(**ov)
        )
        for h in sim.hosts.values():
            h.set_congestion_control(
                "dcqcn", params, notification_point=v["congestion_control.notification_point"]
            )
    return sim


def _find_link(sim: Simulator, pair: list[str]) -> Link | None:
    for link in sim.links:
        if {link.a.name, link.b.name} == set(pair):
            return link
    return None


def _impair(sc: Scenario, sim: Simulator) -> None:
    problems: list[Problem] = []
    if sc.values["link.loss"]:
        for link in sim.links:
            link.ab.set_loss(sc.values["link.loss"])
            link.ba.set_loss(sc.values["link.loss"])
    for sec in ("impairments.loss", "impairments.gilbert", "impairments.failures"):
        for i, row in enumerate(sc.arrays.get(sec, [])):
            link = _find_link(sim, row["link"])
            if link is None:
                names = sorted({f"{lk.a.name}-{lk.b.name}" for lk in sim.links})
                problems.append(
                    Problem(
                        sc.file,
                        f"{sec}[{i}].link",
                        "no such link",
                        row["link"],
                        "links: " + ", ".join(names[:20]) + (" ..." if len(names) > 20 else ""),
                    )
                )
                continue
            if sec == "impairments.failures":
                link.fail(at=row["at"])
                if row["recover"] is not None:
                    link.recover(at=row["recover"])
                continue
            dirs = {
                "both": [link.ab, link.ba],
                "forward": [link.direction(row["link"][0])],
                "reverse": [link.direction(row["link"][1])],
            }[row["direction"]]
            for d in dirs:
                if sec == "impairments.loss":
                    d.set_loss(row["probability"])
                else:
                    d.set_gilbert_elliott(
                        row["p_good_to_bad"], row["p_bad_to_good"], row["loss_in_good"], row["loss_in_bad"]
                    )
    if problems:
        raise ScenarioError(problems)


def _prop_from(sim: Simulator, src: Host) -> dict[int, int]:
    """Lowest propagation delay (ps) from ``src`` to every node (by ``id``); hosts do not forward."""
    adj: dict[int, list[tuple[Any, int]]] = {}
    for link in sim.links:
        adj.setdefault(id(link.a), []).append((link.b, link.delay_ps))
        adj.setdefault(id(link.b), []).append((link.a, link.delay_ps))
    dist: dict[int, int] = {id(src): 0}
    heap: list[tuple[int, int, Any]] = [(0, 0, src)]
    n = 1
    while heap:
        d, _, node = heapq.heappop(heap)
        if d > dist.get(id(node), d) or (isinstance(node, Host) and node is not src):
            continue
        for nxt, w in adj.get(id(node), []):
            if d + w < dist.get(id(nxt), 1 << 62):
                dist[id(nxt)] = d + w
                n += 1
                heapq.heappush(heap, (d + w, n, nxt))
    return dist


def ideal_fct_ps(
    sim: Simulator, src: Host, dst: Host, size: int, cache: dict[str, dict[int, int]] | None = None
) -> int:
    """A lower bound on the FCT: size at the slower NIC's line rate plus a round trip of
    propagation delay over the lowest-delay path (headers and store-and-forward excluded).
    ``cache`` (src name -> delays) avoids recomputing paths for many flows."""
    cache = {} if cache is None else cache
    if src.name not in cache:
        cache[src.name] = _prop_from(sim, src)
    prop = cache[src.name].get(id(dst), 0)
    rate = min(src.link.rate_bps if src.link else 1, dst.link.rate_bps if dst.link else 1)
    return -(-size * 8 * 10**12 // rate) + 2 * prop


class _Flow:
    def __init__(self, spec: FlowSpec, req: QP, resp: QP, req_host: Host, cq: CQ) -> None:
        self.spec, self.req, self.resp, self.req_host, self.cq = spec, req, resp, req_host, cq
        self.finish_ps: int | None = None
        self.status = "incomplete"
        self.byte_len = 0


class _Progress:
    def __init__(self, enabled: bool, end_ps: int, stream: TextIO) -> None:
        self.enabled, self.end_ps, self.stream = enabled, end_ps, stream
        self.wall0 = time.perf_counter()
        self.last = 0.0
        self.shown = False

    def show(self, now_ps: int, events: int, done: int, total: int, force: bool = False) -> None:
        if not self.enabled:
            return
        wall = time.perf_counter() - self.wall0
        if not force and wall - self.last < 0.5:
            return
        self.last = wall
        frac = max(now_ps / self.end_ps, done / max(total, 1))
        eta = f"{wall * (1 - frac) / frac:.1f} s" if frac > 0 and done < total else "-"
        rate = events / wall if wall > 0 else 0.0
        self.stream.write(
            f"\r  sim {format_time(now_ps):>12}  {rate / 1e6:6.2f} M events/s  "
            f"flows {done}/{total}  ETA {eta:<8}"
        )
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


class _Stop(Exception):
    pass


def run_scenario(
    sc: Scenario, out_dir: str | None = None, *, progress: bool | None = None, stream: TextIO | None = None
) -> RunResult:
    """Run ``sc`` and return its results (also written to ``out_dir`` or ``[outputs] dir``
    unless ``out_dir`` is ``""``)."""
    v = sc.values
    sim = build(sc)
    specs = flow_specs(sc)
    outdir = v["outputs.dir"] if out_dir is None else out_dir
    if outdir:
        from pathlib import Path

        Path(outdir).mkdir(parents=True, exist_ok=True)
        if v["outputs.pcap"]:
            sim.capture(str(Path(outdir) / "capture.pcap"))
    keep_trace = bool(outdir) and v["outputs.trace"]
    trace = sim.trace()
    # per-host verbs objects and one buffer per host big enough for its largest flow
    need: dict[str, int] = {}
    for s in specs:
        for h in (s.src, s.dst):
            need[h] = max(need.get(h, 0), s.size)
    ctx = {h: Context(sim.hosts[h]) for h in need}
    pds = {h: PD(c) for h, c in ctx.items()}
    mrs = {h: MR(pds[h], n, _ACCESS) for h, n in need.items()}
    flows: list[_Flow] = []
    for s in specs:
        req_name, resp_name = (s.dst, s.src) if s.verb == "READ" else (s.src, s.dst)
        cq_req, cq_resp = CQ(ctx[req_name], 4), CQ(ctx[resp_name], 4)
        req = QP(pds[req_name], QPInitAttr(scq=cq_req, rcq=cq_req, cap=QPCap(max_send_wr=2, max_recv_wr=1)))
        resp = QP(
            pds[resp_name], QPInitAttr(scq=cq_resp, rcq=cq_resp, cap=QPCap(max_send_wr=1, max_recv_wr=2))
        )
        connect_qps(
            req,
            resp,
            path_mtu=v["qp.mtu"],
            timeout=v["qp.timeout"],
            retry_cnt=v["qp.retry_cnt"],
            rnr_retry=v["qp.rnr_retry"],
            traffic_class=(8 * s.priority) << 2,
        )
        flows.append(_Flow(s, req, resp, sim.hosts[req_name], cq_req))
    by_key = {(f.req_host.index, f.req.qp_num, f.spec.flow_id): f for f in flows}
    end_ps = v["simulation.duration"]
    prog = _Progress(
        v["simulation.progress"] if progress is None else progress,
        end_ps,
        stream if stream is not None else sys.stderr,
    )
    kept: list[np.ndarray] = []
    done = 0

    def drain() -> None:
        nonlocal done
        rec = trace.drain()
        if keep_trace:
            kept.append(rec)
        c = rec[
            (rec["kind"] == COMPLETE) & ((rec["flags"] & FLAG_CQE) != 0) & ((rec["flags"] & FLAG_RECV) == 0)
        ]
        for r in c:
            f = by_key.get((int(r["node"]), int(r["qpn"]), int(r["wr_id"])))
            if f is not None and f.finish_ps is None:
                f.finish_ps = int(r["t_ps"])
                f.status = (
                    "ok" if int(r["status"]) == e.IBV_WC_SUCCESS else e.wc_status_to_str(int(r["status"]))
                )
                f.byte_len = int(r["len"])
                done += 1

    def cb(now: int, events: int) -> None:
        drain()
        prog.show(now, events, done, len(flows))
        if done == len(flows) and now >= last_start:
            raise _Stop

    order = sorted(flows, key=lambda f: (f.spec.start_ps, f.spec.flow_id))
    last_start = order[-1].spec.start_ps if order else 0
    wall0 = time.perf_counter()
    i = 0
    try:
        while i < len(order) and order[i].spec.start_ps <= end_ps:
            t = order[i].spec.start_ps
            if t > sim.now:
                sim.run(until=t, progress=cb, chunk_events=200_000)
            while i < len(order) and order[i].spec.start_ps == t:
                _post(order[i], mrs)
                i += 1
        # then run until each flow's requester CQ has its completion (exact stop at the last one)
        for f in flows:
            if f.finish_ps is None and sim.now < end_ps:
                _run_until_cq(sim, f.cq, end_ps, cb)
    except _Stop:
        pass
    drain()
    prog.show(sim.now, sim.events, done, len(flows), force=True)
    prog.close()
    wall = time.perf_counter() - wall0
    if outdir and v["outputs.pcap"]:
        sim.close_capture()
    trace_records = np.concatenate(kept) if kept else None
    trace.stop()
    records = []
    paths: dict[str, dict[int, int]] = {}
    for f in flows:
        s = f.spec
        src_stats = (f.resp if s.verb == "READ" else f.req).stats()
        dst_stats = (f.req if s.verb == "READ" else f.resp).stats()
        ideal = ideal_fct_ps(sim, sim.hosts[s.src], sim.hosts[s.dst], s.size, paths)
        fct = None if f.finish_ps is None else f.finish_ps - s.start_ps
        delivered = int(dst_stats["bytes_rcvd"]) if s.verb != "READ" else f.byte_len
        records.append(
            FlowRecord(
                flow_id=s.flow_id,
                src=s.src,
                dst=s.dst,
                verb=s.verb,
                size=s.size,
                priority=s.priority,
                start_ps=s.start_ps,
                finish_ps=f.finish_ps,
                fct_ps=fct,
                ideal_fct_ps=ideal,
                slowdown=None if fct is None else fct / ideal,
                bytes_delivered=delivered,
                retx_pkts=int(f.req.stats()["pkts_retx"]) + int(f.resp.stats()["pkts_retx"]),
                cnps=int(src_stats["cnps_rcvd"]) + int(dst_stats["cnps_rcvd"]),
                status=f.status,
            )
        )
    switches = {name: {"totals": sw.totals(), "ports": sw.stats()} for name, sw in sim.switches.items()}
    result = RunResult(
        flows=records,
        switches=switches,
        seed=v["simulation.seed"],
        sim_time_ps=sim.now,
        events=sim.events,
        wall_s=wall,
        scenario_text=sc.text,
        scenario_file=sc.file,
        name=v["simulation.name"],
    )
    if outdir:
        result.write(
            outdir,
            formats=v["outputs.formats"],
            switch_counters=v["outputs.switch_counters"],
            trace=trace_records if keep_trace else None,
            node_names=trace.node_names,
        )
    return result


def _run_until_cq(sim: Simulator, cq: CQ, end_ps: int, cb: Any) -> None:
    """Like Simulator.wait_for(cq, 1) without polling, calling ``cb`` every chunk of events."""
    from rdmasim import _core

    while True:
        reason = sim._core.run(end_ps, 200_000, cq._host.index, cq._handle, 1)
        if reason in (_core.RUN_PEER, _core.RUN_STEP):
            continue
        if reason != _core.RUN_MAX_EVENTS:
            return
        cb(sim.now, sim.events)


def _post(f: _Flow, mrs: dict[str, MR]) -> None:
    s = f.spec
    src_mr, dst_mr = mrs[s.src], mrs[s.dst]
    if s.verb == "WRITE":
        wr = SendWR(wr_id=s.flow_id, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src_mr.buf, s.size, src_mr.lkey)])
        wr.set_wr_rdma(dst_mr.rkey, dst_mr.buf)
    elif s.verb == "READ":
        wr = SendWR(wr_id=s.flow_id, opcode=e.IBV_WR_RDMA_READ, sg=[SGE(dst_mr.buf, s.size, dst_mr.lkey)])
        wr.set_wr_rdma(src_mr.rkey, src_mr.buf)
    else:
        f.resp.post_recv(RecvWR(wr_id=s.flow_id, sg=[SGE(dst_mr.buf, s.size, dst_mr.lkey)]))
        wr = SendWR(wr_id=s.flow_id, opcode=e.IBV_WR_SEND, sg=[SGE(src_mr.buf, s.size, src_mr.lkey)])
    f.req.post_send(wr)


__all__ = ["FlowSpec", "build", "flow_specs", "ideal_fct_ps", "run_scenario"]
