"""Flow completion times: slowdown by flow size, and the text summary the CLI prints."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from rdmasim.plots._common import (
    Columns,
    as_columns,
    as_float,
    attach,
    flow_colors,
    format_duration,
    format_size,
    is_table,
    new_figure,
    require,
)

#: The size buckets most FCT studies use: <10kB, 10–100kB, 100kB–1MB, 1–10MB, >10MB.
CLASSIC_BUCKETS: tuple[float, ...] = (0.0, 1e4, 1e5, 1e6, 1e7, math.inf)

Buckets = Sequence[float] | int | str | None


def size_column(cols: Columns) -> np.ndarray:
    """The flow sizes in bytes: the ``size_bytes`` column (``size`` in older tables)."""
    if "size_bytes" in cols:
        return as_float(cols["size_bytes"])
    require(cols, ["size"], "flow table without size_bytes")
    return as_float(cols["size"])


def finished_mask(cols: Columns) -> np.ndarray:
    """Which flows finished: ``finish_ps`` is a number >= 0 (not NaN, None or -1) and, when the table
    has a ``status`` column, the status is ``"ok"``."""
    require(cols, ["finish_ps"], "flow table")
    finish = as_float(cols["finish_ps"])
    done = np.isfinite(finish) & (finish >= 0)
    if "status" in cols:
        done &= np.array([str(s) == "ok" for s in cols["status"]], dtype=bool)
    return done


def _fct(cols: Columns) -> np.ndarray:
    if "fct_ps" in cols:
        fct = as_float(cols["fct_ps"])
    else:
        require(cols, ["start_ps"], "flow table without fct_ps")
        fct = as_float(cols["finish_ps"]) - as_float(cols["start_ps"])
    fct[~finished_mask(cols)] = np.nan
    return fct


def _slowdown(cols: Columns) -> np.ndarray:
    sd = as_float(cols["slowdown"]) if "slowdown" in cols else np.full(len(cols["finish_ps"]), np.nan)
    if "ideal_fct_ps" in cols:
        ideal = as_float(cols["ideal_fct_ps"])
        with np.errstate(divide="ignore", invalid="ignore"):
            sd = np.where(np.isfinite(sd), sd, _fct(cols) / np.where(ideal > 0, ideal, np.nan))
    sd[~finished_mask(cols)] = np.nan
    return sd


def bucket_edges(sizes: np.ndarray, buckets: Buckets = None) -> np.ndarray:
    """Size bucket edges in bytes (a bucket is ``lo <= size < hi``).

    ``buckets``: ``None`` for decades spanning the data (10^floor(log10 min) .. the next power of ten
    above the max), ``"classic"`` for :data:`CLASSIC_BUCKETS`, an int ``n`` for ``n`` log-spaced buckets
    over the data, or explicit increasing edges.
    """
    if isinstance(buckets, str):
        if buckets != "classic":
            raise ValueError(f"buckets: unknown name {buckets!r} (only 'classic')")
        return np.array(CLASSIC_BUCKETS)
    if buckets is not None and not isinstance(buckets, int):
        edges = np.asarray(buckets, dtype=np.float64)
        if edges.ndim != 1 or len(edges) < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError(f"bucket edges must be at least two increasing numbers, got {buckets!r}")
        return edges
    pos = sizes[np.isfinite(sizes) & (sizes > 0)]
    if len(pos) == 0:
        return np.array(CLASSIC_BUCKETS)
    lo = math.floor(math.log10(pos.min()))
    hi = math.floor(math.log10(pos.max())) + 1
    if buckets is None:
        return 10.0 ** np.arange(lo, hi + 1)
    if buckets < 1:
        raise ValueError(f"number of buckets must be >= 1, got {buckets}")
    edges = np.geomspace(pos.min(), pos.max(), buckets + 1)
    edges[-1] = np.nextafter(edges[-1], math.inf)  # the largest flow falls in the last bucket
    return edges


def _bucket_label(lo: float, hi: float) -> str:
    if lo <= 0:
        return f"<{format_size(hi)}"
    if math.isinf(hi):
        return f">{format_size(lo)}"
    return f"{format_size(lo)}–{format_size(hi)}"


def slowdown_buckets(flows: Any, buckets: Buckets = None) -> dict[str, Any]:
    """Median and p99 slowdown of the finished flows in each size bucket.

    ``flows``: a per-flow table (columns ``size_bytes``, ``finish_ps`` and ``slowdown`` or ``fct_ps`` +
    ``ideal_fct_ps``; see :func:`rdmasim.plots.as_columns`). ``buckets``: see :func:`bucket_edges`.
    Returns ``edges`` (bytes), ``labels``, ``count`` (finished flows per bucket), ``unfinished`` (per
    bucket), ``median`` and ``p99`` (``np.percentile(..., 99)``; NaN for an empty bucket) and
    ``unfinished_total`` (all unfinished flows, whatever their size).
    """
    cols = as_columns(flows)
    require(cols, ["finish_ps"], "flow table")
    if "slowdown" not in cols and "ideal_fct_ps" not in cols:
        raise ValueError("flow table needs a slowdown column or fct_ps and ideal_fct_ps")
    sizes = size_column(cols)
    sd = _slowdown(cols)
    ok = np.isfinite(sd)
    done = finished_mask(cols)
    edges = bucket_edges(sizes, buckets)
    nb = len(edges) - 1
    count = np.zeros(nb, dtype=np.int64)
    unfinished = np.zeros(nb, dtype=np.int64)
    median = np.full(nb, np.nan)
    p99 = np.full(nb, np.nan)
    for i in range(nb):
        inb = (sizes >= edges[i]) & (sizes < edges[i + 1])
        vals = sd[inb & ok]
        count[i] = len(vals)
        unfinished[i] = int(np.sum(inb & ~done))
        if len(vals):
            median[i] = float(np.median(vals))
            p99[i] = float(np.percentile(vals, 99))
    return {
        "edges": edges,
        "labels": [_bucket_label(edges[i], edges[i + 1]) for i in range(nb)],
        "count": count,
        "unfinished": unfinished,
        "median": median,
        "p99": p99,
        "unfinished_total": int(np.sum(~done)),
    }


def split_tables(flows: Any, by: str | None = None, label: str | None = None) -> dict[str, Columns]:
    """One table or ``{label: table}`` as ``{label: columns}``; with ``by`` (e.g. ``"group"``) a
    single table is split by the values of that column."""
    if isinstance(flows, Mapping) and flows and all(is_table(v) for v in flows.values()):
        return {str(k): as_columns(v) for k, v in flows.items()}
    cols = as_columns(flows)
    if by is None:
        return {label or "all flows": cols}
    require(cols, [by], "flow table")
    keys = np.array([str(v) for v in cols[by]])
    return {k: {n: c[keys == k] for n, c in cols.items()} for k in sorted(set(keys.tolist()))}


def slowdown_axis_label(flows: Any = None, ideal_fct: str | None = None) -> str:
    """The slowdown axis' label, naming the ideal FCT's definition: ``ideal_fct``, else a
    DataFrame's ``attrs["ideal_fct"]`` (``RunResult.to_pandas`` sets it), else none named."""
    if ideal_fct is None:
        tables = flows.values() if isinstance(flows, dict) else [flows]
        found = {getattr(t, "attrs", {}).get("ideal_fct") for t in tables} - {None}
        ideal_fct = found.pop() if len(found) == 1 else None
    return "FCT slowdown (FCT / ideal FCT" + (f", ideal: {ideal_fct})" if ideal_fct else ")")


