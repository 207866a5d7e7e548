"""DCQCN follows the NIC profile: with no preset named, a host gets its profile's DCQCN preset and
CNP interval (cx6: NVIDIA's parameters, one CNP per QP per 4 us; rxe: the paper's, 50 us), from
scenario files and from Host.set_congestion_control alike."""

from __future__ import annotations

import pytest

from rdmasim import nic
from rdmasim import traffic as tr
from rdmasim.cc import DcqcnParams
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.run import build

INCAST = """
[simulation]
progress = false
seed = 3
[topology]
kind = "incast"
n_senders = 4
[link]
rate = "100Gbps"
delay = "1us"
[switch]
lossless = [3]
[switch.ecn]
kmin = "5KB"
kmax = "200KB"
pmax = 0.01
[congestion_control]
algorithm = "dcqcn"
{cc}
[nic]
profile = "{profile}"
[qp]
mtu = 1024
[traffic.incast]
size = "1MiB"
"""


def _flows(profile: str, cc: str = "") -> list[tuple[int, int]]:
    res = run_scenario(loads(INCAST.format(profile=profile, cc=cc), "i.toml"), out_dir="", progress=False)
    assert all(f.status == "ok" for f in res.flows)
    return [(f.fct_ps, f.cnps) for f in res.flows]


def test_cx6_without_a_preset_runs_its_nvidia_preset() -> None:
    default = _flows("cx6")
    assert default == _flows("cx6", 'preset = "nvidia"')
    paper = _flows("cx6", 'preset = "paper"')
    # NVIDIA's 4 us CNP interval lets a QP get CNPs 12.5 times as often as the paper's 50 us
    assert sum(c for _, c in default) > 2 * sum(c for _, c in paper)


def test_rxe_without_a_preset_runs_the_paper_preset_as_before() -> None:
    assert _flows("rxe") == _flows("rxe", 'preset = "paper"')


def test_overrides_take_the_names_of_the_profiles_preset() -> None:
    # mlxconfig names for cx6 (its preset is nvidia), DcqcnParams names for rxe
    fast = _flows("cx6", "[congestion_control.overrides]\nmin_time_between_cnps = 50\n")
    assert fast == _flows("cx6", 'preset = "nvidia"\n[congestion_control.overrides]\n'
                                 "min_time_between_cnps = 50\n")
    with pytest.raises(ScenarioError) as info:
        loads(INCAST.format(profile="cx6", cc="[congestion_control.overrides]\ng = 0.5\n"), "i.toml")
    assert "congestion_control.overrides.g" in str(info.value)
    loads(INCAST.format(profile="rxe", cc="[congestion_control.overrides]\ng = 0.5\n"), "i.toml")


def test_profile_dcqcn_params_keep_an_explicit_interval() -> None:
    cx6 = nic.get_profile("cx6")
    assert cx6.dcqcn_params() == DcqcnParams.nvidia()  # its own 4 us
    assert cx6.dcqcn_params(min_time_between_cnps=20).cnp_interval == "20us"
    rxe = nic.get_profile("rxe", cnp_interval="10us")
    assert rxe.dcqcn_params() == DcqcnParams.paper(cnp_interval="10us")
    assert rxe.dcqcn_params(cnp_interval="7us").cnp_interval == "7us"


def _api_run(profile: str, params: DcqcnParams | None) -> list[tuple[int, int]]:
    # the scenario's fabric without its congestion control, then the Host API
    sim = build(loads(INCAST.format(profile="rxe", cc="").replace('"dcqcn"', '"none"'), "i.toml"))
    for h in sim.hosts.values():
        h.set_nic_profile(profile)
        h.set_congestion_control("dcqcn", params)
    n = len(sim.hosts) - 1
    flows = sim.add_flows(tr.FlowTable.from_columns(list(range(n)), [n] * n, [1 << 20] * n), mtu=1024)
    sim.run_flows()
    res = flows.results()
    return list(zip(res["finish_ps"].tolist(), res["cnps"].tolist(), strict=True))


def test_host_api_defaults_to_the_profiles_preset() -> None:
    cx6 = _api_run("cx6", None)
    assert cx6 == _api_run("cx6", nic.get_profile("cx6").dcqcn_params())
    assert cx6 != _api_run("cx6", DcqcnParams.paper())
    assert _api_run("rxe", None) == _api_run("rxe", DcqcnParams.paper())
