"""Swift on a fabric (Kumar et al., SIGCOMM 2020): N long flows into one 100 Gb/s bottleneck.

rdmasim.incast (every link 100 Gb/s, 1 us; base RTT 4.19 us), ECN off, Swift with
``SwiftParams.for_path`` for the base RTT and one hop: base target 1.5 x RTT, h = RTT / 8,
fs_range = RTT over [0.1, 100] packets. The paper's design goal is checked: the delay each sender
measures settles at its target (which flow scaling raises as the windows shrink with N), the
bottleneck stays busy without PFC and the flows share it fairly. docs/cc-swift.md puts the numbers
beside the paper's and names the command.
"""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim.cc_swift import SwiftParams
from tests.fabric.delay_cc_util import base_rtt_ps, run_incast

DURATION_US = 10_000


def params() -> SwiftParams:
    return SwiftParams.for_path("100Gbps", base_rtt_ps(), hops=1, mtu=1024)


@pytest.fixture(scope="module")
def runs():
    return {n: run_incast(n, "swift", params(), duration_us=DURATION_US) for n in (4, 8, 16)}


def targets(r) -> np.ndarray:
    return np.asarray([s["target_ps"] for row in r.state_series for s in row], dtype=float)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_measured_delay_settles_at_the_target(runs, n):
    r = runs[n]
    t = targets(r)
    assert np.median(r.rtt_ps) == pytest.approx(np.median(t), rel=0.05)
    assert np.mean(r.rtt_ps) == pytest.approx(np.mean(t), rel=0.06)
    # the target is the formula's at the windows the senders hold
    p = params()
    cw = np.median([s["cwnd"] for s in r.states])
    assert np.median(t) == pytest.approx(p.target(cw), rel=0.02)


def test_flow_scaling_raises_the_target_as_windows_shrink(runs):
    med = {n: np.median(targets(r)) for n, r in runs.items()}
    assert med[4] < med[8] < med[16]
    cw = {n: np.median([s["cwnd"] for s in r.states]) for n, r in runs.items()}
    assert cw[4] > cw[8] > cw[16]


@pytest.mark.parametrize("n", [4, 8, 16])
def test_fair_share_at_full_throughput_without_pfc(runs, n):
    r = runs[n]
    assert r.jain >= 0.99
    assert r.goodput_fraction >= 0.99
    assert r.pause_frames == 0
    assert np.percentile(r.queue_bytes, 1) > 0  # the target keeps a standing queue: never idle


@pytest.mark.slow
def test_64_flows_share_fairly_near_the_target():
    r = run_incast(64, "swift", params(), duration_us=20_000)
    assert r.jain >= 0.99 and r.goodput_fraction >= 0.99 and r.pause_frames == 0
    assert np.median(r.rtt_ps) == pytest.approx(np.median(targets(r)), rel=0.2)
