"""Where the runs of a sweep execute: the worker function and the executor choice.

A worker gets plain, picklable arguments (scenario text, file name, overrides, output folder)
and returns a plain dict, so any :class:`concurrent.futures.Executor` can run it: a process pool,
a thread pool, or a Dask cluster through ``distributed.Client.get_executor()``.
"""

from __future__ import annotations

import json
import os
import traceback
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any


def run_one(text: str, file: str, overrides: dict[str, Any], out_dir: str = "") -> dict[str, Any]:
    """Run the scenario ``text`` with ``overrides``; never raises.

    Returns ``{"status": "ok" or "incomplete", "seed", "ideal_fct", "sim_time_ps", "events", "wall_s",
    "flows", "ports", "queues", "collectives"}`` (row dicts; ``incomplete``: some flows did not
    complete successfully: still running at the end, or ended by an error completion) or
    ``{"status": "error", "error": text}``. ``out_dir`` (if not "") gets the run's result
    files and ``overrides.json``."""
    from rdmasim.scenario.load import loads
    from rdmasim.scenario.run import run_scenario

    try:
        sc = loads(text, file, overrides)
        res = run_scenario(sc, out_dir, progress=False)
        if out_dir:
            (Path(out_dir) / "overrides.json").write_text(json.dumps(overrides, indent=1, sort_keys=True))
        flows = res.rows()
        done = not res.interrupted and all(f["status"] == "ok" for f in flows)
        return {
            "status": "ok" if done else "incomplete",
            "seed": res.seed,
            "ideal_fct": res.ideal_fct,
            "sim_time_ps": res.sim_time_ps,
            "events": res.events,
            "wall_s": res.wall_s,
            "flows": flows,
            "ports": res.port_rows(),
            "queues": queue_summary(res.queue_samples),
            "collectives": [_plain(c) for c in res.collectives],
        }
    except Exception as exc:  # reported in the store; the sweep goes on
        return {"status": "error", "error": "".join(traceback.format_exception(exc)).strip()}


def queue_summary(samples: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per sampled switch egress queue (``RunResult.queue_samples``): ``probe`` (its label),
    ``samples``, the mean, p99 and largest depth in bytes, and the fraction of samples it was
    paused. [] without samples."""
    import numpy as np

    if not samples or not len(samples.get("labels", ())):
        return []
    egress = np.asarray(samples["egress_bytes"])
    paused = np.asarray(samples["paused"], dtype=bool)
    n = egress.shape[0]
    out = []
    for j, label in enumerate(samples["labels"]):
        col = egress[:, j]
        out.append({
            "probe": str(label), "samples": int(n),
            "mean_egress_bytes": int(round(float(col.mean()))) if n else 0,
            "p99_egress_bytes": int(np.percentile(col, 99)) if n else 0,
            "max_egress_bytes": int(col.max()) if n else 0,
            "paused_fraction": float(paused[:, j].mean()) if n else 0.0,
        })
    return out


def _plain(obj: Any) -> Any:
    """``obj`` with numpy scalars made Python numbers (a worker's answer is plain data)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):
        return obj.item()
    return obj


def _die_with_parent(parent_pid: int) -> None:
    """Process-pool initializer: end this worker when the sweep process that started it dies, even
    by SIGKILL (which runs no cleanup). Linux: the kernel sends SIGKILL when the parent goes
    (prctl PR_SET_PDEATHSIG); everywhere: a daemon thread that checks once a second that the parent
    is still this process's parent."""
    import signal
    import sys
    import threading
    import time

    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="rdmasim-parent-watch", daemon=True).start()


def _dask_client(address: str | None, max_workers: int | None) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise RuntimeError(
            "a Dask executor needs the distributed package: pip install 'dask[distributed]'"
        ) from None
    if address:
        return Client(address)
    n = max_workers or os.cpu_count() or 1
    return Client(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)


def open_executor(
    stack: ExitStack,
    executor: Executor | str | Any | None = None,
    scheduler: str | None = None,
    max_workers: int | None = None,
) -> tuple[Executor, str]:
    """The executor to run on and a description of it; whatever is created here is shut down when
    ``stack`` closes (an executor passed in is left as it is).

    ``executor``: None (a new ProcessPoolExecutor of ``max_workers``), an Executor, ``"process"``,
    ``"thread"``, ``"dask"`` (a new local Dask cluster of ``max_workers`` single-threaded worker
    processes, or the scheduler at ``scheduler``), or a ``distributed.Client``."""
    if scheduler is not None and executor not in (None, "dask"):
        raise ValueError("give either an executor or a Dask scheduler address, not both")
    if executor == "dask" or scheduler is not None:
        client = stack.enter_context(_dask_client(scheduler, max_workers))
        where = scheduler or "a local Dask cluster"
        return client.get_executor(pure=False), f"Dask ({where})"
    if executor is None or executor == "process":
        pool = stack.enter_context(ProcessPoolExecutor(max_workers=max_workers, initializer=_die_with_parent,
                                                       initargs=(os.getpid(),)))
        n = max_workers or os.cpu_count() or 1
        return pool, f"{n} worker process" + ("es" if n != 1 else "")
    if executor == "thread":
        from concurrent.futures import ThreadPoolExecutor

        tpool = stack.enter_context(ThreadPoolExecutor(max_workers=max_workers))
        return tpool, "a thread pool"
    if isinstance(executor, Executor):
        return executor, type(executor).__name__
    if hasattr(executor, "get_executor"):  # a distributed.Client
        return executor.get_executor(pure=False), "Dask"
    raise ValueError(f"executor: expected an Executor, 'process', 'thread' or 'dask', got {executor!r}")
