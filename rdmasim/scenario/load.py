"""Load and validate scenario files against :data:`rdmasim.scenario.schema.SCHEMA`.

All problems are collected and reported at once, each naming the file, the key path, the value
and what is allowed.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomllib

from rdmasim._userfile import read_user_file
from rdmasim.checks import check_int, check_real
from rdmasim.errors import UserInputError
from rdmasim.scenario.model import (  # noqa: F401  (MAX_HOSTS: re-exported)
    _MISSING,
    GENERATORS,
    MAX_HOSTS,
    Problem,
    Scenario,
    ScenarioError,
    dragonfly_groups,
    host_count,
    host_names,
    rail_units,
)
from rdmasim.scenario.schema import ARRAYS, SCHEMA, TABLES, Opt
from rdmasim.scenario.traffic import traffic_table
from rdmasim.units import parse_rate, parse_size, parse_time

#: topology kind -> the topology.* parameters it takes
KIND_PARAMS: dict[str, tuple[str, ...]] = {
    "back_to_back": (),
    "star": ("n",),
    "incast": ("n_senders",),
    "dumbbell": ("n_left", "n_right", "bottleneck_rate"),
    "leaf_spine": ("leaves", "spines", "hosts_per_leaf", "fabric_rate"),
    "fat_tree": ("k",),
    "dragonfly": ("routers_per_group", "hosts_per_router", "global_per_router", "groups", "routing",
                  "global_rate", "hop_classes"),
    "rail_optimized": ("nodes", "gpus_per_node", "spines", "nodes_per_unit", "fabric_rate"),
    "explicit": ("hosts", "switches", "links"),
}

_NVIDIA_NAMES = (
    "rpg_time_reset",
    "rpg_byte_reset",
    "rpg_threshold",
    "rpg_ai_rate",
    "rpg_hai_rate",
    "rpg_gd",
    "rpg_min_dec_fac",
    "rpg_min_rate",
    "rpg_max_rate",
    "rate_to_set_on_first_cnp",
    "dce_tcp_g",
    "dce_tcp_rtt",
    "initial_alpha_value",
    "rate_reduce_monitor_period",
    "min_time_between_cnps",
    "clamp_tgt_rate",
    "clamp_tgt_rate_after_time_inc",
)


def flow_control(v: dict[str, Any]) -> str:
    """The link-level flow control a scenario's values ask for: ``switch.flow_control``, with
    ``"auto"`` meaning credits on InfiniBand (which has no PFC) and PFC on RoCE."""
    fc = str(v["switch.flow_control"])
    if fc == "auto":
        return "credits" if v["link.layer"] == "ib" else "pfc"
    return fc


def _fmt_path(path: str) -> str:
    return path


class _NeedsUnit(str):
    """An error message that says all there is to say (no "allowed" part is added)."""


#: dimension -> (an example unit, the units to list) for the "needs a unit" message
_UNIT_HINTS = {"time": ("us", "ps, ns, us, ms, s"),
               "rate": ("Gbps", "bps, Kbps, Mbps, Gbps, Tbps, or B/s for bytes")}


def needs_unit(dim: str, value: Any) -> str | None:
    """The refusal of a bare number ``value`` given for a time or rate (``dim``), or None.

    In scenario files and override values a time or a rate must carry its unit (``"1us"``,
    ``"100Gbps"``): a bare number is refused rather than read in picoseconds or bits/s. Zero is
    the same in every unit and stays allowed bare; sizes are not checked here (a bare number of
    bytes is their documented form)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
        return None
    unit, units = _UNIT_HINTS[dim]
    return _NeedsUnit(f'a {dim} needs a unit, e.g. "{value}{unit}" (units: {units})')


def _check_value(opt: Opt, value: Any) -> tuple[Any, str | None]:
    """Parsed value, or an error message."""
    k = opt.kind
    parsed: Any = value
    dim = {"time": "time", "time?": "time", "rate": "rate"}.get(k, opt.dim)
    if dim is not None:
        bare = needs_unit(dim, value)
        if bare is not None:
            return None, bare
        if k == "str" and value == 0 and not isinstance(value, bool) and opt.default == "0":
            value = parsed = "0"  # a rate option whose "0" means "none" (max_rate = 0)
    if k == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return None, f"expected an integer, got {type(value).__name__}"
    elif k == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None, f"expected a number, got {type(value).__name__}"
        if math.isnan(value) or math.isinf(value):
            return None, "not a finite number"
        parsed = float(value)
    elif k == "bool":
        if not isinstance(value, bool):
            return None, f"expected true or false, got {type(value).__name__}"
    elif k == "str":
        if not isinstance(value, str):
            return None, f"expected a string, got {type(value).__name__}"
    elif k in ("time", "rate", "size", "time?"):
        if k == "time?" and value == "never":
            return None, None
        fn = {"time": parse_time, "time?": parse_time, "rate": parse_rate, "size": parse_size}[k]
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return None, f"expected a string with a unit or an integer, got {type(value).__name__}"
        try:
            parsed = fn(value)
        except (TypeError, ValueError) as exc:
            return None, str(exc)
    elif k in ("id", "list[id]"):
        items = [value] if k == "id" else value
        if (k == "list[id]" and not isinstance(value, list)) or any(
            isinstance(x, bool) or not isinstance(x, (str, int)) or x == "" for x in items
        ):
            return None, "expected a string or an integer" if k == "id" else "expected a list of flow ids"
        return (value if k == "id" else list(value)), None
    elif k in ("list[int]", "list[str]", "node_pair"):
        want = int if k == "list[int]" else str
        if not isinstance(value, list) or any(isinstance(x, bool) or not isinstance(x, want) for x in value):
            return None, f"expected a list of {want.__name__}s"
        if k == "node_pair" and (len(value) != 2 or value[0] == value[1]):
            return None, "expected two different node names"
        items = value
        if opt.choices is not None and any(x not in opt.choices for x in items):
            return None, "not an allowed value"
        if (
            opt.lo is not None
            and any(x < opt.lo for x in items)
            or opt.hi is not None
            and any(x > opt.hi for x in items)
        ):
            return None, "out of range"
        return list(value), None
    elif k == "table":
        if not isinstance(value, dict):
            return None, f"expected a table, got {type(value).__name__}"
        return dict(value), None
    if opt.choices is not None and parsed not in opt.choices:
        return None, "not an allowed value"
    if opt.lo is not None or opt.hi is not None:
        lo = -math.inf if opt.lo is None else opt.lo
        hi = math.inf if opt.hi is None else opt.hi
        try:  # the shared checked conversions: NaN and values past the range never pass
            if isinstance(parsed, int) and not isinstance(parsed, bool):
                check_int("value", parsed, int(max(lo, -(2**64))), int(min(hi, 2**64)))
            else:
                check_real("value", parsed, lo, hi)
        except (TypeError, ValueError):
            return None, "out of range"
    return parsed, None


def _allowed(opt: Opt, err: str) -> str:
    return "" if isinstance(err, _NeedsUnit) else opt.allowed()


def _default(opt: Opt) -> Any:
    if opt.kind == "time?" and opt.default == "never":
        return None
    if opt.kind == "node_pair":
        return list(opt.default)
    if opt.kind == "id":
        return opt.default  # '' = none, which a file may not give
    parsed, err = _check_value(opt, opt.default)
    assert err is None, (opt, err)
    return parsed


def _suggest(name: str, candidates: list[str]) -> str:
    if len(candidates) > 5000:  # difflib is linear in the candidates: no guess among so many names
        return ""
    near = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f"; did you mean {near[0]!r}?" if near else ""


def _children(prefix: str) -> list[str]:
    """Names allowed directly under ``prefix`` ('' = top level; 'flows[]' = a flows row)."""
    names: set[str] = set()
    dot = prefix + "." if prefix else ""
    for full in list(SCHEMA) + list(TABLES) + [a + "[]" for a in ARRAYS]:
        if full.startswith(dot) and full != prefix:
            rest = full[len(dot) :]
            names.add(rest.split(".")[0].removesuffix("[]"))
    return sorted(names)


