"""The results store of a sweep: one SQLite database, ``sweep.sqlite``, in the sweep folder.

Tables:

- ``runs(run_key PRIMARY KEY, params, status, seed, sim_time_ps, events, wall_s, error,
  finished_at, scenario_digest, run_name, flows, unfinished, flow_errors, drops, ecn_marked,
  pfc_xoff_sent, paused_ps)``: one row per run; ``params`` is the JSON of its overrides,
  ``status`` is ``ok`` (every flow completed successfully), ``incomplete`` (the run ended with
  ``unfinished`` of its ``flows`` not completed: still running at ``simulation.duration``, or,
  ``flow_errors`` of them, ended by an error completion such as ``IBV_WC_RETRY_EXC_ERR``) or
  ``error`` (the run failed; ``error`` then holds the error text),
  ``finished_at`` an ISO 8601 UTC time, ``scenario_digest`` the version of the scenario it ran
  (:func:`rdmasim.sweep.grid.scenario_digest`: the scenario text and the rdmasim version),
  ``run_name`` its readable name (:func:`rdmasim.sweep.grid.run_names`), and the last four the
  sums over every switch port and host NIC of the ``ports`` rows.
- ``flows(run_key, <every column of rdmasim.results.FLOW_COLUMNS>)``: the per-flow rows of every
  run that ran (those of an incomplete run too: its unfinished flows have status ``incomplete``),
  primary key (run_key, flow_id).
- ``ports(run_key, <every column of rdmasim.results.PORT_COLUMNS>)``: each run's counters per
  switch port and host NIC (drops, ECN marks, PFC XOFF sent and received, time paused, peak
  queues), as ``ports.csv`` of ``rdmasim run``.
- ``queues(run_key, probe, samples, mean_egress_bytes, p99_egress_bytes, max_egress_bytes,
  paused_fraction)``: with ``[outputs] sample_interval``, each sampled switch egress queue's
  depth over the run and the fraction of samples it was paused.
- ``collectives(run_key, idx, collective, ranks, size_bytes, time_ps, algbw_Bps, busbw_Bps,
  busbw_over_link_rate, detail)``: each collective (or halo exchange) of a run; ``detail`` is the
  JSON of the rest of its result (waits, critical path).
- ``meta(key PRIMARY KEY, value)``: the scenario (file name, text), the parameter keys, the
  current ``scenario_digest`` and the rdmasim version that wrote it.

A store holds the runs of one scenario version at a time: :func:`rdmasim.sweep.run_sweep` refuses
an edited scenario unless asked to start a new version (the old runs stay, apart, by digest).

A run's ``runs`` row and its rows in the other tables are written in one transaction, so a sweep killed at
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
from rdmasim.results import FLOW_COLUMNS, PORT_COLUMNS, FlowRecord

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
    "run_name",
    "flows",
    "unfinished",
    "flow_errors",
    "drops",
    "ecn_marked",
    "pfc_xoff_sent",
    "paused_ps",
    "ideal_fct",
]
#: SQLite types of the runs columns added after the first stores (an older store gets them)
_RUN_TYPES = {"scenario_digest": "TEXT", "run_name": "TEXT", "flows": "INTEGER", "unfinished": "INTEGER",
              "flow_errors": "INTEGER",
              "drops": "INTEGER", "ecn_marked": "INTEGER", "pfc_xoff_sent": "INTEGER", "paused_ps": "INTEGER",
              "ideal_fct": "TEXT"}
#: run statuses: every flow finished / the run ended with flows not finished / the run failed
STATUSES = ("ok", "incomplete", "error")
#: the port counters summed into the runs row
_TOTALS = ("drops", "ecn_marked", "pfc_xoff_sent", "paused_ps")
#: columns of the queues table (after run_key)
QUEUE_COLUMNS = ["probe", "samples", "mean_egress_bytes", "p99_egress_bytes", "max_egress_bytes",
                 "paused_fraction"]
#: columns of the collectives table (after run_key)
COLLECTIVE_COLUMNS = ["idx", "collective", "ranks", "size_bytes", "time_ps", "algbw_Bps", "busbw_Bps",
                      "busbw_over_link_rate", "detail"]
_QUEUE_TYPES = {"probe": "TEXT", "samples": "INTEGER", "paused_fraction": "REAL"}
_COLLECTIVE_TYPES = {"idx": "INTEGER", "collective": "TEXT", "ranks": "INTEGER", "size_bytes": "INTEGER",
                     "time_ps": "INTEGER", "algbw_Bps": "REAL", "busbw_Bps": "REAL",
                     "busbw_over_link_rate": "REAL", "detail": "TEXT"}
_PORT_TYPES = {"node": "TEXT", "kind": "TEXT"}


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
        # a store made before runs carried their scenario version, name and totals
        have = {r[1] for r in self.db.execute("PRAGMA table_info(runs)")}
        for c, kind in _RUN_TYPES.items():
            if c not in have:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {c} {kind}")
        pcols = ", ".join(f"{_q(c)} {_PORT_TYPES.get(c, 'INTEGER')}" for c in PORT_COLUMNS)
        self.db.execute(f"CREATE TABLE IF NOT EXISTS ports (run_key TEXT NOT NULL, {pcols}, "
                        "PRIMARY KEY (run_key, node, port))")
        # a store made before the ports table had every column (trims)
        have = {r[1] for r in self.db.execute("PRAGMA table_info(ports)")}
        for c in PORT_COLUMNS:
            if c not in have:
                self.db.execute(f"ALTER TABLE ports ADD COLUMN {_q(c)} {_PORT_TYPES.get(c, 'INTEGER')}")
        qcols = ", ".join(f"{_q(c)} {_QUEUE_TYPES.get(c, 'INTEGER')}" for c in QUEUE_COLUMNS)
        self.db.execute(f"CREATE TABLE IF NOT EXISTS queues (run_key TEXT NOT NULL, {qcols}, "
                        "PRIMARY KEY (run_key, probe))")
        ccols = ", ".join(f"{_q(c)} {_COLLECTIVE_TYPES[c]}" for c in COLLECTIVE_COLUMNS)
        self.db.execute(f"CREATE TABLE IF NOT EXISTS collectives (run_key TEXT NOT NULL, {ccols}, "
                        "PRIMARY KEY (run_key, idx))")
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
               digest: str | None = None, run_name: str = "") -> None:
        """Write one run's outcome (a worker's dict, :func:`rdmasim.sweep.run_one`: ``status`` and,
        unless it is ``error``, ``seed``, ``ideal_fct``, ``sim_time_ps``, ``events``, ``wall_s`` and
        the rows of ``flows``, ``ports``, ``queues``, ``collectives``; ``error`` if it failed) of the scenario
        version ``digest`` in one transaction, replacing whatever the store had for ``run_key``."""
        status = outcome.get("status")
        status = status if status in STATUSES else "error"
        ran = status != "error"
        flows: list[Mapping[str, Any]] = list(outcome.get("flows", ())) if ran else []
        ports: list[Mapping[str, Any]] = list(outcome.get("ports", ())) if ran else []
        queues: list[Mapping[str, Any]] = list(outcome.get("queues", ())) if ran else []
        colls: list[Mapping[str, Any]] = list(outcome.get("collectives", ())) if ran else []
        totals = [sum(int(p.get(c) or 0) for p in ports) if ran else None for c in _TOTALS]
        row = (
            run_key,
            json.dumps(dict(params), sort_keys=True),
            status,
            outcome.get("seed"),
            outcome.get("sim_time_ps"),
            outcome.get("events"),
            outcome.get("wall_s"),
            None if ran else str(outcome.get("error", "unknown error")),
            datetime.now(timezone.utc).isoformat(),
            digest,
            run_name,
            len(flows) if ran else None,
            sum(f.get("status") != "ok" for f in flows) if ran else None,
            sum(f.get("status") not in ("ok", "incomplete") for f in flows) if ran else None,
            *totals,
            outcome.get("ideal_fct") if ran else None,
        )
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for table in ("flows", "ports", "queues", "collectives"):
                self.db.execute(f"DELETE FROM {table} WHERE run_key = ?", (run_key,))
            self.db.execute(f"INSERT OR REPLACE INTO runs ({', '.join(RUN_COLUMNS)}) "
                            f"VALUES ({', '.join('?' * len(row))})", row)
            self._insert("flows", FLOW_COLUMNS, run_key, flows)
            self._insert("ports", PORT_COLUMNS, run_key, ports)
            self._insert("queues", QUEUE_COLUMNS, run_key, queues)
            self._insert("collectives", COLLECTIVE_COLUMNS, run_key, [
                {**_collective_row(c), "idx": i} for i, c in enumerate(colls)])
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _insert(self, table: str, columns: list[str], run_key: str, rows: list[Mapping[str, Any]]) -> None:
        cols = ", ".join(_q(c) for c in columns)
        marks = ", ".join("?" for _ in range(len(columns) + 1))
        self.db.executemany(f"INSERT INTO {table} (run_key, {cols}) VALUES ({marks})",
                            ([run_key, *(r.get(c) for c in columns)] for r in rows))

    # -- reading ----------------------------------------------------------------------------------
    def ok_keys(self) -> set[str]:
        """run_keys of the runs that ran without error (``ok`` or ``incomplete``: a run is
        deterministic, running an incomplete one again ends the same way)."""
        sql = "SELECT run_key FROM runs WHERE status IN ('ok', 'incomplete')"
        return {r[0] for r in self.db.execute(sql)}

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
        return self.rows("flows", keys, digest)

    def rows(self, table: str, keys: Iterable[str] | None = None,
             digest: str | None = None) -> list[dict[str, Any]]:
        """The rows of ``table`` (``flows``, ``ports``, ``queues`` or ``collectives``) as dicts
        (run_key then its columns), filtered as :meth:`flows`."""
        columns, order = {"flows": (FLOW_COLUMNS, "flow_id"),
                          "ports": (PORT_COLUMNS, "kind DESC, node, port"),
                          "queues": (QUEUE_COLUMNS, "probe"),
                          "collectives": (COLLECTIVE_COLUMNS, "idx")}[table]
        want = None if keys is None else set(keys)
        names = ["run_key", *columns]
        where, args = (("WHERE run_key IN (SELECT run_key FROM runs WHERE scenario_digest = ?)", (digest,))
                       if digest else ("", ()))
        sql = f"SELECT {', '.join(_q(c) for c in names)} FROM {table} {where} ORDER BY run_key, {order}"
        rows = (dict(zip(names, r, strict=True)) for r in self.db.execute(sql, args))
        return [d for d in rows if want is None or d["run_key"] in want]


def _collective_row(c: Mapping[str, Any]) -> dict[str, Any]:
    """A collective's result (:attr:`rdmasim.results.RunResult.collectives`) as a collectives row:
    its main numbers as columns, the rest as JSON in ``detail``."""
    main = [k for k in COLLECTIVE_COLUMNS if k not in ("idx", "detail")]
    row: dict[str, Any] = {k: c.get(k) for k in main}
    row["detail"] = json.dumps({k: v for k, v in c.items() if k not in main}, sort_keys=True, default=str)
    return row
