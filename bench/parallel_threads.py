"""One run split into partitions against the same run on one queue: CPU and wall time of the event
loop, and whether the results are identical (the flow table, every link direction's counters, the
clock and the event count).

Three configurations: the default run (``partitions=None``: one queue, the default tie-break of
simultaneous events), ``partitions=1`` (one queue with the tie-break that does not depend on the
split) and ``partitions=P``; the last two must give identical results.

The model is ``bench/scaling_models.py``'s ``hosts`` kind: a k-ary fat tree (k^3/4 hosts; k = 16:
1,024 hosts), 100 Gb/s, 1 us links, MTU 1024, PFC, DCQCN with RED ECN, a random permutation of
``--size`` bytes of RDMA WRITE per host.  Each configuration is built and run in this process one
after the other, alternating ``--repeat`` times; the loop's time is that of ``run_flows`` (routes
included, topology and flow setup not).  The machine's load average is printed with the figures:
on a shared machine wall time says little, CPU time more.

    python bench/parallel_threads.py --k 16 --size 64KiB --partitions 2 --repeat 2

``--partitions P`` runs the partitioned loop on the calling thread (``Simulator(partitions=P)``):
its figure is the cost of the split (windows, one queue per partition, a global queue).  With
``--threads T`` (2..P) a fourth configuration runs the same P partitions on T threads
(``Simulator(partitions=P, threads=T)``); its CPU time is that of every thread of the process, and
its results must equal the others'.

    python bench/parallel_threads.py --k 16 --size 256KiB --partitions 2 --threads 2
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import resource
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}


def _size(text: str) -> int:
    m = re.fullmatch(r"(\d+)\s*(KiB|MiB|B)?", text.strip())
    if not m:
        raise ValueError(f"--size {text!r}: allowed a byte count such as 65536, 64KiB or 1MiB")
    return int(m.group(1)) * {"KiB": 1024, "MiB": 1024 * 1024, None: 1, "B": 1}[m.group(2)]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def one_run(k: int, size: int, partitions: int | None, threads: int = 1) -> dict[str, Any]:
    """Build the model, run its flows; the loop's CPU and wall seconds and a digest of the results."""
    import rdmasim
    from rdmasim import topology, traffic
    from rdmasim.cc import DcqcnParams

    sim = rdmasim.Simulator(seed=1, partitions=partitions, threads=threads)
    topo = topology.fat_tree(k, rate="100Gbps", delay="1us", mtu=1024, sim=sim, switch_config={"ecn": ECN})
    for h in sim.hosts.values():
        h.set_congestion_control("dcqcn", DcqcnParams.paper())
    fs = sim.add_flows(traffic.permutation(len(topo.hosts), size, seed=1))
    c0, w0 = _cpu(), time.perf_counter()
    sim.run_flows()
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    digest = hashlib.sha256()
    digest.update(fs.results().tobytes())
    digest.update(repr((sim.now, sim.events)).encode())
    for link in sim.links:
        for end in (link.a, link.b):
            digest.update(repr(sorted(link.direction(end).stats().items())).encode())
    return {"partitions": partitions, "threads": threads, "hosts": len(topo.hosts), "events": sim.events,
            "now_ps": sim.now, "cpu_s": cpu, "wall_s": wall, "digest": digest.hexdigest()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=16, help="fat tree arity (k^3/4 hosts; default 16: 1,024 hosts)")
    ap.add_argument("--size", default="64KiB", help="bytes per flow (default 64KiB)")
    ap.add_argument("--partitions", type=int, default=2, help="partitions of the split run (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="alternating runs of each configuration")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--threads", type=int, default=1,
                    help="also run the partitions on this many threads (2..partitions; default 1: not)")
    a = ap.parse_args(argv)
    size = _size(a.size)
    if not 1 <= a.threads <= a.partitions:
        ap.error(f"--threads {a.threads}: allowed 1..{a.partitions} (--partitions)")
    configs: list[tuple[int | None, int]] = [(None, 1), (1, 1), (a.partitions, 1)]
    if a.threads > 1:
        configs.append((a.partitions, a.threads))
    rows: list[dict[str, Any]] = []
    for _ in range(a.repeat):
        for parts, threads in configs:
            rows.append(one_run(a.k, size, parts, threads))
    load = os.getloadavg()
    base = [r for r in rows if r["partitions"] == 1]
    split = [r for r in rows if r["partitions"] == a.partitions and r["threads"] == 1]
    threaded = [r for r in rows if r["threads"] > 1]
    identical = len({r["digest"] for r in base + split + threaded}) == 1
    default = [r for r in rows if r["partitions"] is None]
    cpu_ratio = min(r["cpu_s"] for r in split) / min(r["cpu_s"] for r in base)
    wall_ratio = min(r["wall_s"] for r in split) / min(r["wall_s"] for r in base)
    out = {"k": a.k, "hosts": rows[0]["hosts"], "size": size, "events": rows[0]["events"],
           "identical": identical, "cpu_ratio_split_over_one": cpu_ratio,
           "cpu_ratio_one_over_default": min(r["cpu_s"] for r in base) / min(r["cpu_s"] for r in default),
           "wall_ratio_split_over_one": wall_ratio,
           "load_average": load, "runs": rows}
    if threaded:
        out["cpu_ratio_threads_over_one_thread"] = (min(r["cpu_s"] for r in threaded)
                                                   / min(r["cpu_s"] for r in split))
        out["wall_ratio_threads_over_one_thread"] = (min(r["wall_s"] for r in threaded)
                                                    / min(r["wall_s"] for r in split))
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        for r in rows:
            print(f"partitions {r['partitions']}, threads {r['threads']}: {r['events']:,} events, "
                  f"loop {r['cpu_s']:.2f} s CPU, {r['wall_s']:.2f} s wall")
        print(f"{out['hosts']} hosts, {size} B per flow: results identical: {identical}; "
              f"{a.partitions} partitions / one queue: CPU {cpu_ratio:.3f}x, wall {wall_ratio:.3f}x; "
              f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        if threaded:
            print(f"{a.partitions} partitions on {a.threads} threads / on one thread: "
                  f"CPU {out['cpu_ratio_threads_over_one_thread']:.3f}x, "
                  f"wall {out['wall_ratio_threads_over_one_thread']:.3f}x")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
