"""Per-flow hold (a compute phase before a flow sends) and LOCAL flows (no packets)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rdmasim import topology
from rdmasim.checks import MAX_TIME_PS
from rdmasim.traffic import FlowTable
from rdmasim.traffic.table import LOCAL

US = 1_000_000


def _sim(n: int = 3) -> Any:
    return topology.star(n, rate="100Gbps", delay="1us", mtu=1024).sim


def _tx_frames(sim: Any) -> int:
    return sum(h.link.direction(h.name).stats()["frames"] for h in sim.hosts.values())


def test_hold_delays_the_start_past_the_start_time() -> None:
    sim = _sim()
    fs = sim.add_flows({"src": [0, 1], "dst": [2, 2], "size": [10_000, 10_000], "start_ps": [3 * US, 3 * US],
                        "hold_ps": [0, 7 * US]})
    sim.run_flows()
    r = fs.results()
    assert r["started_ps"].tolist() == [3 * US, 10 * US]
    assert r["hold_ps"].tolist() == [0, 7 * US]
    assert (r["status"] == 0).all()


def test_hold_counts_from_the_last_dependency() -> None:
    sim = _sim()
    # flow 2 waits for flows 0 and 1 (the larger one finishes later), then computes 5 us
    t = FlowTable.from_columns([0, 1, 2], [2, 2, 0], [10_000, 200_000, 10_000], hold_ps=[0, 0, 5 * US],
                               dep_ptr=[0, 0, 0, 2], deps=[0, 1])
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    last = int(r["finish_ps"][:2].max())
    assert r["finish_ps"][1] > r["finish_ps"][0]
    assert int(r["started_ps"][2]) == last + 5 * US


def test_a_later_start_time_wins_over_the_dependency_and_the_hold_follows_it() -> None:
    sim = _sim()
    t = FlowTable.from_columns([0, 1], [1, 2], [1000, 1000], start_ps=[0, 50 * US], hold_ps=[0, 2 * US],
                               dep_ptr=[0, 0, 1], deps=[0])
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    assert r["finish_ps"][0] < 50 * US
    assert int(r["started_ps"][1]) == 52 * US


def test_local_flows_send_no_packets_and_last_their_hold() -> None:
    sim = _sim()
    # compute 4 us on host 0 (src == dst, size 0), then a 3 us "intra-node copy" 0 -> 1 of 1 MB, then a
    # zero-time join on host 1
    t = FlowTable.from_columns([0, 0, 1], [0, 1, 1], [0, 1 << 20, 0], verb="LOCAL",
                               hold_ps=[4 * US, 3 * US, 0], dep_ptr=[0, 0, 1, 2], deps=[0, 1])
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    assert r["started_ps"].tolist() == [4 * US, 7 * US, 7 * US]
    assert r["finish_ps"].tolist() == r["started_ps"].tolist()
    assert (r["status"] == 0).all() and r["bytes_delivered"].tolist() == [0, 1 << 20, 0]
    assert _tx_frames(sim) == 0
    assert sim.now == 7 * US
    c = sim._flows_core().counts()
    assert c == {"total": 3, "started": 3, "finished": 3, "failed": 0}


def test_a_network_flow_after_a_local_one_starts_at_its_finish() -> None:
    sim = _sim()
    t = FlowTable.from_columns([0, 0], [0, 1], [0, 50_000], verb=[LOCAL, 0], hold_ps=[9 * US, 0],
                               dep_ptr=[0, 0, 1], deps=[0])
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    assert int(r["started_ps"][1]) == 9 * US and r["status"][1] == 0
    assert r["bytes_delivered"][1] == 50_000 and _tx_frames(sim) > 0


def test_many_local_flows_joining_at_one_instant_release_their_dependent_then() -> None:
    sim = _sim(4)
    n = 200
    # n computes of different length; a join waits for all of them; then one network flow
    holds = (np.arange(n) * 1000 + 1000).astype(np.int64)
    src = np.concatenate([np.arange(n) % 4, [0, 0]])
    dst = np.concatenate([np.arange(n) % 4, [0, 1]])
    ptr = np.concatenate([np.zeros(n + 1, dtype=np.int64), [n, n + 1]])
    deps = np.concatenate([np.arange(n), [n]])
    t = FlowTable.from_columns(src, dst, np.concatenate([np.zeros(n + 1), [4096]]).astype(np.int64),
                               verb=np.concatenate([np.full(n + 1, LOCAL), [0]]),
                               hold_ps=np.concatenate([holds, [0, 0]]), dep_ptr=ptr, deps=deps)
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    assert int(r["started_ps"][n]) == int(holds.max())
    assert int(r["started_ps"][n + 1]) == int(holds.max()) and r["status"][n + 1] == 0


@pytest.mark.parametrize(
    ("cols", "exc", "match"),
    [
        ({"src": [0], "dst": [0], "size": [10]}, ValueError, r"src and dst are both host 0.*only a LOCAL"),
        ({"src": [0], "dst": [1], "size": [0]}, ValueError, r"column 'size': row 0 = 0 .*only a LOCAL"),
        ({"src": [0], "dst": [1], "size": [10], "hold_ps": [-1]}, ValueError,
         r"column 'hold_ps': row 0 = -1 .*allowed \[0, "),
        ({"src": [0], "dst": [1], "size": [10], "hold_ps": [MAX_TIME_PS + 1]}, ValueError,
         rf"column 'hold_ps': row 0 = {MAX_TIME_PS + 1}"),
        ({"src": [0], "dst": [1], "size": [10], "hold_ps": [1.5]}, TypeError, r"column 'hold_ps'"),
        ({"src": [0], "dst": [1], "size": [10], "verb": [4]}, ValueError, r"column 'verb'.*allowed \[0, 3\]"),
        ({"src": [0], "dst": [0], "size": [-1], "verb": ["LOCAL"]}, ValueError, r"column 'size': row 0 = -1"),
    ],
)
def test_bad_holds_and_local_misuse_are_refused(cols: dict[str, Any], exc: type[Exception],
                                                match: str) -> None:
    sim = _sim()
    with pytest.raises(exc, match=match):
        sim.add_flows(cols)
    assert sim._flows_core().counts()["total"] == 0


def test_the_core_refuses_what_python_would_have() -> None:
    sim = _sim()
    fc = sim._flows_core()
    cfg = {"path_mtu": 3, "timeout": 14, "retry_cnt": 7, "rnr_retry": 7, "min_rnr_timer": 12,
           "max_rd_atomic": 1, "recovery_mode": 0}

    def add(src: int, dst: int, size: int, verb: int, hold: int) -> None:
        fc.add(np.array([src]), np.array([dst]), np.array([size]), np.array([0]), np.array([verb]),
               np.array([3]), None, None, cfg, np.array([hold]))

    with pytest.raises(ValueError, match=r"hold -1 ps outside 0\.\."):
        add(0, 1, 10, 0, -1)
    with pytest.raises(ValueError, match=r"src and dst are both host 1 \(only a LOCAL flow may\)"):
        add(1, 1, 10, 0, 0)
    with pytest.raises(ValueError, match=r"size 0 outside 1\.\.2147483647"):
        add(0, 1, 0, 0, 0)
    with pytest.raises(ValueError, match=r"verb 4 outside 0\.\.3"):
        add(0, 1, 10, 4, 0)
    with pytest.raises(ValueError, match=r"src host 7 outside"):
        add(7, 7, 0, LOCAL, 0)
    assert fc.counts()["total"] == 0
    add(2, 2, 0, LOCAL, 5)  # accepted
    sim.run_flows()
    assert fc.counts()["finished"] == 1 and sim.now == 5


def test_table_validate_checks_hold_and_local_rules() -> None:
    ok = FlowTable.from_columns([0, 1], [0, 2], [0, 10], verb=["LOCAL", "WRITE"], hold_ps=[5, 0])
    ok.validate(3)
    with pytest.raises(ValueError, match=r"flow 1: hold_ps = -3 is outside"):
        FlowTable.from_columns([0, 1], [1, 2], 10, hold_ps=[0, -3]).validate(3)
    with pytest.raises(ValueError, match=r"flow 0: src = dst = 1.*only a LOCAL"):
        FlowTable.from_columns(1, 1, 10).validate(3)
    with pytest.raises(ValueError, match=r"flow 0: size = 0 is outside \[1, .*only a LOCAL"):
        FlowTable.from_columns([0, 0], [1, 0], [0, 0], verb=["WRITE", "LOCAL"]).validate(3)


def test_concat_and_shift_keep_the_hold() -> None:
    a = FlowTable.from_columns(0, 1, 10, hold_ps=7)
    b = FlowTable.from_columns(1, 1, 0, verb="LOCAL", hold_ps=9)
    t = FlowTable.concat(a, b).shifted(100)
    assert t.flows["hold_ps"].tolist() == [7, 9]
    assert t.flows["verb"].tolist() == [0, LOCAL]
