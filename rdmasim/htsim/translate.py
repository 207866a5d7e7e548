"""An htsim connection matrix and htsim's topology options -> an rdmasim scenario (TOML text).

Policy (docs/import-htsim.md), as for the HPCC import: what rdmasim expresses is mapped, with a
note where the mapping is not one-to-one; what it cannot express is named as *not supported* (on
stdout and in a comment block of the TOML). The import is refused (:class:`HtsimInputError`, exit
status 2) where no rdmasim run would be the same experiment: a flow that starts on a trigger
rdmasim's ``after``, ``after_received`` and ``after_count`` cannot express (:func:`_trigger_deps`;
``ignore_triggers`` starts every triggered flow at 0 instead and names each), a host id the
topology does not have, a flow from a host to itself, or an MTU rdmasim has no path MTU for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rdmasim.hpcc.keys import rate_text, time_text
from rdmasim.hpcc.toml_out import Table, render
from rdmasim.htsim.cm import DEFAULT_PRIO, Conn, ConnectionMatrix, HtsimInputError

#: rdmasim's path MTUs
MTUS = (256, 512, 1024, 2048, 4096)
TOPOLOGIES = ("fat_tree", "star")


@dataclass
class Options:
    """htsim's command-line options that shape the run (None: not given, htsim's default applies)."""

    topology: str = "fat_tree"
    k: int | None = None
    hosts: int | None = None
    linkspeed_mbps: float | None = None
    hop_latency_us: float | None = None
    switch_latency_us: float | None = None
    mtu: int | None = None
    queue_pkts: int | None = None
    end_us: float | None = None
    seed: int | None = None
    ignore_triggers: bool = False


@dataclass
class Translation:
    """The scenario text and what was said about it."""

    toml: str = ""
    notes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    hosts: int = 0
    flows: int = 0
    topology: str = ""


def _us_ps(where: str, us: float) -> int:
    if not 0 <= us * 10**6 < 2**62:  # also NaN
        raise HtsimInputError(f"{where} {us}: out of range (allowed: microseconds >= 0)")
    return round(us * 10**6)


def _topology(cm: ConnectionMatrix, o: Options, tr: Translation) -> tuple[dict[str, Any], list[str]]:
    """The [topology] table and the rdmasim name of each htsim host id."""
    if o.topology not in TOPOLOGIES:
        raise HtsimInputError(f"--topology {o.topology}: unknown (allowed: {', '.join(TOPOLOGIES)})")
    if o.topology == "star":
        if o.k is not None:
            raise HtsimInputError(f"--k {o.k}: a fat_tree option (allowed with --topology star: --hosts N)")
        n = cm.nodes if o.hosts is None else o.hosts
        if not 2 <= n <= 4096 or n < cm.nodes:
            raise HtsimInputError(
                f"--hosts {n}: {cm.path.name} has Nodes {cm.nodes} (allowed: {max(2, cm.nodes)}..4096)"
            )
        tr.notes.append(f"topology: a star of {n} hosts on one switch; htsim host i is h<i>")
        return {"kind": "star", "n": n}, [f"h{i}" for i in range(n)]
    if o.hosts is not None:
        raise HtsimInputError(f"--hosts {o.hosts}: a star option (allowed with --topology fat_tree: --k K)")
    fits = [k for k in range(2, 65, 2) if k**3 // 4 >= cm.nodes]
    if not fits:
        raise HtsimInputError(
            f"{cm.path.name}: Nodes {cm.nodes}: more hosts than rdmasim's largest fat tree (k 64: 65536)"
        )
    k = fits[0] if o.k is None else o.k
    if k not in fits:
        raise HtsimInputError(
            f"--k {k}: a fat tree of {k**3 // 4 if k > 0 else 0} hosts; {cm.path.name} has Nodes "
            f"{cm.nodes} (allowed: even k in {fits[0]}..64)"
        )
    n = k**3 // 4
    half = k // 2
    names = [f"h{i // (half * half)}_{i % (half * half) // half}_{i % half}" for i in range(n)]
    tr.notes.append(
        f"topology: a 3-tier fat tree of k = {k} ({n} hosts"
        f"{'' if o.k is not None else ', the smallest that holds Nodes'}); "
        f"htsim host i is the i-th host in pod, edge switch, port order, as htsim's FatTreeTopology "
        f"numbers them (host 0 is {names[0]}, host {n - 1} is {names[-1]})"
    )
    return {"kind": "fat_tree", "k": k}, names


@dataclass
class Wait:
    """What a flow that starts on a trigger waits for, in scenario terms."""

    after: list[Conn] = field(default_factory=list)  # their completion (send_done_trigger)
    after_received: list[Conn] = field(default_factory=list)  # their bytes all in (recv_done_trigger)
    count: int = 0  # after_count: the k-th of those events (0: all)


def _why_not(cm: ConnectionMatrix, tid: int, fired: list[tuple[Conn, str]], waiting: list[Conn]) -> str:
    """Why trigger ``tid`` cannot be said with after/after_received/after_count, or '' if it can.

    htsim (trigger.cpp): a oneshot trigger starts every flow waiting on it at its one activation (a
    second one is an assertion failure); a multishot one starts the next waiting flow, in the order
    the file lists them, at each activation (activations beyond them do nothing); a barrier of count
    N starts them all at its N-th activation (one more is an assertion failure). Each
    ``send_done_trigger`` or ``recv_done_trigger`` naming it is one activation."""
    t = cm.triggers[tid]
    n = len(fired)
    if not n:
        return f"no connection fires it (send_done_trigger/recv_done_trigger {tid}): htsim never starts it"
    if t.type == "oneshot" and n > 1:
        return (f"oneshot, fired by {n} activations: htsim starts its flows at the first and aborts at the "
                "second")
    if t.type == "multishot" and n < len(waiting):
        return (f"multishot, {n} activation(s) for {len(waiting)} waiting flows: htsim never starts flow "
                f"{waiting[n].flow_id} (line {waiting[n].line}) and those after it")
    if t.type == "barrier" and n != t.count:
        return (f"barrier count {t.count}, fired by {n} activation(s): htsim "
                + ("never fires it" if n < t.count else f"fires it at the {_nth(t.count)} activation and "
                   "aborts at the next"))
    return ""


def _trigger_deps(cm: ConnectionMatrix, o: Options, tr: Translation) -> dict[int, Wait]:
    """Each flow that waits on a trigger (by ``id(conn)``) -> what it waits for, for each trigger that
    maps; the others are refused (HtsimInputError) or, with ``ignore_triggers``, named."""
    waiting: dict[int, list[Conn]] = {}
    fired: dict[int, list[tuple[Conn, str]]] = {}
    for c in cm.conns:
        if c.trigger:
            waiting.setdefault(c.trigger, []).append(c)
        for key in ("send_done_trigger", "recv_done_trigger"):
            if getattr(c, key):
                fired.setdefault(getattr(c, key), []).append((c, key))
    if o.ignore_triggers:
        return {}
    waits: dict[int, Wait] = {}
    for tid, ws in waiting.items():
        why = _why_not(cm, tid, fired.get(tid, []), ws)
        if why:
            c = ws[0]
            raise HtsimInputError(
                f"{cm.path.name}:{c.line}: trigger {tid}: flow {c.flow_id} waits on trigger {tid}, "
                f"{why} (allowed: a oneshot trigger one activation fires, a multishot one with at least "
                "one activation per waiting flow, a barrier of count N that N activations fire; "
                "--ignore-triggers starts triggered flows at 0 and names them)"
            )
        fs = fired[tid]
        base = Wait([c for c, k in fs if k == "send_done_trigger"],
                    [c for c, k in fs if k == "recv_done_trigger"])
        for k, c in enumerate(ws, 1):
            # multishot: the k-th waiting flow starts at the k-th activation (all of them: the last one)
            count = k if cm.triggers[tid].type == "multishot" and k < len(fs) else 0
            waits[id(c)] = Wait(base.after, base.after_received, count)
    return waits


def _nth(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _wait_keys(w: Wait | None, conn_id: Any) -> dict[str, Any]:
    """The [[flows]] keys of a flow that waits on a trigger."""
    if w is None:
        return {}
    out: dict[str, Any] = {}
    if w.after:
        out["after"] = [conn_id(d) for d in w.after]
    if w.after_received:
        out["after_received"] = [conn_id(d) for d in w.after_received]
    if w.count:
        out["after_count"] = w.count
    return out


def translate(cm: ConnectionMatrix, o: Options, out_dir: str = "") -> Translation:
    """The rdmasim scenario of ``cm`` run with options ``o``."""
    tr = Translation()
    say, unsupported = tr.notes.append, tr.unsupported.append
    topo, names = _topology(cm, o, tr)
    tr.topology, tr.hosts = topo["kind"], len(names)
    if cm.nodes < len(names):
        say(f"Nodes {cm.nodes}: the topology has {len(names)} hosts; hosts {cm.nodes}.. send nothing")
    for c in cm.conns:
        for role, h in (("source", c.src), ("destination", c.dst)):
            if h >= len(names):
                raise HtsimInputError(
                    f"{cm.path.name}:{c.line}: {role} host {h}: beyond the topology's {len(names)} "
                    f"hosts (allowed: 0..{len(names) - 1})"
                )
        if c.src == c.dst:
            raise HtsimInputError(
                f"{cm.path.name}:{c.line}: {c.src}->{c.dst}: a flow from a host to itself "
                "(allowed: two different hosts)"
            )

    # -- link, switch, MTU, time
    link: dict[str, Any] = {}
    mbps = 100000.0 if o.linkspeed_mbps is None else o.linkspeed_mbps
    if not 1 <= mbps * 10**6 < 2**63:  # also NaN
        raise HtsimInputError(f"--linkspeed {mbps}: out of range (allowed: Mb/s > 0)")
    bps = round(mbps * 10**6)
    link["rate"] = rate_text(bps)
    say(
        f"linkspeed {mbps:g} Mb/s{' (htsim default, HOST_NIC)' if o.linkspeed_mbps is None else ''} "
        f"-> link.rate = {link['rate']} (every link)"
    )
    hop = 1.0 if o.hop_latency_us is None else o.hop_latency_us
    link["delay"] = time_text(_us_ps("--hop-latency", hop))
    say(
        f"hop_latency {hop:g} us{' (htsim default)' if o.hop_latency_us is None else ''} "
        f"-> link.delay = {link['delay']}"
    )
    switch: dict[str, Any] = {}
    if o.switch_latency_us:
        switch["latency"] = time_text(_us_ps("--switch-latency", o.switch_latency_us))
        say(f"switch_latency {o.switch_latency_us:g} us -> switch.latency = {switch['latency']}")
    qp: dict[str, Any] = {"recovery": "gbn"}
    if o.mtu is not None:
        fit = [m for m in MTUS if m <= o.mtu]
        if not fit:
            raise HtsimInputError(
                f"--mtu {o.mtu}: smaller than rdmasim's smallest path MTU (allowed: >= {MTUS[0]})"
            )
        link["mtu"] = qp["mtu"] = fit[-1]
        if fit[-1] != o.mtu:
            say(
                f"mtu {o.mtu} (htsim's packet size): rdmasim path MTUs are powers of two; qp.mtu = "
                f"{fit[-1]}, the largest not above it"
            )
        else:
            say(f"mtu {o.mtu} -> link.mtu = qp.mtu = {o.mtu}")
    else:
        say(
            "mtu not given: rdmasim's 4096 (htsim's default packet size depends on the binary: "
            "roce 9000, eqds 4150)"
        )
    if o.queue_pkts is not None:
        unsupported(
            f"q {o.queue_pkts} (packets per switch port queue): rdmasim switches share one buffer "
            "(switch.buffer, default 12 MB); left at its default"
        )
    sim: dict[str, Any] = {"name": f"htsim-import {cm.path.name}"}
    if o.end_us is not None:
        end = _us_ps("--end", o.end_us)
        if not end:
            raise HtsimInputError(f"--end {o.end_us}: out of range (allowed: microseconds > 0)")
        sim["duration"] = time_text(end)
        say(f"end {o.end_us:g} us -> simulation.duration = {sim['duration']}")
    if o.seed is not None:
        sim["seed"] = o.seed
    say("congestion_control: none, as htsim's main_roce (set congestion_control.algorithm for another)")
    say("flows are RC WRITEs of their size, each on its own QP, at priority 3 (lossless: PFC)")

    # -- records of the connection matrix
    waited = {c.trigger for c in cm.conns if c.trigger}
    waits = _trigger_deps(cm, o, tr)
    mapped = {c.trigger for c in cm.conns if id(c) in waits}
    flow_ids = [c.flow_id for c in cm.conns if c.flow_id]
    by_id = len(set(flow_ids)) == len(flow_ids)  # else a flow's scenario id is its line

    def conn_id(c: Conn) -> int | str:
        return c.flow_id if by_id and c.flow_id else f"line {c.line}"

    firing = {id(d) for w in waits.values() for d in (*w.after, *w.after_received)}
    for c in cm.conns:
        where = f"{cm.path.name}:{c.line}"
        w = waits.get(id(c))
        if w:
            events = ([f"flow {conn_id(d)} is done" for d in w.after]
                      + [f"flow {conn_id(d)}'s bytes have all arrived" for d in w.after_received])
            keys = ([f"after = {[conn_id(d) for d in w.after]!r}"] if w.after else []) + (
                [f"after_received = {[conn_id(d) for d in w.after_received]!r}"] if w.after_received else [])
            if w.count:
                keys.append(f"after_count = {w.count}")
            say(
                f"{where}: trigger {c.trigger}: flow {c.flow_id} starts when "
                + (f"the {_nth(w.count)} of: " if w.count else "")
                + "; ".join(events) + ": " + ", ".join(keys)
            )
        elif c.trigger:
            unsupported(
                f"{where}: trigger {c.trigger}: flow {c.flow_id} starts at 0, "
                f"not when trigger {c.trigger} fires"
            )
        for key in ("send_done_trigger", "recv_done_trigger"):
            tid = getattr(c, key)
            if tid in mapped:
                pass  # mapped to the waiting flows' after / after_received
            elif tid and tid in waited:
                unsupported(
                    f"{where}: {key} {tid}: fires trigger {tid}, which the flows it starts do not wait for"
                )
            elif tid:
                say(f"{where}: {key} {tid}: trigger {tid} starts no flow: no effect")
        if c.prio != DEFAULT_PRIO:
            unsupported(f"{where}: prio {c.prio}: htsim's flow priority; rdmasim gives every flow priority 3")
        if c.addon:
            unsupported(
                f"{where}: addon: htsim adds the flow when its trigger fires; it is added at its start"
            )
    for t in cm.triggers.values():
        if t.id in mapped:
            say(f"{cm.path.name}:{t.line}: trigger id {t.id} {t.type}: mapped to after, after_received "
                "(above)")
        elif t.id in waited:
            unsupported(
                f"{cm.path.name}:{t.line}: trigger id {t.id} {t.type}: no flow dependencies in a scenario"
            )
        else:
            say(f"{cm.path.name}:{t.line}: trigger id {t.id} {t.type}: starts no flow: no effect")
    for line, text in cm.failures:
        unsupported(
            f"{cm.path.name}:{line}: {text}: htsim link failure; not applied (see [[impairments.failures]])"
        )
    for line, text in cm.skipped:
        unsupported(f"{cm.path.name}:{line}: {text!r}: a header line htsim does not read")
    if cm.truncated_starts:
        say(f"{cm.truncated_starts} start time(s) with a fraction of a picosecond: truncated, as by htsim")
    tr.flows = len(cm.conns)

    header = [
        f"rdmasim scenario imported from an htsim connection matrix: {cm.path}",
        f"Nodes {cm.nodes}, {tr.flows} connections, {len(cm.triggers)} triggers, "
        f"{len(cm.failures)} failures; "
        f"topology {tr.topology} of {tr.hosts} hosts",
        "",
        "How it mapped:",
        *[f"  - {n}" for n in tr.notes],
        "",
        "NOT SUPPORTED (named here, not applied):",
        *([f"  - {n}" for n in tr.unsupported] or ["  (none)"]),
    ]
    tables = [
        Table("simulation", sim),
        Table("topology", topo),
        Table("link", link),
        *([Table("switch", switch)] if switch else []),
        Table("qp", qp),
        Table("outputs", {"dir": out_dir or "results"}),
        *[
            Table(
                "flows",
                {
                    **({"id": conn_id(c)} if id(c) in firing else {}),
                    "src": names[c.src],
                    "dst": names[c.dst],
                    "size": c.size,
                    "start": time_text(c.start_ps or 0),
                    **_wait_keys(waits.get(id(c)), conn_id),
                },
                array=True,
                comment=f"{cm.path.name}:{c.line} {c.src}->{c.dst}"
                + (f" id {c.flow_id}" if c.flow_id else ""),
            )
            for c in cm.conns
        ],
    ]
    tr.toml = render(header, tables)
    return tr
