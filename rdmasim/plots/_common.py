"""Shared helpers of the plotting module: table columns, units, and a figure on the Agg canvas."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

Columns = dict[str, np.ndarray]

_TIME_UNITS: tuple[tuple[str, float], ...] = (("s", 1e12), ("ms", 1e9), ("µs", 1e6), ("ns", 1e3), ("ps", 1.0))
_SIZE_UNITS: tuple[tuple[str, float], ...] = (("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0))


def _is_dataframe(obj: Any) -> bool:
    # duck-typed so that pandas stays optional (never imported here)
    return hasattr(obj, "columns") and hasattr(obj, "iloc") and hasattr(obj, "to_numpy")


def is_table(obj: Any) -> bool:
    """True for anything :func:`as_columns` reads: a DataFrame, a structured array, a mapping of
    columns, or a non-empty sequence of row mappings."""
    if _is_dataframe(obj) or isinstance(obj, Mapping):
        return True
    if isinstance(obj, np.ndarray):
        return obj.dtype.names is not None
    return isinstance(obj, Sequence) and not isinstance(obj, str) and len(obj) > 0 \
        and isinstance(obj[0], Mapping)


def as_columns(table: Any) -> Columns:
    """Any supported table as a dict of 1-D numpy columns.

    ``table``: a pandas DataFrame, a numpy structured array, a mapping ``name -> array-like`` (all of
    one length), or a list of row mappings (e.g. ``RunResult.rows()``). Raises ``TypeError`` for
    anything else and ``ValueError`` when columns differ in length.
    """
    if _is_dataframe(table):
        cols = {str(c): np.asarray(table[c].to_numpy()) for c in table.columns}
    elif isinstance(table, np.ndarray) and table.dtype.names is not None:
        cols = {n: np.asarray(table[n]).reshape(-1) for n in table.dtype.names}
    elif isinstance(table, Mapping):
        cols = {str(k): np.asarray(v) for k, v in table.items()}
    elif is_table(table):
        names: list[str] = []
        for row in table:
            names.extend(k for k in row if k not in names)
        cols = {n: np.asarray([row.get(n) for row in table]) for n in names}
    else:
        raise TypeError(
            "expected a pandas DataFrame, a numpy structured array, a dict of columns or a list of row "
            f"dicts, not {type(table).__name__}"
        )
    lengths = {n: len(c.reshape(-1)) for n, c in cols.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"table columns differ in length: {lengths}")
    return {n: c.reshape(-1) for n, c in cols.items()}


def require(cols: Columns, names: Iterable[str], what: str) -> None:
    """Raise ``ValueError`` naming the columns of ``names`` that ``cols`` lacks."""
    missing = [n for n in names if n not in cols]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {sorted(cols)}")


def as_float(col: np.ndarray) -> np.ndarray:
    """A column as float64; None, pandas NA and anything non-numeric become NaN."""
    if col.dtype.kind in "biuf":
        return col.astype(np.float64)
    out = np.empty(len(col), dtype=np.float64)
    for i, v in enumerate(col):
        try:
            out[i] = np.nan if v is None else float(v)
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def time_unit(max_ps: float) -> tuple[str, float]:
    """The unit to show times up to ``max_ps`` picoseconds in: ``(name, ps per unit)``, e.g.
    ``("µs", 1e6)``: the largest of s, ms, µs, ns, ps in which ``max_ps`` is at least 1."""
    v = abs(float(max_ps)) if math.isfinite(max_ps) else 0.0
    for name, scale in _TIME_UNITS:
        if v >= scale:
            return name, scale
    return "ps", 1.0


def size_unit(max_bytes: float) -> tuple[str, float]:
    """The unit (GB/MB/kB/B, decimal) to show byte counts up to ``max_bytes`` in."""
    v = abs(float(max_bytes)) if math.isfinite(max_bytes) else 0.0
    for name, scale in _SIZE_UNITS:
        if v >= scale:
            return name, scale
    return "B", 1.0


def binary_size_unit(max_bytes: float) -> tuple[str, float]:
    """The binary unit (GiB/MiB/KiB/B) to show buffer occupancies up to ``max_bytes`` in."""
    v = abs(float(max_bytes)) if math.isfinite(max_bytes) else 0.0
    for name, scale in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if v >= scale:
            return name, scale
    return "B", 1.0


def format_size(n: float) -> str:
    """A byte count as a short label: ``10kB``, ``1.5MB``, ``∞``."""
    if math.isinf(n):
        return "∞"
    name, scale = size_unit(n)
    return f"{n / scale:.3g}{name}"


def format_duration(ps: float) -> str:
    """A time in picoseconds with the unit :func:`time_unit` picks, 3 significant digits."""
    if not math.isfinite(ps):
        return "-"
    name, scale = time_unit(ps)
    return f"{ps / scale:.3g} {name}"


def new_figure(nrows: int = 1, figsize: tuple[float, float] = (8.0, 4.5), sharex: bool = False,
               height_ratios: Sequence[float] | None = None) -> tuple[Figure, list[Any]]:
    """A Figure on its own Agg canvas (no pyplot state) and its axes, top to bottom."""
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, 1, sharex=sharex, squeeze=False,
                        gridspec_kw={"height_ratios": list(height_ratios)} if height_ratios else None)
    return fig, [a for a in axes[:, 0]]


def fit_titles(fig: Figure, margin_px: float = 4.0) -> None:
    """Re-wrap every axes title that would run past the figure's left or right edge (a long
    caption is cut off in the PNG otherwise), narrowing its lines until it fits; a number is kept
    on one line with its unit ("20 µs")."""
    import re
    import textwrap

    glue = re.compile(r"(\d) (?=(?:ps|ns|µs|ms|s|[kMGT]?b/s|[KMG]iB|[kMG]?B|bytes|flows)\b)")

    def wrap(line: str, width: int) -> str:
        glued = glue.sub("\\1\u00a0", line)
        return textwrap.fill(glued, width, break_on_hyphens=False).replace("\u00a0", " ")

    titles = [t for ax in fig.axes for t in (ax.title, ax._left_title, ax._right_title) if t.get_text()]
    left, right = fig.bbox.x0 + margin_px, fig.bbox.x1 - margin_px
    for _ in range(6):
        fig.draw_without_rendering()  # runs the constrained layout
        changed = False
        for t in titles:
            box = t.get_window_extent()
            if box.x0 >= left and box.x1 <= right:
                continue
            text = t.get_text()
            centre = (box.x0 + box.x1) / 2
            room = 2 * min(centre - left, right - centre)
            longest = max(len(line) for line in text.split("\n"))
            width = max(20, int(longest * min(room / max(box.width, 1.0), 0.97)) - 1)
            new = "\n".join(wrap(line, width) if len(line) > width else line for line in text.split("\n"))
            if new != text:
                t.set_text(new)
                changed = True
        if not changed:
            break


def attach(fig: Figure, data: dict[str, Any]) -> Figure:
    """Attach the numbers a plot shows to ``fig.rdmasim_data`` and return ``fig`` (titles that
    would be cut off at the figure's edges are wrapped first, see :func:`fit_titles`)."""
    fit_titles(fig)
    fig.rdmasim_data = data  # type: ignore[attr-defined]
    return fig


def flow_colors(n: int) -> list[Any]:
    """``n`` distinguishable colours (tab10, then tab20, then a sampled continuous map)."""
    import matplotlib

    if n <= 10:
        return [matplotlib.colormaps["tab10"](i) for i in range(n)]
    if n <= 20:
        return [matplotlib.colormaps["tab20"](i) for i in range(n)]
    cmap = matplotlib.colormaps["viridis"]
    return [cmap(i / max(1, n - 1)) for i in range(n)]