def _walk(
    table: dict[str, Any],
    prefix: str,
    shown: str,
    file: str,
    out: dict[str, Any],
    arrays: dict[str, list[dict[str, Any]]],
    problems: list[Problem],
) -> None:
    for key, value in table.items():
        path = f"{prefix}.{key}" if prefix else key
        where = f"{shown}.{key}" if shown else key
        if path in TABLES:
            if not isinstance(value, dict):
                problems.append(
                    Problem(file, where, f"expected a table [{path}], got {type(value).__name__}", value)
                )
                continue
            _walk(value, path, where, file, out, arrays, problems)
        elif path in ARRAYS:
            if not isinstance(value, list) or any(not isinstance(r, dict) for r in value):
                problems.append(Problem(file, where, f"expected an array of tables [[{path}]]", value))
                continue
            rows = []
            for i, row in enumerate(value):
                vals: dict[str, Any] = {}
                _walk(row, path + "[]", f"{where}[{i}]", file, vals, arrays, problems)
                full = {}
                for opt_path, opt in SCHEMA.items():
                    if opt_path.startswith(path + "[]."):
                        name = opt_path[len(path) + 3 :]
                        full[name] = vals.get(opt_path, _default(opt))
                full["_given"] = {p[len(path) + 3 :] for p in vals}
                rows.append(full)
            arrays[path] = rows
        elif path in SCHEMA:
            opt = SCHEMA[path]
            parsed, err = _check_value(opt, value)
            if err is not None:
                problems.append(Problem(file, where, err, value, _allowed(opt, err)))
            else:
                out[path] = parsed
        elif _PER_FLOWS_TRANSPORT.match(path):
            problems.append(_transport_here(file, where, value))
        else:
            siblings = _children(prefix)
            problems.append(
                Problem(
                    file,
                    where,
                    "unknown key" + _suggest(str(key), siblings),
                    value,
                    "keys here: " + ", ".join(siblings),
                )
            )


def _schema_path(shown: str) -> str:
    """A problem's path as the schema names it: ``flows[2].size`` -> ``flows[].size``."""
    return re.sub(r"\[\d+\]", "[]", shown.split(" ")[0])


