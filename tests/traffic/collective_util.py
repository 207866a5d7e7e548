"""The collective cost-model experiment shared by tests/traffic/test_collective_cost_models.py and
docs/gen_collectives.py: run a collective alone on an idle lossless star and compare its completion time
with its alpha-beta model, alpha and beta measured on the same fabric."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rdmasim import topology
from rdmasim import traffic as tr
from rdmasim.topology import star_with_aggregator
from rdmasim.traffic.collectives import AlphaBeta, in_network_allreduce

RATE, DELAY, MTU = "100Gbps", "1us", 4096


def run_table(p: int, table: tr.FlowTable, star: Any = None, rate: str = RATE, delay: str = DELAY,
              mtu: int = MTU, transport: str = "roce", uet: dict[str, Any] | None = None) -> int:
    """Completion time (ps) of ``table`` on an idle ``p``-host star: first start to last finish
    (``transport`` and ``uet`` as :meth:`Simulator.add_flows` takes them)."""
    st = star or topology.star(p, rate=rate, delay=delay, mtu=mtu)
    kw: dict[str, Any] = {"transport": "uet", "uet": uet} if transport == "uet" else {}
    fs = st.sim.add_flows(table, mtu=mtu, **kw)
    st.sim.run_flows()
    r = fs.results()
    assert (r["status"] == 0).all() and int(r["retx_pkts"].sum()) == 0, "not an idle lossless run"
    return int(r["finish_ps"].max() - r["start_ps"].min())


def measure_alpha_beta(rate: str = RATE, delay: str = DELAY, mtu: int = MTU, transport: str = "roce",
                       uet: dict[str, Any] | None = None) -> AlphaBeta:
    """beta: the slope of one flow's completion time between 1 and 4 MiB (wire time per payload byte,
    headers included); alpha: a one-MTU flow's time less its bytes at beta (propagation both ways, the
    switch's store-and-forward of one packet, the ACK). On ``transport``, as every flow it models."""
    def one(size: int) -> int:
        return run_table(2, tr.FlowTable.from_columns([0], [1], [size]), rate=rate, delay=delay, mtu=mtu,
                         transport=transport, uet=uet)
    beta = (one(4 << 20) - one(1 << 20)) / (3 << 20)
    return AlphaBeta(one(mtu) - mtu * beta, beta)


@dataclass(frozen=True)
class Case:
    """One algorithm: how to build it on p ranks of n bytes, and its model."""

    name: str
    build: Callable[[int, int], tr.FlowTable]
    model: Callable[[AlphaBeta, int, int], float]
    upper: Callable[[AlphaBeta, int, int], float] | None = None
    in_network: bool = False
    power_of_two: bool = False


CHUNK, INFLIGHT = 32 << 10, 4

CASES: tuple[Case, ...] = (
    Case("allreduce ring", lambda p, n: tr.ring_allreduce(p, n), lambda m, p, n: m.ring_allreduce(p, n)),
    Case("allreduce ring, chunked", lambda p, n: tr.collective("allreduce", p, n, chunk_size=CHUNK,
                                                               inflight=INFLIGHT),
         lambda m, p, n: m.ring_allreduce_pipelined(p, n, CHUNK, INFLIGHT),
         lambda m, p, n: m.ring_allreduce_pipelined(p, n, CHUNK, INFLIGHT, upper=True)),
    Case("allreduce tree", lambda p, n: tr.collective("allreduce", p, n, algorithm="tree", chunk_size=CHUNK,
                                                      inflight=INFLIGHT),
         lambda m, p, n: m.tree_allreduce(p, n, CHUNK, INFLIGHT),
         lambda m, p, n: m.tree_allreduce(p, n, CHUNK, INFLIGHT, upper=True)),
    Case("allreduce halving-doubling", lambda p, n: tr.halving_doubling_allreduce(p, n),
         lambda m, p, n: m.halving_doubling_allreduce(p, n), power_of_two=True),
    Case("allreduce recursive doubling", lambda p, n: tr.recursive_doubling_allreduce(p, n),
         lambda m, p, n: m.recursive_doubling_allreduce(p, n), power_of_two=True),
    Case("allgather ring", lambda p, n: tr.ring_allgather(p, n), lambda m, p, n: m.ring_allgather(p, n)),
    Case("reduce-scatter ring", lambda p, n: tr.ring_reduce_scatter(p, n),
         lambda m, p, n: m.ring_reduce_scatter(p, n)),
    Case("broadcast chain", lambda p, n: tr.broadcast(p, n, chunk_size=CHUNK, inflight=INFLIGHT),
         lambda m, p, n: m.chain(p, n, CHUNK, INFLIGHT),
         lambda m, p, n: m.chain(p, n, CHUNK, INFLIGHT, upper=True)),
    Case("reduce chain", lambda p, n: tr.reduce(p, n, chunk_size=CHUNK, inflight=INFLIGHT),
         lambda m, p, n: m.chain(p, n, CHUNK, INFLIGHT),
         lambda m, p, n: m.chain(p, n, CHUNK, INFLIGHT, upper=True)),
    Case("alltoall direct", lambda p, n: tr.alltoall(p, n), lambda m, p, n: m.alltoall_direct(p, n)),
    Case("alltoall pairwise", lambda p, n: tr.alltoall(p, n, algorithm="pairwise"),
         lambda m, p, n: m.alltoall_pairwise(p, n)),
    Case("allreduce in-network", lambda p, n: tr.FlowTable.empty(),
         lambda m, p, n: m.in_network_allreduce(p, n, CHUNK, INFLIGHT),
         lambda m, p, n: m.in_network_allreduce(p, n, CHUNK, INFLIGHT, upper=True), in_network=True),
)


