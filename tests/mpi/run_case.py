"""Run one case of cases.py on the MPI ranks of ``mpirun -n N python run_case.py CASE [PARTS [K]]``;
rank 0 prints its outcome as one JSON line (with the wall time of the run, not compared)."""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cases import build, outcome  # noqa: E402


def main() -> None:
    case = sys.argv[1]
    parts = int(sys.argv[2]) if len(sys.argv) > 2 else None
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    mpi = os.environ.get("RDMASIM_CASE_ONE_PROCESS") != "1"
    sim, flows = build(case, parts, mpi=mpi, k=k)
    t = time.perf_counter()
    sim.run_flows()
    wall = time.perf_counter() - t
    out = outcome(sim, flows)
    out["wall_s"] = round(wall, 3)
    if not mpi or sim._core.rank == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