def switch_ports(sc: Scenario) -> list[int]:
    """The port count of each switch the topology will have (builders' layout; explicit graphs:
    each switch's number of links, at least 1)."""
    v = sc.values
    kind = v["topology.kind"]
    if kind == "star":
        return [v["topology.n"]]
    if kind == "incast":
        return [v["topology.n_senders"] + 1]
    if kind == "dumbbell":
        return [v["topology.n_left"] + 1, v["topology.n_right"] + 1]
    if kind == "leaf_spine":
        return ([v["topology.hosts_per_leaf"] + v["topology.spines"]] * v["topology.leaves"]
                + [v["topology.leaves"]] * v["topology.spines"])
    if kind == "fat_tree":
        k = v["topology.k"]
        return [k] * (5 * k * k // 4)
    if kind == "dragonfly":
        a, p = v["topology.routers_per_group"], v["topology.hosts_per_router"]
        return [p + a - 1 + v["topology.global_per_router"]] * (dragonfly_groups(v) * a)
    if kind == "rail_optimized":
        per_unit, units = rail_units(v)
        rails = v["topology.gpus_per_node"] * units
        return [per_unit + v["topology.spines"]] * rails + [rails] * v["topology.spines"]
    if kind == "explicit":
        degree: Counter[str] = Counter()
        for r in sc.arrays.get("topology.links", []):
            degree[r["a"]] += 1
            degree[r["b"]] += 1
        return [max(1, degree[s]) for s in v["topology.switches"]]
    return []


def _switch_buffer(sc: Scenario, given: bool, problems: list[Problem]) -> None:
    """``switch.buffer`` given: it must hold the reserve and headroom of the largest switch.
    Not given: the default scales with the port count (rdmasim.topology.default_buffer)."""
    from rdmasim.topology import buffer_needed, default_buffer

    v = sc.values
    ports = max(switch_ports(sc), default=0)
    if not ports:
        return
    args = (ports, v["switch.reserve"], v["switch.headroom"], len(set(v["switch.lossless"])))
    need = buffer_needed(*args)
    if not given:
        v["switch.buffer"] = default_buffer(*args)
    elif v["switch.buffer"] < need:
        problems.append(Problem(
            sc.file, "switch.buffer",
            f"smaller than what the largest switch ({ports} ports) sets aside: "
            f"reserve {v['switch.reserve']} B x 8 "
            f"priorities + headroom {v['switch.headroom']} B x {args[3]} lossless priorities, per port",
            v["switch.buffer"], f">= {need} bytes (or lower switch.reserve / switch.headroom)"))


#: algorithm -> (module, params class, the name its errors start with) for the tables checked below
_CC_TABLES = {"timely": ("rdmasim.cc.timely", "TimelyParams", "TIMELY"),
              "swift": ("rdmasim.cc.swift", "SwiftParams", "Swift"),
              "hpcc": ("rdmasim.cc.hpcc", "HpccParams", "HPCC"),
              "ibcc": ("rdmasim.cc.ibcc", "IbccParams", "IB CC"),
              "nscc": ("rdmasim.cc.nscc", "NsccParams", "NSCC")}


def _check_ooo(v: dict[str, Any], file: str, problems: list[Problem], warnings: list[Problem],
               ok: Any) -> None:
    """qp.recovery = 'ooo' needs a NIC profile with out-of-order placement; a fabric that reorders
    (per-packet path selection) in front of in-order receivers is allowed, with a warning."""
    from rdmasim.transport import nic

    if not (ok("nic") and ok("qp.recovery")):
        return
    try:
        profile = nic.get_profile(v["nic.profile"], **v["nic.overrides"])
    except (TypeError, ValueError):
        return  # reported above
    recovery = v["qp.recovery"]
    if recovery == "ooo" and not profile.ooo_placement:
        with_ooo = ", ".join(n for n, p in nic.PROFILES.items() if p.ooo_placement)
        problems.append(Problem(file, "qp.recovery", f"out-of-order placement needs a NIC that has it; NIC "
                                f"profile {v['nic.profile']!r} places in order", recovery,
                                f"'nic', 'gbn' or 'irn', or nic.profile one of {with_ooo}"))
    in_order = recovery == "gbn" or (recovery == "nic" and not profile.ooo_placement)
    per_packet = v["switch.path_select"] in ("spray", "adaptive", "adaptive_packet")
    if in_order and per_packet and ok("switch.path_select"):
        warnings.append(Problem(file, "switch.path_select", f"{v['switch.path_select']!r} sends the packets "
                                "of one QP over different paths, so they arrive out of order; the receivers "
                                f"place in order (NIC profile {v['nic.profile']!r}, Go-Back-N) and will "
                                "NAK and resend much of what was only reordered", v["switch.path_select"],
                                "a profile with out-of-order placement (cx7-ar, ib-ar), qp.recovery = "
                                "'irn', or 'ecmp'"))


#: [qp] keys only the RoCE transport reads (qp.mtu is UET's payload per packet too)
_ROCE_ONLY_QP = ("qp.timeout", "qp.retry_cnt", "qp.rnr_retry", "qp.recovery", "qp.irn_window")


def _given(sc: Scenario, key: str) -> bool:
    """Does the file (or an override) set ``key`` itself, rather than leave it to its default?"""
    node: Any = sc.raw
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return key in sc.overrides
        node = node[part]
    return True


def _check_transport(sc: Scenario, file: str, problems: list[Problem]) -> None:
    """A [uet] option with the RoCE transport, or a RoCE-only [qp] option with UET, is refused: the
    file asks for something the flows' transport does not have."""
    kind = sc.values["transport.kind"]
    if kind == "roce":
        for key in (k for k in SCHEMA if k.startswith("uet.")):
            if _given(sc, key):
                problems.append(Problem(file, key, "is an Ultra Ethernet option, but the flows run on RoCE",
                                        sc.values[key], "transport.kind = 'uet', or leave it out"))
    else:
        for key in _ROCE_ONLY_QP:
            if _given(sc, key):
                problems.append(Problem(file, key, "is a RoCE queue-pair option, but the flows run on UET "
                                        "(transport.kind = 'uet')", sc.values[key], "leave it out"))
        if sc.values["uet.rto_max"] < sc.values["uet.rto_min"]:
            problems.append(Problem(file, "uet.rto_max", f"is below uet.rto_min "
                                    f"({sc.values['uet.rto_min']} ps)", sc.values["uet.rto_max"],
                                    "uet.rto_min or more"))
        if sc.values["link.layer"] == "ib":
            problems.append(Problem(file, "transport.kind", "the Ultra Ethernet transport runs over UDP/IP "
                                    "on Ethernet, and link.layer = 'ib' frames the fabric as InfiniBand",
                                    "uet", "'roce' (the IB transport) with link.layer 'ib', or link.layer "
                                    "'roce'"))
        if "collective" in sc.generators and sc.values["uet.mode"] == "uud":  # it runs: a warning
            why = ("[traffic.collective] over unreliable delivery: each step forwards or reduces the bytes "
                   "the step before it brought, and 'uud' neither acknowledges nor resends, so a lost packet "
                   "is missing from the result (each flow's lost_pkts counts them)")
            sc.warnings.append(Problem(file, "uet.mode", why, "uud",
                                       "'rud', 'rod' or 'rudi' for a complete result"))
        if _given(sc, "uet.nscc_base_rtt") and sc.values["uet.cc"] != "nscc":  # harmless in a sweep of cc
            sc.warnings.append(Problem(file, "uet.nscc_base_rtt", f"does nothing: it is NSCC's base RTT and "
                                       f"uet.cc = {sc.values['uet.cc']!r}", sc.values["uet.nscc_base_rtt"],
                                       "uet.cc = 'nscc', or leave it out"))
        if sc.values["uet.max_pdcs"] and sc.values["uet.mode"] in ("rudi", "uud"):
            sc.warnings.append(Problem(file, "uet.max_pdcs", f"does nothing: with uet.mode = "
                                       f"{sc.values['uet.mode']!r} a target holds no PDC (no SYN to refuse)",
                                       sc.values["uet.max_pdcs"], "uet.mode 'rud' or 'rod', or leave it out"))
        if sc.values["uet.idle_close"] and sc.values["uet.mode"] in ("rudi", "uud"):
            sc.warnings.append(Problem(file, "uet.idle_close", f"does nothing: with uet.mode = "
                                       f"{sc.values['uet.mode']!r} a target holds no PDC to close",
                                       sc.values["uet.idle_close"],
                                       "uet.mode 'rud' or 'rod', or leave it out"))
        if sc.values["uet.trim"] and sc.values["uet.mode"] not in ("rud", "rod"):
            problems.append(Problem(file, "uet.trim", f"needs uet.mode 'rud' or 'rod' (a trimmed packet is "
                                    f"asked for again), not {sc.values['uet.mode']!r}", True,
                                    "false, or uet.mode = 'rud' or 'rod'"))


def _check_cc_table(v: dict[str, Any], file: str, problems: list[Problem], ok: Any) -> None:
    """The selected algorithm's [congestion_control.<name>] table as a whole (a params class
    checks relations such as t_high > t_low), the problem under the key it names."""
    import importlib

    algo = v["congestion_control.algorithm"]
    if algo not in _CC_TABLES or not ok(f"congestion_control.{algo}"):
        return
    module, cls_name, label = _CC_TABLES[algo]
    cls = getattr(importlib.import_module(module), cls_name)
    try:
        cls.from_scenario(v)
    except (TypeError, ValueError) as exc:
        m = re.match(rf"{label} parameter (\w+)=", str(exc))
        key = f"congestion_control.{algo}.{m.group(1)}" if m else f"congestion_control.{algo}"
        problems.append(Problem(file, key, str(exc), v.get(key)))


def _semantic(sc: Scenario, given: set[str], problems: list[Problem]) -> None:
    """The checks that relate several keys. A check whose keys already had a problem (wrong type,
    out of range) is skipped, so one mistake is reported once, and every other one with it."""
    v, file = sc.values, sc.file
    bad = {_schema_path(p.path) for p in problems}

    def ok(*prefixes: str) -> bool:
        return not any(b.startswith(prefixes) for b in bad)

    if ok("topology") and host_count(v) > MAX_HOSTS:
        kind = v["topology.kind"]
        keys = KIND_PARAMS[kind]
        params = ", ".join(f"{k} = {v['topology.' + k]}" for k in keys
                           if isinstance(v.get("topology." + k), int))
        what = f"{kind} with {params}" if params else f"the {kind} topology"
        problems.append(Problem(file, "topology", f"{what} has {host_count(v):,} hosts", kind,
                                f"at most {MAX_HOSTS:,} hosts"))
    too_many = ok("topology") and host_count(v) > MAX_HOSTS and v["topology.kind"] != "explicit"
    if not ok("topology") or too_many:  # no checks that name every host of a huge topology
        _semantic_rest(sc, problems, ok, topology_ok=False)
        return
    kind = v["topology.kind"]
    allowed = KIND_PARAMS[kind]
    for p in sorted(given):
        if (
            p.startswith("topology.")
            and p != "topology.kind"
            and p.split(".")[1].removesuffix("[]") not in allowed
        ):
            problems.append(
                Problem(
                    file,
                    p,
                    f"does not apply to topology kind {kind!r}",
                    v.get(p, _MISSING),
                    f"parameters of {kind!r}: " + (", ".join(allowed) or "none"),
                )
            )
    if "topology.links" in sc.arrays and kind != "explicit":
        problems.append(
            Problem(
                file,
                "topology.links",
                f"does not apply to topology kind {kind!r}",
                allowed="only with kind = 'explicit'",
            )
        )
    if kind == "dragonfly":
        a, h, g = v["topology.routers_per_group"], v["topology.global_per_router"], v["topology.groups"]
        if g != 0 and not 2 <= g <= a * h + 1:
            problems.append(Problem(file, "topology.groups", f"a dragonfly of a = {a}, h = {h} has "
                                    "2..a*h+1 groups", g, f"0 or an int in 2..{a * h + 1}"))
    if kind == "rail_optimized" and v["topology.nodes_per_unit"] > v["topology.nodes"]:
        problems.append(Problem(file, "topology.nodes_per_unit", "more nodes per unit than nodes",
                                v["topology.nodes_per_unit"], f"0 or an int in 1..{v['topology.nodes']}"))
    if kind == "fat_tree" and v["topology.k"] % 2:
        problems.append(
            Problem(file, "topology.k", "fat_tree needs an even k", v["topology.k"], "even ints 2..64")
        )
    for p in ("topology.bottleneck_rate", "topology.fabric_rate", "topology.global_rate"):
        if v[p]:
            try:
                parse_rate(v[p])
            except ValueError as exc:
                problems.append(Problem(file, p, str(exc), v[p], SCHEMA["link.rate"].allowed()))
    if kind == "explicit":
        _explicit(sc, problems)
    _semantic_rest(sc, problems, ok, topology_ok=True)


#: the times and rates among the DCQCN parameters (preset paper) and the NIC profile's constants
_DCQCN_DIMS = {"alpha_timer": "time", "rate_timer": "time", "rate_reduce_period": "time",
               "cnp_interval": "time", "ai_rate": "rate", "hai_rate": "rate", "min_rate": "rate",
               "max_rate": "rate"}
_NIC_DIMS = {"ack_timeout": "time", "pfc_response": "time"}


def _bare_numbers(file: str, section: str, table: dict[str, Any], dims: dict[str, str],
                  problems: list[Problem]) -> list[str]:
    """Report each time or rate of a free-form ``table`` given as a bare number; their keys."""
    bad = []
    for k, dim in dims.items():
        msg = needs_unit(dim, table.get(k))
        if msg is not None:
            problems.append(Problem(file, f"{section}.{k}", msg, table[k]))
            bad.append(k)
    return bad


def _semantic_rest(sc: Scenario, problems: list[Problem], ok: Any, topology_ok: bool) -> None:
    v, file = sc.values, sc.file
    parts, threads = v["simulation.partitions"], v["simulation.threads"]
    if ok("simulation.partitions", "simulation.threads") and parts and threads > parts:
        problems.append(Problem(file, "simulation.threads", f"more threads than partitions ({parts})",
                                threads, f"1..{parts} (at most simulation.partitions)"))
    if ok("qp.mtu", "link.mtu") and v["qp.mtu"] > v["link.mtu"]:
        problems.append(
            Problem(
                file, "qp.mtu", f"larger than link.mtu ({v['link.mtu']})", v["qp.mtu"], f"<= {v['link.mtu']}"
            )
        )
    if ok("switch.ecn.kmin", "switch.ecn.kmax") and v["switch.ecn.kmax"] <= v["switch.ecn.kmin"]:
        problems.append(
            Problem(
                file,
                "switch.ecn.kmax",
                f"must be greater than kmin ({v['switch.ecn.kmin']} B)",
                v["switch.ecn.kmax"],
                f"> {v['switch.ecn.kmin']} bytes",
            )
        )
    if ok("switch.threshold") and v["switch.threshold"] != "dynamic":
        try:
            parse_size(v["switch.threshold"])
        except ValueError as exc:
            problems.append(
                Problem(
                    file,
                    "switch.threshold",
                    str(exc),
                    v["switch.threshold"],
                    "'dynamic' or a size like '100KB'",
                )
            )
    ov = v["congestion_control.overrides"]
    if ov and ok("congestion_control"):
        from rdmasim.cc import DcqcnParams

        preset = dcqcn_preset(v)
        names = list(_NVIDIA_NAMES) if preset == "nvidia" else DcqcnParams.field_names()
        bad = [k for k in ov if k not in names]
        # mlxconfig names (preset nvidia) are integers in their documented units (us, Mb/s)
        bare = [] if preset == "nvidia" else _bare_numbers(file, "congestion_control.overrides", ov,
                                                             _DCQCN_DIMS, problems)
        for k in bad:
            problems.append(
                Problem(
                    file,
                    f"congestion_control.overrides.{k}",
                    "unknown parameter" + _suggest(k, names),
                    ov[k],
                    ", ".join(names),
                )
            )
        if not bad and not bare:
            try:
                if preset == "nvidia":
                    DcqcnParams.nvidia(**ov)
                else:
                    DcqcnParams.paper(**ov)
            except (TypeError, ValueError) as exc:
                m = re.match(r"(?:DCQCN parameter|mlxconfig DCQCN name) (\w+)=", str(exc))
                name = m.group(1) if m and m.group(1) in ov else None  # the override it names
                key = f"congestion_control.overrides.{name}" if name else "congestion_control.overrides"
                problems.append(Problem(file, key, str(exc), ov[name] if name else ov))
    _check_plugin_params(file, v, problems)
    if v["link.layer"] == "ib" and v["switch.flow_control"] == "pfc":
        problems.append(Problem(file, "switch.flow_control", "InfiniBand has no PFC (pause frames are "
                                "Ethernet's); its link-level flow control is credits", "pfc",
                                "'auto' or 'credits' when link.layer = 'ib'"))
    hop_classes = v["topology.kind"] == "dragonfly" and v["topology.hop_classes"]
    if hop_classes and flow_control(v) == "credits" and ok("switch.credits"):
        need = 2 if v["topology.routing"] == "minimal" else 3  # classes: 0, 1 (, 2) global links crossed
        if v["switch.credits.vls"] < need:  # SL s -> VL s mod vls: fewer VLs than classes share one
            why = (f"hop classes under {v['topology.routing']} routing need {need} VLs, one per class; "
                   "with fewer, classes share a VL and a credit loop can close (a deadlock)")
            vls = v["switch.credits.vls"]
            sc.warnings.append(Problem(file, "switch.credits.vls", why, vls, f"{need}..8"))
    if v["congestion_control.algorithm"] == "dctcp" and ok("congestion_control.dctcp"):
        from rdmasim.cc.dctcp import DctcpParams

        try:
            DctcpParams.from_scenario(v)
        except (TypeError, ValueError) as exc:
            m = re.match(r"DCTCP parameter (\w+)=", str(exc))
            key = f"congestion_control.dctcp.{m.group(1)}" if m else "congestion_control.dctcp"
            problems.append(Problem(file, key, str(exc), v.get(key)))
    _check_cc_table(v, file, problems, ok)
    nic_ov = v["nic.overrides"]
    if nic_ov and ok("nic"):
        from rdmasim.transport import nic

        for k in sorted(set(nic_ov) - set(nic.SCENARIO_OVERRIDES)):
            problems.append(Problem(file, f"nic.overrides.{k}", "unknown NIC constant"
                                    + _suggest(k, list(nic.SCENARIO_OVERRIDES)), nic_ov[k],
                                    ", ".join(nic.SCENARIO_OVERRIDES)))
        bare = _bare_numbers(file, "nic.overrides", nic_ov, _NIC_DIMS, problems)
        if set(nic_ov) <= set(nic.SCENARIO_OVERRIDES) and not bare:
            try:
                nic.get_profile(v["nic.profile"], **nic_ov)
            except nic.NicProfileError as exc:
                # the key the file sets among those involved (the window, or the cadence alone)
                key = next((k for k in exc.keys if k in nic_ov), None)
                problems.append(Problem(file, f"nic.overrides.{key}" if key else "nic.overrides", str(exc),
                                        nic_ov[key] if key else nic_ov))
            except (TypeError, ValueError) as exc:
                problems.append(Problem(file, "nic.overrides", str(exc), nic_ov))
    _check_ooo(v, file, problems, sc.warnings, ok)
    _check_transport(sc, file, problems)
    for i, row in enumerate(sc.arrays.get("impairments.failures", [])):
        if row["recover"] is not None and row["recover"] <= row["at"] and ok("impairments.failures"):
            problems.append(
                Problem(file, f"impairments.failures[{i}].recover",
                        f"not after `at` ({row['at']} ps): the link "
                        "would never come back", row["recover"], f"a time > {row['at']} ps, or 'never'")
            )
    if "parquet" in v["outputs.formats"] and ok("outputs.formats"):
        from rdmasim.results import pyarrow_available  # one rule for "can Parquet be written"

        if not pyarrow_available():
            p = Problem(file, "outputs.formats", "'parquet' needs pyarrow, which is not installed: no "
                        "Parquet tables will be written", v["outputs.formats"], "'csv', or install pyarrow")
            # with csv also asked for, the run still writes what was asked first: a warning
            (sc.warnings if "csv" in v["outputs.formats"] else problems).append(p)
    _flow_deps(sc, problems)
    if not topology_ok:
        return
    hosts = host_names(v)
    hset = set(hosts)
    for i, row in enumerate(sc.arrays.get("flows", [])):
        for end in ("src", "dst"):
            if end not in row["_given"]:
                problems.append(
                    Problem(file, f"flows[{i}].{end}", "missing (required)", allowed="a host name")
                )
            elif row[end] not in hset:
                problems.append(
                    Problem(
                        file,
                        f"flows[{i}].{end}",
                        "unknown host" + _suggest(row[end], hosts),
                        row[end],
                        _host_list(hosts),
                    )
                )
        if row["src"] == row["dst"] and "src" in row["_given"] and row["verb"] != "LOCAL":
            problems.append(
                Problem(file, f"flows[{i}].dst", "same host as src", row["dst"],
                        "a host other than src (only a LOCAL flow may have src = dst)")
            )
    if sc.has_incast:
        rx = v["traffic.incast.receiver"]
        if rx and rx not in hset:
            problems.append(
                Problem(
                    file,
                    "traffic.incast.receiver",
                    "unknown host" + _suggest(rx, hosts),
                    rx,
                    _host_list(hosts),
                )
            )
        for j, s in enumerate(v["traffic.incast.senders"]):
            if s not in hset or s == (rx or hosts[-1]):
                problems.append(
                    Problem(
                        file,
                        f"traffic.incast.senders[{j}]",
                        "unknown host or the receiver" + _suggest(s, hosts),
                        s,
                        _host_list(hosts),
                    )
                )
    for gen in sc.generators:
        if gen == "incast":
            continue
        for j, s in enumerate(v[f"traffic.{gen}.hosts"]):
            if s not in hset:
                problems.append(
                    Problem(file, f"traffic.{gen}.hosts[{j}]", "unknown host" + _suggest(s, hosts), s,
                            _host_list(hosts))
                )
    _hpc_checks(sc, problems, hosts, ok)
    if not sc.arrays.get("flows") and not sc.generators:
        problems.append(
            Problem(file, "flows", "no traffic",
                    allowed="[[flows]] or a [traffic.*] generator (" + ", ".join(GENERATORS) + ")")
        )
    for sec in ("impairments.loss", "impairments.gilbert", "impairments.failures", "impairments.slow_links"):
        for i, row in enumerate(sc.arrays.get(sec, [])):
            if "link" in row["_given"] and ok(sec) and not has_link(sc, *row["link"]):
                problems.append(Problem(file, f"{sec}[{i}].link", "no such link", row["link"],
                                        "two nodes a link joins (host and switch names as docs/scenarios.md "
                                        "lists them)"))
            if "link" not in row["_given"]:
                problems.append(
                    Problem(
                        file,
                        f"{sec}[{i}].link",
                        "missing (required)",
                        allowed="two node names, e.g. ['h0', 's0']",
                    )
                )


def _flow_deps(sc: Scenario, problems: list[Problem]) -> None:
    """``[[flows]]`` ``id`` unique, every ``after``/``after_received`` id one of them, ``after_count`` at
    most their number, and no cycle (it would wait forever)."""
    file, rows = sc.file, sc.arrays.get("flows", [])
    ids: dict[Any, int] = {}
    for i, row in enumerate(rows):
        if "id" not in row["_given"]:
            continue
        key = (type(row["id"]), row["id"])
        if key in ids:
            problems.append(Problem(file, f"flows[{i}].id", f"also the id of flows[{ids[key]}]", row["id"],
                                    "an id unique among flows"))
        else:
            ids[key] = i
    deps: list[list[int]] = []
    known = ", ".join(repr(k[1]) for k in list(ids)[:12]) or "none: no flow has an id"
    for i, row in enumerate(rows):
        mine = []
        for key in ("after", "after_received"):
            for x in row[key]:
                j = ids.get((type(x), x))
                if j is None:
                    problems.append(Problem(file, f"flows[{i}].{key}", f"unknown flow id {x!r}", row[key],
                                            f"ids of flows: {known}"))
                    break
                mine.append(j)
        n_events = len(row["after"]) + len(row["after_received"])
        if row["after_count"] > n_events:
            problems.append(Problem(file, f"flows[{i}].after_count", f"more than the {n_events} flow(s) of "
                                    "after and after_received", row["after_count"],
                                    f"0 (all) .. {n_events}"))
        deps.append(mine)
    state = [0] * len(rows)  # 0 unseen, 1 on the path, 2 done
    for root in range(len(rows)):
        if state[root]:
            continue
        path, stack = [root], [iter(deps[root])]
        state[root] = 1
        while stack:
            j = next(stack[-1], None)
            if j is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[j] == 1:
                cycle = path[path.index(j):] + [j]
                problems.append(Problem(file, f"flows[{cycle[0]}].after",
                                        "a cycle: " + " -> ".join(f"flows[{c}]" for c in cycle)
                                        + " each wait for the next", rows[cycle[0]]["after"],
                                        "ids of flows that do not wait, directly or not, for this one"))
                return
            elif not state[j]:
                state[j] = 1
                path.append(j)
                stack.append(iter(deps[j]))


def _hpc_checks(sc: Scenario, problems: list[Problem], hosts: list[str], ok: Any) -> None:
    """[traffic.halo] grid against its ranks, and [[impairments.stragglers]] against the ranks they slow."""
    v, file = sc.values, sc.file
    ranks: dict[str, set[str]] = {}
    for gen in ("collective", "halo"):
        if gen in sc.generators:
            ranks[gen] = set(v[f"traffic.{gen}.hosts"] or hosts)
    if "halo" in sc.generators and ok("traffic.halo.dims", "traffic.halo.hosts"):
        dims = v["traffic.halo.dims"]
        n = len(v["traffic.halo.hosts"]) or len(hosts)
        if len(dims) not in (2, 3):
            problems.append(Problem(file, "traffic.halo.dims", f"{len(dims)} sizes", dims, "2 or 3 sizes"))
        elif math.prod(dims) != n:
            problems.append(Problem(file, "traffic.halo.dims",
                                    f"a grid of {math.prod(dims)} ranks for {n} hosts", dims,
                                    f"sizes whose product is {n} (the hosts of traffic.halo.hosts, or all)"))
    seen: set[str] = set()
    for i, row in enumerate(sc.arrays.get("impairments.stragglers", [])):
        where = f"impairments.stragglers[{i}].host"
        h = row["host"]
        if "host" not in row["_given"]:
            problems.append(Problem(file, where, "missing (required)", allowed="a host name"))
        elif not ranks:
            problems.append(Problem(file, "impairments.stragglers", "slows the ranks of [traffic.collective] "
                                    "or [traffic.halo], and the file has neither", allowed="one of them"))
        elif not any(h in r for r in ranks.values()):
            gens = " or ".join(f"[traffic.{g}]" for g in ranks)
            problems.append(Problem(file, where, f"not a rank of {gens}" + _suggest(h, hosts), h,
                                    _host_list(sorted(set().union(*ranks.values())))))
        elif h in seen:
            problems.append(Problem(file, where, "listed twice (give one row with the total delay)", h))
        seen.add(h)


def _num(name: str, prefix: str, n: int) -> int | None:
    """``i`` if ``name`` is ``prefix{i}`` with 0 <= i < n, else None."""
    m = re.fullmatch(re.escape(prefix) + r"(0|[1-9][0-9]*)", name)
    return int(m.group(1)) if m and int(m.group(1)) < n else None


def has_link(sc: Scenario, a: str, b: str) -> bool:
    """Whether the topology has a link between nodes ``a`` and ``b`` (named as the builders of
    :mod:`rdmasim.topology` name them), without building it."""
    v = sc.values
    kind = v["topology.kind"]
    for x, y in ((a, b), (b, a)):
        if kind == "back_to_back" and (x, y) == ("a", "b"):
            return True
        if kind in ("star", "incast"):
            n = v["topology.n"] if kind == "star" else v["topology.n_senders"] + 1
            if x == "s0" and _num(y, "h", n) is not None:
                return True
        if kind == "dumbbell":
            if (x, y) == ("sl", "sr") or (x == "sl" and _num(y, "l", v["topology.n_left"]) is not None) or (
                    x == "sr" and _num(y, "r", v["topology.n_right"]) is not None):
                return True
        if kind == "leaf_spine":
            leaves, hpl = v["topology.leaves"], v["topology.hosts_per_leaf"]
            leaf = _num(x, "leaf", leaves)
            if leaf is not None and _num(y, "spine", v["topology.spines"]) is not None:
                return True
            h = _num(y, "h", leaves * hpl)
            if leaf is not None and h is not None and h // hpl == leaf:
                return True
        if kind == "fat_tree":
            half = v["topology.k"] // 2
            m = re.fullmatch(r"(edge|agg)(\d+)_(\d+)", x)
            if not m or int(m.group(2)) >= 2 * half or int(m.group(3)) >= half:
                continue
            pod, i = int(m.group(2)), int(m.group(3))
            if m.group(1) == "edge":
                hm = re.fullmatch(r"h(\d+)_(\d+)_(\d+)", y)
                if hm and (int(hm.group(1)), int(hm.group(2))) == (pod, i) and int(hm.group(3)) < half:
                    return True
                am = re.fullmatch(r"agg(\d+)_(\d+)", y)
                if am and int(am.group(1)) == pod and int(am.group(2)) < half:
                    return True
            else:
                core = _num(y, "core", half * half)
                if core is not None and core // half == i:
                    return True
        if kind == "dragonfly" and _dragonfly_link(v, x, y):
            return True
        if kind == "rail_optimized" and _rail_link(v, x, y):
            return True
        rows = sc.arrays.get("topology.links", [])
        if kind == "explicit" and any({r["a"], r["b"]} == {x, y} for r in rows):
            return True
    return False


def _dragonfly_link(v: dict[str, Any], x: str, y: str) -> bool:
    """A dragonfly link x - y: router - its host, two routers of a group, or a global link."""
    from rdmasim.topology import dragonfly_links

    a, p, h = v["topology.routers_per_group"], v["topology.hosts_per_router"], v["topology.global_per_router"]
    g = dragonfly_groups(v)
    rm = re.fullmatch(r"r(\d+)_(\d+)", x)
    if not rm or int(rm.group(1)) >= g or int(rm.group(2)) >= a:
        return False
    gx, rx = int(rm.group(1)), int(rm.group(2))
    hm = re.fullmatch(r"h(\d+)_(\d+)_(\d+)", y)
    if hm:
        return (int(hm.group(1)), int(hm.group(2))) == (gx, rx) and int(hm.group(3)) < p
    ym = re.fullmatch(r"r(\d+)_(\d+)", y)
    if not ym or int(ym.group(1)) >= g or int(ym.group(2)) >= a:
        return False
    gy, ry = int(ym.group(1)), int(ym.group(2))
    if gx == gy:
        return rx != ry
    return any({(i, ri), (j, rj)} == {(gx, rx), (gy, ry)} for i, ri, j, rj in dragonfly_links(g, a, h))


def _rail_link(v: dict[str, Any], x: str, y: str) -> bool:
    """A rail_optimized link x - y: rail switch - its NIC, or rail switch - spine."""
    per_unit, units = rail_units(v)
    m = re.fullmatch(r"rail(\d+)_(\d+)", x)
    if not m or int(m.group(1)) >= v["topology.gpus_per_node"] or int(m.group(2)) >= units:
        return False
    rail, unit = int(m.group(1)), int(m.group(2))
    if _num(y, "spine", v["topology.spines"]) is not None:
        return True
    hm = re.fullmatch(r"n(\d+)_g(\d+)", y)
    return bool(hm) and int(hm.group(2)) == rail and int(hm.group(1)) < v["topology.nodes"] and (
        int(hm.group(1)) // per_unit == unit)


def _explicit(sc: Scenario, problems: list[Problem]) -> None:
    """An explicit graph: unique names, links between known nodes, no self-loops, exactly one link
    per host (a host has one NIC port), and flows only between hosts that are connected."""
    v, file = sc.values, sc.file
    hosts, switches = v["topology.hosts"], v["topology.switches"]
    if len(hosts) < 2:
        problems.append(Problem(file, "topology.hosts", "an explicit topology needs at least 2 hosts", hosts,
                                "a list of >= 2 unique names"))
    counts = Counter(hosts + switches)
    dup = sorted(n for n, c in counts.items() if c > 1)
    if dup:
        problems.append(Problem(file, "topology.hosts", f"duplicate node names {dup[:10]}"
                                + (f" and {len(dup) - 10} more" if len(dup) > 10 else ""),
                                allowed="unique names across hosts and switches"))
    host_set, nodes = set(hosts), set(hosts) | set(switches)
    host_link: dict[str, int] = {}
    parent: dict[str, str] = {n: n for n in nodes}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for i, row in enumerate(sc.arrays.get("topology.links", [])):
        known = True
        for end in ("a", "b"):
            if row[end] not in nodes:
                known = False
                problems.append(Problem(file, f"topology.links[{i}].{end}",
                                        "unknown node" + _suggest(row[end], sorted(nodes)[:2000]), row[end],
                                        "a name in topology.hosts or topology.switches"))
        for key, fn in (("rate", parse_rate), ("delay", parse_time)):
            if row[key]:
                try:
                    fn(row[key])
                except ValueError as exc:
                    problems.append(Problem(file, f"topology.links[{i}].{key}", str(exc), row[key]))
        if row["a"] == row["b"]:
            problems.append(Problem(file, f"topology.links[{i}]", "a link from a node to itself", row["a"],
                                    "two different node names"))
            continue
        if not known:
            continue
        for end in ("a", "b"):
            n = row[end]
            if n in host_set:
                if n in host_link:
                    problems.append(Problem(
                        file, f"topology.links[{i}].{end}",
                        f"host already has a link (topology.links[{host_link[n]}]): a host has one port",
                        n, "one link per host; connect more links to a switch"))
                else:
                    host_link[n] = i
        parent[root(row["a"])] = root(row["b"])
    unlinked = [h for h in dict.fromkeys(hosts) if h not in host_link]
    if unlinked and len(hosts) >= 2:
        problems.append(Problem(file, "topology.hosts", f"host(s) with no link: {unlinked[:10]}"
                                + (f" and {len(unlinked) - 10} more" if len(unlinked) > 10 else ""),
                                allowed="every host has exactly one [[topology.links]] row"))
        return
    for i, row in enumerate(sc.arrays.get("flows", [])):
        s, d = row["src"], row["dst"]
        if s in host_set and d in host_set and s != d and root(s) != root(d):
            problems.append(Problem(file, f"flows[{i}]",
                                    f"no path from {s!r} to {d!r} in the explicit topology",
                                    [s, d], "hosts connected through [[topology.links]]"))
    for gen in sc.generators:
        key = f"traffic.{gen}.receiver" if gen == "incast" else f"traffic.{gen}.hosts"
        used = v[f"traffic.{gen}.hosts"] if gen != "incast" else v["traffic.incast.senders"]
        used = [h for h in (used or hosts) if h in host_set]
        if gen == "incast" and v["traffic.incast.receiver"] in host_set:
            used.append(v["traffic.incast.receiver"])
        if len({root(h) for h in used}) > 1:
            problems.append(Problem(file, key, "its hosts are not all connected to each other", allowed=(
                "hosts connected through [[topology.links]]")))


def _host_list(hosts: list[str]) -> str:
    return ", ".join(hosts) if len(hosts) <= 12 else ", ".join(hosts[:12]) + f", ... ({len(hosts)} hosts)"


#: one key-path segment of an override: ``name``, ``name[3]`` (row 3) or ``name[]`` (every row)
_SEGMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d*)\])?$")


