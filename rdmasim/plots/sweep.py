"""A sweep's metric against one swept parameter, one line per value of the other parameters."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullLocator
from matplotlib.transforms import offset_copy

from rdmasim.plots._common import attach, flow_colors, new_figure, time_unit
from rdmasim.units import numeric_values

#: the key replicates vary (pooled, not a line of their own)
SEED_KEY = "simulation.seed"


def _show(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    return "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def _distinct(rows: Sequence[Mapping[str, Any]], key: str) -> list[Any]:
    seen: dict[str, Any] = {}
    for r in rows:
        seen.setdefault(repr(r.get(key)), r.get(key))
    return list(seen.values())


def _sorted(values: list[Any]) -> list[Any]:
    """Numeric values (:func:`numeric_values`) by value, others as given."""
    nums = numeric_values(values)
    if nums is None:
        return values
    return [v for _, v in sorted(zip(nums, values, strict=True), key=lambda p: p[0])]


def pick_x(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> str:
    """The parameter to put on x: the numeric one (:func:`numeric_values`) with the most values
    (at least 2), else the one with the most values; ties go to the first given."""
    best: tuple[int, int, int] | None = None
    chosen = keys[0]
    for i, k in enumerate(keys):
        vals = _distinct(rows, k)
        numeric = len(vals) >= 2 and numeric_values(vals) is not None
        score = (int(numeric), len(vals), -i)
        if best is None or score > best:
            best, chosen = score, k
    return chosen


def sweep_metric(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], metric: str, label: str,
                 kind: str = "ratio", x: str | None = None,
                 per_run: Sequence[Mapping[str, Any]] | None = None, title: str | None = None,
                 names: Mapping[str, str] | None = None) -> Figure:
    """``metric`` of each parameter combination (``rows``: one dict per combination with the
    parameters ``keys`` and the metric, e.g. :meth:`rdmasim.sweep.SweepResult.summary_rows`)
    against the parameter ``x`` (default :func:`pick_x`), one line per combination of the other
    parameters that vary, the legend naming them (``size=64KiB``, a key by its ``names`` entry,
    default the key path) under the key paths.

    ``label``: the y axis label; ``kind``: ``"time"`` (ps, drawn in a readable unit), ``"busbw"``
    (bytes/s, drawn in Gb/s), anything else as is. ``per_run`` (one dict per run, same keys):
    with several runs per point, a bar from the smallest to the largest run's value. A point whose
    row has ``unfinished`` flows is drawn hollow and the title counts them. Numeric x values
    (sizes, rates and times read with their unit) are placed by value (log scale over two decades
    or more, symlog from 0 over one), others evenly; ticks are the values as given.
    ``fig.rdmasim_data``: ``x``, ``metric``,
    ``lines`` ({legend label: (x values, y values)})."""
    if not rows:
        raise ValueError("no runs to plot")
    keys = [k for k in keys if k != SEED_KEY] or list(keys)
    if not keys:
        raise ValueError("no parameter to plot against")
    x = x or pick_x(rows, keys)
    xvals = _distinct(rows, x)
    nums = numeric_values(xvals)
    pos = {repr(v): (nums[i] if nums is not None else float(i)) for i, v in enumerate(xvals)}
    others = [k for k in keys if k != x and len(_distinct(rows, k)) > 1]
    short = {k: (names or {}).get(k, k) for k in [x, *others]}
    peak = max((abs(float(r[metric])) for r in [*rows, *(per_run or [])] if r.get(metric) is not None),
               default=0.0)
    if kind == "time":
        unit, scale = time_unit(peak)
        ylabel = f"{label} ({unit})"
    elif kind == "busbw":
        scale, ylabel = 1e9 / 8, label
    else:
        scale, ylabel = 1.0, label
    combos = list(itertools.product(*(_sorted(_distinct(rows, k)) for k in others))) or [()]
    colors = flow_colors(len(combos))
    fig, (ax,) = new_figure(figsize=(7.5, 4.6))
    lines: dict[str, tuple[list[float], list[float]]] = {}
    unfinished = 0
    most_runs = 1
    for n, (combo, color) in enumerate(zip(combos, colors, strict=True)):
        want = {k: repr(v) for k, v in zip(others, combo, strict=True)}

        def mine(r: Mapping[str, Any], want: dict[str, str] = want) -> bool:
            return all(repr(r.get(k)) == v for k, v in want.items())

        pts = sorted((pos[repr(r.get(x))], r) for r in rows if mine(r) and r.get(metric) is not None)
        if not pts:
            continue
        name = ", ".join(f"{short[k]}={_show(v)}" for k, v in zip(others, combo, strict=True)) or "all runs"
        xs = [p for p, _ in pts]
        ys = [float(r[metric]) / scale for _, r in pts]
        # values in no order (algorithms) are joined by a dotted line: the line only groups them
        ax.plot(xs, ys, "-" if nums is not None else ":", color=color, marker="o", ms=6, label=name)
        hollow = [(p, float(r[metric]) / scale) for p, r in pts if r.get("unfinished")]
        unfinished += sum(int(r.get("unfinished") or 0) for r in rows if mine(r))
        if hollow:
            ax.plot(*zip(*hollow, strict=True), "o", ms=6, mfc="white", mec=color, mew=1.5,
                    label="_unfinished")
        lines[name] = (xs, ys)
        if per_run:
            lo, hi, at = [], [], []
            for p, _ in pts:
                vals = [float(r[metric]) / scale for r in per_run if mine(r) and pos.get(repr(r.get(x))) == p
                        and r.get(metric) is not None]
                most_runs = max(most_runs, len(vals))
                if len(vals) > 1:
                    at.append(p)
                    lo.append(min(vals))
                    hi.append(max(vals))
            if at:  # each line's bars a few points aside, so bars at one x do not hide each other
                shift = offset_copy(ax.transData, fig=fig, x=(n - (len(combos) - 1) / 2) * 3.0, y=0.0,
                                    units="points")
                ax.vlines(at, lo, hi, color=color, lw=1.5, alpha=0.6, transform=shift)
                ax.update_datalim(np.column_stack([at + at, lo + hi]))  # (shifted artists do not count)
                ax.autoscale_view(scalex=False)
    _x_axis(ax, xvals, nums)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if kind != "ratio" or metric == "unfinished":
        ax.set_ylim(bottom=0)
    if others and lines:
        ax.legend(title=", ".join(others), fontsize="small", title_fontsize="small")
    head = title or f"{label.split(' (')[0]} by {short[x]}"
    if most_runs > 1:
        head += f" ({most_runs} seeds per point; bars: range over seeds)"
    if unfinished:
        head += f"\nhollow points: {unfinished} flows unfinished (not in the metric)"
    ax.set_title(head, fontsize="medium")
    return attach(fig, {"x": x, "metric": metric, "lines": lines})


def _x_axis(ax: Any, values: list[Any], nums: list[float] | None) -> None:
    """Ticks at the swept values, labelled as given; log (symlog with a 0) over 2+ decades."""
    if nums is None:
        at = [float(i) for i in range(len(values))]
        ax.set_xlim(-0.5, len(values) - 0.5)
    else:
        at = nums
        pos = np.array([v for v in nums if v > 0])
        if len(pos) >= 2 and min(nums) > 0 and pos.max() / pos.min() >= 100:
            ax.set_xscale("log")
        elif len(pos) >= 2 and min(nums) == 0 and pos.max() / pos.min() >= 10:  # 0, 0.001, 0.01
            ax.set_xscale("symlog", linthresh=float(pos.min()), linscale=0.5)
        # 8 % of the axis' width on each side, in the scale's own space (linear, log or symlog)
        scale = ax.xaxis.get_transform()
        lo, hi = scale.transform([min(nums), max(nums)])
        if hi > lo:
            pad = 0.08 * (hi - lo)
            ax.set_xlim(*scale.inverted().transform([lo - pad, hi + pad]))
    ax.xaxis.set_major_locator(FixedLocator(at))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(at, [_show(v) for v in values])
