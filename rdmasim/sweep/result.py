"""Reading a sweep back: :class:`SweepResult` (runs and flows tables, summary) and
:func:`load_sweep`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rdmasim.results import FLOW_COLUMNS, PORT_COLUMNS
from rdmasim.sweep.grid import SEED_KEY, short_names, show_value
from rdmasim.sweep.store import COLLECTIVE_COLUMNS, QUEUE_COLUMNS, RUN_COLUMNS, STORE_NAME, SweepStore
from rdmasim.units import format_time, numeric_values


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


def _mean(xs: list[Any]) -> float | None:
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


#: summary columns that are not parameters, in order (``collective_time_ps`` and ``busbw_Bps``
#: only for a scenario with a collective)
_STAT_KEYS = ("runs", "incomplete", "failed", "flows", "completed", "unfinished", "mean_fct_ps", "p99_fct_ps",
              "median_slowdown", "p95_slowdown", "p99_slowdown", "drops", "ecn_marked", "pfc_xoff_sent",
              "paused_ps", "collective_time_ps", "busbw_Bps")
_COLLECTIVE_STATS = ("collective_time_ps", "busbw_Bps")

#: what :meth:`SweepResult.plot` can draw: summary column -> (axis label, kind of value)
METRICS: dict[str, tuple[str, str]] = {
    "median_slowdown": ("median FCT slowdown (FCT / ideal FCT)", "ratio"),
    "p95_slowdown": ("p95 FCT slowdown (FCT / ideal FCT)", "ratio"),
    "p99_slowdown": ("p99 FCT slowdown (FCT / ideal FCT)", "ratio"),
    "mean_fct_ps": ("mean FCT", "time"),
    "p99_fct_ps": ("p99 FCT", "time"),
    "unfinished": ("unfinished flows", "count"),
    "drops": ("packets dropped per run", "count"),
    "ecn_marked": ("ECN-marked packets per run", "count"),
    "pfc_xoff_sent": ("PFC XOFF frames sent per run", "count"),
    "paused_ps": ("time paused per run (all ports)", "time"),
    "collective_time_ps": ("collective time", "time"),
    "busbw_Bps": ("bus bandwidth (Gb/s)", "busbw"),
}


def _stats(runs: list[dict[str, Any]], flows: list[dict[str, Any]],
           colls: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary numbers of a group of runs (one combination, or one run): counts of runs by
    status, flows finished and not, FCT and slowdown of the finished flows, port totals per run
    (mean over the runs that ran) and the collectives' mean time and busbw."""
    ran = [r for r in runs if r["status"] != "error"]
    fcts = [f["fct_ps"] for f in flows if f["status"] == "ok" and f["fct_ps"] is not None]
    sds = [f["slowdown"] for f in flows if f["status"] == "ok" and f["fct_ps"] is not None
           and f["slowdown"] is not None]
    row: dict[str, Any] = {
        "runs": sum(r["status"] == "ok" for r in runs),
        "incomplete": sum(r["status"] == "incomplete" for r in runs),
        "failed": sum(r["status"] == "error" for r in runs),
        "flows": len(flows),
        "completed": len(fcts),
        "unfinished": len(flows) - len(fcts),
        "mean_fct_ps": sum(fcts) / len(fcts) if fcts else None,
        "p99_fct_ps": _p99(fcts) if fcts else None,
    }
    for q, name in ((50, "median_slowdown"), (95, "p95_slowdown"), (99, "p99_slowdown")):
        row[name] = _percentile(sds, q)
    for c in ("drops", "ecn_marked", "pfc_xoff_sent", "paused_ps"):
        row[c] = _mean([r.get(c) for r in ran])
    row["collective_time_ps"] = _mean([c["time_ps"] for c in colls])
    row["busbw_Bps"] = _mean([c["busbw_Bps"] for c in colls])
    return row


