"""[nic] in scenario files: the profile reaches every host (a window-bound flow runs faster on cx6,
and an override of its window binds again), and bad profiles or constants are refused naming the key."""

from __future__ import annotations

import pytest

from rdmasim.scenario import ScenarioError, loads, run_scenario

B2B = """
[simulation]
progress = false
[topology]
kind = "back_to_back"
[link]
rate = "100Gbps"
delay = "10us"
[qp]
mtu = 1024
[[flows]]
src = "a"
dst = "b"
size = "4MiB"
"""


def _fct(extra: str) -> int:
    res = run_scenario(loads(B2B + extra, "n.toml"), out_dir="", progress=False)
    (f,) = res.flows
    assert f.status == "ok"
    return f.fct_ps


def test_profile_and_override_reach_the_hosts() -> None:
    rxe = _fct("")  # rxe's 128-PSN window binds at 10 us of delay
    cx6 = _fct('[nic]\nprofile = "cx6"\n')
    assert cx6 < rxe / 2
    # cx6 with rxe's window back: bound by the window again (within 10 % of rxe)
    narrow = _fct('[nic]\nprofile = "cx6"\n[nic.overrides]\nmax_unacked_psns = 128\n')
    assert abs(narrow - rxe) < 0.1 * rxe


@pytest.mark.parametrize(("extra", "key"), [
    ('[nic]\nprofile = "mlx9"\n', "nic.profile"),
    ('[nic.overrides]\nmax_unacked_psn = 10\n', "nic.overrides.max_unacked_psn"),
    ('[nic.overrides]\nmax_unacked_psns = 0\n', "nic.overrides"),
    ('[nic.overrides]\nack_req_interval = 0\n', "nic.overrides.ack_req_interval"),
    ('[nic.overrides]\nmax_unacked_psns = true\n', "nic.overrides.max_unacked_psns"),
    ('[nic.overrides]\nmax_unacked_psns = 7.0\n', "nic.overrides.max_unacked_psns"),
    ('[nic.overrides]\nack_coalesce_pkts = true\n', "nic.overrides.ack_coalesce_pkts"),
    ('[nic.overrides]\nack_coalesce_pkts = 2.0\nack_timeout = "2us"\n', "nic.overrides.ack_coalesce_pkts"),
    ('[nic.overrides]\nack_req_interval = true\n', "nic.overrides.ack_req_interval"),
    ('[nic.overrides]\nack_req_interval = 7.0\n', "nic.overrides.ack_req_interval"),
    ('[nic.overrides]\nack_timeout = true\n', "nic.overrides.ack_timeout"),
    ('[nic.overrides]\npfc_response = 7.0\n', "nic.overrides.pfc_response"),
])
def test_bad_nic_settings_name_the_key(extra: str, key: str) -> None:
    with pytest.raises(ScenarioError) as info:
        loads(B2B + extra, "n.toml")
    assert key in str(info.value)



def test_pfc_response_keys_are_read_and_checked() -> None:
    sc = loads(B2B + '[switch]\npfc_response = "1.5us"\n[nic.overrides]\npfc_response = "2us"\n', "n.toml")
    assert sc.values["switch.pfc_response"] == 1_500_000
    assert sc.values["nic.overrides"] == {"pfc_response": "2us"}
    assert _fct('[nic.overrides]\npfc_response = "2us"\n') > 0
    for extra, key in (('[nic.overrides]\npfc_response = "-2us"\n', "nic.overrides"),
                       ('[switch]\npfc_response = -1\n', "switch.pfc_response")):
        with pytest.raises(ScenarioError) as info:
            loads(B2B + extra, "n.toml")
        assert key in str(info.value)


def test_ack_req_interval_override_reaches_the_requester() -> None:
    # rxe's window (128 PSNs) binds at 10 us of delay and slides by one AckReq cadence per RTT:
    # 66 packets with rxe's, 129 when every packet asks, so the flow takes about half the time
    sc = loads(B2B + '[nic.overrides]\nack_req_interval = 1\n', "n.toml")
    assert sc.values["nic.overrides"] == {"ack_req_interval": 1}
    assert _fct('[nic.overrides]\nack_req_interval = 1\n') < 0.6 * _fct("")


@pytest.mark.parametrize(("extra", "key", "value"), [
    # the window is set below the AckReq cadence: that key is named, with the other
    ('[nic.overrides]\nmax_unacked_psns = 1\n', "nic.overrides.max_unacked_psns", "1"),
    ('[nic.overrides]\nmax_unacked_psns = 6\nack_req_interval = 8\n', "nic.overrides.max_unacked_psns", "6"),
    # only the cadence is changed, past the profile's window (rxe: 128 PSNs)
    ('[nic.overrides]\nack_req_interval = 200\n', "nic.overrides.ack_req_interval", "200"),
])
def test_window_below_the_ackreq_interval_is_refused(extra: str, key: str, value: str) -> None:
    """A window that ends before the requester's next AckReq would wait for the retransmit timeout
    on every long message (a 64 KiB WRITE took 0.8 s instead of 6 us): refused, naming both keys."""
    with pytest.raises(ScenarioError) as info:
        loads(B2B + extra, "n.toml")
    (problem,) = info.value.problems
    assert problem.path == key
    assert str(problem.value) == value
    assert "max_unacked_psns" in str(problem) and "ack_req_interval" in str(problem)
    assert "max_unacked_psns + 1 >= ack_req_interval" in str(problem)
    sc = loads(B2B + '[nic.overrides]\nmax_unacked_psns = 7\nack_req_interval = 8\n', "n.toml")
    assert sc.values["nic.overrides"] == {"max_unacked_psns": 7, "ack_req_interval": 8}
