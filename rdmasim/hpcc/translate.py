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
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from rdmasim.hpcc.inputs import Config, HpccInputError, Inputs, _ns3_rate_bps
from rdmasim.hpcc.paths import path_figures
from rdmasim.hpcc.toml_out import Table, render
from rdmasim.nic import MAX_UNACKED_PSNS_LIMIT

#: CC_MODE values of the HPCC simulator's rdma-hw.cc and the rdmasim algorithm of each
CC_MODES = {1: "dcqcn", 3: "hpcc", 7: "timely", 8: "dctcp"}
CC_NAMES = {1: "DCQCN", 3: "HPCC", 7: "TIMELY", 8: "DCTCP", 10: "HPCC-PINT"}
#: the keys each algorithm reads in ns-3 (a key of another algorithm is "not used by this CC_MODE")
CC_KEYS = {
    1: {
        "ALPHA_RESUME_INTERVAL",
        "RATE_DECREASE_INTERVAL",
        "CLAMP_TARGET_RATE",
        "RP_TIMER",
        "EWMA_GAIN",
        "FAST_RECOVERY_TIMES",
        "RATE_AI",
        "RATE_HAI",
        "MIN_RATE",
    },
    3: {
        "U_TARGET",
        "MI_THRESH",
        "FAST_REACT",
        "RATE_AI",
        "MIN_RATE",
        "INT_MULTI",
        "MULTI_RATE",
        "SAMPLE_FEEDBACK",
        "RATE_BOUND",
    },
    7: {"RATE_AI", "RATE_HAI", "MIN_RATE"},
    8: {"EWMA_GAIN", "DCTCP_RATE_AI", "MIN_RATE", "RATE_BOUND"},
}
ALL_CC_KEYS = set().union(*CC_KEYS.values()) | {"DCTCP_RATE_AI", "PINT_LOG_BASE", "PINT_PROB"}
#: rdmasim's path MTUs
MTUS = (256, 512, 1024, 2048, 4096)


class HpccRefused(HpccInputError):
    """The inputs ask for something no rdmasim scenario expresses: import refused (exit 2)."""


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


