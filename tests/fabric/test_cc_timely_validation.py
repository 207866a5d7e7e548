"""TIMELY on a fabric (Mittal et al., SIGCOMM 2015): N long flows into one 100 Gb/s bottleneck.

rdmasim.incast (every link 100 Gb/s, 1 us; base RTT 4.19 us), ECN off, TIMELY with
``TimelyParams.for_path`` for the base RTT: T_low = 10.5 us and T_high = 105 us (the paper's
ratios to its minimum RTT), one update per window of data, min_rtt = 4 T_low. The paper's design
goal is checked: below T_low the rate only grows and above T_high it only falls, so in steady
state the gradient rule holds the RTT between the two; the flows share the bottleneck fairly and
keep it full. With the paper's own ratio min_rtt = T_low / 2.5 the gradient cut overshoots (each
takes about beta x RTT / min_rtt ~ 2 times the rate excess) and the queue swings empty, which is
checked too. The flows start together at the line rate; TIMELY's gradient rule has no unique
fair fixed point (Zhu et al., CoNEXT 2016), and over longer runs the shares can drift apart, so
fairness is checked over these 10 ms runs. docs/cc-timely.md puts the numbers beside the paper's
and names the command.
"""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim.cc_timely import TimelyParams
from tests.fabric.delay_cc_util import base_rtt_ps, run_incast

DURATION_US = 10_000


def params(**overrides) -> TimelyParams:
    return TimelyParams.for_path("100Gbps", base_rtt_ps(), **overrides)


@pytest.fixture(scope="module")
def runs():
    return {n: run_incast(n, "timely", params(), duration_us=DURATION_US) for n in (4, 8, 16)}


@pytest.mark.parametrize("n", [4, 8, 16])
def test_rtt_held_between_t_low_and_t_high(runs, n):
    c = params().to_c()
    r = runs[n]
    inside = (r.rtt_ps >= c["t_low_ps"]) & (r.rtt_ps <= c["t_high_ps"])
    assert inside.mean() >= 0.99  # of every sender's RTT samples over the second half
    # the gradient region is where the rate settles: over the second half, updates each way there
    # and none of the other two rules (the start-up burst may cross T_high once)
    first, last = r.state_series[0], r.states
    for a, b in zip(first, last, strict=True):
        assert b["gradient_increases"] > a["gradient_increases"]
        assert b["gradient_decreases"] > a["gradient_decreases"]
        assert b["high_decreases"] == a["high_decreases"] and b["low_increases"] == a["low_increases"]


@pytest.mark.parametrize("n", [4, 8, 16])
def test_fair_share_at_full_throughput_without_pfc(runs, n):
    r = runs[n]
    assert r.jain >= 0.99
    assert r.goodput_fraction >= 0.99
    assert r.pause_frames == 0
    assert np.percentile(r.queue_bytes, 1) > 0  # the queue never empties


def test_the_papers_min_rtt_ratio_overshoots_and_drains_the_queue():
    base = base_rtt_ps()
    p = params(min_rtt=base)  # the paper's T_low / min_rtt = 2.5
    r = run_incast(8, "timely", p, duration_us=DURATION_US)
    assert np.median(r.rtt_ps) < p.to_c()["t_low_ps"]  # the RTT spends most of its time below T_low
    assert np.percentile(r.queue_bytes, 25) == 0
    assert r.goodput_fraction < 0.97