def parse_override_value(text: str, path: str = "") -> Any:
    """An override value given as text (e.g. on the command line), read with TOML value syntax:
    ``"0.01"`` -> 0.01, ``"[3]"`` -> [3], ``"true"`` -> True, ``"'x'"`` -> 'x'; anything that is no
    TOML value (``1us``, ``dcqcn``) stays the bare string. For a string option (by ``path``) the
    text is kept as it is, so ``simulation.name=3`` is the name "3"."""
    s = text.strip()
    opt = SCHEMA.get(re.sub(r"\[\d*\]", "[]", path))
    try:
        value = tomllib.loads(f"v = {s}")["v"]
    except tomllib.TOMLDecodeError:
        return s
    if opt is not None and opt.kind == "str" and not isinstance(value, str):
        return s
    return value


def split_values(text: str) -> list[str]:
    """Split ``text`` at the commas outside brackets, braces and quotes: ``"[1,2],3"`` ->
    ``["[1,2]", "3"]``."""
    out: list[str] = []
    depth, quote = 0, ""
    cur: list[str] = []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def parse_assignment(spec: str, option: str = "--param") -> tuple[str, list[Any]]:
    """A command-line override ``"key=v1,v2"`` -> ``("key", [v1, v2])``: the key path and its
    values, each read by :func:`parse_override_value` (values are separated by the commas outside
    brackets and quotes). The one parser of ``rdmasim sweep --param`` and ``rdmasim run --set``;
    ``option`` names the option in the ValueError a malformed ``spec`` raises."""
    key, sep, rest = spec.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ValueError(f"{option} {spec!r}: expected key=value[,value...], e.g. link.loss=0,0.01")
    values = split_values(rest)
    if any(v == "" for v in values):
        raise ValueError(f"{option} {spec!r}: empty value")
    return key, [parse_override_value(v, key) for v in values]


