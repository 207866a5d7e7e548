"""Scenario files select HPCC and set every HpccParams field from [congestion_control.hpcc]."""

from __future__ import annotations

import pytest

from rdmasim.cc_hpcc import HpccParams
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.schema import SCHEMA
from tests.scenario.cc_flows import TWO_SENDER_INCAST

FLOWS = TWO_SENDER_INCAST

HPCC = """
[congestion_control]
algorithm = "hpcc"
notification_point = false
[congestion_control.hpcc]
eta = 0.9
max_stage = 3
fast_react = false
base_rtt = "4200ns"
ai_rate = "50Mbps"
min_rate = "2Gbps"
max_rate = "80Gbps"
"""


def test_every_hpcc_field_has_a_key() -> None:
    assert {f"congestion_control.hpcc.{k}" for k in HpccParams.field_names()} <= set(SCHEMA)


def test_table_sets_every_field() -> None:
    p = HpccParams.from_scenario(loads(FLOWS + HPCC).values)
    assert p.to_c() == HpccParams(eta=0.9, max_stage=3, fast_react=False, base_rtt="4200ns", ai_rate="50Mbps",
                                  min_rate="2Gbps", max_rate="80Gbps").to_c()


def test_defaults_are_the_params_class_defaults() -> None:
    text = FLOWS + '[congestion_control]\nalgorithm = "hpcc"\n'
    assert HpccParams.from_scenario(loads(text).values).to_c() == HpccParams().to_c()


def test_hosts_run_hpcc_and_the_flows_finish() -> None:
    text = (FLOWS + '[congestion_control]\nalgorithm = "hpcc"\n'
            '[congestion_control.hpcc]\nbase_rtt = "4200ns"\n')
    res = run_scenario(loads(text), "")
    assert all(f.status == "ok" for f in res.flows) and len(res.flows) == 2
    # HPCC asks for an ACK per packet (each brings the INT of its request back)
    plain = run_scenario(loads(FLOWS), "")
    assert plain.nics["h2"]["tx_frames"] < 50
    assert res.nics["h2"]["tx_frames"] >= 2 * 512  # 512 packets per flow, an ACK each


@pytest.mark.parametrize("line, key", [
    ("eta = 0.0", "congestion_control.hpcc.eta"),
    ("eta = 1.5", "congestion_control.hpcc.eta"),
    ("max_stage = -1", "congestion_control.hpcc.max_stage"),
    ('base_rtt = "soon"', "congestion_control.hpcc.base_rtt"),
    ('max_rate = "1Gbps"\nmin_rate = "2Gbps"', "congestion_control.hpcc.min_rate"),  # min <= max
])
def test_bad_values_name_the_key(line: str, key: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'hpcc'\n[congestion_control.hpcc]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any(key in str(p) for p in info.value.problems), [str(p) for p in info.value.problems]


def test_ack_every_key_sets_the_field_and_halves_the_ack_frames() -> None:
    text = (FLOWS + '[congestion_control]\nalgorithm = "hpcc"\n'
            '[congestion_control.hpcc]\nbase_rtt = "4200ns"\nack_every = 2\n')
    assert HpccParams.from_scenario(loads(text).values).ack_every == 2
    every = run_scenario(loads(text.replace("ack_every = 2", "ack_every = 1")), "")
    res = run_scenario(loads(text), "")
    assert res.nics["h2"]["tx_frames"] < 0.75 * every.nics["h2"]["tx_frames"]
    assert res.nics["h2"]["tx_frames"] > 512  # every second packet and the window-filling ones


@pytest.mark.parametrize("line", ["ack_every = 0", "ack_every = 4294967296"])
def test_bad_ack_every_names_the_key(line: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'hpcc'\n[congestion_control.hpcc]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any("congestion_control.hpcc.ack_every" in str(p) for p in info.value.problems)
