"""Per-flow time series: goodput from cumulative acknowledged bytes, and DCQCN sending rates."""

from __future__ import annotations

import math
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

#: Flows drawn individually when ``flows`` is not given (those with the most bytes acknowledged;
#: the aggregate always covers every flow).
DEFAULT_MAX_FLOWS = 8
#: Flows a DCQCN rate plot draws as separate lines before it draws a min-max band and the median.
MAX_RATE_LINES = 6
#: About this many bins when neither ``bin_ps`` nor ``bins`` is given.
DEFAULT_BINS = 150
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


def _pick(all_ids: Sequence[int], flows: Sequence[int] | int | None,
          weight: dict[int, float] | None = None) -> list[int]:
    """The flows to draw: the ids given, or the ``flows`` (default :data:`DEFAULT_MAX_FLOWS`) with
    the largest ``weight`` (ties and no weight: the lowest ids), in id order."""
    if flows is None:
        flows = DEFAULT_MAX_FLOWS
    if isinstance(flows, int):
        if flows < 0:
            raise ValueError(f"flows: the number of flows to draw must be >= 0, got {flows}")
        ids = sorted(all_ids)
        if weight is not None:
            ids = sorted(ids, key=lambda f: (-weight.get(f, 0.0), f))
        return sorted(ids[:flows])
    missing = [f for f in flows if f not in set(all_ids)]
    if missing:
        raise ValueError(f"flow(s) {missing} are not in the series")
    return list(flows)


def nice_bin_ps(span_ps: float, bins: int = DEFAULT_BINS, at_least_ps: int = 1) -> int:
    """A bin width for about ``bins`` bins over ``span_ps``: rounded up to 1, 2 or 5 times a power
    of ten picoseconds, and at least ``at_least_ps`` (e.g. the sampling period)."""
    raw = max(float(span_ps) / max(1, bins), float(at_least_ps), 1.0)
    exp = 10.0 ** math.floor(math.log10(raw))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * exp >= raw * (1 - 1e-12):
            return max(int(round(m * exp)), int(at_least_ps), 1)
    return int(raw)  # pragma: no cover


def with_flow_ends(series: Any, flow_table: Any) -> Columns:
    """The series with each finished flow of ``flow_table`` completed: a sample of 0 bytes at its
    start and one of its delivered bytes at its finish, so that flows that started and ended between
    two samples, and the bytes after a flow's last sample, are in the goodput too.

    ``flow_table``: a per-flow table with ``flow_id``, ``start_ps``, ``finish_ps`` and
    ``bytes_delivered`` (or ``size_bytes`` / ``size``)."""
    cols = as_columns(series)
    ft = as_columns(flow_table)
    size_col = next((c for c in ("bytes_delivered", "bytes_delivered_bytes", "size_bytes", "size")
                     if c in ft), None)
    require(ft, ["flow_id", "start_ps", "finish_ps"], "flow table")
    if size_col is None:
        raise ValueError(f"flow table lacks a bytes_delivered or size_bytes column; it has {sorted(ft)}")
    fin = as_float(ft["finish_ps"])
    done = np.isfinite(fin) & (fin >= 0)
    ids = ft["flow_id"].astype(np.int64)[done]
    start = as_float(ft["start_ps"])[done].astype(np.int64)
    end = fin[done].astype(np.int64)
    nbytes = as_float(ft[size_col])[done]
    return {
        "t_ps": np.concatenate([cols["t_ps"].astype(np.int64), start, end]),
        "flow_id": np.concatenate([cols["flow_id"].astype(np.int64), ids, ids]),
        "bytes_acked": np.concatenate([as_float(cols["bytes_acked"]), np.zeros(len(ids)), nbytes]),
    }


