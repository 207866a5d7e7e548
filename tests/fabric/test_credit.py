"""InfiniBand credit-based flow control (IBA 7.9, csrc/link/credit.c): never a drop or a buffer
overrun, stalled VLs resume one credit round trip after the buffer drains, throughput is the line
rate or buffer / credit round trip (analytical), the IBA modular credit test, SL -> VL tables."""

from __future__ import annotations

import numpy as np
import pytest
from fabric_util import assert_buffers_empty, flow, run_all
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdmasim
from rdmasim import fabric
from rdmasim import ib_fabric as ib
from rdmasim import trace as tr

MTU = 4096
#: a middle WRITE packet: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + ICRC 4
FRAME = MTU + 58
PKT_BLOCKS = ib.blocks(FRAME + 16)  # the largest (first, with RETH) packet: 66 blocks
WIRE = FRAME + 24                   # + FCS, preamble and inter-frame gap


def _ser_ps(nbytes: int, rate_bps: int = 100 * 10**9) -> int:
    return -(-nbytes * 8 * 10**12 // rate_bps)


# ---- the IBA accounting ----

def test_fc_period_is_65536_symbol_times() -> None:
    # 100 Gb/s 4x: 25 Gb/s per lane, a symbol (8 data bits) is 0.32 ns; 65,536 of them 20.97 us
    assert ib.fc_period_ps("100Gbps") == 20_971_520
    assert ib.blocks(64) == 1 and ib.blocks(65) == 2 and ib.blocks(FRAME) == 65


# ---- lossless, no overrun: a property over random fabrics, loads and buffers ----

def _fabric(kind: str, seed: int) -> tuple[rdmasim.Simulator, list]:
    if kind == "star":
        t = rdmasim.star(4, seed=seed)
        return t.sim, list(t.hosts)
    if kind == "dumbbell":
        d = rdmasim.dumbbell(2, 2, seed=seed, bottleneck_rate="50Gbps")
        return d.sim, [*d.left, *d.right]
    ls = rdmasim.leaf_spine(2, 2, 2, seed=seed, fabric_rate="50Gbps")
    return ls.sim, ls.hosts


def _check_credit_ports(sim: rdmasim.Simulator, hosts: list) -> int:
    """Every credit port: occupancy and its peak within the buffer, no overrun; returns the
    number of ports checked."""
    n = 0
    ports = [(s, p) for s in sim.switches.values() for p in range(len(s.ports))] + [(h, 0) for h in hosts]
    for node, port in ports:
        c = ib.credit_stats(node, port)
        assert c is not None
        assert c["credit_overruns"] == 0, (node.name, port, c)
        for used, peak, cap in zip(c["credit_used_blocks"], c["credit_peak_blocks"], c["credit_cap_blocks"],
                                   strict=True):
            assert used <= cap and peak <= cap, (node.name, port, c)
        n += 1
    return n


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(["star", "dumbbell", "leaf_spine"]),
       buf_pkts=st.integers(1, 6), vls=st.integers(1, 3), seed=st.integers(0, 1000),
       pairs=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(1, 512)),
                      min_size=1, max_size=6))
def test_credits_never_drop_or_overrun(kind: str, buf_pkts: int, vls: int, seed: int,
                                       pairs: list[tuple[int, int, int]]) -> None:
    sim, hosts = _fabric(kind, seed)
    ib.enable_credits(sim, vls=vls, buffer=buf_pkts * PKT_BLOCKS * 64)
    flows = [flow(hosts[a], hosts[b if b != a else (a + 1) % 4], kb * 1024, seed=i, timeout=8)
             for i, (a, b, kb) in enumerate(pairs)]
    for f in flows:
        f.post()
    t = 0
    while t < 3_000_000_000 and not all(f.qp.stats()["msgs_completed"] == 1 for f in flows):
        t += 20_000_000  # sample every 20 us
        sim.run(t)
        _check_credit_ports(sim, hosts)
    assert all(f.qp.stats()["msgs_completed"] == 1 for f in flows)
    assert all(f.delivered() for f in flows)
    for s in sim.switches.values():
        tot = s.totals()
        assert tot["drops"] == 0 and tot["pfc_xoff_sent"] == 0, (s.name, tot)
    assert all(d.stats()["dropped"] == 0 for link in sim.links for d in (link.ab, link.ba))
    sim.run()
    _check_credit_ports(sim, hosts)
    assert_buffers_empty(sim)


