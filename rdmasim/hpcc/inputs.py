"""Readers of the HPCC ns-3 simulator's input files (``simulation/mix/`` of
alibaba-edu/High-Precision-Congestion-Control), as its ``scratch/third.cc`` reads them:

* ``config.txt``: one ``KEY value...`` per line (``config_doc.txt`` adds ``{...}`` explanations,
  which are ignored); it names the other three files (``TOPOLOGY_FILE``, ``FLOW_FILE``, ``TRACE_FILE``).
* ``topology.txt``: ``nodes switches links``; the switch node ids; then one ``src dst rate delay
  error_rate`` per link (rates like ``100Gbps``, delays like ``0.001ms``).
* ``flow.txt``: the flow count, then one ``src dst priority dport size start_time`` per flow (size in
  bytes, start in seconds).
* ``trace.txt``: the count of traced nodes, then their ids.

The counts say how many records follow; text after them is not read (ns-3 does the same, and the
repository's files end with a few lines of explanation). Every problem raises
:class:`HpccInputError` naming the file, the line, the value and what is allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

from rdmasim.units import parse_rate, parse_time

#: bytes of the largest message rdmasim posts (flows[].size)
MAX_FLOW_BYTES = (1 << 31) - 1


class HpccInputError(ValueError):
    """A problem in an HPCC input file: ``FILE:LINE: what (allowed: ...)``."""


@dataclass(frozen=True)
class Link:
    """One ``topology.txt`` link: node ids, line rate (b/s), delay (ps), error rate, and its line."""

    a: int
    b: int
    rate_bps: int
    delay_ps: int
    error_rate: float
    line: int


@dataclass(frozen=True)
class Topology:
    """``topology.txt``: node count, switch ids, links; hosts are the other ids."""

    path: Path
    nodes: int
    switches: frozenset[int]
    links: list[Link]
    trailing_lines: int = 0

    @property
    def hosts(self) -> list[int]:
        """Host node ids in id order."""
        return [i for i in range(self.nodes) if i not in self.switches]


@dataclass(frozen=True)
class Flow:
    """One ``flow.txt`` flow; ``start_ps`` is its start time (given in seconds) in picoseconds."""

    src: int
    dst: int
    priority: int
    dport: int
    size: int
    start_ps: int
    line: int


@dataclass
class Config:
    """``config.txt``: KEY -> (line, values) in file order (a repeated key: the last, as ns-3)."""

    path: Path | None
    entries: dict[str, tuple[int, list[str]]] = field(default_factory=dict)
    repeated: list[str] = field(default_factory=list)

    def where(self, key: str) -> str:
        """``config.txt:LINE`` of a key (or just the file name)."""
        name = self.path.name if self.path else "config"
        return f"{name}:{self.entries[key][0]}" if key in self.entries else name


@dataclass(frozen=True)
class Inputs:
    """Everything one ns-3 run reads."""

    config: Config
    topology: Topology
    flows: list[Flow]
    flow_path: Path
    traced: list[int]
    trace_path: Path | None
    flow_trailing_lines: int = 0


class _Tokens:
    """Whitespace-separated tokens of a file with their line numbers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[tuple[int, str]] = []
        with open(path, encoding="utf-8", errors="replace") as fh:
            self.lines = fh.read().splitlines()
        for n, line in enumerate(self.lines, 1):
            self.items.extend((n, tok) for tok in line.split())
        self.pos = 0

    def take(self, what: str) -> tuple[int, str]:
        if self.pos >= len(self.items):
            last = len(self.lines)
            raise HpccInputError(f"{self.path.name}:{last}: file ends where {what} was expected")
        item = self.items[self.pos]
        self.pos += 1
        return item

    def int(self, what: str, lo: int, hi: int) -> tuple[int, int]:
        line, tok = self.take(what)
        try:
            v = int(tok)
        except ValueError:
            raise HpccInputError(
                f"{self.path.name}:{line}: {what} = {tok!r}: not an integer (allowed: {lo}..{hi})"
            ) from None
        if not lo <= v <= hi:
            raise HpccInputError(f"{self.path.name}:{line}: {what} = {v}: out of range (allowed: {lo}..{hi})")
        return line, v

    def rest_lines(self) -> int:
        """Non-empty lines after the last token taken (not read, as by ns-3)."""
        if self.pos >= len(self.items):
            return 0
        first = self.items[self.pos][0]
        return sum(1 for ln in self.lines[first - 1 :] if ln.strip())


