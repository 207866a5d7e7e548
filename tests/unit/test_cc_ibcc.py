"""InfiniBand congestion control (IBA annex A10, csrc/cc/ibcc.c): the CCT index steps on BECNs and
on the CCTI_Timer exactly as specified, the rate comes from the table, parameters are validated
naming the key, the host API and scenario files select it, and a sweep compares it with DCQCN."""

from __future__ import annotations

from pathlib import Path

import pytest

import rdmasim
from rdmasim import _core
from rdmasim.cc import ALGORITHM_NAMES, algorithm
from rdmasim.cc_ibcc import CCT_MAX, CCTI_TIMER_UNIT_PS, IPD_MAX, IbccParams, encode_ipd, nearest_ipd
from rdmasim.scenario import ScenarioError, loads, run_scenario
from rdmasim.scenario.schema import SCHEMA
from tests.scenario.cc_flows import TWO_SENDER_INCAST

LINE = 100e9
US = 1_000_000


def agent(**kw: object) -> _core.IbccForTest:
    return _core.IbccForTest(IbccParams(**kw).to_c(), LINE)


# ---- the table's encoding ----

def test_entry_encoding_is_shift_and_multiplier() -> None:
    assert encode_ipd(0) == 0
    assert encode_ipd(16383) == 16383                       # shift 0, multiplier 16383
    assert encode_ipd(16384) == 1 << 14 | 8192              # shift 1
    assert encode_ipd(40000) == 2 << 14 | 10000             # 40000 = 10000 << 2
    assert encode_ipd(IPD_MAX) == 3 << 14 | 16383
    for bad in (16385, -1, IPD_MAX + 8, 1.5, True):
        with pytest.raises(ValueError, match="IPD"):
            encode_ipd(bad)  # type: ignore[arg-type]
    # the C decoder reads back every encodable value written
    for ipd in (0, 1, 22, 2794, 16383, 16384, 32766, 65532, 131064):
        assert _core.ibcc_ipd(encode_ipd(ipd)) == ipd
    assert _core.ibcc_ipd(3 << 14 | 5) == 40                # multiplier 5 << shift 3
    assert nearest_ipd(16385) in (16384, 16386) and nearest_ipd(1e9) == IPD_MAX


def test_pairs_and_values_give_the_same_table() -> None:
    a = IbccParams(cct=(0, 100, 40000))
    b = IbccParams(cct=((0, 0), (0, 100), [2, 10000]))
    assert a.entries() == b.entries() and a.ipds() == [0, 100, 40000]


def test_linear_table_and_for_path() -> None:
    t = IbccParams.linear_cct(5, 22)
    assert t == (0, 22, 44, 66, 88)
    p = IbccParams.for_path("100Gbps", 1024)
    assert len(p.cct) == CCT_MAX and p.cct == IbccParams().cct   # the default table is this one
    # the last entry holds a 1 KB packet (1102 B on the wire) near 1/32 of the line (the step is
    # rounded to whole nanoseconds: 21.5 -> 22)
    assert p.rate_bps(CCT_MAX - 1, "100Gbps", 1102) == pytest.approx(LINE / 32, rel=0.03)
    slow = IbccParams.for_path("25Gbps", 4096, min_share=0.1, entries=64)
    assert len(slow.cct) == 64 and slow.rate_bps(63, "25Gbps", 4174) == pytest.approx(2.5e9, rel=0.01)


# ---- the CCT index: BECNs and the CCTI_Timer ----

def test_becn_raises_ccti_by_increase_up_to_the_limit() -> None:
    a = agent(ccti_increase=3, ccti_limit=10, ccti_min=2, cct=tuple(range(0, 160, 10)))
    assert a.state["ccti"] == 2                             # starts at CCTI_Min
    seen = []
    for k in range(5):
        a.becn(k)                                           # all within one timer period
        seen.append(a.state["ccti"])
    assert seen == [5, 8, 10, 10, 10]                       # +3, +3, clipped to 10, stays
    s = a.state
    assert s["becns"] == 5 and s["at_limit"] == 2 and s["ccti_peak"] == 10


