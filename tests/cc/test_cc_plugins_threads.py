"""A congestion-control plug-in (compiled C, rdmasim.cc.register_plugin) in a run on threads: its
callbacks run on the thread of the QP's partition, with the flow table of the same partitions on
one thread (a plug-in keeps its state in the per-QP state the NIC gives it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rdmasim
from rdmasim import cc, topology
from rdmasim.workload import traffic

ROOT = Path(__file__).resolve().parents[2]
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}


pytestmark = pytest.mark.usefixtures("plugin_cache")


def _flows(threads: int) -> bytes:
    sim = rdmasim.Simulator(seed=3, partitions=2, threads=threads)
    topo = topology.fat_tree(4, rate="100Gbps", delay="1us", mtu=1024, sim=sim, switch_config={"ecn": ECN})
    for h in sim.hosts.values():
        h.set_congestion_control("dctcp_copy")
    flows = sim.add_flows(traffic.permutation(len(topo.hosts), 64 * 1024, seed=1))
    sim.run_flows()
    return np.asarray(flows.results()).tobytes()


def test_plugin_on_threads_gives_the_one_thread_results():
    src = (ROOT / "csrc" / "cc" / "dctcp.c").read_text()
    cc.register_plugin("dctcp_copy", f"#define rs_cc_dctcp plugin\n{src}")
    assert _flows(2) == _flows(1)
