"""Atomics under out-of-order placement (recovery "ooo", csrc/transport/ooo_read.c,
docs/multipath.md "Atomics").

The responder keeps an atomic request that arrives ahead of its expected PSN and executes it when
the expected PSN reaches it: every atomic is executed once, in PSN order, whatever order the
fabric delivered them in (a duplicate is answered from the atomic response cache).  The requester
places an atomic response that arrives ahead of its expected PSN (the original value into the
WQE's buffer) and completes atomics in send-queue order.  On a symmetric sprayed fabric nothing is
lost, so nothing may be resent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from support.verbs_pair import mr, open_host, qp_pair

import rdmasim
from rdmasim.verbs import SGE, QPCap, SendWR
from rdmasim.verbs import enums as e

ATOMIC = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_ATOMIC
N = 64  # fetch-and-adds per QP


def sprayed_fetch_adds(recovery: str, *, seed: int = 1) -> dict[str, Any]:
    """Every host i of a 2 x 2 x 2 leaf-spine (spraying) sends N FETCH_AND_ADDs of 1 to one counter
    on host (i + 2) % 4, up to 16 outstanding.  The counters, the values each atomic fetched (in
    posting order) and the requesters' and responders' counters summed."""
    topo = rdmasim.leaf_spine(2, 2, 2, seed=seed, switch_config={"path_select": "spray"})
    for h in topo.sim.hosts.values():
        h.set_nic_profile("cx7-ar")
    hosts = [h for row in topo.hosts_by_leaf for h in row]
    opened = [open_host(h, 2 * N) for h in hosts]
    jobs = []
    for i in range(len(hosts)):
        (_, pd_a, cq_a), (_, pd_b, cq_b) = opened[i], opened[(i + 2) % len(hosts)]
        qa, qb = qp_pair(pd_a, cq_a, pd_b, cq_b, cap=QPCap(max_send_wr=N), recovery=recovery,
                         irn_window=64, max_rd_atomic=16)
        fetched = mr(pd_a, 8 * N, e.IBV_ACCESS_LOCAL_WRITE, 0xFF)
        counter = mr(pd_b, 8, ATOMIC, 0)
        for k in range(N):
            wr = SendWR(wr_id=k, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                        sg=[SGE(fetched.buf + 8 * k, 8, fetched.lkey)])
            wr.set_wr_atomic(counter.rkey, counter.buf, compare_add=1, swap=0)
            qa.post_send(wr)
        jobs.append((qa, qb, fetched, counter, cq_a))
    topo.sim.run(until=topo.sim.now + rdmasim.units.parse_time("100ms"))
    out: dict[str, Any] = {"retx": 0, "naks_sent": 0, "implied_naks": 0, "timeouts": 0, "executed": 0,
                           "counters": [], "fetched": [], "wc_ids": []}
    for qa, qb, fetched, counter, cq in jobs:
        sa, sb = qa.stats(), qb.stats()
        out["retx"] += sa["pkts_retx"]
        out["implied_naks"] += sa["implied_naks"]
        out["timeouts"] += sa["timeouts"]
        out["naks_sent"] += sb["naks_sent"]
        out["executed"] += sb["atomics_executed"]
        out["counters"].append(int(counter.array.view(np.uint64)[0]))
        out["fetched"].append(fetched.array.view(np.uint64).tolist())
        wcs = cq.poll(2 * N)[1]
        out["wc_ids"].append([(wc.wr_id, wc.ok) for wc in wcs])
    return out


def test_sprayed_atomics_execute_once_in_order_and_resend_nothing() -> None:
    got = sprayed_fetch_adds("ooo")
    # executed once each, in PSN order: the k-th fetch-and-add fetched k
    assert got["counters"] == [N] * 4 and got["executed"] == 4 * N, got
    assert got["fetched"] == [list(range(N))] * 4, got["fetched"]
    assert got["wc_ids"] == [[(k, True) for k in range(N)]] * 4
    assert got["retx"] == 0 and got["naks_sent"] == 0, got
    assert got["implied_naks"] == 0 and got["timeouts"] == 0, got


def test_sprayed_atomics_with_go_back_n_resend() -> None:
    """The same traffic with Go-Back-N: reordered requests are NAKed and reordered responses start
    implied-NAK retries; the atomics still execute once each, in order (the response cache)."""
    got = sprayed_fetch_adds("gbn")
    assert got["counters"] == [N] * 4 and got["fetched"] == [list(range(N))] * 4, got
    assert got["retx"] > 0, got
