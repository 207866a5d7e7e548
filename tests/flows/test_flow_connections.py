"""Flows on one connection (the ``after`` column): one QP pair, messages posted in order.

As NCCL sends a channel's steps and MPI a connection's messages, a flow chained after another is posted
on that flow's QP pair once it was posted, so the RC send queue sends them one after the other: the
first message finishes after its own bytes, not after sharing the link with the second.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from rdmasim import topology
from rdmasim.traffic import FlowTable

US = 1_000_000
MIB = 1 << 20


def _sim(n: int = 3) -> Any:
    return topology.star(n, rate="100Gbps", delay="1us", mtu=4096).sim


def _run(table: Any, n: int = 3, **kw: Any) -> np.ndarray:
    sim = _sim(n)
    fs = sim.add_flows(table, **kw)
    sim.run_flows()
    return fs.results()


def test_a_connection_sends_its_messages_one_after_the_other() -> None:
    cols = {"src": [0, 0], "dst": [1, 1], "size": [MIB, MIB]}
    apart = _run(cols)  # two QP pairs: the messages share the link and end together
    chained = _run({**cols, "after": [0, 1]})
    assert (apart["status"] == 0).all() and (chained["status"] == 0).all()
    assert chained["started_ps"].tolist() == [0, 0]  # both posted at once, on one send queue
    one = int(chained["finish_ps"][0])
    both = int(chained["finish_ps"][1])
    # the second follows the first on the wire: its bytes' time later, with no round trip between
    assert 0 < one - (both - one) <= 6 * US
    assert abs(int(apart["finish_ps"].max()) - both) <= 0.01 * both  # the same bytes on the link
    assert int(apart["finish_ps"].min()) > 0.9 * both  # sharing, neither ends early
    assert chained["bytes_delivered"].tolist() == [MIB, MIB]


def test_live_counters_are_each_messages_own() -> None:
    sim = _sim()
    fs = sim.add_flows({"src": [0, 0], "dst": [1, 1], "size": [MIB, MIB], "after": [0, 1]})
    sim.run_flows(until=50 * US)  # the first message is half sent
    r = fs.results()
    assert (r["status"] == 0x101).all()
    assert 0 < r["bytes_delivered"][0] < MIB and r["bytes_delivered"][1] == 0
    sim.run_flows(until=int(r["started_ps"][0]) + 120 * US)  # the first is done, the second under way
    r = fs.results()
    assert r["status"][0] == 0 and r["bytes_delivered"][0] == MIB
    assert r["status"][1] == 0x101 and 0 < r["bytes_delivered"][1] < MIB
    sim.run_flows()
    assert fs.results()["bytes_delivered"].tolist() == [MIB, MIB]


def test_a_message_is_posted_only_after_the_one_before_it() -> None:
    # flow 0 (0 -> 1) waits for flow 2 (2 -> 0); flow 1 follows flow 0 on its connection and waits for
    # nothing else, yet it cannot be posted before flow 0
    t = FlowTable.from_columns([0, 0, 2], [1, 1, 0], [64 << 10, 64 << 10, 256 << 10], after=[0, 1, 0],
                               dep_ptr=[0, 1, 1, 1], deps=[2])
    r = _run(t)
    assert (r["status"] == 0).all()
    assert r["started_ps"][0] == r["started_ps"][1] == r["finish_ps"][2]
    assert r["finish_ps"][0] < r["finish_ps"][1]


@pytest.mark.parametrize("verb", ["SEND", "READ", "WRITE"])
def test_every_verb_on_one_connection(verb: str) -> None:
    k, size = 5, 100_000
    t = FlowTable.from_columns([0] * k, [1] * k, [size] * k, verb=verb, after=[0] + [1] * (k - 1))
    r = _run(t)
    assert (r["status"] == 0).all() and (r["bytes_delivered"] == size).all()
    assert (r["started_ps"] == 0).all()
    gaps = np.diff(r["finish_ps"])
    assert (gaps > 0).all() and gaps.max() - gaps.min() <= 0.02 * gaps.mean()  # back to back


def test_a_failed_message_flushes_the_rest_of_its_connection() -> None:
    sim = _sim()
    sim.links[1].fail(at=20 * US)  # h1's link, for good
    # flow 2 is posted long after flows 0 and 1 failed: it is flushed at once on the errored QP
    t = FlowTable.from_columns([0, 0, 0], [1, 1, 1], [MIB, MIB, 4096], start_ps=[0, 0, 5000 * US],
                               after=[0, 1, 1])
    fs = sim.add_flows(t, timeout=4, retry_cnt=1)
    sim.run_flows()
    r = fs.results()
    assert r["status"].tolist() == [12, 5, 5]  # RETRY_EXC_ERR, then WR_FLUSH_ERR
    assert r["started_ps"][2] == 5000 * US and r["finish_ps"][2] == 5000 * US
    assert r["retx_pkts"][0] > 0 and r["retx_pkts"][1] == r["retx_pkts"][2] == 0
    assert sim._flows_core().counts() == {"total": 3, "started": 3, "finished": 3, "failed": 3}


def test_concat_keeps_connections() -> None:
    a = FlowTable.from_columns([0, 0], [1, 1], [10, 10], after=[0, 1])
    b = FlowTable.from_columns([1, 1, 1], [2, 2, 2], [10, 10, 10], after=[0, 1, 1])
    c = FlowTable.concat(a, b)
    assert c.flows["after"].tolist() == [0, 1, 0, 1, 1]
    c.validate(3)


def _bad(after: list[int], **kw: Any) -> FlowTable:
    n = len(after)
    cols: dict[str, Any] = {"src": [0] * n, "dst": [1] * n, "size": [100] * n, **kw}
    return FlowTable.from_columns(cols.pop("src"), cols.pop("dst"), cols.pop("size"), after=after, **cols)


@pytest.mark.parametrize(("table", "match"), [
    (_bad([0, 2]), r"column 'after', row 1 = 2 is outside \[0, 1\]"),
    (_bad([0, 1], priority=[3, 4]), "row 1 = 1 names row 0, which is not on its connection"),
    (_bad([0, 1], verb=["WRITE", "READ"]), "not on its connection"),
    (FlowTable.from_columns([0, 0], [1, 2], [10, 10], after=[0, 1]), "not on its connection"),
    (FlowTable.from_columns([0, 0], [0, 0], [0, 0], verb="LOCAL", after=[0, 1]), "not LOCAL"),
    (_bad([0, 1, 2]), "rows 1 and 2 both follow row 0"),
    # flow 0 waits for flow 1's end, flow 1 for flow 0's post: neither ever starts
    (_bad([0, 1], dep_ptr=[0, 1, 1], deps=[1]), "cycle"),
])
def test_bad_connections_are_refused(table: FlowTable, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        table.validate(3)
    sim = _sim()
    with pytest.raises(ValueError, match=match):
        sim.add_flows(table)
    assert sim._flows_core().counts()["total"] == 0


@pytest.mark.parametrize(("after", "deps", "match"), [
    ([0, 2], None, "flow 1: after 2 outside 0..1"),
    ([0, 1, 2], None, "flows 1 and 2 both come after flow 0"),
    ([0, 1], ([0, 1, 1], [1]), "dependency cycle"),
])
def test_the_core_refuses_bad_connections_too(after: list[int], deps: Any, match: str) -> None:
    """The C side checks the column again (the Python checks are bypassed here)."""
    sim = _sim()
    n = len(after)
    core = sim._flows_core()
    cfg = {"path_mtu": 5, "timeout": 14, "retry_cnt": 7, "rnr_retry": 7, "min_rnr_timer": 12,
           "max_rd_atomic": 1, "recovery_mode": 0}
    ptr, dd = (None, None) if deps is None else (np.asarray(deps[0]), np.asarray(deps[1]))
    with pytest.raises(ValueError, match=match):
        core.add(np.zeros(n, np.int32), np.ones(n, np.int32), np.full(n, 100, np.uint64),
                 np.zeros(n, np.int64), np.zeros(n, np.uint8), np.full(n, 3, np.uint8), ptr, dd, cfg,
                 None, np.asarray(after, np.uint32))
    assert core.counts()["total"] == 0
    core.add(np.zeros(2, np.int32), np.ones(2, np.int32), np.full(2, 100, np.uint64), np.zeros(2, np.int64),
             np.zeros(2, np.uint8), np.full(2, 3, np.uint8), None, None, cfg, None,
             np.asarray([0, 1], np.uint32))
    sim.run_flows()
    assert core.counts() == {"total": 2, "started": 2, "finished": 2, "failed": 0}