def _rate_s(bps: int) -> str:
    for unit, scale in (("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)):
        if bps % scale == 0:
            return f"{bps // scale}{unit}"
    return f"{bps}bps"


def _time_s(ps: int) -> str:
    for unit, scale in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps and ps % scale == 0:
            return f"{ps // scale}{unit}"
    return f"{ps}ps"


class _Keys:
    """Typed access to config keys (third.cc's default when absent), remembering which were read."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.read: set[str] = set()

    def has(self, key: str) -> bool:
        return key in self.cfg.entries

    def raw(self, key: str) -> list[str]:
        self.read.add(key)
        return self.cfg.entries[key][1] if key in self.cfg.entries else []

    def _one(self, key: str, default: Any, conv: Callable[[str], Any], allowed: str) -> Any:
        vals = self.raw(key)
        if not vals:
            if key in self.cfg.entries or default is None:
                raise HpccRefused(f"{self.cfg.where(key)}: {key}: no value (allowed: {allowed})")
            return default
        try:
            return conv(vals[0])
        except (ValueError, TypeError, ArithmeticError):
            raise HpccInputError(
                f"{self.cfg.where(key)}: {key} = {vals[0]!r}: not valid (allowed: {allowed})"
            ) from None

    def int(self, key: str, default: int | None, lo: int = 0, hi: int = (1 << 63) - 1) -> int:
        v = self._one(key, default, int, f"an integer in {lo}..{hi}")
        if not lo <= v <= hi:
            raise HpccInputError(f"{self.cfg.where(key)}: {key} = {v}: out of range (allowed: {lo}..{hi})")
        return int(v)

    def float(self, key: str, default: float | None, lo: float, hi: float) -> float:
        v = self._one(key, default, float, f"a number in {lo}..{hi}")
        if not lo <= v <= hi:
            raise HpccInputError(f"{self.cfg.where(key)}: {key} = {v}: out of range (allowed: {lo}..{hi})")
        return float(v)

    def decimal(self, key: str, default: str, allowed: str) -> Decimal:
        def conv(s: str) -> Decimal:
            try:
                d = Decimal(s)
            except InvalidOperation:
                raise ValueError(s) from None
            if not d.is_finite() or d < 0:
                raise ValueError(s)
            return d

        return Decimal(self._one(key, Decimal(default), conv, allowed))

    def rate(self, key: str, default: str | None, need: str = "") -> int:
        if default is None and not self.has(key):
            raise HpccRefused(
                f"{self.cfg.where(key)}: {key} missing ({need} needs it; allowed: a rate like 50Mb/s)"
            )
        return int(
            self._one(
                key, None if default is None else _ns3_rate_bps(default), _ns3_rate_bps, "a rate like 50Mb/s"
            )
        )

    def show(self, key: str) -> str:
        return f"{key} {' '.join(self.cfg.entries[key][1])}" if key in self.cfg.entries else key


def _rate_map(keys: _Keys, key: str, conv: Callable[[str], Any]) -> dict[int, Any]:
    vals = keys.raw(key)
    if not vals:
        return {}
    where = keys.cfg.where(key)
    try:
        n = int(vals[0])
        if n < 0 or len(vals) < 1 + 2 * n:
            raise ValueError
        return {int(vals[1 + 2 * i]): conv(vals[2 + 2 * i]) for i in range(n)}
    except ValueError:
        raise HpccInputError(
            f"{where}: {key} {' '.join(vals)}: malformed (allowed: N rate1 value1 ... "
            "rateN valueN, rates in b/s)"
        ) from None


def translate(inp: Inputs, out_dir: str = "") -> Translation:
    """The rdmasim scenario of one HPCC ns-3 run."""
    tr = Translation()
    cfg, topo = inp.config, inp.topology
    k = _Keys(cfg)
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
        f"largest {_time_s(figures.max_rtt_ps)}, largest BDP {figures.max_bdp_bytes} B over {figures.pairs} "
        "host pairs"
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
    kmax = _rate_map(k, "KMAX_MAP", int)
    kmin = _rate_map(k, "KMIN_MAP", int)
    pmax = _rate_map(k, "PMAX_MAP", float)
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
            f"every switch port; the {_rate_s(r0)} entry is used: kmin {kmin[r0]} KB, kmax {kmax[r0]} KB, "
            f"pmax {pmax[r0]}"
        )
        if len(sw_rates) > 1:
            unsupported(
                f"KMIN_MAP/KMAX_MAP/PMAX_MAP per port rate: switch ports run at "
                f"{', '.join(_rate_s(r) for r in sw_rates)}; every port takes the {_rate_s(r0)} entry"
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
                f"a port's rate over the NIC's ({_rate_s(nic_rate)}): ports at "
                f"{', '.join(_rate_s(r) for r in faster)}; rdmasim uses alpha_shift 3 on every port"
            )
    say(f"BUFFER_SIZE {buffer_mb} (MB of 2^20 B) -> switch.buffer = {switch['buffer']} B")

    # -- congestion control
    cc: dict[str, Any] = {"algorithm": algo}
    params: dict[str, Any] = {}
    has_win = k.int("HAS_WIN", 1, 0, 1)
    global_t = k.int("GLOBAL_T", 1, 0, 1)
    var_win = k.int("VAR_WIN", 0, 0, 1)
    fast_react = k.int("FAST_REACT", 1, 0, 1)
    if not global_t and (algo in ("hpcc", "dctcp") or has_win):
        unsupported(
            f"GLOBAL_T 0: ns-3 gives each host pair its own base RTT as T (and BDP as window); rdmasim "
            f"uses one for every flow: the largest, {_time_s(figures.max_rtt_ps)}"
        )
    min_rate = k.rate("MIN_RATE", "100Mb/s")
    cc_keys = CC_KEYS[cc_mode]
    if algo == "hpcc":
        cc["notification_point"] = False
        params = {
            "eta": k.float("U_TARGET", 0.95, 1e-9, 1.0),
            "max_stage": k.int("MI_THRESH", 5, 0, (1 << 32) - 1),
            "fast_react": bool(fast_react),
            "base_rtt": _time_s(figures.max_rtt_ps) if figures.max_rtt_ps else "4us",
            "ai_rate": _rate_s(k.rate("RATE_AI", None, "CC_MODE 3 (HPCC)")),
            "min_rate": _rate_s(min_rate),
            "ack_every": ack_pkts,
        }
        say(
            f"HPCC T = the largest base RTT ({params['base_rtt']}, GLOBAL_T 1); window = rate x T "
            "(HAS_WIN 1, VAR_WIN 1: the window follows the rate)"
        )
        if not has_win:
            unsupported("HAS_WIN 0: rdmasim's HPCC always keeps its window W (paced at W / T)")
        if not var_win:
            unsupported(
                "VAR_WIN 0: ns-3 keeps the window at the BDP while the rate changes; rdmasim's HPCC "
                "window follows its rate"
            )
        if k.int("MULTI_RATE", 1, 0, 1):
            unsupported("MULTI_RATE 1: rdmasim's HPCC keeps one rate, as MULTI_RATE 0")
        if k.int("SAMPLE_FEEDBACK", 0, 0, 1):
            unsupported("SAMPLE_FEEDBACK 1: rdmasim's HPCC takes the INT of every ACK, as SAMPLE_FEEDBACK 0")
        if not k.int("RATE_BOUND", 1, 0, 1):
            unsupported("RATE_BOUND 0: rdmasim's HPCC always paces at W / T")
        if k.has("INT_MULTI"):
            say(
                f"{k.show('INT_MULTI')}: the unit of ns-3's packed INT fields; "
                "rdmasim's INT records are exact "
                "(no effect)"
            )
            k.raw("INT_MULTI")
    elif algo == "dctcp":
        cc["notification_point"] = False  # DCTCP reads the CE marks its ACKs echo, not CNPs
        params = {
            "g": k.float("EWMA_GAIN", 1 / 16, 1e-9, 1.0),
            "ai_rate": _rate_s(k.rate("DCTCP_RATE_AI", "1000Mb/s")),
            "min_rate": _rate_s(min_rate),
            "window": figures.max_bdp_bytes if has_win else 0,
            "var_win": bool(var_win),
            "pace": bool(k.int("RATE_BOUND", 1, 0, 1)) or not has_win,
            "ack_every": ack_pkts,
        }
        say(
            f"DCTCP window = the largest BDP ({figures.max_bdp_bytes} B) with HAS_WIN 1, "
            "none with HAS_WIN 0; "
            "var_win = VAR_WIN"
        )
    elif algo == "timely":
        cc["notification_point"] = False  # TIMELY reacts to RTTs only
        ai = k.rate("RATE_AI", None, "CC_MODE 7 (TIMELY)")
        hai = k.rate("RATE_HAI", None, "CC_MODE 7 (TIMELY)")
        params = {
            "ai_rate": _rate_s(ai),
            "hai_factor": max(1.0, hai / ai),
            "hai_after": 5,
            "min_rate": _rate_s(min_rate),
            "t_low": "50us",
            "t_high": "500us",
            "min_rtt": "20us",
            "segment": 0,
        }
        say(
            "TIMELY: hai_factor = RATE_HAI / RATE_AI, HAI after 5 increases, T_low 50us, T_high 500us, "
            "min RTT 20us (rdma-hw.cc attribute defaults), one update per window of data (segment = 0)"
        )
        if has_win:
            unsupported(
                "HAS_WIN 1 with TIMELY: ns-3 also caps TIMELY at a BDP window; rdmasim's TIMELY is rate-only"
            )
    else:  # dcqcn
        cc["preset"] = "paper"
        ov = {
            "g": k.float("EWMA_GAIN", 1 / 16, 1e-9, 1.0),
            "alpha_timer": _time_s(
                int(k.decimal("ALPHA_RESUME_INTERVAL", "55", "microseconds >= 0") * 10**6)
            ),
            "alpha_update_on_timer": True,
            "rate_reduce_period": _time_s(
                int(k.decimal("RATE_DECREASE_INTERVAL", "4", "microseconds >= 0") * 10**6)
            ),
            "rate_timer": _time_s(int(k.decimal("RP_TIMER", "1500", "microseconds >= 0") * 10**6)),
            "byte_counter": 0,
            "fast_recovery_steps": k.int("FAST_RECOVERY_TIMES", 5, 0, 1 << 31),
            "ai_rate": _rate_s(k.rate("RATE_AI", None, "CC_MODE 1 (DCQCN)")),
            "hai_rate": _rate_s(k.rate("RATE_HAI", None, "CC_MODE 1 (DCQCN)")),
            "min_rate": _rate_s(min_rate),
            "clamp_tgt_rate": bool(k.int("CLAMP_TARGET_RATE", 0, 0, 1)),
            # ns-3 with CLAMP_TARGET_RATE 0 still clamps when a timer increase came since the last cut
            "clamp_tgt_rate_after_time_inc": True,
            "cnp_interval": 0,
        }
        cc["overrides"] = ov
        say(
            "DCQCN (ns-3's 'mlx' model): alpha updated on its ALPHA_RESUME_INTERVAL timer, rate cut at most "
            "once per RATE_DECREASE_INTERVAL, increases on the RP_TIMER only (byte_counter = 0), a CNP for "
            "each marked packet (cnp_interval = 0)"
        )
        if has_win:
            unsupported(
                "HAS_WIN 1 with DCQCN: ns-3 also caps DCQCN at a BDP window; rdmasim's DCQCN is rate-only"
            )
    for key in sorted(set(cfg.entries) & (ALL_CC_KEYS - cc_keys) - k.read):
        tr.unused.append(f"{k.show(key)}: not read by CC_MODE {cc_mode} ({CC_NAMES[cc_mode]}) in ns-3 either")
        k.read.add(key)
    for key in ("HAS_WIN", "VAR_WIN", "GLOBAL_T", "FAST_REACT"):
        k.read.add(key)

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
            failures.append({"link": [name[a], name[b]], "at": _time_s(2 * 10**12 + t_us * 10**6)})
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
        Table("simulation", {"name": f"hpcc-import {src}", "duration": _time_s(duration_ps)}),
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
                    "rate": _rate_s(ln.rate_bps),
                    "delay": _time_s(ln.delay_ps),
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
                    "start": fl.start_ps,
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
