"""``uet={"nscc_base_rtt": ...}``: the base RTT NSCC starts from, for fabrics whose round trip is
not a leaf-spine's (docs/uet.md, Options)."""

from __future__ import annotations

import numpy as np
import pytest

import rdmasim
from rdmasim.traffic.generators import permutation
from rdmasim.transport.uet import base_rtt_ps, uet_params


def test_default_is_a_leaf_spine_round_trip_and_the_option_replaces_it() -> None:
    sim = rdmasim.fat_tree(4).sim
    assert uet_params(sim, 4096, {"cc": "nscc"})["cc_base_rtt_ps"] == base_rtt_ps(sim, 4096)
    assert uet_params(sim, 4096, {"cc": "nscc", "nscc_base_rtt": "14us"})["cc_base_rtt_ps"] == 14_000_000


@pytest.mark.parametrize("value", ["0us", "soon", -5])
def test_bad_base_rtt_is_refused_naming_the_key(value: object) -> None:
    sim = rdmasim.fat_tree(4).sim
    with pytest.raises((ValueError, TypeError), match="nscc_base_rtt"):
        uet_params(sim, 4096, {"cc": "nscc", "nscc_base_rtt": value})


def _fct_max(**uet: object) -> float:
    topo = rdmasim.fat_tree(4, switch_config={"lossless": (), "trimming": True, "trim_threshold": 175_000,
                                              "ecn": {"kmin": 35_000, "kmax": 140_000, "pmax": 1.0}})
    flows = topo.sim.add_flows(permutation(np.arange(16), 1 << 20, 1), transport="uet",
                               uet={"cc": "nscc", "lb": "reps", "trim": True, **uet})
    topo.sim.run_flows()
    res = flows.results()
    assert (res["status"] == 0).all()
    return float(res["fct_ps"].max())


def test_nscc_from_the_fabrics_round_trip_runs_a_fat_tree_permutation_faster() -> None:
    # a three-tier fat tree's unloaded round trip is six hops each way (14 us here); from the
    # leaf-spine's four (9.4 us) NSCC reads the extra hops as queueing and holds its window lower
    assert _fct_max(nscc_base_rtt="14us") < 0.95 * _fct_max()
