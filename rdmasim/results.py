"""Results of a scenario run: the per-flow table, switch counters, and how to reproduce them.

:meth:`RunResult.write` puts into a folder every table - ``flows``, ``ports`` and, with time
series, ``flow_samples`` and ``queue_samples`` - as Parquet (``flows.parquet``) when pyarrow is
importable and as CSV (``flows.csv``) otherwise (``[outputs] formats`` can ask for either or
both), plus ``switch_counters.json``, ``timeseries.npz``, ``scenario.toml`` (the file as run) and
``metadata.json`` (seed, rdmasim version, simulated time, events, wall time). Every column name
carries its unit (:data:`COLUMN_UNITS`); :func:`read_table` reads a table back as a DataFrame.

A results folder is written whole or not at all: the files go into a hidden sibling folder
(``.NAME.partial-PID-*``, PID the writing process) that replaces the folder only once
everything is written, so a failed write (a full disk) leaves the previous results as they were and
no mix of old and new files. A process killed while writing (SIGKILL, the OOM killer) leaves its
hidden folder behind; :func:`remove_stale_staging` removes those of processes no longer running
(``rdmasim run`` does before it starts).
"""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rdmasim.errors import ResultsWriteError, UserInputError
from rdmasim.units import format_time

#: the file every results folder has; a folder with it may be replaced by a new run
_MARKER = "metadata.json"


def _pid_running(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as running)."""
    if pid <= 0:
        return True  # not a process id: never treat its folder as stale
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


@dataclass
class StaleFolder:
    """A hidden staging folder a results folder's writer left behind: its path, the pid in its
    name (None: a folder of an rdmasim that did not record it), its size in bytes."""

    path: Path
    pid: int | None
    size_bytes: int


def stale_staging(out_dir: str | Path) -> list[StaleFolder]:
    """The hidden folders (``.NAME.partial-*``, ``.NAME.old-*``) beside ``out_dir`` whose writer is
    no longer running (by the pid in the name), or that carry no pid (``pid`` None: whether their
    writer runs cannot be told; they are never removed automatically)."""
    out = Path(out_dir)
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        return []
    pat = re.compile(rf"^\.{re.escape(out.name)}\.(?:partial|old)-(?:(\d+)-)?")
    found = []
    for p in sorted(parent.iterdir()):
        m = pat.match(p.name)
        if not m or not p.is_dir():
            continue
        pid = int(m.group(1)) if m.group(1) else None
        if pid is None or not _pid_running(pid):
            found.append(StaleFolder(p, pid, _dir_bytes(p)))
    return found


def remove_stale_staging(out_dir: str | Path) -> list[StaleFolder]:
    """Remove the hidden folders beside ``out_dir`` left by writers that are no longer running
    (the pid in their name is dead) and return them; folders without a pid, and those of running
    processes, are left alone."""
    removed = []
    for f in stale_staging(out_dir):
        if f.pid is not None:
            shutil.rmtree(f.path, ignore_errors=True)
            if not f.path.exists():
                removed.append(f)
    return removed


def stage_out_dir(out_dir: str | Path) -> Path:
    """Check that results can go to ``out_dir`` and make the hidden folder they are written into
    first (see :func:`commit_out_dir`); called before a run so that an unusable folder is found
    before the simulation, not after.

    ``out_dir`` may be missing, empty or a previous run's results (it has ``metadata.json``; it
    is replaced); anything else (a file, a folder of other files) is refused with
    :class:`~rdmasim.errors.UserInputError`, an unwritable place with OSError naming it."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserInputError(f"results folder {str(out)!r}: exists and is not a folder "
                             "(allowed: a new, empty or previous results folder)")
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir())
        if other and not (out / _MARKER).is_file():
            shown = ", ".join(other[:5]) + (", ..." if len(other) > 5 else "")
            raise UserInputError(f"results folder {str(out)!r}: holds files that are not rdmasim results "
                                 f"({shown}) (allowed: a new, empty or previous results folder)")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-{os.getpid()}-", dir=out.parent))
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(out.parent) else ""
        raise ResultsWriteError(f"results folder {str(out)!r}: cannot write in {str(out.parent)!r}: "
                                f"{exc.strerror or exc}{where}") from None


