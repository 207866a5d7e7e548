"""Scenario files reach credits, LFTs and switch latency: ``[switch] flow_control = "credits"``,
``[switch.credits]``, ``lft`` and ``latency``; bad values are refused naming the key."""

from __future__ import annotations

import pytest

from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.run import build

RING = """
[simulation]
progress = false
[topology]
kind = "explicit"
hosts = ["h0", "h1", "h2", "h3"]
switches = ["s0", "s1", "s2", "s3"]
links = [{a = "h0", b = "s0"}, {a = "h1", b = "s1"}, {a = "h2", b = "s2"}, {a = "h3", b = "s3"},
         {a = "s0", b = "s1"}, {a = "s1", b = "s2"}, {a = "s2", b = "s3"}, {a = "s3", b = "s0"}]
[[flows]]
src = "h0"
dst = "h2"
size = "256KiB"
[[flows]]
src = "h1"
dst = "h3"
size = "256KiB"
[[flows]]
src = "h2"
dst = "h0"
size = "256KiB"
[[flows]]
src = "h3"
dst = "h1"
size = "256KiB"
"""


def _run(extra: str):
    return run_scenario(loads(RING + extra, "c.toml"), out_dir="", progress=False)


def test_credits_and_updn_from_a_scenario_file() -> None:
    res = _run('[switch]\nflow_control = "credits"\nlft = "updn"\nlatency = "90ns"\n'
               '[switch.credits]\nvls = 2\nbuffer = "32KB"\n')
    assert all(f.status == "ok" for f in res.flows)
    st = res.switches["s0"]["ports"][0]
    assert st["credit_cap_blocks"][:2] == [500, 500] and st["fc_sent"] > 0
    assert sum(s["totals"]["pfc_xoff_sent"] + s["totals"]["drops"] for s in res.switches.values()) == 0
    sim = build(loads(RING + '[switch]\nlatency = "90ns"\n', "c.toml"))
    assert sim.switches["s0"].config["latency_ps"] == 90_000


@pytest.mark.parametrize(("extra", "key"), [
    ('[switch]\nflow_control = "ib"\n', "switch.flow_control"),
    ('[switch]\nlft = "ftree"\n', "switch.lft"),
    ('[switch.credits]\nvls = 9\n', "switch.credits.vls"),
    ('[switch.credits]\nvictim_mask = "cas"\n', "switch.credits.victim_mask"),
    ('[switch]\nlatency = -1\n', "switch.latency"),
])
def test_bad_values_name_the_key(extra: str, key: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads(RING + extra, "c.toml")
    assert key in str(info.value)
