"""Checks of bench/compare.py (plain pytest; skipped by --benchmark-only). The counts themselves are
checked against pcaps in tests/bench_smoke/test_compare_counts.py.

Run: python -m pytest bench/test_compare.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare  # noqa: E402


@pytest.mark.parametrize(("text", "value"), [("10MB", 10_000_000), ("100MB", 100_000_000),
                                             ("512KB", 512_000), ("1MiB", 1 << 20), ("2.5MB", 2_500_000)])
def test_parse_size(text: str, value: int) -> None:
    assert compare.parse_size(text) == value


def test_quick_run_writes_json(tmp_path: Path) -> None:
    only = "rdmasim,simpy" if compare.available("simpy") else "rdmasim"
    assert compare.main(["--quick", "--packets", "800", "--only", only, "--repeat", "2", "--processes", "2",
                         "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("compare-*.json")
    doc = json.loads(path.read_text())
    assert doc["packets_total"] == 800 and doc["processes"] == 2
    names = {r["name"] for r in doc["results"]}
    assert {f"rdmasim:{m}" for m in compare.RDMASIM_MODES} <= names
    for r in doc["results"]:
        assert r["packets"] == r["packets_expected"] == 800
        assert r["placeholder"] == (r["simulator"] == "rdmasim" and r["scenario"] != "incast-8")
        assert len(r["runs"]) == 4 and sorted(x["process"] for x in r["runs"]) == [0, 0, 1, 1]
        # every run's event loop is inside its whole job; the whole-job column is each process's first run
        assert all(0 < x["run_s"] <= x["whole_s"] for x in r["runs"])
        cold = sorted(x["whole_s"] for x in r["runs"] if x["repeat_index"] == 0)
        assert r["whole_s_median"] == (cold[0] + cold[1]) / 2
    # the reference row (no ns-3 here: the first) has ratio 1 in both columns
    assert doc["reference"] == doc["results"][0]["name"]
    first = doc["results"][0]["name"]
    assert all(f"{first} / {r['name']}" in doc["ratios"]["whole"] for r in doc["results"][1:])


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(SystemExit):
        compare.main(["--quick", "--rdmasim-modes", "flows,bogus"])
