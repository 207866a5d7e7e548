"""[traffic.halo], [[impairments.stragglers]], hierarchical all-reduce and LOCAL flows in scenario files:
they run, the results carry each rank's wait and the critical path, and mistakes name their key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rdmasim import traffic as tr
from rdmasim.scenario import ScenarioError, loads, run_scenario

STAR = """
[simulation]
progress = false
[topology]
kind = "star"
n = 8
[qp]
mtu = 4096
"""
US = 1_000_000
HALO = '[traffic.halo]\ndims = [4, 2]\nface_size = "32KiB"\ntimesteps = 3\ncompute_mean = "10us"\n'


def _run(text: str, out_dir: str = "") -> object:
    return run_scenario(loads(STAR + text, "h.toml"), out_dir=out_dir, progress=False)


def test_halo_runs_as_the_api_builds_it(tmp_path: Path) -> None:
    res = _run(HALO + 'barrier = "tree"\n', str(tmp_path / "out"))
    table = tr.halo_exchange([4, 2], 32 << 10, timesteps=3, compute=10 * US, barrier_kind="tree")
    assert len(res.flows) == len(table) and all(f.status == "ok" for f in res.flows)
    assert {f.group for f in res.flows} == {"halo"}
    (row,) = res.collectives
    assert row["collective"] == "halo" and row["timesteps"] == 3 and row["ranks"] == 8
    assert row["time_ps"] == max(f.finish_ps for f in res.flows)
    assert row["time_per_step_ps"] == row["time_ps"] / 3
    assert set(row["wait_ps"]) == {f"h{i}" for i in range(8)}
    path = row["critical_path"]
    assert path[-1]["finish_ps"] == row["time_ps"] and path[0]["verb"] == "LOCAL"
    meta = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert meta["collectives"][0]["bottleneck"] == row["bottleneck"]
    assert "halo on 8 ranks, 32,768 bytes per face, 3 timesteps" in res.summary()
    assert "critical path:" in res.summary()


def test_a_straggler_in_the_halo_is_on_the_critical_path() -> None:
    base = _run(HALO).collectives[0]
    slow = _run(HALO + '[[impairments.stragglers]]\nhost = "h6"\ndelay = "20us"\n').collectives[0]
    assert slow["time_ps"] - base["time_ps"] == pytest.approx(3 * 20 * US, rel=0.01)
    assert slow["compute_by_rank"] == {"h6": 3 * 30 * US}
    assert slow["wait_ps"]["h6"] == min(slow["wait_ps"].values())


def test_a_straggler_in_a_collective_costs_its_delay() -> None:
    coll = '[traffic.collective]\nkind = "allreduce"\nsize = "2MiB"\nchunk_size = "64KiB"\n'
    base = _run(coll).collectives[0]
    slow = _run(coll + '[[impairments.stragglers]]\nhost = "h2"\ndelay = "30us"\n').collectives[0]
    assert slow["time_ps"] - base["time_ps"] == pytest.approx(30 * US, abs=2 * US)
    assert slow["compute_by_rank"] == {"h2": 30 * US}
    assert slow["critical_path"][0]["src"] == "h2"


def test_a_straggler_costs_its_delay_with_one_chunk_per_block() -> None:
    """The scenario default (no chunk_size, 4 in flight): the late rank sends its ready steps in order on
    its connection, as the API's tables do (tests/traffic/test_stragglers.py), so 200 us cost 200 us."""
    coll = '[traffic.collective]\nkind = "allreduce"\nsize = "8MiB"\n'
    base = _run(coll).collectives[0]
    slow = _run(coll + '[[impairments.stragglers]]\nhost = "h3"\ndelay = "200us"\n').collectives[0]
    assert slow["time_ps"] - base["time_ps"] == pytest.approx(200 * US, rel=0.03)


def test_hierarchical_allreduce() -> None:
    res = _run('[traffic.collective]\nkind = "allreduce"\nsize = "1MiB"\ngpus_per_node = 4\n'
               'intra_rate = "1600Gbps"\nintra_latency = "2us"\n')
    (row,) = res.collectives
    assert row["collective"] == "allreduce/ring/hierarchical x4"
    local = [f for f in res.flows if f.verb == "LOCAL"]
    assert len(local) == 2 * 8 * 3
    step = tr.collectives.hierarchical.intra_step_ps(1 << 20, 4, "1600Gbps", "2us")
    assert {f.finish_ps - f.start_ps for f in local} == {0}  # a LOCAL flow's record starts after its hold
    assert sum(row["compute_by_rank"].values()) == 2 * 3 * step


def test_local_flows() -> None:
    res = _run('[[flows]]\nsrc = "h1"\ndst = "h1"\nverb = "LOCAL"\nstart = "2us"\nhold = "5us"\n'
               '[[flows]]\nsrc = "h0"\ndst = "h1"\nsize = "4KiB"\nhold = "1us"\n')
    pause, write = res.flows
    assert (pause.verb, pause.status, pause.finish_ps) == ("LOCAL", "ok", 7 * US)
    assert write.start_ps == 1 * US and write.status == "ok"


