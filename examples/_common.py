"""Helpers shared by the example scripts: command line, scenario flows, figures, tables.

Every example is ``python examples/<name>.py [--out DIR] [--quick]``: it runs its scenario file
(``examples/<name>.toml``), writes ``DIR/<name>.png`` and ``DIR/<name>.svg`` and prints the numbers.
Each script's ``main(argv)`` also returns those numbers as a dict (what tests/examples checks).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rdmasim import plots
from rdmasim.scenario import Scenario, load

#: the folder of the example scripts and their scenario files
HERE = Path(__file__).resolve().parent
#: where the figures go unless ``--out`` says otherwise (relative to the current directory)
DEFAULT_OUT = "examples-out"
#: PNG resolution: the figures stay under ~100 KB (docs/img/examples)
DPI = 84


def parse_args(description: str, argv: Sequence[str] | None) -> argparse.Namespace:
    """``--out DIR`` (default ``examples-out/``) and ``--quick`` (a reduced run of a few seconds)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"folder for the figures (default {DEFAULT_OUT}/)")
    ap.add_argument("--quick", action="store_true", help="a reduced run that finishes in a few seconds")
    return ap.parse_args(list(argv) if argv is not None else None)


def scenario(name: str, overrides: dict[str, Any] | None = None) -> Scenario:
    """Load ``examples/<name>.toml`` with ``overrides`` (key path -> value, as ``rdmasim sweep``)."""
    return load(HERE / f"{name}.toml", overrides=overrides)


def scenario_flows(sc: Scenario) -> dict[str, list[Any]]:
    """The explicit ``[[flows]]`` of ``sc`` as columns for :meth:`rdmasim.Simulator.add_flows`
    (host names, sizes in bytes, start times in ps), for runs that need the Python API."""
    rows = sc.arrays.get("flows", [])
    return {
        "src": [r["src"] for r in rows],
        "dst": [r["dst"] for r in rows],
        "size": [int(r["size"]) for r in rows],
        "start_ps": [int(r["start"]) for r in rows],
        "verb": [r["verb"] for r in rows],
        "priority": [int(r["priority"]) for r in rows],
    }


def figure(ncols: int = 1, nrows: int = 1,
           size: tuple[float, float] = (7.0, 4.0)) -> tuple[Figure, list[Any]]:
    """A Figure on its own Agg canvas (no pyplot state) and its axes, row by row."""
    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def save(fig: Figure, out: str | Path, name: str) -> list[Path]:
    """Write ``out/name.png`` (:data:`DPI`, small enough to commit) and ``out/name.svg``; return the paths."""
    paths: list[Path] = plots.save(fig, Path(out) / name, formats=("png", "svg"), dpi=DPI)
    for p in paths:
        print(f"wrote {p}")
    return paths


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Fixed-width text table; floats with 4 significant digits."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)
