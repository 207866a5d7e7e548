"""UET delivery sublayer figures of docs/uet.md: ROD against RUD under spraying, and the fixed against
the RTT-estimated retransmit timeout in a fixed-window incast.

    python bench/uet_pds.py [--case rod|rto|all]

rod: a 4 x 4 x 4 leaf-spine (100 Gb/s, 1 us links, MTU 4096, lossless), a shifted permutation of
1 MiB UET flows (every leaf's hosts send to the next leaf's) with oblivious spraying, in mode "rud"
and "rod": resends, NACKs and FCTs.
rto: an 8-to-1 incast of 2 MiB UET flows (100 Gb/s, 1 us links, PFC), fixed window (no CC), with
the fixed 100 us timeout and with ``rto_estimate``: resends, the last flow's FCT, PFC pause.
"""

from __future__ import annotations

import argparse

import numpy as np

import rdmasim
from rdmasim import topology


def rod_vs_rud() -> None:
    for mode in ("rud", "rod"):
        ls = rdmasim.leaf_spine(4, 4, 4, seed=1, switch_config={"path_select": "ecmp", "ecmp_seed": 1})
        src = [h.name for row in ls.hosts_by_leaf for h in row]
        dst = [h.name for row in ls.hosts_by_leaf[1:] + ls.hosts_by_leaf[:1] for h in row]
        fs = ls.sim.add_flows({"src": src, "dst": dst, "size": [1 << 20] * len(src)}, transport="uet",
                              uet={"mode": mode})
        ls.sim.run_flows()
        r = fs.results()
        print(f"{mode}: resent {int(r['retx_pkts'].sum()):,} packets, NACKs {int(r['nack_pkts'].sum()):,}, "
              f"FCT mean {r['fct_ps'].mean() / 1e6:,.0f} us, max {int(r['fct_ps'].max()) / 1e6:,.0f} us")


def rto_incast() -> None:
    for label, opts in (("fixed 100 us", {}), ("rto_estimate", {"rto_estimate": True})):
        inc = topology.incast(8, rate="100Gbps", delay="1us", mtu=4096)
        fs = inc.sim.add_flows({"src": np.arange(8), "dst": np.full(8, 8), "size": np.full(8, 2 << 20)},
                               transport="uet", uet=opts)
        inc.sim.run_flows()
        r = fs.results()
        last_us, pause_us = int(r["fct_ps"].max()) / 1e6, int(r["pause_ps"].sum()) / 1e6
        print(f"{label}: resent {int(r['retx_pkts'].sum()):,} packets, last flow {last_us:,.0f} us, "
              f"PFC pause {pause_us:,.0f} us")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=("rod", "rto", "all"), default="all")
    a = ap.parse_args()
    if a.case in ("rod", "all"):
        rod_vs_rud()
    if a.case in ("rto", "all"):
        rto_incast()


if __name__ == "__main__":
    main()
