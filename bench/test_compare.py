"""Smoke checks of bench/compare.py (plain pytest; skipped by --benchmark-only).

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
    assert compare.main(["--quick", "--packets", "800", "--only", only, "--out", str(tmp_path)]) == 0
    (path,) = tmp_path.glob("compare-*.json")
    doc = json.loads(path.read_text())
    assert doc["packets_total"] == 800
    names = {r["name"] for r in doc["results"]}
    assert {"rdmasim:write1000", "rdmasim:write1MiB"} <= names
    for r in doc["results"]:
        assert r["packets"] == r["packets_expected"] == 800
        assert r["placeholder"] == (r["simulator"] == "rdmasim" and r["scenario"] != "incast-8")
