"""Failure modes of lossless Ethernet, reproduced from one call each and asserted from counters:
PFC deadlock from a cyclic buffer dependency (found by the detector, broken by the watchdog)."""

from __future__ import annotations

import pytest
from fabric_util import assert_buffers_empty, flow

import rdmasim
from rdmasim import fabric

RING = 4


def ring_deadlock(watchdog: bool, seed: int = 1):
    """Four switches in a ring, one host each; h_i -> h_{i+2} pinned clockwise (static routes), so
    every ring link carries two flows and every ring ingress queue waits on the next switch."""
    topo = rdmasim.ring(RING, clockwise=True, seed=seed,
                         switch_config={"threshold": "50KB", "buffer": "4MB"})
    sim, sw = topo.sim, topo.switches
    h = [row[0] for row in topo.hosts]
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
    sim.run()
    assert_buffers_empty(sim)
    print(f"\nwatchdog: {storms} storms, {drops} packets dropped")


def test_watchdog_and_detector_errors():
    sim = rdmasim.Simulator()
    with pytest.raises(ValueError, match="detect >= poll"):
        fabric.enable_pfc_watchdog(sim, poll="100us", detect="50us")
    with pytest.raises(ValueError, match="period must be > 0"):
        fabric.enable_deadlock_detector(sim, 0)


def stuck_receiver_storm(watchdog: bool):
    """Dumbbell l0,l1 - sl =200G= sr - r0,r1. r0's NIC stops draining (a stuck receiver): its pause
    spreads hop by hop (r0 -> sr -> sl -> l1) and stalls l1 -> r1, whose own path is idle."""
    topo = rdmasim.dumbbell(2, 2, seed=3, bottleneck_rate="200Gbps", switch_config={"buffer": "2MB"})
    sim = topo.sim
    (l0, l1), (r0, r1) = topo.left, topo.right
    fabric.slow_receiver(r0, 0)  # rate 0: stuck
    if watchdog:
        fabric.enable_pfc_watchdog(sim, poll="50us", detect="100us", restore="1ms")
    stuck = flow(l0, r0, 1 << 20, seed=1, timeout=10, retry_cnt=7)
    victim = flow(l1, r1, 1 << 20, seed=2, timeout=10)
    stuck.post()
    sim.run("20us")
    victim.post()
    return topo, stuck, victim


def test_pause_storm_from_stuck_receiver_spreads_upstream():
    topo, stuck, victim = stuck_receiver_storm(watchdog=False)
    sim = topo.sim
    sim.run("3ms")
    l1, r0 = topo.left[1], topo.right[0]
    sl, sr = topo.s_left, topo.s_right
    assert fabric.receiver_stats(r0)["pfc_xoff_sent"] > 0 and fabric.receiver_stats(r0)["pfc_xon_sent"] == 0
    # hop 1: sr's port to r0 paused nearly all the time; hop 2: sl's port to sr; hop 3: the host l1
    t = sim.now
    assert sr.port_stats(sr.port_to(r0))["paused_ps"][3] > 0.9 * t
    assert sr.totals()["pfc_xoff_sent"] > 0
    assert sl.port_stats(sl.port_to(sr))["paused_ps"][3] > 0.9 * t
    assert l1.pause_stats()["paused_ps"][3] > 0.5 * t
    # the victim never finished although r1 and its links are idle; lossless: nothing dropped
    assert victim.qp.stats()["msgs_completed"] == 0
    assert sl.totals()["drops"] == sr.totals()["drops"] == 0


def test_watchdog_contains_the_storm():
    topo, stuck, victim = stuck_receiver_storm(watchdog=True)
    wc = topo.sim.wait_for(victim.cq, 1, timeout="50ms")
    assert wc[0].status == 0 and victim.delivered()
    assert topo.s_right.port_stats(topo.s_right.port_to(topo.right[0]))["watchdog_storms"] > 0


def test_victim_flow_slowed_by_pause_on_an_uncongested_path():
    """l1 -> r1 crosses sl =200G= sr with room to spare; an incast to r0 (from l0 across the same
    link and from r2, r3 locally) makes sr pause sl, and the victim waits behind the pause."""
    def victim_time(with_incast: bool) -> tuple[int, int]:
        topo = rdmasim.dumbbell(2, 4, seed=3, bottleneck_rate="200Gbps", switch_config={"buffer": "1MB"})
        (l0, l1), (r0, r1, r2, r3) = topo.left, topo.right
        v = flow(l1, r1, 4 << 20, seed=2)
        flows = [v] + ([flow(h, r0, 4 << 20, seed=i + 3) for i, h in enumerate((l0, r2, r3))]
                       if with_incast else [])
        for f in flows:
            f.post()
        topo.sim.wait_for(v.cq, 1)
        assert v.delivered()
        return topo.sim.now, l1.pause_stats()["paused_ps"][3]

    alone, paused_alone = victim_time(False)
    shared, paused_shared = victim_time(True)
    assert paused_alone == 0 and paused_shared > 0
    assert shared > 2 * alone, (alone, shared)
    print(f"\nvictim: {alone / 1e6:.0f} us alone, {shared / 1e6:.0f} us next to an incast "
          f"(l1 paused {paused_shared / 1e6:.0f} us)")


def test_monitor_does_not_keep_a_quiet_network_alive():
    topo = rdmasim.incast(3, seed=1, switch_config={"buffer": "1MB"})
    fabric.enable_pfc_watchdog(topo.sim)
    fabric.enable_deadlock_detector(topo.sim)
    flows = [flow(h, topo.receiver, 256 * 1024, seed=i) for i, h in enumerate(topo.senders)]
    for f in flows:
        f.post()
    end = topo.sim.run()  # returns once the transfers are over
    assert all(f.delivered() for f in flows) and fabric.deadlock(topo.sim) is None
    assert topo.switch.totals()["drops"] == 0 and end < 10_000_000_000
    flows[0].post(2)  # the monitor resumes with new work
    topo.sim.run()
    assert topo.sim.now > end