def fct_slowdown_by_size(flows: Any, buckets: Buckets = None, label: str | None = None,
                         by: str | None = None, title: str | None = None,
                         ideal_fct: str | None = None) -> Figure:
    """Median (solid) and p99 (dashed) FCT slowdown per flow-size bucket, log y.

    ``flows``: a per-flow table, or ``{label: table}`` to compare runs (e.g. DCQCN on vs off); ``by``
    splits one table by a column such as ``"group"``. ``buckets``: see :func:`bucket_edges`; when
    comparing, the edges come from all tables together. Unfinished flows are excluded and counted
    in the title; the tick labels carry the flows per bucket. ``fig.rdmasim_data`` is
    ``{label: slowdown_buckets(...)}``. The slowdown axis names the ideal FCT's definition
    (``ideal_fct``: ``"wire"`` or ``"payload"``, see docs/scenarios.md; by default the one a
    DataFrame's ``attrs["ideal_fct"]`` gives).
    """
    axis_label = slowdown_axis_label(flows, ideal_fct)
    tables = split_tables(flows, by=by, label=label)
    if buckets is None or isinstance(buckets, int):
        all_sizes = np.concatenate([size_column(c) for c in tables.values()
                                    if "size" in c or "size_bytes" in c] or [np.zeros(0)])
        edges: Buckets = bucket_edges(all_sizes, buckets).tolist()
    else:
        edges = buckets
    stats = {name: slowdown_buckets(cols, edges) for name, cols in tables.items()}
    sizes = np.unique(np.concatenate([size_column(c)[finished_mask(c)] for c in tables.values()]
                                     or [np.zeros(0)]))
    if len(sizes) == 1:
        return _slowdown_cdf(tables, stats, float(sizes[0]), title, axis_label)
    first = next(iter(stats.values()))
    nb = len(first["labels"])
    fig, (ax,) = new_figure(figsize=(min(12.0, max(7.0, 1.2 * nb + 2.5)), 4.8))
    x = np.arange(nb, dtype=float)
    colors = flow_colors(len(stats))
    width = 0.2 / (len(stats) - 1) if len(stats) > 1 else 0.0
    for k, ((name, st), color) in enumerate(zip(stats.items(), colors, strict=True)):
        xs = x + (k - (len(stats) - 1) / 2) * width
        prefix = f"{name}: " if len(stats) > 1 else ""
        ax.plot(xs, st["median"], "-o", color=color, label=f"{prefix}median")
        ax.plot(xs, st["p99"], "--^", color=color, label=f"{prefix}p99")
    _slowdown_axis(ax, np.concatenate([np.r_[st["median"], st["p99"]] for st in stats.values()]), "y")
    ticks = []
    for i in range(nb):
        counts = " / ".join(str(int(st["count"][i])) for st in stats.values())
        ticks.append(f"{first['labels'][i]}\nn={counts}")
    ax.set_xticks(x, ticks)
    ax.set_xlim(-0.5, nb - 0.5)
    ax.set_xlabel("flow size (bytes)" + (" — n: " + " / ".join(stats) if len(stats) > 1 else ""))
    ax.set_ylabel(axis_label)
    ax.grid(True, which="major", axis="y", alpha=0.3)
    ax.legend(fontsize="small", ncols=2 if len(stats) > 2 else 1)
    unf = ", ".join(f"{name} {st['unfinished_total']}" for name, st in stats.items()) \
        if len(stats) > 1 else str(first["unfinished_total"])
    ax.set_title((title or "FCT slowdown by flow size") + f"\n(unfinished flows excluded: {unf})",
                 fontsize="medium")
    return attach(fig, stats)