def _ns3_time_ps(text: str) -> int:
    """An ns-3 time string (``1000ns``, ``0.001ms``; a bare number is seconds) in picoseconds."""
    if re.fullmatch(r"[0-9.eE+-]+", text):
        return int(Decimal(text) * 10**12)
    return parse_time(text)


def _ns3_rate_bps(text: str) -> int:
    """An ns-3 DataRate string (``100Gbps``, ``100Gb/s``; a bare number is b/s) in b/s."""
    if re.fullmatch(r"[0-9]+", text):
        return int(text)
    return parse_rate(text)


def read_config(path: Path) -> Config:
    """``config.txt`` (or ``config_doc.txt``) as KEY -> (line, values)."""
    cfg = Config(path)
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh.read().splitlines(), 1):
            toks = re.sub(r"\{[^}]*\}?", " ", line).split()
            if not toks:
                continue
            key, values = toks[0], toks[1:]
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", key):
                raise HpccInputError(
                    f"{path.name}:{n}: {key!r}: not a configuration key "
                    "(allowed: KEY value..., KEY in capitals as in config_doc.txt)"
                )
            if key in cfg.entries:
                cfg.repeated.append(key)
            cfg.entries[key] = (n, values)
    return cfg


def read_topology(path: Path) -> Topology:
    """``topology.txt``."""
    t = _Tokens(path)
    _, nodes = t.int("node count", 1, 1 << 24)
    _, n_sw = t.int("switch count", 0, nodes)
    _, n_links = t.int("link count", 0, 1 << 26)
    switches: set[int] = set()
    for i in range(n_sw):
        line, sid = t.int(f"switch id {i}", 0, nodes - 1)
        if sid in switches:
            raise HpccInputError(f"{path.name}:{line}: switch id {sid} given twice")
        switches.add(sid)
    links: list[Link] = []
    for i in range(n_links):
        line, a = t.int(f"link {i} src", 0, nodes - 1)
        _, b = t.int(f"link {i} dst", 0, nodes - 1)
        if a == b:
            raise HpccInputError(
                f"{path.name}:{line}: link {i} from node {a} to itself (allowed: two different node ids)"
            )
        _, rate_s = t.take(f"link {i} rate")
        try:
            rate = _ns3_rate_bps(rate_s)
        except (ValueError, TypeError, InvalidOperation):
            raise HpccInputError(
                f"{path.name}:{line}: link {i} rate = {rate_s!r}: not a rate (allowed: like 100Gbps, 25Gb/s)"
            ) from None
        _, delay_s = t.take(f"link {i} delay")
        try:
            delay = _ns3_time_ps(delay_s)
        except (ValueError, TypeError, InvalidOperation):
            raise HpccInputError(
                f"{path.name}:{line}: link {i} delay = {delay_s!r}: not a time "
                "(allowed: like 1000ns, 0.001ms, 1us)"
            ) from None
        _, err_s = t.take(f"link {i} error rate")
        try:
            err = float(err_s)
        except ValueError:
            err = float("nan")
        if not 0.0 <= err <= 1.0 or rate <= 0 or delay < 0:
            bad = (
                f"error rate = {err_s!r}"
                if not 0.0 <= err <= 1.0
                else f"rate = {rate_s!r}"
                if rate <= 0
                else f"delay = {delay_s!r}"
            )
            raise HpccInputError(
                f"{path.name}:{line}: link {i} {bad}: out of range "
                "(allowed: error rate 0..1, rate > 0, delay >= 0)"
            )
        links.append(Link(a, b, rate, delay, err, line))
    return Topology(path, nodes, frozenset(switches), links, t.rest_lines())


