"""One partitioned run over several MPI ranks (csrc/sim/par_rank.c, rdmasim.mpi): the frame records
of cut links (csrc/sim/par_xfer.c) come back byte for byte; a run on one rank drives the whole
exchange in one process; ``mpirun -n 2`` gives the flow table, every link and switch port counter,
the clock and the event count of one process; what a run over ranks cannot hold is refused."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from typing import Any

import pytest

import rdmasim
from rdmasim import _core, topology

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cases  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class OneRank:
    """A communicator of one rank (mpi4py's interface, as far as rdmasim.mpi uses it)."""

    def Get_rank(self) -> int:  # noqa: N802 (mpi4py's names)
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 1

    def allgather(self, x: Any) -> list[Any]:
        return [x]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("payload", [False, True])
@pytest.mark.parametrize("intel", [False, True])
def test_frame_record_round_trip_is_byte_exact(seed, payload, intel):
    ok, rec = _core.xfer_roundtrip(seed, payload, intel)
    assert ok == 1
    assert _core.xfer_parse(rec) == len(rec)


@pytest.mark.parametrize("cut", [1, 8, 100])
def test_a_record_cut_short_is_refused(cut):
    _, rec = _core.xfer_roundtrip(3, True, True)
    assert _core.xfer_parse(rec[:-cut]) == 0


def test_a_record_with_unknown_flags_is_refused():
    _, rec = _core.xfer_roundtrip(4, False, False)
    bad = rec[:4] + bytes([0x80, 0, 0, 0]) + rec[8:]
    assert _core.xfer_parse(bad) == 0


@pytest.mark.parametrize("case", cases.CASES)
def test_one_rank_runs_the_exchange_and_gives_one_process_results(case):
    one = cases.run(case, 2)
    sim, flows = cases.build(case, 2, mpi=OneRank())
    sim.run_flows()
    assert cases.outcome(sim, flows) == one
    assert sim._core.messages > 10  # an agreement after every job


def test_mpi_without_mpi4py_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(RuntimeError,
                       match=r"mpi4py.*apt-get install openmpi-bin libopenmpi-dev.*mpirun -n N"):
        rdmasim.Simulator(mpi=True)


def test_more_ranks_than_partitions_is_refused():
    from rdmasim.mpi import owners

    with pytest.raises(ValueError, match=r"3 ranks for 2 partitions: allowed 1\.\.2 ranks"):
        owners(2, 3)


def test_threads_on_a_rank_are_refused():
    sim = rdmasim.Simulator(seed=1, partitions=2, threads=2, mpi=OneRank())
    topology.fat_tree(4, sim=sim)
    sim.add_flows({"src": [0], "dst": [15], "size": [4096]})
    with pytest.raises(ValueError,
                       match=r"MPI ranks: \[simulation\] threads > 1: each rank runs its partitions"):
        sim.run_flows()


def test_hosts_split_from_their_switch_are_refused():
    sim = rdmasim.Simulator(seed=1, partitions=2, mpi=OneRank())
    topology.star(4, sim=sim)
    sim.add_flows({"src": [0, 1], "dst": [2, 3], "size": [4096, 4096]})
    with pytest.raises(ValueError, match=r"MPI ranks: a host in another partition than its switch"):
        sim.run_flows()


def test_tracing_is_refused_naming_one_process():
    sim, _ = cases.build("permutation", 2, mpi=OneRank())
    sim.trace()
    with pytest.raises(ValueError, match=r"MPI ranks \(partitions = 2\): tracing needs one process"):
        sim.run_flows()


def _mpirun() -> list[str]:
    """The mpirun command, or skip (fail with RDMASIM_REQUIRE_MPI=1, as in .ci/run)."""
    exe = shutil.which("mpirun")
    why = None
    if exe is None or importlib.util.find_spec("mpi4py") is None:
        why = ("needs mpirun and mpi4py (apt-get install openmpi-bin libopenmpi-dev; pip install "
               "'rdmasim[mpi]'): .ci/run installs them")
    sanitized = "asan" in os.environ.get("LD_PRELOAD", "")
    if sanitized:
        why = "the MPI launch runs on the normal build (.ci/run), not under the sanitizers"
    if why and os.environ.get("RDMASIM_REQUIRE_MPI") == "1" and not sanitized:
        pytest.fail(why)
    if why:
        pytest.skip(why)
    assert exe is not None
    return [exe, "--oversubscribe", "-n", "2"]


@pytest.mark.parametrize("case", cases.CASES)
def test_two_mpi_ranks_give_one_process_results(case):
    env = dict(os.environ)
    if os.geteuid() == 0:  # Open MPI refuses root unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    root = os.path.dirname(os.path.dirname(HERE))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    cmd = [*_mpirun(), "-x", "PYTHONPATH", sys.executable, os.path.join(HERE, "run_case.py"), case, "4"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["ranks"] == 2
    assert got["stale_refused_all"] == [True, True]
    one = cases.run(case, 4)
    for key in one:
        assert got[key] == one[key], key


def test_a_flow_still_running_after_a_run_over_ranks_is_refused():
    sim, flows = cases.build("permutation", 2, mpi=OneRank())
    sim.run(until="5us")
    with pytest.raises(RuntimeError, match=r"flow \d+ is still running after a run over MPI ranks"):
        flows.results()
    sim.run_flows()
    assert (flows.results()["status"] == 0).all()


def test_sampling_running_flows_on_ranks_is_refused():
    sim, _ = cases.build("permutation", 2, mpi=OneRank())
    # (its first step to the next start is refused as stepping is; the samples themselves too)
    with pytest.raises((ValueError, RuntimeError), match=r"MPI ranks.*one process"):
        sim.run_flows(sample_every="1us")
    with pytest.raises(RuntimeError, match=r"sample_every=\.\.\.\) on MPI ranks.*sample in one process"):
        sim._flows_core().sample(4)
