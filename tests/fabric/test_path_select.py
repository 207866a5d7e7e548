"""Per-switch path selection among equal-cost next hops: ECMP (flow hash), spray (per packet) and
adaptive (least-queued egress). Spraying one QP over paths of unequal delay reorders it, and plain
RC (Go-Back-N) answers the reordering with spurious retransmissions; ECMP never reorders."""

from __future__ import annotations

import pytest
from fabric_util import flow, run_all

import rdmasim
from rdmasim.fabric import switch_config

N_SPINES = 4


def _two_leaves(mode: str):
    sim = rdmasim.Simulator(5)
    a, b = sim.add_host("a"), sim.add_host("b")
    l0 = sim.add_switch("l0", ports=1 + N_SPINES, path_select=mode)
    l1 = sim.add_switch("l1", ports=1 + N_SPINES, path_select=mode)
    spines = [sim.add_switch(f"sp{i}", ports=2) for i in range(N_SPINES)]
    sim.connect(a, l0)
    sim.connect(b, l1)
    for i, s in enumerate(spines):  # unequal path delays: per-packet choice reorders
        sim.connect(l0, s, delay=f"{1 + 2 * i}us")
        sim.connect(s, l1, delay="1us")
    return sim, a, b, spines


@pytest.mark.parametrize("mode", ["ecmp", "spray"])
def test_one_qp_spray_uses_every_path_and_gbn_retransmits(mode):
    sim, a, b, spines = _two_leaves(mode)
    f = flow(a, b, 128 * 1024, seed=1, mtu=1024)
    run_all(sim, [f])
    assert f.delivered()
    used = [s.totals()["rx_pkts"] for s in spines]
    retx = f.qp.stats()["pkts_retx"]
    if mode == "ecmp":
        assert sum(1 for u in used if u) == 1 and retx == 0, (used, retx)
    else:
        assert all(u > 0 for u in used), used
        assert retx > 0, "Go-Back-N under spraying should retransmit reordered packets"
    print(f"\n{mode}: per-spine packets {used}, requester retransmissions {retx}")


def test_adaptive_balances_spine_uplinks_better_than_ecmp():
    def max_load(mode: str) -> int:
        topo = rdmasim.leaf_spine(2, N_SPINES, 8, seed=3, switch_config={"path_select": mode})
        src, dst = topo.hosts_by_leaf
        flows = [flow(src[i], dst[(i + 3) % 8], 64 * 1024, seed=i) for i in range(8)]
        run_all(topo.sim, flows)
        assert all(f.delivered() for f in flows)
        leaf0 = topo.leaves[0]
        return max(leaf0.port_stats(leaf0.port_to(s))["tx_bytes"] for s in topo.spines)

    ecmp, adaptive = max_load("ecmp"), max_load("adaptive")
    total = 8 * 64 * 1024
    assert adaptive <= ecmp
    assert adaptive < 1.3 * total / N_SPINES, (adaptive, total / N_SPINES)
    print(f"\nmax spine-uplink bytes: ecmp {ecmp}, adaptive {adaptive}, even share {total // N_SPINES}")


def test_path_select_rejects_unknown_mode():
    with pytest.raises(ValueError, match="path_select"):
        switch_config(path_select="random")
