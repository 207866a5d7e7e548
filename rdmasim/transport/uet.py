"""Ultra Ethernet transport options (docs/uet.md): what ``add_flows(..., transport="uet", uet=...)``
and a scenario's ``[uet]`` table take, checked and turned into the C core's PDS parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rdmasim.checks import check_int, check_time_ps
from rdmasim.units import parse_time

#: PSNs one PDC may have in flight (csrc/uet/uet.h RS_PDS_SLOTS)
PDS_SLOTS = 1024
#: SES standard header's payload length is 14 bits; the packet pool holds at most 4096 bytes
MAX_MTU = 4096
#: the largest target buffer (bytes): the SES buffer offset is 64 bits
MAX_TARGET = (1 << 63) - 1
#: PDS delivery modes (csrc/include/rdmasim/uet.h enum rs_uet_mode; docs/uet.md)
DELIVERY_MODES = {"rud": 0, "rod": 1, "rudi": 2, "uud": 3}
#: load balancing by entropy (csrc/uet/lb.h): a fresh random entropy per packet, or REPS
LOAD_BALANCERS = {"oblivious": 0, "reps": 1}
#: congestion control of a PDC (rdmasim/cc.h kinds): a fixed window, NSCC's window (csrc/cc/nscc.c),
#: or receiver credit (RCCC: csrc/uet/rccc.c, rccc_pds.c; csrc/include/rdmasim/uet.h RS_UET_CC_RCCC)
CONGESTION_CONTROLS = {"none": 0, "nscc": 7, "rccc": 128}
#: Ethernet + IPv4 + UDP + PDS request + SES standard header; FCS, preamble and gap
UET_DATA_OVERHEAD = 14 + 20 + 8 + 12 + 44 + 4 + 20
UET_ACK_WIRE = 14 + 20 + 8 + 32 + 4 + 20

#: options of the ``uet`` mapping, with their defaults
DEFAULTS: dict[str, Any] = {
    "mode": "rud",           # delivery mode: "rud", "rod" (ordered), "rudi" (idempotent), "uud" (unreliable)
    "lb": "oblivious",       # per-packet entropy: "oblivious" (random per packet) or "reps" (recycled)
    "cc": "none",            # "none" (a fixed window), "nscc" (NSCC's window, defaults from its base RTT) or
                             # "rccc" (receiver credit: the target's pacer grants; `window` caps the credit)
    "window": None,          # bytes in flight; None: 2 x the bandwidth-delay product of the first link
    "nscc_base_rtt": None,   # NSCC's base RTT (a time); None: a leaf-spine round trip (base_rtt_ps)
    "reorder_packets": 64,   # SACK-gap threshold: a PSN is lost when one this many later was acknowledged
    "ack_every": 4,          # the target acknowledges at least every this many packets
    "rto": "100us",          # retransmit timeout before the first RTT sample (or always: rto_estimate false)
    "rto_estimate": False,   # true: the timeout follows the RTT (smoothed RTT + 4 x its deviation, backoff)
    "rto_min": "100us",      # bounds of the estimated timeout (the floor: the former fixed timeout)
    "rto_max": "10ms",
    "trim": False,           # data packets may be trimmed by switches (needs trimming switches)
    "place_bytes": False,    # packets carry bytes (a pattern per flow) that land in its target buffer
    "target_buffer": None,   # bytes of each flow's target buffer (None: as long as the flow); a message
                             # beyond it ends in a remote access error (SES return code BAD_ADDR)
    "max_pdcs": None,        # PDCs a target holds at once (None: up to its 65535 ids); a SYN beyond them is
                             # NACKed NO_PDC_AVAIL (sent again at the timeout) and idle PDCs asked to close
    "target_access": "rw",   # what the target buffer grants remotely: "rw", "read" (a WRITE to it is an
                             # OP_VIOLATION) or "write" (a READ of it is)
    "idle_close": 0,         # target: a PDC idle this long (a time) with its message whole is asked to
                             # close (REQ_CLOSE); 0 = never (only under max_pdcs pressure)
}
#: the longest idle_close (ps): 1 s
MAX_IDLE_CLOSE_PS = 1_000_000_000_000

#: target_access -> rs_uet_params.target_access
TARGET_ACCESS = {"rw": 0, "read": 1, "write": 2}


def uet_params(sim: Any, mtu: int, options: Mapping[str, Any] | None,
               where: str = "add_flows: uet") -> dict[str, Any]:
    """The C core's PDS parameters for ``options`` (a mapping of :data:`DEFAULTS` keys); every value
    is checked and a refusal names ``where``, the key, the value and what is allowed."""
    opts = dict(DEFAULTS)
    if options is not None:
        if not isinstance(options, Mapping):
            raise TypeError(f"{where}: must be a mapping of UET options, not {type(options).__name__}")
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"{where}: unknown option(s) {', '.join(map(repr, unknown))}; "
                             f"the options are {', '.join(DEFAULTS)}")
        opts.update(options)
    if opts["mode"] not in DELIVERY_MODES:
        raise ValueError(f"{where}.mode = {opts['mode']!r}: allowed {sorted(DELIVERY_MODES)}")
    if opts["lb"] not in LOAD_BALANCERS:
        raise ValueError(f"{where}.lb = {opts['lb']!r}: allowed {sorted(LOAD_BALANCERS)}")
    if opts["target_access"] not in TARGET_ACCESS:
        raise ValueError(f"{where}.target_access = {opts['target_access']!r}: "
                         f"allowed {sorted(TARGET_ACCESS)}")
    if opts["cc"] not in CONGESTION_CONTROLS:
        raise ValueError(f"{where}.cc = {opts['cc']!r}: allowed {sorted(CONGESTION_CONTROLS)}")
    for key in ("trim", "place_bytes"):
        if not isinstance(opts[key], bool):
            raise TypeError(f"{where}.{key} = {opts[key]!r}: must be true or false")
    if opts["cc"] == "rccc" and opts["mode"] not in ("rud", "rod"):
        raise ValueError(f"{where}.cc = 'rccc' with mode = {opts['mode']!r}: receiver credit rides on "
                         "RUD/ROD CC requests, so it needs mode 'rud' or 'rod'")
    if opts["trim"] and opts["mode"] not in ("rud", "rod"):
        raise ValueError(f"{where}.trim = true with mode = {opts['mode']!r}: trimming (a NACK asking for the "
                         "packet again) needs mode 'rud' or 'rod'")
    if not isinstance(opts["rto_estimate"], bool):
        raise TypeError(f"{where}.rto_estimate = {opts['rto_estimate']!r}: must be true or false")
    rto_min = check_time_ps(f"{where}.rto_min", parse_time(opts["rto_min"]), 1)
    rto_max = check_time_ps(f"{where}.rto_max", parse_time(opts["rto_max"]), 1)
    if rto_max < rto_min:
        raise ValueError(f"{where}.rto_max = {opts['rto_max']!r} is below rto_min = {opts['rto_min']!r}: "
                         "allowed rto_min <= rto_max")
    mtu = check_int(f"{where}: mtu", mtu, 64, MAX_MTU)
    window = opts["window"]
    if window is None:
        window = default_window(sim, mtu)
    window = check_int(f"{where}.window (bytes)", window, mtu, PDS_SLOTS * mtu)
    return {
        "mtu": mtu,
        "window_bytes": window,
        "reorder_pkts": check_int(f"{where}.reorder_packets", opts["reorder_packets"], 1, PDS_SLOTS),
        "ack_every": check_int(f"{where}.ack_every", opts["ack_every"], 1, PDS_SLOTS),
        "rto_ps": check_time_ps(f"{where}.rto", parse_time(opts["rto"]), 1),
        "rto_fixed": int(not opts["rto_estimate"]),
        "rto_min_ps": rto_min,
        "rto_max_ps": rto_max,
        "mode": DELIVERY_MODES[opts["mode"]],
        "trim_ok": int(opts["trim"]),
        "place": int(opts["place_bytes"]),
        "lb": LOAD_BALANCERS[opts["lb"]],
        "cc": CONGESTION_CONTROLS[opts["cc"]],
        "cc_base_rtt_ps": _nscc_base_rtt(sim, mtu, opts["nscc_base_rtt"], where),
        "target_bytes": (0 if opts["target_buffer"] is None else
                         check_int(f"{where}.target_buffer (bytes)", opts["target_buffer"], 1, MAX_TARGET)),
        "target_access": TARGET_ACCESS[opts["target_access"]],
        "max_pdcs": (0 if opts["max_pdcs"] is None else
                     check_int(f"{where}.max_pdcs", opts["max_pdcs"], 1, 65535)),
        "idle_close_ps": _idle_close(opts["idle_close"], where),
    }


def _idle_close(value: Any, where: str) -> int:
    """``idle_close`` in ps (0: off); a refusal names the key, the value and the range."""
    try:
        ps = 0 if value is None else parse_time(value)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}.idle_close = {value!r}: {e}") from None
    if not 0 <= ps <= MAX_IDLE_CLOSE_PS:
        raise ValueError(f"{where}.idle_close = {value!r}: allowed 0 (off) or 1 ps .. 1 s")
    return ps


def _nscc_base_rtt(sim: Any, mtu: int, value: Any, where: str) -> int:
    """``nscc_base_rtt`` in ps (default :func:`base_rtt_ps`); a refusal names the key."""
    if value is None:
        return base_rtt_ps(sim, mtu)
    try:
        ps = parse_time(value)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}.nscc_base_rtt = {value!r}: {e}") from None
    if not 0 < ps <= 1_000_000_000_000:
        raise ValueError(f"{where}.nscc_base_rtt = {value!r}: allowed 1 ps .. 1 s")
    return ps


def base_rtt_ps(sim: Any, mtu: int) -> int:
    """The round trip NSCC starts from: four hops of the first link each way, a data packet's
    serialisation at each of four hops and the ACK's (12 us without a link, NSCC's reference)."""
    link = next(iter(sim.links), None)
    if link is None:
        return 12_000_000
    ser = (mtu + UET_DATA_OVERHEAD) * 8 / link.rate_bps
    return int((8 * link.delay_ps * 1e-12 + 4 * ser + UET_ACK_WIRE * 8 / link.rate_bps) * 1e12)


def default_window(sim: Any, mtu: int) -> int:
    """Twice the bandwidth-delay product of a path over the first link's rate with four hops of its
    delay each way (a leaf-spine round trip), in whole packets, at least 8 packets."""
    link = next(iter(sim.links), None)
    if link is None:
        return min(64, PDS_SLOTS) * mtu
    ser = (mtu + UET_DATA_OVERHEAD) * 8 / link.rate_bps
    rtt = 8 * link.delay_ps * 1e-12 + 4 * ser + UET_ACK_WIRE * 8 / link.rate_bps
    pkts = int(2 * rtt / ser) + 1
    return max(8, min(pkts, PDS_SLOTS)) * mtu


def endpoint_stats(sim: Any, host: Any) -> dict[str, int]:
    """A host's UET endpoint counters (docs/uet.md, PDCs): ``syn_sent`` (requests sent with SYN),
    ``pdcs_created`` (target PDCs created from a SYN), ``closes_sent`` (CLOSE control packets, resends
    included), ``pdcs_closed`` (target PDCs released on a CLOSE), ``pdcs_released`` (initiator PDCs
    released on the CLOSE's ACK), ``close_gave_up`` (released after 16 unanswered CLOSEs),
    ``pdcs_live`` (PDC ids in use now) and ``rx_unknown`` (frames for a PDC the host does not know).
    ``host``: a Host, its name or its index."""
    from rdmasim import _core

    if isinstance(host, str):
        if host not in sim.hosts:
            raise ValueError(f"uet.endpoint_stats: host {host!r} is not a host of this simulation")
        host = sim.hosts[host]
    idx = host if isinstance(host, int) and not isinstance(host, bool) else getattr(host, "index", host)
    return _core.uet_host_stats(sim._core, idx)
