"""HPCC with coalesced ACKs (``HpccParams.ack_every``) on the incast of tests/cc/test_hpcc_fabric.py.

A request asks for an ACK on every n-th packet, on the packet that fills the window and on the
first packet after each reference update; an ACK echoes the INT of the packet that asked, and its
acknowledged bytes are the cumulative advance. The checks compare n = 2 and 4 with n = 1 (the
default, one ACK per packet) and with DCQCN on the same fabric, over the second half of 20 ms, and
count the ACK frames the switch sends back to the senders. docs/cc-hpcc.md has the table.
"""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim.cc import DcqcnParams
from rdmasim.cc_hpcc import HpccParams
from tests.cc.dcqcn_util import run_incast
from tests.cc.test_hpcc_fabric import DURATION_US, QUEUE_P99_BOUND, SAMPLE_PS, second_half
from tests.fabric.delay_cc_util import PAYLOAD_LINE_BPS, base_rtt_ps


def hpcc(ack_every: int) -> HpccParams:
    return HpccParams.for_path("100Gbps", base_rtt_ps(), ack_every=ack_every)


def incast(n: int, ack_every: int, duration_us: int = DURATION_US):
    return run_incast(n, "hpcc", hpcc(ack_every), duration_us=duration_us, sample_period_ps=SAMPLE_PS)


@pytest.fixture(scope="module")
def runs():
    out = {(n, k): incast(n, k) for n in (8, 16) for k in (1, 2, 4)}
    out["dcqcn"] = run_incast(8, "dcqcn", DcqcnParams.paper(), duration_us=DURATION_US,
                              sample_period_ps=SAMPLE_PS)
    return out


def util(r) -> float:
    return r.sum_gbps * 1e9 / PAYLOAD_LINE_BPS


@pytest.mark.parametrize("k", [2, 4])
def test_queue_stays_near_empty_far_below_dcqcn(runs, k):
    one, co, dc = (second_half(runs[x]) for x in ((8, 1), (8, k), "dcqcn"))
    assert np.percentile(co, 99) < QUEUE_P99_BOUND
    assert np.mean(co) < 2 * np.mean(one)  # a packet or so more than one ACK per packet holds
    assert np.mean(dc) > 10 * np.mean(co)
    assert np.percentile(dc, 99) > 5 * np.percentile(co, 99)
    assert runs[(8, k)].pause_frames == 0


@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.parametrize("k", [2, 4])
def test_no_stall_goodput_close_to_an_ack_per_packet(runs, n, k):
    r, one = runs[(n, k)], runs[(n, 1)]
    assert min(r.rates_gbps) > 0.2 * r.sum_gbps / n  # every flow keeps moving
    assert util(r) >= 0.97 * util(one)
    assert 0.92 <= util(r) <= 0.99


@pytest.mark.parametrize(("n", "k"), [(8, 2), (16, 2), (16, 4)])
def test_flows_share_fairly(runs, n, k):
    assert runs[(n, k)].jain >= 0.98


@pytest.mark.xfail(strict=True, reason="ack_every 4 at 8:1 (windows of ~6 packets): the flows drift apart "
                                      "(docs/cc-hpcc.md, ACK coalescing)")
def test_eight_flows_share_fairly_at_ack_every_4(runs):
    assert runs[(8, 4)].jain >= 0.98


def test_a_larger_additive_step_restores_fairness_at_ack_every_4(runs):
    # W_AI is what evens the windows out (the multiplicative steps keep their ratio); five times
    # ns-3's step (line / 500) still leaves room for 25 flows' steps in the 5 % headroom
    p = HpccParams.for_path("100Gbps", base_rtt_ps(), ack_every=4, ai_rate="200Mbps")
    r = run_incast(8, "hpcc", p, duration_us=DURATION_US, sample_period_ps=SAMPLE_PS)
    assert r.jain >= 0.99
    assert np.percentile(second_half(r), 99) < QUEUE_P99_BOUND and r.pause_frames == 0
    assert util(r) >= 0.97 * util(runs[(8, 1)])


@pytest.mark.parametrize("k", [2, 4])
def test_ack_frames_drop_with_n(runs, k):
    one, co = runs[(8, 1)].ack_frames, runs[(8, k)].ack_frames
    # windows of ~6 packets: the window-filling packet and the reference-update packet ask too
    assert co < (0.75 if k == 2 else 0.55) * one


@pytest.mark.parametrize("k", [2, 4])
def test_one_flow_with_a_wide_window_gets_about_one_ack_per_n_packets(k):
    one, co = incast(1, 1, 2_000), incast(1, k, 2_000)
    assert co.sum_gbps == pytest.approx(one.sum_gbps, rel=0.01)
    assert one.ack_frames / co.ack_frames == pytest.approx(k, rel=0.25)


def test_ack_every_1_acknowledges_every_packet_as_before(runs):
    # the default: one ACK per request packet (tests/cc/test_hpcc_fabric.py runs it unchanged)
    assert HpccParams().ack_every == 1
    for s in runs[(8, 1)].cc_states:
        assert s["acks"] == s["acked_pos"] // 1024 and s["probe"] == 0
    for s in runs[(8, 2)].cc_states:
        assert s["acks"] < 0.8 * s["acked_pos"] // 1024
