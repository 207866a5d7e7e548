"""One partitioned run on N MPI ranks (``mpirun -n N``, rdmasim.mpi) against the same partitions in
one process: wall time of ``run_flows`` on each, whether the results are identical (flow table,
every link direction's and switch port's counters, clock, events), and what the ranks exchanged
(agreements: one allgather each; bytes each rank sent).

The model is tests/mpi/cases.py's: a k-ary fat tree (k^3/4 hosts), 100 Gb/s, 1 us links, MTU 1024,
PFC, DCQCN with RED ECN, a permutation of ``--size`` bytes per host.  The machine's load average is
printed with the figures: on a shared machine the wall times are noisy.

    python bench/mpi_ranks.py --k 8 --size 65536 --ranks 2
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
CASE = os.path.join(ROOT, "tests", "mpi", "run_case.py")


def _run(cmd: list[str], env: dict[str, str]) -> dict:
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--size", type=int, default=64 * 1024)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--case", default="permutation")
    a = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH", "")) if p)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    args = [a.case, str(a.ranks), str(a.k), str(a.size)]
    one = _run([sys.executable, CASE, *args], {**env, "RDMASIM_CASE_ONE_PROCESS": "1"})
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("needs mpirun (apt-get install openmpi-bin libopenmpi-dev) and mpi4py")
    launch = [mpirun, "--oversubscribe", "-n", str(a.ranks), "-x", "PYTHONPATH"]
    many = _run([*launch, sys.executable, CASE, *args], env)
    same = all(many[k] == one[k] for k in ("flows_sha256", "counters_sha256", "now", "events"))
    print(f"load average {os.getloadavg()[0]:.1f}; k={a.k} ({a.k ** 3 // 4} hosts), {a.case} of {a.size} B, "
          f"{a.ranks} partitions; {one['events']:,} events")
    print(f"one process: {one['wall_s']:.3f} s; {a.ranks} ranks: {many['wall_s']:.3f} s "
          f"({many['wall_s'] / max(one['wall_s'], 1e-9):.1f}x); identical results: {same}")
    print(f"agreements: {many['agreements']:,}; bytes sent by each rank: {many['bytes_sent']}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
