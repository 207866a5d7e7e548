"""Congestion-control parameters: DCQCN with the paper's and NVIDIA's documented defaults.

Every parameter can be set. Times are written like ``"55us"``, rates like ``"40Mbps"``.
Sources and the values' provenance are in protocol.md §8.4; where a value is our reading of a
vendor knob it says so below.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from rdmasim.cc._param_checks import ParamChecks, is_zero
from rdmasim.units import parse_rate, parse_time

#: the parameters the C struct holds as integers: a float or a bool is refused, not truncated
_DCQCN_INTEGERS = {"byte_counter": (2**64 - 1, "an integer >= 0 bytes (0 = off)"),
                   "fast_recovery_steps": (2**31, "an integer >= 0 (at most 2**31)")}
_DCQCN_FLAGS = ("alpha_update_on_timer", "clamp_tgt_rate", "clamp_tgt_rate_after_time_inc")
#: mlxconfig names DcqcnParams.nvidia() reads as integers (flags: 0 or 1)
_MLX_INTEGERS = ("rpg_byte_reset", "rpg_threshold", "rpg_gd")
_MLX_FLAGS = ("clamp_tgt_rate", "clamp_tgt_rate_after_time_inc")


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN reaction point (sender NIC) and notification point (receiver NIC) settings."""

    g: float = 1 / 256
    initial_alpha: float = 1.0
    alpha_timer: str | int = "55us"          # K
    alpha_update_on_timer: bool = False       # False: paper; True: NVIDIA firmware model
    rate_timer: str | int = "55us"            # T
    byte_counter: int = 10_000_000            # B bytes, 0 = off
    fast_recovery_steps: int = 5              # F
    ai_rate: str | int = "40Mbps"             # R_AI
    hai_rate: str | int = "400Mbps"           # R_HAI (10 x R_AI: not verified against the paper)
    min_rate: str | int = "1Mbps"             # R_min
    max_rate: str | int = 0                   # 0 = line rate
    decrease_scale: float = 0.5               # Rc <- Rc (1 - alpha * scale)
    min_dec_factor: float = 0.0               # a cut keeps at least this fraction of Rc
    rate_reduce_period: str | int = 0         # 0: decrease on every CNP
    rate_on_first_cnp: float = 0.0            # 0: keep
    clamp_tgt_rate: bool = True               # Rt <- Rc at every decrease (paper)
    # with clamp_tgt_rate off, Rt <- Rc only at a decrease after an increase since the previous
    # one: a byte-counter increase, or with this flag any increase, the rate timer's included
    clamp_tgt_rate_after_time_inc: bool = False
    cnp_interval: str | int = "50us"          # NP: at most one CNP per QP per interval

    def __post_init__(self) -> None:
        checks = ParamChecks("DCQCN", self)
        check = checks.check
        for name, (hi, allowed) in _DCQCN_INTEGERS.items():
            check(name, checks.integer(name) and 0 <= getattr(self, name) <= hi, allowed)
        for name in _DCQCN_FLAGS:
            v = getattr(self, name)
            check(name, isinstance(v, bool) or (checks.integer(name) and v in (0, 1)),
                  "true or false (or 1 / 0)")
        check("g", 0 < self.g <= 1, "0 < g <= 1")
        check("initial_alpha", 0 <= self.initial_alpha <= 1, "0..1")
        check("decrease_scale", 0 < self.decrease_scale <= 1, "0 < scale <= 1")
        check("min_dec_factor", 0 <= self.min_dec_factor < 1, "0 <= f < 1")
        check("rate_on_first_cnp", 0 <= self.rate_on_first_cnp <= 1, "0 (keep) or a fraction <= 1")
        for name in ("alpha_timer", "rate_timer"):
            check(name, parse_time(getattr(self, name)) > 0, "a positive time, e.g. '55us'")
        parse_time(self.rate_reduce_period)
        parse_time(self.cnp_interval)
        for name in ("ai_rate", "hai_rate", "min_rate"):
            parse_rate(getattr(self, name))
        if not is_zero(self.max_rate):
            parse_rate(self.max_rate)

    @classmethod
    def paper(cls, **overrides: Any) -> DcqcnParams:
        """The DCQCN paper's (SIGCOMM 2015) values as protocol.md §8.4 lists them."""
        return replace(cls(), **overrides)

    @classmethod
    def nvidia(cls, **mlxconfig: Any) -> DcqcnParams:
        """NVIDIA ConnectX firmware defaults, overridable by mlxconfig names (lower case):
        rpg_time_reset (us), rpg_byte_reset (B), rpg_threshold, rpg_ai_rate (Mb/s), rpg_hai_rate
        (Mb/s), rpg_gd, rpg_min_dec_fac (%), rpg_min_rate (Mb/s), rpg_max_rate (Mb/s, 0 = line),
        rate_to_set_on_first_cnp (%), dce_tcp_g, dce_tcp_rtt (us), initial_alpha_value,
        rate_reduce_monitor_period (us), min_time_between_cnps (us), clamp_tgt_rate,
        clamp_tgt_rate_after_time_inc."""
        m: dict[str, Any] = dict(
            rpg_time_reset=300, rpg_byte_reset=32767, rpg_threshold=1, rpg_ai_rate=5, rpg_hai_rate=50,
            rpg_gd=11, rpg_min_dec_fac=50, rpg_min_rate=1, rpg_max_rate=0, rate_to_set_on_first_cnp=0,
            dce_tcp_g=1019, dce_tcp_rtt=1, initial_alpha_value=1023, rate_reduce_monitor_period=4,
            min_time_between_cnps=4, clamp_tgt_rate=0, clamp_tgt_rate_after_time_inc=1,
        )
        unknown = set(mlxconfig) - set(m)
        if unknown:
            raise ValueError(f"unknown mlxconfig DCQCN name(s) {sorted(unknown)}; known: {sorted(m)}")
        m.update(mlxconfig)
        for name in _MLX_INTEGERS + _MLX_FLAGS:
            v = m[name]
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
            if name in _MLX_FLAGS:
                ok = isinstance(v, bool) or (ok and v in (0, 1))
            if not ok:
                allowed = "0 or 1" if name in _MLX_FLAGS else "an integer >= 0"
                raise ValueError(f"mlxconfig DCQCN name {name}={v!r}: allowed {allowed}")
        if not 0 <= m["dce_tcp_g"] < 1024:
            raise ValueError(f"dce_tcp_g={m['dce_tcp_g']}: allowed 0..1023")
        return cls(
            # our reading of DOC-2790: alpha <- (1-g) alpha with g = (1024-G)/1024
            g=(1024 - m["dce_tcp_g"]) / 1024,
            initial_alpha=m["initial_alpha_value"] / 1024,
            alpha_timer=f"{m['dce_tcp_rtt']}us",
            alpha_update_on_timer=True,
            rate_timer=f"{m['rpg_time_reset']}us",
            byte_counter=int(m["rpg_byte_reset"]),
            fast_recovery_steps=int(m["rpg_threshold"]),
            ai_rate=f"{m['rpg_ai_rate']}Mbps",
            hai_rate=f"{m['rpg_hai_rate']}Mbps",
            min_rate=f"{m['rpg_min_rate']}Mbps",
            max_rate=f"{m['rpg_max_rate']}Mbps" if m["rpg_max_rate"] else 0,
            decrease_scale=2.0 ** (10 - int(m["rpg_gd"])),  # alpha is a 10-bit fraction: gd=11 -> alpha/2
            min_dec_factor=m["rpg_min_dec_fac"] / 100,       # our reading: a cut keeps >= this share
            rate_reduce_period=f"{m['rate_reduce_monitor_period']}us",
            rate_on_first_cnp=m["rate_to_set_on_first_cnp"] / 100,
            clamp_tgt_rate=bool(m["clamp_tgt_rate"]),
            clamp_tgt_rate_after_time_inc=bool(m["clamp_tgt_rate_after_time_inc"]),
            cnp_interval=f"{m['min_time_between_cnps']}us",
        )

    def to_c(self) -> dict[str, Any]:
        """The reaction-point fields of the C struct rs_dcqcn_params (ps, bits/s)."""
        max_rate = 0 if is_zero(self.max_rate) else parse_rate(self.max_rate)
        return dict(
            g=float(self.g), initial_alpha=float(self.initial_alpha),
            alpha_timer_ps=parse_time(self.alpha_timer),
            alpha_update_on_timer=int(self.alpha_update_on_timer),
            rate_timer_ps=parse_time(self.rate_timer), byte_counter_bytes=int(self.byte_counter),
            fast_recovery_steps=int(self.fast_recovery_steps), ai_bps=float(parse_rate(self.ai_rate)),
            hai_bps=float(parse_rate(self.hai_rate)), min_rate_bps=float(parse_rate(self.min_rate)),
            max_rate_bps=float(max_rate), decrease_scale=float(self.decrease_scale),
            min_dec_factor=float(self.min_dec_factor),
            rate_reduce_period_ps=parse_time(self.rate_reduce_period),
            rate_on_first_cnp=float(self.rate_on_first_cnp), clamp_tgt_rate=int(self.clamp_tgt_rate),
            clamp_tgt_rate_after_time_inc=int(self.clamp_tgt_rate_after_time_inc),
        )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]


