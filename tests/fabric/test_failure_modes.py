"""Failure modes of lossless Ethernet, reproduced from one call each and asserted from counters:
PFC deadlock from a cyclic buffer dependency (found by the detector, broken by the watchdog)."""

from __future__ import annotations

import pytest
from fabric_util import flow

import rdmasim
from rdmasim import fabric

RING = 4


def ring_deadlock(watchdog: bool, seed: int = 1):
    """Four switches in a ring, one host each; h_i -> h_{i+2} pinned clockwise (static routes), so
    every ring link carries two flows and every ring ingress queue waits on the next switch."""
    sim = rdmasim.Simulator(seed)
    sw = [sim.add_switch(f"s{i}", ports=3, threshold="50KB", buffer="4MB") for i in range(RING)]
    h = [sim.add_host(f"h{i}") for i in range(RING)]
    for i in range(RING):
        sim.connect(h[i], sw[i])
    for i in range(RING):
        sim.connect(sw[i], sw[(i + 1) % RING])
    for i in range(RING):
        fabric.set_route(sw[i], h[(i + 2) % RING], [sw[i].port_to(sw[(i + 1) % RING])])
    fabric.enable_deadlock_detector(sim, "10us")
    if watchdog:
        fabric.enable_pfc_watchdog(sim, poll="20us", detect="40us", restore="40us")
    flows = [flow(h[i], h[(i + 2) % RING], 256 * 1024, seed=i, timeout=8) for i in range(RING)]
    for f in flows:
        f.post()
    sim.run("40ms")
    return sim, sw, flows


def test_ring_deadlock_is_detected_and_persists():
    sim, sw, flows = ring_deadlock(watchdog=False)
    found = fabric.deadlock(sim)
    assert found is not None
    t_ps, cycle = found
    assert t_ps < 1_000_000_000  # forms within the first microseconds of traffic
    assert len(cycle) == RING and {c[0] for c in cycle} == {s.name for s in sw}
    assert all(prio == 3 for _, _, prio in cycle)
    # 40 ms later nothing has completed and every queue of the cycle is still full and paused
    assert all(f.qp.stats()["msgs_completed"] == 0 for f in flows)
    for name, port, prio in cycle:
        s = sim.switches[name]
        assert s.queue_bytes(port, prio)[0] > 0
        assert s.port_stats(port)["paused_mask"] & (1 << prio)
    assert sum(s.totals()["drops"] for s in sw) == 0  # lossless: stuck, not dropping
    print(f"\ndeadlock at {t_ps / 1e6:.1f} us: {cycle}")


def test_watchdog_breaks_the_deadlock():
    sim, sw, flows = ring_deadlock(watchdog=True)
    assert fabric.deadlock(sim) is not None  # it formed ...
    storms = sum(s.port_stats(p)["watchdog_storms"] for s in sw for p in range(3))
    drops = sum(s.totals()["drops_watchdog"] for s in sw)
    assert storms > 0 and drops > 0           # ... the watchdog dropped the stormed queues ...
    assert all(f.qp.stats()["msgs_completed"] == 1 for f in flows)  # ... and Go-Back-N finished
    assert all(f.delivered() for f in flows)
    print(f"\nwatchdog: {storms} storms, {drops} packets dropped")


def test_watchdog_and_detector_errors():
    sim = rdmasim.Simulator()
    with pytest.raises(ValueError, match="detect >= poll"):
        fabric.enable_pfc_watchdog(sim, poll="100us", detect="50us")
    with pytest.raises(ValueError, match="period must be > 0"):
        fabric.enable_deadlock_detector(sim, 0)
