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
    ('[nic.overrides]\nack_req_interval = 0\n', "nic.overrides"),
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
