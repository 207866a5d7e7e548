"""The results store of a sweep: one SQLite database, ``sweep.sqlite``, in the sweep folder.

Tables:

- ``runs(run_key PRIMARY KEY, params, status, seed, sim_time_ps, events, wall_s, error,
  finished_at, scenario_digest)``: one row per run; ``params`` is the JSON of its overrides,
  ``status`` is ``ok`` or ``error`` (``error`` then holds the error text), ``finished_at`` an ISO
  8601 UTC time, ``scenario_digest`` the version of the scenario it ran
  (:func:`rdmasim.sweep.grid.scenario_digest`: the scenario text and the rdmasim version).
- ``flows(run_key, <every column of rdmasim.results.FLOW_COLUMNS>)``: the per-flow rows of the
  runs that finished, primary key (run_key, flow_id).
- ``meta(key PRIMARY KEY, value)``: the scenario (file name, text), the parameter keys, the
  current ``scenario_digest`` and the rdmasim version that wrote it.

A store holds the runs of one scenario version at a time: :func:`rdmasim.sweep.run_sweep` refuses
an edited scenario unless asked to start a new version (the old runs stay, apart, by digest).

A run's ``runs`` row and its ``flows`` rows are written in one transaction, so a sweep killed at
any moment leaves whole runs only. The database is in WAL mode: it can be read while a sweep
writes it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rdmasim.errors import UserInputError
from rdmasim.results import FLOW_COLUMNS, FlowRecord

STORE_NAME = "sweep.sqlite"

#: columns of the runs table, in order
RUN_COLUMNS = [
    "run_key",
    "params",
    "status",
    "seed",
    "sim_time_ps",
    "events",
    "wall_s",
    "error",
    "finished_at",
    "scenario_digest",
]


def _sql_type(annotation: Any) -> str:
    text = str(annotation)
    if "int" in text:
        return "INTEGER"
    if "float" in text:
        return "REAL"
    return "TEXT"


#: flows column -> SQLite type, from the FlowRecord annotations
FLOW_TYPES: dict[str, str] = {f.name: _sql_type(f.type) for f in fields(FlowRecord)}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SweepStore:
    """The SQLite store of one sweep folder (created if missing). Use from one thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.parent.exists() and not self.path.parent.is_dir():
            raise UserInputError(f"sweep folder {str(self.path.parent)!r}: exists and is not a folder "
                                 "(allowed: a new folder or a previous sweep's)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise UserInputError(f"sweep store {str(self.path)!r}: cannot open: {exc}") from None
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self._create()
        except sqlite3.Error as exc:
            self.db.close()
            raise UserInputError(f"sweep store {str(self.path)!r}: not a usable rdmasim sweep store ({exc}) "
                                 "(allowed: a new folder or one a previous sweep wrote)") from None

    def _create(self) -> None:
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS runs (run_key TEXT PRIMARY KEY, params TEXT NOT NULL, "
            "status TEXT NOT NULL, seed INTEGER, sim_time_ps INTEGER, events INTEGER, wall_s REAL, "
            "error TEXT, finished_at TEXT NOT NULL)"
        )
        cols = ", ".join(f"{_q(c)} {FLOW_TYPES.get(c, 'TEXT')}" for c in FLOW_COLUMNS)
        self.db.execute(
            f"CREATE TABLE IF NOT EXISTS flows (run_key TEXT NOT NULL, {cols}, "
            "PRIMARY KEY (run_key, flow_id))"
        )
        # a store made by an older rdmasim: add the flow columns it lacks
        have = {r[1] for r in self.db.execute("PRAGMA table_info(flows)")}
        for c in FLOW_COLUMNS:
            if c not in have:
                self.db.execute(f"ALTER TABLE flows ADD COLUMN {_q(c)} {FLOW_TYPES.get(c, 'TEXT')}")
        # a store made before runs carried their scenario version
        if "scenario_digest" not in {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}:
            self.db.execute("ALTER TABLE runs ADD COLUMN scenario_digest TEXT")
        self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")

    def close(self) -> None:
        """Close the database."""
        self.db.close()

    def __enter__(self) -> SweepStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- metadata ---------------------------------------------------------------------------------
    def set_meta(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON) under ``key``."""
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def get_meta(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, or ``default``."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    # -- writing ----------------------------------------------------------------------------------
    def record(self, run_key: str, params: Mapping[str, Any], outcome: Mapping[str, Any],
               digest: str | None = None) -> None:
        """Write one run's outcome (a worker's dict: ``status``, and ``seed``, ``sim_time_ps``,
        ``events``, ``wall_s``, ``flows`` (rows) if ok or ``error`` if not) of the scenario version
        ``digest`` in one transaction, replacing whatever the store had for ``run_key``."""
        ok = outcome.get("status") == "ok"
        flows: list[Mapping[str, Any]] = list(outcome.get("flows", ())) if ok else []
        row = (
            run_key,
            json.dumps(dict(params), sort_keys=True),
            "ok" if ok else "error",
            outcome.get("seed"),
            outcome.get("sim_time_ps"),
            outcome.get("events"),
            outcome.get("wall_s"),
            None if ok else str(outcome.get("error", "unknown error")),
            datetime.now(timezone.utc).isoformat(),
            digest,
        )
        cols = ", ".join(_q(c) for c in FLOW_COLUMNS)
        marks = ", ".join("?" for _ in range(len(FLOW_COLUMNS) + 1))
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM flows WHERE run_key = ?", (run_key,))
            self.db.execute(f"INSERT OR REPLACE INTO runs VALUES ({', '.join('?' * len(row))})", row)
            self.db.executemany(
                f"INSERT INTO flows (run_key, {cols}) VALUES ({marks})",
                ([run_key, *(f.get(c) for c in FLOW_COLUMNS)] for f in flows),
            )
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- reading ----------------------------------------------------------------------------------
    def ok_keys(self) -> set[str]:
        """run_keys of the runs that finished without error."""
        return {r[0] for r in self.db.execute("SELECT run_key FROM runs WHERE status = 'ok'")}

    def versions(self) -> dict[str | None, int]:
        """Runs stored per scenario digest (None: runs of a store written before digests)."""
        return dict(self.db.execute("SELECT scenario_digest, count(*) FROM runs GROUP BY scenario_digest"))

    def runs(self, keys: Iterable[str] | None = None, digest: str | None = None) -> list[dict[str, Any]]:
        """The runs rows as dicts (``params`` decoded), ordered by finish time; only ``keys`` if
        given, only those of the scenario version ``digest`` if given."""
        want = None if keys is None else set(keys)
        where, args = ("WHERE scenario_digest = ?", (digest,)) if digest else ("", ())
        cur = self.db.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs {where} ORDER BY finished_at, run_key", args)
        out = []
        for r in cur:
            d = dict(zip(RUN_COLUMNS, r, strict=True))
            if want is None or d["run_key"] in want:
                d["params"] = json.loads(d["params"])
                out.append(d)
        return out

    def flows(self, keys: Iterable[str] | None = None, digest: str | None = None) -> list[dict[str, Any]]:
        """The flows rows as dicts (run_key then :data:`FLOW_COLUMNS`); only ``keys`` if given,
        only those of runs of the scenario version ``digest`` if given."""
        want = None if keys is None else set(keys)
        names = ["run_key", *FLOW_COLUMNS]
        where, args = (("WHERE run_key IN (SELECT run_key FROM runs WHERE scenario_digest = ?)", (digest,))
                       if digest else ("", ()))
        sql = f"SELECT {', '.join(_q(c) for c in names)} FROM flows {where} ORDER BY run_key, flow_id"
        rows = (dict(zip(names, r, strict=True)) for r in self.db.execute(sql, args))
        return [d for d in rows if want is None or d["run_key"] in want]
