"""The leaf-spine permutation of docs/multipath.md: ECMP against the max-min model of its hash
collisions, and adaptive routing with out-of-order placement (bench/multipath.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import multipath  # noqa: E402


def test_maxmin_shares() -> None:
    # two flows on one link get half each; a flow alone on its links gets all; a flow that
    # crosses the shared link and a free one is held to its share on the shared one
    assert multipath._maxmin([["a"], ["a"], ["b"]]) == [0.5, 0.5, 1.0]
    assert multipath._maxmin([["a", "b"], ["a"], ["b", "c"], ["c"]]) == [0.5, 0.5, 0.5, 0.5]
    assert multipath._maxmin([["a", "b"], ["a", "c"], ["a", "d"], ["b"]]) == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3, 2 / 3])


@pytest.mark.parametrize("seed", [1, 2])
def test_ecmp_is_within_5_percent_of_the_maxmin_model_small(seed: int) -> None:
    kw = {"leaves": 2, "spines": 2, "hosts_per_leaf": 4, "size": 4 << 20, "seed": seed}
    model = multipath.ecmp_maxmin(**kw)
    got = multipath.run("ecmp", "gbn", **kw)
    assert got["ok"] and got["retx"] == 0, got
    assert got["mean"] == pytest.approx(model["hashed"], rel=0.05), (got, model)
    assert 0.9 < model["single"] < 0.98, model  # one flow alone: the headers' share and start-up


@pytest.mark.slow
def test_leaf_spine_permutation_ecmp_model_and_adaptive_routing() -> None:
    """4 leaves x 4 spines x 16 hosts, 100 Gb/s, PFC, no CC, a random permutation of 32 MiB
    WRITEs: ECMP within 5 % of the max-min model of its hash collisions; per-packet adaptive
    routing with out-of-order placement at 0.95 of line or more, resending nothing."""
    kw = {"size": 32 << 20, "irn_window": 128}
    model = multipath.ecmp_maxmin(size=32 << 20)
    ecmp = multipath.run("ecmp", "gbn", **kw)
    ar = multipath.run("adaptive_packet", "ooo", **kw)
    assert ecmp["mean"] == pytest.approx(model["hashed"], rel=0.05), (ecmp, model)
    assert ar["mean"] >= 0.95 and ar["retx"] == 0, ar
