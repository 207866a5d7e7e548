"""Scenario files select NSCC and set every NsccParams field from [congestion_control.nscc]."""

from __future__ import annotations

import pytest

from rdmasim.cc_nscc import NsccParams
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.schema import SCHEMA
from tests.scenario.cc_flows import TWO_SENDER_INCAST

FLOWS = TWO_SENDER_INCAST

NSCC = """
[congestion_control]
algorithm = "nscc"
notification_point = false
[congestion_control.nscc]
base_rtt = "5us"
trimming = true
target_qdelay = "3us"
qa_threshold = "20us"
qa_gate = 2
quick_adapt = false
alpha_mss = 3.0
fi_mss = 4.0
fi_scale = 0.5
fast_increase_delay = "2us"
eta_mss = 0.1
gamma = 0.7
max_md = 0.4
delay_alpha = 0.05
adjust_packets = 4
ref_rate = "200Gbps"
ref_rtt = "10us"
min_cwnd = "2KB"
max_cwnd = "200KB"
init_cwnd = "50KB"
packet_bytes = 1024
"""


def test_every_nscc_field_has_a_key() -> None:
    assert {f"congestion_control.nscc.{k}" for k in NsccParams.field_names()} <= set(SCHEMA)


def test_table_sets_every_field() -> None:
    p = NsccParams.from_scenario(loads(FLOWS + NSCC).values)
    assert p.to_c() == NsccParams(base_rtt="5us", trimming=True, target_qdelay="3us", qa_threshold="20us",
                                  qa_gate=2, quick_adapt=False, alpha_mss=3.0, fi_mss=4.0, fi_scale=0.5,
                                  fast_increase_delay="2us", eta_mss=0.1, gamma=0.7, max_md=0.4,
                                  delay_alpha=0.05, adjust_packets=4, ref_rate="200Gbps", ref_rtt="10us",
                                  min_cwnd="2KB", max_cwnd="200KB", init_cwnd="50KB",
                                  packet_bytes=1024).to_c()


def test_defaults_are_the_params_class_defaults() -> None:
    text = FLOWS + '[congestion_control]\nalgorithm = "nscc"\n'
    assert NsccParams.from_scenario(loads(text).values).to_c() == NsccParams().to_c()


def test_hosts_run_nscc_and_the_flows_finish() -> None:
    text = FLOWS + '[congestion_control]\nalgorithm = "nscc"\nnotification_point = false\n'
    res = run_scenario(loads(text), "")
    assert all(f.status == "ok" for f in res.flows) and len(res.flows) == 2
    # NSCC asks for an ACK per packet: the receiver sends about as many frames as it receives
    plain = run_scenario(loads(FLOWS), "")
    assert plain.nics["h2"]["tx_frames"] < 50 < res.nics["h2"]["tx_frames"]


@pytest.mark.parametrize("line, key", [
    ("gamma = 0.0", "congestion_control.nscc.gamma"),
    ("max_md = 1.0", "congestion_control.nscc.max_md"),
    ('base_rtt = "soon"', "congestion_control.nscc.base_rtt"),
    ('max_cwnd = "512"', "congestion_control.nscc.max_cwnd"),   # below one packet
    ("qa_gate = 64", "congestion_control.nscc.qa_gate"),
])
def test_bad_values_name_the_key(line: str, key: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'nscc'\n[congestion_control.nscc]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any(key in str(p) for p in info.value.problems), [str(p) for p in info.value.problems]
