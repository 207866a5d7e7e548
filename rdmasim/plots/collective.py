"""Collective completion time against a swept parameter (loss rate, link rate, ...)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from rdmasim.plots._common import attach, new_figure, time_unit

Analytic = Callable[[np.ndarray], Any] | tuple[Sequence[float], Sequence[float]] | Sequence[float] | None


def collective_stats(x: Sequence[float], times: Sequence[Sequence[float]]) -> dict[str, np.ndarray]:
    """Per x: ``n``, ``mean_ps``, ``min_ps``, ``max_ps`` of the completion times (NaN when none)."""
    if len(x) != len(times):
        raise ValueError(f"{len(x)} x values but {len(times)} lists of times")
    xs = np.asarray(x, dtype=np.float64)
    n = np.zeros(len(xs), dtype=np.int64)
    mean, lo, hi = (np.full(len(xs), np.nan) for _ in range(3))
    for i, ts in enumerate(times):
        v = np.asarray(ts, dtype=np.float64).reshape(-1)
        v = v[np.isfinite(v)]
        n[i] = len(v)
        if len(v):
            mean[i], lo[i], hi[i] = v.mean(), v.min(), v.max()
    return {"x": xs, "n": n, "mean_ps": mean, "min_ps": lo, "max_ps": hi}


def _analytic_curve(analytic: Analytic, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    if analytic is None:
        return None
    if callable(analytic):
        fine = np.linspace(xs.min(), xs.max(), 200)
        if np.all(xs > 0) and xs.max() / xs.min() >= 100:
            fine = np.geomspace(xs.min(), xs.max(), 200)
        return fine, np.asarray([float(analytic(v)) for v in fine])
    if isinstance(analytic, tuple) and len(analytic) == 2 and np.ndim(analytic[0]) == 1:
        ax_, ay = np.asarray(analytic[0], dtype=np.float64), np.asarray(analytic[1], dtype=np.float64)
        if ax_.shape != ay.shape:
            raise ValueError("analytic (x, y) must have equal lengths")
        return ax_, ay
    ay = np.asarray(analytic, dtype=np.float64)
    if ay.shape != xs.shape:
        raise ValueError(f"analytic values must match x ({len(xs)}), got shape {ay.shape}")
    return xs, ay


def collective_time(x: Sequence[float], times: Sequence[Sequence[float]], xlabel: str,
                    analytic: Analytic = None, points: bool = False, logx: bool | None = None,
                    title: str | None = None, analytic_label: str = "analytic") -> Figure:
    """Mean completion time vs ``x`` with min–max error bars, and an optional analytical curve.

    ``x``: the swept values; ``times``: per x, the completion times in ps of the repetitions (runs
    with no finite time are left out). ``xlabel``: the x axis label with its unit, e.g. ``"loss rate"``.
    ``analytic``: ``f(x) -> ps``, or ``(xs, ps)``, or one value in ps per ``x``. ``points=True`` also
    draws every repetition. ``logx``: default log when all x > 0 and they span >= 2 decades.
    ``fig.rdmasim_data`` is :func:`collective_stats`'s result.
    """
    st = collective_stats(x, times)
    xs = st["x"]
    curve = _analytic_curve(analytic, xs) if len(xs) else None
    peak = np.nanmax(st["max_ps"], initial=0.0)
    if curve is not None:
        peak = max(peak, float(np.nanmax(curve[1], initial=0.0)))
    unit, scale = time_unit(peak)
    fig, (ax,) = new_figure(figsize=(7.5, 4.5))
    ok = st["n"] > 0
    if points:
        for xi, ts in zip(xs, times, strict=True):
            v = np.asarray(ts, dtype=np.float64).reshape(-1)
            ax.plot(np.full(len(v), xi), v / scale, ".", color="tab:blue", alpha=0.35, ms=4)
    yerr = np.vstack([st["mean_ps"][ok] - st["min_ps"][ok], st["max_ps"][ok] - st["mean_ps"][ok]]) / scale
    ax.errorbar(xs[ok], st["mean_ps"][ok] / scale, yerr=yerr, fmt="-o", color="tab:blue", capsize=3,
                label="simulated: mean, min–max")
    if curve is not None:
        ax.plot(curve[0], curve[1] / scale, "--", color="tab:red", label=analytic_label)
    if logx is None:
        logx = bool(len(xs) and np.all(xs > 0) and xs.max() / xs.min() >= 100)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"completion time ({unit})")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    reps = f"{int(st['n'].min())}–{int(st['n'].max())}" if len(xs) and st["n"].min() != st["n"].max() \
        else (str(int(st["n"][0])) if len(xs) else "0")
    ax.set_title(f"{title or 'Collective completion time'}\n({reps} runs per point)", fontsize="medium")
    return attach(fig, st)
