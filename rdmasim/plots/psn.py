"""PSN over time from a capture: every data packet, its retransmissions and the NAKs, with the
first Go-Back-N rewinds zoomed in (on a line of thousands of PSNs a rewind is a few pixels)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from rdmasim.plots._common import attach, time_unit

#: zoomed panels drawn at most (the first rewinds)
MAX_ZOOMS = 3
_NAK_SEQ_ERR = 0x60
_ACK_OPCODE = 0x11


def psn_series(pcap: str | Path) -> dict[str, np.ndarray]:
    """Data packets and NAKs of a capture of one requester's QP: ``t_ps``, ``psn`` (unwrapped,
    relative to the first data PSN), ``retx`` (a PSN at or below the highest sent so far), and
    ``nak_t_ps`` / ``nak_psn`` (NAK PSN sequence errors). ``rewinds``: the index of each data packet
    that starts a retransmission run, and ``rewind_after_nak`` whether a NAK came before it (else
    the requester's ACK timeout fired)."""
    from rdmasim.capture import read_pcap

    t, p, r, nt, npsn = [], [], [], [], []
    base = None
    highest = -1
    for fr in read_pcap(pcap):
        f = fr.fields
        if f.get("kind", 0) != 0 or "psn" not in f:
            continue
        if base is None:
            base = f["psn"]
        rel = (f["psn"] - base) % (1 << 24)
        if f.get("opcode") == _ACK_OPCODE:
            if (f.get("aeth_syndrome", 0) & 0xE0) == _NAK_SEQ_ERR:
                nt.append(fr.t_ns * 1000)
                npsn.append(rel)
            continue
        t.append(fr.t_ns * 1000)
        p.append(rel)
        r.append(rel <= highest)
        highest = max(highest, rel)
    retx = np.array(r, dtype=bool)
    starts = np.flatnonzero(retx & ~np.r_[False, retx[:-1]])
    t_arr = np.array(t, dtype=np.int64)
    nak_t = np.array(nt, dtype=np.int64)
    prev_data = np.r_[-1, t_arr][starts] if len(starts) else np.zeros(0, dtype=np.int64)
    after_nak = np.array([bool(np.any((nak_t <= t_arr[i]) & (nak_t >= prev_data[k] - 10**7)))
                          for k, i in enumerate(starts)], dtype=bool)
    return {"t_ps": t_arr, "psn": np.array(p, dtype=np.int64), "retx": retx, "nak_t_ps": nak_t,
            "nak_psn": np.array(npsn, dtype=np.int64), "rewinds": starts, "rewind_after_nak": after_nak}


def _window(d: dict[str, np.ndarray], i: int) -> tuple[int, int]:
    """Time window (ps) around the rewind starting at data packet ``i``: from a few packets before
    the lost PSN was first sent to a few packets after the retransmissions catch up."""
    t, psn = d["t_ps"], d["psn"]
    top = int(psn[:i].max()) if i else 0
    lost = int(psn[i])
    first = np.flatnonzero(psn >= max(0, lost - 8))
    lo = int(t[first[0]]) if len(first) else int(t[0])
    past = np.flatnonzero((np.arange(len(psn)) > i) & (psn > top + 8))
    hi = int(t[past[0]]) if len(past) else int(t[-1])
    return lo, max(hi, lo + 1)


def psn_over_time(pcap: str | Path | None = None, series: dict[str, np.ndarray] | None = None,
                  title: str | None = None, max_zooms: int = MAX_ZOOMS) -> Figure:
    """PSN of every data packet over time (first transmissions blue, retransmissions red, NAKs as
    black crosses), and below it up to ``max_zooms`` panels zoomed in on the first rewinds, each
    saying whether a NAK or the ACK timeout caused it. Give the capture (``pcap``) or
    :func:`psn_series`'s result. ``fig.rdmasim_data`` is the series plus ``zooms`` (the windows)."""
    d = series if series is not None else psn_series(pcap)  # type: ignore[arg-type]
    zooms = [_window(d, int(i)) for i in d["rewinds"][:max_zooms]]
    fig = Figure(figsize=(9.0, 7.0 if zooms else 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    if zooms:
        gs = fig.add_gridspec(2, len(zooms), height_ratios=[1.2, 1.0])
        ax = fig.add_subplot(gs[0, :])
        zaxes = [fig.add_subplot(gs[1, k]) for k in range(len(zooms))]
    else:
        ax, zaxes = fig.add_subplot(1, 1, 1), []
    t, psn, retx = d["t_ps"], d["psn"], d["retx"]
    unit, scale = time_unit(float(t.max()) if len(t) else 0.0)
    first_c, retx_c = "tab:blue", "tab:red"

    def draw(a: Any, ms: float) -> None:
        a.plot(t[~retx] / scale, psn[~retx], ".", ms=ms, color=first_c, ls="")
        a.plot(t[retx] / scale, psn[retx], ".", ms=ms, color=retx_c, ls="")
        if len(d["nak_t_ps"]):
            a.plot(d["nak_t_ps"] / scale, d["nak_psn"], "x", ms=ms * 2.5, mew=1.5, color="black", ls="")
        a.grid(True, alpha=0.3)

    draw(ax, 2.0)
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("PSN (relative to first)")
    for k, (a, (lo, hi)) in enumerate(zip(zaxes, zooms, strict=True)):
        draw(a, 4.0)
        inside = (t >= lo) & (t <= hi)
        ys = psn[inside]
        pad = max(2, int(0.05 * (ys.max() - ys.min()))) if len(ys) else 2
        a.set_xlim(lo / scale, hi / scale)
        if len(ys):
            a.set_ylim(ys.min() - pad, ys.max() + pad)
        i = int(d["rewinds"][k])
        n_retx = int(np.sum(retx[inside]))
        why = "after a NAK" if d["rewind_after_nak"][k] else "after the ACK timeout"
        a.set_title(f"rewind {k + 1}: back to PSN {int(psn[i])} {why}\n({n_retx} packets resent)",
                    fontsize="small")
        a.set_xlabel(f"time ({unit})", fontsize="small")
        a.tick_params(labelsize="x-small")
        ax.axvspan(lo / scale, hi / scale, color="0.5", alpha=0.2, lw=0)
        ax.annotate(str(k + 1), ((lo + hi) / 2 / scale, 0.98), xycoords=("data", "axes fraction"),
                    ha="center", va="top", fontsize="x-small")
    if zaxes:
        zaxes[0].set_ylabel("PSN", fontsize="small")
    handles = [
        Line2D([], [], marker=".", ms=8, ls="", color=first_c, label="first transmission"),
        Line2D([], [], marker=".", ms=8, ls="", color=retx_c, label="retransmission (Go-Back-N)"),
        Line2D([], [], marker="x", ms=8, mew=1.5, ls="", color="black", label="NAK (PSN sequence error)"),
    ]
    n_rw = len(d["rewinds"])
    sub = (f"{int(retx.sum())} retransmissions in {n_rw} rewinds, {len(d['nak_t_ps'])} NAKs"
           + (f"; the first {len(zooms)} shaded here and zoomed in below" if zooms else ""))
    ax.legend(handles=handles, loc="lower right", fontsize="small")
    ax.set_title(f"{title or 'PSN over time'}\n({sub})", fontsize="medium")
    return attach(fig, {**d, "zooms": zooms})
