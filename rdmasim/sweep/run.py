"""Run a sweep: validate every run up front, skip the runs the store already has, run the rest on
an executor and write each result into the store as soon as it arrives."""

from __future__ import annotations

import sys
from concurrent.futures import Future, as_completed
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from rdmasim import __version__
from rdmasim.errors import UserInputError
from rdmasim.scenario.check import Estimate, check_disk_total, check_resources, estimate
from rdmasim.scenario.load import Problem, ScenarioError, loads, read_text
from rdmasim.sweep.executor import open_executor, run_one
from rdmasim.sweep.grid import ParamsLike, RunSpec, param_keys, plan, run_names, scenario_digest
from rdmasim.sweep.result import SweepResult
from rdmasim.sweep.store import STORE_NAME, SweepStore


def _read_scenario(scenario: str | Path) -> tuple[str, str]:
    """(text, file name) of a scenario given as a path or as TOML text (which has a newline or
    an ``=``)."""
    if isinstance(scenario, Path) or ("\n" not in scenario and "=" not in scenario):
        # the checks of `rdmasim run`: a regular file of bounded size (never a device or a pipe)
        return read_text(scenario), str(scenario)
    return scenario, "<string>"


def _check_version(store: SweepStore, digest: str, text: str, file: str) -> None:
    """Refuse to add runs of scenario version ``digest`` to a store whose current version (the one
    its last sweep ran) is another one and has runs."""
    old = store.get_meta("scenario_digest")
    held = store.versions()
    if old == digest or not sum(n for k, n in held.items() if k != digest):
        return
    if old is None:  # runs of a store written before runs carried their version
        old_desc = (f"the runs of an earlier rdmasim that did not record the scenario version "
                    f"({sum(held.values())} runs)")
        why = "their scenario version is unknown"
    else:
        old_version = store.get_meta("rdmasim_version")
        old_desc = (f"the runs of scenario version {old} ({store.get_meta('scenario_file')}, "
                    f"rdmasim {old_version}; {held.get(old, 0)} runs)")
        changed = []
        if store.get_meta("scenario_text") != text:
            changed.append("the scenario text changed")
        if old_version != __version__:
            changed.append(f"rdmasim changed from {old_version} to {__version__}")
        why = " and ".join(changed) or "the scenario changed"
    raise UserInputError(
        f"sweep store {str(store.path)!r} holds {old_desc}; this sweep is scenario version {digest} "
        f"({file}, rdmasim {__version__}): {why}, and runs of two versions must not be summarised "
        "together (allowed: a new --out folder (out_dir), or --new-version (new_version=True) to keep "
        "the stored runs apart and start this version in the same store)")


def _check_kept_runs(out: Path, specs: list[RunSpec], estimates: dict[str, Estimate], resume: bool) -> None:
    """Refuse (:class:`UserInputError`) a sweep whose runs still to do (all, or with ``resume`` the
    ones the store in ``out`` does not have) would keep more files in ``out/runs`` than fit."""
    done: set[str] = set()
    if resume and (out / STORE_NAME).is_file():
        with SweepStore(out / STORE_NAME) as store:
            done = store.ok_keys()
    todo = [estimates[s.run_key] for s in specs if s.run_key not in done]
    refusal = check_disk_total(out / "runs", todo)
    if refusal:
        raise UserInputError(f"sweep with --keep-runs (keep_runs=True): {refusal}")


class _Progress:
    """The sweep's progress bar: runs done of all (``3/8 runs, 2 skipped, 0 failed``)."""

    def __init__(self, enabled: bool | None, stream: TextIO, total: int, skipped: int) -> None:
        from rdmasim.progress import Progress

        self.total, self.skipped = total, skipped
        self.bar = Progress("sweep", enabled, stream)

    def show(self, done: int, failed: int, force: bool = False, incomplete: int = 0) -> None:
        cut = f", {incomplete} incomplete" if incomplete else ""
        self.bar.update((self.skipped + done) / max(1, self.total),
                        f"{self.skipped + done}/{self.total} runs, {self.skipped} skipped, {failed} failed"
                        + cut)

    def close(self) -> None:
        self.bar.close()