def parse_assignments(specs: list[str], option: str = "--set") -> dict[str, Any]:
    """``["key=value", ...]`` (one value each) -> ``{key: value}``: ``rdmasim run --set``. A spec
    with several values or a key given twice raises ValueError naming ``option`` and the key."""
    out: dict[str, Any] = {}
    for spec in specs:
        key, values = parse_assignment(spec, option)
        if len(values) != 1:
            raise ValueError(f"{option} {spec!r}: one value (several are for rdmasim sweep --param), "
                             f"got {len(values)}")
        if key in out:
            raise ValueError(f"{option} {key!r} given twice (allowed: each key once)")
        out[key] = values[0]
    return out


def _override_target(path: str) -> tuple[str, list[tuple[str, int | None]], str | None]:
    """Resolve override key ``path`` against the schema: (schema path, segments, problem).

    A segment is (name, row): row None for a table key, -1 for ``[]`` (every row), else the row
    index. The problem is None if ``path`` names an option or an array, "" if it is unknown."""
    segs: list[tuple[str, int | None]] = []
    for part in path.split("."):
        m = _SEGMENT.match(part)
        if m is None:
            return "", [], "not a key path (write section.key; rows as flows[0].size or flows[].size)"
        idx = m.group(2)
        segs.append((m.group(1), None if idx is None else (-1 if idx == "" else int(idx))))
    schema_path = ".".join(n + ("" if i is None else "[]") for n, i in segs)
    for k, (_, idx) in enumerate(segs):
        prefix = ".".join(n for n, _ in segs[: k + 1])
        if idx is not None and prefix not in ARRAYS:
            return schema_path, segs, f"{prefix} is not an array of tables"
        if idx is None and prefix in ARRAYS and k < len(segs) - 1:
            key = segs[k + 1][0]
            return schema_path, segs, f"name the row: {prefix}[0].{key} (or {prefix}[].{key}: every row)"
    if schema_path in SCHEMA or schema_path in ARRAYS:
        return schema_path, segs, None
    if schema_path in TABLES:
        return schema_path, segs, "is a table: override its keys one by one"
    return schema_path, segs, ""


