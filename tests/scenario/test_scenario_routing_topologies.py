"""Dragonfly and rail-optimised fabrics in scenario files: built as the Python builders build them
(routing by group on every router), their links known to the impairment checks, bad parameters
refused naming the key."""

from __future__ import annotations

import pytest

from rdmasim.fabric import ROUTING
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.check import validate
from rdmasim.scenario.run import build

DRAGONFLY = """
[simulation]
progress = false
[topology]
kind = "dragonfly"
routers_per_group = 2
hosts_per_router = 1
global_per_router = 1
routing = "valiant"
[[flows]]
src = "h0_0_0"
dst = "h1_1_0"
size = "64KiB"
"""

RAIL = """
[simulation]
progress = false
[topology]
kind = "rail_optimized"
nodes = 3
gpus_per_node = 2
spines = 2
nodes_per_unit = 2
[[flows]]
src = "n0_g0"
dst = "n2_g1"
size = "64KiB"
"""


def test_dragonfly_builds_and_runs() -> None:
    sc = loads(DRAGONFLY, "d.toml")
    sim = build(sc)
    assert len(sim.hosts) == 3 * 2 * 1 and len(sim.switches) == 6  # a*h + 1 = 3 groups
    assert {s.config["routing"] for s in sim.switches.values()} == {ROUTING.index("valiant")}
    assert {s.config["group"] for s in sim.switches.values()} == {0, 1, 2}
    (f,) = run_scenario(sc, out_dir="", progress=False).flows
    assert f.status == "ok"


def test_rail_optimized_builds_and_runs() -> None:
    sc = loads(RAIL, "r.toml")
    sim = build(sc)
    assert sorted(sim.switches) == ["rail0_0", "rail0_1", "rail1_0", "rail1_1", "spine0", "spine1"]
    (f,) = run_scenario(sc, out_dir="", progress=False).flows
    assert f.status == "ok"
    validate(sc)


@pytest.mark.parametrize(("text", "link", "ok"), [
    (DRAGONFLY, ["r0_0", "r1_1"], True),     # a global link of the palm-tree arrangement
    (DRAGONFLY, ["r0_0", "r0_1"], True),     # local
    (DRAGONFLY, ["h1_1_0", "r1_1"], True),   # host
    (DRAGONFLY, ["r0_0", "r1_0"], False),    # r0_0's one global link goes to r1_1
    (RAIL, ["rail1_1", "n2_g1"], True),
    (RAIL, ["rail1_0", "spine1"], True),
    (RAIL, ["rail1_0", "n2_g1"], False),     # node 2 is in unit 1
    (RAIL, ["rail0_0", "n0_g1"], False),     # NIC 1 is on rail 1
])
def test_impairments_know_the_links(text: str, link: list[str], ok: bool) -> None:
    extra = f'[[impairments.loss]]\nlink = ["{link[0]}", "{link[1]}"]\nprobability = 0.01\n'
    if ok:
        sim = build(loads(text + extra, "x.toml"))
        assert sim is not None
    else:
        with pytest.raises(ScenarioError, match="impairments.loss"):
            loads(text + extra, "x.toml")


@pytest.mark.parametrize(("text", "old", "new", "key"), [
    (DRAGONFLY, 'routing = "valiant"', "groups = 4", "topology.groups"),
    (DRAGONFLY, 'routing = "valiant"', 'routing = "shortest"', "topology.routing"),
    (RAIL, "nodes_per_unit = 2", "nodes_per_unit = 4", "topology.nodes_per_unit"),
    (RAIL, "nodes_per_unit = 2", "k = 4", "topology.k"),
])
def test_bad_parameters_name_the_key(text: str, old: str, new: str, key: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads(text.replace(old, new), "x.toml")
    assert key in str(info.value)


def test_dragonfly_hop_classes() -> None:
    text = DRAGONFLY.replace('routing = "valiant"\n', 'routing = "valiant"\nhop_classes = true\n'
                             '[switch]\nlossless = [3, 4, 5]\nscheduler = "wrr"\n')
    sc = loads(text, "d.toml")
    sim = build(sc)
    assert {s.config["hop_classes"] for s in sim.switches.values()} == {1}
    (f,) = run_scenario(sc, out_dir="", progress=False).flows
    assert f.status == "ok"
