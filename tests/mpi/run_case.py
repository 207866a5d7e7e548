"""Run one case of cases.py on the MPI ranks of ``mpirun -n N python run_case.py CASE [PARTS [K [SIZE]]]``;
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
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 64 * 1024
    mpi = os.environ.get("RDMASIM_CASE_ONE_PROCESS") != "1"
    sim, flows = build(case, parts, mpi=mpi, k=k, size=size)
    t = time.perf_counter()
    sim.run_flows()
    wall = time.perf_counter() - t
    out = outcome(sim, flows)
    out["wall_s"] = round(wall, 3)
    if mpi:
        # a link direction another rank ran: its counters are refused here, not returned stale
        core = sim._core
        out["ranks"] = core.n_ranks
        out["agreements"] = core.messages
        out["bytes_sent"] = core._comm.allgather(core.bytes_sent)
        refused = []
        for link in sim.links:
            d = link.ab
            src = ("h" if d.src.__class__.__name__ == "Host" else "s", d.src.index)
            if core.owner_of(*src) != core.rank:
                try:
                    d.stats()
                    refused.append(False)
                except RuntimeError as exc:
                    refused.append("gather_counters" in str(exc))
        out["stale_refused"] = bool(refused) and all(refused)
        out["stale_refused_all"] = sim._core._comm.allgather(out["stale_refused"])
    if not mpi or sim._core.rank == 0:
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
