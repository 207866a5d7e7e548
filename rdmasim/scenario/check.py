"""What ``rdmasim validate`` checks beyond the schema: that the fabric can be built and takes the
flows, and how much memory, disk and time a run will take (an estimate, refused when it cannot
fit).

The estimate adds up the structures that grow with the input (see docs/scenarios.md, "How big a
run is"): the switches' routing tables (one entry per destination host and port), per-port and
per-host state, the per-flow results, the time series ``outputs.sample_interval`` records and the
event trace (at most :data:`rdmasim.trace.DEFAULT_MAX_RECORDS` records). The simulated time it
assumes is the busiest host's bytes at line rate after the last start (the bottleneck link's for
a dumbbell; half as long again on multi-path fabrics, where flows share links; bounded by
``simulation.duration``); runs slowed by loss or congestion take longer. Events are the packets'
(per hop) plus the timers': every poll of the PFC watchdog and of the deadlock check is an event
that looks at every switch egress queue. Wall time is calibrated against measured runs
(``bench/estimate_calibration.py``): the event loop slows as the fabric grows (its state
outgrows the caches), and setting up a run takes time per host and per flow.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rdmasim.scenario.load import Problem, Scenario, ScenarioError, switch_ports

#: routing tables in the C core, per switch: a row index (uint32) per destination host and a row
#: (a uint16 count and uint16 next-hop ports) per leaf switch and per host of its own
_ROUTE_INDEX = 4
_ROUTE_ENTRY = 2
#: a packet in the C core's pool (rs_pkt, 368 bytes, in 64-byte aligned slab slots)
_PACKET_BYTES = 384
#: state per switch port (queues, MMU counters of 8 priorities, statistics)
_PORT_BYTES = 2_048
#: state per host (NIC, queue-pair tables, statistics)
_HOST_BYTES = 8_192
#: per flow: its row in C, its result record and table rows in Python
_FLOW_BYTES = 2_048
#: per sampling step of outputs.sample_interval (arrays and their bookkeeping) and per sample row
_SAMPLE_STEP_BYTES = 450
_SAMPLE_ROW_BYTES = 32
#: rows run_flows keeps at most (rdmasim.flows.run_flows max_samples)
_MAX_SAMPLE_ROWS = 10_000_000
#: trace records (outputs.trace) per data packet and hop (TX and RX) and per data packet (the
#: responder's ACCEPT, the ACKs), measured
_TRACE_RECORDS_PER_HOP = 2.0
_TRACE_RECORDS_PER_PACKET = 1.5
#: memory per trace record kept: the C buffer's 64 bytes, the chunks drained, their concatenation
_TRACE_RECORD_MEMORY = 3 * 64
#: bytes per trace record in trace.npz (compressed; measured 6.4)
_TRACE_RECORD_FILE = 10
#: a pcap record header, the headers of a RoCEv2 data frame (Ethernet, IPv4, UDP, BTH, ICRC) and an
#: acknowledgement frame (with its AETH)
_PCAP_RECORD = 16
_DATA_HEADERS = 58
_ACK_FRAME = 62
#: ACK frames per data packet (the AckReq cadence, congestion notifications; upper side)
_ACKS_PER_PACKET = 0.25
#: bytes per row of the tables written (flows, ports, samples)
_TABLE_ROW_BYTES = 200
#: a memory-resident base: the interpreter, numpy and the core
_BASE_BYTES = 150_000_000
#: event-loop time per event: a base plus a part per host (the fabric's state outgrows the caches);
#: measured: 0.07-0.4 us with 4-16 hosts, 0.8 us with 128, 2.6-3.3 us with 1,024
_EVENT_S = 0.15e-6
_EVENT_PER_HOST_S = 3e-9
#: ... up to this many hosts: beyond, the state is out of the caches anyway (measured: 214 s of CPU
#: for the 89.7 M events of an 8,192-host fat tree, about the per-event time of 1,024 hosts)
_EVENT_HOSTS_MAX = 1_024
#: a monitor poll (PFC watchdog, deadlock check): the event, and 8 egress queues of every switch port
#: looked at (measured: 0.16 us a poll with 4 ports, 3 us with 80)
_POLL_S = 0.05e-6
_QUEUE_CHECK_S = 4.5e-9
#: setting a run up and collecting its results: fixed, per host (the fabric, its routes), per flow
_SETUP_S = 0.005
_SETUP_PER_HOST_S = 1.5e-3
_SETUP_PER_FLOW_S = 2e-5
#: writing the capture: time per byte (payload copy, ICRC, the file; measured 4.3 ns)
_CAPTURE_BYTE_S = 5e-9
#: tracing: time per record recorded, and per record kept (drained, concatenated, compressed into
#: trace.npz; measured 3.7 us)
_TRACE_RECORD_S = 0.3e-6
_TRACE_KEPT_S = 3.5e-6
#: routing-table work (entries per second)
_OPS_PER_S = 2e8
#: runs estimated longer than this get a warning
_LONG_S = 3600.0
#: fabrics whose flows share links on several paths: the busiest link sees more than a host's bytes
_SHARED_PATHS = {"leaf_spine", "fat_tree", "dragonfly", "rail_optimized", "explicit"}
_SHARED_PATH_FACTOR = 1.5

#: links a packet crosses on the longest path
_HOPS = {
    "back_to_back": 1,
    "star": 2,
    "incast": 2,
    "dumbbell": 3,
    "leaf_spine": 4,
    "fat_tree": 6,
    "dragonfly": 7,
    "rail_optimized": 4,
    "explicit": 4,
}


@dataclass
class Estimate:
    """Memory (bytes), files (bytes) and time a run is expected to take, and what they are made
    of (``parts``: memory, ``disk_parts``: the files written)."""

    memory_bytes: int
    events: int
    wall_s: float
    sim_time_ps: int
    parts: dict[str, int] = field(default_factory=dict)
    disk_bytes: int = 0
    disk_parts: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: memory, files written, simulated time, events, wall time, and the largest
        parts."""
        from rdmasim.units import format_time

        top = sorted(self.parts.items(), key=lambda kv: -kv[1])[:3]
        parts = ", ".join(f"{k} {_mb(v)}" for k, v in top if v >= 1e6)
        disk = ""
        if self.disk_bytes >= 1e7:
            big = sorted(self.disk_parts.items(), key=lambda kv: -kv[1])[:2]
            what = ", ".join(f"{k} {_mb(v)}" for k, v in big if v >= 1e6)
            disk = f"; writes ~{_mb(self.disk_bytes)}{f' ({what})' if what else ''}"
        return (
            f"estimated memory {_mb(self.memory_bytes)}{f' ({parts})' if parts else ''}{disk}; "
            f"~{format_time(self.sim_time_ps)} "
            f"simulated, ~{self.events:,} events, ~{_dur(self.wall_s)}"
        )


