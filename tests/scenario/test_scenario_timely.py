"""Scenario files select TIMELY and set every TimelyParams field from [congestion_control.timely]."""

from __future__ import annotations

import pytest

from rdmasim.cc_timely import TimelyParams
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.schema import SCHEMA
from tests.scenario.cc_flows import TWO_SENDER_INCAST

FLOWS = TWO_SENDER_INCAST

TIMELY = """
[congestion_control]
algorithm = "timely"
notification_point = false
[congestion_control.timely]
alpha = 0.5
beta = 0.6
t_low = "8us"
t_high = "90us"
min_rtt = "16us"
ai_rate = "200Mbps"
hai_after = 3
hai_factor = 4.0
min_rate = "2Gbps"
max_rate = "80Gbps"
initial_rate = "40Gbps"
segment = 0
"""


def test_every_timely_field_has_a_key() -> None:
    assert {f"congestion_control.timely.{k}" for k in TimelyParams.field_names()} <= set(SCHEMA)


def test_table_sets_every_field() -> None:
    p = TimelyParams.from_scenario(loads(FLOWS + TIMELY).values)
    assert p.to_c() == TimelyParams(alpha=0.5, beta=0.6, t_low="8us", t_high="90us", min_rtt="16us",
                                    ai_rate="200Mbps", hai_after=3, hai_factor=4.0, min_rate="2Gbps",
                                    max_rate="80Gbps", initial_rate="40Gbps", segment=0).to_c()


def test_defaults_are_the_params_class_defaults() -> None:
    text = FLOWS + '[congestion_control]\nalgorithm = "timely"\n'
    assert TimelyParams.from_scenario(loads(text).values).to_c() == TimelyParams().to_c()


def test_hosts_run_timely_and_the_flows_finish() -> None:
    res = run_scenario(loads(FLOWS + TIMELY), "")
    assert all(f.status == "ok" for f in res.flows) and len(res.flows) == 2
    # TIMELY asks for one ACK per update (segment 0: per window of data), besides the requester's
    # own (every 65th packet, the last of a message)
    plain = run_scenario(loads(FLOWS), "")
    assert plain.nics["h2"]["tx_frames"] < res.nics["h2"]["tx_frames"] < res.nics["h2"]["rx_frames"] // 2


@pytest.mark.parametrize("line, key", [
    ("alpha = 0.0", "congestion_control.timely.alpha"),
    ('max_rate = "fast"', "congestion_control.timely.max_rate"),
    ('t_low = "600us"', "congestion_control.timely.t_high"),  # t_high must exceed t_low
    ("hai_after = 0", "congestion_control.timely.hai_after"),
])
def test_bad_values_name_the_key(line: str, key: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'timely'\n[congestion_control.timely]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any(key in str(p) for p in info.value.problems), [str(p) for p in info.value.problems]
