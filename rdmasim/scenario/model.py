"""What a scenario is once read: :class:`Scenario`, its :class:`Problem` s, :class:`ScenarioError`,
and the host names a topology will have.  :mod:`rdmasim.scenario.load` builds these;
:mod:`rdmasim.scenario.traffic` reads them (both depend on this module, not on each other)."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field
from typing import Any

_MISSING = object()

#: the ``[traffic.*]`` generator tables, in the order their flows are appended
GENERATORS = ("incast", "permutation", "all_to_all", "poisson", "collective", "halo")


@dataclass(frozen=True)
class Problem:
    """One validation error."""

    file: str
    path: str
    message: str
    value: Any = _MISSING
    allowed: str = ""

    def __str__(self) -> str:
        val = "" if self.value is _MISSING else f" = {_REPR.repr(self.value)}"
        allowed = f" (allowed: {self.allowed})" if self.allowed else ""
        return _printable(f"{self.file}: {self.path}{val}: {self.message}{allowed}")


def _printable(text: str) -> str:
    """``text`` on one line: control characters (a key may hold any) escaped as in a repr."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: values in messages: long lists and strings shortened, deep nesting cut
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxdict = 12
_REPR.maxlevel = 4


class ScenarioError(ValueError):
    """A scenario file is invalid; ``problems`` lists every error found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass
class Scenario:
    """A validated scenario: ``values`` maps every scalar key path to its (parsed) value, defaults
    filled in; ``arrays`` maps each array section (``flows``, ``impairments.loss``, ...) to its rows
    (dicts of parsed values, defaults filled in)."""

    file: str
    text: str
    values: dict[str, Any]
    arrays: dict[str, list[dict[str, Any]]]
    raw: dict[str, Any] = field(default_factory=dict)
    #: the overrides applied on top of ``text`` (key path -> value as given), see :func:`loads`
    overrides: dict[str, Any] = field(default_factory=dict)
    #: things that will not stop the run but are not what the file asks (shown by validate and run)
    warnings: list[Problem] = field(default_factory=list)
    #: ``values["outputs.dir"]`` is the default (the file gives no ``[outputs] dir``): a run numbers
    #: it rather than replace an earlier run there (:func:`rdmasim.scenario.run.results_dir`)
    numbered_out_dir: bool = False

    @property
    def generators(self) -> tuple[str, ...]:
        """The ``[traffic.*]`` generator tables the file has (``incast``, ``poisson``, ...)."""
        t = self.raw.get("traffic")
        return tuple(g for g in GENERATORS if isinstance(t, dict) and isinstance(t.get(g), dict))

    @property
    def has_incast(self) -> bool:
        """The file has a ``[traffic.incast]`` table."""
        return "incast" in self.generators

    def __getitem__(self, path: str) -> Any:
        return self.values[path]


#: most hosts a topology may have (a fat tree of k = 64)
MAX_HOSTS = 65_536


def dragonfly_groups(values: dict[str, Any]) -> int:
    """A dragonfly's group count: topology.groups, or a*h + 1 when 0."""
    g = values["topology.groups"]
    return g or values["topology.routers_per_group"] * values["topology.global_per_router"] + 1


def rail_units(values: dict[str, Any]) -> tuple[int, int]:
    """A rail_optimized fabric's (nodes per scalable unit, units)."""
    n = values["topology.nodes"]
    per_unit = values["topology.nodes_per_unit"] or n
    return per_unit, -(-n // per_unit)


def host_count(values: dict[str, Any]) -> int:
    """How many hosts the topology will have, computed without naming them."""
    kind = values["topology.kind"]
    n = {
        "back_to_back": lambda: 2,
        "star": lambda: values["topology.n"],
        "incast": lambda: values["topology.n_senders"] + 1,
        "dumbbell": lambda: values["topology.n_left"] + values["topology.n_right"],
        "leaf_spine": lambda: values["topology.leaves"] * values["topology.hosts_per_leaf"],
        "fat_tree": lambda: values["topology.k"] ** 3 // 4,
        "dragonfly": lambda: dragonfly_groups(values) * values["topology.routers_per_group"]
        * values["topology.hosts_per_router"],
        "rail_optimized": lambda: values["topology.nodes"] * values["topology.gpus_per_node"],
        "explicit": lambda: len(values["topology.hosts"]),
    }[kind]
    return int(n())


def host_names(values: dict[str, Any]) -> list[str]:
    """Host names the topology will have (builders name hosts deterministically)."""
    kind = values["topology.kind"]
    if kind == "back_to_back":
        return ["a", "b"]
    if kind == "star":
        return [f"h{i}" for i in range(values["topology.n"])]
    if kind == "incast":
        return [f"h{i}" for i in range(values["topology.n_senders"] + 1)]
    if kind == "dumbbell":
        return [f"l{i}" for i in range(values["topology.n_left"])] + [
            f"r{i}" for i in range(values["topology.n_right"])
        ]
    if kind == "leaf_spine":
        return [f"h{i}" for i in range(values["topology.leaves"] * values["topology.hosts_per_leaf"])]
    if kind == "fat_tree":
        h = values["topology.k"] // 2
        return [f"h{p}_{i}_{j}" for p in range(values["topology.k"]) for i in range(h) for j in range(h)]
    if kind == "dragonfly":
        a, p = values["topology.routers_per_group"], values["topology.hosts_per_router"]
        return [f"h{g}_{r}_{i}" for g in range(dragonfly_groups(values)) for r in range(a) for i in range(p)]
    if kind == "rail_optimized":
        gpus = values["topology.gpus_per_node"]
        return [f"n{n}_g{i}" for n in range(values["topology.nodes"]) for i in range(gpus)]
    return list(values["topology.hosts"])
