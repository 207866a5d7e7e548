"""The scenario file schema, as data.

Every option is one :class:`Opt` row keyed by its key path (``section.key``; ``[]`` marks an array
of tables, e.g. ``flows[].size``). Validation, defaults and the reference in docs/scenarios.md are
all derived from :data:`SCHEMA`; nothing else lists options.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rdmasim.cc.plugin import AlgorithmChoices
from rdmasim.fabric import PATH_SELECT

#: value kinds: int, float, bool, str, time ("1us": a unit is required, except for 0), rate
#: ("100Gbps": a unit is required), size ("1MiB" or a bare number of bytes), list[int], list[str],
#: table (free-form, checked elsewhere), time? (a time or "never"), node_pair (two node names)
KINDS = (
    "int",
    "float",
    "bool",
    "str",
    "time",
    "rate",
    "size",
    "list[int]",
    "list[str]",
    "table",
    "time?",
    "node_pair",
)


@dataclass(frozen=True)
class Opt:
    """One scenario option: its kind, default, allowed values and documentation."""

    kind: str
    default: Any
    doc: str
    choices: tuple[Any, ...] | None = None
    lo: float | None = None
    hi: float | None = None
    #: "time" or "rate" for a ``str`` option holding one ('' or '0' = none): a bare number is refused
    dim: str | None = None

    def allowed(self) -> str:
        """Human-readable allowed values."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        kind = {
            "time": "a time with its unit, like '1us' (0 needs none)",
            "rate": "a rate with its unit, like '100Gbps'",
            "size": "a size like '1MiB' or a number of bytes",
            "time?": "a time like '1ms' or 'never'",
            "node_pair": "two node names, e.g. ['h0', 's0']",
            "table": "a table",
            "id": "a string or an integer, unique among flows",
            "list[id]": "a list of flow ids",
        }.get(self.kind, self.kind)
        if self.lo is not None or self.hi is not None:
            lo = "" if self.lo is None else _num(self.lo)
            hi = "" if self.hi is None else _num(self.hi)
            rng = f"{lo}..{hi}" if lo and hi else (f">= {lo}" if lo else f"<= {hi}")
            unit = {"time": " ps", "size": " bytes", "rate": " b/s"}.get(self.kind, "")
            return f"{kind} in {rng}{unit}"
        return kind


