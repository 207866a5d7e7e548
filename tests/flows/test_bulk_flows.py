"""Bulk flows handed to the C core as arrays (rdmasim.flows, csrc/workload/flows.c)."""

from __future__ import annotations

import numpy as np
import pytest

from rdmasim import topology, traffic
from rdmasim.flows import RUNNING, WAITING, describe_status, summarize
from rdmasim.units import parse_time


def _incast(n: int = 4, **kw: object):
    return topology.incast(n, rate="100Gbps", delay="1us", mtu=1024, **kw).sim


def test_every_verb_completes_and_delivers_its_bytes() -> None:
    sim = _incast(6)
    size = np.array([1, 1000, 1024, 5000, 1 << 20, 300_000])
    fs = sim.add_flows({"src": np.arange(6), "dst": np.full(6, 6), "size": size,
                        "verb": ["WRITE", "READ", "SEND", "WRITE", "READ", "SEND"]})
    sim.run_flows()
    r = fs.results()
    assert [describe_status(s) for s in r["status"]] == ["ok"] * 6
    assert (r["bytes_delivered"] == size).all()
    assert (r["finish_ps"] > r["started_ps"]).all() and (r["started_ps"] == 0).all()
    # nothing is faster than the bytes at line rate
    assert (r["fct_ps"] >= size * 8 * 10**12 // 100_000_000_000).all()
    # QP pairs are freed once flows finish
    assert (sim._flows_core().results(0, 6)["req_qpn"] == 0).all()


def test_results_columns_name_their_units() -> None:
    """The per-flow array names units as the results folder's tables do: size_bytes, *_ps, *_pkts;
    ``size`` still reads the same column (a deprecated alias); a DataFrame gets the new names."""
    import pandas as pd

    from rdmasim.results import COLUMN_UNITS

    sim = _incast(2)
    fs = sim.add_flows({"src": [0, 1], "dst": [2, 2], "size": [3000, 70_000]})
    sim.run_flows()
    r = fs.results()
    names = r.dtype.names or ()
    assert "size" not in names and r["size_bytes"].tolist() == [3000, 70_000]
    assert r["size"].tolist() == [3000, 70_000]
    counts = {"flow_id", "src", "dst", "verb", "priority", "cnps", "status"}
    for c in names:
        assert c in counts or c.startswith("bytes_") or any(c.endswith(u) for u in COLUMN_UNITS), c
    df = pd.DataFrame(r)
    assert "size_bytes" in df.columns and "size" not in df.columns
    assert (df["bytes_delivered"] == df["size_bytes"]).all()


def test_start_times_and_dependencies() -> None:
    sim = _incast(3)
    t = traffic.FlowTable.from_columns(src=[0, 1, 2], dst=[3, 3, 3], size=[100_000, 100_000, 50_000],
                                       start_ps=[parse_time("5us"), 0, 0],
                                       dep_ptr=[0, 0, 0, 2], deps=[0, 1])
    fs = sim.add_flows(t)
    sim.run_flows()
    r = fs.results()
    assert r["started_ps"][0] == parse_time("5us")
    assert r["started_ps"][1] == 0
    # flow 2 starts exactly when the later of its two dependencies finishes
    assert r["started_ps"][2] == max(r["finish_ps"][0], r["finish_ps"][1])


def test_waiting_and_running_status_before_the_end() -> None:
    sim = _incast(2)
    fs = sim.add_flows({"src": [0, 1], "dst": [2, 2], "size": [1 << 20, 1000],
                        "start_ps": [0, parse_time("1ms")]})
    sim.run_flows(until="20us")
    r = fs.results()
    assert r["status"][0] == RUNNING and 0 < r["bytes_delivered"][0] < 1 << 20
    assert r["status"][1] == WAITING and r["started_ps"][1] == -1
    sim.run_flows()
    assert (fs.results()["status"] == 0).all()


def test_ring_allreduce_time_against_the_analytical_bound() -> None:
    n, size = 8, 8 << 20
    sim = topology.star(n, rate="100Gbps", delay="1us", mtu=4096).sim
    fs = sim.add_flows(traffic.ring_allreduce(n, size), mtu=4096)
    sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all() and len(r) == 2 * n * (n - 1)
    took = int(r["finish_ps"].max())
    ideal = traffic.ideal_ring_allreduce_ps(n, size, 100e9, 2 * parse_time("1us"))
    # headers (~2 % at MTU 4096) and per-step ACK round trips on top of the fluid bound
    assert ideal <= took <= 1.15 * ideal, (took, ideal)


def test_loss_is_recovered_with_size_only_packets() -> None:
    sim = topology.back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=3).sim
    for link in sim.links:
        link.ab.set_loss(0.01)
        link.ba.set_loss(0.01)
    fs = sim.add_flows({"src": [0, 1, 0], "dst": [1, 0, 1], "size": [1 << 20] * 3,
                        "verb": ["WRITE", "READ", "SEND"]})
    sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all()
    assert (r["bytes_delivered"] == 1 << 20).all()
    assert r["retx_pkts"].sum() > 0


