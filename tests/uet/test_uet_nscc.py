"""A PDC's window from NSCC (csrc/cc/nscc.c through rdmasim/cc.h): fed by each ACK's RTT sample and
ECN echo and by each loss, it keeps an incast's queue short where a fixed window fills it."""

from __future__ import annotations

import numpy as np

from rdmasim import topology


def _incast(cc: str, **uet: object) -> np.ndarray:
    inc = topology.incast(8, rate="100Gbps", delay="1us", mtu=4096)
    fs = inc.sim.add_flows({"src": np.arange(8), "dst": np.full(8, 8), "size": np.full(8, 2 << 20)},
                           transport="uet", uet={"cc": cc, **uet})
    inc.sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all() and (r["bytes_delivered"] == 2 << 20).all()
    return r


def test_nscc_window_keeps_an_incast_out_of_pfc_and_timeouts() -> None:
    fixed, nscc = _incast("none", rto_estimate=False), _incast("nscc")
    # a fixed window of twice a BDP per sender with a fixed 100 us timer: the queue pauses the
    # senders and outlasts the timer (spurious resends); NSCC's window shrinks with the delay
    assert int(fixed["pause_ps"].sum()) > 0 and int(nscc["pause_ps"].sum()) == 0
    assert int(nscc["retx_pkts"].sum()) < int(fixed["retx_pkts"].sum()) // 10
    assert int(nscc["fct_ps"].max()) < int(fixed["fct_ps"].max())
    # and it still fills the receiver's link: 16 MiB at 100 Gb/s take 1.34 ms
    assert int(nscc["fct_ps"].max()) < 1.2 * (16 << 20) * 8 * 10**12 // 100_000_000_000


def test_an_rtt_estimated_timeout_stops_the_fixed_windows_spurious_resends() -> None:
    """The same fixed-window incast with the timeout estimated from the RTT (uet/rto.c,
    ``rto_estimate``): the queue's delay raises the timeout with it, so it resends a fraction of what the
    fixed 100 us timer does and the spurious resends no longer feed PFC."""
    fixed, est = _incast("none"), _incast("none", rto_estimate=True)
    assert int(est["retx_pkts"].sum()) * 100 < int(fixed["retx_pkts"].sum())
    assert int(est["fct_ps"].max()) < int(fixed["fct_ps"].max()) // 2
    assert int(est["pause_ps"].sum()) < int(fixed["pause_ps"].sum())
