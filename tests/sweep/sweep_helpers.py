"""Shared bits of the sweep tests: the example scenario shrunk to runs of a few milliseconds."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LOSSY = ROOT / "examples" / "lossy_b2b.toml"
#: 2 x 2 grid of tiny runs; lossy_b2b has 3 flows
GRID: dict[str, list[Any]] = {
    "flows[].size": ["8KiB", "32KiB"],
    "impairments.loss[0].probability": [0.0, 0.05],
}
FLOWS_PER_RUN = 3


def env() -> dict[str, str]:
    """The environment for a subprocess that imports this checkout's rdmasim."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [e.get("PYTHONPATH")])])
    return e


def query(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` on the store ``db`` (a fresh read-only connection)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()