@dataclass
class SweepResult:
    """A sweep's results, read from its store (``sweep.sqlite`` in ``out_dir``).

    ``run_keys`` limits the tables to the runs of one sweep (None: every run in the store);
    ``version`` to the runs of one scenario version (its digest; None: every version);
    ``ran``/``skipped``/``failed``/``incomplete`` count what :func:`run_sweep` did this time
    (``incomplete``: runs that ended with flows not finished). ``print(result)`` prints
    :meth:`summary_text`."""

    out_dir: Path
    run_keys: list[str] | None = None
    param_keys: list[str] = field(default_factory=list)
    ran: int = 0
    skipped: int = 0
    failed: int = 0
    executor: str = ""
    version: str | None = None
    incomplete: int = 0

    def __str__(self) -> str:
        return self.summary_text()

    @property
    def store_path(self) -> Path:
        """The SQLite file."""
        return self.out_dir / STORE_NAME

    def _read(self, table: str = "flows") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        with SweepStore(self.store_path) as st:
            return st.runs(self.run_keys, self.version), st.rows(table, self.run_keys, self.version)

    def _params(self, runs: list[dict[str, Any]]) -> list[str]:
        keys = dict.fromkeys(self.param_keys)
        for r in runs:
            keys.update(dict.fromkeys(r["params"]))
        return list(keys)

    def _runs_table(self) -> tuple[list[dict[str, Any]], list[str]]:
        with SweepStore(self.store_path) as st:
            runs = st.runs(self.run_keys, self.version)
        keys = self._params(runs)
        rest = [c for c in RUN_COLUMNS if c not in ("run_key", "params")]
        recs = [
            {"run_key": r["run_key"], **{k: r["params"].get(k) for k in keys}, **{c: r[c] for c in rest}}
            for r in runs
        ]
        return recs, ["run_key", *keys, *rest]

    def _rows_table(self, table: str) -> tuple[list[dict[str, Any]], list[str]]:
        runs, rows = self._read(table)
        keys = self._params(runs)
        by = {r["run_key"]: r for r in runs}
        columns = {"flows": FLOW_COLUMNS, "ports": PORT_COLUMNS, "queues": QUEUE_COLUMNS,
                   "collectives": COLLECTIVE_COLUMNS}[table]
        recs = [
            {
                "run_key": f["run_key"],
                **{k: by[f["run_key"]]["params"].get(k) for k in keys},
                "run_status": by[f["run_key"]]["status"],
                **{c: f[c] for c in columns},
            }
            for f in rows if f["run_key"] in by
        ]
        return recs, ["run_key", *keys, "run_status", *columns]

    def _flows_table(self) -> tuple[list[dict[str, Any]], list[str]]:
        return self._rows_table("flows")

    def runs_records(self) -> list[dict[str, Any]]:
        """One dict per run: run_key, the parameter columns (key paths), then the runs columns."""
        return self._runs_table()[0]

    def flows_records(self) -> list[dict[str, Any]]:
        """One dict per flow: run_key, the run's parameter columns, ``run_status`` (``ok``, or
        ``incomplete`` for the flows of a run that ended with flows not finished), then
        :data:`FLOW_COLUMNS`."""
        return self._flows_table()[0]

    def runs(self) -> Any:
        """The runs table as a pandas DataFrame: the parameters, ``status`` (``ok``, ``incomplete``
        or ``error``), ``run_name``, ``flows`` and ``unfinished``, and the run's port totals."""
        return _table(*self._runs_table())

    def flows(self) -> Any:
        """The flows of every run with the run's parameters and ``run_status`` as columns, as a
        pandas DataFrame (the flows of an incomplete run are here too, flagged by ``run_status``)."""
        return _table(*self._flows_table())

    def ports(self) -> Any:
        """Every run's per-port counters (one row per switch port and host NIC: drops, ECN marks,
        PFC XOFF sent and received, time paused, peak queues; the columns of ``ports.csv``) with
        the run's parameters, as a pandas DataFrame."""
        return _table(*self._rows_table("ports"))

    def queues(self) -> Any:
        """Every run's sampled switch egress queues (with ``[outputs] sample_interval``): per queue
        the mean, p99 and largest depth and the fraction of samples it was paused, as a pandas
        DataFrame with the run's parameters."""
        return _table(*self._rows_table("queues"))

    def collectives(self) -> Any:
        """Every run's collectives (``time_ps``, ``algbw_Bps``, ``busbw_Bps``, ...; ``detail`` as
        JSON), as a pandas DataFrame with the run's parameters."""
        return _table(*self._rows_table("collectives"))

    def ideal_fct(self) -> str | None:
        """The ideal-FCT definition (scenario key ``outputs.ideal_fct``: ``wire`` or ``payload``,
        :data:`rdmasim.results.IDEAL_FCT`) the slowdowns of the runs are of: its name, or
        ``per outputs.ideal_fct`` when the runs differ (a swept ``outputs.ideal_fct``: its column
        says which); None when no run recorded it (a store of an earlier rdmasim)."""
        with SweepStore(self.store_path) as st:
            runs = st.runs(self.run_keys, self.version)
        found = sorted({r["ideal_fct"] for r in runs if r["status"] != "error"} - {None})
        if len(found) > 1:
            return "per outputs.ideal_fct"
        return found[0] if found else None

    def _groups(self) -> tuple[list[str], list[tuple[dict[str, Any], list[dict[str, Any]]]],
                               dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
        """(parameter keys without the seed, [(parameter values, runs)] per combination in
        summary order, flows by run_key, collectives by run_key)."""
        runs, flows = self._read("flows")
        with SweepStore(self.store_path) as st:
            colls = st.rows("collectives", self.run_keys, self.version)
        keys = [k for k in self._params(runs) if k != SEED_KEY]
        if self.run_keys is not None:  # grid order
            pos = {k: i for i, k in enumerate(self.run_keys)}
            runs.sort(key=lambda r: pos.get(r["run_key"], len(pos)))
        else:  # by parameter values (sizes, rates and times by what they mean: 64KiB before 1MiB)
            rank: dict[str, dict[str, Any]] = {}
            for k in keys:
                vals = list({repr(r["params"].get(k)): r["params"].get(k) for r in runs}.values())
                nums = numeric_values(vals) if vals else None
                rank[k] = {repr(v): ((0, n) if nums is not None else _order(v))
                           for v, n in zip(vals, nums or vals, strict=True)}
            runs.sort(key=lambda r: [rank[k][repr(r["params"].get(k))] for k in keys])
        groups: dict[tuple[str, ...], tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        for r in runs:
            g = tuple(repr(r["params"].get(k)) for k in keys)
            groups.setdefault(g, ({k: r["params"].get(k) for k in keys}, []))[1].append(r)
        fby: dict[str, list[dict[str, Any]]] = {}
        for f in flows:
            fby.setdefault(f["run_key"], []).append(f)
        cby: dict[str, list[dict[str, Any]]] = {}
        for c in colls:
            cby.setdefault(c["run_key"], []).append(c)
        return keys, list(groups.values()), fby, cby

    def summary_rows(self, per_run: bool = False) -> list[dict[str, Any]]:
        """One dict per parameter combination (``simulation.seed`` aside: seeds are replicates):
        the parameters, ``runs`` (ok), ``incomplete`` (runs that ended with flows not finished),
        ``failed``, ``flows``, ``completed`` and ``unfinished``, the mean and p99 FCT (ps) and the
        median, p95 and p99 FCT slowdown (FCT / ideal FCT) of the finished flows (unfinished flows
        have no FCT: with ``unfinished`` > 0 these are of the finished flows only), the mean per run
        of the port totals ``drops``, ``ecn_marked``, ``pfc_xoff_sent`` and ``paused_ps``, and with
        collectives their mean ``collective_time_ps`` and ``busbw_Bps``; in grid order (or by
        parameter values, from :func:`load_sweep`). ``per_run``: one dict per run instead (with
        its ``run_key``, ``run_name`` and seed)."""
        keys, groups, fby, cby = self._groups()
        out = []
        for values, runs in groups:
            if per_run:
                for r in runs:
                    row = {"run_key": r["run_key"], "run_name": r["run_name"], **values,
                           SEED_KEY: r["params"].get(SEED_KEY, r["seed"])}
                    row.update(_stats([r], fby.get(r["run_key"], []), cby.get(r["run_key"], [])))
                    out.append(row)
                continue
            fl = [f for r in runs for f in fby.get(r["run_key"], [])]
            cl = [c for r in runs for c in cby.get(r["run_key"], [])]
            out.append({**values, **_stats(runs, fl, cl)})
        return out

    def summary(self) -> Any:
        """The summary as a pandas DataFrame: one row per parameter combination, the columns of
        :meth:`summary_rows` (the collective columns only when a run has a collective).
        :meth:`summary_text` is the same as a text table."""
        rows = self.summary_rows()
        keys = [k for k in rows[0] if k not in _STAT_KEYS] if rows else []
        stats = [k for k in _STAT_KEYS if k not in _COLLECTIVE_STATS or any(r[k] is not None for r in rows)]
        return _table(rows, [*keys, *stats])

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
        (:func:`rdmasim.plots.fct_slowdown_by_size`; the axis names the ideal FCT's definition,
        :meth:`ideal_fct`): a matplotlib Figure."""
        from rdmasim import plots

        return plots.fct_slowdown_by_size(self.flows_by_combination(), buckets=buckets,
                                          title=title or "FCT slowdown by flow size",
                                          ideal_fct=self.ideal_fct())

    def default_metric(self) -> str:
        """The metric :meth:`plot` draws by default: ``collective_time_ps`` when the runs have a
        collective, else ``median_slowdown``."""
        rows = self.summary_rows()
        return "collective_time_ps" if any(r["collective_time_ps"] is not None for r in rows) else \
            "median_slowdown"

    def plot(self, metric: str | None = None, x: str | None = None, title: str | None = None) -> Any:
        """``metric`` (a name of :data:`METRICS`, default :meth:`default_metric`) against the
        swept parameter ``x`` (default: the numeric parameter with the most values; sizes, rates
        and times count as numbers), one line per value of the other parameters, seeds pooled
        (with several seeds, bars from the smallest to the largest run's value). Points of
        combinations with unfinished flows are drawn hollow. A slowdown axis names the ideal FCT's
        definition (:meth:`ideal_fct`). A matplotlib Figure
        (:func:`rdmasim.plots.sweep_metric`)."""
        from rdmasim.plots.sweep import sweep_metric

        metric = metric or self.default_metric()
        if metric not in METRICS:
            raise ValueError(f"metric {metric!r}: not a sweep metric (allowed: {', '.join(METRICS)})")
        rows = self.summary_rows()
        keys = [k for k in rows[0] if k not in _STAT_KEYS] if rows else []
        if not keys:
            raise ValueError("the sweep has no parameter (other than simulation.seed) to plot against")
        if x is not None and x not in keys:
            raise ValueError(f"x {x!r}: not a parameter of this sweep (allowed: {', '.join(keys) or 'none'})")
        label, kind = METRICS[metric]
        ideal = self.ideal_fct() if metric.endswith("_slowdown") else None
        if ideal:  # the slowdown axis names the ideal FCT it divides by
            label = f"{label.split(' (')[0]} (FCT / ideal FCT, ideal: {ideal})"
        return sweep_metric(rows, keys, metric, label, kind, x=x, per_run=self.summary_rows(per_run=True),
                            title=title, names=short_names(keys))

    def summary_text(self) -> str:
        """The summary table as text: one line per parameter combination (the slowdown column
        names the ideal FCT's definition, :meth:`ideal_fct`), and a note on the combinations whose
        runs left flows unfinished."""
        rows = self.summary_rows()
        ideal = self.ideal_fct()
        keys = [k for k in rows[0] if k not in _STAT_KEYS] if rows else []
        colls = any(r["collective_time_ps"] is not None for r in rows)
        slowdown = "slowdown p50/p95/p99" + (f" (ideal: {ideal})" if ideal else "")
        head = [*keys, "runs", "incomplete", "failed", "mean FCT", "p99 FCT", slowdown, "completed", "drops",
                "ECN marks", "PFC XOFF"]
        if colls:
            head += ["collective", "busbw"]
        body = []
        for r in rows:
            star = "*" if r["unfinished"] else ""
            mean = "-" if r["mean_fct_ps"] is None else format_time(round(r["mean_fct_ps"])) + star
            p99 = "-" if r["p99_fct_ps"] is None else format_time(r["p99_fct_ps"]) + star
            sds = [r[k] for k in ("median_slowdown", "p95_slowdown", "p99_slowdown")]
            sd = "-" if sds[0] is None else "/".join(f"{x:.2f}" for x in sds) + star
            cells = [
                *(_show(r[k]) for k in keys),
                str(r["runs"]),
                str(r["incomplete"]),
                str(r["failed"]),
                mean,
                p99,
                sd,
                f"{r['completed']}/{r['flows']}",
                *(_count(r[c]) for c in ("drops", "ecn_marked", "pfc_xoff_sent")),
            ]
            if colls:
                t, bw = r["collective_time_ps"], r["busbw_Bps"]
                cells += ["-" if t is None else format_time(round(t)),
                          "-" if bw is None else f"{bw * 8 / 1e9:.2f} Gb/s"]
            body.append(cells)
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
        lines = ["  " + "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
        lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(b, widths, strict=True)) for b in body]
        unfinished = sum(r["unfinished"] for r in rows)
        if unfinished:
            lines.append(f"  * {unfinished} flows unfinished (still running at simulation.duration, or ended "
                         "by an error completion): FCT and slowdown are of the finished flows only")
        if any(r["drops"] is not None for r in rows):
            lines.append("  drops, ECN marks, PFC XOFF: per run (mean over the seeds), summed over every "
                         "port")
        return "\n".join(lines)


def _count(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if float(v).is_integer() or v >= 100 else f"{v:,.1f}"


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
    return show_value(v)


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