def _mb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _dur(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 60:.0f} min" if s >= 60 else f"{s:.1f} s"


def physical_memory() -> int:
    """Bytes of RAM of this machine (0 if unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def free_space(folder: str | Path) -> tuple[Path, int]:
    """(the folder whose file system holds ``folder``: it or its nearest existing parent, the
    bytes free there); -1 when unknown."""
    p = Path(folder or ".").absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return p, int(shutil.disk_usage(p).free)
    except OSError:
        return p, -1


def _sim_time_ps(v: dict[str, Any], flows: Any, names: list[str]) -> float:
    """The simulated time a run takes at least: the busiest host (or bottleneck link) at line rate
    after the last start, plus round trips; more on fabrics where flows share links."""
    size = flows["size"].astype(np.float64)
    start = flows["start_ps"].astype(np.float64)
    per_host = max(np.bincount(flows["src"], weights=size).max(),
                   np.bincount(flows["dst"], weights=size).max())
    rate = v["link.rate"]
    busy = per_host * 8 / rate * 1e12
    kind = v["topology.kind"]
    if kind == "dumbbell":  # every left-right flow crosses the one bottleneck link
        side = np.array([n[:1] for n in names])
        cross = side[flows["src"]] != side[flows["dst"]]
        both = [size[cross & (side[flows["src"]] == s)].sum() for s in ("l", "r")]
        from rdmasim.units import parse_rate

        brate = parse_rate(v["topology.bottleneck_rate"]) if v["topology.bottleneck_rate"] else rate
        busy = max(busy, max(both) * 8 / brate * 1e12)
    elif kind in _SHARED_PATHS:
        busy *= _SHARED_PATH_FACTOR
    # plus a few round trips (connection, the last ACKs) and the NICs' turnaround
    return float(start.max()) + busy + 2 * _HOPS[kind] * v["link.delay"] + 5_000_000


def _in_flight(v: dict[str, Any], flows: Any, n_hosts: int) -> int:
    """Packets in the fabric at once, upper side: every flow its NIC window (or its packets, if
    fewer) at the same time, and at most a window per host."""
    from rdmasim.transport import nic

    if not len(flows["size"]):
        return 0
    window = nic.get_profile(v["nic.profile"], **v["nic.overrides"]).max_unacked_psns + 1
    per_flow = np.minimum(np.ceil(flows["size"] / v["qp.mtu"]), window)
    return int(min(per_flow.sum(), n_hosts * window))


def estimate(sc: Scenario, table: Any = None) -> Estimate:
    """Estimate the memory, files and time of running ``sc`` (``table``: its traffic table, made if
    None)."""
    from rdmasim.scenario.load import host_names
    from rdmasim.scenario.traffic import traffic_table
    from rdmasim.trace import DEFAULT_MAX_RECORDS

    v = sc.values
    names = host_names(v)
    if table is None:
        table, _ = traffic_table(sc)
    n_hosts = len(names)
    ports = switch_ports(sc)
    total_ports = sum(ports)
    flows = table.flows
    n_flows = len(flows["size"])
    mtu = v["qp.mtu"]
    if n_flows:
        sim_ps = _sim_time_ps(v, flows, names)
        size = flows["size"].astype(np.float64)
        packets = int(np.ceil(size / mtu).sum())
        payload = float(size.sum())
    else:
        sim_ps, packets, payload = 0.0, 0, 0.0
    sim_ps = min(sim_ps, float(v["simulation.duration"]))
    hops = _HOPS[v["topology.kind"]]
    # per data packet: its transmissions and arrivals on every hop, the ACKs, the completion
    packet_events = int(packets * (1.4 * hops + 1.2))
    per_event = _EVENT_S + _EVENT_PER_HOST_S * min(n_hosts, _EVENT_HOSTS_MAX)
    poll_s = _POLL_S + total_ports * 8 * _QUEUE_CHECK_S
    polls = 0.0
    for on, period in ((v["switch.watchdog.enabled"], v["switch.watchdog.poll"]),
                       (True, v["switch.deadlock_check"])):
        if on and period and ports:
            polls += sim_ps / period
    parts = {
        # per switch a row index per host, and a row of next hops (at most half its ports, the
        # uplinks of a tree) per leaf: every switch counted as one (an upper side)
        "routing tables": sum((n_hosts + 1) * _ROUTE_INDEX + len(ports) * (p // 2 + 2) * _ROUTE_ENTRY
                              for p in ports),
        "switch ports": total_ports * _PORT_BYTES,
        "hosts": n_hosts * _HOST_BYTES,
        "flows": n_flows * _FLOW_BYTES,
        "packets in flight": _in_flight(v, flows, n_hosts) * _PACKET_BYTES,
    }
    wall = (packet_events * per_event + polls * poll_s + _SETUP_S + n_hosts * _SETUP_PER_HOST_S
            + n_flows * _SETUP_PER_FLOW_S + n_hosts * (total_ports + len(ports)) / _OPS_PER_S)
    disk = {"tables": (n_flows + total_ports + n_hosts) * _TABLE_ROW_BYTES}
    interval = v["outputs.sample_interval"]
    if interval:
        steps = sim_ps / interval
        rows = min(steps * n_flows, _MAX_SAMPLE_ROWS)
        probes = total_ports * max(1, len(np.unique(flows["priority"]))) if n_flows else 0
        qcap = max(16, min(100_000, 20_000_000 // probes)) if probes else 0
        parts["time series"] = int(
            steps * _SAMPLE_STEP_BYTES + rows * _SAMPLE_ROW_BYTES + min(steps, qcap) * probes * 17
        )
        disk["time series"] = int(rows * _SAMPLE_ROW_BYTES + min(steps, qcap) * probes * 17)
        wall += steps * 2e-6
    if v["outputs.trace"]:
        records = packets * (hops * _TRACE_RECORDS_PER_HOP + _TRACE_RECORDS_PER_PACKET) + 4 * n_flows
        kept = min(records, DEFAULT_MAX_RECORDS)  # the trace keeps at most this many
        parts["trace"] = int(kept * _TRACE_RECORD_MEMORY)
        disk["trace"] = int(kept * _TRACE_RECORD_FILE)
        wall += records * _TRACE_RECORD_S + kept * _TRACE_KEPT_S
    if v["outputs.pcap"]:
        # every frame once per link it crosses (the capture records every link direction)
        snap = v["outputs.pcap_snaplen"] or 1 << 30
        data_bytes = payload + packets * _DATA_HEADERS
        captured = (min(float(snap) * packets, data_bytes) if packets else 0.0)
        acks = packets * _ACKS_PER_PACKET + n_flows
        disk["capture"] = int(hops * (captured + packets * _PCAP_RECORD
                                      + acks * (min(snap, _ACK_FRAME) + _PCAP_RECORD)) + 24)
        wall += disk["capture"] * _CAPTURE_BYTE_S
    mem = _BASE_BYTES + sum(parts.values())
    return Estimate(int(mem), int(packet_events + polls), wall, int(sim_ps), parts,
                    int(sum(disk.values())), disk)


def _size(n: int) -> str:
    """``1.2 GB (1,234,567,890 bytes)``; below a megabyte the bytes alone."""
    return f"{_mb(n)} ({n:,} bytes)" if n >= 1e6 else f"{n:,} bytes"


def check_disk_total(out_dir: str | Path, estimates: list[Estimate]) -> str | None:
    """The refusal (one line) when the files of several runs kept together in ``out_dir`` (each
    run's :func:`estimate`, ``estimates``) do not fit the free space there; None when they fit (or
    the free space is unknown)."""
    need = sum(e.disk_bytes for e in estimates)
    if not need:
        return None
    where, free = free_space(out_dir)
    if not 0 <= free < need:
        return None
    return (f"the {len(estimates)} runs still to do would keep about {_size(need)} of files in "
            f"{str(out_dir)!r} (the sum of each run's estimate), but {str(where)!r} has {_size(free)} "
            "free (allowed: kept runs whose files fit in the free space: fewer runs, smaller outputs "
            "such as outputs.pcap_snaplen or outputs.trace = false, another --out folder, or no "
            "--keep-runs)")


def check_resources(
    sc: Scenario, est: Estimate, max_memory: int | None = None, out_dir: str | Path | None = None
) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) of ``est``: more memory than ``max_memory`` (default: this machine's
    RAM) is a problem naming what takes it, as are files (capture, trace, tables) larger than the
    free space where they go (``out_dir``, default ``[outputs] dir``; ``""``: nothing is written);
    an estimated wall time over an hour is a warning."""
    limit = physical_memory() if max_memory is None else max_memory
    problems: list[Problem] = []
    warnings: list[Problem] = []
    v, file = sc.values, sc.file
    target = v["outputs.dir"] if out_dir is None else out_dir
    if target and est.disk_bytes:
        where, free = free_space(target)
        if 0 <= free < est.disk_bytes:
            key, big = max(est.disk_parts.items(), key=lambda kv: kv[1])
            at = {"capture": "outputs.pcap", "trace": "outputs.trace",
                  "time series": "outputs.sample_interval"}.get(key, "flows")
            cure = {"outputs.pcap": "outputs.pcap_snaplen (e.g. 128: headers only), fewer or smaller flows",
                    "outputs.trace": "fewer or smaller flows",
                    "outputs.sample_interval": "a longer interval"}.get(at, "fewer flows")
            problems.append(Problem(
                file, at,
                f"the run would write about {_mb(est.disk_bytes)} into {str(target)!r}, {_mb(big)} of it "
                f"for the {key}, but {str(where)!r} has {_mb(free)} free",
                v.get(at, True),
                f"files that fit in the free space ({cure}, or another results folder)"))
    if limit and est.memory_bytes > limit:
        key, big = max(est.parts.items(), key=lambda kv: kv[1])
        where = {
            "routing tables": "topology",
            "time series": "outputs.sample_interval",
            "trace": "outputs.trace",
            "flows": "flows",
        }.get(key, "topology")
        value = {
            "outputs.sample_interval": v["outputs.sample_interval"],
            "outputs.trace": v["outputs.trace"],
        }.get(where, v["topology.kind"])
        problems.append(
            Problem(
                file,
                where,
                f"the run would need about {_mb(est.memory_bytes)} of memory, {_mb(big)} of it for the {key}",
                value,
                f"runs that fit in {_mb(limit)} "
                + ("(--max-memory)" if max_memory else "(this machine's memory)"),
            )
        )
    if est.wall_s > _LONG_S:
        timers = {k: v[k] for k in ("switch.deadlock_check", "switch.watchdog.poll") if v[k]
                  and (k != "switch.watchdog.poll" or v["switch.watchdog.enabled"])}
        what = (
            min(timers, key=lambda k: timers[k])  # the most frequent timer
            if timers
            else ("outputs.sample_interval" if v["outputs.sample_interval"] else "flows")
        )
        warnings.append(
            Problem(
                file,
                what,
                f"the run may take {_dur(est.wall_s)} or more (~{est.events:,} events)",
                allowed="a larger period, fewer flows or a shorter simulation.duration",
            )
        )
    return problems, warnings