# ---- throughput of one link: line rate, or buffer / credit round trip ----

def _one_link_rate(buf_pkts: int, delay: str = "1us") -> tuple[float, int]:
    """Measured wire utilisation of a -> b carrying one long WRITE, with ``buf_pkts`` packets of
    buffer at b; and the credit round trip."""
    t = rdmasim.back_to_back(rate="100Gbps", delay=delay, mtu=MTU, seed=3)
    ib.enable_credits(t.sim, buffer=buf_pkts * PKT_BLOCKS * 64)
    f = flow(t.a, t.b, 8 << 20, seed=1)
    f.post()
    t.sim.run("20us")                      # past the start
    b0, t0 = t.link.ab.stats()["busy_ps"], t.sim.now
    t.sim.run("300us")
    b1, t1 = t.link.ab.stats()["busy_ps"], t.sim.now
    rtt = ib.credit_round_trip_ps("100Gbps", t.link.delay_ps, FRAME)
    return (b1 - b0) / (t1 - t0), rtt


def test_line_rate_when_buffer_covers_the_credit_round_trip() -> None:
    util, rtt = _one_link_rate(buf_pkts=16)
    bdp_pkts = rtt / _ser_ps(WIRE)
    assert 16 > bdp_pkts                    # the buffer holds the credit loop's BDP (7.0 packets)
    assert util == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("buf_pkts", [2, 4])
def test_buffer_over_round_trip_when_smaller(buf_pkts: int) -> None:
    """With k packets of buffer a packet's blocks come back one credit round trip after it went
    out, so the link carries k packets per round trip: utilisation = k x ser / RTT."""
    util, rtt = _one_link_rate(buf_pkts)
    expect = buf_pkts * _ser_ps(WIRE) / rtt
    assert expect < 0.7
    assert util == pytest.approx(expect, rel=0.02)
    print(f"\n{buf_pkts} packets of buffer: utilisation {util:.4f}, buffer/RTT {expect:.4f}")


# ---- a stalled VL resumes one credit round trip after the buffer drains ----

def test_stalled_vl_resumes_within_one_credit_round_trip() -> None:
    """h0 -> s -> h1 with the egress to h1 at 10 Gb/s: h0's VL at s fills and h0 stalls; each time
    s forwards a packet (its buffer drains) the FC packet returns the blocks, and h0's next
    packet reaches s within one credit round trip of that drain."""
    sim = rdmasim.Simulator(seed=2)
    s = sim.add_switch("s", ports=4)
    h0, h1 = sim.add_host("h0"), sim.add_host("h1")
    up = sim.connect(h0, s, rate="100Gbps", delay="1us", mtu=MTU)
    down = sim.connect(s, h1, rate="10Gbps", delay="1us", mtu=MTU)
    ib.enable_credits(sim, buffer=3 * PKT_BLOCKS * 64)
    trace = sim.trace()
    f = flow(h0, h1, 1 << 20, seed=1)
    run_all(sim, [f])
    a = trace.to_numpy()
    roce = a["pkt_kind"] == 0
    drains = a["t_ps"][(a["kind"] == tr.TX) & (a["link"] == down.ab.link_id) & roce]
    arrivals = a["t_ps"][(a["kind"] == tr.RX) & (a["link"] == up.ab.link_id) & roce]
    stall = ib.credit_stats(h0)
    assert stall["credit_stall_ps"][0] > 500_000_000 and stall["credit_stalls"] > 100  # it did stall
    # credit round trip: FC packet out (after at most one frame the port is sending) and back,
    # then the data packet out and across
    bound = 2 * up.delay_ps + _ser_ps(ib.FC_PACKET_BYTES) + 2 * _ser_ps(WIRE + 16)
    later = arrivals[arrivals > drains[0] + 2 * up.delay_ps + _ser_ps(WIRE)]
    gaps = np.array([t - drains[np.searchsorted(drains, t) - 1] for t in later])
    assert len(gaps) > 100
    assert gaps.max() <= bound
    # and not sooner than the loop allows: the data waited for the drain's credits
    assert gaps.min() >= 2 * up.delay_ps
    print(f"\nresume after drain: {gaps.min() / 1e3:.1f}..{gaps.max() / 1e3:.1f} ns "
          f"(bound {bound / 1e3:.1f} ns)")


