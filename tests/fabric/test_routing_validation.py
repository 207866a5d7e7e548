"""Path selection against analytical results on permutation traffic.

ECMP hashes flows onto equal-cost uplinks: with n flows over n uplinks the busiest uplink carries as
many flows as the fullest of n bins with n balls thrown at random, whose exact expectation
routing_util.expected_max_load computes (for large n it grows as ln n / ln ln n). Adaptive
selection (least-queued egress per packet) spreads the same flows evenly, so its busiest uplink
carries about one flow's worth.

Load of an uplink: its bytes over the mean of its switch's uplinks (1 = an even share).
"""

from __future__ import annotations

import numpy as np
import pytest
from routing_util import expected_max_load, fat_tree_permutation, leaf_spine_permutation, spray_recovery

SEEDS = range(1, 21)


def test_expected_max_load_matches_sampling() -> None:
    rng = np.random.default_rng(0)
    for n in (2, 4, 8):
        sampled = np.mean([np.bincount(rng.integers(n, size=n), minlength=n).max() for _ in range(5000)])
        assert abs(expected_max_load(n, n) - sampled) < 0.05, (n, sampled)
    assert expected_max_load(2, 2) == 1.5  # {2,0}, {0,2} with 1/4 each, {1,1} with 1/2


@pytest.fixture(scope="module")
def leaf_spine() -> dict[str, tuple[float, float]]:
    out = {}
    for mode in ("ecmp", "adaptive"):
        loads, fcts = [], []
        for seed in SEEDS:
            m, f = leaf_spine_permutation(mode, seed)
            loads += m
            fcts.append(f)
        out[mode] = (float(np.mean(loads)), float(np.mean(fcts)))
    return out


def test_leaf_spine_ecmp_max_load_is_balls_into_bins(leaf_spine: dict[str, tuple[float, float]]) -> None:
    expected = expected_max_load(8, 8)  # 2.597
    got, _ = leaf_spine["ecmp"]
    # 160 leaves (8 x 20 seeds); the per-leaf maximum has a standard deviation of about 0.7
    assert abs(got - expected) < 0.25, (got, expected)
    print(f"\nleaf-spine 8x8, ECMP: mean busiest-uplink load {got:.3f} flows; balls into bins {expected:.3f}")


def test_leaf_spine_adaptive_beats_ecmp(leaf_spine: dict[str, tuple[float, float]]) -> None:
    (ecmp, ecmp_fct), (adaptive, adaptive_fct) = leaf_spine["ecmp"], leaf_spine["adaptive"]
    assert adaptive < 1.15 < ecmp, leaf_spine
    assert adaptive_fct < 0.75 * ecmp_fct, leaf_spine
    print(f"\nleaf-spine 8x8: busiest uplink ECMP {ecmp:.3f} vs adaptive {adaptive:.3f}; "
          f"longest FCT ECMP {ecmp_fct / 1e6:.1f} us vs adaptive {adaptive_fct / 1e6:.1f} us")


def test_fat_tree_edge_uplinks_ecmp_vs_adaptive() -> None:
    ecmp = float(np.mean([x for s in range(1, 6) for x in fat_tree_permutation("ecmp", s)]))
    adaptive = float(np.mean([x for s in range(1, 3) for x in fat_tree_permutation("adaptive", s)]))
    expected = expected_max_load(4, 4)  # 2.125
    assert abs(ecmp - expected) < 0.25, (ecmp, expected)  # 5 seeds x 32 edge switches
    assert adaptive < 1.15, adaptive
    print(f"\nfat tree k=8 edge uplinks: ECMP {ecmp:.3f} (balls into bins {expected:.3f}), "
          f"adaptive {adaptive:.3f}")


def test_spray_gbn_retransmit_storm_irn_tolerates() -> None:
    got = {(m, r): spray_recovery(m, r) for m in ("ecmp", "spray", "adaptive") for r in ("gbn", "irn")}
    print("\nmode      recovery  goodput/flow (Gb/s)  lowest  retransmitted / data packets")
    for (m, r), v in got.items():
        print(f"{m:9s} {r:9s} {v['goodput']:19.1f}  {v['min']:6.1f}  {v['retx']:.3f}")
    assert got[("ecmp", "gbn")]["retx"] == 0  # one path per QP: nothing reordered
    assert got[("spray", "gbn")]["retx"] > 1  # every packet reordered past is sent again, repeatedly
    assert got[("spray", "gbn")]["goodput"] < 0.25 * got[("spray", "irn")]["goodput"]
    assert got[("spray", "irn")]["retx"] < 0.1 * got[("spray", "gbn")]["retx"]
    assert got[("adaptive", "irn")]["goodput"] > got[("ecmp", "gbn")]["goodput"]