@pytest.mark.parametrize(("text", "where", "says"), [
    (HALO.replace("[4, 2]", "[3, 2]"), "traffic.halo.dims", "a grid of 6 ranks for 8 hosts"),
    (HALO.replace("[4, 2]", "[8]"), "traffic.halo.dims", "2 or 3 sizes"),
    (HALO + 'compute = "gamma"\n', "traffic.halo.compute", "'lognormal'"),
    (HALO + 'barrier = "ring"\n', "traffic.halo.barrier", "'dissemination'"),
    (HALO + 'compute_std = "1us"\n', "traffic.halo", "std applies only to dist 'normal'"),
    (HALO + '[[impairments.stragglers]]\nhost = "h9"\ndelay = "1us"\n', "impairments.stragglers[0].host",
     "not a rank of [traffic.halo]"),
    (HALO + '[[impairments.stragglers]]\ndelay = "1us"\n', "impairments.stragglers[0].host", "missing"),
    (HALO + '[[impairments.stragglers]]\nhost = "h1"\n[[impairments.stragglers]]\nhost = "h1"\n',
     "impairments.stragglers[1].host", "listed twice"),
    ('[traffic.incast]\nsize = "4KiB"\n[[impairments.stragglers]]\nhost = "h1"\n', "impairments.stragglers",
     "the file has neither"),
    ('[traffic.collective]\nkind = "alltoall"\ngpus_per_node = 2\n', "traffic.collective.gpus_per_node",
     "applies only to kind 'allreduce'"),
    ('[traffic.collective]\nkind = "allreduce"\ngpus_per_node = 65\n', "traffic.collective.gpus_per_node",
     "1..64"),
    ('[[flows]]\nsrc = "h1"\ndst = "h2"\n[[impairments.slow_links]]\nlink = ["h1", "h2"]\n',
     "impairments.slow_links[0].link", "no such link"),
    ('[[flows]]\nsrc = "h1"\ndst = "h2"\n[[impairments.slow_links]]\nlink = ["h1", "s0"]\nrate = 0\n',
     "impairments.slow_links[0].rate", "must be positive"),
    (HALO.replace("timesteps = 3", "timesteps = 100000"), "traffic.halo", "would make about"),
    ('[[flows]]\nsrc = "h1"\ndst = "h1"\n', "flows[0].dst", "only a LOCAL flow may have src = dst"),
    ('[[flows]]\nsrc = "h1"\ndst = "h2"\nverb = "NOP"\n', "flows[0].verb", "'LOCAL'"),
])
def test_problems_name_the_key(text: str, where: str, says: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        loads(STAR + text, "bad.toml")
    assert any(p.path == where and says in str(p) for p in exc.value.problems), str(exc.value)


def test_a_slow_nic_is_the_critical_link() -> None:
    coll = '[traffic.collective]\nkind = "ring_allreduce"\nsize = "2MiB"\n'
    base = _run(coll).collectives[0]
    slow = _run(coll + '[[impairments.slow_links]]\nlink = ["h4", "s0"]\nrate = "50Gbps"\n').collectives[0]
    assert 1.8 * base["time_ps"] <= slow["time_ps"] <= 2.0 * base["time_ps"]
    assert slow["bottleneck"] in ("link h4->s0", "link s0->h4")  # both directions are slow
    up = _run(coll + '[[impairments.slow_links]]\nlink = ["s0", "h4"]\ndirection = "forward"\n'
              'rate = "25Gbps"\n')
    assert up.collectives[0]["bottleneck"] == "link s0->h4"


def test_the_scenario_of_docs_hpc_patterns_runs() -> None:
    import re

    page = (Path(__file__).resolve().parents[2] / "docs" / "hpc-patterns.md").read_text()
    (text,) = re.findall(r"```toml\n(.*?)```", page, re.S)
    res = run_scenario(loads("[simulation]\nprogress = false\n" + text, "hpc-patterns.md"), out_dir="",
                       progress=False)
    (row,) = res.collectives
    assert row["collective"] == "halo" and row["timesteps"] == 10
    assert "h2" in row["bottleneck"]  # its 25 Gb/s NIC, not h5's 10 us, holds the halo back


def test_compute_before_a_collective() -> None:
    coll = '[traffic.collective]\nkind = "ring_allreduce"\nsize = "1MiB"\n'
    base = _run(coll).collectives[0]
    res = _run(coll + 'compute = "lognormal"\ncompute_mean = "20us"\ncompute_sigma = 0.5\n'
               '[[impairments.stragglers]]\nhost = "h1"\ndelay = "100us"\n')
    row = res.collectives[0]
    (h1,) = [f for f in res.flows if f.verb == "LOCAL" and f.src == "h1"]
    assert len([f for f in res.flows if f.verb == "LOCAL"]) == 8  # one compute phase per rank
    assert h1.finish_ps > 100 * US and row["bottleneck"] == "rank h1"
    assert row["time_ps"] - base["time_ps"] == pytest.approx(h1.finish_ps, abs=5 * US)
    again = _run(coll + 'compute = "lognormal"\ncompute_mean = "20us"\ncompute_sigma = 0.5\n'
                 '[[impairments.stragglers]]\nhost = "h1"\ndelay = "100us"\n')
    assert [f.finish_ps for f in again.flows] == [f.finish_ps for f in res.flows]  # seeded