def test_timer_lowers_ccti_by_one_per_expiry_down_to_min() -> None:
    timer = 7                                               # 7 x 1.024 us
    period = timer * CCTI_TIMER_UNIT_PS
    a = agent(ccti_increase=2, ccti_min=1, ccti_timer=timer, cct=tuple(range(0, 100, 10)))
    t0 = 5 * US
    a.becn(t0)
    a.becn(t0 + 1000)                                       # a BECN does not restart a running timer
    a.becn(t0 + period // 2)
    assert a.state["ccti"] == 7 and a.state["next_timer_ps"] == t0 + period
    a.advance(t0 + period - 1)
    assert a.state["ccti"] == 7                             # not yet
    a.advance(t0 + period)
    assert a.state["ccti"] == 6 and a.state["next_timer_ps"] == t0 + 2 * period
    a.advance(t0 + 4 * period + 3)                          # three more expiries at once, in order
    assert a.state["ccti"] == 3 and a.state["expiries"] == 4
    a.advance(t0 + 100 * period)                            # down to CCTI_Min, then the timer stops
    s = a.state
    assert s["ccti"] == 1 and s["expiries"] == 6 and s["next_timer_ps"] == 0
    t1 = t0 + 200 * period + 17                             # the next BECN starts it afresh
    a.becn(t1)
    assert a.state["ccti"] == 3 and a.state["next_timer_ps"] == t1 + period


def test_no_timer_at_ccti_min() -> None:
    a = agent(ccti_limit=0, cct=(0, 50))                    # CCTI_Limit 0: a BECN cannot move it
    a.becn(0)
    assert a.state["ccti"] == 0 and a.state["next_timer_ps"] == 0 and a.state["at_limit"] == 1


@pytest.mark.parametrize("wire", [64, 1102, 4174])
def test_rate_is_wire_time_plus_the_entry_delay(wire: int) -> None:
    p = IbccParams(cct=(0, 10, 250, 40000), ipd_unit="2ns")
    a = _core.IbccForTest(p.to_c(), LINE)
    assert a.rate(wire) == 0.0 and a.delay_ps == 0          # entry 0: IPD 0, the line rate
    for k, ipd in enumerate((10, 250, 40000), start=1):
        a.becn(k)
        assert a.delay_ps == ipd * 2000
        bits = 8 * wire
        want = bits / (bits / LINE + ipd * 2e-9)
        assert a.rate(wire) == pytest.approx(want, rel=1e-12)
        assert p.rate_bps(k, "100Gbps", wire) == pytest.approx(want, rel=1e-12)


# ---- validation: key, value, allowed range ----

@pytest.mark.parametrize("kw, key, allowed", [
    (dict(ccti_increase=0), "ccti_increase", "1..255"),
    (dict(ccti_increase=256), "ccti_increase", "1..255"),
    (dict(ccti_timer=0), "ccti_timer", "1..65535"),
    (dict(ccti_limit=128), "ccti_limit", "0..127"),
    (dict(cct=(0, 5), ccti_limit=2), "ccti_limit", "0..1"),
    (dict(ccti_min=9, ccti_limit=8), "ccti_min", "0..8"),
    (dict(cct=()), "cct", "1..128"),
    (dict(cct=tuple(range(129))), "cct", "1..128"),
    (dict(cct=(0, 16385)), "cct", "entry 1"),
    (dict(cct=(0, (4, 1))), "cct", "shift 0..3"),
    (dict(ipd_unit="0ns"), "ipd_unit", "positive time"),
    (dict(cnp_interval="soon"), "cnp_interval", "a time"),
])
def test_bad_parameters_name_key_value_and_range(kw: dict, key: str, allowed: str) -> None:
    with pytest.raises(ValueError) as info:
        IbccParams(**kw)
    msg = str(info.value)
    assert msg.startswith(f"IB CC parameter {key}=") and allowed in msg, msg


# ---- the host API, the registry, scenario files, sweeps ----

def test_registered_and_selectable_on_a_host() -> None:
    assert "ibcc" in ALGORITHM_NAMES and algorithm("ibcc").params_class is IbccParams
    assert algorithm("ibcc").uses_cnp
    assert _core.cc_kinds()["ibcc"][1]
    t = rdmasim.incast(1, rate="100Gbps", delay="1us", mtu=1024)
    for h in t.hosts:
        h.set_congestion_control("ibcc", IbccParams(ccti_timer=5))
    with pytest.raises(TypeError, match="IbccParams"):
        t.hosts[0].set_congestion_control("ibcc", object())


FLOWS = TWO_SENDER_INCAST

IBCC = """
[congestion_control]
algorithm = "ibcc"
[congestion_control.ibcc]
ccti_increase = 2
ccti_limit = 3
ccti_min = 1
ccti_timer = 50
cct = [0, 100, 200, 40000, 500]
ipd_unit = "2ns"
cnp_interval = "8us"
"""


def test_every_field_has_a_scenario_key() -> None:
    keys = {k for k in SCHEMA if k.startswith("congestion_control.ibcc.")}
    assert {f"congestion_control.ibcc.{k}" for k in IbccParams.field_names()} <= keys


def test_scenario_table_sets_every_field() -> None:
    p = IbccParams.from_scenario(loads(FLOWS + IBCC).values)
    assert p.to_c() == IbccParams(ccti_increase=2, ccti_limit=3, ccti_min=1, ccti_timer=50,
                                  cct=(0, 100, 200, 40000, 500), ipd_unit="2ns", cnp_interval="8us").to_c()
    assert p.cnp_interval == 8 * US


def test_scenario_defaults_are_the_params_class_defaults() -> None:
    v = loads(FLOWS + '[congestion_control]\nalgorithm = "ibcc"\n').values
    assert IbccParams.from_scenario(v).to_c() == IbccParams().to_c()
    v = loads(FLOWS + '[congestion_control]\nalgorithm = "ibcc"\n[congestion_control.ibcc]\n'
              'cct_entries = 4\ncct_step = 7\n').values
    assert IbccParams.from_scenario(v).ipds() == [0, 7, 14, 21]


def test_scenario_runs_ibcc_and_the_flows_finish() -> None:
    res = run_scenario(loads(FLOWS + IBCC), "")
    assert all(f.status == "ok" for f in res.flows) and len(res.flows) == 2


@pytest.mark.parametrize("line, key", [
    ("ccti_increase = 0", "congestion_control.ibcc.ccti_increase"),
    ("ccti_timer = 70000", "congestion_control.ibcc.ccti_timer"),
    ("cct = [0, 16385]", "congestion_control.ibcc.cct"),
    ("cct = [0, 5]\nccti_limit = 4", "congestion_control.ibcc.ccti_limit"),
    ('ipd_unit = "0ns"', "congestion_control.ibcc.ipd_unit"),
])
def test_scenario_bad_values_name_the_key(line: str, key: str) -> None:
    text = FLOWS + "[congestion_control]\nalgorithm = 'ibcc'\n[congestion_control.ibcc]\n" + line + "\n"
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml")
    assert any(key in str(p) for p in info.value.problems), [str(p) for p in info.value.problems]


def test_sweep_compares_dcqcn_and_ibcc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rdmasim.cli import main

    scen = tmp_path / "incast.toml"
    scen.write_text("[simulation]\nprogress = false\n" + FLOWS)
    assert main(["sweep", str(scen), "--param", "congestion_control.algorithm=dcqcn,ibcc", "--out",
                 str(tmp_path / "s"), "--quiet", "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert "dcqcn" in text and "ibcc" in text
