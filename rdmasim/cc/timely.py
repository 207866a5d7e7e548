"""TIMELY RTT-gradient rate control: parameters (csrc/cc/timely.c has the rules).

Once per completed segment the sender takes the RTT sample of the ACK that completes it and
updates its rate from the RTT's gradient (an EWMA of the differences between successive samples,
normalised by ``min_rtt``): additive increase ``ai`` below ``t_low`` or when the gradient is not
positive (``hai_factor`` x ``ai`` after ``hai_after`` such updates in a row), a decrease by
``beta`` x (1 - ``t_high``/RTT) above ``t_high``, and by ``beta`` x gradient when the gradient is
positive (Mittal et al., SIGCOMM 2015, Algorithm 1). The defaults are the paper's values, which the
HPCC authors' ns-3 simulator (alibaba-edu/High-Precision-Congestion-Control, ``rdma-hw.cc``) also
uses; they were chosen for 10 Gb/s NICs and RTTs of tens of microseconds, so
:meth:`TimelyParams.for_path` scales them to a path (the settings rdmasim validates). Times take
units as strings (``"50us"``), rates ``"10Mbps"``, sizes bytes or ``"16KB"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from rdmasim.cc._param_checks import ParamChecks, is_zero
from rdmasim.units import parse_rate, parse_size, parse_time


@dataclass(frozen=True)
class TimelyParams:
    """TIMELY reaction at the sender NIC (receivers only echo send stamps in their ACKs)."""

    alpha: float = 0.875            # EWMA weight of a new RTT difference (ns-3 TimelyAlpha)
    beta: float = 0.8               # multiplicative decrease (paper; ns-3 TimelyBeta)
    t_low: str | int = "50us"       # below: additive increase (paper; ns-3 TimelyTLow)
    t_high: str | int = "500us"     # above: decrease towards T_high (paper; ns-3 TimelyTHigh)
    min_rtt: str | int = "20us"     # gradient normalisation (paper; ns-3 TimelyMinRtt)
    ai_rate: str | int = "10Mbps"   # additive step delta (paper, 10 Gb/s NICs)
    hai_after: int = 5              # HAI after N consecutive gradient <= 0 updates (paper: N = 5)
    hai_factor: float = 5.0         # HAI step = N x delta (paper)
    min_rate: str | int = "1Gbps"   # rate floor (ns-3 run.py MIN_RATE; the paper names none)
    max_rate: str | int = 0         # 0 = line rate
    initial_rate: str | int = 0     # 0 = start at the maximum rate (ns-3)
    segment: str | int = "16KB"     # one update per segment acknowledged (paper: 16-64 KB); 0 = per window

    def __post_init__(self) -> None:
        checks = ParamChecks("TIMELY", self)
        check, number, parses = checks.check, checks.number, checks.parses

        check("alpha", number("alpha") and 0 < self.alpha <= 1, "0 < alpha <= 1")
        check("beta", number("beta") and 0 < self.beta <= 1, "0 < beta <= 1")
        check("hai_after", isinstance(self.hai_after, int) and not isinstance(self.hai_after, bool)
              and self.hai_after >= 1, "an integer >= 1")
        check("hai_factor", number("hai_factor") and self.hai_factor >= 1, ">= 1")
        for name in ("t_low", "t_high", "min_rtt"):
            check(name, parses(name, parse_time, False), "a positive time, e.g. '50us'")
        check("t_high", parse_time(self.t_high) > parse_time(self.t_low), f"a time > t_low ({self.t_low!r})")
        check("ai_rate", parses("ai_rate", parse_rate, False), "a positive rate, e.g. '10Mbps'")
        check("min_rate", parses("min_rate", parse_rate, True), "0 or a positive rate, e.g. '1Gbps'")
        check("max_rate", parses("max_rate", parse_rate, True), "0 (line rate) or a positive rate")
        check("initial_rate", parses("initial_rate", parse_rate, True),
              "0 (the maximum rate) or a positive rate")
        check("segment", parses("segment", parse_size, True),
              "0 (one update per window) or a size, e.g. '16KB'")

    @classmethod
    def paper(cls, **overrides: Any) -> TimelyParams:
        """The TIMELY paper's values (10 Gb/s NICs), with ``overrides``."""
        return cls(**overrides)

    @classmethod
    def for_path(cls, line_rate: str | int, rtt: str | int, **overrides: Any) -> TimelyParams:
        """Settings for a path of ``line_rate`` and base round-trip time ``rtt``, then ``overrides``.

        ``t_low`` and ``t_high`` keep the paper's ratios to its 20 us minimum RTT (2.5 x and
        25 x ``rtt``); ``ai_rate`` = line rate / 1000 (10 Mb/s at 10 Gb/s, the ns-3 simulator's
        scaling); ``min_rate`` = line / 100. Two choices differ from the paper's: one update per
        window of data (``segment=0``, as the ns-3 simulator), so every flow updates equally often
        whatever its rate; and ``min_rtt`` = 4 x ``t_low``: a gradient decrease removes about
        beta x RTT / min_rtt of the rate excess per update, so it stays below the excess while the
        RTT is under 5 x ``t_low`` (with the paper's ratio it removes about twice the excess and the
        queue swings empty: docs/cc-timely.md)."""
        rate, rtt_ps = parse_rate(line_rate), parse_time(rtt)
        if rate <= 0 or rtt_ps <= 0:
            raise ValueError(f"for_path needs a positive line_rate and rtt, got {line_rate!r}, {rtt!r}")
        t_low = round(2.5 * rtt_ps)
        kw: dict[str, Any] = dict(t_low=t_low, t_high=25 * rtt_ps, min_rtt=4 * t_low, ai_rate=rate // 1000,
                                  min_rate=rate // 100, segment=0)
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def from_scenario(cls, values: dict[str, Any]) -> TimelyParams:
        """From a scenario's parsed ``congestion_control.timely.*`` values (times in ps, rates in
        b/s, sizes in bytes)."""
        return cls(**{k: values[f"congestion_control.timely.{k}"] for k in cls.field_names()})

    def to_c(self) -> dict[str, Any]:
        """The fields of the C struct rs_timely_params (ps, bits/s, bytes)."""
        def rate(v: str | int) -> float:
            return 0.0 if is_zero(v) else float(parse_rate(v))

        return dict(
            alpha=float(self.alpha), beta=float(self.beta), t_low_ps=parse_time(self.t_low),
            t_high_ps=parse_time(self.t_high), min_rtt_ps=parse_time(self.min_rtt), ai_bps=rate(self.ai_rate),
            hai_after=int(self.hai_after), hai_factor=float(self.hai_factor),
            min_rate_bps=rate(self.min_rate),
            max_rate_bps=rate(self.max_rate), initial_rate_bps=rate(self.initial_rate),
            segment_bytes=0 if is_zero(self.segment) else parse_size(self.segment),
        )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]
