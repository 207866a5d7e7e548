"""Quantities with a dimension need a unit in scenario files and override values: a bare number
is refused with one line naming the file, the key, the value and the unit expected. Counts,
probabilities and fractions stay bare; sizes may be a bare number of bytes; 0 needs no unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.scenario import ScenarioError, loads

MINIMAL = '[[flows]]\nsrc = "a"\ndst = "b"\nsize = "64KiB"\n'


def problems(text: str, overrides: dict[str, object] | None = None) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        loads(text, "s.toml", overrides)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(("table", "key", "value", "expected"), [
    ("link", "delay", "1", 's.toml: link.delay = 1: a time needs a unit, e.g. "1us"'),
    ("simulation", "duration", "20", 's.toml: simulation.duration = 20: a time needs a unit, e.g. "20us"'),
    ("link", "rate", "100", 's.toml: link.rate = 100: a rate needs a unit, e.g. "100Gbps"'),
    ("link", "delay", "1.5", 's.toml: link.delay = 1.5: a time needs a unit, e.g. "1.5us"'),
    ("switch.watchdog", "poll", "100", 's.toml: switch.watchdog.poll = 100: a time needs a unit'),
    ("congestion_control.timely", "min_rate", "10", "congestion_control.timely.min_rate = 10: a rate "
     "needs a unit"),
    ("congestion_control.timely", "max_rate", "50", "congestion_control.timely.max_rate = 50: a rate "
     "needs a unit"),
    ("topology", "fabric_rate", "400", "topology.fabric_rate = 400: a rate needs a unit"),
])
def test_bare_time_or_rate_is_refused(table: str, key: str, value: str, expected: str) -> None:
    text = MINIMAL + f"[{table}]\n{key} = {value}\n"
    if table == "topology":
        text += 'kind = "leaf_spine"\n'
    shown = problems(text.replace('[[flows]]\nsrc = "a"\ndst = "b"', '[[flows]]\nsrc = "h0"\ndst = "h1"')
                     if table == "topology" else text)
    assert len(shown) == 1 and expected in shown[0], shown
    assert "needs a unit" in shown[0] and "\n" not in shown[0]


@pytest.mark.parametrize(("row", "expected"), [
    ("[[flows]]\nsrc = 'a'\ndst = 'b'\nstart = 5\n", 'flows[1].start = 5: a time needs a unit, e.g. "5us"'),
    ("[[impairments.failures]]\nlink = ['a', 'b']\nat = '1us'\nrecover = 7\n",
     "impairments.failures[0].recover = 7: a time needs a unit"),
    ("[[impairments.slow_links]]\nlink = ['a', 'b']\nrate = 10\n",
     "impairments.slow_links[0].rate = 10: a rate needs a unit"),
])
def test_bare_number_in_a_row_is_refused(row: str, expected: str) -> None:
    shown = problems(MINIMAL + row)
    assert any(expected in s for s in shown), shown


def test_bare_number_in_profile_and_dcqcn_tables_is_refused() -> None:
    shown = problems(MINIMAL + "[nic.overrides]\nack_timeout = 2000000\nack_coalesce_pkts = 4\n")
    assert any('nic.overrides.ack_timeout = 2000000: a time needs a unit, e.g. "2000000us"' in s
               for s in shown), shown
    shown = problems(MINIMAL + "[congestion_control]\nalgorithm = 'dcqcn'\npreset = 'paper'\n"
                     "[congestion_control.overrides]\nrate_timer = 55\nai_rate = 40\n")
    assert any("congestion_control.overrides.rate_timer = 55: a time needs a unit" in s for s in shown), shown
    assert any("congestion_control.overrides.ai_rate = 40: a rate needs a unit" in s for s in shown), shown


def test_dimensionless_sizes_and_zero_stay_bare() -> None:
    sc = loads(MINIMAL + "[link]\nloss = 0.01\n[switch]\nbuffer = 12000000\npfc_response = 0\n"
               "[switch.ecn]\nkmin = 5000\npmax = 0.1\n[qp]\ntimeout = 14\n"
               "[nic.overrides]\nack_timeout = 0\nmax_unacked_psns = 256\n"
               "[[flows]]\nsrc = 'a'\ndst = 'b'\nsize = 65536\nstart = 0\n")
    assert sc["switch.buffer"] == 12_000_000 and sc["switch.ecn.kmin"] == 5000
    assert sc.arrays["flows"][1]["size"] == 65536 and sc.arrays["flows"][1]["start"] == 0
    assert sc["link.loss"] == 0.01
    # with a unit: as before
    sc = loads(MINIMAL + "[link]\ndelay = '1us'\nrate = '25Gbps'\n[simulation]\nduration = '20us'\n")
    assert (sc["link.delay"], sc["link.rate"], sc["simulation.duration"]) == (10**6, 25 * 10**9, 20 * 10**6)


def test_override_value_needs_a_unit() -> None:
    shown = problems(MINIMAL, {"link.delay": 1})
    assert shown == ['s.toml (override): link.delay = 1: a time needs a unit, e.g. "1us" '
                     "(units: ps, ns, us, ms, s)"], shown
    assert loads(MINIMAL, "s.toml", {"link.delay": "1us"})["link.delay"] == 10**6


def test_validate_refuses_a_bare_time_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(MINIMAL + "[link]\ndelay = 1\n")
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f'{f}: link.delay = 1: a time needs a unit, e.g. "1us" (units: ps, ns, us, ms, s)',
                   f"{f}: 1 problem(s)"]


def test_sweep_param_needs_a_unit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.toml"
    f.write_text(MINIMAL)
    assert main(["sweep", str(f), "--param", "link.delay=1,2", "--out", str(tmp_path / "sw"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "link.delay = 1: a time needs a unit" in err, err
