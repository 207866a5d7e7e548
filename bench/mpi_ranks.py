"""One partitioned run on N MPI ranks (``mpirun -n N``, rdmasim.mpi) against the same partitions in
one process, ``--repeats`` times interleaved: wall time of ``run_flows`` on each and every rank's CPU
time, whether the results are identical (flow table, every link direction's and switch port's
counters, clock, events), what the ranks exchanged (agreements; bytes each rank sent) and where
each rank's wall time in agreements went: the MPI calls (the transfer and the wait for the slowest
rank), the Python glue of the exchange call, writing and reading the messages in C.

The model is tests/mpi/cases.py's: a k-ary fat tree (k^3/4 hosts), 100 Gb/s, 1 us links, MTU 1024,
PFC, DCQCN with RED ECN, a permutation of ``--size`` bytes per host.  The machine's load average is
printed with each repeat: on a shared machine the wall times are noisy, the CPU times less so.

    python bench/mpi_ranks.py --k 8 --size 1048576 --ranks 2 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CASE = os.path.join(HERE, "mpi_ranks_case.py")


def _run(cmd: list[str], env: dict[str, str]) -> dict:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--size", type=int, default=64 * 1024)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=0, help="partitions (default: one per rank)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--case", default="permutation")
    ap.add_argument("--busy-poll", action="store_true",
                    help="Open MPI's default busy polling in the MPI calls (else mpi_yield_when_idle=1: "
                         "a rank waiting for another gives its core away, for a machine with fewer free "
                         "cores than ranks)")
    a = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    parts = a.partitions or a.ranks
    args = [a.case, str(parts), str(a.k), str(a.size)]
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("needs mpirun (apt-get install openmpi-bin libopenmpi-dev) and mpi4py")
    launch = [mpirun, "--oversubscribe", "-n", str(a.ranks), "-x", "PYTHONPATH"]
    if not a.busy_poll:
        launch[1:1] = ["--mca", "mpi_yield_when_idle", "1"]
    print(f"k={a.k} ({a.k ** 3 // 4} hosts), {a.case} of {a.size} B, {parts} partitions, {a.ranks} ranks; "
          f"{'busy polling' if a.busy_poll else 'mpi_yield_when_idle 1'}")
    ratios, cpu_ratios, ok = [], [], True
    for i in range(a.repeats):
        load0 = os.getloadavg()[0]
        one = _run([sys.executable, CASE, *args], {**env, "RDMASIM_CASE_ONE_PROCESS": "1"})
        many = _run([*launch, sys.executable, CASE, *args], env)
        same = all(many[k] == one[k] for k in ("flows_sha256", "counters_sha256", "now", "events"))
        ok = ok and same
        ratio = many["wall_s"] / max(one["wall_s"], 1e-9)
        cpu_ratio = max(many["cpu_s"]) / max(one["cpu_s"][0], 1e-9)
        ratios.append(ratio)
        cpu_ratios.append(cpu_ratio)
        n = max(many["agreements"], 1)
        print(f"[{i + 1}] load average {load0:.1f}-{os.getloadavg()[0]:.1f}; {one['events']:,} events; "
              f"one process: {one['wall_s']:.3f} s wall, {one['cpu_s'][0]:.3f} s CPU; {a.ranks} ranks: "
              f"{many['wall_s']:.3f} s wall ({ratio:.2f}x), CPU by rank "
              f"{', '.join(f'{c:.3f}' for c in many['cpu_s'])} s (busiest {cpu_ratio:.2f}x); "
              f"identical: {same}")
        print(f"    agreements: {many['agreements']:,}; bytes sent by each rank: {many['bytes_sent']}")
        for r, t in enumerate(many.get("agreement_times") or []):
            print(f"    rank {r}: {t['agree']:.3f} s in agreements ({1e6 * t['agree'] / n:.0f} us each): "
                  f"MPI calls {1e6 * t['mpi'] / n:.0f} us, Python {1e6 * t['python'] / n:.1f} us, "
                  f"C messages {1e6 * t['pack'] / n:.1f} us")
    if a.repeats > 1:
        ratios.sort()
        cpu_ratios.sort()
        print(f"median over {a.repeats}: {a.ranks} ranks / one process {ratios[len(ratios) // 2]:.2f}x wall, "
              f"busiest rank's CPU / one process's {cpu_ratios[len(cpu_ratios) // 2]:.2f}x")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
