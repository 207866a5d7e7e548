"""Switch queues over time (from :class:`rdmasim.fabric.QueueSampler`) and when PFC paused them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from rdmasim.plots._common import attach, binary_size_unit, flow_colors, new_figure, time_unit


def _matrix(samples: Mapping[str, Any], key: str, n: int) -> np.ndarray:
    a = np.asarray(samples[key])
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"samples[{key!r}] must have shape (n, probes) with n = {n}, got {a.shape}")
    return a


def pause_spans(t_ps: np.ndarray, paused: np.ndarray) -> list[list[tuple[int, int]]]:
    """Per probe, the ``(start_ps, end_ps)`` spans in which ``paused`` was true.

    ``t_ps`` (n,) sample times, ``paused`` (n, probes) or (n,). A span starts at the first paused
    sample and ends at the next sample that is not paused; a pause still on at the last sample ends
    one sampling period (the last spacing) after it.
    """
    t = np.asarray(t_ps, dtype=np.int64)
    p = np.asarray(paused, dtype=bool)
    if p.ndim == 1:
        p = p.reshape(-1, 1)
    if len(t) == 0:
        return [[] for _ in range(p.shape[1])]
    period = int(t[-1] - t[-2]) if len(t) > 1 else 1
    t_end = np.r_[t, t[-1] + period]
    out: list[list[tuple[int, int]]] = []
    for j in range(p.shape[1]):
        col = np.r_[False, p[:, j], False].astype(np.int8)
        d = np.diff(col)
        starts = np.flatnonzero(d == 1)
        ends = np.flatnonzero(d == -1)
        out.append([(int(t_end[s]), int(t_end[e])) for s, e in zip(starts, ends, strict=True)])
    return out


#: what a probe label such as ``s0:8->h8 p3`` means (the legend's title)
PORT_LABEL_HELP = "switch:port->next hop, pN = priority N"


def _short_list(names: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def queue_timeline(samples: Mapping[str, Any], labels: Sequence[str], ingress: bool = False,
                   title: str | None = None, label_help: str | None = PORT_LABEL_HELP) -> Figure:
    """Egress queue occupancy per probe over time (top) and PFC pause spans per probe (bottom).

    ``samples``: the dict :meth:`rdmasim.fabric.QueueSampler.arrays` returns (``t_ps`` (n,),
    ``egress_bytes``, ``ingress_bytes`` and ``paused`` (n, probes); ``missed``, if > 0, is noted in
    the title). ``labels``: one name per probe, e.g. ``"s0:8->h8 p3"`` (``label_help``, the legend's
    title, says how to read them; None for no title). The pause panel has one row per probe that was
    paused; those never paused are named in one note. ``ingress=True`` also draws
    the ingress accounting (dashed). ``fig.rdmasim_data`` holds ``pause_spans`` (see
    :func:`pause_spans`) and the peak egress bytes per probe (``peak_egress_bytes``).
    """
    t = np.asarray(samples["t_ps"], dtype=np.int64).reshape(-1)
    n = len(t)
    egress = _matrix(samples, "egress_bytes", n)
    nprobe = egress.shape[1]
    if len(labels) != nprobe:
        raise ValueError(f"{len(labels)} labels for {nprobe} probes")
    paused = _matrix(samples, "paused", n).astype(bool) if "paused" in samples \
        else np.zeros((n, nprobe), dtype=bool)
    spans = pause_spans(t, paused)
    was_paused = [j for j in range(nprobe) if spans[j]]
    never = [labels[j] for j in range(nprobe) if not spans[j]]
    npanel = max(1, len(was_paused))
    fig, (ax, axp) = new_figure(2, figsize=(9.0, 5.0 + 0.15 * npanel), sharex=True,
                                height_ratios=[3.0, 0.8 + 0.25 * npanel])
    unit, scale = time_unit(float(t.max()) if n else 0.0)
    peak = float(egress.max()) if egress.size else 0.0
    if ingress and "ingress_bytes" in samples:
        peak = max(peak, float(np.max(_matrix(samples, "ingress_bytes", n), initial=0)))
    sunit, sscale = binary_size_unit(peak)
    colors = flow_colors(nprobe)
    for j in range(nprobe):
        ax.plot(t / scale, egress[:, j] / sscale, color=colors[j], lw=1.0, label=labels[j])
        if ingress and "ingress_bytes" in samples:
            ing = _matrix(samples, "ingress_bytes", n)
            ax.plot(t / scale, ing[:, j] / sscale, color=colors[j], lw=0.8, ls="--")
    for row, j in enumerate(was_paused):
        bars = [(s / scale, (e - s) / scale) for s, e in spans[j]]
        axp.broken_barh(bars, (row - 0.4, 0.8), color=colors[j])
    if not was_paused:
        note = "none of these queues was paused by PFC" if nprobe > 1 else "never paused by PFC"
    elif never:
        note = f"never paused: {_short_list(never)}"
    else:
        note = ""
    if note:
        axp.text(0.01, 0.5 if not was_paused else 0.02, note, transform=axp.transAxes,
                 va="center" if not was_paused else "bottom", fontsize="small", color="0.3")
    ax.set_ylabel(f"egress queue ({sunit})" + (" — ingress dashed" if ingress else ""))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              title=label_help, title_fontsize="x-small")
    missed = int(np.asarray(samples.get("missed", 0)).sum())
    miss = f"\n({missed} samples missed: max_samples reached)" if missed else ""
    ax.set_title((title or "Switch queues and PFC pauses") + miss, fontsize="medium")
    axp.set_yticks(range(len(was_paused)), [labels[j] for j in was_paused], fontsize="x-small")
    axp.set_ylim(npanel - 0.5, -0.5)
    axp.set_ylabel("PFC paused")
    axp.set_xlabel(f"time ({unit})")
    axp.grid(True, axis="x", alpha=0.3)
    if n:
        axp.set_xlim(t[0] / scale, t[-1] / scale)
    total = [sum(e - s for s, e in sp) for sp in spans]
    return attach(fig, {"pause_spans": spans, "paused_ps": total,
                        "peak_egress_bytes": egress.max(axis=0) if n else np.zeros(nprobe)})