#: a transport key in a traffic generator's table or a [[flows]] row: one transport per scenario
_PER_FLOWS_TRANSPORT = re.compile(r"^(traffic\.[a-z_]+|flows\[\])\.transport$")


def _transport_here(file: str, where: str, value: Any) -> Problem:
    """The refusal of a transport given for some flows only (``traffic.<generator>.transport``,
    ``flows[i].transport``): the flows of one scenario share one transport."""
    return Problem(file, where, "the flows of a scenario share one transport: [transport] kind sets it "
                   "for every flow (a generator or a flow has none of its own)", value,
                   "transport.kind = 'roce' or 'uet' for every flow (one scenario file per transport)")


def _unknown_override(where: str, path: str, schema_path: str, value: Any) -> Problem:
    if _PER_FLOWS_TRANSPORT.match(schema_path):
        return _transport_here(where, path, value)
    parent = schema_path.rsplit(".", 1)[0] if "." in schema_path else ""
    known = parent == "" or parent in TABLES or parent.removesuffix("[]") in ARRAYS
    siblings = _children(parent) if known else []
    allowed = "keys here: " + ", ".join(siblings) if siblings else "a key path of docs/scenarios.md"
    candidates = list(SCHEMA) + list(ARRAYS)
    return Problem(where, path, "unknown key" + _suggest(schema_path, candidates), value, allowed)


