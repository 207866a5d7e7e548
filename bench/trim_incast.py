"""Packet trimming in a 4:1 incast through one switch (docs/multipath.md, "Packet trimming").

    python bench/trim_incast.py [--size 256KiB] [--threshold 16KiB] [--lossy]

RoCE flows whose frames the link test hook marks trim_ok (rdmasim.fabric.mark_trim_ok), and Ultra
Ethernet flows with ``uet={"trim": True}``; prints, with and without trimming, the packets
trimmed, switch drops, the deepest data queue at the port to the receiver, the packets resent and
the last flow's completion time. ``--lossy``: no PFC, lossy queues capped at 32 KiB.
"""
from __future__ import annotations

import argparse
from typing import Any

import rdmasim
from rdmasim.fabric import mark_trim_ok
from rdmasim.units import parse_size


def run(size: int, threshold: int, trimming: bool, transport: str, lossy: bool = False,
        senders: int = 4) -> dict[str, Any]:
    """One incast; its counters."""
    swc: dict[str, Any] = {"trimming": trimming, "trim_threshold": threshold}
    if lossy:
        swc.update(lossless=(), lossy_limit="32KiB")
    topo = rdmasim.topology.incast(senders, mtu=4096, seed=2, switch_config=swc)
    table = {"src": list(range(senders)), "dst": [senders] * senders, "size": [size] * senders}
    if transport == "uet":
        flows = topo.sim.add_flows(table, transport="uet", uet={"trim": True})
    else:
        for link in topo.links[:senders]:
            mark_trim_ok(link.ab)
        flows = topo.sim.add_flows(table)
    topo.sim.run_flows()
    res = flows.results()
    port = topo.switch.port_stats(senders)
    return {"trims": port["trims"], "drops": topo.switch.totals()["drops"],
            "data_queue_peak_bytes": port["egress_peak_bytes"][3],
            "retx_pkts": int(res["retx_pkts"].sum()), "last_fct_us": res["fct_ps"].max() / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="256KiB")
    ap.add_argument("--threshold", default="16KiB")
    ap.add_argument("--lossy", action="store_true")
    a = ap.parse_args()
    for transport in ("roce", "uet"):
        for trimming in (False, True):
            r = run(parse_size(a.size), parse_size(a.threshold), trimming, transport, a.lossy)
            print(f"{transport} trimming {'on ' if trimming else 'off'}: "
                  + ", ".join(f"{k} {v:,.0f}" for k, v in r.items()))


if __name__ == "__main__":
    main()
