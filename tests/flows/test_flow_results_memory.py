"""FlowSet.results() builds its table without a second full-size copy of the C results.

The C table's rows (rs_flow_result) are read and converted a bounded chunk at a time, so the
memory results() allocates beyond the table it returns is a chunk's worth, not a row of raw
counters plus temporaries for every flow (at 1.1 M flows that was about 110 MiB of the peak).
numpy reports its buffers to tracemalloc, which measures this exactly.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

from rdmasim import topology
from rdmasim.workload import flows as flows_mod


def test_results_extra_memory_is_one_chunk(monkeypatch) -> None:
    chunk = 4096
    monkeypatch.setattr(flows_mod, "RESULTS_CHUNK", chunk, raising=False)
    sim = topology.leaf_spine(2, 2, 4, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us").sim
    n = 60_000
    rng = np.random.default_rng(1)
    src = rng.integers(0, 8, n)
    dst = (src + 1 + rng.integers(0, 7, n)) % 8
    fs = sim.add_flows({"src": src, "dst": dst, "size": np.full(n, 1000),
                        "start_ps": np.arange(n, dtype=np.int64) * 1_000_000})
    sim.run_flows(until="2500ns")  # a few flows started or finished, the rest waiting
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        res = fs.results()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert len(res) == n
    # the table itself, plus at most 256 bytes of temporaries per row of one chunk
    assert peak <= res.nbytes + 256 * chunk, (peak, res.nbytes)


def test_results_chunked_match_one_pass(monkeypatch) -> None:
    sim = topology.leaf_spine(2, 2, 4, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us").sim
    n = 50
    fs = sim.add_flows({"src": np.arange(n) % 8, "dst": (np.arange(n) + 3) % 8, "size": np.full(n, 5000),
                        "start_ps": np.arange(n, dtype=np.int64) * 200_000})
    sim.run_flows(until="5us")
    whole = fs.results()
    monkeypatch.setattr(flows_mod, "RESULTS_CHUNK", 7, raising=False)
    chunked = fs.results()
    assert (whole["finish_ps"] >= 0).any() and (whole["finish_ps"] < 0).any()
    assert np.array_equal(whole, chunked)
    assert np.array_equal(whole["flow_id"], np.arange(fs.first, fs.first + n))
    done = whole["finish_ps"] >= 0
    assert np.array_equal(whole["fct_ps"][done], whole["finish_ps"][done] - whole["started_ps"][done])
    assert (whole["fct_ps"][~done] == -1).all()


def test_c_bytes_per_flow_has_no_padding() -> None:
    """The C flow table's bytes per added flow: the rs_flow row (248 bytes of fields, laid out
    without holes) and its four start-queue slots (4 x 8 bytes)."""
    sim = topology.leaf_spine(2, 2, 4, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us").sim
    assert sim._flows_core().bytes_per_flow() == 248 + 4 * 8
