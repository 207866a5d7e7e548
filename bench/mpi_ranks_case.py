"""One run of bench/mpi_ranks.py: tests/mpi/cases.py's ``CASE`` with ``PARTS`` partitions, in one
process (RDMASIM_CASE_ONE_PROCESS=1) or on the ranks of ``mpirun -n N``; rank 0 prints one JSON
line: the outcome that must match, the wall and CPU time of ``run_flows`` (every rank's CPU time),
and on ranks the agreements, the bytes each rank sent and where each rank's time in agreements went.

    mpirun -n 2 python bench/mpi_ranks_case.py permutation 2 8 1048576
"""

from __future__ import annotations

import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "mpi"))

from cases import build, outcome  # noqa: E402


def main() -> None:
    case, parts, k, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    mpi = os.environ.get("RDMASIM_CASE_ONE_PROCESS") != "1"
    sim, flows = build(case, parts, mpi=mpi, k=k, size=size)
    w, c = time.perf_counter(), time.process_time()
    sim.run_flows()
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    out = outcome(sim, flows)
    out["wall_s"] = wall
    out["cpu_s"] = [cpu]
    if mpi:
        core = sim._core
        comm = core._comm
        out["cpu_s"] = comm.allgather(cpu)
        out["agreements"] = core.messages
        out["bytes_sent"] = comm.allgather(core.bytes_sent)
        times = getattr(core, "agreement_times", None)  # (None: a build before they were kept)
        out["agreement_times"] = comm.allgather(times)
        if times is None:
            out["agreement_times"] = None
    if not mpi or sim._core.rank == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