# ---- algorithms by name ----

@dataclass(frozen=True)
class Algorithm:
    """One congestion-control algorithm as the Python API selects it: its name (the C registry's,
    csrc/cc/registry.c), its frozen parameters class (with ``to_c()`` giving the C struct's
    fields) and whether its reaction point uses CNPs (then receivers send them by default)."""

    name: str
    params_class: type
    uses_cnp: bool


def _algorithms() -> dict[str, Algorithm]:
    from rdmasim.cc.dctcp import DctcpParams
    from rdmasim.cc.hpcc import HpccParams
    from rdmasim.cc.ibcc import IbccParams
    from rdmasim.cc.nscc import NsccParams
    from rdmasim.cc.swift import SwiftParams
    from rdmasim.cc.timely import TimelyParams

    return {
        "dcqcn": Algorithm("dcqcn", DcqcnParams, True),
        "dctcp": Algorithm("dctcp", DctcpParams, False),
        "timely": Algorithm("timely", TimelyParams, False),
        "swift": Algorithm("swift", SwiftParams, False),
        "hpcc": Algorithm("hpcc", HpccParams, False),
        "ibcc": Algorithm("ibcc", IbccParams, True),
        "nscc": Algorithm("nscc", NsccParams, False),
    }


#: name -> Algorithm, for every algorithm with a Python parameters class
ALGORITHMS: dict[str, Algorithm] = _algorithms()

#: every name ``Host.set_congestion_control`` and ``congestion_control.algorithm`` take
ALGORITHM_NAMES: tuple[str, ...] = ("none", *ALGORITHMS)


def algorithm(name: str) -> Algorithm:
    """The algorithm called ``name``; ValueError naming the known ones."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        from rdmasim.cc.plugin import plugin_names

        raise ValueError(f"congestion control {name!r}: choose one of {list(ALGORITHM_NAMES)} or a "
                         f"registered plug-in {list(plugin_names())}") from None


def params_class(name: str) -> type:
    """The parameters class of algorithm ``name`` (``DcqcnParams``, ``DctcpParams``, ...)."""
    return algorithm(name).params_class


def default_params(name: str) -> Any:
    """Algorithm ``name``'s parameters with their defaults (DCQCN: the paper's)."""
    cls = params_class(name)
    return cls.paper() if hasattr(cls, "paper") else cls()


# C plug-ins compiled at run time (rdmasim.cc_plugin), re-exported as rdmasim.cc.register_plugin
from rdmasim.cc.plugin import (  # noqa: E402, F401
    PluginError,
    get_plugin,
    plugin_names,
    register_plugin,
    unregister_plugin,
)