def _override_tables(
    raw: dict[str, Any], segs: list[tuple[str, int | None]]
) -> tuple[list[dict[str, Any]], str]:
    """The tables (of ``raw``, created if missing) an override sets its last key in, or a problem."""
    targets: list[dict[str, Any]] = [raw]
    names: list[str] = []
    for name, idx in segs[:-1]:
        names.append(name)
        section = ".".join(names)
        nxt: list[dict[str, Any]] = []
        for t in targets:
            child = t.setdefault(name, {} if idx is None else [])
            if idx is None:
                if not isinstance(child, dict):
                    return [], f"{section} is not a table in the file"
                nxt.append(child)
                continue
            rows = [r for r in child if isinstance(r, dict)] if isinstance(child, list) else []
            if idx == -1 and not rows:
                return [], f"the file has no [[{section}]] rows"
            if idx >= len(rows):
                return [], f"no such row: the file has {len(rows)} [[{section}]] row(s)"
            nxt.extend(rows if idx == -1 else [rows[idx]])
        targets = nxt
    return targets, ""


def apply_overrides(raw: dict[str, Any], overrides: Mapping[str, Any], file: str) -> list[Problem]:
    """Set each ``key path -> value`` of ``overrides`` in the parsed TOML ``raw`` (in place).

    Key paths are those of the schema (``link.loss``, ``switch.ecn.kmin``); a row of an array of
    tables is named by its index (``flows[0].size``) or by ``[]`` for every row (``flows[].size``).
    Returns the problems (unknown keys with a did-you-mean, missing rows, values of the wrong kind
    or out of range), each naming ``FILE (override)``, the key path, the value and what is allowed;
    an override with a problem is not applied."""
    where = f"{file} (override)"
    problems: list[Problem] = []
    for path, value in overrides.items():
        schema_path, segs, err = _override_target(path)
        if err == "":
            problems.append(_unknown_override(where, path, schema_path, value))
            continue
        if err:
            problems.append(Problem(where, path, err, value))
            continue
        opt = SCHEMA.get(schema_path)
        if opt is not None:
            _, bad = _check_value(opt, value)
            if bad is not None:
                problems.append(Problem(where, path, bad, value, _allowed(opt, bad)))
                continue
        targets, err = _override_tables(raw, segs)
        if err:
            problems.append(Problem(where, path, err, value))
            continue
        for t in targets:
            t[segs[-1][0]] = copy.deepcopy(value)
    return problems


def _rows_of(raw: dict[str, Any], names: list[str]) -> list[Any]:
    node: Any = raw
    for n in names:
        node = node.get(n) if isinstance(node, dict) else None
    return node if isinstance(node, list) else []


def _override_paths(overrides: Mapping[str, Any], raw: dict[str, Any]) -> dict[str, str]:
    """Problem path (as _walk shows it) -> override key, so file-level problems caused by an
    override name it."""
    out: dict[str, str] = {}
    for path in overrides:
        out[path] = path
        if "[]" in path:
            head, tail = path.split("[]", 1)
            for i in range(len(_rows_of(raw, head.split(".")))):
                out[f"{head}[{i}]{tail}"] = path
    return out


