"""What a partitioned run did (rdmasim.partition.parallel_stats, csrc/sim/par.c rs_sim_par_stats):
jobs, barriers, windows, global events and the events of each partition and of the busiest thread
per job (the critical path), counts of the model and the split that do not depend on the machine;
and the loop's jobs per window (one in the common case)."""

from __future__ import annotations

from typing import Any

import pytest

import rdmasim
from rdmasim import topology
from rdmasim.partition import parallel_stats
from rdmasim.workload import traffic

ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}


def _fat_tree(parts: int | None, threads: int = 1, k: int = 4, size: int = 64 * 1024) -> tuple[Any, Any]:
    from rdmasim.cc import DcqcnParams

    sim = rdmasim.Simulator(seed=3, partitions=parts, threads=threads)
    topo = topology.fat_tree(k, rate="100Gbps", delay="1us", mtu=1024, sim=sim, switch_config={"ecn": ECN})
    for h in sim.hosts.values():
        h.set_congestion_control("dcqcn", DcqcnParams.paper())
    flows = sim.add_flows(traffic.permutation(len(topo.hosts), size, seed=1))
    return sim, flows


def test_no_stats_without_partitions():
    sim, _ = _fat_tree(None)
    sim.run_flows()
    assert parallel_stats(sim) is None


@pytest.mark.parametrize("threads", [1, 2])
def test_stats_count_every_event_once(threads):
    sim, _ = _fat_tree(2, threads=threads)
    sim.run_flows()
    st = parallel_stats(sim)
    assert st is not None and st.runs >= 1
    assert st.total_events == sim.events
    assert sum(st.part_events) == st.events
    assert len(st.part_events) == 2 and min(st.part_events) > 0
    # the busiest thread of a job handled at least half of its events, at most all
    assert st.events / 2 <= st.critical_path <= st.events
    if threads == 2:
        assert st.critical_path == st.critical_path_partitions  # one partition per thread
    else:
        assert st.critical_path == st.events  # one thread
    assert 1.0 <= st.speedup_bound <= 2.0
    assert st.barriers == (2 * st.jobs if threads > 1 else 0)
    # CPU time: the busiest thread of each job, summed, against every partition's
    assert 0 < st.cpu_jobs_ns / 2 <= st.cpu_critical_path_ns <= st.cpu_jobs_ns and st.cpu_serial_ns > 0
    if threads == 1:
        assert st.cpu_critical_path_ns == st.cpu_jobs_ns and st.cpu_speedup_bound == pytest.approx(1.0)
    assert st.windows > 0 and st.jobs >= st.windows


def test_stats_do_not_depend_on_the_threads():
    """The same partitions on one thread or two: the same jobs, windows and events per partition."""
    runs = []
    for threads in (1, 2):
        sim, _ = _fat_tree(2, threads=threads)
        sim.run_flows()
        st = parallel_stats(sim)
        assert st is not None
        runs.append((st.jobs, st.windows, st.global_events, st.part_events, st.critical_path_partitions))
    assert runs[0] == runs[1]


def test_critical_path_by_thread_groups_partitions():
    """Four partitions on two threads: a thread's share of a job is that of its two partitions."""
    sim, _ = _fat_tree(4, threads=2)
    sim.run_flows()
    st = parallel_stats(sim)
    assert st is not None and len(st.part_events) == 4
    assert st.critical_path_partitions <= st.critical_path <= st.events
    assert st.speedup_bound <= 2.0 < 4.0 and st.speedup_bound_partitions >= st.speedup_bound


def test_one_job_per_window_while_every_partition_has_flows():
    """The pass that stops at a partition's last finish is not a job of its own in every window:
    until the first partition's last flow finished, one job per window (and one per global event)."""
    sim, flows = _fat_tree(2, threads=2)
    sim.run_flows(until="8us")
    assert (flows.results()["finish_ps"] < 0).all()  # no flow finished yet
    st = parallel_stats(sim)
    assert st is not None and st.windows >= 6
    assert st.jobs <= st.windows + st.global_events + 1, (st.jobs, st.windows, st.global_events)


def test_the_fat_tree_split_balances_the_events():
    """rdmasim.partition's split of a fat tree (pods whole, the core spread) gives each partition an
    equal share of the work: the busiest partition within 5 % of the mean (k = 8, 128 hosts)."""
    sim, _ = _fat_tree(2, k=8, size=32 * 1024)
    sim.run_flows()
    st = parallel_stats(sim)
    assert st is not None and st.events > 30_000
    assert st.balance < 1.05, st.part_events
    assert st.speedup_bound_partitions > 1.8
