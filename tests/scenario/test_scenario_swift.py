"""Scenario files select Swift and set every SwiftParams field from [congestion_control.swift]."""

from __future__ import annotations

import pytest

from rdmasim.cc_swift import SwiftParams
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.schema import SCHEMA
from tests.scenario.cc_flows import TWO_SENDER_INCAST

FLOWS = TWO_SENDER_INCAST

SWIFT = """
[congestion_control]
algorithm = "swift"
notification_point = false
[congestion_control.swift]
ai = 2.0
beta = 0.5
max_mdf = 0.4
base_target = "6us"
hop_scale = "500ns"
hops = 1
fs_range = "4us"
fs_min_cwnd = 0.5
fs_max_cwnd = 50.0
min_cwnd = 0.01
max_cwnd = 200.0
init_cwnd = 30.0
packet_bytes = 1024
acks_per_window = 2
"""


def test_every_swift_field_has_a_key() -> None:
    assert {f"congestion_control.swift.{k}" for k in SwiftParams.field_names()} <= set(SCHEMA)


def test_table_sets_every_field() -> None:
    p = SwiftParams.from_scenario(loads(FLOWS + SWIFT).values)
    assert p.to_c() == SwiftParams(ai=2.0, beta=0.5, max_mdf=0.4, base_target="6us", hop_scale="500ns",
                                   hops=1, fs_range="4us", fs_min_cwnd=0.5, fs_max_cwnd=50.0, min_cwnd=0.01,
                                   max_cwnd=200.0, init_cwnd=30.0, packet_bytes=1024,
                                   acks_per_window=2).to_c()


def test_defaults_are_the_params_class_defaults() -> None:
    text = FLOWS + '[congestion_control]\nalgorithm = "swift"\n'
    assert SwiftParams.from_scenario(loads(text).values).to_c() == SwiftParams().to_c()


def test_hosts_run_swift_and_the_flows_finish() -> None:
    res = run_scenario(loads(FLOWS + SWIFT), "")
    assert all(f.status == "ok" for f in res.flows) and len(res.flows) == 2
    # Swift asks for about acks_per_window ACKs per window, far more than the requester's own
    # cadence (every 65th packet and the last of a message) but fewer than one per packet
    plain = run_scenario(loads(FLOWS), "")
    assert plain.nics["h2"]["tx_frames"] < 50 < res.nics["h2"]["tx_frames"] < res.nics["h2"]["rx_frames"]


@pytest.mark.parametrize("line, key", [
    ("beta = 0.0", "congestion_control.swift.beta"),
    ("max_mdf = 1.0", "congestion_control.swift.max_mdf"),
    ("fs_max_cwnd = 0.05", "congestion_control.swift.fs_max_cwnd"),  # must exceed fs_min_cwnd
    ('base_target = "soon"', "congestion_control.swift.base_target"),
])
def test_bad_values_name_the_key(line: str, key: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'swift'\n[congestion_control.swift]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any(key in str(p) for p in info.value.problems), [str(p) for p in info.value.problems]