def _slowdown_axis(ax: Any, values: np.ndarray, which: str) -> None:
    """Slowdown axis limits and scale from the data: log when the values span more than a decade
    (ticks at 1, 2, 5 x 10^k), else linear around the values (so 1.02 vs 1.03 is readable)."""
    v = values[np.isfinite(values) & (values > 0)]
    set_scale = ax.set_yscale if which == "y" else ax.set_xscale
    axis = ax.yaxis if which == "y" else ax.xaxis
    set_lim = ax.set_ylim if which == "y" else ax.set_xlim
    if len(v) and v.max() / v.min() > 10:
        set_scale("log")
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:g}"))
        axis.set_minor_formatter(NullFormatter())
        (ax.axhline if which == "y" else ax.axvline)(1.0, color="0.6", lw=0.8, zorder=0)
        return
    digits = 2
    if len(v):
        lo, hi = float(v.min()), float(v.max())
        pad = max((hi - lo) * 0.1, abs(hi) * 0.002, 1e-6)
        set_lim(lo - pad, hi + pad)
        digits = max(2, 1 - math.floor(math.log10(pad)))  # ticks distinct at the axis' resolution
    axis.set_major_formatter(FuncFormatter(lambda t, _: f"{t:.{digits}f}"))


def _slowdown_cdf(tables: dict[str, Columns], stats: dict[str, Any], size: float,
                  title: str | None, axis_label: str) -> Figure:
    """Every finished flow has the same size: the CDF of slowdown per table (a by-size plot would
    be one point)."""
    fig, (ax,) = new_figure(figsize=(8.0, 4.8))
    colors = flow_colors(len(tables))
    allv = []
    for (name, cols), color in zip(tables.items(), colors, strict=True):
        sd = np.sort(_slowdown(cols)[np.isfinite(_slowdown(cols))])
        allv.append(sd)
        if len(sd):
            y = np.arange(1, len(sd) + 1) / len(sd)
            ax.step(sd, y, where="post", color=color, lw=1.5, label=f"{name} (n={len(sd)})")
            ax.plot(sd, np.full(len(sd), -0.04), "|", color=color, ms=8, alpha=0.6)
    every = np.concatenate(allv) if allv else np.zeros(0)
    _slowdown_axis(ax, every, "x")
    if len(every) > 1 and every.max() - every.min() <= 1e-9 * every.max():
        ax.text(0.02, 0.95, f"all {len(every)} flows: slowdown {every[0]:.6g}", transform=ax.transAxes,
                va="top", fontsize="small")
    ax.set_ylim(-0.08, 1.02)
    ax.set_xlabel(axis_label)
    ax.set_ylabel("fraction of flows (CDF)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    unf = ", ".join(f"{name} {st['unfinished_total']}" for name, st in stats.items()) \
        if len(stats) > 1 else str(next(iter(stats.values()))["unfinished_total"])
    ax.set_title((title or "FCT slowdown") + f"\n(every flow is {int(size):,} bytes: CDF of slowdown, "
                 f"ticks below: one per flow; unfinished flows excluded: {unf})", fontsize="medium")
    return attach(fig, stats)


def summary_table(flows: Any, by: str | None = None) -> str:
    """A fixed-width text table for the CLI: one row per table (``{label: table}`` or ``by``) with
    flows, completed, mean / median / p99 FCT, p99 slowdown, and the totals of ``retx_pkts`` and
    ``cnps`` (``-`` when a column is absent or nothing finished)."""
    tables = split_tables(flows, by=by)
    head = ("", "flows", "completed", "mean FCT", "median FCT", "p99 FCT", "p99 slowdown", "retx", "CNPs")
    rows: list[tuple[str, ...]] = []
    for name, cols in tables.items():
        n = len(next(iter(cols.values()))) if cols else 0
        fct = _fct(cols)
        sd = _slowdown(cols)
        fct = fct[np.isfinite(fct)]
        sd = sd[np.isfinite(sd)]

        def total(col: str, cols: Columns = cols) -> str:
            if col not in cols:
                return "-"
            v = as_float(cols[col])
            return f"{int(np.nansum(v)):,}"

        rows.append((
            name, f"{n:,}", f"{int(np.sum(finished_mask(cols))):,}",
            format_duration(float(np.mean(fct))) if len(fct) else "-",
            format_duration(float(np.median(fct))) if len(fct) else "-",
            format_duration(float(np.percentile(fct, 99))) if len(fct) else "-",
            f"{np.percentile(sd, 99):.2f}" if len(sd) else "-",
            total("retx_pkts"), total("cnps"),
        ))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = []
    for r in [head, *rows]:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    ideal = slowdown_axis_label(flows)
    if ideal.endswith("ideal FCT)"):  # no definition known: none named
        return "\n".join(lines)
    return "\n".join([*lines, "slowdown: " + ideal.removeprefix("FCT slowdown (").removesuffix(")")])
