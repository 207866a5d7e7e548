"""Reading a sweep back: :class:`SweepResult` (runs and flows tables, summary) and
:func:`load_sweep`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rdmasim.results import FLOW_COLUMNS
from rdmasim.sweep.grid import SEED_KEY
from rdmasim.sweep.store import RUN_COLUMNS, STORE_NAME, SweepStore
from rdmasim.units import format_time


def _table(records: list[dict[str, Any]], names: Sequence[str]) -> Any:
    import pandas as pd

    return pd.DataFrame.from_records(records, columns=list(names))


def _p99(xs: list[int]) -> int:
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.99 * len(s)))]


def _percentile(xs: list[float], q: float) -> float | None:
    """numpy's default (linear) percentile ``q`` of ``xs``, None when empty."""
    import numpy as np

    return float(np.percentile(xs, q)) if xs else None


#: summary columns that are not parameters
_STAT_KEYS = ("runs", "failed", "flows", "completed", "mean_fct_ps", "p99_fct_ps", "median_slowdown",
              "p95_slowdown", "p99_slowdown")


@dataclass
class SweepResult:
    """A sweep's results, read from its store (``sweep.sqlite`` in ``out_dir``).

    ``run_keys`` limits the tables to the runs of one sweep (None: every run in the store);
    ``version`` to the runs of one scenario version (its digest; None: every version);
    ``ran``/``skipped``/``failed`` count what :func:`run_sweep` did this time."""

    out_dir: Path
    run_keys: list[str] | None = None
    param_keys: list[str] = field(default_factory=list)
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    executor: str = ""
    version: str | None = None

    @property
    def store_path(self) -> Path:
        """The SQLite file."""
        return self.out_dir / STORE_NAME

    def _read(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        with SweepStore(self.store_path) as st:
            return st.runs(self.run_keys, self.version), st.flows(self.run_keys, self.version)

    def _params(self, runs: list[dict[str, Any]]) -> list[str]:
        keys = dict.fromkeys(self.param_keys)
        for r in runs:
            keys.update(dict.fromkeys(r["params"]))
        return list(keys)

    def _runs_table(self) -> tuple[list[dict[str, Any]], list[str]]:
        runs, _ = self._read()
        keys = self._params(runs)
        rest = [c for c in RUN_COLUMNS if c not in ("run_key", "params")]
        recs = [
            {"run_key": r["run_key"], **{k: r["params"].get(k) for k in keys}, **{c: r[c] for c in rest}}
            for r in runs
        ]
        return recs, ["run_key", *keys, *rest]

    def _flows_table(self) -> tuple[list[dict[str, Any]], list[str]]:
        runs, flows = self._read()
        keys = self._params(runs)
        params = {r["run_key"]: r["params"] for r in runs}
        recs = [
            {
                "run_key": f["run_key"],
                **{k: params[f["run_key"]].get(k) for k in keys},
                **{c: f[c] for c in FLOW_COLUMNS},
            }
            for f in flows
        ]
        return recs, ["run_key", *keys, *FLOW_COLUMNS]

    def runs_records(self) -> list[dict[str, Any]]:
        """One dict per run: run_key, the parameter columns (key paths), then the runs columns."""
        return self._runs_table()[0]

    def flows_records(self) -> list[dict[str, Any]]:
        """One dict per flow: run_key, the run's parameter columns, then :data:`FLOW_COLUMNS`."""
        return self._flows_table()[0]

    def runs(self) -> Any:
        """The runs table as a pandas DataFrame."""
        return _table(*self._runs_table())

    def flows(self) -> Any:
        """The flows of every run with the run's parameters as columns, as a pandas DataFrame."""
        return _table(*self._flows_table())

    def summary_rows(self) -> list[dict[str, Any]]:
        """One dict per parameter combination (``simulation.seed`` aside: seeds are replicates):
        the parameters, ``runs`` (ok), ``failed``, ``flows``, ``completed`` and the mean and p99 FCT
        (ps) of the completed flows, and their median, p95 and p99 FCT slowdown (FCT / ideal FCT);
        in grid order (or by parameter values, from :func:`load_sweep`)."""
        runs, flows = self._read()
        keys = [k for k in self._params(runs) if k != SEED_KEY]
        if self.run_keys is not None:  # grid order
            pos = {k: i for i, k in enumerate(self.run_keys)}
            runs.sort(key=lambda r: pos.get(r["run_key"], len(pos)))
        else:  # by parameter values
            runs.sort(key=lambda r: [_order(r["params"].get(k)) for k in keys])
        groups: dict[tuple[str, ...], dict[str, Any]] = {}
        group_of: dict[str, tuple[str, ...]] = {}
        for r in runs:
            g = tuple(repr(r["params"].get(k)) for k in keys)
            group_of[r["run_key"]] = g
            row = groups.setdefault(
                g, {**{k: r["params"].get(k) for k in keys}, "runs": 0, "failed": 0, "flows": 0, "fcts": [],
                    "slowdowns": []}
            )
            row["runs" if r["status"] == "ok" else "failed"] += 1
        for f in flows:
            row = groups[group_of[f["run_key"]]]
            row["flows"] += 1
            if f["status"] == "ok" and f["fct_ps"] is not None:
                row["fcts"].append(f["fct_ps"])
                if f["slowdown"] is not None:
                    row["slowdowns"].append(f["slowdown"])
        out = []
        for row in groups.values():
            fcts = row.pop("fcts")
            sds = row.pop("slowdowns")
            row["completed"] = len(fcts)
            row["mean_fct_ps"] = sum(fcts) / len(fcts) if fcts else None
            row["p99_fct_ps"] = _p99(fcts) if fcts else None
            for q, name in ((50, "median_slowdown"), (95, "p95_slowdown"), (99, "p99_slowdown")):
                row[name] = _percentile(sds, q)
            out.append(row)
        return out

    def flows_by_combination(self) -> dict[str, Any]:
        """The flows of every run, one pandas DataFrame per parameter combination (seeds pooled),
        keyed by its name (:func:`_label`: ``dcqcn`` for a sweep of one parameter); in summary order."""
        recs, names = self._flows_table()
        keys = [k for k in self.param_keys or self._params(self._read()[0]) if k != SEED_KEY]
        by: dict[str, list[dict[str, Any]]] = {}
        for row in self.summary_rows():
            by[_label(row, keys)] = []
        for f in recs:
            by.setdefault(_label(f, keys), []).append(f)
        return {k: _table(v, names) for k, v in by.items() if v}

    def slowdown_plot(self, buckets: Any = None, title: str | None = None) -> Any:
        """FCT slowdown by flow size (median and p99), one line pair per parameter combination
        (:func:`rdmasim.plots.fct_slowdown_by_size`): a matplotlib Figure."""
        from rdmasim import plots

        return plots.fct_slowdown_by_size(self.flows_by_combination(), buckets=buckets,
                                          title=title or "FCT slowdown by flow size")

    def summary(self) -> str:
        """The summary table as text: one line per parameter combination."""
        rows = self.summary_rows()
        keys = [k for k in rows[0] if k not in _STAT_KEYS] if rows else []
        head = [*keys, "runs", "failed", "mean FCT", "p99 FCT", "slowdown p50/p95/p99", "completed"]
        body = []
        for r in rows:
            mean = "-" if r["mean_fct_ps"] is None else format_time(round(r["mean_fct_ps"]))
            p99 = "-" if r["p99_fct_ps"] is None else format_time(r["p99_fct_ps"])
            sds = [r[k] for k in ("median_slowdown", "p95_slowdown", "p99_slowdown")]
            sd = "-" if sds[0] is None else "/".join(f"{x:.2f}" for x in sds)
            body.append(
                [
                    *(_show(r[k]) for k in keys),
                    str(r["runs"]),
                    str(r["failed"]),
                    mean,
                    p99,
                    sd,
                    f"{r['completed']}/{r['flows']}",
                ]
            )
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
        lines = ["  " + "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
        lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(b, widths, strict=True)) for b in body]
        return "\n".join(lines)