def check_build(sc: Scenario, warnings: list[Problem] | None = None) -> list[Problem]:
    """Build the fabric and hand it the flows once, as a run does (nothing runs); what the
    simulator refuses becomes a problem. ``warnings`` gets what holds flows back without an
    error: a NIC window below a path's bandwidth-delay product (rdmasim.scenario.window)."""
    from rdmasim.errors import PyverbsError
    from rdmasim.scenario.run import add_scenario_flows, build
    from rdmasim.scenario.traffic import traffic_table
    from rdmasim.scenario.uet_checks import target_warnings
    from rdmasim.scenario.window import window_caps

    try:
        table, names = traffic_table(sc)
        sim = build(sc)
        add_scenario_flows(sc, sim, table, names)
        if warnings is not None:
            warnings += window_caps(sc, sim, table, names) + target_warnings(sc, table)
    except ScenarioError as exc:
        return list(exc.problems)
    except (PyverbsError, ValueError) as exc:
        return [Problem(sc.file, "(fabric)", str(exc))]
    return []


def validate(
    sc: Scenario, max_memory: int | None = None, *, build: bool = True, out_dir: str | Path | None = None
) -> tuple[Estimate, list[Problem]]:
    """Every problem of a loaded scenario beyond the schema (resources: memory, and disk in
    ``out_dir``, default ``[outputs] dir``; then the fabric and its flows if the resources fit);
    raises :class:`ScenarioError` listing them. Returns the estimate and the warnings."""
    est = estimate(sc)
    problems, warnings = check_resources(sc, est, max_memory, out_dir)
    if not problems and build:
        problems += check_build(sc, warnings)
    if problems:
        raise ScenarioError(problems)
    return est, [*sc.warnings, *warnings]


__all__ = ["Estimate", "check_build", "check_resources", "estimate", "free_space", "physical_memory",
           "validate"]