def default_results_dir(file: str, name: str = "") -> str:
    """The results folder of a scenario without ``[outputs] dir``: ``results/<file name without
    .toml>``; for a scenario given as text, ``results/<simulation.name>`` (``results/run`` without
    one). The name is made safe for a folder (other characters than letters, digits, ``.``, ``_``
    and ``-`` become ``_``). :func:`rdmasim.scenario.run.results_dir` numbers it (``-2``, ``-3``,
    ...) when it holds an earlier run."""
    stem = Path(file).stem if file and not file.startswith("<") else (name or "run")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem).strip("_").lstrip(".") or "run"
    return f"results/{safe}"


def loads(text: str, file: str = "<string>", overrides: Mapping[str, Any] | None = None, *,
          fabric_only: bool = False) -> Scenario:
    """Validate scenario TOML ``text``; raise :class:`ScenarioError` listing every problem.

    ``overrides`` (key path -> value, see :func:`apply_overrides`) are set before validation, so a
    bad override is reported like a bad value in the file, its file shown as ``FILE (override)``.
    ``fabric_only``: the scenario describes a fabric for programs to run on (``rdmasim exec``), so
    it needs no traffic."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError([Problem(file, "(syntax)", f"not valid TOML: {exc}")]) from None
    except RecursionError:
        raise ScenarioError([Problem(file, "(syntax)", "arrays or tables nested too deeply to read",
                                     allowed="nesting a scenario file uses: a few levels")]) from None
    problems: list[Problem] = []
    if overrides:
        problems += apply_overrides(raw, overrides, file)
        if problems:
            raise ScenarioError(problems)
        shown = _override_paths(overrides, raw)
    given: dict[str, Any] = {}
    arrays: dict[str, list[dict[str, Any]]] = {}
    _walk(raw, "", "", file, given, arrays, problems)
    values = {p: given.get(p, _default(o)) for p, o in SCHEMA.items() if "[]" not in p}
    numbered = "outputs.dir" not in given
    if numbered:
        values["outputs.dir"] = default_results_dir(file, values["simulation.name"])
    sc = Scenario(file, text, values, arrays, raw, dict(overrides or {}), numbered_out_dir=numbered)
    # every check runs; those whose keys already had a problem are skipped (see _semantic)
    _semantic(sc, set(given) | {a + "[]" for a in arrays}, problems)
    if not problems:
        _switch_buffer(sc, "switch.buffer" in given, problems)
    traffic_keys = ("topology", "flows", "traffic", "link", "simulation")
    if not any(_schema_path(p.path).startswith(traffic_keys) for p in problems):
        _flow_counts(sc, problems)
    if not any(_schema_path(p.path).startswith(traffic_keys) for p in problems):
        # generators check their own arguments (e.g. halving-doubling needs 2^k hosts)
        try:
            traffic_table(sc)
        except ScenarioError as exc:
            problems += exc.problems
    if fabric_only:
        problems = [p for p in problems if not (p.path == "flows" and p.message == "no traffic")]
    if problems:
        if overrides:
            problems = [
                Problem(f"{file} (override)", shown[p.path], p.message, p.value, p.allowed)
                if p.path in shown
                else p
                for p in problems
            ]
        raise ScenarioError(problems)
    return sc


#: most flows one scenario may have (each costs about 2 KB through the run and its results)
MAX_FLOWS = 10_000_000


def _flow_counts(sc: Scenario, problems: list[Problem]) -> None:
    """Refuse a generator that would make more than :data:`MAX_FLOWS` flows, before making them."""
    v = sc.values
    n_all = host_count(v)
    for gen in sc.generators:
        p = f"traffic.{gen}."
        if gen == "incast":
            continue  # at most one flow per host
        n = len(v[p + "hosts"]) or n_all
        if gen == "permutation":
            count = float(n)
        elif gen == "all_to_all":
            count = float(n * (n - 1))
        elif gen == "halo":
            dims = v[p + "dims"]
            count = float(v[p + "timesteps"] * n * (3 + 2 * len(dims) + 2 * max(1, n.bit_length())))
        elif gen == "poisson":
            from rdmasim.scenario.traffic import _size_cdf

            try:
                mean = _size_cdf(sc).mean()
            except ScenarioError as exc:
                problems += exc.problems
                continue
            count = n * v[p + "load"] * v["link.rate"] / 8 / mean * v[p + "duration"] / 1e12
        else:
            rounds = v[p + "rounds"] if v[p + "kind"] == "moe_all_to_all" else 2
            chunk = v[p + "chunk_size"]
            per_block = max(1.0, v[p + "size"] / (chunk * max(n, 1))) if chunk else 1.0
            count = float(n * max(n - 1, 1) * rounds) * per_block
        if count > MAX_FLOWS:
            problems.append(Problem(sc.file, f"traffic.{gen}", f"would make about {count:,.0f} flows",
                                    allowed=f"at most {MAX_FLOWS:,} flows per scenario (fewer hosts, "
                                    "a shorter "
                                    "duration or a lower load)"))


#: Largest scenario file read (32 MiB: some 400,000 explicit ``[[flows]]``; generators and the
#: Python API make larger traffic)
MAX_SCENARIO_FILE_BYTES = 32 << 20


def read_text(path: str | Path) -> str:
    """The text of a scenario file, or :class:`ScenarioError` naming it (unreadable, a folder, a
    device or named pipe, over :data:`MAX_SCENARIO_FILE_BYTES`, not UTF-8: the byte offset of the
    first bad byte)."""
    p = Path(path)
    try:
        data = read_user_file(p, "scenario file", MAX_SCENARIO_FILE_BYTES)
    except OSError as exc:
        raise ScenarioError([Problem(str(p), "(file)", f"cannot read: {exc.strerror or exc}")]) from None
    except UserInputError as exc:
        raise ScenarioError([Problem(str(p), "(file)", str(exc).removeprefix(f"{p}: "),
                                     allowed=f"a regular file of at most {MAX_SCENARIO_FILE_BYTES:,} "
                                     "bytes")]) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScenarioError([Problem(str(p), "(file)",
                                     f"not UTF-8 text: byte {data[exc.start]:#04x} at offset "
                                     f"{exc.start} (line {line})", allowed="a UTF-8 TOML file")]) from None


def load(path: str | Path, overrides: Mapping[str, Any] | None = None, *,
         fabric_only: bool = False) -> Scenario:
    """Read and validate a scenario file (with ``overrides`` applied, see :func:`loads`)."""
    return loads(read_text(path), str(path), overrides, fabric_only=fabric_only)


def dcqcn_preset(v: dict[str, Any]) -> str:
    """The DCQCN preset a scenario's values name: ``congestion_control.preset``, or for ``"nic"``
    the NIC profile's (``"paper"`` when the profile name is not valid: load reports that)."""
    preset = str(v["congestion_control.preset"])
    if preset != "nic":
        return preset
    from rdmasim.transport import nic

    try:
        return nic.get_profile(v["nic.profile"]).dcqcn
    except ValueError:
        return "paper"


def _check_plugin_params(file: str, v: dict[str, Any], problems: list[Problem]) -> None:
    """[congestion_control.plugin]: the parameters of the C plug-in the algorithm names, each known
    to it and fitting its C type (rdmasim.cc_plugin.Plugin.params_bytes)."""
    from rdmasim.cc.plugin import PluginError, get_plugin

    table, algo = v["congestion_control.plugin"], v["congestion_control.algorithm"]
    plugin = get_plugin(algo) if isinstance(algo, str) else None
    if not table:
        return
    if plugin is None:
        problems.append(Problem(file, "congestion_control.plugin", "parameters of a C plug-in, but "
                                f"congestion_control.algorithm = {algo!r} is not one", table,
                                "a registered plug-in's name in congestion_control.algorithm"))
        return
    for k in table:
        try:
            plugin.params_bytes({k: table[k]})
        except PluginError as exc:
            problems.append(Problem(file, f"congestion_control.plugin.{k}", str(exc), table[k],
                                    ", ".join(plugin.params)))
