"""The cost side of a run over MPI ranks (csrc/sim/par.c agree, rdmasim/_par_rank.pxi): one agreement
per job at most (a window whose job ended in an agreement does not agree again before the next),
nothing sent on one rank, and where an agreement's wall time goes."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from rdmasim.partition import parallel_stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402


class CountingOneRank:
    """A communicator of one rank that counts the pickled allgathers it is asked for."""

    def __init__(self) -> None:
        self.allgathers = 0

    def Get_rank(self) -> int:  # noqa: N802 (mpi4py's names)
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 1

    def allgather(self, x: Any) -> list[Any]:
        self.allgathers += 1
        return [x]


@pytest.mark.parametrize("case", cases.CASES)
def test_at_most_one_agreement_per_job_and_results_unchanged(case):
    one = cases.run(case, 2)
    sim, flows = cases.build(case, 2, mpi=CountingOneRank())
    sim.run_flows()
    assert cases.outcome(sim, flows) == one
    st = parallel_stats(sim)
    assert st is not None and st.windows > 10
    # every agreement follows a job, except the first of each run and the one after a global event
    assert sim._core.messages <= st.jobs + st.runs + st.global_events


def test_one_rank_sends_nothing_per_agreement():
    comm = CountingOneRank()
    sim, _ = cases.build("permutation", 2, mpi=comm)
    sim.run_flows()
    assert sim._core.messages > 10
    st = parallel_stats(sim)
    assert st is not None
    assert comm.allgathers == st.runs  # the flow table after each run only


def test_agreement_times_split_the_time_in_agreements():
    sim, _ = cases.build("permutation", 2, mpi=CountingOneRank())
    sim.run_flows()
    t = sim._core.agreement_times
    assert set(t) == {"agree", "mpi", "python", "pack"}
    assert t["agree"] > 0 and all(v >= 0 for v in t.values())
    assert t["mpi"] + t["python"] + t["pack"] == pytest.approx(t["agree"], rel=1e-6, abs=1e-9)