def _label(row: dict[str, Any], keys: Sequence[str]) -> str:
    """A combination's name: the value of the one parameter (``dcqcn``), else ``key=value, ...``
    with each key's last part (``algorithm=dcqcn, loss=0.01``); ``all runs`` without parameters."""
    if len(keys) == 1:
        return _show(row.get(keys[0]))
    return ", ".join(f"{k.split('.')[-1]}={_show(row.get(k))}" for k in keys) or "all runs"


def _order(v: Any) -> tuple[int, Any]:
    """A sort key for parameter values of mixed types: numbers by value, the rest by text."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v)
    return (1, repr(v))


def _show(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return str(v).lower()
    return "-" if v is None else str(v)


def load_sweep(out_dir: str | Path, version: str | None = None) -> SweepResult:
    """The results of every run in the sweep folder ``out_dir`` (its ``sweep.sqlite``) of the
    scenario version ``version`` (a digest, :func:`rdmasim.sweep.grid.scenario_digest`; default:
    the version the last sweep ran). Runs of other versions of the scenario are never mixed in."""
    d = Path(out_dir)
    if not (d / STORE_NAME).is_file():
        raise FileNotFoundError(f"{d}: no {STORE_NAME} (not a sweep folder)")
    with SweepStore(d / STORE_NAME) as st:
        keys = st.get_meta("param_keys", [])
        current = st.get_meta("scenario_digest")
        have = st.versions()
    if version is not None and version not in have:
        known = ", ".join(sorted(str(k) for k in have if k)) or "none"
        raise ValueError(f"{d / STORE_NAME}: no runs of scenario version {version!r} "
                         f"(allowed: the versions it holds: {known})")
    return SweepResult(d, None, list(keys), version=version or current)
