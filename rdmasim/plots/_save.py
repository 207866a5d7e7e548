"""Writing figures to files."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure

_METADATA = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


def save(fig: Figure, path_stem: str | Path, formats: Sequence[str] = ("png", "svg"),
         dpi: int = 150) -> list[Path]:
    """Write ``fig`` as ``<path_stem>.<format>`` for each format (any matplotlib writes: png, svg,
    pdf, ...), creating the folder; returns the paths written and closes the figure. Files carry no
    timestamp, so the same figure gives the same bytes."""
    stem = Path(path_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "rdmasim"}):
        for fmt in formats:
            fmt = fmt.lower().lstrip(".")
            path = stem.parent / f"{stem.name}.{fmt}"
            fig.savefig(path, format=fmt, dpi=dpi, metadata=_METADATA.get(fmt))
            paths.append(path)
    if "matplotlib.pyplot" in sys.modules:  # a figure made with pyplot is also released there
        sys.modules["matplotlib.pyplot"].close(fig)
    return paths
