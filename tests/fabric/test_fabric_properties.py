"""Property test: random small fabrics, switch settings and flows. Whatever the configuration, every
byte arrives (or, on a lossy class, the flow ends with the retry-exhausted error after retry_cnt + 1
timeouts without progress: Go-Back-N starvation behind drop-tail is real), lossless classes with
adequate headroom never drop, every drop is counted by reason, and all buffers and MMU counters are
back to zero once the network drains."""

from __future__ import annotations

from fabric_util import assert_buffers_empty, flow
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdmasim
from rdmasim.verbs import enums as e

RETRY_CNT = 7

configs = st.fixed_dictionaries({
    "buffer": st.sampled_from(["1MB", "2MB", "4MB"]),
    "threshold": st.sampled_from(["dynamic", "16KB", "64KB"]),
    "alpha_shift": st.integers(0, 4),
    "lossless": st.sampled_from([(3,), ()]),
    "lossy_limit": st.sampled_from([None, "64KB", "256KB"]),
    "scheduler": st.sampled_from(["strict", "wrr"]),
    "ecn": st.sampled_from([None, {"kmin": "10KB", "kmax": "100KB", "pmax": 0.2}]),
    "ecn_mark": st.sampled_from(["enqueue", "dequeue"]),
})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, kind=st.sampled_from(["incast", "dumbbell", "leaf_spine"]), n=st.integers(2, 6),
       size=st.one_of(st.integers(1, 300_000), st.integers(200_000, 1_000_000)), seed=st.integers(0, 1000),
       mtu=st.sampled_from([1024, 4096]))
def test_random_fabrics_deliver_and_account(cfg, kind, n, size, seed, mtu):
    if kind == "incast":
        topo = rdmasim.incast(n, seed=seed, mtu=mtu, switch_config=cfg)
        pairs = [(h, topo.receiver) for h in topo.senders]
    elif kind == "dumbbell":
        topo = rdmasim.dumbbell(n, n, seed=seed, mtu=mtu, bottleneck_rate="50Gbps", switch_config=cfg)
        pairs = list(zip(topo.left, reversed(topo.right), strict=True))
    else:
        topo = rdmasim.leaf_spine(2, 2, n, seed=seed, mtu=mtu, switch_config=cfg)
        pairs = list(zip(topo.hosts_by_leaf[0], topo.hosts_by_leaf[1], strict=True))
    sim = topo.sim
    flows = [flow(a, b, size, seed=i, timeout=10, retry_cnt=RETRY_CNT) for i, (a, b) in enumerate(pairs)]
    for f in flows:
        f.post()
    for f in flows:
        wc = sim.wait_for(f.cq, 1, timeout="2s")[0]
        if wc.status == e.IBV_WC_SUCCESS:
            assert f.delivered(), f
        else:  # e.g. lossy, 16 KB static threshold, 6 synchronised Go-Back-N senders: one starves
            assert not cfg["lossless"] and wc.status == e.IBV_WC_RETRY_EXC_ERR, (f, wc)
            # retry_cnt counts every retry, by timeout or by NAK-sequence error (IBA; rxe_comp.c)
            stats = f.qp.stats()
            assert stats["timeouts"] + stats["naks_rcvd"] >= RETRY_CNT + 1, stats
    sim.run()
    assert_buffers_empty(sim)
    for sw in sim.switches.values():
        t = sw.totals()
        if cfg["lossless"]:
            assert t["drops"] == 0, (sw.name, t)  # default 64 KB headroom covers a 1 us cable
        assert t["drops"] == sum(t[f"drops_{r}"] for r in ("no_route", "lossy_threshold", "buffer_full",
                                                          "headroom_overflow", "watchdog"))
        assert t["rx_pkts"] == t["tx_pkts"] - t["pfc_xoff_sent"] - t["pfc_xon_sent"] + t["drops"]
