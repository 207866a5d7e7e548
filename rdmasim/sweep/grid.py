"""Parameter grids: ``key=v1,v2`` specs -> the cartesian product of override dicts, each run named
by a stable ``run_key``."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rdmasim.scenario.load import parse_assignment
from rdmasim.scenario.load import split_values as split_values

#: the key seeds=N replicates vary
SEED_KEY = "simulation.seed"
#: most runs one sweep may have (every run is validated up front and has a row in the store)
MAX_RUNS = 100_000

ParamsLike = Mapping[str, Any] | Iterable[str] | None


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: the overrides it applies to the scenario and its stable key."""

    index: int
    run_key: str
    overrides: dict[str, Any]


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no spaces: the same text for equal values."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def _code_version() -> str:
    from rdmasim import __version__

    return __version__


def scenario_digest(scenario_text: str, version: str | None = None) -> str:
    """16 hex digits of SHA-256 over the scenario text and the rdmasim version (default: this
    one): the version of a scenario a sweep store holds runs of."""
    blob = canonical_json({"rdmasim": version or _code_version(), "scenario": scenario_text})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def run_key(scenario_text: str, overrides: Mapping[str, Any], version: str | None = None) -> str:
    """16 hex digits of SHA-256 over the canonical JSON of ``overrides``, the scenario text and the
    rdmasim version (default: this one): equal for the same run whatever the order the overrides
    were given in, different when the scenario or the code that runs it changes."""
    blob = canonical_json({"overrides": dict(overrides), "rdmasim": version or _code_version(),
                           "scenario": scenario_text})
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def parse_param(spec: str) -> tuple[str, list[Any]]:
    """``"link.loss=0,0.01"`` -> ``("link.loss", [0, 0.01])``; values are read as TOML values
    (:func:`rdmasim.scenario.load.parse_assignment`, the parser ``rdmasim run --set`` uses too).
    Raises ValueError if malformed."""
    return parse_assignment(spec, "--param")


def normalize_params(params: ParamsLike) -> dict[str, list[Any]]:
    """Params as {key: [values]} in the order given: from a mapping (a scalar value is one value)
    or from ``key=v1,v2`` strings."""
    if params is None:
        return {}
    out: dict[str, list[Any]] = {}
    if isinstance(params, Mapping):
        for key, vals in params.items():
            seq = list(vals) if isinstance(vals, (list, tuple, range)) else [vals]
            if not seq:
                raise ValueError(f"parameter {key!r}: no values")
            out[str(key)] = seq
        return out
    for spec in params:
        key, vals = parse_param(spec)
        if key in out:
            raise ValueError(f"--param {key!r} given twice: list every value in one --param")
        out[key] = vals
    return out


def expand(params: ParamsLike, seeds: int | None = None) -> list[dict[str, Any]]:
    """The cartesian product of ``params`` as override dicts, first key slowest, in value order;
    ``seeds=N`` adds ``simulation.seed`` = 1..N (innermost: the replicates of a combination are
    adjacent). Duplicate combinations are dropped."""
    grid = normalize_params(params)
    if seeds is not None:
        if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_RUNS:
            raise ValueError(f"seeds = {seeds!r} is out of range (allowed: 1..{MAX_RUNS})")
        if SEED_KEY in grid:
            raise ValueError(f"give either seeds or a {SEED_KEY} parameter, not both")
        grid[SEED_KEY] = list(range(1, seeds + 1))
    keys = list(grid)
    n = 1
    for k in keys:
        n *= len(grid[k])
    if n > MAX_RUNS:
        sizes = " x ".join(f"{len(grid[k])} ({k})" for k in keys)
        raise ValueError(f"the grid has {n:,} runs ({sizes}) (allowed: at most {MAX_RUNS:,} runs per sweep)")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for combo in itertools.product(*(grid[k] for k in keys)):
        ov = dict(zip(keys, combo, strict=True))
        c = canonical_json(ov)
        if c not in seen:
            seen.add(c)
            out.append(ov)
    return out


def plan(scenario_text: str, params: ParamsLike, seeds: int | None = None) -> list[RunSpec]:
    """The runs of a sweep, in a deterministic order, each with its :func:`run_key`."""
    return [RunSpec(i, run_key(scenario_text, ov), ov) for i, ov in enumerate(expand(params, seeds))]


def param_keys(specs: Sequence[RunSpec]) -> list[str]:
    """The override keys of ``specs`` in first-seen order."""
    keys: dict[str, None] = {}
    for s in specs:
        keys.update(dict.fromkeys(s.overrides))
    return list(keys)


def short_names(keys: Sequence[str]) -> dict[str, str]:
    """Each key path's shortest tail of dotted parts that no other key of ``keys`` ends with,
    brackets dropped: ``link.rate`` -> ``rate``, ``impairments.loss[0].probability`` ->
    ``probability`` (``loss0.probability`` when another key ends in ``probability``)."""
    parts = {k: [re.sub(r"\[(\d*)\]", r"\1", p) for p in k.split(".")] for k in keys}
    depth = dict.fromkeys(keys, 1)
    for _ in range(max((len(p) for p in parts.values()), default=0)):
        tails: dict[str, list[str]] = {}
        for k in keys:
            tails.setdefault(".".join(parts[k][-depth[k]:]), []).append(k)
        clash = [k for ks in tails.values() if len(ks) > 1 for k in ks if depth[k] < len(parts[k])]
        if not clash:
            break
        for k in clash:
            depth[k] += 1
    return {k: ".".join(parts[k][-depth[k]:]) for k in keys}


def show_value(v: Any) -> str:
    """A parameter value as text: strings as they are, booleans lowercase, lists joined by ``_``."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (list, tuple)):
        return "_".join(show_value(x) for x in v)
    if isinstance(v, dict):
        return canonical_json(v)
    return "-" if v is None else str(v)


#: longest run folder name, in bytes (file systems allow 255)
MAX_NAME_BYTES = 200


def run_names(overrides: Sequence[Mapping[str, Any]]) -> list[str]:
    """A readable, file-system-safe, unique name per run: ``algorithm=dcqcn,rate=25Gbps,seed=1``
    (each key by its :func:`short_names` tail, in the grid's key order). Characters other than
    letters, digits and ``.+-_`` become ``_``; names longer than :data:`MAX_NAME_BYTES` are cut and
    names two runs would share get ``~`` and 8 hex digits of their overrides' hash."""
    keys: dict[str, None] = {}
    for ov in overrides:
        keys.update(dict.fromkeys(ov))
    short = short_names(list(keys))

    def safe(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9.+\-]+", "_", text).strip("_")

    def digest(ov: Mapping[str, Any]) -> str:
        return hashlib.sha256(canonical_json(dict(ov)).encode()).hexdigest()[:8]

    names = []
    for ov in overrides:
        name = ",".join(f"{safe(short[k])}={safe(show_value(v))}" for k, v in ov.items()) or "run"
        if name.startswith("."):
            name = "_" + name
        if len(name.encode()) > MAX_NAME_BYTES:
            name = name.encode()[: MAX_NAME_BYTES - 9].decode("ascii", "ignore") + "~" + digest(ov)
        names.append(name)
    count: dict[str, int] = {}
    for n in names:
        count[n] = count.get(n, 0) + 1
    return [n if count[n] == 1 else f"{n[: MAX_NAME_BYTES - 9]}~{digest(ov)}"
            for n, ov in zip(names, overrides, strict=True)]