def read_flows(path: Path, topo: Topology) -> tuple[list[Flow], int]:
    """``flow.txt``; every flow goes between two hosts of ``topo``. Also the count of non-empty lines
    after the declared flows (not read)."""
    t = _Tokens(path)
    _, n = t.int("flow count", 0, 10_000_000)
    flows: list[Flow] = []
    for i in range(n):
        line, src = t.int(f"flow {i} src", 0, topo.nodes - 1)
        _, dst = t.int(f"flow {i} dst", 0, topo.nodes - 1)
        _, pg = t.int(f"flow {i} priority", 0, 7)
        _, dport = t.int(f"flow {i} dport", 0, 65535)
        _, size = t.int(f"flow {i} size", 1, MAX_FLOW_BYTES)
        _, start_s = t.take(f"flow {i} start_time")
        try:
            start = int(Decimal(start_s) * 10**12)
        except InvalidOperation:
            start = -1
        if start < 0:
            raise HpccInputError(
                f"{path.name}:{line}: flow {i} start_time = {start_s!r}: "
                "not a time in seconds (allowed: a number >= 0, e.g. 2.0)"
            )
        for role, node in (("src", src), ("dst", dst)):
            if node in topo.switches:
                raise HpccInputError(
                    f"{path.name}:{line}: flow {i} {role} = {node}: a switch "
                    f"(allowed: a host id, not one of the switches of {topo.path.name})"
                )
        if src == dst:
            raise HpccInputError(
                f"{path.name}:{line}: flow {i} from host {src} to itself (allowed: two different hosts)"
            )
        flows.append(Flow(src, dst, pg, dport, size, start, line))
    return flows, t.rest_lines()


def read_trace(path: Path, topo: Topology) -> list[int]:
    """``trace.txt``: the node ids to trace (ids past the last node are skipped by ns-3; here too,
    and :mod:`rdmasim.hpcc.translate` names them)."""
    t = _Tokens(path)
    _, n = t.int("traced node count", 0, 1 << 24)
    return [t.int(f"traced node {i}", 0, (1 << 32) - 1)[1] for i in range(n)]


def _resolve(cfg_path: Path, value: str) -> Path:
    """A file a config names: as given (ns-3 runs from ``simulation/``, so ``mix/x.txt``), relative
    to the config's folder or its parent, or by its name beside the config."""
    p = Path(value)
    base = cfg_path.parent
    for cand in (p, base / p, base.parent / p, base / p.name):
        if cand.is_file():
            return cand
    raise FileNotFoundError(
        2,
        f"{cfg_path.name}: names {value!r}, not found beside it or in its parent folder",
        str(base / p.name),
    )


def read_inputs(where: str | Path) -> Inputs:
    """The inputs of one run: ``where`` is a config file, or a folder holding ``config.txt`` (or only
    ``topology.txt``, ``flow.txt`` and optionally ``trace.txt``: third.cc's defaults for the rest)."""
    where = Path(where)
    if where.is_dir():
        cfg_path = where / "config.txt"
        if cfg_path.is_file():
            cfg = read_config(cfg_path)
        else:
            cfg = Config(None)
    elif where.is_file():
        cfg_path = where
        cfg = read_config(where)
    else:
        raise FileNotFoundError(2, "no such file or folder", str(where))
    folder = where if where.is_dir() else where.parent

    def named(key: str, default: str, required: bool = True) -> Path | None:
        if key in cfg.entries and cfg.entries[key][1]:
            return _resolve(cfg_path, cfg.entries[key][1][0])
        p = folder / default
        if p.is_file() or required:
            if not p.is_file():
                raise FileNotFoundError(2, f"no {key} in the config and no {default} in the folder", str(p))
            return p
        return None

    topo_path = named("TOPOLOGY_FILE", "topology.txt")
    flow_path = named("FLOW_FILE", "flow.txt")
    trace_path = named("TRACE_FILE", "trace.txt", required=False)
    assert topo_path is not None and flow_path is not None
    topo = read_topology(topo_path)
    flows, rest = read_flows(flow_path, topo)
    traced = read_trace(trace_path, topo) if trace_path else []
    return Inputs(cfg, topo, flows, flow_path, traced, trace_path, rest)