def run_sweep(
    scenario: str | Path,
    params: ParamsLike = None,
    out_dir: str | Path = "sweep",
    *,
    seeds: int | None = None,
    executor: Any = None,
    scheduler: str | None = None,
    max_workers: int | None = None,
    resume: bool = True,
    keep_runs: bool = False,
    new_version: bool = False,
    progress: bool | None = None,
    stream: TextIO | None = None,
) -> SweepResult:
    """Run ``scenario`` (a file path or TOML text) once per point of the ``params`` grid.

    ``params``: {key path: [values]} or ``"key=v1,v2"`` strings (values in TOML syntax); the runs are
    their cartesian product, times ``seeds`` replicates (``simulation.seed`` = 1..seeds). Every run
    is validated before any starts (:class:`ScenarioError` lists the problems). Results go into
    ``out_dir/sweep.sqlite`` (:mod:`rdmasim.sweep.store`) as each run finishes.

    ``executor``: None (a ProcessPoolExecutor of ``max_workers``), any
    :class:`concurrent.futures.Executor`, ``"thread"``, ``"dask"`` (a local Dask cluster) or a
    ``distributed.Client``; ``scheduler="tcp://host:port"`` runs on a Dask scheduler (its workers
    need rdmasim installed). ``resume``: skip the runs the store has as ``ok`` or ``incomplete``
    (failed ones are run again); with ``resume=False`` every run is run and replaces its stored
    result. ``keep_runs``: also write each run's result files to ``out_dir/runs/<run name>/``
    (named by its parameters, :func:`~rdmasim.sweep.grid.run_names`:
    ``algorithm=dcqcn,rate=25Gbps,seed=1``). A run whose flows did not all complete (still running at
    ``simulation.duration``, or ended by an error completion) is stored as ``incomplete`` with all
    its flows and counted in ``SweepResult.incomplete``. ``progress`` (default: when
    ``stream``, stderr by default, is a terminal): a runs done/total and ETA line.

    A store holds one version of the scenario (:func:`~rdmasim.sweep.grid.scenario_digest`: its
    text and the rdmasim version): a scenario that changed since the store's last sweep is refused
    (:class:`~rdmasim.errors.UserInputError` naming the store and both digests) unless
    ``new_version`` is True, which starts the new version beside the old one (the old runs stay,
    and :func:`load_sweep` reads the new version's)."""
    text, file = _read_scenario(scenario)
    specs = plan(text, params, seeds)
    names = dict(zip((s.run_key for s in specs), run_names([s.overrides for s in specs]), strict=True))
    problems: dict[str, Problem] = {}
    estimates: dict[str, Estimate] = {}
    for s in specs:
        try:
            sc = loads(text, file, s.overrides)
        except ScenarioError as exc:
            for p in exc.problems:
                problems.setdefault(str(p), p)
            continue
        # a run that cannot fit in this machine's memory is refused before any run starts
        # (a run writes files only with keep_runs; each is checked against the free space here,
        # all the runs still to do together below)
        runs_dir = str(Path(out_dir) / "runs") if keep_runs else ""
        est = estimates[s.run_key] = estimate(sc)
        for p in check_resources(sc, est, out_dir=runs_dir)[0]:
            run = ", ".join(f"{k} = {v!r}" for k, v in s.overrides.items())
            p = Problem(f"{file} (override)", p.path, f"{p.message} (run {run})", p.value, p.allowed)
            problems.setdefault(str(p), p)
    if problems:
        raise ScenarioError(list(problems.values()))
    out = Path(out_dir)
    if keep_runs:  # the kept runs' files together, not each alone, must fit before any run starts
        _check_kept_runs(out, specs, estimates, resume)
    stream = sys.stderr if stream is None else stream
    keys = param_keys(specs)
    with ExitStack() as stack:
        store = stack.enter_context(SweepStore(out / STORE_NAME))
        digest = scenario_digest(text)
        if not new_version:
            _check_version(store, digest, text, file)
        if store.get_meta("scenario_digest") != digest:
            store.set_meta("param_keys", [])
        stored_keys = store.get_meta("param_keys", [])
        store.set_meta("param_keys", list(dict.fromkeys([*stored_keys, *keys])))
        store.set_meta("scenario_file", file)
        store.set_meta("scenario_text", text)
        store.set_meta("scenario_digest", digest)
        store.set_meta("rdmasim_version", __version__)
        done_keys = store.ok_keys() if resume else set()
        todo = [s for s in specs if s.run_key not in done_keys]
        result = SweepResult(out, [s.run_key for s in specs], keys, skipped=len(specs) - len(todo),
                             version=digest)
        prog = _Progress(progress, stream, len(specs), result.skipped)
        if not todo:
            return result
        ex, result.executor = open_executor(stack, executor, scheduler, max_workers)
        futures: dict[Future[dict[str, Any]], Any] = {}
        try:
            for s in todo:
                run_dir = str(out / "runs" / names[s.run_key]) if keep_runs else ""
                futures[ex.submit(run_one, text, file, s.overrides, run_dir)] = s
            prog.show(0, 0, force=True)
            for fut in as_completed(futures):
                s = futures.pop(fut)
                try:
                    outcome = fut.result()
                except Exception as exc:  # the worker died (e.g. a broken process pool)
                    outcome = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
                store.record(s.run_key, s.overrides, outcome, digest, names[s.run_key])
                result.ran += 1
                result.failed += outcome.get("status") not in ("ok", "incomplete")
                result.incomplete += outcome.get("status") == "incomplete"
                prog.show(result.ran, result.failed, incomplete=result.incomplete)
        finally:
            for fut in futures:
                fut.cancel()
            prog.show(result.ran, result.failed, force=True, incomplete=result.incomplete)
            prog.close()
    return result
