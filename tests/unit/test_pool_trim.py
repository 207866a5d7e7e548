"""Simulator.trim_pool: the packet pool gives its slots back once no packet is in flight."""

from __future__ import annotations

import numpy as np

from rdmasim import topology


def _incast() -> tuple[object, object]:
    t = topology.incast(4, mtu=1024, seed=2)
    flows = t.sim.add_flows({"src": np.arange(4), "dst": np.full(4, 4), "size": np.full(4, 256 * 1024)})
    return t.sim, flows


def test_trim_after_a_run_frees_every_slot_and_the_next_run_grows_it_again() -> None:
    sim, flows = _incast()
    sim.run_flows()
    before = sim.pool_stats()
    assert before["pkts_in_use"] == 0 and before["pkts_allocated"] >= before["pkts_peak"] > 100
    assert sim.trim_pool() is True
    after = sim.pool_stats()
    assert after["pkts_allocated"] == 0 and after["pkts_peak"] == before["pkts_peak"]
    # the simulation goes on: new flows take packets again, with the same results as untrimmed
    more = sim.add_flows({"src": np.array([0]), "dst": np.array([1]), "size": np.array([64 * 1024])})
    sim.run_flows()
    assert (more.results()["fct_ps"] > 0).all()
    assert sim.pool_stats()["pkts_allocated"] > 0
    ref, _ = _incast()
    ref.run_flows()
    ref_more = ref.add_flows({"src": np.array([0]), "dst": np.array([1]), "size": np.array([64 * 1024])})
    ref.run_flows()
    assert np.array_equal(ref_more.results(), more.results())
    assert np.array_equal(flows.results()["fct_ps"] > 0, np.ones(4, bool))


def test_trim_with_packets_in_flight_keeps_the_pool() -> None:
    sim, _ = _incast()
    sim.run(until=2_000_000)  # 2 us: the senders' first packets are on the wire
    stats = sim.pool_stats()
    assert stats["pkts_in_use"] > 0
    assert sim.trim_pool() is False
    assert sim.pool_stats() == stats
    sim.run_flows()
