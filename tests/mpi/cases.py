"""The runs the MPI tests compare: a small fat tree (k = 4, 16 hosts, PFC) with a DCQCN permutation, a
DCQCN incast that pauses its senders, or an HPCC permutation (frames carry INT stacks across ranks),
built the same way in one process and on every MPI rank (run_case.py)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

import rdmasim
from rdmasim import topology
from rdmasim.workload import traffic

ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}
CASES = ("permutation", "incast", "hpcc")


def build(case: str, partitions: int | None = None, mpi: bool = False, k: int = 4,
          size: int = 64 * 1024) -> tuple[Any, Any]:
    """The simulation and its flow table of ``case``."""
    from rdmasim.cc import DcqcnParams

    sim = rdmasim.Simulator(seed=3, partitions=partitions, mpi=mpi)
    cfg: dict[str, Any] = {"ecn": ECN}
    if case == "incast":  # a static XOFF threshold low enough that the incasts pause their senders
        cfg["threshold"] = "20KB"
    topo = topology.fat_tree(k, rate="100Gbps", delay="1us", mtu=1024, sim=sim, switch_config=cfg)
    for h in sim.hosts.values():
        if case == "hpcc":
            h.set_congestion_control("hpcc")
        else:
            h.set_congestion_control("dcqcn", DcqcnParams.paper())
    n = len(topo.hosts)
    if case in ("permutation", "hpcc"):
        flows = sim.add_flows(traffic.permutation(n, size, seed=1))
    elif case == "incast":
        # 7 senders in every pod onto host 0, and a second incast onto the last host
        src = [i for i in range(1, n) if i % 2] + [i for i in range(0, n - 1) if i % 2 == 0 and i]
        dst = [0] * len([i for i in range(1, n) if i % 2]) + [n - 1] * len(
            [i for i in range(0, n - 1) if i % 2 == 0 and i])
        flows = sim.add_flows({"src": src, "dst": dst, "size": [size] * len(src)})
    else:
        raise ValueError(f"case {case!r}: allowed {CASES}")
    return sim, flows


def outcome(sim: Any, flows: Any) -> dict[str, Any]:
    """What must be byte-identical: the flow table (its bytes' digest), FCTs, bytes, every link
    direction's and switch port's counters (their digest), the clock and the event count."""
    import json

    from rdmasim.mpi import gather_counters

    res = flows.results()
    counters = json.dumps(gather_counters(sim), sort_keys=True)
    raw = np.ascontiguousarray(res).tobytes()
    return {"flows_sha256": hashlib.sha256(raw).hexdigest(), "fct_ps": [int(x) for x in res["fct_ps"]],
            "bytes": [int(x) for x in np.asarray(res["bytes_delivered"])],
            "counters_sha256": hashlib.sha256(counters.encode()).hexdigest(),
            "now": int(sim.now), "events": int(sim.events)}


def run(case: str, partitions: int | None = None, mpi: bool = False, k: int = 4) -> dict[str, Any]:
    """Build and run ``case`` to the end of its flows: its outcome."""
    sim, flows = build(case, partitions, mpi, k)
    sim.run_flows()
    return outcome(sim, flows)
