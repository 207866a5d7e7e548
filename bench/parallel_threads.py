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

Wall time on a shared machine depends on what else runs; beside it the bench prints what does not
(``rdmasim.partition.parallel_stats``): the jobs (steps between two barriers), windows and events
per job, each partition's events, and the *speed-up bound*: total events over the critical path
(per job the events of the busiest thread, summed; global events count whole), the speed-up the
split allows with free barriers and equal events.  The same in CPU time (each thread's own clock,
which stops while the machine runs someone else) is the *CPU bound* of the threaded runs.  With
``--pairs`` only the one-thread and the threaded configurations run, alternating (1T, 2T, 1T, 2T,
...), each wall ratio taken against the one-thread run just before it, with the load average then.

    python bench/parallel_threads.py --k 16 --size 256KiB --partitions 2 --threads 2 --pairs --repeat 5
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
    load = os.getloadavg()[0]
    from rdmasim.partition import parallel_stats

    st = parallel_stats(sim)
    digest = hashlib.sha256()
    digest.update(fs.results().tobytes())
    digest.update(repr((sim.now, sim.events)).encode())
    for link in sim.links:
        for end in (link.a, link.b):
            digest.update(repr(sorted(link.direction(end).stats().items())).encode())
    row: dict[str, Any] = {"partitions": partitions, "threads": threads, "hosts": len(topo.hosts),
                           "events": sim.events, "now_ps": sim.now, "cpu_s": cpu, "wall_s": wall,
                           "load": load, "digest": digest.hexdigest()}
    if st is not None:
        row["stats"] = {"jobs": st.jobs, "barriers": st.barriers, "windows": st.windows,
                        "global_events": st.global_events, "events_per_job": st.events_per_job,
                        "part_events": list(st.part_events), "balance": st.balance,
                        "speedup_bound": st.speedup_bound,
                        "speedup_bound_partitions": st.speedup_bound_partitions,
                        "cpu_speedup_bound": st.cpu_speedup_bound, "cpu_serial_s": st.cpu_serial_ns / 1e9,
                        "cpu_jobs_s": st.cpu_jobs_ns / 1e9,
                        "cpu_critical_path_s": st.cpu_critical_path_ns / 1e9}
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=16, help="fat tree arity (k^3/4 hosts; default 16: 1,024 hosts)")
    ap.add_argument("--size", default="64KiB", help="bytes per flow (default 64KiB)")
    ap.add_argument("--partitions", type=int, default=2, help="partitions of the split run (default 2)")
    ap.add_argument("--repeat", type=int, default=1, help="alternating runs of each configuration")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--threads", type=int, default=1,
                    help="also run the partitions on this many threads (2..partitions; default 1: not)")
    ap.add_argument("--pairs", action="store_true",
                    help="only the partitions on one thread and on --threads, alternating")
    a = ap.parse_args(argv)
    size = _size(a.size)
    if not 1 <= a.threads <= a.partitions:
        ap.error(f"--threads {a.threads}: allowed 1..{a.partitions} (--partitions)")
    if a.pairs and a.threads < 2:
        ap.error("--pairs: needs --threads 2 or more")
    configs: list[tuple[int | None, int]] = [(None, 1), (1, 1), (a.partitions, 1)]
    if a.pairs:
        configs = [(a.partitions, 1)]
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
    out: dict[str, Any] = {"k": a.k, "hosts": rows[0]["hosts"], "size": size, "events": rows[0]["events"],
                           "identical": identical, "load_average": load, "runs": rows}
    if not a.pairs:
        out["cpu_ratio_split_over_one"] = min(r["cpu_s"] for r in split) / min(r["cpu_s"] for r in base)
        out["cpu_ratio_one_over_default"] = min(r["cpu_s"] for r in base) / min(r["cpu_s"] for r in default)
        out["wall_ratio_split_over_one"] = min(r["wall_s"] for r in split) / min(r["wall_s"] for r in base)
    if split and "stats" in split[0]:
        out["stats_one_thread"] = split[0]["stats"]
    if threaded:
        out["cpu_ratio_threads_over_one_thread"] = (min(r["cpu_s"] for r in threaded)
                                                   / min(r["cpu_s"] for r in split))
        out["wall_ratio_threads_over_one_thread"] = (min(r["wall_s"] for r in threaded)
                                                    / min(r["wall_s"] for r in split))
        # each threaded run against the one-thread run just before it, with the load then
        pairs = [(rows[i - 1], rows[i]) for i in range(1, len(rows))
                 if rows[i]["threads"] > 1 and rows[i - 1]["threads"] == 1
                 and rows[i - 1]["partitions"] == a.partitions]
        out["pairs"] = [{"wall_ratio": t["wall_s"] / o["wall_s"], "speedup": o["wall_s"] / t["wall_s"],
                         "load": (o["load"], t["load"])} for o, t in pairs]
        out["stats_threads"] = threaded[0]["stats"]
        out["cpu_speedup_bound"] = [r["stats"]["cpu_speedup_bound"] for r in threaded]
    if a.json:
        print(json.dumps(out, indent=1))
        return 0 if identical else 1
    for r in rows:
        print(f"partitions {r['partitions']}, threads {r['threads']}: {r['events']:,} events, "
              f"loop {r['cpu_s']:.2f} s CPU, {r['wall_s']:.2f} s wall (load average {r['load']:.2f})")
    print(f"{out['hosts']} hosts, {size} B per flow: results identical: {identical}; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if not a.pairs:
        print(f"{a.partitions} partitions / one queue: CPU {out['cpu_ratio_split_over_one']:.3f}x, "
              f"wall {out['wall_ratio_split_over_one']:.3f}x")
    st = out.get("stats_one_thread")
    if st:
        print(f"{a.partitions} partitions: {st['jobs']} jobs, {st['windows']} windows, {st['global_events']} "
              f"global events, {st['events_per_job']:,.0f} events per job; events by partition "
              f"{st['part_events']} (busiest / mean {st['balance']:.4f}); speed-up bound "
              f"{st['speedup_bound_partitions']:.3f}x (one thread per partition, free barriers)")
    if threaded:
        ts = out["stats_threads"]
        bounds = ", ".join(f"{b:.3f}" for b in out["cpu_speedup_bound"])
        print(f"{a.partitions} partitions on {a.threads} threads: {ts['barriers']} barriers; speed-up bound "
              f"{ts['speedup_bound']:.3f}x in events, {bounds}x in CPU (each run)")
        print(f"{a.partitions} partitions on {a.threads} threads / on one thread: "
              f"CPU {out['cpu_ratio_threads_over_one_thread']:.3f}x, "
              f"wall {out['wall_ratio_threads_over_one_thread']:.3f}x (best of each)")
        for pr in out["pairs"]:
            print(f"  pair: speed-up {pr['speedup']:.3f}x (wall ratio {pr['wall_ratio']:.3f}), "
                  f"load average {pr['load'][0]:.2f} / {pr['load'][1]:.2f}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
