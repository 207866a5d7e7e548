"""Parameter sweeps: one scenario, a grid of overrides, every run's results in one SQLite store.

``run_sweep(scenario, {"link.loss": [0, 0.01]}, "out", seeds=3)`` runs the 6 runs on a process
pool (or any :class:`concurrent.futures.Executor`, or Dask), resuming where a previous sweep into
the same folder stopped; :func:`load_sweep` reads a sweep folder back. See docs/sweeps.md.
"""

from rdmasim.sweep.executor import open_executor, run_one
from rdmasim.sweep.grid import RunSpec, expand, parse_param, plan, run_key
from rdmasim.sweep.result import SweepResult, load_sweep
from rdmasim.sweep.run import run_sweep
from rdmasim.sweep.store import STORE_NAME, SweepStore

__all__ = [
    "STORE_NAME",
    "RunSpec",
    "SweepResult",
    "SweepStore",
    "expand",
    "load_sweep",
    "open_executor",
    "parse_param",
    "plan",
    "run_key",
    "run_one",
    "run_sweep",
]