def goodput(series: Any, bin_ps: int | None = None, bins: int | None = None) -> dict[str, Any]:
    """Goodput of every flow, and their sum, on one grid of ``bin_ps``-wide bins.

    ``series``: long-format table with ``t_ps``, ``flow_id`` and cumulative ``bytes_acked``. A flow's
    acknowledged bytes at a bin edge are those of its last sample at or before the edge (0 before its
    first sample), so a bin's goodput is the bytes acknowledged within it over its width, and every
    byte acknowledged after the first sample time is counted once. The bin width is ``bin_ps``, or
    the run's span over ``bins``, or by default :func:`nice_bin_ps` for about
    :data:`DEFAULT_BINS` bins (never narrower than the median sample spacing, at most 2000 bins);
    the last bin ends at the last sample (it may be narrower).
    Returns ``t_ps`` (bin starts), ``edges_ps`` (bin edges), ``bin_ps``, ``flows``
    ``{flow_id: Gb/s per bin}``, ``bytes`` ``{flow_id: bytes acknowledged}`` and ``aggregate``
    (Gb/s per bin, all flows).
    """
    cols = as_columns(series)
    require(cols, ["t_ps", "flow_id", "bytes_acked"], "flow time series")
    if bins is not None and bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    per = _by_flow(cols, "bytes_acked")
    if not per:
        return {"t_ps": np.zeros(0, dtype=np.int64), "edges_ps": np.zeros(1, dtype=np.int64),
                "bin_ps": bin_ps or 0, "flows": {}, "bytes": {}, "aggregate": np.zeros(0)}
    times = np.unique(cols["t_ps"].astype(np.int64))
    t0, t1 = int(times[0]), int(times[-1])
    span = max(1, t1 - t0)
    if bin_ps is None:
        if bins is not None:
            bin_ps = max(1, -(-span // bins))
        else:
            gaps = np.diff(times)
            period = int(np.median(gaps)) if len(gaps) else 1
            bin_ps = max(nice_bin_ps(span, DEFAULT_BINS, period), -(-span // _MAX_BINS))
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
    nbytes = {fid: float(np.nanmax(a) - a[0]) if len(a) else 0.0 for fid, (_, a) in per.items()}
    return {"t_ps": edges[:-1], "edges_ps": edges, "bin_ps": int(bin_ps), "flows": rates, "bytes": nbytes,
            "aggregate": aggregate}


def _rate_label(bps: float) -> str:
    return f"{bps / 1e9:g} Gb/s"


def goodput_over_time(series: Any, bin_ps: int | None = None, flows: Sequence[int] | int | None = None,
                      aggregate: bool = True, title: str | None = None, *, bins: int | None = None,
                      flow_table: Any = None, line_rate_bps: float | None = None,
                      capacity_bps: float | None = None, capacity_label: str | None = None) -> Figure:
    """Goodput (Gb/s) over time: the aggregate of all flows (top panel) and the flows with the most
    bytes acknowledged, one line each (bottom panel).

    ``series``: long-format table (``t_ps``, ``flow_id``, cumulative ``bytes_acked``; see
    :func:`goodput` for the binning, ``bin_ps`` / ``bins``). ``flow_table``: the run's per-flow
    table; with it every flow is counted (see :func:`with_flow_ends`), also those too short to be
    sampled. ``flows``: the flow ids to draw, or how many of those with the most bytes (default
    :data:`DEFAULT_MAX_FLOWS`); the caption says how many are left out. ``line_rate_bps``: drawn in the
    per-flow panel (no flow can exceed its link); ``capacity_bps``: drawn in the aggregate panel
    (e.g. the sum of the receivers' link rates), named by ``capacity_label``.
    More than :data:`MAX_RATE_LINES` flows whose goodputs coincide are drawn as one min-max band
    with the median. ``fig.rdmasim_data`` is :func:`goodput`'s result plus ``shown`` (the ids
    drawn), ``total_flows`` and ``band`` (whether the band was drawn).
    """
    if flow_table is not None:
        series = with_flow_ends(series, flow_table)
        total = len(as_columns(flow_table)["flow_id"])
    else:
        total = None
    data = goodput(series, bin_ps, bins)
    n = total if total is not None else len(data["flows"])
    shown = _pick(list(data["flows"]), flows, data["bytes"])
    rows = 2 if aggregate else 1
    fig, axes = new_figure(rows, figsize=(9.0, 6.0 if aggregate else 4.5), sharex=True,
                           height_ratios=[1.0, 1.3] if aggregate else None)
    unit, scale = time_unit(float(data["edges_ps"][-1]))
    edges = data["edges_ps"] / scale
    ax_flows = axes[-1]
    if aggregate:
        ax = axes[0]
        if len(data["t_ps"]):
            ax.stairs(data["aggregate"], edges, baseline=None, color="black", lw=1.5,
                      label=f"aggregate of all {n} flows")
        if capacity_bps:
            label = capacity_label or f"capacity ({_rate_label(capacity_bps)})"
            peak = float(np.max(data["aggregate"], initial=0.0)) * 1e9
            if peak * 2.5 >= capacity_bps:
                ax.axhline(capacity_bps / 1e9, color="tab:red", ls=":", lw=1.2, label=label)
            else:  # a line far above the data would flatten it: name the capacity instead
                ax.plot([], [], color="tab:red", ls=":", lw=1.2, label=f"{label}:\nabove the plot")
        ax.set_ylabel("aggregate (Gb/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ranked = sorted(data["bytes"].values(), reverse=True)
    # by default the flows with the most bytes are drawn; when the cut falls among flows of equal
    # bytes (a collective: every flow the same size) that choice would be arbitrary - the first
    # stage's flows, say, and an empty panel after them - so draw the flows running in each bin
    running = (flows is None and len(ranked) > DEFAULT_MAX_FLOWS and len(data["t_ps"]) > 0
               and math.isclose(ranked[DEFAULT_MAX_FLOWS - 1], ranked[DEFAULT_MAX_FLOWS], rel_tol=1e-9))
    if running:
        shown = []
    m = np.vstack([data["flows"][f] for f in shown]) if len(shown) > 1 and len(data["t_ps"]) else None
    together = False
    if running:
        lo, med, hi, count = _running_band(data["flows"])
        ax_flows.fill_between(edges[:-1], lo, hi, step="post", color="tab:blue", alpha=0.25, lw=0,
                              label="min-max over the flows running")
        ax_flows.stairs(med, edges, baseline=None, color="tab:blue", lw=1.5, label="median running flow")
        data["running"] = {"min": lo, "median": med, "max": hi, "count": count}
    elif m is not None and len(shown) > MAX_RATE_LINES:
        spread = m.max(axis=0) - m.min(axis=0)
        together = bool(np.mean(spread <= 0.05 * max(float(m.max()), 1e-12)) >= 0.9)
    if together and m is not None:  # flows that coincide: one band, not lines behind a long legend
        ax_flows.fill_between(edges[:-1], m.min(axis=0), m.max(axis=0), step="post", color="tab:blue",
                              alpha=0.25, lw=0, label=f"min-max over {len(shown)} flows")
        ax_flows.stairs(np.median(m, axis=0), edges, baseline=None, color="tab:blue", lw=1.5,
                        label="median flow")
    else:
        for fid, color in zip(shown, flow_colors(len(shown)), strict=True):
            ax_flows.stairs(data["flows"][fid], edges, baseline=None, color=color, lw=1.0,
                            label=f"flow {fid}")
    if line_rate_bps:
        ax_flows.axhline(line_rate_bps / 1e9, color="tab:red", ls=":", lw=1.2,
                         label=f"link rate ({_rate_label(line_rate_bps)})")
    ax_flows.set_xlabel(f"time ({unit})")
    ax_flows.set_ylabel("per flow (Gb/s)")
    ax_flows.set_ylim(bottom=0)
    ax_flows.grid(True, alpha=0.3)
    if shown or line_rate_bps:
        ax_flows.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    if running:
        sub = (f"all {n} flows moved {_bytes_label(ranked[0])}, so none is singled out: below, the "
               f"flows running in each bin\n(at most {int(np.max(count))} at once; a bin in which "
               "flows start or end reads low)")
    elif len(shown) < n:
        how = "those chosen" if not isinstance(flows, int) and flows is not None else \
            "those with the most bytes"
        sub = (f"{len(shown)} of {n} flows drawn one by one ({how});\n"
               f"the other {n - len(shown)} are only in the aggregate")
    else:
        sub = f"all {n} flows drawn"
    if together:
        sub += "; their goodputs coincide: one band"
    bin_unit, bin_scale = time_unit(data["bin_ps"])
    bins_text = f"{data['bin_ps'] / bin_scale:.3g} {bin_unit} bins"
    axes[0].set_title(f"{title or 'Goodput over time'}\n({sub}; {bins_text})", fontsize="medium")
    return attach(fig, {**data, "shown": shown, "total_flows": n, "band": together or running})


def _bytes_label(n: float) -> str:
    for name, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if n >= scale:
            return f"{n / scale:.3g} {name}"
    return f"{n:.0f} bytes"


def _running_band(rates: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per bin, the min, median and max goodput over the flows running in it (from a flow's first
    bin with goodput to its last; NaN where none runs), and how many run."""
    m = np.vstack(list(rates.values()))
    live = np.zeros(m.shape, dtype=bool)
    for k, row in enumerate(m):
        nz = np.flatnonzero(row > 0)
        if len(nz):
            live[k, nz[0]:nz[-1] + 1] = True
    masked = np.where(live, m, np.nan)
    count = live.sum(axis=0)
    lo, med, hi = (np.full(m.shape[1], np.nan) for _ in range(3))
    some = count > 0
    lo[some] = np.nanmin(masked[:, some], axis=0)
    med[some] = np.nanmedian(masked[:, some], axis=0)
    hi[some] = np.nanmax(masked[:, some], axis=0)
    return lo, med, hi, count


def dcqcn_rates(series: Any, flows: Sequence[int] | int | None = None, line_rate_bps: float | None = None,
                title: str | None = None, *, max_lines: int = MAX_RATE_LINES,
                fair_share_bps: float | None = None, fair_share_label: str | None = None) -> Figure:
    """DCQCN sending rate (Gb/s) of each flow over time, as steps from sample to sample.

    ``series``: long-format table (``t_ps``, ``flow_id``, ``rate_bps``; 0 means no limit: the flow
    sends at line rate). With ``line_rate_bps`` those samples are drawn at the line rate (also shown
    as a dotted line); without it they are left out and the caption says so. ``flows``: ids to draw
    or how many of the lowest ids (default all). Up to ``max_lines`` flows are drawn one line each;
    more are drawn as the min-max band over the flows with their median (a flow counts from its
    first to its last sample). ``fig.rdmasim_data`` is ``{flow_id: (t_ps, rate_bps)}`` as drawn (NaN
    where left out), plus ``"band"`` (t_ps, min, median, max in b/s) when a band is drawn.
    ``fair_share_bps`` draws a dashed line at the rate each flow would get from an equal share of
    the bottleneck (e.g. the receiver's link over the flows into it), named by ``fair_share_label``,
    so that a ceiling below it reads as what it is: the flows together sending less than the link.
    """
    cols = as_columns(series)
    require(cols, ["t_ps", "flow_id", "rate_bps"], "flow time series")
    per = _by_flow(cols, "rate_bps")
    shown = _pick(list(per), len(per) if flows is None else flows)
    fig, (ax,) = new_figure(figsize=(9.0, 5.0))
    t_all = cols["t_ps"].astype(np.float64)
    unit, scale = time_unit(float(t_all.max() - min(0.0, t_all.min()))) if len(t_all) else ("µs", 1e6)
    drawn: dict[Any, Any] = {}
    for fid in shown:
        t, rate = per[fid]
        rate = rate.copy()
        rate[rate <= 0] = line_rate_bps if line_rate_bps else np.nan
        drawn[fid] = (t, rate)
    if len(shown) <= max_lines:
        for fid, color in zip(shown, flow_colors(len(shown)), strict=True):
            t, rate = drawn[fid]
            ax.step(t / scale, rate / 1e9, where="post", color=color, lw=1.0, label=f"flow {fid}")
        what = "one line per flow"
    else:
        grid = np.unique(np.concatenate([drawn[f][0] for f in shown]))
        m = np.full((len(shown), len(grid)), np.nan)
        for k, fid in enumerate(shown):
            t, rate = drawn[fid]
            idx = np.searchsorted(t, grid, side="right") - 1
            live = (idx >= 0) & (grid <= t[-1])
            m[k, live] = rate[np.clip(idx, 0, None)][live]
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                lo, med, hi = np.nanmin(m, axis=0), np.nanmedian(m, axis=0), np.nanmax(m, axis=0)
        ax.fill_between(grid / scale, lo / 1e9, hi / 1e9, step="post", color="tab:blue", alpha=0.25,
                        lw=0, label=f"min-max over {len(shown)} flows")
        ax.step(grid / scale, med / 1e9, where="post", color="tab:blue", lw=1.5, label="median flow")
        drawn["band"] = (grid, lo, med, hi)
        ok = np.isfinite(hi - lo)
        close = (hi - lo)[ok] <= 0.01 * np.nanmax(hi) if ok.any() else np.ones(1, dtype=bool)
        what = (f"{len(shown)} flows: min-max band and median"
                + ("; their rates coincide: one line" if close.mean() >= 0.95 else ""))
    if line_rate_bps:
        ax.axhline(line_rate_bps / 1e9, color="0.3", ls=":", lw=1.0,
                   label=f"line rate ({_rate_label(line_rate_bps)})")
    if fair_share_bps:
        ax.axhline(fair_share_bps / 1e9, color="tab:green", ls="--", lw=1.0,
                   label=fair_share_label or f"fair share ({_rate_label(fair_share_bps)})")
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("sending rate (Gb/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    sub = what if len(shown) == len(per) else f"{what}; {len(shown)} of {len(per)} flows"
    if line_rate_bps:
        sub += "; a flow not limited by DCQCN is drawn at line rate"
    else:
        sub += "; samples without a DCQCN limit (line rate) are not drawn"
    how = "DCQCN ceiling: line rate at first, cut by each CNP, recovering in steps between CNPs"
    if fair_share_bps and "band" in drawn:
        med_now = drawn["band"][2]
        late = med_now[len(med_now) // 2:]
        late = late[np.isfinite(late)]
        if len(late) and float(np.median(late)) < 0.9 * fair_share_bps:
            how += ("\nmedian below the fair share (dashed) in the run's second half: "
                    "the flows under-use the bottleneck")
    cap = f"{title or 'DCQCN sending rate'}\n({sub})\n{how}"
    ax.set_title(cap, fontsize="medium")
    if shown:
        ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return attach(fig, drawn)