# ---- SL -> VL and the configuration errors ----

def test_sl2vl_puts_classes_on_their_vls() -> None:
    """Two classes (DSCP 10 -> SL 1, DSCP 20 -> SL 2) mapped to VLs 0 and 1: each VL's buffer at the
    switch holds only its own class, and both complete."""
    topo = rdmasim.dumbbell(2, 1, seed=4, switch_config={"dscp_map": {10: 1, 20: 2}})
    sim = topo.sim
    for h in (*topo.left, *topo.right):
        fabric.host_dscp_map(h, {10: 1, 20: 2})
    ib.enable_credits(sim, vls=2, buffer="32KB", sl2vl={1: 0, 2: 1})
    f0 = flow(topo.left[0], topo.right[0], 256 * 1024, seed=1, traffic_class=10 << 2)
    f1 = flow(topo.left[1], topo.right[0], 256 * 1024, seed=2, traffic_class=20 << 2)
    run_all(sim, [f0, f1])
    assert f0.delivered() and f1.delivered()
    sl = topo.s_left
    p0, p1 = sl.port_to(topo.left[0]), sl.port_to(topo.left[1])
    st0, st1 = sl.port_stats(p0), sl.port_stats(p1)
    assert st0["credit_peak_blocks"][0] > 0 and st0["credit_peak_blocks"][1] == 0
    assert st1["credit_peak_blocks"][1] > 0 and st1["credit_peak_blocks"][0] == 0
    mid = sl.port_to(topo.s_right)
    q = sl.port_stats(mid)["queue_tx_pkts"]
    assert q[0] > 0 and q[1] > 0 and sum(q[2:]) == 0


def test_configuration_errors_name_the_key() -> None:
    t = rdmasim.back_to_back()
    with pytest.raises(ValueError, match="vls must be an int in 1..8"):
        ib.enable_credits(t.sim, vls=9)
    with pytest.raises(ValueError, match=r"sl2vl\[3\] \(VL\) must be an int in 0..1"):
        ib.enable_credits(t.sim, vls=2, sl2vl={3: 2})
    with pytest.raises(ValueError, match="cannot hold one 4096-byte-MTU packet"):
        ib.enable_credits(t.sim, buffer="2KB")
    with pytest.raises(ValueError, match="buffer: 3 values for 2 VLs"):
        ib.enable_credits(t.sim, vls=2, buffer=["8KB"] * 3)
    assert ib.credit_stats(t.a) is None        # nothing half-configured
    ib.enable_credits(t.sim)
    assert ib.credit_stats(t.a)["credit_cap_blocks"][0] == 1000  # 64 KB = 64,000 B
    with pytest.raises(Exception, match="slow receiver .* credit mode is not supported"):
        fabric.slow_receiver(t.b, "10Gbps")     # a slow receiver speaks PFC
    u = rdmasim.back_to_back()
    fabric.slow_receiver(u.b, "10Gbps")
    with pytest.raises(Exception, match="has a slow receiver"):
        ib.enable_credits(u.sim)
