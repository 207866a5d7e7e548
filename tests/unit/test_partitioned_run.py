"""A run split into partitions (csrc/sim/par.c, ``Simulator(partitions=P)``): one event queue per
partition of the fabric, conservative windows of the lookahead, results byte-identical to one
queue's — the flow table, every link direction's and switch port's counters, the clock and the
event count — and what a partitioned run cannot hold yet refused with one line naming the setting."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import rdmasim
from rdmasim import topology
from rdmasim.workload import traffic

ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}


def _dcqcn(sim: Any) -> None:
    from rdmasim.cc import DcqcnParams

    for h in sim.hosts.values():
        h.set_congestion_control("dcqcn", DcqcnParams.paper())


def _fat_tree(parts: int | None, k: int = 4, size: int = 64 * 1024, delay: str = "1us",
              threads: int = 1) -> Any:
    sim = rdmasim.Simulator(seed=3, partitions=parts, threads=threads)
    topo = topology.fat_tree(k, rate="100Gbps", delay=delay, mtu=1024, sim=sim, switch_config={"ecn": ECN})
    _dcqcn(sim)
    n = len(topo.hosts)
    flows = sim.add_flows(traffic.permutation(n, size, seed=1))
    return sim, flows


def _leaf_spine(parts: int | None, size: int = 48 * 1024, threads: int = 1) -> Any:
    sim = rdmasim.Simulator(seed=5, partitions=parts, threads=threads)
    topo = topology.leaf_spine(4, 2, 4, delay="1us", mtu=1024, sim=sim, switch_config={"ecn": ECN})
    _dcqcn(sim)
    n = len(topo.hosts)
    # an incast on two receivers beside the permutation: queues, ECN marks, CNPs and PFC
    table = traffic.permutation(n, size, seed=2)
    extra = {"src": list(range(2, n, 2)), "dst": [0 if i % 4 else 1 for i in range(2, n, 2)],
             "size": [size] * len(range(2, n, 2))}
    flows = sim.add_flows({k: [int(x) for x in table.flows[k]] + extra[k] for k in ("src", "dst", "size")})
    return sim, flows


def _outcome(sim: Any, flows: Any) -> dict[str, Any]:
    res = flows.results()
    out: dict[str, Any] = {"flows": res.to_records(index=False).tobytes() if hasattr(res, "to_records")
                           else np.asarray(res).tobytes(),
                           "now": sim.now, "events": sim.events}
    links = []
    for link in sim.links:
        for end in (link.a, link.b):
            links.append(tuple(sorted(link.direction(end).stats().items())))
    out["links"] = links
    out["ports"] = [repr(sw.stats()) for sw in sim.switches.values()]
    return out


def _run(build: Any, parts: int | None, threads: int = 1) -> dict[str, Any]:
    sim, flows = build(parts, threads=threads)
    sim.run_flows()
    return _outcome(sim, flows)


@pytest.mark.parametrize("parts", [2, 4])
def test_fat_tree_permutation_is_identical_on_partitions(parts):
    one = _run(_fat_tree, 1)
    split = _run(_fat_tree, parts)
    assert one["now"] > 0 and one["events"] > 5_000
    for key in one:
        assert split[key] == one[key], key


@pytest.mark.parametrize("parts", [2, 4])
def test_leaf_spine_with_incast_is_identical_on_partitions(parts):
    one = _run(_leaf_spine, 1)
    split = _run(_leaf_spine, parts)
    sim, flows = _leaf_spine(None)
    sim.run_flows()
    assert flows.results()["cnps"].sum() > 0  # the incasts marked ECN and DCQCN answered
    for key in one:
        assert split[key] == one[key], key


def test_the_run_really_is_split():
    sim, _ = _fat_tree(4)
    sim.run("2us")
    pt = sim._core.partitioning
    assert pt.parts == 4 and pt.cut_links > 0
    assert sim._core.partition_lookahead() == 1_000_000  # the 1 us links between partitions


@pytest.mark.parametrize("one, other", [((1, 1), (2, 1)), ((2, 1), (2, 2))],
                         ids=["partitions", "threads"])
def test_run_until_stops_at_the_same_state(one, other):
    """(partitions, threads) of the reference and of the split run: the same state at every stop."""
    a, fa = _fat_tree(one[0], threads=one[1])
    b, fb = _fat_tree(other[0], threads=other[1])
    for t in ("3us", "7500ns", "20us"):
        a.run(t)
        b.run(t)
        assert (a.now, a.events) == (b.now, b.events)
    a.run_flows()
    b.run_flows()
    assert _outcome(a, fa) == _outcome(b, fb)


def test_refusals_name_the_setting():
    sim, _ = _fat_tree(2)
    link = sim.links[0]
    link.direction(link.a).set_loss(0.01)
    msg = r"^partitions = 2: lossy links \(loss, drop rules\) need one partition$"
    with pytest.raises(ValueError, match=msg):
        sim.run_flows()
    sim, _ = _fat_tree(2)
    with pytest.raises(ValueError, match=r"stopping after a number of events .* needs one partition"):
        sim.step(5)
    sim, _ = _fat_tree(2)
    sim.trace()
    with pytest.raises(ValueError, match=r"tracing needs one partition"):
        sim.run("1us")


def test_flow_dependencies_are_refused():
    sim = rdmasim.Simulator(seed=1, partitions=2)
    topology.fat_tree(4, sim=sim)
    sim.add_flows({"src": [0, 0], "dst": [15, 15], "size": [4096, 4096], "after": [0, 1]})
    msg = r"^partitions = 2: flow dependencies \(after, needs\) need one partition$"
    with pytest.raises(ValueError, match=msg):
        sim.run_flows()


def test_partitions_knob_is_checked():
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError, match=r"partitions .*: allowed None or an int in 1\.\.4096"):
            rdmasim.Simulator(partitions=bad)


def _staggered(parts: int | None, threads: int = 1) -> Any:
    """Flows starting one after another while others finish: the flow table's starts are global
    events in the middle of the run; a LOCAL flow finishes in one."""
    sim = rdmasim.Simulator(seed=7, partitions=parts, threads=threads)
    topology.fat_tree(4, rate="100Gbps", delay="1us", mtu=1024, sim=sim, switch_config={"ecn": ECN})
    _dcqcn(sim)
    n = 16
    src = list(range(n)) + [3]
    dst = [(i * 5 + 3) % n for i in range(n)] + [3]
    size = [32 * 1024 + 4096 * (i % 3) for i in range(n)] + [0]
    start = [i * 1_700_000 for i in range(n)] + [9_000_000]
    verb = ["WRITE" if i % 4 else "SEND" for i in range(n)] + ["LOCAL"]
    flows = sim.add_flows({"src": src, "dst": dst, "size": size, "start_ps": start, "verb": verb})
    return sim, flows


@pytest.mark.parametrize("parts", [2, 4])
def test_staggered_starts_are_identical_on_partitions(parts):
    one = _run(_staggered, 1)
    split = _run(_staggered, parts)
    for key in one:
        assert split[key] == one[key], key


def test_a_cut_link_without_delay_is_refused():
    sim = rdmasim.Simulator(seed=1, partitions=2)
    topology.fat_tree(4, delay=0, sim=sim)
    msg = (r"^partitions = 2: link direction \d+ between two partitions has delay 0: a partitioned run "
           r"needs a delay > 0 on every link it cuts$")
    with pytest.raises(ValueError, match=msg):
        sim.run("1us")


# ---- on threads: the same partitions, each run on a thread of its own ----


@pytest.mark.parametrize("build", [_fat_tree, _leaf_spine, _staggered])
@pytest.mark.parametrize("parts,threads", [(2, 2), (4, 2), (4, 4)])
def test_threads_give_the_results_of_one_thread(build, parts, threads):
    one = _run(build, parts)
    on_threads = _run(build, parts, threads)
    assert one["events"] > 1_000
    for key in one:
        assert on_threads[key] == one[key], key


def test_threads_alone_split_the_run():
    sim, flows = _fat_tree(None, threads=2)
    sim.run_flows()
    assert sim._core.partitioning.parts == 2
    assert _outcome(sim, flows) == _run(_fat_tree, 2)


def test_threads_knob_is_checked():
    for bad in (0, -1, True, 1.5, "2"):
        with pytest.raises(ValueError, match=r"threads .*: allowed an int in 1\.\.4096"):
            rdmasim.Simulator(threads=bad)
    with pytest.raises(ValueError, match=r"^threads 3: allowed 1\.\.2 .*partitions = 2"):
        rdmasim.Simulator(threads=3, partitions=2)


@pytest.mark.parametrize("build", [_fat_tree, _leaf_spine], ids=["fat_tree", "leaf_spine"])
def test_a_default_run_is_the_run_on_partitions(build):
    """One tie-break for simultaneous events in every run: a Simulator without ``partitions``
    gives what one partition and a split give, to the event count."""
    default = _run(build, None)
    for parts in (1, 2):
        split = _run(build, parts)
        for key in default:
            assert split[key] == default[key], (parts, key)
