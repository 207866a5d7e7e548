"""The scenario keys `[simulation] threads` and `[simulation] partitions`: the run split into
partitions of the fabric (on threads) gives the results of one thread; bad values name the key, the
value and the allowed range; a partitioned run draws no progress bar (it cannot stop after a number
of events)."""

from __future__ import annotations

import io

import pytest

from rdmasim.partition import parallel_stats
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.run import build

FAT_TREE = """
[simulation]
seed = 3
{extra}

[topology]
kind = "fat_tree"
k = 4

[link]
rate = "100Gbps"
delay = "1us"
mtu = 1024

[congestion_control]
algorithm = "dcqcn"

[traffic.permutation]
size = "32KiB"
"""


def _text(**keys: int) -> str:
    return FAT_TREE.format(extra="\n".join(f"{k} = {v}" for k, v in keys.items()))


def _problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("keys", [{"threads": 2}, {"partitions": 2}, {"partitions": 4, "threads": 2}],
                         ids=["threads", "partitions", "both"])
def test_threads_give_the_results_of_one_thread(keys):
    one = run_scenario(loads(_text(partitions=1)), out_dir="", progress=False)
    split = run_scenario(loads(_text(**keys)), out_dir="", progress=False)
    assert len(one.flows) == 16 and all(f.status == "ok" for f in one.flows)
    assert split.flows_csv() == one.flows_csv()


def test_the_keys_reach_the_simulator():
    sim = build(loads(_text(threads=2)))
    assert sim._threads == 2 and sim._partitions == 2
    sim = build(loads(_text(partitions=4, threads=2)))
    assert sim._threads == 2 and sim._partitions == 4
    sim = build(loads(_text()))
    assert parallel_stats(sim) is None and not sim._partitioned


def test_a_threaded_run_draws_no_progress_bar():
    stream = io.StringIO()
    res = run_scenario(loads(_text(threads=2)), out_dir="", progress=True, stream=stream)
    assert all(f.status == "ok" for f in res.flows)


@pytest.mark.parametrize("key, value, allowed", [("threads", 0, "1..4096"), ("threads", 5000, "1..4096"),
                                                 ("partitions", -1, "0..4096"),
                                                 ("partitions", 4097, "0..4096")])
def test_out_of_range_names_key_value_and_range(key, value, allowed):
    (msg,) = _problems(_text(**{key: value}))
    assert f"simulation.{key} = {value}" in msg and allowed in msg


def test_more_threads_than_partitions_is_refused():
    (msg,) = _problems(_text(partitions=2, threads=4))
    assert "simulation.threads = 4" in msg and "partitions (2)" in msg and "1..2" in msg
