"""Scenario files select DCTCP and set every DctcpParams field from [congestion_control.dctcp]."""

from __future__ import annotations

import pytest

from rdmasim.cc_dctcp import DctcpParams
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.schema import SCHEMA
from tests.scenario.cc_flows import TWO_SENDER_INCAST

FLOWS = TWO_SENDER_INCAST

DCTCP = """
[congestion_control]
algorithm = "dctcp"
notification_point = false
[congestion_control.dctcp]
g = 0.125
initial_alpha = 0.5
ai_rate = "2Gbps"
min_rate = "5Gbps"
max_rate = "80Gbps"
window = "40KB"
var_win = false
pace = false
"""


def test_every_dctcp_field_has_a_key() -> None:
    assert {f"congestion_control.dctcp.{k}" for k in DctcpParams.field_names()} <= set(SCHEMA)


def test_table_sets_every_field() -> None:
    sc = loads(FLOWS + DCTCP)
    p = DctcpParams.from_scenario(sc.values)
    assert p.to_c() == DctcpParams(g=0.125, initial_alpha=0.5, ai_rate="2Gbps", min_rate="5Gbps",
                                   max_rate="80Gbps", window="40KB", var_win=False, pace=False).to_c()


def test_hosts_run_dctcp_and_the_flows_finish() -> None:
    plain = run_scenario(loads(FLOWS), "")
    dctcp = run_scenario(loads(FLOWS + DCTCP.replace("pace = false", "pace = true")), "")
    assert all(f.status == "ok" for f in dctcp.flows) and len(dctcp.flows) == 2
    # DCTCP asks for an ACK per request packet: the receiver answers every data frame
    assert dctcp.nics["h2"]["tx_frames"] == dctcp.nics["h2"]["rx_frames"] == 1024
    assert plain.nics["h2"]["tx_frames"] < 50


@pytest.mark.parametrize("line, key", [
    ("g = 0.0", "congestion_control.dctcp.g"),
    ('max_rate = "fast"', "congestion_control.dctcp.max_rate"),
    ('pace = false', "congestion_control.dctcp.pace"),  # no window: nothing would limit the sender
])
def test_bad_values_name_the_key(line: str, key: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'dctcp'\n[congestion_control.dctcp]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any(key in str(p) for p in info.value.problems), [str(p) for p in info.value.problems]
