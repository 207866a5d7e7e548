"""The congestion control of an HPCC ns-3 config (``CC_MODE`` and the keys its algorithm reads in
``rdma-hw.cc``) as rdmasim's ``[congestion_control]`` and its parameter table: mapped keys, notes
where a mapping is not one to one, the keys rdmasim cannot express (named), and the keys of other
algorithms (listed as not used)."""

from __future__ import annotations

from typing import Any, Protocol

from rdmasim.hpcc.keys import Keys, rate_text, time_text
from rdmasim.hpcc.paths import PathFigures

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


class Said(Protocol):
    """Where the mapping's notes go (:class:`rdmasim.hpcc.translate.Translation`)."""

    notes: list[str]
    unsupported: list[str]
    unused: list[str]


def map_cc(
    k: Keys, cc_mode: int, figures: PathFigures, ack_pkts: int, tr: Said
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``[congestion_control]`` and ``[congestion_control.<algorithm>]`` of a config whose
    ``CC_MODE`` is one of :data:`CC_MODES`; ``ack_pkts`` is the ACK cadence in packets."""
    say, unsupported = tr.notes.append, tr.unsupported.append
    cfg = k.cfg
    algo = CC_MODES[cc_mode]
    cc: dict[str, Any] = {"algorithm": algo}
    params: dict[str, Any] = {}
    has_win = k.int("HAS_WIN", 1, 0, 1)
    global_t = k.int("GLOBAL_T", 1, 0, 1)
    var_win = k.int("VAR_WIN", 0, 0, 1)
    fast_react = k.int("FAST_REACT", 1, 0, 1)
    if not global_t and (algo in ("hpcc", "dctcp") or has_win):
        unsupported(
            f"GLOBAL_T 0: ns-3 gives each host pair its own base RTT as T (and BDP as window); rdmasim "
            f"uses one for every flow: the largest, {time_text(figures.max_rtt_ps)}"
        )
    min_rate = k.rate("MIN_RATE", "100Mb/s")
    cc_keys = CC_KEYS[cc_mode]
    if algo == "hpcc":
        cc["notification_point"] = False
        params = {
            "eta": k.float("U_TARGET", 0.95, 1e-9, 1.0),
            "max_stage": k.int("MI_THRESH", 5, 0, (1 << 32) - 1),
            "fast_react": bool(fast_react),
            "base_rtt": time_text(figures.max_rtt_ps) if figures.max_rtt_ps else "4us",
            "ai_rate": rate_text(k.rate("RATE_AI", None, "CC_MODE 3 (HPCC)")),
            "min_rate": rate_text(min_rate),
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
            "ai_rate": rate_text(k.rate("DCTCP_RATE_AI", "1000Mb/s")),
            "min_rate": rate_text(min_rate),
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
            "ai_rate": rate_text(ai),
            "hai_factor": max(1.0, hai / ai),
            "hai_after": 5,
            "min_rate": rate_text(min_rate),
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
            "alpha_timer": time_text(
                int(k.decimal("ALPHA_RESUME_INTERVAL", "55", "microseconds >= 0") * 10**6)
            ),
            "alpha_update_on_timer": True,
            "rate_reduce_period": time_text(
                int(k.decimal("RATE_DECREASE_INTERVAL", "4", "microseconds >= 0") * 10**6)
            ),
            "rate_timer": time_text(int(k.decimal("RP_TIMER", "1500", "microseconds >= 0") * 10**6)),
            "byte_counter": 0,
            "fast_recovery_steps": k.int("FAST_RECOVERY_TIMES", 5, 0, 1 << 31),
            "ai_rate": rate_text(k.rate("RATE_AI", None, "CC_MODE 1 (DCQCN)")),
            "hai_rate": rate_text(k.rate("RATE_HAI", None, "CC_MODE 1 (DCQCN)")),
            "min_rate": rate_text(min_rate),
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

    return cc, params