def test_runs_are_deterministic_for_a_seed() -> None:
    def once() -> np.ndarray:
        sim = topology.leaf_spine(2, 2, 4, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us",
                                  mtu=1024, seed=7).sim
        for link in sim.links:
            link.ab.set_loss(0.002)
        small = traffic.SizeCDF([1000, 64_000], [0.0, 1.0], "small")
        fs = sim.add_flows(traffic.poisson(8, 0.5, "100Gbps", "200us", size_cdf=small, seed=2))
        sim.run_flows()
        return fs.results()

    a, b = once(), once()
    assert len(a) > 10
    assert (a == b).all()


def test_samples_show_progress_and_rates() -> None:
    from rdmasim.cc import DcqcnParams

    sim = _incast(4)
    for h in sim.hosts.values():
        h.set_congestion_control("dcqcn", DcqcnParams.paper())
    fs = sim.add_flows({"src": np.arange(4), "dst": np.full(4, 4), "size": np.full(4, 2 << 20)})
    s = sim.run_flows(sample_every="5us")
    assert s is not None and len(s.t_ps) > 50
    for fid in range(4):
        m = s.flow_id == fid
        assert (np.diff(s.bytes_acked[m].astype(np.int64)) >= 0).all()
        assert s.bytes_acked[m].max() <= 2 << 20
    assert (s.rate_bps > 0).any(), "DCQCN should have cut some rate below line rate"
    assert summarize(fs.results())["completed"] == 4


@pytest.mark.parametrize(
    ("cols", "match"),
    [
        ({"src": [0], "dst": [9], "size": [1]}, r"column 'dst': row 0 = 9 .*allowed \[0, 2\]"),
        ({"src": [0], "dst": [0], "size": [1]}, "row 0: src and dst are both host 0"),
        ({"src": [0], "dst": [1], "size": [0]}, r"column 'size': row 0 = 0 .*allowed \[1, 2147483647\]"),
        ({"src": [0], "dst": [1], "size": [1], "verb": [7]}, r"column 'verb'.*row 0 = 7"),
        ({"src": [0], "dst": [1], "size": [1], "priority": [8]}, r"column 'priority': row 0 = 8"),
        ({"src": ["h0"], "dst": ["nope"], "size": [1]}, "no host named 'nope'"),
        ({"src": [0], "dst": [1], "size": [1], "verb": ["PUT"]}, "'PUT'"),
        ({"src": [0], "dst": [1], "size": [1], "start": [5]}, "unknown flow column.*'start'.*start_ps"),
    ],
)
def test_bad_flows_are_refused_with_the_reason(cols: dict, match: str) -> None:
    sim = _incast(2)
    with pytest.raises(ValueError, match=match):
        sim.add_flows(cols)
    assert sim._flows_core().counts()["total"] == 0


def test_hundred_thousand_flows_set_up_from_arrays() -> None:
    sim = topology.leaf_spine(4, 2, 8, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us",
                              mtu=1024).sim
    small = traffic.SizeCDF([1000, 64_000], [0.0, 1.0], "small")
    t = traffic.poisson(32, 0.3, "100Gbps", "30ms", size_cdf=small, seed=1)
    assert len(t) >= 100_000
    fs = sim.add_flows(t)
    assert sim._flows_core().counts()["total"] == len(fs) == len(t)
    sim.run_flows(until="200us")
    c = sim._flows_core().counts()
    assert 0 < c["finished"] < c["started"] <= c["total"]


def test_a_paused_priority_does_not_hold_up_another_on_the_same_nic() -> None:
    from rdmasim import fabric

    cfg = {"lossless": (3,), "threshold": "32KB", "dscp_map": {8: 1, 24: 3}}
    sim = topology.star(4, rate="100Gbps", delay="1us", mtu=1024, switch_config=cfg).sim
    for h in sim.hosts.values():
        fabric.host_dscp_map(h, {8: 1, 24: 3})  # priority p is sent with DSCP 8p
    # h0 and h1 overload h3 on priority 3 (PFC pauses them); h0 also sends on priority 1 to h2
    n = 40
    fs = sim.add_flows({"src": [0] * n + [1] * n + [0], "dst": [3] * (2 * n) + [2],
                        "size": [256 << 10] * (2 * n) + [4 << 20], "priority": [3] * (2 * n) + [1]})
    sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all()
    assert sim.hosts["h0"].pause_stats()["paused_ps"][3] > 0
    # h0's priority-1 flow went on while priority 3 was paused: it finished before h0's priority-3
    # flows, well inside the time h0's uplink needed for everything
    assert r["finish_ps"][-1] < r["finish_ps"][:n].max()
    assert r["fct_ps"][-1] < 3 * (4 << 20) * 8 * 10**12 // 100_000_000_000
