"""Traffic generators: pure numpy, each returning a :class:`FlowTable` for the C engine to run.

A :class:`FlowTable` is one structured array of flows (:data:`FLOW_DTYPE`: ``src``, ``dst``, ``size``,
``start_ps``, ``verb``, ``priority``, ``group``) with CSR dependencies: flow ``i`` starts at
``max(start_ps, finish of each dependency)``. ``src``/``dst`` are host indices; data always moves
``src -> dst`` whatever the verb.

Patterns (``hosts`` is an int ``n`` for hosts ``0..n-1``, or the host indices to use)::

    from rdmasim.workload import traffic as tr
    t = tr.FlowTable.concat(
        tr.poisson(16, load=0.4, link_rate_bps="100Gbps", duration_ps="1ms", size_cdf=tr.WEB_SEARCH, seed=1),
        tr.incast(range(1, 9), 0, "64KiB", start="100us"),
        tr.ring_allreduce(8, "8MiB", start="200us"),
    )
    t.validate(n_hosts=16)

- :func:`incast`, :func:`permutation`, :func:`all_to_all`, :func:`poisson` (generators)
- :func:`ring_allreduce`, :func:`halving_doubling_allreduce`, :func:`moe_all_to_all` (collectives, with
  dependencies), :func:`ideal_ring_allreduce_ps` (analytical bound for validation)
- :func:`collective` (any collective and algorithm by name: ring / double binary tree / halving-doubling /
  recursive-doubling all-reduce, ring all-gather and reduce-scatter, chain broadcast and reduce, direct and
  pairwise all-to-all, chunked and over channels), :func:`in_network_allreduce` (SHARP-style),
  :func:`bus_factor` / :func:`collective_result` (algbw, busbw) and :class:`AlphaBeta` (cost models)
- :func:`halo_exchange` (2-D / 3-D nearest-neighbour halo with barriers and compute phases,
  :class:`Compute` distributions, :func:`halo_model_ps`), :func:`hierarchical_allreduce` (intra-node
  stages as LOCAL flows, inter-node ring)
- :func:`analyze` (completion time, each rank's wait, the critical path), :func:`with_straggler` and
  :func:`with_compute` (ranks that compute before they take part)
- :class:`SizeCDF` with :data:`WEB_SEARCH` (DCTCP) and :data:`DATA_MINING` (VL2) flow-size distributions
"""

from rdmasim.workload.traffic.cdfs import DATA_MINING, MAX_CDF_FILE_BYTES, WEB_SEARCH, SizeCDF
from rdmasim.workload.traffic.collectives import (
    ALGORITHMS,
    AlphaBeta,
    alltoall,
    broadcast,
    bus_factor,
    chunked_ring_allreduce,
    collective,
    collective_result,
    halving_doubling_allreduce,
    hierarchical_allreduce,
    hierarchical_allreduce_ps,
    ideal_ring_allreduce_ps,
    in_network_allreduce,
    moe_all_to_all,
    recursive_doubling_allreduce,
    reduce,
    ring_allgather,
    ring_allreduce,
    ring_reduce_scatter,
    tree_allreduce,
)
from rdmasim.workload.traffic.critical_path import CollectiveAnalysis, analyze, with_compute, with_straggler
from rdmasim.workload.traffic.generators import (
    POISSON_MAX_FLOWS,
    all_to_all,
    incast,
    permutation,
    poisson,
)
from rdmasim.workload.traffic.hpc import Compute, halo_exchange, halo_model_ps
from rdmasim.workload.traffic.table import (
    DEP_RECEIVED,
    FLOW_DTYPE,
    MAX_FLOW_SIZE,
    VERB_CODES,
    FlowTable,
    verb_code,
)

__all__ = [
    "ALGORITHMS", "AlphaBeta", "alltoall", "broadcast", "bus_factor", "chunked_ring_allreduce", "collective",
    "collective_result", "in_network_allreduce", "recursive_doubling_allreduce", "reduce", "ring_allgather",
    "ring_reduce_scatter", "tree_allreduce",
    "DATA_MINING", "DEP_RECEIVED", "FLOW_DTYPE", "MAX_CDF_FILE_BYTES", "MAX_FLOW_SIZE", "POISSON_MAX_FLOWS",
    "VERB_CODES", "WEB_SEARCH", "FlowTable", "SizeCDF",
    "all_to_all", "halving_doubling_allreduce", "ideal_ring_allreduce_ps", "incast", "moe_all_to_all",
    "permutation", "poisson", "ring_allreduce", "verb_code",
    "hierarchical_allreduce", "hierarchical_allreduce_ps", "CollectiveAnalysis", "Compute", "analyze",
    "halo_exchange", "halo_model_ps", "with_compute", "with_straggler",
]
