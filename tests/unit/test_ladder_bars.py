"""The bars of a ladder measure what the simulation did: the retransmit timer bar lasts
4.096 us * 2^timeout, and the RNR-wait bar lasts what the decoded RNR NAK timer field says
(ladder.RNR_TIMER_US, the IBA table), checked against the C core's wait for several codes."""

from __future__ import annotations

import pytest
from support.verbs_pair import VerbsPair

from rdmasim import ladder
from rdmasim import trace as tr
from rdmasim.verbs import SGE, QPCap, SendWR
from rdmasim.verbs import enums as e


@pytest.mark.parametrize("timeout", [1, 3])
def test_retransmit_timer_bar_lasts_the_qp_timeout(timeout: int) -> None:
    t = ladder.example_write(drop_psn=[2, 2, 2], timeout=timeout, retry_cnt=1)
    rto = [b for b in ladder.build(t).bars if b.kind == "rto"]
    assert rto
    assert all(b.t1_ps - b.t0_ps == 4_096_000 * 2**timeout for b in rto)
    fired = t.to_numpy()
    assert len(rto) == int((fired["kind"] == tr.TIMEOUT).sum())


def _rnr_trace(timer: int) -> tr.Trace:
    p = VerbsPair(mtu=1024, cqe=4, cap=(QPCap(max_send_wr=2), None), rnr_retry=1, min_rnr_timer=timer)
    topo, qa = p.t, p.qa
    src = p.mr_a(64, e.IBV_ACCESS_LOCAL_WRITE)
    trace = topo.sim.trace()
    qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(src.buf, 16, src.lkey)]))
    topo.sim.run_until_idle()
    trace.stop()
    return trace


@pytest.mark.parametrize("timer", [1, 5, 14, 20])
def test_rnr_wait_bar_lasts_the_decoded_timer(timer: int) -> None:
    t = _rnr_trace(timer)
    rnr = [b for b in ladder.build(t).bars if b.kind == "rnr"]
    assert rnr
    assert rnr[0].t1_ps - rnr[0].t0_ps == ladder.RNR_TIMER_US[timer] * 1_000_000
    assert f"RNR_NAK({ladder.rnr_timer_text(timer)})" in ladder.render_text(t)


def test_rnr_timer_text_follows_the_iba_table() -> None:
    assert ladder.rnr_timer_text(1) == "timer 1 = 10 µs"
    assert ladder.rnr_timer_text(13) == "timer 13 = 960 µs"
    assert ladder.rnr_timer_text(14) == "timer 14 = 1.28 ms"
    assert ladder.rnr_timer_text(0) == "timer 0 = 655.36 ms"  # code 0 is the longest wait
    assert ladder.rnr_timer_text(31) == "timer 31 = 491.52 ms"
