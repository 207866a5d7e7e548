"""Collectives over the Ultra Ethernet transport: the same alpha-beta models as on RoCE
(tests/traffic/test_collective_cost_models.py, the same tolerances), alpha and beta measured with UET
flows on the same idle star; a collective whose connections chain many flows, and the in-network and
hierarchical all-reduce, run to the end on UET."""

from __future__ import annotations

import pytest
from collective_util import CASES, CHUNK, INFLIGHT, MTU, Case, measure_alpha_beta, run_table

from rdmasim import traffic as tr
from rdmasim.topology import star_with_aggregator
from rdmasim.traffic.collectives import AlphaBeta, in_network_allreduce

ONE_FLOW_TOL = 0.01
PIPE_LOW, PIPE_HIGH = 0.01, 0.03
UET = {"lb": "reps"}

_AB: list[AlphaBeta] = []


def _ab() -> AlphaBeta:
    if not _AB:
        _AB.append(measure_alpha_beta(transport="uet", uet=UET))
    return _AB[0]


#: one flow per step and rank, and the chunked ring (connections chaining tens of flows)
UET_CASES = [c for c in CASES if c.name in ("allreduce ring", "allreduce ring, chunked", "allgather ring",
                                            "reduce-scatter ring", "allreduce halving-doubling",
                                            "alltoall direct", "alltoall pairwise")]


@pytest.mark.parametrize("p", [4, 8])
@pytest.mark.parametrize("n", [256 << 10, 2 << 20])
@pytest.mark.parametrize("case", UET_CASES, ids=[c.name for c in UET_CASES])
def test_uet_collective_completion_time_matches_the_model(case: Case, p: int, n: int) -> None:
    ab = _ab()
    t = run_table(p, case.build(p, n), transport="uet", uet=UET)
    lo = case.model(ab, p, n)
    if case.upper is None:
        assert abs(t / lo - 1) <= ONE_FLOW_TOL, f"{case.name}, p={p}, n={n}: {t} ps vs model {lo:.0f} ps"
    else:
        hi = case.upper(ab, p, n)
        assert lo * (1 - PIPE_LOW) <= t <= hi * (1 + PIPE_HIGH), (
            f"{case.name}, p={p}, n={n}: {t} ps outside the model's [{lo:.0f}, {hi:.0f}] ps")


def test_uet_headers_make_beta_larger_than_roce() -> None:
    # a UET data packet carries 98 bytes of headers and FCS (Ethernet, IPv4, UDP, PDS, SES standard)
    # where a RoCE one carries 62 (Ethernet, IPv4, UDP, BTH, ICRC, FCS): each model uses its own beta
    roce, uet = measure_alpha_beta(), _ab()
    assert uet.beta_ps_per_byte > roce.beta_ps_per_byte


def test_uet_in_network_allreduce_runs_to_the_end() -> None:
    # the aggregation nodes are hosts (no switch feature): over UET as over RoCE
    p, n = 4, 512 << 10
    st, agg = star_with_aggregator(p, rate="100Gbps", delay="1us", mtu=MTU)
    table = in_network_allreduce(p, n, agg, chunk_size=CHUNK, inflight=INFLIGHT)
    fs = st.sim.add_flows(table, mtu=MTU, transport="uet", uet=UET)
    st.sim.run_flows(until="10ms")
    r = fs.results()
    assert (r["status"] == 0).all() and (r["bytes_delivered"] == r["size_bytes"]).all()


def test_uet_hierarchical_allreduce_matches_its_model() -> None:
    # the intra-node stages are LOCAL flows (no packets, no transport); the ring across the nodes runs
    # on UET: the model with UET's alpha and beta, within 1% as on RoCE (tests/traffic/test_hierarchical.py)
    nodes, gpus, size = 4, 2, 512 << 10
    t = run_table(nodes, tr.hierarchical_allreduce(nodes, size, gpus_per_node=gpus, intra_rate="2400Gbps",
                                                   intra_latency="2us"), transport="uet", uet=UET)
    model = tr.hierarchical_allreduce_ps(_ab(), nodes, size, gpus_per_node=gpus, intra_rate="2400Gbps",
                                         intra_latency="2us")
    assert abs(t / model - 1) <= ONE_FLOW_TOL, f"{t} ps vs model {model:.0f} ps"
