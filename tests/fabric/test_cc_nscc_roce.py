"""NSCC on RoCE QPs (``congestion_control.algorithm = "nscc"``): N long WRITE flows into one
100 Gb/s bottleneck (rdmasim.incast, 1 us links, path MTU 1024, base RTT 4.19 us), ECN marking at
0.2 / 0.8 BDP with probability 1 at kmax (the UEC htsim NSCC setup, main_uec.cpp), NSCC with
``NsccParams.for_path`` for the base RTT.  SMaRTT's claims (Bonato et al., arXiv 2404.01630) are
checked qualitatively: the queue stays near the target delay (one base RTT without trimming) with
the bottleneck busy and no PFC, and the flows converge to a fair share.  A lossy link shows that
a RoCE NAK or timeout reaches NSCC's loss reaction.  docs/congestion-control.md reports the numbers.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import rdmasim
from rdmasim.cc_nscc import NsccParams
from tests.fabric.delay_cc_util import LINE_BPS, base_rtt_ps, run_incast
from tests.long_writes import start_long_writes

BDP = LINE_BPS * base_rtt_ps() / 8e12     # 52,384 bytes
ECN = {"kmin": round(0.2 * BDP), "kmax": round(0.8 * BDP), "pmax": 1.0}


def params() -> NsccParams:
    return NsccParams.for_path(base_rtt_ps(), mtu=1024)


@pytest.fixture(scope="module")
def runs():
    return {4: run_incast(4, "nscc", params(), duration_us=2_000, ecn=ECN),
            8: run_incast(8, "nscc", params(), duration_us=2_000, ecn=ECN),
            16: run_incast(16, "nscc", params(), duration_us=10_000, ecn=ECN)}


@pytest.mark.parametrize("n", [4, 8, 16])
def test_queue_stays_near_the_target_with_the_link_busy(runs, n):
    r = runs[n]
    target_queue = BDP                      # target delay = base RTT at 100 Gb/s
    assert np.percentile(r.queue_bytes, 99) < 1.1 * target_queue + 2 * 1024 * n ** 0.5
    assert np.percentile(r.queue_bytes, 1) > 0.5 * target_queue   # a standing queue: never idle
    assert r.goodput_fraction >= 0.99
    assert r.pause_frames == 0


@pytest.mark.parametrize("n", [4, 8, 16])
def test_flows_share_the_bottleneck_fairly(runs, n):
    assert runs[n].jain >= 0.99


def test_every_quadrant_and_quick_adapt_take_part(runs):
    s = runs[16].states
    assert all(x["md_decreases"] > 0 and x["acks"] > 0 for x in s)
    assert all(x["cwnd"] < x["max_cwnd"] for x in s)         # started at 1.5 BDP, cut to a share
    assert sum(x["quick_adapts"] for x in s) >= 1            # the first burst of 16 x 1.5 BDP


def test_without_cc_the_same_incast_queues_ten_times_more(runs):
    r = run_incast(8, "none", None, duration_us=1_000, ecn=ECN)
    assert np.median(r.queue_bytes) > 8 * np.median(runs[8].queue_bytes)


@pytest.mark.slow
def test_32_flows_converge_to_a_fair_share():
    r = run_incast(32, "nscc", params(), duration_us=10_000, ecn=ECN)
    assert r.jain >= 0.99 and r.goodput_fraction >= 0.99 and r.pause_frames == 0
    assert np.percentile(r.queue_bytes, 99) < 1.2 * BDP


def test_a_nak_or_timeout_reaches_nsccs_loss_reaction():
    t = rdmasim.back_to_back(mtu=1024, loss_ab=0.002, seed=3)
    t.a.set_congestion_control("nscc", params())
    qps, keep = start_long_writes(SimpleNamespace(senders=[t.a], receiver=t.b), 64 << 20, 16)
    t.sim.run(500_000_000)
    st, stats = qps[0].cc_state(), qps[0].stats()
    retries = stats["naks_rcvd"] + stats["timeouts"] + stats["implied_naks"]
    assert 1 <= st["losses"] <= retries
    assert st["trims"] == 0                 # RoCE has no trimming
    assert keep