def commit_out_dir(staging: Path, out_dir: str | Path) -> None:
    """Put the finished ``staging`` folder in place of ``out_dir`` (the previous results, if any,
    are removed only after the new ones are in place)."""
    out = Path(out_dir)
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=out.parent))
        os.replace(out, old / out.name)
    try:
        os.replace(staging, out)
    except OSError:
        if old is not None:
            os.replace(old / out.name, out)
            shutil.rmtree(old, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def discard_staging(staging: Path | None) -> None:
    """Remove a staging folder of a run that did not finish writing."""
    if staging is not None:
        shutil.rmtree(staging, ignore_errors=True)


def _moved(files: dict[str, str], staging: Path, out: Path) -> dict[str, str]:
    return {k: str(out / Path(v).relative_to(staging)) for k, v in files.items()}


@dataclass
class FlowRecord:
    """One flow's outcome. Times in picoseconds; ``finish_ps``/``fct_ps``/``slowdown`` are None for
    flows that did not complete; ``slowdown`` = FCT / ideal FCT (the ideal FCT's definition,
    :data:`IDEAL_FCT`, is ``RunResult.ideal_fct``); ``pause_ps``: time the source NIC was paused (PFC) on the
    flow's priority while the flow ran; ``group``: the generator or collective it came from."""

    flow_id: int
    src: str
    dst: str
    verb: str
    size_bytes: int
    priority: int
    start_ps: int
    finish_ps: int | None
    fct_ps: int | None
    ideal_fct_ps: int
    slowdown: float | None
    bytes_delivered: int
    retx_pkts: int
    cnps: int
    status: str
    pause_ps: int = 0
    group: str = ""
    #: Ultra Ethernet flows: NACKs the sender received, and of them those for trimmed packets
    nack_pkts: int = 0
    trimmed_pkts: int = 0


FLOW_COLUMNS: list[str] = [f.name for f in fields(FlowRecord)]
#: the ideal FCT's definitions -> what each counts (scenario key ``outputs.ideal_fct``;
#: rdmasim.scenario.ideal computes them)
IDEAL_FCT: dict[str, str] = {
    "wire": "the flow alone on an idle fabric, headers on the wire included",
    "payload": "payload bytes at line rate plus the propagation round trip, no headers",
}


def slowdown_meaning(ideal_fct: str) -> str:
    """What the ``slowdown`` column is under the ideal-FCT definition ``ideal_fct``: the sentence
    tables, plots and summaries carry so a slowdown is never read against the wrong ideal."""
    return f"FCT / ideal FCT (ideal FCT {ideal_fct!r}: {IDEAL_FCT[ideal_fct]})"
#: the tables a results folder holds, in the order they are written
TABLES: tuple[str, ...] = ("flows", "ports", "flow_samples", "queue_samples")
#: how a column name says its unit: the suffix, and what it means (docs/scenarios.md lists them)
COLUMN_UNITS: dict[str, str] = {
    "_ps": "picoseconds (integer)", "_bytes": "bytes", "_bps": "bits per second", "_pkts": "packets",
    "_frames": "Ethernet frames",
}
#: columns of :meth:`RunResult.port_rows` (ports.csv)
PORT_COLUMNS: list[str] = [
    "node", "kind", "port", "rx_pkts", "tx_pkts", "rx_bytes", "tx_bytes", "drops", "ecn_marked",
    "pfc_xoff_sent", "pfc_rx_frames", "paused_ps", "credit_stall_ps", "egress_peak_bytes",
    "ingress_peak_bytes", "trimmed_pkts",
]
#: tables a run has only in some configurations: ``uet_endpoints`` (transport.kind = "uet")
OPTIONAL_TABLES: tuple[str, ...] = ("uet_endpoints",)
#: columns of the ``uet_endpoints`` table: one row per host, its UET endpoint counters
#: (rdmasim.uet.endpoint_stats; docs/uet.md)
UET_ENDPOINT_COLUMNS: list[str] = [
    "node", "syn_sent", "pdcs_created", "closes_sent", "pdcs_closed", "pdcs_released", "close_gave_up",
    "pdcs_live", "rx_unknown", "pdcs_refused", "close_reqs_sent",
]


def _queues_to_draw(egress: np.ndarray, paused: np.ndarray, most: int = 8,
                    share: float = 0.05) -> tuple[np.ndarray, str]:
    """The probes a queue plot draws - the ``most`` deepest of those that were paused or peaked at
    ``share`` of the deepest queue's peak or more (flat lines at zero only lengthen the legend) -
    and a caption naming what is left out."""
    peaks = egress.max(axis=0) if len(egress) else np.zeros(egress.shape[1])
    order = np.argsort(peaks, kind="stable")[::-1]
    big = peaks >= share * peaks.max() if peaks.max() > 0 else np.ones(len(peaks), dtype=bool)
    keep = big | paused.any(axis=0)
    top = np.array([j for j in order if keep[j]][:most], dtype=np.int64)
    n, rest = len(peaks), np.setdiff1d(np.arange(len(peaks)), top)
    if not len(rest):
        return top, ""
    low = float(peaks[rest].max())
    units = (("MiB", 2.0**20), ("KiB", 2.0**10))
    unit, scale = next(((u, sc) for u, sc in units if low >= sc), ("bytes", 1.0))
    low_text = f"{low / scale:.3g} {unit}" if unit != "bytes" else f"{low:.0f} bytes"
    drawn = f"{len(top)} deepest of {n} queues" if len(top) > 1 else f"the deepest of {n} queues"
    if low <= 0:
        return top, f"{drawn}; the other {len(rest)} stayed empty"
    return top, f"{drawn}; the other {len(rest)} never held more than {low_text}"


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


@dataclass
class RunResult:
    """Everything a scenario run produced."""

    flows: list[FlowRecord]
    switches: dict[str, Any]
    seed: int
    sim_time_ps: int
    events: int
    wall_s: float
    scenario_text: str = ""
    scenario_file: str = ""
    name: str = ""
    files: dict[str, str] = field(default_factory=dict)
    #: per-flow time series (rdmasim.flows.FlowSamples) when [outputs] sample_interval > 0
    flow_samples: Any = None
    #: switch queue samples (QueueSampler.arrays() plus "labels") when sample_interval > 0
    queue_samples: dict[str, Any] | None = None
    #: the first deadlock found (PFC pauses or InfiniBand credit stalls; [switch] deadlock_check, or one
    #: look at the end of a run with unfinished flows): (time ps, [(switch, port, priority or VL)])
    deadlock: Any = None
    #: per host NIC: PFC pause received and frames sent / received (see :meth:`port_rows`)
    nics: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per host, its UET endpoint counters (rdmasim.uet.endpoint_stats) when transport.kind = "uet";
    #: empty otherwise (table ``uet_endpoints``)
    uet_endpoints: dict[str, dict[str, int]] = field(default_factory=dict)
    #: the run was stopped (Ctrl-C) before its flows finished or simulation.duration was reached
    interrupted: bool = False
    #: each host's link rate (b/s): the plots draw link capacity from it
    host_rate_bps: dict[str, float] = field(default_factory=dict)
    #: per collective: time_ps, algbw_Bps, busbw_Bps (nccl-tests definitions), busbw_over_link_rate
    collectives: list[dict[str, Any]] = field(default_factory=list)
    #: the values changed on top of the scenario file (key path -> value: ``rdmasim run --set``, a
    #: sweep's parameters), written into metadata.json with it so the run can be reproduced
    overrides: dict[str, Any] = field(default_factory=dict)
    #: hidden folders of dead writers removed beside the results folder before the run
    removed_stale: list[StaleFolder] = field(default_factory=list)
    #: the ideal FCT's definition slowdown divides by: "wire" or "payload"
    #: (rdmasim.scenario.ideal.DEFINITIONS; scenario key outputs.ideal_fct)
    ideal_fct: str = "wire"
    #: what held the run back without an error (a NIC window under a path's bandwidth-delay
    #: product: rdmasim.scenario.window), one line each; the summary ends with them
    warnings: list[str] = field(default_factory=list)

    def port_rows(self) -> list[dict[str, Any]]:
        """Per-port counters as rows: one per switch port and one per host NIC, with the columns of
        :data:`PORT_COLUMNS` (priority arrays summed or maxed over priorities)."""
        rows: list[dict[str, Any]] = []
        for name, sw in self.switches.items():
            for port, c in enumerate(sw["ports"]):
                rows.append({
                    "node": name, "kind": "switch", "port": port, "rx_pkts": c["rx_pkts"],
                    "tx_pkts": c["tx_pkts"], "rx_bytes": c["rx_bytes"], "tx_bytes": c["tx_bytes"],
                    "drops": sum(c["drops"].values()), "ecn_marked": c["ecn_marked"],
                    "pfc_xoff_sent": c["pfc_xoff_sent"], "pfc_rx_frames": c["pfc_rx_frames"],
                    "paused_ps": sum(c["paused_ps"]), "credit_stall_ps": sum(c.get("credit_stall_ps", ())),
                    "egress_peak_bytes": max(c["egress_peak_bytes"]),
                    "ingress_peak_bytes": max(c["ingress_peak_bytes"]), "trimmed_pkts": c.get("trims", 0),
                })
        for name, n in self.nics.items():
            rows.append({
                "node": name, "kind": "host", "port": 0, "rx_pkts": n["rx_frames"], "tx_pkts": n["tx_frames"],
                "rx_bytes": n["rx_bytes"], "tx_bytes": n["tx_bytes"], "drops": n["tx_dropped"],
                "ecn_marked": 0,
                "pfc_xoff_sent": 0, "pfc_rx_frames": n["pfc_rx_frames"], "paused_ps": sum(n["paused_ps"]),
                "credit_stall_ps": sum(n.get("credit_stall_ps", ())),
                "egress_peak_bytes": 0, "ingress_peak_bytes": 0, "trimmed_pkts": 0,
            })
        return rows

    def frames(self) -> dict[str, Any]:
        """Every table as a pandas DataFrame: ``flows``, ``ports``, and with time series
        ``flow_samples`` (t_ps, flow_id, bytes_acked, rate_bps) and ``queue_samples`` (long format:
        t_ps, probe, egress_bytes, ingress_bytes, paused), and over UET ``uet_endpoints`` (node and
        its endpoint counters, :data:`UET_ENDPOINT_COLUMNS`). Unfinished flows have ``<NA>`` in
        ``finish_ps``, ``fct_ps`` and ``slowdown`` (nullable dtypes)."""
        out = {"flows": self.to_pandas(), "ports": pd.DataFrame(self.port_rows(), columns=PORT_COLUMNS)}
        if self.flow_samples is not None:
            out["flow_samples"] = pd.DataFrame(self.flow_samples.as_dict())
        q = self.queue_samples
        if q is not None:
            n, k = q["egress_bytes"].shape
            out["queue_samples"] = pd.DataFrame({
                "t_ps": np.repeat(q["t_ps"][:n], k), "probe": np.tile(np.array(q["labels"], dtype=object), n),
                "egress_bytes": q["egress_bytes"].ravel(), "ingress_bytes": q["ingress_bytes"].ravel(),
                "paused": q["paused"].ravel(),
            })
        if self.uet_endpoints:
            out["uet_endpoints"] = pd.DataFrame(
                [{"node": n, **st} for n, st in self.uet_endpoints.items()], columns=UET_ENDPOINT_COLUMNS)
        return out

    def rows(self) -> list[dict[str, Any]]:
        """The per-flow table as a list of dicts (column order: :data:`FLOW_COLUMNS`)."""
        return [asdict(f) for f in self.flows]

    def to_pandas(self) -> pd.DataFrame:
        """The per-flow table as a pandas DataFrame (one row per flow, :data:`FLOW_COLUMNS`)."""
        df = pd.DataFrame(self.rows(), columns=FLOW_COLUMNS)
        df.attrs["ideal_fct"] = self.ideal_fct
        for c in ("finish_ps", "fct_ps"):
            df[c] = df[c].astype("Int64")
        df["slowdown"] = df["slowdown"].astype("Float64")
        return df

    def flows_csv(self) -> str:
        """The per-flow table as CSV text."""
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(FLOW_COLUMNS)
        for r in self.rows():
            w.writerow([_cell(r[c]) for c in FLOW_COLUMNS])
        return buf.getvalue()

    def metadata(self) -> dict[str, Any]:
        """What is needed to reproduce the run, and how long it took."""
        from rdmasim import __version__

        return {
            "rdmasim_version": __version__,
            "seed": self.seed,
            "name": self.name,
            "scenario_file": self.scenario_file,
            "scenario": "scenario.toml",
            "overrides": self.overrides,
            "sim_time_ps": self.sim_time_ps,
            "events": self.events,
            "wall_s": self.wall_s,
            "python": platform.python_version(),
            "flows": len(self.flows),
            "completed": sum(f.status == "ok" for f in self.flows),
            "complete": not self.interrupted,
            "collectives": self.collectives,
            "deadlock": None if self.deadlock is None else {
                "at_ps": self.deadlock[0], "cycle": [list(c) for c in self.deadlock[1]]},
            "ideal_fct": self.ideal_fct,
            "warnings": self.warnings,
            "columns": {"slowdown": slowdown_meaning(self.ideal_fct),
                        "ideal_fct_ps": f"ideal FCT {self.ideal_fct!r}: {IDEAL_FCT[self.ideal_fct]}"},
        }

    def write(
        self,
        out_dir: str | Path,
        formats: list[str] | None = None,
        switch_counters: bool = True,
        trace: np.ndarray | None = None,
        node_names: dict[int, str] | None = None,
    ) -> dict[str, str]:
        """Write the result files into ``out_dir`` (whole or not at all: see the module docs);
        returns {kind: path}. A write that fails raises :class:`~rdmasim.errors.ResultsWriteError`
        and leaves ``out_dir`` as it was."""
        staging = stage_out_dir(out_dir)
        try:
            files = self.write_into(staging, formats, switch_counters, trace, node_names)
            commit_out_dir(staging, out_dir)
        except OSError as exc:
            discard_staging(staging)
            raise write_error(out_dir, exc) from exc
        except BaseException:
            discard_staging(staging)
            raise
        self.files = _moved(files, staging, Path(out_dir))
        return self.files

    def write_into(
        self,
        out: Path,
        formats: list[str] | None = None,
        switch_counters: bool = True,
        trace: np.ndarray | None = None,
        node_names: dict[int, str] | None = None,
    ) -> dict[str, str]:
        """Write the result files into the existing folder ``out`` as they are (no staging). An
        OSError names the file whose write failed."""
        files: dict[str, str] = {}

        def put(kind: str, name: str, write: Any) -> None:
            path = out / name
            try:
                write(path)
            except OSError as exc:
                if exc.filename is None:  # a failed write() names no file: name it
                    raise OSError(exc.errno, exc.strerror, str(path)) from exc
                raise
            files[kind] = str(path)

        def ports(path: Path) -> None:
            with open(path, "w", newline="") as fh:
                w = csv.DictWriter(fh, PORT_COLUMNS, lineterminator="\n")
                w.writeheader()
                w.writerows(self.port_rows())

        kinds = table_formats(formats)
        frames = self.frames() if "parquet" in kinds or (
            "csv" in kinds and (self.flow_samples is not None or self.queue_samples is not None
                                or self.uet_endpoints)) else {}
        if "csv" in kinds:
            put("flows_csv", "flows.csv", lambda p: p.write_text(self.flows_csv()))
            put("ports_csv", "ports.csv", ports)
            for name in TABLES[2:] + OPTIONAL_TABLES:
                if name in frames:
                    put(f"{name}_csv", f"{name}.csv", lambda p, n=name: frames[n].to_csv(p, index=False))
        if "parquet" in kinds:
            for name in TABLES + OPTIONAL_TABLES:
                if name in frames:
                    put(f"{name}_parquet", f"{name}.parquet",
                        lambda p, n=name: self._to_parquet(frames[n], p))
        if switch_counters:
            def counters(path: Path) -> None:  # streamed: neither the whole text nor its pieces at once
                with open(path, "w") as fh:
                    json.dump(self.switches, fh, indent=1, sort_keys=True)

            put("switch_counters", "switch_counters.json", counters)
        if trace is not None:
            names = node_names or {}
            idx = np.array(sorted(names), dtype=np.int64)
            # the layout rdmasim.trace.load reads (records + node names)
            put("trace", "trace.npz", lambda p: np.savez_compressed(
                p, records=trace, node_index=idx, node_name=np.array([names[i] for i in idx], dtype=str)))
        if self.flow_samples is not None or self.queue_samples is not None:
            ts: dict[str, Any] = {}
            if self.flow_samples is not None:
                ts.update({f"flow_{k}": v for k, v in self.flow_samples.as_dict().items()})
            if self.queue_samples is not None:
                q = self.queue_samples
                ts.update(queue_t_ps=q["t_ps"], queue_egress_bytes=q["egress_bytes"],
                          queue_paused=q["paused"], queue_labels=np.array(q["labels"], dtype=str))
            put("timeseries", "timeseries.npz", lambda p: np.savez_compressed(p, **ts))
        put("scenario", "scenario.toml", lambda p: p.write_text(self.scenario_text))
        put("metadata", "metadata.json", lambda p: p.write_text(json.dumps(self.metadata(), indent=2)))
        self.files = files
        return files

    def _to_parquet(self, df: pd.DataFrame, path: Path) -> None:
        """One table as Parquet; the flows' ``slowdown`` and ``ideal_fct_ps`` columns carry their
        definition in the field metadata (key ``description``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        meta = self.metadata()["columns"]
        if "slowdown" in df.columns:
            schema = pa.schema([f.with_metadata({"description": meta[f.name]}) if f.name in meta else f
                                for f in table.schema], metadata=table.schema.metadata)
            table = table.cast(schema)
        pq.write_table(table, path)

    def plot(self, out_dir: str | Path, formats: tuple[str, ...] = ("png", "svg")) -> dict[str, str]:
        """Draw the run's plots into ``out_dir``: FCT slowdown by size, and with time series,
        goodput and DCQCN rates over time and the busiest switch queues with their pauses.
        Returns {plot name: path of the PNG}."""
        from rdmasim import plots

        out = Path(out_dir)
        made: dict[str, str] = {}
        rows = self.rows()

        def keep(name: str, fig: Any) -> None:
            paths = plots.save(fig, out / name, formats=formats)
            made[f"plot_{name}"] = str(paths[0])

        if any(r["finish_ps"] is not None for r in rows):
            title = f"{self.name or 'run'}: FCT slowdown"
            keep("fct_slowdown", plots.fct_slowdown_by_size(rows, title=title, ideal_fct=self.ideal_fct))
        s = self.flow_samples
        if s is not None and len(s.t_ps):
            line = max(self.host_rate_bps.values()) if self.host_rate_bps else None
            dsts = sorted({f.dst for f in self.flows})
            cap = sum(self.host_rate_bps.get(d, 0.0) for d in dsts) if self.host_rate_bps else None
            cap_label = None
            if cap:
                one = {self.host_rate_bps.get(d, 0.0) for d in dsts}
                each = f"{len(dsts)} x {next(iter(one)) / 1e9:g} Gb/s" if len(one) == 1 else \
                    f"{len(dsts)} links"
                cap_label = (f"receivers' link capacity ({each})" if len(dsts) > 1
                             else f"receiver's link capacity ({cap / 1e9:g} Gb/s)")
            keep("goodput", plots.goodput_over_time(
                s.as_dict(), flow_table=rows, line_rate_bps=line, capacity_bps=cap or None,
                capacity_label=cap_label, title=f"{self.name or 'run'}: goodput"))
            if (s.rate_bps > 0).any():
                fair, fair_label = None, None
                if len(dsts) == 1 and self.host_rate_bps.get(dsts[0]) and len(self.flows) > 1:
                    # every flow into one receiver: its link shared equally is each flow's fair rate
                    rx = self.host_rate_bps[dsts[0]]
                    fair = rx / len(self.flows)
                    fair_label = (f"fair share: {dsts[0]}'s link / {len(self.flows)} flows "
                                  f"({fair / 1e9:.3g} Gb/s)")
                keep("dcqcn_rates", plots.dcqcn_rates(s.as_dict(), line_rate_bps=line,
                                                      title=f"{self.name or 'run'}: DCQCN sending rate",
                                                      fair_share_bps=fair, fair_share_label=fair_label))
        q = self.queue_samples
        if q is not None and len(q["t_ps"]):
            top, note = _queues_to_draw(np.asarray(q["egress_bytes"]), np.asarray(q["paused"], dtype=bool))
            sub = {"t_ps": q["t_ps"], "egress_bytes": q["egress_bytes"][:, top],
                   "ingress_bytes": q["ingress_bytes"][:, top], "paused": q["paused"][:, top],
                   "missed": q["missed"]}
            title = f"{self.name or 'run'}: switch queues and PFC pauses" + (f"\n({note})" if note else "")
            keep("queues", plots.queue_timeline(sub, [q["labels"][i] for i in top], title=title))
        return made

    def summary(self, max_rows: int | None = 20) -> str:
        """A readable summary table: one line per flow (at most ``max_rows``; None: all) and the
        totals."""
        shown = self.flows if max_rows is None else self.flows[:max_rows]
        # one unit for the FCT column (the one its longest value reads best in), three decimals
        longest = max((f.fct_ps for f in shown if f.fct_ps is not None), default=0)
        unit, scale = next(((u, sc) for u, sc in (("s", 10**12), ("ms", 10**9), ("µs", 10**6))
                            if longest >= sc), ("ns", 10**3))
        head = (
            f"  {'id':>4} {'src':>8} {'dst':>8} {'verb':>5} {'bytes':>10} {f'FCT ({unit})':>12} "
            f"{'slowdown':>8} {'retx':>6} {'CNPs':>6}  status"
        )
        lines = [head]
        for f in shown:
            fct = f"{f.fct_ps / scale:,.3f}" if f.fct_ps is not None else "-"
            sd = f"{f.slowdown:.2f}" if f.slowdown is not None else "-"
            lines.append(
                f"  {f.flow_id:>4} {f.src:>8} {f.dst:>8} {f.verb:>5} {f.size_bytes:>10,} {fct:>12} {sd:>8} "
                f"{f.retx_pkts:>6} {f.cnps:>6}  {f.status}"
            )
        if len(shown) < len(self.flows):
            lines.append(f"  ... {len(self.flows) - len(shown)} more flows (rdmasim run -v shows all)")
        sds = sorted(f.slowdown for f in self.flows if f.slowdown is not None)
        ok = sum(f.status == "ok" for f in self.flows)
        lines.append(
            f"  flows completed: {ok}/{len(self.flows)}; simulated time {format_time(self.sim_time_ps)}; "
            f"{self.events:,} events in "
            + (f"{self.wall_s:.2f} s" if self.wall_s >= 0.1 else f"{self.wall_s * 1e3:.1f} ms")
        )
        if sds:
            p99 = sds[min(len(sds) - 1, int(0.99 * len(sds)))]
            lines.append(f"  slowdown: median {sds[len(sds) // 2]:.2f}, p99 {p99:.2f}, max {sds[-1]:.2f} "
                         f"(ideal FCT {self.ideal_fct!r}: {IDEAL_FCT[self.ideal_fct]})")
        for c in self.collectives:
            if "busbw_Bps" in c:
                lines.append(f"  collective {c['collective']} on {c['ranks']} ranks, "
                             f"{c['size_bytes']:,} bytes: {format_time(c['time_ps'])}, algbw "
                             f"{c['algbw_Bps'] * 8 / 1e9:.2f} Gb/s, busbw "
                             f"{c['busbw_Bps'] * 8 / 1e9:.2f} Gb/s ({c['busbw_over_link_rate']:.1%} of the "
                             "link rate)")
            else:  # a pattern with no bus bandwidth (halo exchange)
                lines.append(f"  {c['collective']} on {c['ranks']} ranks, {c['size_bytes']:,} bytes per "
                             f"face, {c['timesteps']} timesteps: {format_time(c['time_ps'])} "
                             f"({format_time(round(c['time_per_step_ps']))} per timestep)")
            if c.get("wait_ps"):
                host, most = max(c["wait_ps"].items(), key=lambda kv: kv[1])
                lines.append(f"    critical path: {c['bottleneck']}; longest wait {host} "
                             f"{format_time(most)}")
        if self.deadlock is not None:
            t_ps, cycle = self.deadlock
            s0, p0, _ = cycle[0]
            ports = self.switches.get(s0, {}).get("ports", [])
            credits = p0 < len(ports) and "credit_stalled_mask" in ports[p0]
            ring = " -> ".join(f"{s}:{p}/{'vl' if credits else 'p'}{pr}" for s, p, pr in cycle)
            kind = "CREDIT LOOP DEADLOCK" if credits else "PFC DEADLOCK"
            lines.append(f"  {kind} at {format_time(t_ps)}: {ring}")
        for name, sw in self.switches.items():
            t = sw["totals"]
            lines.append(
                f"  switch {name}: {t['tx_pkts']:,} pkts out, {t['drops']:,} drops, "
                f"{t['ecn_marked']:,} ECN marks, {t['pfc_xoff_sent']:,} PFC XOFF"
            )
        if self.uet_endpoints:
            eps = self.uet_endpoints.values()
            tot = {k: sum(st[k] for st in eps) for k in UET_ENDPOINT_COLUMNS[1:]}
            lines.append(
                f"  UET PDCs: {tot['pdcs_created']:,} created at targets, {tot['pdcs_closed']:,} closed, "
                f"{tot['pdcs_refused']:,} SYNs refused (NO_PDC_AVAIL), {tot['close_reqs_sent']:,} close "
                f"requests sent, {tot['close_gave_up']:,} closes given up, {tot['pdcs_live']:,} PDC ids in "
                "use at the end (table uet_endpoints)"
            )
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def write_error(out_dir: str | Path, exc: OSError) -> ResultsWriteError:
    """The error of a failed results write: the folder, the file, why, and that nothing changed."""
    what = f"{Path(exc.filename).name}: " if exc.filename else ""
    return ResultsWriteError(f"cannot write the results to {str(out_dir)!r}: {what}{exc.strerror or exc} "
                             f"(nothing written; {str(out_dir)!r} is as it was before the run)")


def pyarrow_available() -> bool:
    """Whether pyarrow is importable (Parquet tables are written only then)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is not None


def table_formats(formats: list[str] | None) -> list[str]:
    """The table formats to write for ``[outputs] formats``: ``"auto"`` (the default) is Parquet
    when pyarrow is importable and CSV otherwise; ``"parquet"`` without pyarrow is dropped (the
    scenario's validation says so)."""
    out: list[str] = []
    for f in formats or ["auto"]:
        if f == "auto":
            f = "parquet" if pyarrow_available() else "csv"
        if f == "parquet" and not pyarrow_available():
            continue
        if f not in out:
            out.append(f)
    return out


def read_table(folder: str | Path, name: str) -> pd.DataFrame:
    """Table ``name`` (one of :data:`TABLES`, or of :data:`OPTIONAL_TABLES` when the run has it)
    of a results folder as a DataFrame, from ``NAME.parquet`` if the folder has it, else ``NAME.csv``.
    Raises FileNotFoundError naming the folder and the table when it has neither. The flows table
    carries the run's ideal-FCT definition in ``attrs["ideal_fct"]`` (from metadata.json; absent for
    older runs)."""
    if name not in TABLES + OPTIONAL_TABLES:
        raise ValueError(f"table {name!r}: unknown (allowed: {', '.join(TABLES + OPTIONAL_TABLES)})")
    base = Path(folder)
    if (base / f"{name}.parquet").is_file():
        df = pd.read_parquet(base / f"{name}.parquet")
    elif (base / f"{name}.csv").is_file():
        df = pd.read_csv(base / f"{name}.csv")
        if name == "flows":
            for c in ("finish_ps", "fct_ps"):
                df[c] = df[c].astype("Int64")
    else:
        raise FileNotFoundError(2, f"results folder has no {name}.parquet or {name}.csv", str(base))
    if name == "flows":
        try:
            ideal = json.loads((base / _MARKER).read_text(encoding="utf-8")).get("ideal_fct")
        except (OSError, ValueError, AttributeError):
            ideal = None
        if ideal in IDEAL_FCT:
            df.attrs["ideal_fct"] = ideal
    return df


def read_flows_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a ``flows.csv`` as dicts of strings."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))
