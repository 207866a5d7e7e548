"""HPCC ns-3 inputs -> an rdmasim scenario (TOML text), naming every key that does not map.

Policy (docs/import-hpcc.md): a key rdmasim expresses is mapped and, where the mapping is not
one-to-one, a note says how. A key it cannot express is listed as *not supported* (in a comment
block of the TOML and on stdout) and the import still succeeds: the scenario is a translation. The
import is refused (:class:`HpccRefused`, exit status 2) only where no rdmasim run would be the
same experiment: a congestion control rdmasim does not have (``CC_MODE`` 10 HPCC-PINT, or an
unknown mode), ``L2_ACK_INTERVAL 0`` (the ns-3 sender then ignores every ACK), a payload larger than
rdmasim's largest MTU, a link rate with no ``KMAX_MAP``/``KMIN_MAP``/``PMAX_MAP`` entry (ns-3 aborts),
or a parameter the chosen algorithm needs that is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rdmasim.hpcc.cc_map import CC_MODES, CC_NAMES, map_cc
from rdmasim.hpcc.inputs import HpccInputError, Inputs
from rdmasim.hpcc.keys import HpccRefused, Keys, rate_map, rate_text, time_text
from rdmasim.hpcc.paths import path_figures
from rdmasim.hpcc.toml_out import Table, render
from rdmasim.transport.nic import MAX_UNACKED_PSNS_LIMIT

#: rdmasim's path MTUs
MTUS = (256, 512, 1024, 2048, 4096)


@dataclass
class Translation:
    """The scenario text and what was said about it."""

    toml: str = ""
    notes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    #: the notes printed without -v (also in ``notes``)
    loud: list[str] = field(default_factory=list)
    hosts: int = 0
    switches: int = 0
    links: int = 0
    flows: int = 0


def translate(inp: Inputs, out_dir: str = "") -> Translation:
    """The rdmasim scenario of one HPCC ns-3 run."""
    tr = Translation()
    cfg, topo = inp.config, inp.topology
    k = Keys(cfg)
    say, unsupported = tr.notes.append, tr.unsupported.append

    def loud(text: str) -> None:
        tr.notes.append(text)
        tr.loud.append(text)

    for key in cfg.repeated:
        loud(f"{key} is given more than once: the last value is used, as by ns-3")

    cc_mode = k.int("CC_MODE", 1, 0, 1 << 31)
    if cc_mode not in CC_MODES:
        name = CC_NAMES.get(cc_mode, "unknown")
        raise HpccRefused(
            f"{cfg.where('CC_MODE')}: CC_MODE = {cc_mode} ({name}): rdmasim has no such "
            "congestion control (allowed: 1 DCQCN, 3 HPCC, 7 TIMELY, 8 DCTCP)"
        )
    algo = CC_MODES[cc_mode]

    # -- packets: MTU, ACKs, recovery
    payload = k.int("PACKET_PAYLOAD_SIZE", 1000, 1, 1 << 20)
    mtu = next((m for m in MTUS if m >= payload), 0)
    if not mtu:
        raise HpccRefused(
            f"{cfg.where('PACKET_PAYLOAD_SIZE')}: PACKET_PAYLOAD_SIZE = {payload}: larger than "
            f"rdmasim's largest path MTU (allowed: 1..{MTUS[-1]})"
        )
    if mtu != payload:
        loud(
            f"PACKET_PAYLOAD_SIZE {payload}: rdmasim path MTUs are powers of two; qp.mtu = {mtu}, the "
            f"smallest that holds {payload} B (packets carry up to {mtu} B of payload, "
            f"{(mtu - payload) * 100 // payload}% more per packet than in ns-3)"
        )
    ack_bytes = k.int("L2_ACK_INTERVAL", 0, 0, (1 << 32) - 1)
    if ack_bytes == 0:
        raise HpccRefused(
            f"{cfg.where('L2_ACK_INTERVAL')}: L2_ACK_INTERVAL = 0 (third.cc's default): the ns-3 "
            "sender then takes no ACK and no flow completes (allowed: >= 1 byte)"
        )
    chunk = k.int("L2_CHUNK_SIZE", 0, 0, (1 << 32) - 1)
    ack_pkts = -(-ack_bytes // payload)
    if chunk:
        ack_pkts = min(ack_pkts, max(1, chunk // payload))
    say(
        f"L2_ACK_INTERVAL {ack_bytes} (bytes; with L2_CHUNK_SIZE {chunk} the receiver also ACKs each chunk): "
        f"an ACK every {ack_pkts} packet(s) -> nic.overrides.ack_req_interval = {ack_pkts}"
        + (f", congestion_control.{algo}.ack_every = {ack_pkts}" if algo in ("hpcc", "dctcp") else "")
    )
    back_to_zero = k.int("L2_BACK_TO_ZERO", 0, 0, 1)
    if back_to_zero:
        unsupported(
            "L2_BACK_TO_ZERO 1: ns-3 resends from the start of the L2_CHUNK_SIZE chunk after a NACK; "
            "rdmasim's Go-Back-N resends from the NAKed PSN (qp.recovery = 'gbn'; differs only on loss)"
        )
    else:
        say("L2_BACK_TO_ZERO 0: Go-Back-N from the NACKed sequence number -> qp.recovery = 'gbn'")
    ack_high = k.int("ACK_HIGH_PRIO", 0, 0, 1)
    if ack_high:
        unsupported("ACK_HIGH_PRIO 1: rdmasim sends ACKs at their flow's priority (as ACK_HIGH_PRIO 0)")

    # -- topology
    hosts = topo.hosts
    first_link: dict[int, int] = {}
    for ln in topo.links:
        for end in (ln.a, ln.b):
            if end in topo.switches:
                continue
            if end in first_link:
                raise HpccRefused(
                    f"{topo.path.name}:{ln.line}: host {end} has a second link (the first on line "
                    f"{first_link[end]}): a host with several NIC ports; rdmasim hosts have one port "
                    "(allowed: one link per host)"
                )
            first_link[end] = ln.line
    linkless = [h for h in hosts if h not in first_link]
    for fl in inp.flows:
        for role, node in (("src", fl.src), ("dst", fl.dst)):
            if node not in first_link:
                raise HpccRefused(
                    f"{inp.flow_path.name}:{fl.line}: flow {role} = {node}: host {node} has no link in "
                    f"{topo.path.name} (allowed: a host with a link)"
                )
    if linkless:
        hosts = [h for h in hosts if h in first_link]
        shown = ", ".join(str(h) for h in linkless[:10]) + (", ..." if len(linkless) > 10 else "")
        loud(
            f"{topo.path.name}: {len(linkless)} host(s) with no link and no flow left out "
            f"(rdmasim hosts need a link): {shown}"
        )
    name = {i: (f"s{i}" if i in topo.switches else f"h{i}") for i in range(topo.nodes)}
    tr.hosts, tr.switches, tr.links, tr.flows = (
        len(hosts),
        len(topo.switches),
        len(topo.links),
        len(inp.flows),
    )
    if inp.flow_trailing_lines:
        loud(
            f"{inp.flow_path.name}: {inp.flow_trailing_lines} line(s) after the {len(inp.flows)} declared "
            "flows are not read (as by ns-3)"
        )
    if topo.trailing_lines:
        say(
            f"{topo.path.name}: {topo.trailing_lines} line(s) after the {len(topo.links)} declared links are "
            "not read (as by ns-3)"
        )
    sw_rates = sorted({ln.rate_bps for ln in topo.links for e in (ln.a, ln.b) if e in topo.switches})
    figures = path_figures(topo, payload)
    say(
        f"base RTT as ns-3 computes it (2 x propagation + one {payload} B packet per hop, fewest hops): "
        f"largest {time_text(figures.max_rtt_ps)}, largest BDP {figures.max_bdp_bytes} B over "
        f"{figures.pairs} host pairs"
    )

    # -- switches: buffer, PFC, ECN
    buffer_mb = k.int("BUFFER_SIZE", 16, 1, 1 << 20)
    enable_qcn = bool(k.int("ENABLE_QCN", 1, 0, 1))
    dyn = k.int("USE_DYNAMIC_PFC_THRESHOLD", 1, 0, 1)
    if not dyn:
        unsupported(
            "USE_DYNAMIC_PFC_THRESHOLD 0: ns-3's switch MMU uses its dynamic threshold either way; "
            "so does the scenario (switch.threshold = 'dynamic')"
        )
    kmax = rate_map(k, "KMAX_MAP", int)
    kmin = rate_map(k, "KMIN_MAP", int)
    pmax = rate_map(k, "PMAX_MAP", float)
    for key, m in (("KMAX_MAP", kmax), ("KMIN_MAP", kmin), ("PMAX_MAP", pmax)):
        missing = [r for r in sw_rates if r not in m]
        if missing:
            raise HpccRefused(
                f"{cfg.where(key)}: {key} has no entry for switch port rate(s) "
                f"{', '.join(str(r) for r in missing)} b/s (ns-3 aborts: 'must set "
                f"{key[:4].lower()} for each link speed'; allowed: an entry per rate)"
            )
    switch: dict[str, Any] = {"buffer": buffer_mb * 1024 * 1024, "threshold": "dynamic", "alpha_shift": 3}
    ecn: dict[str, Any] = {"enabled": enable_qcn}
    if sw_rates:
        r0 = sw_rates[0]
        ecn.update(kmin=kmin[r0] * 1000, kmax=kmax[r0] * 1000, pmax=pmax[r0])
        loud(
            f"KMIN_MAP/KMAX_MAP/PMAX_MAP (KB, by port rate): rdmasim has one RED profile per priority for "
            f"every switch port; the {rate_text(r0)} entry is used: kmin {kmin[r0]} KB, kmax {kmax[r0]} KB, "
            f"pmax {pmax[r0]}"
        )
        if len(sw_rates) > 1:
            unsupported(
                f"KMIN_MAP/KMAX_MAP/PMAX_MAP per port rate: switch ports run at "
                f"{', '.join(rate_text(r) for r in sw_rates)}; every port takes the {rate_text(r0)} entry"
            )
        hdrm = max(
            ln.rate_bps * ln.delay_ps * 3 // (8 * 10**12)
            for ln in topo.links
            if ln.a in topo.switches or ln.b in topo.switches
        )
        switch["headroom"] = max(hdrm, 2 * mtu)
        say(
            f"PFC headroom: ns-3 sets rate x delay x 3 per switch port; rdmasim has one size for every port: "
            f"the largest, {switch['headroom']} B (switch.headroom)"
        )
        host_rates = sorted(
            {ln.rate_bps for ln in topo.links for e in (ln.a, ln.b) if e not in topo.switches}
        )
        nic_rate = host_rates[0] if host_rates else r0
        faster = [r for r in sw_rates if r > nic_rate]
        if faster and dyn:
            unsupported(
                f"USE_DYNAMIC_PFC_THRESHOLD per port: ns-3 lowers the alpha shift by one per doubling of "
                f"a port's rate over the NIC's ({rate_text(nic_rate)}): ports at "
                f"{', '.join(rate_text(r) for r in faster)}; rdmasim uses alpha_shift 3 on every port"
            )
    say(f"BUFFER_SIZE {buffer_mb} (MB of 2^20 B) -> switch.buffer = {switch['buffer']} B")

    # -- congestion control
    cc, params = map_cc(k, cc_mode, figures, ack_pkts, tr)

    # -- loss, link failure, time, outputs
    loss = k.float("ERROR_RATE_PER_LINK", 0.0, 0.0, 1.0)
    stop = k.decimal("SIMULATOR_STOP_TIME", "3.01", "seconds > 0")
    duration_ps = int(stop * 10**12)
    if duration_ps <= 0:
        raise HpccInputError(
            f"{cfg.where('SIMULATOR_STOP_TIME')}: SIMULATOR_STOP_TIME = {stop}: "
            "out of range (allowed: seconds > 0)"
        )
    failures: list[dict[str, Any]] = []
    down = k.raw("LINK_DOWN")
    if down:
        try:
            t_us, a, b = (int(x) for x in down[:3])
        except ValueError:
            raise HpccInputError(
                f"{cfg.where('LINK_DOWN')}: LINK_DOWN {' '.join(down)}: malformed "
                "(allowed: time_us node node)"
            ) from None
        if t_us:
            if not any({ln.a, ln.b} == {a, b} for ln in topo.links):
                raise HpccInputError(
                    f"{cfg.where('LINK_DOWN')}: LINK_DOWN {' '.join(down)}: no link between "
                    f"nodes {a} and {b} in {topo.path.name}"
                )
            failures.append({"link": [name[a], name[b]], "at": time_text(2 * 10**12 + t_us * 10**6)})
            say(f"LINK_DOWN: the link {name[a]}-{name[b]} goes down at 2 s + {t_us} us, as ns-3 schedules it")
    enable_trace = bool(k.int("ENABLE_TRACE", 1, 0, 1))
    traced_ok = sorted({n for n in inp.traced if n < topo.nodes})
    if inp.traced:
        past = len(inp.traced) - len([n for n in inp.traced if n < topo.nodes])
        if past:
            say(f"trace: {past} node id(s) past the last node skipped, as by ns-3")
    trace_on = enable_trace and bool(traced_ok)
    if trace_on and len(traced_ok) < topo.nodes:
        trace_on = False
        unsupported(
            f"TRACE_FILE node selection ({len(traced_ok)} of {topo.nodes} nodes): rdmasim's event trace "
            "(outputs.trace, trace.npz) covers every node or none; left off (set outputs.trace = true "
            "to trace every node)"
        )
    if trace_on:
        say(
            "ENABLE_TRACE 1 tracing every node -> outputs.trace = true (trace.npz replaces mix.tr; at "
            "most 2 million records)"
        )
    for key in ("TRACE_OUTPUT_FILE", "FCT_OUTPUT_FILE", "TOPOLOGY_FILE", "FLOW_FILE", "TRACE_FILE"):
        k.raw(key)
    if k.has("FCT_OUTPUT_FILE"):
        say(
            f"{k.show('FCT_OUTPUT_FILE')}: write it from the results with "
            "`rdmasim export-fct RESULTS --format hpcc -o fct.txt`"
        )
    for key, why in (
        (
            "PFC_OUTPUT_FILE",
            "no per-event PFC log; the ports table counts PFC frames and paused time per port",
        ),
        ("QLEN_MON_FILE", "no queue-length histogram file; outputs.sample_interval records queues"),
        ("QLEN_MON_START", "see QLEN_MON_FILE"),
        ("QLEN_MON_END", "see QLEN_MON_FILE"),
        ("PAUSE_TIME", "rdmasim's pause time is switch.pfc_quanta (65535 quanta)"),
        ("DATA_RATE", "not read by ns-3's links (topology.txt gives each link's rate)"),
        ("LINK_DELAY", "not read by ns-3's links (topology.txt gives each link's delay)"),
    ):
        if k.has(key):
            unsupported(f"{k.show(key)}: {why}")
            k.read.add(key)
    for key in sorted(set(cfg.entries) - k.read):
        unsupported(f"{k.show(key)}: not a key this importer knows")

    for i, text in enumerate(tr.unsupported):  # say which values are third.cc's defaults
        m = re.match(r"([A-Z][A-Z0-9_]*) (\S+?):", text)
        if m and m.group(1) not in cfg.entries and "default" not in text:
            tr.unsupported[i] = f"{m.group(1)} {m.group(2)} (absent: third.cc's default):" + text[m.end() :]
    prios = sorted({f.priority for f in inp.flows}) or [3]
    switch["lossless"] = prios
    ecn["priorities"] = prios
    say(f"flow priorities {prios}: lossless (PFC) and ECN-marked, as every data queue of ns-3's switches")
    say(
        f"NIC: profile rxe with max_unacked_psns = {MAX_UNACKED_PSNS_LIMIT} (the ns-3 NIC has no PSN window: "
        "only the CC window, HAS_WIN, limits a flow)"
    )
    say("flows are RC WRITEs of their size, each on its own QP, posted at start_time")

    # -- the scenario
    src = inp.config.path or inp.topology.path.parent
    header = [
        f"rdmasim scenario imported from HPCC ns-3 inputs: {src}",
        f"topology {topo.path.name}: {tr.hosts} hosts, {tr.switches} switches, {tr.links} links; "
        f"{inp.flow_path.name}: {tr.flows} flows; CC_MODE {cc_mode} ({CC_NAMES[cc_mode]})",
        "Hosts are h<ID>, switches s<ID>, with the node ids of the topology file.",
        "",
        "How keys mapped:",
        *[f"  - {n}" for n in tr.notes],
        "",
        "NOT SUPPORTED (named here, not applied):",
        *([f"  - {n}" for n in tr.unsupported] or ["  (none)"]),
    ]
    if tr.unused:
        header += ["", "Not used by this CC_MODE (ns-3 ignores them too):", *[f"  - {n}" for n in tr.unused]]
    nic_ov = {
        "max_unacked_psns": MAX_UNACKED_PSNS_LIMIT,
        "ack_req_interval": ack_pkts,
        "ack_coalesce_pkts": 1,
    }
    tables = [
        Table("simulation", {"name": f"hpcc-import {src}", "duration": time_text(duration_ps)}),
        Table(
            "topology",
            {
                "kind": "explicit",
                "hosts": [name[h] for h in hosts],
                "switches": [name[s] for s in sorted(topo.switches)],
            },
        ),
        *[
            Table(
                "topology.links",
                {
                    "a": name[ln.a],
                    "b": name[ln.b],
                    "rate": rate_text(ln.rate_bps),
                    "delay": time_text(ln.delay_ps),
                },
                array=True,
            )
            for ln in topo.links
        ],
        Table("link", {"loss": loss}),
        Table("switch", switch),
        Table("switch.ecn", ecn),
        Table("congestion_control", cc),
        *([Table(f"congestion_control.{algo}", params)] if params else []),
        Table("nic", {"profile": "rxe", "overrides": nic_ov}),
        Table(
            "qp",
            {"mtu": mtu, "recovery": "gbn"},
            after={
                "mtu": f"PACKET_PAYLOAD_SIZE {payload}"
                + (f" -> {mtu}: rdmasim MTUs are powers of two" if mtu != payload else "")
            },
        ),
        Table("outputs", {"dir": out_dir or "results", "trace": trace_on}),
        *[
            Table(
                "impairments.loss",
                {"link": [name[ln.a], name[ln.b]], "probability": ln.error_rate},
                array=True,
                after={"probability": f"{topo.path.name}:{ln.line}"},
            )
            for ln in topo.links
            if ln.error_rate > 0
        ],
        *[Table("impairments.failures", f_, array=True) for f_ in failures],
        *[
            Table(
                "flows",
                {
                    "src": name[fl.src],
                    "dst": name[fl.dst],
                    "size": fl.size,
                    "start": time_text(fl.start_ps),
                    "priority": fl.priority,
                },
                array=True,
                comment=f"{inp.flow_path.name}:{fl.line} dport {fl.dport}",
            )
            for fl in inp.flows
        ],
    ]
    tr.toml = render(header, tables)
    return tr
