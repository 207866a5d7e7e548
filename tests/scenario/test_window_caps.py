"""No silent caps: validate and run's summary warn when the NIC profile's PSN window holds a flow
below its path's bandwidth-delay product, naming the key that lifts it and the value needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rdmasim.cli import main
from rdmasim.scenario import loads, run_scenario
from rdmasim.scenario.check import validate

FAT_TREE = ('[topology]\nkind = "fat_tree"\nk = 4\n[outputs]\nplots = false\n'
            '[[flows]]\nsrc = "h0_0_0"\ndst = "h1_0_0"\nsize = "4MiB"\n')


def _warnings(text: str) -> list[str]:
    _, warnings = validate(loads(text, "ft.toml"))
    return [str(w) for w in warnings]


def test_a_100g_fat_tree_on_the_default_rxe_profile_is_window_bound() -> None:
    (w,) = _warnings(FAT_TREE)
    assert w.startswith("ft.toml: nic.overrides.max_unacked_psns = 128: the 'rxe' NIC profile lets a QP "
                        "have 129 packets (132,096 bytes at MTU 1024) in flight"), w
    assert "h0_0_0 -> h1_0_0: 100 Gb/s x 12.5798 µs = 157,248 bytes" in w
    assert w.endswith("[nic.overrides] max_unacked_psns = 208 lifts the cap")
    # and so it is: the flow runs at half its rate, with the window asked for at its ideal time
    res = run_scenario(loads(FAT_TREE, "ft.toml"), "", progress=False)
    assert res.flows[0].slowdown > 2.0
    assert res.warnings == [w] and res.summary().endswith("  warning: " + w)
    lifted = FAT_TREE + "[nic.overrides]\nmax_unacked_psns = 208\n"
    assert _warnings(lifted) == []
    res = run_scenario(loads(lifted, "ft.toml"), "", progress=False)
    assert f"{res.flows[0].slowdown:.2f}" == "1.00" and res.warnings == []


@pytest.mark.parametrize("change", [
    "[qp]\nmtu = 4096\n",                                   # 129 x 4 KiB holds the BDP
    "[nic]\nprofile = \"cx6\"\n",                           # a window of 2^22 packets
    "[link]\ndelay = \"100ns\"\n",                          # a short path
])
def test_no_warning_where_the_window_holds_the_path(change: str) -> None:
    assert _warnings(FAT_TREE + change) == []


def test_a_flow_within_the_window_is_not_held_back() -> None:
    assert _warnings(FAT_TREE.replace('"4MiB"', '"128KiB"')) == []


def test_validate_prints_the_warning_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "ft.toml"
    f.write_text(FAT_TREE)
    assert main(["validate", str(f)]) == 0
    out = capsys.readouterr()
    assert out.err.startswith(f"warning: {f}: nic.overrides.max_unacked_psns = 128: ")
    assert "max_unacked_psns = 208 lifts the cap" in out.err and ": ok;" in out.out
