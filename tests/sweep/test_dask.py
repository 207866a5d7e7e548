"""A sweep on a Dask LocalCluster (through its scheduler address) gives the process pool's results."""

from __future__ import annotations

from pathlib import Path

import distributed  # the test extra has dask[distributed]: this path must be tested, not skipped
from sweep_helpers import FLOWS_PER_RUN, GRID, LOSSY

from rdmasim.cli import main
from rdmasim.sweep import load_sweep, run_sweep


def _fcts(res: object) -> list[tuple[object, ...]]:
    return sorted((r["run_key"], r["flow_id"], r["fct_ps"], r["retx_pkts"], r["status"])
                  for r in res.flows_records())  # type: ignore[attr-defined]


def test_dask_local_cluster_matches_the_process_pool(tmp_path: Path) -> None:
    grid = {**GRID, "impairments.loss[0].probability": [0.02, 0.05]}  # losses: FCTs depend on the seed
    local = run_sweep(LOSSY, grid, tmp_path / "pool", seeds=2, max_workers=2, progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        res = run_sweep(LOSSY, grid, tmp_path / "dask", seeds=2, scheduler=cluster.scheduler_address,
                        progress=False)
        assert res.executor == f"Dask ({cluster.scheduler_address})"
        # a Client passed in as the executor works too (and is left open)
        with distributed.Client(cluster) as client:
            res2 = run_sweep(LOSSY, grid, tmp_path / "client", seeds=2, executor=client, progress=False)
            assert client.status == "running"
    assert (res.ran, res.failed, res2.ran) == (8, 0, 8)
    assert len(res.flows_records()) == 8 * FLOWS_PER_RUN
    assert _fcts(res) == _fcts(local) == _fcts(res2)
    assert len({f[2] for f in _fcts(res)}) > FLOWS_PER_RUN  # the runs differ


def test_cli_dask_local_creates_and_closes_its_cluster(tmp_path: Path) -> None:
    argv = ["sweep", str(LOSSY), "--param", "flows[].size=8KiB,16KiB", "--dask-local", "--workers", "2",
            "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    res = load_sweep(tmp_path)
    assert len(res.flows_records()) == 2 * FLOWS_PER_RUN
    assert [r["runs"] for r in res.summary_rows()] == [1, 1]
