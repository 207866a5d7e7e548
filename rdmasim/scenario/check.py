"""What ``rdmasim validate`` checks beyond the schema: that the fabric can be built, and how much
memory and time a run will take (an estimate, refused when it cannot fit).

The estimate adds up the structures that grow with the input (see docs/scenarios.md, "How big a
run is"): the switches' routing tables (one entry per destination host and port), per-port and
per-host state, the per-flow results, the time series ``outputs.sample_interval`` records and the
event trace. The simulated time it assumes is the busiest host's bytes at line rate after the
last start (bounded by ``simulation.duration``); runs slowed by loss or congestion take longer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rdmasim.scenario.load import Problem, Scenario, ScenarioError, switch_ports

#: bytes per routing-table entry (uint16 next-hop port) in the C core
_ROUTE_ENTRY = 2
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
#: trace record per packet and hop (outputs.trace)
_TRACE_BYTES = 390
#: a memory-resident base: the interpreter, numpy and the core
_BASE_BYTES = 150_000_000
#: rough speed of this machine class, for the time estimate
_EVENTS_PER_S = 10e6
_OPS_PER_S = 2e8
#: runs estimated longer than this get a warning
_LONG_S = 3600.0

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
    """Memory (bytes) and time a run is expected to take, and what they are made of."""

    memory_bytes: int
    events: int
    wall_s: float
    sim_time_ps: int
    parts: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: memory, simulated time, events, wall time, and the largest memory parts."""
        from rdmasim.units import format_time

        top = sorted(self.parts.items(), key=lambda kv: -kv[1])[:3]
        parts = ", ".join(f"{k} {_mb(v)}" for k, v in top if v >= 1e6)
        return (
            f"estimated memory {_mb(self.memory_bytes)}{f' ({parts})' if parts else ''}; "
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


def estimate(sc: Scenario, table: Any = None) -> Estimate:
    """Estimate the memory and time of running ``sc`` (``table``: its traffic table, made if None)."""
    from rdmasim.scenario.load import host_names
    from rdmasim.scenario.traffic import traffic_table

    v = sc.values
    if table is None:
        table, _ = traffic_table(sc)
    n_hosts = len(host_names(v))
    ports = switch_ports(sc)
    total_ports = sum(ports)
    flows = table.flows
    n_flows = len(flows["size"])
    rate = v["link.rate"]
    if n_flows:
        size = flows["size"].astype(np.float64)
        start = flows["start_ps"].astype(np.float64)
        per_host = max(
            np.bincount(flows["src"], weights=size).max(), np.bincount(flows["dst"], weights=size).max()
        )
        busy = per_host * 8 / rate * 1e12
        sim_ps = float(start.max()) + busy + 2 * 10 * v["link.delay"] + 10_000_000
        packets = int(np.ceil(size / v["qp.mtu"]).sum())
    else:
        sim_ps, packets = 0.0, 0
    sim_ps = min(sim_ps, float(v["simulation.duration"]))
    hops = _HOPS[v["topology.kind"]]
    events = int(packets * (2 * hops + 2))
    parts = {
        "routing tables": sum((n_hosts * p + n_hosts + 2) * _ROUTE_ENTRY for p in ports),
        "switch ports": total_ports * _PORT_BYTES,
        "hosts": n_hosts * _HOST_BYTES,
        "flows": n_flows * _FLOW_BYTES,
    }
    wall = events / _EVENTS_PER_S + n_hosts * (total_ports + len(ports)) / _OPS_PER_S
    interval = v["outputs.sample_interval"]
    if interval:
        steps = sim_ps / interval
        rows = min(steps * n_flows, _MAX_SAMPLE_ROWS)
        probes = total_ports * max(1, len(np.unique(flows["priority"]))) if n_flows else 0
        qcap = max(16, min(100_000, 20_000_000 // probes)) if probes else 0
        parts["time series"] = int(
            steps * _SAMPLE_STEP_BYTES + rows * _SAMPLE_ROW_BYTES + min(steps, qcap) * probes * 17
        )
        wall += steps * 2e-6
    check = v["switch.deadlock_check"]
    if check and ports:
        wall += (sim_ps / check) * total_ports * 8 / _OPS_PER_S
    if v["outputs.trace"]:
        parts["trace"] = packets * (hops + 1) * 2 * _TRACE_BYTES
    mem = _BASE_BYTES + sum(parts.values())
    return Estimate(int(mem), events, wall, int(sim_ps), parts)


def check_resources(
    sc: Scenario, est: Estimate, max_memory: int | None = None
) -> tuple[list[Problem], list[Problem]]:
    """(problems, warnings) of ``est``: more memory than ``max_memory`` (default: this machine's
    RAM) is a problem naming what takes it; an estimated wall time over an hour is a warning."""
    limit = physical_memory() if max_memory is None else max_memory
    problems: list[Problem] = []
    warnings: list[Problem] = []
    v, file = sc.values, sc.file
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
        what = (
            "switch.deadlock_check"
            if v["switch.deadlock_check"]
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


def check_build(sc: Scenario) -> list[Problem]:
    """Build the fabric once (nothing runs); what the simulator refuses becomes a problem."""
    from rdmasim.errors import PyverbsError
    from rdmasim.scenario.run import build

    try:
        build(sc)
    except ScenarioError as exc:
        return list(exc.problems)
    except (PyverbsError, ValueError) as exc:
        return [Problem(sc.file, "(fabric)", str(exc))]
    return []


def validate(
    sc: Scenario, max_memory: int | None = None, *, build: bool = True
) -> tuple[Estimate, list[Problem]]:
    """Every problem of a loaded scenario beyond the schema (resources, then the fabric if the
    resources fit); raises :class:`ScenarioError` listing them. Returns the estimate and the
    warnings."""
    est = estimate(sc)
    problems, warnings = check_resources(sc, est, max_memory)
    if not problems and build:
        problems += check_build(sc)
    if problems:
        raise ScenarioError(problems)
    return est, [*sc.warnings, *warnings]


__all__ = ["Estimate", "check_build", "check_resources", "estimate", "physical_memory", "validate"]
