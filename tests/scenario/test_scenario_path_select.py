"""[switch] path_select in scenario files: the mode reaches every switch of the fabric, changes what a
run does (one QP sprayed over uplinks slower than its host link is reordered, and Go-Back-N answers
with retransmissions that ECMP never needs), and a bad value is refused naming the key and choices."""

from __future__ import annotations

import pytest

from rdmasim.fabric import PATH_SELECT
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.run import build

LEAF_SPINE = """
[simulation]
progress = false
[topology]
kind = "leaf_spine"
leaves = 2
spines = 4
hosts_per_leaf = 1
fabric_rate = "25Gbps"
[[flows]]
src = "h0"
dst = "h1"
size = "256KiB"
"""


def _with(mode: str) -> str:
    return LEAF_SPINE + f'[switch]\npath_select = "{mode}"\n'


@pytest.mark.parametrize("mode", PATH_SELECT)
def test_mode_reaches_every_switch(mode: str) -> None:
    sim = build(loads(_with(mode), "p.toml"))
    assert {s.config["path_select"] for s in sim.switches.values()} == {PATH_SELECT.index(mode)}


def test_default_is_ecmp() -> None:
    sim = build(loads(LEAF_SPINE, "p.toml"))
    assert {s.config["path_select"] for s in sim.switches.values()} == {PATH_SELECT.index("ecmp")}


def test_spray_reorders_one_qp_and_gbn_retransmits() -> None:
    def run(mode: str):
        (f,) = run_scenario(loads(_with(mode), "p.toml"), out_dir="", progress=False).flows
        assert f.status == "ok"
        return f

    ecmp, spray = run("ecmp"), run("spray")
    assert ecmp.retx_pkts == 0
    assert spray.retx_pkts > 0
    assert spray.fct_ps > ecmp.fct_ps


def test_bad_mode_names_key_value_and_choices() -> None:
    with pytest.raises(ScenarioError) as info:
        loads(_with("random"), "p.toml")
    msg = str(info.value)
    assert "switch.path_select" in msg and "'random'" in msg
    assert all(repr(m) in msg for m in PATH_SELECT)


def test_irn_window_reaches_the_flows() -> None:
    # four hops of 1 us: one link's bandwidth-delay product (the default window) binds
    text = LEAF_SPINE.replace('fabric_rate = "25Gbps"\n', "") + '[qp]\nrecovery = "irn"\n'

    def fct(extra: str) -> int:
        (f,) = run_scenario(loads(text + extra, "p.toml"), out_dir="", progress=False).flows
        assert f.status == "ok"
        return f.fct_ps

    assert fct("irn_window = 64\n") < 0.7 * fct("")
    with pytest.raises(ScenarioError, match="qp.irn_window"):
        loads(text + "irn_window = 70000\n", "p.toml")
