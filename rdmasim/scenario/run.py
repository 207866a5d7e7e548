"""Build a scenario's fabric, hand its flows to the C core as arrays, run, collect results."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

import numpy as np

from rdmasim import fabric, topology
from rdmasim.cc.plugin import get_plugin
from rdmasim.results import (
    FlowRecord,
    RunResult,
    commit_out_dir,
    discard_staging,
    remove_stale_staging,
    stage_out_dir,
    write_error,
)
from rdmasim.scenario.ideal import ideal_fct_ps
from rdmasim.scenario.load import Problem, Scenario, ScenarioError, flow_control
from rdmasim.scenario.traffic import analysis, collective_rows, halo_rows, sim_host_indices, traffic_table
from rdmasim.scenario.uet_checks import target_warnings
from rdmasim.scenario.window import window_caps
from rdmasim.sim import Link, Simulator
from rdmasim.transport import uet as uet_transport
from rdmasim.units import format_time
from rdmasim.workload.flows import VERB_NAMES, FlowSamples, describe_status
from rdmasim.workload.traffic.table import LOCAL


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
        "pfc_response": v["switch.pfc_response"],
        "latency": v["switch.latency"],
        "scheduler": v["switch.scheduler"],
        "ecn_mark": v["switch.ecn_mark"],
        "path_select": v["switch.path_select"],
        "ar_band": v["switch.ar_band"],
        "trimming": v["switch.trimming"],
        "trim_threshold": v["switch.trim_threshold"],
        "trim_priority": v["switch.trim_priority"],
        # flow priority p is sent with DSCP 8p; map it to p (48 -> 6 as by default)
        "dscp_map": {8 * p: p for p in range(8)},
    }
    if v["switch.ecn.enabled"]:
        prios = list(v["switch.ecn.priorities"])
        if flow_control(v) == "credits":  # a credit port's egress queues are VLs: SL s is on VL s mod vls
            prios = sorted({p % v["switch.credits.vls"] for p in prios})
        cfg["ecn"] = {
            "kmin": v["switch.ecn.kmin"],
            "kmax": v["switch.ecn.kmax"],
            "pmax": v["switch.ecn.pmax"],
            "priorities": prios,
        }
    return cfg


def build(sc: Scenario) -> Simulator:
    """The simulator with the scenario's fabric, congestion control and impairments."""
    v = sc.values
    seed, rate, delay, mtu = v["simulation.seed"], v["link.rate"], v["link.delay"], v["link.mtu"]
    kind = v["topology.kind"]
    common: dict[str, Any] = {"rate": rate, "delay": delay, "mtu": mtu, "seed": seed}
    threads, parts = v["simulation.threads"], v["simulation.partitions"] or None
    if v["link.layer"] != "roce" or threads > 1 or parts:  # the builders take the simulator made here
        common["sim"] = Simulator(seed, link_layer=v["link.layer"], threads=threads, partitions=parts)
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
            sim=common.get("sim"),
            switch_config=swc,
        ).sim
    elif kind == "fat_tree":
        sim = topology.fat_tree(v["topology.k"], switch_config=swc, **common).sim
    elif kind == "dragonfly":
        sim = topology.dragonfly(
            v["topology.routers_per_group"], v["topology.hosts_per_router"], v["topology.global_per_router"],
            groups=v["topology.groups"] or None, routing=v["topology.routing"],
            hop_classes=v["topology.hop_classes"],
            global_rate=v["topology.global_rate"] or None, switch_config=swc, **common,
        ).sim
    elif kind == "rail_optimized":
        sim = topology.rail_optimized(
            v["topology.nodes"], v["topology.gpus_per_node"], v["topology.spines"],
            nodes_per_unit=v["topology.nodes_per_unit"] or None, host_rate=rate,
            fabric_rate=v["topology.fabric_rate"] or rate, delay=delay, mtu=mtu, seed=seed, switch_config=swc,
            sim=common.get("sim"),
        ).sim
    else:
        sim = common.get("sim") or Simulator(seed)
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
    credits = flow_control(v) == "credits"
    if credits or v["switch.lft"] != "none":
        from rdmasim.fabric import ib as ib_fabric

        if credits:
            ib_fabric.enable_credits(sim, vls=v["switch.credits.vls"], buffer=v["switch.credits.buffer"])
            if v["switch.credits.victim_mask"] != "none":
                for sw in sim.switches.values():
                    ib_fabric.set_victim_mask(sw, v["switch.credits.victim_mask"])
        if sim.switches and v["switch.lft"] != "none":
            ib_fabric.route_lft(sim, v["switch.lft"])
    if sim.switches and v["switch.watchdog.enabled"]:
        fabric.enable_pfc_watchdog(sim, v["switch.watchdog.poll"], v["switch.watchdog.detect"],
                                   v["switch.watchdog.restore"])
    if sim.switches and v["switch.deadlock_check"]:
        fabric.enable_deadlock_detector(sim, v["switch.deadlock_check"])
    from rdmasim.transport import nic

    profile = nic.get_profile(v["nic.profile"], **v["nic.overrides"])
    for h in sim.hosts.values():
        h.set_nic_profile(profile)
    algo = v["congestion_control.algorithm"]
    if algo == "dcqcn":
        from rdmasim.cc import DcqcnParams

        ov = v["congestion_control.overrides"]
        if v["congestion_control.preset"] == "nic":
            params = profile.dcqcn_params(**ov)
        elif v["congestion_control.preset"] == "nvidia":
            params = DcqcnParams.nvidia(**ov)
        else:
            params = DcqcnParams.paper(**ov)
        for h in sim.hosts.values():
            h.set_congestion_control(
                "dcqcn", params, notification_point=v["congestion_control.notification_point"]
            )
    elif algo in ("timely", "swift", "hpcc", "nscc"):
        from rdmasim.cc import params_class

        delay_cc = params_class(algo).from_scenario(v)
        for h in sim.hosts.values():
            h.set_congestion_control(
                algo, delay_cc, notification_point=v["congestion_control.notification_point"]
            )
    elif algo == "dctcp":
        from rdmasim.cc.dctcp import DctcpParams

        dctcp = DctcpParams.from_scenario(v)
        for h in sim.hosts.values():
            h.set_congestion_control(
                "dctcp", dctcp, notification_point=v["congestion_control.notification_point"]
            )
    elif get_plugin(algo) is not None:  # a C plug-in (rdmasim.cc_plugin), its [congestion_control.plugin]
        for h in sim.hosts.values():
            h.set_congestion_control(algo, dict(v["congestion_control.plugin"]),
                                     notification_point=v["congestion_control.notification_point"])
    elif algo == "ibcc":
        from rdmasim.cc.ibcc import IbccParams

        ibcc = IbccParams.from_scenario(v)
        for h in sim.hosts.values():
            h.set_congestion_control(
                "ibcc", ibcc, notification_point=v["congestion_control.notification_point"]
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
    for sec in ("impairments.loss", "impairments.gilbert", "impairments.failures", "impairments.slow_links"):
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
                if sec == "impairments.slow_links":
                    d.set_rate(row["rate"])
                    if link.ab.rate_bps == link.ba.rate_bps:  # the ideal FCT's rate (a lower bound)
                        link.rate_bps = link.ab.rate_bps
                elif sec == "impairments.loss":
                    d.set_loss(row["probability"])
                else:
                    d.set_gilbert_elliott(
                        row["p_good_to_bad"], row["p_bad_to_good"], row["loss_in_good"], row["loss_in_bad"]
                    )
    if problems:
        raise ScenarioError(problems)


class _Progress:
    """The progress bar of one run: fraction done (simulated time of the duration, or flows
    finished), simulated time, event rate, flows finished."""

    def __init__(self, enabled: bool | None, end_ps: int, stream: TextIO | None, desc: str) -> None:
        from rdmasim.progress import Progress

        self.end_ps = end_ps
        self.bar = Progress(desc, enabled, stream)
        self.wall0 = time.perf_counter()

    def show(self, now_ps: int, events: int, done: int, total: int, force: bool = False) -> None:
        if not self.bar.enabled:
            return
        wall = time.perf_counter() - self.wall0
        frac = max(now_ps / self.end_ps, done / max(total, 1))
        rate = events / wall if wall > 0 else 0.0
        self.bar.update(frac if done < total else 1.0,
                        f"sim {format_time(now_ps)}, {rate / 1e6:.2f} M events/s, flows {done}/{total}")

    def close(self) -> None:
        self.bar.close()


def _queue_sampler(sim: Simulator, priorities: set[int], period_ps: int) -> tuple[Any, list[str]] | None:
    """A QueueSampler on every switch egress port at the flows' priorities (None: no switches)."""
    from rdmasim.fabric import QueueSampler

    probes, labels = [], []
    for name, sw in sim.switches.items():
        for port, link in enumerate(sw.ports):
            peer = link.b if link.a is sw else link.a
            for prio in sorted(priorities):
                probes.append((sw, port, prio))
                labels.append(f"{name}:{port}->{peer.name} p{prio}")
    if not probes:
        return None
    cap = max(16, min(100_000, 20_000_000 // len(probes)))
    return QueueSampler(sim, probes, period=period_ps, max_samples=cap), labels


def _free(folder: Path) -> bool:
    """Nothing is in ``folder``: it is missing or an empty folder."""
    if not folder.exists():
        return True
    return folder.is_dir() and not any(folder.iterdir())


def results_dir(sc: Scenario, out_dir: str | None = None) -> tuple[str, str]:
    """The folder a run of ``sc`` writes into, and a note on it for the user ("" when there is
    nothing to say).

    ``out_dir`` (given) or ``[outputs] dir`` (in the file) is used as it is: a previous run's
    results there are replaced (the note says so). Without either, the default
    ``results/<name>`` (:func:`rdmasim.scenario.load.default_results_dir`) is never replaced: when
    it holds anything, the first free ``results/<name>-2``, ``-3``, ... is used and the note names
    the folder it passed over."""
    if out_dir is not None or not sc.numbered_out_dir:
        chosen = str(sc.values["outputs.dir"] if out_dir is None else out_dir)
        taken = bool(chosen) and (Path(chosen) / "metadata.json").is_file()
        return chosen, "replaced the earlier run there" if taken else ""
    base = str(sc.values["outputs.dir"])
    if _free(Path(base)):
        return base, ""
    n = 2
    while not _free(Path(f"{base}-{n}")):
        n += 1
    what = "holds an earlier run" if (Path(base) / "metadata.json").is_file() else "is not empty"
    return f"{base}-{n}", f"{base} {what}"


def run_scenario(
    sc: Scenario, out_dir: str | None = None, *, progress: bool | None = None, stream: TextIO | None = None,
    label: str | None = None,
) -> RunResult:
    """Run ``sc`` and return its results (also written to ``out_dir`` or ``[outputs] dir``
    unless ``out_dir`` is ``""``; without either, to ``results/<name>``, numbered rather than
    replacing an earlier run: :func:`results_dir`).

    The results folder is checked before the run (a file, a folder of other files or an
    unwritable place is an error then, not after the simulation) and written whole or not at all
    (:mod:`rdmasim.results`); hidden folders that killed runs left beside it are removed first
    (``RunResult.removed_stale``). Ctrl-C (KeyboardInterrupt) during the simulation stops it: the
    flows so far are written, unfinished ones ``incomplete``, with ``"complete": false`` in
    metadata.json, and ``RunResult.interrupted`` is True.

    ``progress``: True draws a progress bar on ``stream`` (default stderr), False none, None (the
    default) one when ``[simulation] progress`` is on and the stream is a terminal; ``label`` names
    the bar (default: the scenario's name)."""
    outdir = results_dir(sc, out_dir)[0]
    removed = remove_stale_staging(outdir) if outdir else []
    staging = stage_out_dir(outdir) if outdir else None
    try:
        result = _run(sc, staging, progress, stream, label)
        result.removed_stale = removed
        if staging is not None:
            commit_out_dir(staging, outdir)
            staging_files = result.files
            result.files = {k: str(Path(outdir) / Path(p).relative_to(staging))
                            for k, p in staging_files.items()}
    except OSError as exc:
        discard_staging(staging)
        raise write_error(outdir, exc) from exc
    except BaseException:
        discard_staging(staging)
        raise
    return result


def add_scenario_flows(sc: Scenario, sim: Simulator, table: Any, names: list[str]) -> Any:
    """Hand the scenario's flow table to ``sim`` (:meth:`Simulator.add_flows`, the one check of
    every flow column: start times, sizes, priorities) and return the FlowSet. Both ``rdmasim
    validate`` and ``rdmasim run`` go through here; a value the core refuses becomes a
    :class:`ScenarioError` naming the flow's key (``flows[i]`` or the generator that made it)."""
    v = sc.values
    to_sim = sim_host_indices(names, sim.hosts)
    flows = table.flows
    cols = {
        "src": to_sim[flows["src"]], "dst": to_sim[flows["dst"]], "size": flows["size"],
        "start_ps": flows["start_ps"], "verb": flows["verb"], "priority": flows["priority"],
        "hold_ps": flows["hold_ps"], "after": flows["after"],
    }
    # the table with hosts mapped to the simulator's indices
    mapped = SimpleNamespace(flows=cols, dep_ptr=table.dep_ptr, deps=table.deps, groups=table.groups,
                             dep_on=table.dep_on, need=table.need)
    try:
        if v["transport.kind"] == "uet":
            uet = {"mode": v["uet.mode"], "lb": v["uet.lb"], "cc": v["uet.cc"],
                   "window": v["uet.window"] or None, "reorder_packets": v["uet.reorder_packets"],
                   "ack_every": v["uet.ack_every"], "rto": v["uet.rto"], "trim": v["uet.trim"],
                   "rto_estimate": v["uet.rto_estimate"], "rto_min": v["uet.rto_min"],
                   "rto_max": v["uet.rto_max"], "nscc_base_rtt": v["uet.nscc_base_rtt"] or None,
                   "place_bytes": v["uet.place_bytes"], "target_buffer": v["uet.target_buffer"] or None,
                   "max_pdcs": v["uet.max_pdcs"] or None, "target_access": v["uet.target_access"],
                   "idle_close": v["uet.idle_close"]}
            return sim.add_flows(mapped, mtu=v["qp.mtu"], transport="uet", uet=uet)
        return sim.add_flows(mapped, mtu=v["qp.mtu"], timeout=v["qp.timeout"], retry_cnt=v["qp.retry_cnt"],
                             rnr_retry=v["qp.rnr_retry"],
                             recovery=None if v["qp.recovery"] == "nic" else v["qp.recovery"],
                             irn_window=v["qp.irn_window"] or None)
    except ValueError as exc:
        raise ScenarioError([Problem(sc.file, _flow_key(sc, table, str(exc)), str(exc))]) from None


def _flow_key(sc: Scenario, table: Any, message: str) -> str:
    """The key a flow row the core refused came from: ``flows[i]`` for a row of ``[[flows]]``,
    ``traffic.<generator>`` for a generated one (``flows`` when the message names no row)."""
    import re

    m = re.search(r"\brow (\d+)\b", message)
    if m is None:
        return "flows"
    row = int(m.group(1))
    g = int(table.flows["group"][row]) if row < len(table.flows) else -1
    group = table.groups[g] if 0 <= g < len(table.groups) else ""
    if group == "flows":
        return f"flows[{int(np.count_nonzero(table.flows['group'][:row] == g))}]"
    gen = group.replace("-", "_")
    if gen in sc.generators:
        return f"traffic.{gen}"
    return f"traffic ({group})" if group else "flows"


def _run(sc: Scenario, staging: Path | None, progress: bool | None,
         stream: TextIO | None, label: str | None = None) -> RunResult:
    v = sc.values
    table, names = traffic_table(sc)
    sim = build(sc)
    if staging is not None and v["outputs.pcap"]:
        sim.capture(str(staging / "capture.pcap"), snaplen=v["outputs.pcap_snaplen"] or None)
    keep_trace = staging is not None and v["outputs.trace"]
    trace = sim.trace() if keep_trace else None
    to_sim = sim_host_indices(names, sim.hosts)
    flows = table.flows
    fs = add_scenario_flows(sc, sim, table, names)
    held_back = window_caps(sc, sim, table, names) + target_warnings(sc, table)
    end_ps = v["simulation.duration"]
    interval = v["outputs.sample_interval"]
    qs = _queue_sampler(sim, {int(p) for p in np.unique(flows["priority"])}, interval) if interval else None
    prog = _Progress(
        (None if v["simulation.progress"] else False) if progress is None else progress,
        end_ps,
        stream,
        label or v["simulation.name"] or "run",
    )
    kept: list[np.ndarray] = []

    def cb(now: int, events: int, counts: dict[str, int]) -> None:
        if trace is not None:
            kept.append(trace.drain(keep=False))
        prog.show(now, events, counts["finished"], counts["total"])

    wall0 = time.perf_counter()
    interrupted = False
    try:
        # a run split into partitions cannot stop after a number of events: no progress reports
        samples = sim.run_flows(until=end_ps, sample_every=interval or None,
                                progress=None if sim._partitioned else cb)
    except KeyboardInterrupt:  # stop here; the flows so far are results (marked incomplete)
        interrupted, samples = True, None
    if trace is not None:
        kept.append(trace.drain(keep=False))
    sim.trim_pool()  # every packet delivered: the results step need not sit on the pool's peak
    c = sim._flows_core().counts()
    prog.show(sim.now, sim.events, c["finished"], c["total"], force=True)
    prog.close()
    wall = time.perf_counter() - wall0
    if staging is not None and v["outputs.pcap"]:
        sim.close_capture()
    trace_records = np.concatenate(kept) if kept else None
    if trace is not None:
        trace.stop()
    res = fs.results()
    ideal = ideal_fct_ps(sim, res["src"], res["dst"], res["size_bytes"],
                         verb=np.array(VERB_NAMES, dtype=object)[res["verb"]], mtu=v["qp.mtu"],
                         link_layer=int(v["link.layer"] == "ib"), definition=v["outputs.ideal_fct"])
    ideal[res["verb"] == LOCAL] = 0  # no packets: no network time to compare with
    records = _records(res, ideal, names, to_sim, flows["group"], table.groups)
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
        ideal_fct=v["outputs.ideal_fct"],
        overrides=dict(sc.overrides),
    )
    result.flow_samples = samples
    result.warnings = [str(w) for w in held_back]
    result.collectives = (collective_rows(sc, res, flows["group"], table.groups, v["link.rate"])
                          + halo_rows(sc, res, flows["group"], table.groups))
    for row in result.collectives:  # where each one's time went (docs/hpc-patterns.md)
        row.update(analysis(table, res, row["collective"], sim))
    result.interrupted = interrupted
    if sim.switches and v["switch.deadlock_check"]:
        result.deadlock = fabric.deadlock(sim)
    elif sim.switches and any(r.status != "ok" for r in records):  # stuck? one look (PFC or credits)
        result.deadlock = fabric.check_deadlock(sim)
    from rdmasim.fabric import ib as ib_fabric

    for h in sim.hosts.values():
        if h.link:
            result.host_rate_bps[h.name] = float(h.link.rate_bps)
        tx = h.link.direction(h.name).stats() if h.link else {}
        rx = (h.link.ba if h.link.a is h else h.link.ab).stats() if h.link else {}
        ps = h.pause_stats()
        cs = ib_fabric.credit_stats(h) if h.link else None
        result.nics[h.name] = {
            "tx_frames": tx.get("frames", 0), "tx_bytes": tx.get("bytes", 0),
            "tx_dropped": tx.get("dropped", 0),
            "rx_frames": rx.get("delivered", 0), "rx_bytes": rx.get("bytes", 0),
            "pfc_rx_frames": ps["pfc_rx_frames"], "paused_ps": ps["paused_ps"],
            "credit_stall_ps": list(cs["credit_stall_ps"]) if cs else [],
        }
    if v["transport.kind"] == "uet":  # each host's PDC counters (docs/uet.md): table uet_endpoints
        result.uet_endpoints = {h.name: uet_transport.endpoint_stats(sim, h) for h in sim.hosts.values()}
    if qs is not None:
        result.queue_samples = {**qs[0].arrays(), "labels": qs[1]}
    if staging is not None:
        result.write_into(
            staging,
            formats=v["outputs.formats"],
            switch_counters=v["outputs.switch_counters"],
            trace=trace_records if keep_trace else None,
            node_names=trace.node_names if trace is not None else None,
        )
        if v["outputs.plots"]:
            result.files.update(result.plot(staging / "plots"))
    return result


def _records(res: np.ndarray, ideal: np.ndarray, names: list[str], to_sim: np.ndarray, group: np.ndarray,
             groups: list[str]) -> list[FlowRecord]:
    name_of = {int(i): n for i, n in zip(to_sim, names, strict=True)}
    out = []
    for k, r in enumerate(res.tolist()):
        row = dict(zip(res.dtype.names or (), r, strict=True))
        done = row["finish_ps"] >= 0
        fct = row["fct_ps"] if done else None
        g = int(group[k])
        out.append(FlowRecord(
            flow_id=row["flow_id"], src=name_of[row["src"]], dst=name_of[row["dst"]],
            verb=VERB_NAMES[row["verb"]],
            size_bytes=row["size_bytes"], priority=row["priority"],
            # when it actually started (later than planned when it waited for dependencies)
            start_ps=row["started_ps"] if row["started_ps"] >= 0 else row["start_ps"],
            finish_ps=row["finish_ps"] if done else None, fct_ps=fct, ideal_fct_ps=int(ideal[k]),
            slowdown=None if fct is None or not ideal[k] else fct / int(ideal[k]),
            bytes_delivered=row["bytes_delivered"],
            retx_pkts=row["retx_pkts"], cnps=row["cnps"],
            status="incomplete" if not done else describe_status(row["status"]),
            pause_ps=row["pause_ps"], group=groups[g] if 0 <= g < len(groups) else "",
            nack_pkts=row["nack_pkts"], trimmed_pkts=row["trimmed_pkts"],
        ))
    return out


__all__ = ["FlowSamples", "build", "ideal_fct_ps", "results_dir", "run_scenario"]