def measure(case: Case, p: int, n: int) -> tuple[int, float, float]:
    """(measured ps, model ps, upper model ps) of ``case`` on ``p`` ranks and ``n`` bytes (the upper
    model is the model itself for the algorithms that move each step as one flow)."""
    ab = alpha_beta()
    if case.in_network:
        st, agg = star_with_aggregator(p, rate=RATE, delay=DELAY, mtu=MTU)
        t = run_table(p, in_network_allreduce(p, n, agg, chunk_size=CHUNK, inflight=INFLIGHT), star=st)
    else:
        t = run_table(p, case.build(p, n))
    if case.in_network:
        ab = alpha_beta_aggregator()
    lo = case.model(ab, p, n)
    return t, lo, case.upper(ab, p, n) if case.upper else lo


_AB: list[AlphaBeta] = []
_AB_AGG: list[AlphaBeta] = []


def alpha_beta_aggregator() -> AlphaBeta:
    """alpha of one hop from a rank to the aggregation host of :func:`star_with_aggregator` (its link is
    fast and has no delay), beta as :func:`alpha_beta`."""
    if not _AB_AGG:
        beta = alpha_beta().beta_ps_per_byte
        st, agg = star_with_aggregator(2, rate=RATE, delay=DELAY, mtu=MTU)
        t = run_table(2, tr.FlowTable.from_columns([0], [agg], [MTU]), star=st)
        _AB_AGG.append(AlphaBeta(t - MTU * beta, beta))
    return _AB_AGG[0]


def alpha_beta() -> AlphaBeta:
    """:func:`measure_alpha_beta` on the default fabric, measured once."""
    if not _AB:
        _AB.append(measure_alpha_beta())
    return _AB[0]


TREE_CHUNK = 16 << 10


def ring_and_tree(p: int, n: int) -> tuple[int, int]:
    """Measured ring (one flow per step) and double-binary-tree (16 KiB chunks) all-reduce times."""
    ring = run_table(p, tr.ring_allreduce(p, n))
    tree = run_table(p, tr.tree_allreduce(p, n, chunk_size=TREE_CHUNK, inflight=INFLIGHT))
    return ring, tree


def crossing(sizes: list[int], a: list[float], b: list[float]) -> float | None:
    """Where ``a - b`` changes sign from negative to positive, interpolated in log size (None: never)."""
    import math

    d = [x - y for x, y in zip(a, b, strict=True)]
    for i in range(len(d) - 1):
        if d[i] <= 0 < d[i + 1] or d[i] >= 0 > d[i + 1]:
            f = d[i] / (d[i] - d[i + 1])
            return math.exp(math.log(sizes[i]) + f * (math.log(sizes[i + 1]) - math.log(sizes[i])))
    return None


def model_crossover(p: int, upper: bool = False) -> float:
    """Buffer size where the ring and tree all-reduce models cross (bisection in log size)."""
    import math

    ab = alpha_beta()

    def diff(n: float) -> float:
        return ab.ring_allreduce(p, int(n)) - ab.tree_allreduce(p, int(n), TREE_CHUNK, INFLIGHT, upper=upper)

    lo, hi = 2.0 * TREE_CHUNK, float(2**31 - 1)
    if diff(lo) < 0 or diff(hi) > 0:
        raise ValueError(f"the models do not cross between {lo:.0f} and {hi:.0f} bytes on {p} ranks")
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if diff(mid) > 0 else (lo, mid)
    return lo
