"""The setups of the UEC reference simulator's own NSCC and load-balancing experiments (htsim,
github.com/ultraethernet/uet-htsim, ``htsim/sim/datacenter``), shared by ``bench/uet_failure.py
--paper`` and ``bench/smartt_vs_dcqcn.py --paper`` (docs/uet.md, "The papers' setups").

What ``main_uec.cpp`` and ``fat_tree_topology.cpp`` set when an experiment plan gives no option:

* topology: a three-tier fat tree of ``k``-port switches (``k``^3 / 4 hosts: 16 hosts at k = 4,
  1024 at k = 16), every link 100 Gb/s (``HOST_NIC``) with 1 us of latency per hop, no switch
  latency;
* MTU: 4150-byte packets (4,096 bytes of payload here);
* queues: one bandwidth-delay product of the fabric's longest unloaded round trip per queue when
  switches trim (``DEFAULT_TRIMMING_QUEUESIZE_FACTOR`` 1; 5 without trimming), ECN marking from
  0.2 to 0.8 of that product;
* ``-failed N``: N links from the core switches down to pod 0's first aggregation switch run at
  a quarter of their rate (``_failed_link_ratio`` 0.25; the load-balancing plan's description says
  10 %), the other direction at full rate;
* NSCC (``-sender_cc_only``) on every experiment of the sender validation plans.
"""
from __future__ import annotations

from typing import Any

import rdmasim
from rdmasim.transport.uet import UET_ACK_WIRE, UET_DATA_OVERHEAD

LINE_BPS = 100e9
MTU = 4096
HOP_PS = 1_000_000
#: htsim's ``_failed_link_ratio``
FAILED_RATIO = 0.25

#: the reference results: uet-htsim ``validate_outputs/*.out`` (its NSCC; tail FCT and the first
#: flow's FCT in us, retransmitted packets), by experiment
REFERENCE = {
    "perm16": {"what": "16-node permutation, 2 MB flows", "first": 187.97, "tail": 194.022, "rtx": 0},
    "perm16_failed1": {"what": "the same, one core link at 25 %", "first": 188.394, "tail": 238.218,
                       "rtx": 99},
    "incast16": {"what": "15:1 incast, 2 MB each, 16 nodes", "first": 1273.56, "tail": 2478.53, "rtx": 811},
    "perm1024": {"what": "1024-node permutation, 2 MB flows", "first": 167.619, "tail": 200.507, "rtx": 0},
    "perm1024_failed8_oblivious": {"what": "8 core links slow, oblivious spraying", "first": 167.583,
                                   "tail": 280.775, "rtx": 2958},
    "perm1024_failed8_reps_ack1": {"what": "8 core links slow, REPS, an ACK per packet", "first": 169.216,
                                   "tail": 206.684, "rtx": 298},
    "perm1024_failed8_reps_ack4": {"what": "8 core links slow, REPS, an ACK per 4 packets", "first": 167.708,
                                   "tail": 245.821, "rtx": 1696},
}
FLOW_BYTES = 2_000_000


def base_rtt_ps() -> int:
    """The fat tree's longest unloaded round trip: six hops each way, a data packet's
    serialisation at each hop out and an ACK's at each hop back."""
    data = (MTU + UET_DATA_OVERHEAD) * 8 / LINE_BPS * 1e12
    ack = UET_ACK_WIRE * 8 / LINE_BPS * 1e12
    return int(12 * HOP_PS + 6 * data + 6 * ack)


def bdp_bytes() -> int:
    """Bytes the line carries in one :func:`base_rtt_ps`."""
    return int(LINE_BPS * base_rtt_ps() / 8e12)


def switch_config(path_select: str = "ecmp", *, trimming: bool = True, **more: Any) -> dict[str, Any]:
    """Switches as htsim's defaults: best effort (no PFC), trimming at one BDP, ECN from 0.2 to
    0.8 BDP (probability 1 at the top)."""
    bdp = bdp_bytes()
    cfg: dict[str, Any] = {"path_select": path_select, "lossless": (),
                           "ecn": {"kmin": round(0.2 * bdp), "kmax": round(0.8 * bdp), "pmax": 1.0}}
    if trimming:
        cfg.update(trimming=True, trim_threshold=bdp)
    return {**cfg, **more}


def fat_tree(k: int, swc: dict[str, Any], seed: int = 1) -> Any:
    """rdmasim's k-ary fat tree at htsim's link rate and hop latency."""
    return rdmasim.fat_tree(k, rate="100Gbps", delay=f"{HOP_PS // 1_000_000}us", mtu=MTU, seed=seed,
                            switch_config=swc)


def slow_core_links(topo: Any, n: int, ratio: float = FAILED_RATIO) -> list[Any]:
    """htsim's ``-failed n``: the first ``n`` links from the cores to pod 0's first aggregation
    switch run at ``ratio`` of the line rate, core to aggregation only.  Returns those link
    directions."""
    agg = topo.aggs[0]
    half = len(agg.ports) // 2
    if not 0 <= n <= half:
        raise ValueError(f"failed links = {n}: allowed 0..{half} (the core links of one aggregation switch)")
    out = []
    for link in agg.ports[half:half + n]:
        d = link.ba if link.a is agg else link.ab  # core -> aggregation
        d.set_rate(int(LINE_BPS * ratio))
        out.append(d)
    return out
