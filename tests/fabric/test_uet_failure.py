"""Load balancing around a failed or flapping spine link (bench/uet_failure.py, docs/uet.md
"Experiments"): the qualitative result of the REPS failure experiment (Bonato et al., arXiv
2407.21625) on a leaf-spine. REPS stops sending on the dead path within a few round trips and its
flows never stall long; RoCE flows hashed by ECMP onto the dead path deliver nothing until the
routes converge (and a timeout resends); oblivious spraying keeps losing a share of its packets
and finishes later than REPS."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("uet_failure", ROOT / "bench" / "uet_failure.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["uet_failure"] = mod
    spec.loader.exec_module(mod)
    return mod


B = _bench()
FEW_RTTS = 20  # "a few": REPS measured 6-8 base RTTs (docs/uet.md)


@pytest.fixture(scope="module")
def quick_fail():
    return B.run("fail", quick=True, configs=["uet_reps", "uet_ops", "roce_ecmp"])


def _check_shape(runs, mode):
    reps, ops, ecmp = runs["uet_reps"], runs["uet_ops"], runs["roce_ecmp"]
    assert reps["failed_flows"] == 0 and ops["failed_flows"] == 0
    # REPS: no flow goes more than a few RTTs without delivering anything
    assert reps["max_stall_rtts"] < FEW_RTTS
    assert reps["stalled_flows"] == 0
    # ECMP: a flow on the dead path stalls for much longer (until rerouting, or the flap clears,
    # plus a Go-Back-N timeout)
    assert ecmp["stalled_flows"] >= 1
    assert ecmp["max_stall_rtts"] > 5 * FEW_RTTS
    # REPS finishes before oblivious spraying and before ECMP
    assert reps["fct_max_us"] < ops["fct_max_us"]
    assert reps["fct_max_us"] < ecmp["fct_max_us"]
    if mode == "fail":
        reroute_us = (B.FAIL_AT_PS + B.REROUTE_AFTER_PS) / 1e6
        assert ecmp["fct_max_us"] > reroute_us  # the stalled ECMP flow finishes only after rerouting


def test_reps_recovers_within_a_few_rtts_where_ecmp_stalls_until_rerouting(quick_fail):
    _check_shape(quick_fail, "fail")


def test_reps_flows_finish_before_the_routes_converge(quick_fail):
    reroute_us = (B.FAIL_AT_PS + B.REROUTE_AFTER_PS) / 1e6
    assert quick_fail["uet_reps"]["fct_max_us"] < reroute_us


def test_the_goodput_series_shows_the_failure(quick_fail):
    r = quick_fail["roce_ecmp"]
    assert len(r["series_t_us"]) == len(r["series_gbps"]) > 10
    assert r["goodput_during_gbps"] < r["goodput_before_gbps"]


@pytest.mark.slow
@pytest.mark.parametrize("mode,quick", [("fail", False), ("flap", True), ("flap", False)])
def test_full_size_and_flapping_link(mode, quick):
    runs = B.run(mode, quick=quick, configs=["uet_reps", "uet_reps_nscc", "uet_ops", "roce_ecmp"])
    _check_shape(runs, mode)
    # REPS under NSCC's window (SMaRTT-REPS) recovers as well: no flow stalls for long
    assert runs["uet_reps_nscc"]["failed_flows"] == 0
    assert runs["uet_reps_nscc"]["max_stall_rtts"] < FEW_RTTS


def test_paper_setup_reps_avoids_slow_core_links_oblivious_does_not():
    """--paper, the UEC reference simulator's load-balancing experiment at k = 4: one core link
    down to pod 0 at a quarter of its rate for the whole run.  Every flow completes; REPS's last
    flow finishes well before oblivious spraying's, which keeps a quarter of pod 0's traffic on
    the slow link; with no slow link REPS is faster still."""
    r = B.run_paper(k=4, failed=1, cases=["reps_nofail", "reps_ack4", "oblivious"])
    assert r["reps_ack4"]["tail_us"] < 0.6 * r["oblivious"]["tail_us"], r
    assert r["reps_nofail"]["tail_us"] < r["reps_ack4"]["tail_us"], r
    assert r["reps_ack4"]["retx_pkts"] <= r["oblivious"]["retx_pkts"], r


def test_paper_slow_links_are_the_core_to_aggregation_directions():
    import uec_reference as ref

    topo = ref.fat_tree(4, ref.switch_config())
    slow = ref.slow_core_links(topo, 2)
    agg = topo.aggs[0]
    assert [d.rate_bps for d in slow] == [25_000_000_000] * 2
    # the other direction of each, and the next core link, keep the line rate
    assert [(lk.ab if lk.a is agg else lk.ba).rate_bps for lk in agg.ports[2:4]] == [100_000_000_000] * 2
    with pytest.raises(ValueError, match="failed links = 3"):
        ref.slow_core_links(topo, 3)
