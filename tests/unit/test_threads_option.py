"""Simulator(threads=N) and the scenario key [simulation] threads: N threads run N partitions
(tests/unit/test_partitioned_run.py compares their results); values that are not a thread count are
refused naming the value and the range; the scenario key still allows only 1."""

from __future__ import annotations

import pytest

import rdmasim
from rdmasim.scenario import ScenarioError, loads

MINIMAL = """
[topology]
kind = "back_to_back"
[[flows]]
src = "a"
dst = "b"
size = 4096
"""


def test_one_thread_runs():
    t = rdmasim.incast(2, rate="100Gbps", delay="1us", sim=rdmasim.Simulator(seed=3, threads=1))
    flows = t.sim.add_flows({"src": [0, 1], "dst": [2, 2], "size": [8192, 8192]})
    t.sim.run_flows()
    assert list(flows.results()["status"]) == [0, 0]  # IBV_WC_SUCCESS


@pytest.mark.parametrize("threads", [0, -1, 1.0, True, "2"])
def test_other_thread_counts_are_refused(threads):
    with pytest.raises(ValueError, match=r"threads .*: allowed an int in 1\.\.4096"):
        rdmasim.Simulator(threads=threads)


def test_more_threads_than_partitions_are_refused():
    with pytest.raises(ValueError, match=r"threads 4: allowed 1\.\.2"):
        rdmasim.Simulator(threads=4, partitions=2)


def test_scenario_key_threads():
    assert loads(MINIMAL + "[simulation]\nthreads = 1\n", "s.toml")["simulation.threads"] == 1
    assert loads(MINIMAL + "[simulation]\nthreads = 2\n", "s.toml")["simulation.threads"] == 2
    with pytest.raises(ScenarioError, match=r"s\.toml: simulation\.threads = 0.*1\.\.4096"):
        loads(MINIMAL + "[simulation]\nthreads = 0\n", "s.toml")
