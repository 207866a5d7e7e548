"""Fabrics and runs shared by tests/traffic/test_stragglers.py, test_hpc_patterns.py, test_hierarchical.py
and docs/gen_hpc.py: an idle lossless star (optionally with some hosts' links slower) and one run of a
table on it, returning the results and the simulator for rdmasim.traffic.critical_path.analyze."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from rdmasim import Simulator
from rdmasim import traffic as tr

RATE, DELAY, MTU = "100Gbps", "1us", 4096


def star(p: int, slow: Mapping[int, str] | None = None) -> Simulator:
    """``p`` hosts h0.. on switch s0; host ``i`` in ``slow`` has its link at ``slow[i]``."""
    sim = Simulator(1)
    sw = sim.add_switch("s0", ports=p)
    for i in range(p):
        sim.connect(sim.add_host(f"h{i}"), sw, rate=(slow or {}).get(i, RATE), delay=DELAY, mtu=MTU)
    return sim


def run(table: tr.FlowTable, p: int, sim: Simulator | None = None, **qp: Any) -> tuple[np.ndarray, Simulator]:
    """Run ``table`` alone on ``sim`` (default: an idle ``p``-host star); its results and the simulator."""
    sim = sim or star(p)
    fs = sim.add_flows(table, mtu=MTU, **qp)
    sim.run_flows()
    return fs.results(), sim


def span(res: np.ndarray) -> int:
    """First start to last finish (ps)."""
    return int(res["finish_ps"].max() - res["start_ps"].min())