def _num(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


MTUS = (256, 512, 1024, 2048, 4096)
LINK_LAYERS = ("roce", "ib")
TOPOLOGY_KINDS = ("back_to_back", "star", "incast", "dumbbell", "leaf_spine", "fat_tree", "dragonfly",
                  "rail_optimized", "explicit")
VERBS = ("WRITE", "READ", "SEND")
DIRECTIONS = ("both", "forward", "reverse")
U63 = 2**63 - 1

#: section -> one-line description (order = docs order)
SECTIONS: dict[str, str] = {
    "simulation": "Run control: seed, how long, progress output.",
    "topology": "The fabric: a builder from rdmasim.topology and its parameters, or an explicit graph "
    '(`kind = "explicit"` with `hosts`, `switches` and `[[topology.links]]`). '
    "Host names: back_to_back `a`, `b`; star/incast `h0..`; dumbbell `l0..`, `r0..`; "
    "leaf_spine `h0..`; fat_tree `h{pod}_{edge}_{i}`; dragonfly `h{group}_{router}_{i}` (routers "
    "`r{group}_{router}`); rail_optimized `n{node}_g{gpu}` (rail switches `rail{gpu}_{unit}`, spines "
    "`spine{j}`). See docs/routing.md for dragonfly and rail_optimized.",
    "topology.links[]": "Links of an explicit graph (rate/delay default to [link]).",
    "link": "Defaults for every link.",
    "switch": "Every switch (rdmasim.fabric.switch_config).",
    "switch.ecn": "RED ECN marking on egress queues.",
    "switch.watchdog": "PFC watchdog (rdmasim.fabric.enable_pfc_watchdog).",
    "switch.credits": "InfiniBand credits, with `flow_control = \"credits\"` "
                      "(rdmasim.ib_fabric.enable_credits).",
    "congestion_control": "NIC congestion control of every host.",
    "congestion_control.dctcp": "DCTCP parameters (rdmasim.cc_dctcp.DctcpParams; the defaults are the HPCC "
    "authors' ns-3 settings): used when `algorithm = \"dctcp\"`.",
    "congestion_control.timely": "TIMELY parameters (rdmasim.cc_timely.TimelyParams; the defaults are the "
    "TIMELY paper's, for 10 Gb/s NICs): used when `algorithm = \"timely\"`.",
    "congestion_control.swift": "Swift parameters (rdmasim.cc_swift.SwiftParams; the delays depend on the "
    "fabric: SwiftParams.for_path derives them from the base RTT): used when `algorithm = \"swift\"`.",
    "congestion_control.hpcc": "HPCC parameters (rdmasim.cc_hpcc.HpccParams; base_rtt depends on the "
    "fabric: HpccParams.for_path takes it from a path): used when `algorithm = \"hpcc\"`.",
    "congestion_control.ibcc": "InfiniBand CC parameters (IBA annex A10; rdmasim.cc_ibcc.IbccParams, "
    "docs/cc-ibcc.md; the default table suits 100 Gb/s and 1 KB MTU): used when `algorithm = \"ibcc\"`.",
    "congestion_control.nscc": "NSCC parameters (the Ultra Ethernet network-signal CC, SMaRTT; "
    "rdmasim.cc_nscc.NsccParams, defaults from the UEC htsim simulator; base_rtt depends on the fabric: "
    "NsccParams.for_path takes it from a path): used when `algorithm = \"nscc\"`.",
    "nic": "NIC profile of every host (rdmasim.nic): PSN window, ACK coalescing, PFC response time.",
    "qp": "RC queue-pair attributes of every flow (transport 'roce').",
    "transport": "The transport every flow runs on, [traffic.collective] included: 'roce' (RC queue pairs, "
    "the IB transport) or 'uet' (the Ultra Ethernet transport, docs/uet.md; WRITE and SEND flows; over "
    "uet.mode 'uud' a collective's result misses what the fabric lost: validate warns).",
    "uet": "Ultra Ethernet transport options (transport.kind = 'uet'; docs/uet.md). qp.mtu is its payload "
    "per packet.",
    "impairments.loss[]": "i.i.d. loss on one link (overrides [link] loss there).",
    "impairments.gilbert[]": "Bursty (Gilbert-Elliott) loss on one link.",
    "impairments.failures[]": "A link going down (and optionally back up) at given times.",
    "impairments.slow_links[]": "A link (or one direction of it) running slower than its rate from the "
    "start: a slow NIC (the host's link) or a degraded link.",
    "impairments.stragglers[]": "A slow rank: `host` arrives `delay` late at `[traffic.collective]` (none of "
    "the flows it sends starts before then) and computes `delay` longer in every `[traffic.halo]` timestep. "
    "A slow NIC is `[[impairments.slow_links]]` on the host's link.",
    "flows[]": "Explicit flows. `src` is where the data is, `dst` where it goes: WRITE and SEND are "
    "posted by `src`, READ by `dst`.",
    "traffic.incast": "Incast generator: every sender sends `size` to `receiver` at `start`.",
    "traffic.permutation": "Permutation: every host sends `size` to exactly one other host and receives from "
    "exactly one (a random derangement drawn from the seed).",
    "traffic.all_to_all": "All-to-all: every host sends `size` to every other host (n(n-1) flows).",
    "traffic.poisson": "Poisson arrivals per host at `load` of its link rate, sizes drawn from `cdf` "
    "(`web_search` (DCTCP), `data_mining` (VL2), or a CSV file of `size,cdf` rows), random destinations.",
    "traffic.collective": "A collective built on flows with dependencies: `allreduce` (algorithm `ring`, "
    "`tree` (NCCL's double binary tree), `halving_doubling` or `recursive_doubling`), `allgather`, "
    "`reduce_scatter` (`ring`), `broadcast`, `reduce` (`chain`) or `alltoall` (`direct`, `pairwise`) of a "
    "`size`-byte buffer, pipelined in `chunk_size` chunks over `channels` (ring, tree and chain); the older "
    "names `ring_allreduce`, `halving_doubling_allreduce` and `moe_all_to_all` (`size` bytes per host pair "
    "for `rounds` rounds) still work. The results give each collective's time, algbw and busbw.",
    "traffic.halo": "Nearest-neighbour halo exchange on a 2-D or 3-D process grid (`dims`, ranks "
    "row-major over `hosts`): every timestep each rank computes (a time drawn from `compute`), sends "
    "`face_size` bytes to each grid neighbour (during the compute with `overlap`), then joins a `barrier`. "
    "The results give its time, each rank's wait and the critical path (docs/hpc-patterns.md).",
    "outputs": "What is written and where.",
}

SCHEMA: dict[str, Opt] = {
    # simulation
    "simulation.name": Opt("str", "", "A label written into the results metadata."),
    "simulation.seed": Opt("int", 1, "Seed of every random choice (loss, ECN marks, ECMP).", lo=0, hi=U63),
    "simulation.duration": Opt(
        "time",
        "1s",
        "Stop at this simulated time even if flows are unfinished (they get status `incomplete`).",
        lo=1,
        hi=U63,
    ),
    "simulation.threads": Opt(
        "int", 1, "Threads of the event loop: above 1 the fabric is split into partitions "
        "(`partitions`, default as many as threads) that run on this many threads, with the results "
        "of one thread (docs/scaling.md). At most `partitions`.", lo=1, hi=4096),
    "simulation.partitions": Opt(
        "int", 0, "Split each run into this many partitions of the fabric (rdmasim.partition); 0: "
        "as many as `threads` (1: one event queue). Any split, 1 included, orders simultaneous events "
        "the same way, so every split gives the same results (which may differ slightly from 0 with "
        "one thread).", lo=0, hi=4096),
    "simulation.progress": Opt(
        "bool", True, "Draw a progress bar (simulated time, events/s, flows done, ETA) on stderr when "
        "it is a terminal (`rdmasim -q` turns it off)."
    ),
    # topology
    "topology.kind": Opt("str", "back_to_back", "Topology builder.", choices=TOPOLOGY_KINDS),
    "topology.n": Opt("int", 2, "star: number of hosts.", lo=2, hi=4096),
    "topology.n_senders": Opt(
        "int", 8, "incast: number of senders (receiver is the last host).", lo=1, hi=4095
    ),
    "topology.n_left": Opt("int", 1, "dumbbell: hosts on the left switch.", lo=1, hi=4095),
    "topology.n_right": Opt("int", 1, "dumbbell: hosts on the right switch.", lo=1, hi=4095),
    "topology.bottleneck_rate": Opt(
        "str", "", "dumbbell: rate of the switch-switch link ('' = [link] rate).", dim="rate"),
    "topology.leaves": Opt("int", 2, "leaf_spine: number of leaves.", lo=1, hi=2048),
    "topology.spines": Opt("int", 2, "leaf_spine, rail_optimized: number of spines.", lo=1, hi=2048),
    "topology.hosts_per_leaf": Opt("int", 2, "leaf_spine: hosts per leaf.", lo=1, hi=2048),
    "topology.fabric_rate": Opt("str", "", "leaf_spine, rail_optimized: rate of the links to spines ('' = "
                                "[link] rate).", dim="rate"),
    "topology.k": Opt("int", 4, "fat_tree: arity (even).", lo=2, hi=64),
    "topology.routers_per_group": Opt("int", 4, "dragonfly: routers per group (a).", lo=1, hi=256),
    "topology.hosts_per_router": Opt("int", 2, "dragonfly: hosts per router (p).", lo=1, hi=256),
    "topology.global_per_router": Opt("int", 2, "dragonfly: global links per router (h).", lo=1, hi=256),
    "topology.groups": Opt("int", 0, "dragonfly: groups, 2..a*h+1 (0 = a*h+1, one global link per pair of "
                           "groups).", lo=0, hi=65535),
    "topology.routing": Opt("str", "minimal", "dragonfly: routing by group; Valiant's intermediate group is "
                            "drawn per flow under switch.path_select = 'ecmp', per packet otherwise.",
                            choices=("minimal", "valiant", "ugal")),
    "topology.global_rate": Opt("str", "", "dragonfly: global link rate ('' = [link] rate).", dim="rate"),
    "topology.hop_classes": Opt("bool", False, "dragonfly: a packet's priority rises by one per global "
                                "link crossed (virtual channels: PFC cannot deadlock); make those priorities "
                                "lossless, e.g. switch.lossless = [3, 4, 5], and use switch.scheduler = "
                                "'wrr'. With credits the class is the SL of the egress port's SL -> VL "
                                "table: with SL 3, vls = 3 puts classes 3, 4, 5 on VLs 0, 1, 2 (credit "
                                "loops cannot close)."),
    "topology.nodes": Opt("int", 4, "rail_optimized: nodes.", lo=1, hi=4096),
    "topology.gpus_per_node": Opt("int", 8, "rail_optimized: GPUs (NICs, rails) per node.", lo=1, hi=64),
    "topology.nodes_per_unit": Opt("int", 0, "rail_optimized: nodes per scalable unit, each with its own "
                                   "rail switches (0 = all nodes, one unit).", lo=0, hi=4095),
    "topology.hosts": Opt("list[str]", [], "explicit: host names."),
    "topology.switches": Opt("list[str]", [], "explicit: switch names."),
    "topology.links[].a": Opt("str", "", "One end (a host or switch name)."),
    "topology.links[].b": Opt("str", "", "The other end."),
    "topology.links[].rate": Opt("str", "", "Rate ('' = [link] rate).", dim="rate"),
    "topology.links[].delay": Opt("str", "", "Propagation delay ('' = [link] delay).", dim="time"),
    # link
    "link.rate": Opt("rate", "100Gbps", "Line rate.", lo=1, hi=U63),
    "link.delay": Opt("time", "1us", "Propagation delay.", lo=0, hi=U63),
    "link.mtu": Opt("int", 4096, "Largest RoCE path MTU the links carry.", choices=MTUS),
    "link.layer": Opt("str", "roce", "Framing of the whole fabric: `roce` (RoCEv2 over Ethernet) or `ib` "
                      "(native InfiniBand: LRH / BTH / ICRC / VCRC, LIDs, no PFC; docs/infiniband.md).",
                      choices=LINK_LAYERS),
    "link.loss": Opt(
        "float", 0.0, "i.i.d. frame loss probability in each direction of every link.", lo=0.0, hi=1.0
    ),
    # switch
    "switch.buffer": Opt("size", "12MB", "Shared buffer of every switch (not given: 12 MB, more for switches "
                         "with many ports, see Errors above).", lo=1, hi=2**64 - 1),
    "switch.reserve": Opt(
        "size", "4KB", "Guaranteed bytes per (ingress port, priority).", lo=0, hi=2**32 - 1
    ),
    "switch.headroom": Opt(
        "size", "64KB", "PFC headroom per (ingress port, lossless priority).", lo=0, hi=2**32 - 1
    ),
    "switch.threshold": Opt(
        "str",
        "dynamic",
        "PFC XOFF threshold: 'dynamic' (free buffer >> alpha_shift) or a static size such as '100KB'.",
    ),
    "switch.alpha_shift": Opt("int", 3, "Dynamic threshold shift.", lo=0, hi=16),
    "switch.resume_offset": Opt("size", "3KB", "XON hysteresis.", lo=0, hi=2**32 - 1),
    "switch.lossless": Opt("list[int]", [3], "Priorities with PFC (the others drop when full).", lo=0, hi=7),
    "switch.pfc_quanta": Opt("int", 0xFFFF, "Pause time of XOFF frames (quanta).", lo=1, hi=0xFFFF),
    "switch.pfc_response": Opt("time", 0, "PFC response time of every switch port: a received PFC frame acts "
                               "this long after it arrived (802.3 Annex 31D bound at 100 Gb/s: 2.01728us).",
                               lo=0, hi=2**62),
    "switch.latency": Opt("time", 0, "Forwarding latency of every switch: a received frame is seen this long "
                          "after its last bit (EDR InfiniBand switch: 90ns, 100 GbE switch: 300ns; "
                          "rdmasim.ib_fabric.SWITCH_LATENCY).", lo=0, hi=2**62),
    "switch.flow_control": Opt("str", "auto", "Link-level flow control of every link: 'pfc' (lossless "
                               "priorities by pause frames), 'credits' (InfiniBand credits per VL, "
                               "docs/mechanisms/credits.md; replaces PFC) or 'auto' (credits when "
                               "link.layer = 'ib', which has no PFC; else pfc).",
                               choices=("auto", "pfc", "credits")),
    "switch.credits.vls": Opt("int", 1, "Credits: data VLs per port (SL s goes on VL s mod vls; under "
                              "topology.hop_classes the class, SL + global links crossed, is the SL).",
                              lo=1, hi=8),
    "switch.credits.victim_mask": Opt("str", "none", "Credits: IB congestion control's Victim_Mask on "
                                      "every switch: the ports that ECN-mark (FECN) also while they lack "
                                      "credits (a victim of congestion further on): 'none' (the annex's and "
                                      "OpenSM's default), 'hosts' (the ports to hosts, CAs) or 'all'.",
                                      choices=("none", "hosts", "all")),
    "switch.credits.buffer": Opt("size", "64KB", "Credits: receive buffer per (port, VL), in 64-byte blocks "
                                 "rounded up; at least one largest packet.", lo=64, hi=65535 * 64),
    "switch.lft": Opt("str", "none", "Linear forwarding tables computed once at setup: 'none' (the "
                      "switches' own routing), 'minhop' or 'updn' (up*/down*, deadlock-free).",
                      choices=("none", "minhop", "updn")),
    "switch.scheduler": Opt("str", "strict", "Egress scheduler.", choices=("strict", "wrr")),
    "switch.ecn_mark": Opt("str", "enqueue", "When ECN marks are decided.", choices=("enqueue", "dequeue")),
    "switch.path_select": Opt(
        "str", "ecmp", "How a packet picks among equal-cost next hops: 'ecmp' (5-tuple hash: one path per "
        "QP), 'spray' (per packet: reorders a QP, see docs/routing.md), 'adaptive' (the least-queued "
        "egress, ties by the hash) or 'adaptive_packet' (the least-queued egress, ties per packet: "
        "docs/multipath.md).", choices=PATH_SELECT,
    ),
    "switch.ar_band": Opt("size", 0, "'adaptive' and 'adaptive_packet': compare egress queues in bands of "
                          "this size (queues in one band are equal; 0: bytes exactly; docs/multipath.md).",
                          lo=0, hi=2**32 - 1),
    "switch.trimming": Opt("bool", False, "Packet trimming (NDP; Ultra Ethernet's option, "
                           "docs/multipath.md): a packet its transport lets be trimmed, whose egress "
                           "queue would exceed trim_threshold or that the buffer would drop, goes on as "
                           "its headers at trim_priority. RoCE packets are never trimmed."),
    "switch.trim_threshold": Opt("size", "64KiB", "Trimming: egress queue bytes (with the packet) above "
                                 "which a packet is trimmed.", lo=1, hi=2**40),
    "switch.trim_priority": Opt("int", 7, "Trimming: the priority (egress queue) trimmed headers go at.",
                                lo=0, hi=7),
    "switch.watchdog.enabled": Opt("bool", False, "PFC watchdog on every switch (SONiC-style): a lossless "
                                   "queue paused with no progress for `detect` drops its packets and ignores "
                                   "pause for `restore`."),
    "switch.watchdog.poll": Opt("time", "100us", "Watchdog polling period.", lo=1, hi=U63),
    "switch.watchdog.detect": Opt("time", "200us", "Stall that declares a storm (>= poll).", lo=1, hi=U63),
    "switch.watchdog.restore": Opt("time", "200us", "Time pause is ignored after a storm.", lo=1, hi=U63),
    "switch.deadlock_check": Opt("time", 0, "Look for a cycle of queues each held back by the next (paused "
                                 "by PFC, or stalled for InfiniBand credits) this often; the first found is "
                                 "in metadata.json. 0: one look at the end of a run that leaves flows "
                                 "unfinished.", lo=0, hi=U63),
    "switch.ecn.enabled": Opt("bool", True, "Mark ECN (needed by DCQCN)."),
    "switch.ecn.kmin": Opt("size", "5KB", "RED Kmin.", lo=0, hi=2**64 - 1),
    "switch.ecn.kmax": Opt("size", "200KB", "RED Kmax (> kmin).", lo=1, hi=2**64 - 1),
    "switch.ecn.pmax": Opt("float", 0.01, "RED marking probability at Kmax.", lo=0.0, hi=1.0),
    "switch.ecn.priorities": Opt("list[int]", [3], "Priorities that are ECN-marked (with credits: the "
                                 "VLs they map to, p mod switch.credits.vls; on IB the mark is FECN).",
                                 lo=0, hi=7),
    # congestion control
    "congestion_control.algorithm": Opt("str", "none", "NIC congestion control (rdmasim.cc.ALGORITHM_NAMES, "
                                        "or a C plug-in registered with rdmasim.cc.register_plugin).",
                                        choices=AlgorithmChoices(("none", "dcqcn", "dctcp", "timely", "swift",
                                                                  "hpcc", "ibcc", "nscc"))),
    "congestion_control.plugin": Opt("table", {}, "Parameters of a C plug-in algorithm (name = value, over "
                                     "its registered defaults; docs/cc-plugins.md)."),
    "congestion_control.preset": Opt(
        "str", "nic", "DCQCN parameter preset: \"nic\" = the NIC profile's (rxe: paper, cx6: nvidia) "
        "with the profile's CNP interval; \"paper\" / \"nvidia\" = DcqcnParams.paper / nvidia.",
        choices=("nic", "paper", "nvidia"),
    ),
    "congestion_control.notification_point": Opt(
        "bool", True, "Receivers send CNPs for CE-marked packets (DCTCP does not use them: it reads the CE "
        "marks its ACKs echo; set false to save the frames)."
    ),
    "congestion_control.overrides": Opt(
        "table",
        {},
        "Parameter overrides: DcqcnParams field names (preset paper) or mlxconfig names (preset nvidia; "
        "preset nic: the names of the NIC profile's preset).",
    ),
    # DCTCP (rdmasim.cc_dctcp.DctcpParams; used when algorithm = "dctcp")
    "congestion_control.dctcp.g": Opt("float", 1 / 16, "DCTCP alpha gain g (0 < g <= 1).", lo=0.0, hi=1.0),
    "congestion_control.dctcp.initial_alpha": Opt("float", 1.0, "DCTCP alpha before its first update.",
                                                  lo=0.0, hi=1.0),
    "congestion_control.dctcp.ai_rate": Opt("rate", "615Mbps", "DCTCP additive increase per window of data "
                                            "without a mark (one MTU per RTT)."),
    "congestion_control.dctcp.min_rate": Opt("rate", "1Gbps", "DCTCP rate floor of a cut."),
    "congestion_control.dctcp.max_rate": Opt("str", "0", "DCTCP rate cap: '0' = the line rate, or a rate "
                                             "like '50Gbps'.", dim="rate"),
    "congestion_control.dctcp.window": Opt("size", 0, "DCTCP window at the maximum rate (a BDP, e.g. "
                                           "'52KB'); 0 = no window.", lo=0, hi=2**64 - 1),
    "congestion_control.dctcp.var_win": Opt("bool", True, "DCTCP window follows the rate (window x rate / "
                                            "max rate)."),
    "congestion_control.dctcp.pace": Opt("bool", True, "DCTCP paces packets at its rate (false: the window "
                                         "alone limits; needs a window)."),
    "congestion_control.dctcp.ack_every": Opt("int", 1, "DCTCP asks for an ACK on every n-th packet (1: "
                                              "each, as the HPCC simulator; 2: DCTCP's delayed ACKs).",
                                              lo=1, hi=65536),
    # TIMELY (rdmasim.cc_timely.TimelyParams; used when algorithm = "timely")
    "congestion_control.timely.alpha": Opt("float", 0.875, "TIMELY EWMA weight of a new RTT difference "
                                           "(0 < alpha <= 1).", lo=0.0, hi=1.0),
    "congestion_control.timely.beta": Opt("float", 0.8, "TIMELY multiplicative decrease factor "
                                          "(0 < beta <= 1).", lo=0.0, hi=1.0),
    "congestion_control.timely.t_low": Opt("time", "50us", "TIMELY T_low: below it the rate only grows "
                                           "(additive).", lo=1, hi=U63),
    "congestion_control.timely.t_high": Opt("time", "500us", "TIMELY T_high (> t_low): above it the rate "
                                            "falls by beta (1 - T_high / RTT).", lo=1, hi=U63),
    "congestion_control.timely.min_rtt": Opt("time", "20us", "TIMELY gradient normalisation: gradient = "
                                             "EWMA(RTT difference) / min_rtt.", lo=1, hi=U63),
    "congestion_control.timely.ai_rate": Opt("rate", "10Mbps", "TIMELY additive step delta.", lo=1),
    "congestion_control.timely.hai_after": Opt("int", 5, "TIMELY HAI after this many consecutive "
                                               "updates with gradient <= 0.", lo=1, hi=2**32 - 1),
    "congestion_control.timely.hai_factor": Opt("float", 5.0, "TIMELY HAI step = hai_factor x delta.",
                                                lo=1.0),
    "congestion_control.timely.min_rate": Opt("rate", "1Gbps", "TIMELY rate floor (0 = none)."),
    "congestion_control.timely.max_rate": Opt("str", "0", "TIMELY rate cap: '0' = the line rate, or a "
                                              "rate like '50Gbps'.", dim="rate"),
    "congestion_control.timely.initial_rate": Opt("str", "0", "TIMELY starting rate: '0' = the maximum "
                                                  "rate, or a rate.", dim="rate"),
    "congestion_control.timely.segment": Opt("size", "16KB", "TIMELY updates once per this many bytes "
                                             "acknowledged (the paper's segment); 0 = once per window of "
                                             "data (ns-3).", lo=0, hi=2**64 - 1),
    # Swift (rdmasim.cc_swift.SwiftParams; used when algorithm = "swift")
    "congestion_control.swift.ai": Opt("float", 1.0, "Swift additive increase, packets per RTT.", lo=0.0),
    "congestion_control.swift.beta": Opt("float", 0.8, "Swift decrease scale: cwnd x (1 - beta (delay - "
                                         "target) / delay).", lo=0.0, hi=1.0),
    "congestion_control.swift.max_mdf": Opt("float", 0.5, "Swift largest cut (a fraction of the window, "
                                            "0 < f < 1).", lo=0.0, hi=1.0),
    "congestion_control.swift.base_target": Opt("time", "10us", "Swift target delay of a one-hop path "
                                                "with few flows.", lo=1, hi=U63),
    "congestion_control.swift.hop_scale": Opt("time", "1us", "Swift target added per hop (h).",
                                              lo=0, hi=U63),
    "congestion_control.swift.hops": Opt("int", 1, "Swift hop count (switches on the forward path; a "
                                         "parameter: no TTL feedback).", lo=0, hi=2**32 - 1),
    "congestion_control.swift.fs_range": Opt("time", "10us", "Swift flow scaling: the most target added "
                                             "(at fs_min_cwnd).", lo=0, hi=U63),
    "congestion_control.swift.fs_min_cwnd": Opt("float", 0.1, "Swift flow scaling adds all of fs_range "
                                                "at or below this window (packets).", lo=0.0),
    "congestion_control.swift.fs_max_cwnd": Opt("float", 100.0, "Swift flow scaling adds nothing at or "
                                                "above this window (packets, > fs_min_cwnd).", lo=0.0),
    "congestion_control.swift.min_cwnd": Opt("float", 0.001, "Swift smallest window (packets; below 1 "
                                             "the QP is paced one RTT / cwnd apart).", lo=0.0),
    "congestion_control.swift.max_cwnd": Opt("float", 0.0, "Swift largest window (packets; 0 = no cap).",
                                             lo=0.0),
    "congestion_control.swift.init_cwnd": Opt("float", 0.0, "Swift first window (packets; 0 = line rate "
                                              "x base_target).", lo=0.0),
    "congestion_control.swift.packet_bytes": Opt("int", 1024, "Swift packet size for the window (the "
                                                 "path MTU's payload).", lo=1, hi=2**32 - 1),
    "congestion_control.swift.acks_per_window": Opt("int", 8, "Swift ACKs asked for per window (and "
                                                    "when it fills); 0 = one per packet.", lo=0,
                                                    hi=2**32 - 1),
    # HPCC (rdmasim.cc_hpcc.HpccParams; used when algorithm = "hpcc")
    "congestion_control.hpcc.eta": Opt("float", 0.95, "HPCC target utilisation eta (0 < eta <= 1).",
                                       lo=0.0, hi=1.0),
    "congestion_control.hpcc.max_stage": Opt("int", 5, "HPCC additive-only reference updates before a "
                                             "multiplicative one.", lo=0, hi=2**32 - 1),
    "congestion_control.hpcc.fast_react": Opt("bool", True, "HPCC reacts to every ACK between its once-"
                                              "per-RTT reference updates."),
    "congestion_control.hpcc.base_rtt": Opt("time", "4us", "HPCC T: the fabric's (largest) base RTT; "
                                            "window = rate x T.", lo=1, hi=U63),
    "congestion_control.hpcc.ai_rate": Opt("str", "0", "HPCC additive step W_AI = ai_rate x T: '0' = "
                                           "line rate / 2500 (the ns-3 simulator's), or a rate.", dim="rate"),
    "congestion_control.hpcc.min_rate": Opt("rate", "1Gbps", "HPCC smallest window / T."),
    "congestion_control.hpcc.max_rate": Opt("str", "0", "HPCC largest window / T: '0' = the line rate, "
                                            "or a rate like '50Gbps'.", dim="rate"),
    "congestion_control.hpcc.ack_every": Opt("int", 1, "HPCC asks for an ACK on every n-th packet and "
                                             "whenever the window fills (1: each, as the HPCC "
                                             "simulator).", lo=1, hi=2**32 - 1),
    # InfiniBand CC (rdmasim.cc_ibcc.IbccParams; used when algorithm = "ibcc")
    "congestion_control.ibcc.ccti_increase": Opt("int", 1, "IB CC CCTI_Increase: CCT index steps per BECN.",
                                                 lo=1, hi=255),
    "congestion_control.ibcc.ccti_limit": Opt("int", -1, "IB CC CCTI_Limit, the highest index (-1 = the "
                                              "table's last).", lo=-1, hi=127),
    "congestion_control.ibcc.ccti_min": Opt("int", 0, "IB CC CCTI_Min: the timer lowers the index down to "
                                            "it.", lo=0, hi=127),
    "congestion_control.ibcc.ccti_timer": Opt("int", 300, "IB CC CCTI_Timer, units of 1.024 us: each expiry "
                                              "lowers the index by one.", lo=1, hi=65535),
    "congestion_control.ibcc.cct": Opt("list[int]", [], "IB CC table: inter-packet delays in ipd_unit, "
                                       "index 0 first (empty = linear: cct_entries, cct_step).", lo=0,
                                       hi=16383 << 3),
    "congestion_control.ibcc.cct_entries": Opt("int", 128, "IB CC linear table: entries (when cct is "
                                               "empty).", lo=1, hi=128),
    "congestion_control.ibcc.cct_step": Opt("int", 22, "IB CC linear table: entry i = i x step ipd_unit "
                                            "(when cct is empty).", lo=0, hi=16383 << 3),
    "congestion_control.ibcc.ipd_unit": Opt("time", "1ns", "IB CC time of one inter-packet delay unit.",
                                            lo=1, hi=U63),
    "congestion_control.ibcc.cnp_interval": Opt("time", "4us", "IB CC: at most one BECN (CNP) per QP per "
                                                "interval (0 = one per FECN mark).", lo=0, hi=U63),
    # NSCC (rdmasim.cc_nscc.NsccParams; used when algorithm = "nscc")
    "congestion_control.nscc.base_rtt": Opt("time", "4us", "NSCC network base RTT: target, adjustment "
                                            "period, the BDP that scales the gains.", lo=1, hi=U63),
    "congestion_control.nscc.trimming": Opt("bool", False, "NSCC: the network trims (target 0.75 x "
                                            "base_rtt instead of 1 x)."),
    "congestion_control.nscc.target_qdelay": Opt("time", 0, "NSCC target queueing delay (0 = from "
                                                 "base_rtt and trimming).", lo=0, hi=U63),
    "congestion_control.nscc.qa_threshold": Opt("time", 0, "NSCC QuickAdapt above this delay (0 = 4 x "
                                                "target).", lo=0, hi=U63),
    "congestion_control.nscc.qa_gate": Opt("int", 3, "NSCC QuickAdapt only when less than max window / "
                                           "2**qa_gate was delivered in the last interval.", lo=0, hi=63),
    "congestion_control.nscc.quick_adapt": Opt("bool", True, "NSCC QuickAdapt on."),
    "congestion_control.nscc.alpha_mss": Opt("float", 4.0, "NSCC proportional increase gain (MSS, at "
                                             "the 100 Gb/s, 12 us reference).", lo=0.0),
    "congestion_control.nscc.fi_mss": Opt("float", 5.0, "NSCC fair increase per RTT (MSS, at the "
                                          "reference).", lo=0.0),
    "congestion_control.nscc.fi_scale": Opt("float", 0.25, "NSCC fast increase per acked byte (at the "
                                            "reference).", lo=0.0),
    "congestion_control.nscc.fast_increase_delay": Opt("time", "1us", "NSCC fast increase below this "
                                                       "delay.", lo=0, hi=U63),
    "congestion_control.nscc.eta_mss": Opt("float", 0.15, "NSCC increase once per base RTT (MSS, at the "
                                           "reference).", lo=0.0),
    "congestion_control.nscc.gamma": Opt("float", 0.8, "NSCC multiplicative decrease gain (0 < gamma <= 1).",
                                         lo=0.0, hi=1.0),
    "congestion_control.nscc.max_md": Opt("float", 0.5, "NSCC largest cut (a fraction of the window, "
                                          "0 < max_md < 1).", lo=0.0, hi=1.0),
    "congestion_control.nscc.delay_alpha": Opt("float", 0.0125, "NSCC EWMA gain of the average delay.",
                                               lo=0.0, hi=1.0),
    "congestion_control.nscc.adjust_packets": Opt("int", 8, "NSCC applies increases every this many "
                                                  "packets acked (or once per base RTT).", lo=1,
                                                  hi=2**32 - 1),
    "congestion_control.nscc.ref_rate": Opt("rate", "100Gbps", "NSCC reference network rate the gains "
                                            "are tuned for."),
    "congestion_control.nscc.ref_rtt": Opt("time", "12us", "NSCC reference network RTT.", lo=1, hi=U63),
    "congestion_control.nscc.min_cwnd": Opt("size", 0, "NSCC smallest window (0 = one packet).", lo=0,
                                            hi=2**63 - 1),
    "congestion_control.nscc.max_cwnd": Opt("size", 0, "NSCC largest window (0 = 1.5 x line rate x "
                                            "base_rtt).", lo=0, hi=2**63 - 1),
    "congestion_control.nscc.init_cwnd": Opt("size", 0, "NSCC first window (0 = max_cwnd).", lo=0,
                                             hi=2**63 - 1),
    "congestion_control.nscc.packet_bytes": Opt("int", 1024, "NSCC packet size for the window (the path "
                                                "MTU).", lo=1, hi=2**32 - 1),
    # nic
    "nic.profile": Opt("str", "rxe", "NIC profile (rdmasim.nic.PROFILES; 'connectx' = 'cx6'; 'cx7-ar' and "
                       "'ib-ar' place packets out of order, docs/multipath.md).",
                       choices=("rxe", "cx6", "connectx", "cx7-ar", "ib-ar")),
    "nic.overrides": Opt(
        "table", {}, "Profile constants to change: max_unacked_psns, ack_coalesce_pkts, ack_timeout, "
        "ack_req_interval, pfc_response, ooo_placement (only false: a profile without it cannot gain it), "
        "reorder_time (counts are integers; max_unacked_psns + 1 >= ack_req_interval).",
    ),
    # qp
    "qp.mtu": Opt("int", 1024, "Path MTU of every QP (<= link.mtu).", choices=MTUS),
    "qp.timeout": Opt("int", 14, "Local ACK timeout exponent: 4.096us * 2^timeout.", lo=1, hi=31),
    "qp.retry_cnt": Opt("int", 7, "Retransmission retries before the QP errors out.", lo=0, hi=7),
    "qp.rnr_retry": Opt("int", 7, "RNR retries (7 = infinite).", lo=0, hi=7),
    "qp.recovery": Opt(
        "str", "nic", "Loss recovery: 'nic' (the NIC profile's: 'ooo' with ooo_placement, else 'gbn'), "
        "'gbn' (Go-Back-N, as RoCEv2 NICs), 'irn' (IRN selective repeat; window = the path's "
        "bandwidth-delay product) or 'ooo' (IRN's placement, reorder-tolerant: docs/multipath.md; needs "
        "a profile with ooo_placement).", choices=("nic", "gbn", "irn", "ooo"),
    ),
    "qp.irn_window": Opt(
        "int", 0, "IRN's cap on packets in flight (0 = the bandwidth-delay product of one link; a path of "
        "several hops needs more).", lo=0, hi=65536,
    ),
    # transport, uet
    "transport.kind": Opt("str", "roce", "The transport of every flow of the scenario (a traffic generator "
                          "or a [[flows]] row has none of its own: a transport key there is refused).",
                          choices=("roce", "uet")),
    "uet.mode": Opt("str", "rud", "Delivery mode: 'rud' (reliable unordered), 'rod' (reliable ordered: "
                    "a packet out of order is dropped and the initiator goes back), 'rudi' (reliable "
                    "unordered for idempotent operations: no PDC at the target) or 'uud' (unreliable: no "
                    "ACK, no resend, losses counted).", choices=("rud", "rod", "rudi", "uud")),
    "uet.lb": Opt("str", "oblivious", "Entropy per data packet: 'oblivious' (random, packet spraying) or "
                  "'reps' (recycled entropies, REPS).", choices=("oblivious", "reps")),
    "uet.cc": Opt("str", "none", "Congestion control of a PDC: 'none' (a fixed window), 'nscc' (NSCC's "
                  "window, its defaults from the fabric's base RTT) or 'rccc' (receiver credit: the target "
                  "paces grants at its link rate).", choices=("none", "nscc", "rccc")),
    "uet.window": Opt("size", 0, "Bytes in flight per PDC (0 = twice a leaf-spine bandwidth-delay product "
                      "of the first link).", lo=0, hi=2**32 - 1),
    "uet.reorder_packets": Opt("int", 64, "A PSN is lost when one this many PSNs later was acknowledged "
                               "(reordering by fewer is not loss).", lo=1, hi=1024),
    "uet.ack_every": Opt("int", 4, "The target acknowledges at least every this many packets.", lo=1,
                         hi=1024),
    "uet.rto": Opt("time", "100us", "Retransmit timeout before the first RTT sample (with "
                   "uet.rto_estimate = false: always).", lo=1, hi=U63),
    "uet.rto_estimate": Opt("bool", False, "The retransmit timeout follows the RTT: smoothed RTT + 4 x "
                            "its mean deviation (RFC 6298), doubled at each timeout, within "
                            "uet.rto_min .. uet.rto_max."),
    "uet.rto_min": Opt("time", "100us", "Lower bound of the estimated retransmit timeout.", lo=1, hi=U63),
    "uet.rto_max": Opt("time", "10ms", "Upper bound of the estimated retransmit timeout (and of its "
                       "backoff).", lo=1, hi=U63),
    "uet.trim": Opt("bool", False, "Data packets may be trimmed by switches (switch.trim_threshold); the "
                    "target NACKs a trimmed packet and the sender resends it at once."),
    "uet.nscc_base_rtt": Opt("time", 0, "uet.cc = 'nscc': the base RTT NSCC derives its defaults from "
                             "(0 = a leaf-spine round trip over the first link: four hops each way; give "
                             "the fabric's own on other topologies).", lo=0, hi=10**12),
    "uet.place_bytes": Opt("bool", False, "Data packets carry real bytes (a pattern of each flow's id) that "
                           "the target places at their offsets (in capture.pcap with outputs.pcap)."),
    "uet.target_buffer": Opt("size", 0, "Bytes of each flow's target buffer (a READ's: at the data holder; "
                             "0 = as long as the flow). A WRITE or READ beyond it ends in "
                             "IBV_WC_REM_ACCESS_ERR (SES BAD_ADDR), a SEND longer than it in "
                             "IBV_WC_REM_INV_REQ_ERR (TOO_LONG).", lo=0, hi=2**63 - 1),
    "uet.max_pdcs": Opt("int", 0, "PDCs a target holds at once (0 = up to its 65535 ids); a SYN beyond "
                        "them is NACKed NO_PDC_AVAIL and sent again at the retransmit timeout, and the "
                        "target asks the PDCs whose message it has whole to close.", lo=0, hi=65535),
    "uet.idle_close": Opt("time", 0, "A target asks the initiator to close a PDC (REQ_CLOSE) that has "
                          "received nothing for this long with its message whole (0 = never: only "
                          "under uet.max_pdcs pressure).", lo=0, hi=10**12),
    "uet.target_access": Opt("str", "rw", "What each target buffer grants remotely: 'rw', 'read' (a WRITE "
                             "to it ends in IBV_WC_REM_ACCESS_ERR, SES OP_VIOLATION) or 'write' (so does a "
                             "READ of it).", choices=("rw", "read", "write")),
    # impairments
    "impairments.loss[].link": Opt("node_pair", [], "The link, by its two end names."),
    "impairments.loss[].direction": Opt(
        "str", "both", "'forward' = first name to second.", choices=DIRECTIONS
    ),
    "impairments.loss[].probability": Opt("float", 0.0, "Frame loss probability.", lo=0.0, hi=1.0),
    "impairments.gilbert[].link": Opt("node_pair", [], "The link, by its two end names."),
    "impairments.gilbert[].direction": Opt(
        "str", "both", "'forward' = first name to second.", choices=DIRECTIONS
    ),
    "impairments.gilbert[].p_good_to_bad": Opt(
        "float", 0.0, "Per-frame good->bad probability.", lo=0.0, hi=1.0
    ),
    "impairments.gilbert[].p_bad_to_good": Opt(
        "float", 1.0, "Per-frame bad->good probability.", lo=0.0, hi=1.0
    ),
    "impairments.gilbert[].loss_in_good": Opt(
        "float", 0.0, "Loss probability in the good state.", lo=0.0, hi=1.0
    ),
    "impairments.gilbert[].loss_in_bad": Opt(
        "float", 1.0, "Loss probability in the bad state.", lo=0.0, hi=1.0
    ),
    "impairments.failures[].link": Opt("node_pair", [], "The link, by its two end names."),
    "impairments.failures[].at": Opt("time", 0, "When it goes down.", lo=0, hi=U63),
    "impairments.failures[].recover": Opt("time?", "never", "When it comes back up ('never')."),
    "impairments.slow_links[].link": Opt("node_pair", [], "The link, by its two end names."),
    "impairments.slow_links[].direction": Opt(
        "str", "both", "'forward' = first name to second.", choices=DIRECTIONS
    ),
    "impairments.slow_links[].rate": Opt("rate", "10Gbps", "Its line rate.", lo=1, hi=U63),
    "impairments.stragglers[].host": Opt("str", "", "The slow host (a rank of the collective or halo)."),
    "impairments.stragglers[].delay": Opt("time", 0, "Its extra compute time.", lo=0, hi=2**62),
    # flows
    "flows[].src": Opt("str", "", "Host the data comes from."),
    "flows[].dst": Opt("str", "", "Host the data goes to."),
    "flows[].size": Opt("size", "1MiB", "Message size.", lo=1, hi=2**31 - 1),
    "flows[].start": Opt("time", 0, "When the work request is posted.", lo=0, hi=U63),
    "flows[].verb": Opt("str", "WRITE", "RC verb, or LOCAL: no packets, `src` = `dst` allowed, it lasts its "
                        "`hold` (a delay on that host).", choices=(*VERBS, "LOCAL")),
    "flows[].hold": Opt("time", 0, "Wait this long after `start` before posting (a compute phase).", lo=0,
                        hi=2**62),
    "flows[].priority": Opt("int", 3, "Priority (traffic class DSCP 8 x priority).", lo=0, hi=7),
    "flows[].id": Opt("id", "", "A name for the flow, for `after` and `after_received` ('' = none). A "
                      "string or an integer: `1` and `\"1\"` are different ids."),
    "flows[].after": Opt("list[id]", [], "Ids of flows that must complete first: the flow starts at the "
                         "later of `start` and the last of their completions, then waits its `hold`. A "
                         "flow completes at its work completion on the host that posted it, success or "
                         "error (WRITE, SEND: the last ACK is back at `src`; READ: the last response is at "
                         "`dst`; LOCAL: at its start + `hold`). A cycle is refused."),
    "flows[].after_received": Opt("list[id]", [], "Ids of flows whose bytes must all have arrived first: "
                                  "the flow starts at the later of `start`, the `after` completions and the "
                                  "moment each of these flows' receiver has every byte (WRITE, SEND: "
                                  "`dst` accepted the last packet in order, about half a round trip before "
                                  "the completion; READ, LOCAL: their completion; a flow that fails: when "
                                  "it ends), then waits its `hold`."),
    "flows[].after_count": Opt("int", 0, "How many of the events of `after` and `after_received` start "
                               "the flow: 0 = all of them; k = the k-th to happen (the others are then "
                               "not waited for). At most their number.", lo=0, hi=2**32 - 1),
    # incast generator
    "traffic.incast.receiver": Opt("str", "", "Receiving host ('' = the last host)."),
    "traffic.incast.senders": Opt("list[str]", [], "Sending hosts ([] = every other host)."),
    "traffic.incast.size": Opt("size", "1MiB", "Bytes per sender.", lo=1, hi=2**31 - 1),
    "traffic.incast.start": Opt("time", 0, "Start time of every sender.", lo=0, hi=U63),
    "traffic.incast.verb": Opt("str", "WRITE", "RC verb.", choices=VERBS),
    "traffic.incast.priority": Opt("int", 3, "Priority.", lo=0, hi=7),
    # permutation / all-to-all / poisson / collective generators ([] hosts = every host)
    "traffic.permutation.hosts": Opt("list[str]", [], "Hosts taking part ([] = every host)."),
    "traffic.permutation.size": Opt("size", "1MiB", "Bytes per flow.", lo=1, hi=2**31 - 1),
    "traffic.permutation.start": Opt("time", 0, "Start time of every flow.", lo=0, hi=U63),
    "traffic.permutation.verb": Opt("str", "WRITE", "RC verb.", choices=VERBS),
    "traffic.permutation.priority": Opt("int", 3, "Priority.", lo=0, hi=7),
    "traffic.all_to_all.hosts": Opt("list[str]", [], "Hosts taking part ([] = every host)."),
    "traffic.all_to_all.size": Opt("size", "64KiB", "Bytes per ordered host pair.", lo=1, hi=2**31 - 1),
    "traffic.all_to_all.start": Opt("time", 0, "Start time of the first round.", lo=0, hi=U63),
    "traffic.all_to_all.stagger": Opt(
        "time", 0, "Delay between rounds (round r starts at start + r x stagger).", lo=0, hi=U63
    ),
    "traffic.all_to_all.verb": Opt("str", "WRITE", "RC verb.", choices=VERBS),
    "traffic.all_to_all.priority": Opt("int", 3, "Priority.", lo=0, hi=7),
    "traffic.poisson.hosts": Opt("list[str]", [], "Hosts sending and receiving ([] = every host)."),
    "traffic.poisson.load": Opt("float", 0.5, "Offered load per host link (fraction of its rate).",
                                lo=1e-6, hi=1.0),
    "traffic.poisson.cdf": Opt(
        "str", "web_search", "Flow sizes: 'web_search', 'data_mining' or a CSV path (relative to the file; "
        "a regular file of at most 8 MiB)."
    ),
    "traffic.poisson.duration": Opt("time", "1ms", "Arrivals happen in [start, start + duration).", lo=1,
                                    hi=U63),
    "traffic.poisson.start": Opt("time", 0, "First possible arrival.", lo=0, hi=U63),
    "traffic.poisson.verb": Opt("str", "WRITE", "RC verb.", choices=VERBS),
    "traffic.poisson.priority": Opt("int", 3, "Priority.", lo=0, hi=7),
    "traffic.collective.kind": Opt(
        "str", "ring_allreduce", "Which collective.",
        choices=("ring_allreduce", "halving_doubling_allreduce", "moe_all_to_all", "allreduce", "allgather",
                 "reduce_scatter", "broadcast", "reduce", "alltoall"),
    ),
    "traffic.collective.algorithm": Opt(
        "str", "", "Algorithm of allreduce (ring, tree, halving_doubling, recursive_doubling), allgather / "
        "reduce_scatter (ring), broadcast / reduce (chain), alltoall (direct, pairwise); '' = the first."),
    "traffic.collective.chunk_size": Opt("size", 0, "Pipeline chunk bytes of ring, tree and chain algorithms "
                                         "(0 = one chunk per block).", lo=0, hi=2**31 - 1),
    "traffic.collective.channels": Opt("int", 0, "Channels the buffer is split over (0 = the algorithm's "
                                       "default: 2 for tree, else 1).", lo=0, hi=64),
    "traffic.collective.inflight": Opt("int", 4, "Chunks in flight per connection and channel.", lo=1, hi=64),
    "traffic.collective.root": Opt("int", 0, "broadcast / reduce: the root rank.", lo=0, hi=4095),
    "traffic.collective.hosts": Opt("list[str]", [], "Ranks in order ([] = every host)."),
    "traffic.collective.size": Opt("size", "8MiB", "All-reduce buffer bytes, or bytes per pair (MoE).", lo=1,
                                   hi=2**31 - 1),
    "traffic.collective.rounds": Opt("int", 1, "moe_all_to_all: rounds (each waits for the previous).",
                                     lo=1, hi=1024),
    "traffic.collective.start": Opt("time", 0, "Start time.", lo=0, hi=U63),
    "traffic.collective.priority": Opt("int", 3, "Priority.", lo=0, hi=7),
    "traffic.collective.compute": Opt("str", "constant", "Distribution of each rank's compute before the "
                                      "collective (seeded from simulation.seed; none of a rank's flows "
                                      "starts before its compute ends).",
                                      choices=("constant", "normal", "lognormal", "exponential")),
    "traffic.collective.compute_mean": Opt("time", 0, "Mean compute time (0 = none).", lo=0, hi=2**62),
    "traffic.collective.compute_std": Opt("time", 0, "normal: standard deviation (negative draws are "
                                          "redrawn).", lo=0, hi=2**62),
    "traffic.collective.compute_sigma": Opt("float", 0.0, "lognormal: standard deviation of the log.",
                                            lo=0.0, hi=10.0),
    "traffic.collective.gpus_per_node": Opt(
        "int", 1, "allreduce: GPUs per host; above 1 the all-reduce is hierarchical: intra-node "
        "reduce-scatter and all-gather (no packets: each of their G-1 steps lasts intra_latency + size/G at "
        "intra_rate) around the `algorithm` all-reduce across the hosts.", lo=1, hi=64),
    "traffic.collective.intra_rate": Opt("rate", "2400Gbps", "gpus_per_node > 1: one GPU's intra-node "
                                         "(NVLink-like) bandwidth.", lo=1, hi=U63),
    "traffic.collective.intra_latency": Opt("time", "1us", "gpus_per_node > 1: latency of each intra-node "
                                            "step.", lo=0, hi=2**62),
    # halo exchange
    "traffic.halo.dims": Opt("list[int]", [2, 2], "Process grid: 2 or 3 sizes whose product is the number of "
                             "ranks.", lo=1, hi=4096),
    "traffic.halo.periodic": Opt("bool", True, "Wrap around at the grid's edges (a torus)."),
    "traffic.halo.face_size": Opt("size", "64KiB", "Bytes sent to each neighbour per timestep.", lo=1,
                                  hi=2**31 - 1),
    "traffic.halo.timesteps": Opt("int", 1, "Timesteps.", lo=1, hi=100_000),
    "traffic.halo.compute": Opt("str", "constant", "Distribution of each rank's compute time per timestep "
                                "(seeded from simulation.seed).",
                                choices=("constant", "normal", "lognormal", "exponential")),
    "traffic.halo.compute_mean": Opt("time", 0, "Mean compute time.", lo=0, hi=2**62),
    "traffic.halo.compute_std": Opt("time", 0, "normal: standard deviation (negative draws are redrawn).",
                                    lo=0, hi=2**62),
    "traffic.halo.compute_sigma": Opt("float", 0.0, "lognormal: standard deviation of the log.", lo=0.0,
                                      hi=10.0),
    "traffic.halo.barrier": Opt("str", "dissemination", "Barrier after each exchange.",
                                choices=("dissemination", "tree", "none")),
    "traffic.halo.barrier_size": Opt("size", 8, "Bytes of each barrier message.", lo=1, hi=2**31 - 1),
    "traffic.halo.overlap": Opt("bool", False, "Send the halo while computing instead of after."),
    "traffic.halo.hosts": Opt("list[str]", [], "Ranks in order ([] = every host)."),
    "traffic.halo.start": Opt("time", 0, "Start time.", lo=0, hi=U63),
    "traffic.halo.priority": Opt("int", 3, "Priority.", lo=0, hi=7),
    # outputs
    "outputs.dir": Opt("str", "", "Results folder (relative paths: to the current directory). Not given: "
                       "`results/<file name without .toml>` (a scenario given as text: "
                       "`results/<simulation.name>`, or `results/run`), numbered `results/<name>-2`, `-3`, "
                       "... rather than replacing an earlier run there."),
    "outputs.pcap": Opt("bool", False, "Write capture.pcap of every frame."),
    "outputs.pcap_snaplen": Opt(
        "int", 0, "Bytes of each frame kept in capture.pcap (0 = whole frames; 128 keeps every header and "
        "costs far less).", lo=0, hi=65535
    ),
    "outputs.trace": Opt("bool", False, "Save the event trace (trace.npz): at most 2 million records "
                         "(128 MB); events past that are counted and a warning gives the count."),
    "outputs.formats": Opt(
        "list[str]", ["auto"], "Formats of every table (flows, ports, time series): 'auto' = Parquet when "
        "pyarrow is installed, CSV otherwise; 'csv'; 'parquet' (needs pyarrow).",
        choices=("auto", "csv", "parquet")
    ),
    "outputs.switch_counters": Opt("bool", True, "Write switch_counters.json."),
    "outputs.sample_interval": Opt(
        "time", 0, "Record time series every this much simulated time (0 = off): per-flow bytes delivered "
        "and paced rate, switch egress queues and pause state (timeseries.npz).", lo=0, hi=U63
    ),
    "outputs.ideal_fct": Opt(
        "str", "wire", "Ideal FCT that slowdown (FCT / ideal FCT) divides by: 'wire' = the flow alone on "
        "an idle fabric, its frames' wire bytes (headers, FCS, preamble and gap) at line rate, store and "
        "forward per hop and the round trip, as the HPCC authors' simulator counts it (an unloaded flow: "
        "1.00); 'payload' = the message bytes at line rate plus the round trip of propagation (no headers: "
        "an unloaded flow at MTU 1024 shows about 1.08). The results name the one used.",
        choices=("wire", "payload"),
    ),
    "outputs.plots": Opt("bool", True, "Draw the plots (PNG and SVG) of the results into the folder."),
}

#: array-of-tables sections (their rows are validated against ``name[].*``)
ARRAYS = ("topology.links", "impairments.loss", "impairments.gilbert", "impairments.failures",
          "impairments.slow_links", "impairments.stragglers", "flows")
#: sub-tables that may appear (possibly empty)
TABLES = (
    "simulation",
    "topology",
    "link",
    "switch",
    "switch.ecn",
    "switch.watchdog",
    "switch.credits",
    "congestion_control",
    "congestion_control.dctcp",
    "congestion_control.timely",
    "congestion_control.swift",
    "congestion_control.hpcc",
    "congestion_control.ibcc",
    "congestion_control.nscc",
    "nic",
    "qp",
    "transport",
    "uet",
    "impairments",
    "traffic",
    "traffic.incast",
    "traffic.permutation",
    "traffic.all_to_all",
    "traffic.poisson",
    "traffic.collective",
    "traffic.halo",
    "outputs",
)
