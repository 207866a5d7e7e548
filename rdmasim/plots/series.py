"""Per-flow time series: goodput from cumulative acknowledged bytes, and DCQCN sending rates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from rdmasim.plots._common import (
    Columns,
    as_columns,
    as_float,
    attach,
    flow_colors,
    new_figure,
    require,
    time_unit,
)

#: Flows drawn individually when ``flows`` is not given (the aggregate always covers every flow).
DEFAULT_MAX_FLOWS = 16
_MAX_BINS = 2000


def _by_flow(cols: Columns, value: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """``{flow_id: (t_ps, value)}``, each sorted by time."""
    ids = cols["flow_id"].astype(np.int64)
    t = cols["t_ps"].astype(np.int64)
    v = as_float(cols[value])
    order = np.lexsort((t, ids))
    ids, t, v = ids[order], t[order], v[order]
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    bounds = np.flatnonzero(np.diff(ids)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(ids)], strict=True):
        if hi > lo:
            out[int(ids[lo])] = (t[lo:hi], v[lo:hi])
    return out


def _pick(all_ids: Sequence[int], flows: Sequence[int] | int | None) -> list[int]:
    if flows is None:
        flows = DEFAULT_MAX_FLOWS
    if isinstance(flows, int):
        return sorted(all_ids)[:flows]
    missing = [f for f in flows if f not in set(all_ids)]
    if missing:
        raise ValueError(f"flow(s) {missing} are not in the series")
    return list(flows)


def goodput(series: Any, bin_ps: int | None = None) -> dict[str, Any]:
    """Goodput of every flow, and their sum, on one grid of ``bin_ps``-wide bins.

    ``series``: long-format table with ``t_ps``, ``flow_id`` and cumulative ``bytes_acked``. A flow's
    acknowledged bytes at a bin edge are those of its last sample at or before the edge (0 before its
    first sample), so a bin's goodput is the bytes acknowledged within it over its width, and every
    byte acknowledged after the first sample time is counted once. ``bin_ps`` defaults to the median
    spacing of the distinct sample times (one bin per sample for a periodic sampler), widened so that
    there are at most 2000 bins; the last bin ends at the last sample (it may be narrower).
    Returns ``t_ps`` (bin starts), ``edges_ps`` (bin edges), ``bin_ps``, ``flows``
    ``{flow_id: Gb/s per bin}`` and ``aggregate`` (Gb/s per bin, all flows).
    """
    cols = as_columns(series)
    require(cols, ["t_ps", "flow_id", "bytes_acked"], "flow time series")
    per = _by_flow(cols, "bytes_acked")
    if not per:
        return {"t_ps": np.zeros(0, dtype=np.int64), "edges_ps": np.zeros(1, dtype=np.int64),
                "bin_ps": bin_ps or 0, "flows": {}, "aggregate": np.zeros(0)}
    times = np.unique(cols["t_ps"].astype(np.int64))
    t0, t1 = int(times[0]), int(times[-1])
    span = max(1, t1 - t0)
    if bin_ps is None:
        gaps = np.diff(times)
        bin_ps = int(np.median(gaps)) if len(gaps) else span
        bin_ps = max(bin_ps, -(-span // _MAX_BINS), 1)
    if bin_ps <= 0:
        raise ValueError(f"bin_ps must be > 0, got {bin_ps}")
    nbins = max(1, -(-span // bin_ps))
    edges = np.minimum(t0 + bin_ps * np.arange(nbins + 1, dtype=np.int64), t1 if t1 > t0 else t0 + 1)
    width_s = np.diff(edges) * 1e-12
    rates: dict[int, np.ndarray] = {}
    for fid, (t, acked) in per.items():
        idx = np.searchsorted(t, edges, side="right") - 1
        cum = np.where(idx >= 0, acked[np.clip(idx, 0, None)], 0.0)
        rates[fid] = np.diff(cum) * 8.0 / width_s / 1e9
    aggregate = np.sum(np.vstack(list(rates.values())), axis=0)
    return {"t_ps": edges[:-1], "edges_ps": edges, "bin_ps": int(bin_ps), "flows": rates,
            "aggregate": aggregate}


def goodput_over_time(series: Any, bin_ps: int | None = None, flows: Sequence[int] | int | None = None,
                      aggregate: bool = True, title: str | None = None) -> Figure:
    """Per-flow goodput (Gb/s) over time, plus the aggregate of all flows (black).

    ``series``: long-format table (``t_ps``, ``flow_id``, cumulative ``bytes_acked``; see
    :func:`goodput` for the binning). ``flows``: the flow ids to draw, or how many of the lowest ids
    (default 16); the aggregate always sums every flow. ``fig.rdmasim_data`` is :func:`goodput`'s
    result.
    """
    data = goodput(series, bin_ps)
    fig, (ax,) = new_figure(figsize=(9.0, 4.5))
    shown = _pick(list(data["flows"]), flows)
    t = data["t_ps"]
    unit, scale = time_unit(float(data["edges_ps"][-1]))
    edges = data["edges_ps"] / scale
    for fid, color in zip(shown, flow_colors(len(shown)), strict=True):
        ax.stairs(data["flows"][fid], edges, baseline=None, color=color, lw=1.0, label=f"flow {fid}")
    if aggregate and len(t):
        ax.stairs(data["aggregate"], edges, baseline=None, color="black", lw=2.0,
                  label="aggregate (all flows)")
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("goodput (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    n = len(data["flows"])
    sub = f"{len(shown)} of {n} flows shown" if len(shown) < n else f"{n} flows"
    bin_unit, bin_scale = time_unit(data["bin_ps"])
    ax.set_title(f"{title or 'Goodput over time'}\n({sub}; {data['bin_ps'] / bin_scale:.3g} {bin_unit} bins)",
                 fontsize="medium")
    if shown or aggregate:
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return attach(fig, data)


def dcqcn_rates(series: Any, flows: Sequence[int] | int | None = None, line_rate_bps: float | None = None,
                title: str | None = None) -> Figure:
    """DCQCN sending rate (Gb/s) of each flow over time, as steps from sample to sample.

    ``series``: long-format table (``t_ps``, ``flow_id``, ``rate_bps``; 0 means unlimited, i.e. line
    rate). With ``line_rate_bps`` those samples are drawn at the link rate (also shown as a dotted line);
    without it they are left out. ``flows``: ids to draw or how many of the lowest ids (default 16).
    ``fig.rdmasim_data`` is ``{flow_id: (t_ps, rate_bps)}`` as drawn (NaN where left out).
    """
    cols = as_columns(series)
    require(cols, ["t_ps", "flow_id", "rate_bps"], "flow time series")
    per = _by_flow(cols, "rate_bps")
    shown = _pick(list(per), flows)
    fig, (ax,) = new_figure(figsize=(9.0, 4.5))
    t_all = cols["t_ps"].astype(np.float64)
    unit, scale = time_unit(float(t_all.max() - min(0.0, t_all.min()))) if len(t_all) else ("µs", 1e6)
    drawn: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for fid, color in zip(shown, flow_colors(len(shown)), strict=True):
        t, rate = per[fid]
        rate = rate.copy()
        unlimited = rate <= 0
        rate[unlimited] = line_rate_bps if line_rate_bps else np.nan
        drawn[fid] = (t, rate)
        ax.step(t / scale, rate / 1e9, where="post", color=color, lw=1.0, label=f"flow {fid}")
    if line_rate_bps:
        ax.axhline(line_rate_bps / 1e9, color="0.3", ls=":", lw=1.0, label="line rate")
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("sending rate (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    sub = f"{len(shown)} of {len(per)} flows shown" if len(shown) < len(per) else f"{len(per)} flows"
    if not line_rate_bps:
        sub += "; unlimited (0) samples not drawn"
    ax.set_title(f"{title or 'DCQCN sending rate'}\n({sub})", fontsize="medium")
    if shown:
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return attach(fig, drawn)
