"""HPCC window control from in-band network telemetry: parameters (csrc/cc/hpcc.c has the rules).

Every request collects one INT record per switch egress (time, bytes transmitted, queue length,
line rate) and every ACK brings them back. Per ACK the sender computes each hop's normalised
inflight bytes ``u = min(qlen, qlen') / (B T) + txRate / B`` against that hop's previous record,
takes the largest, smooths it over one base RTT ``T`` and sets its window
``W = W_ref / (U / eta) + W_AI`` when ``U >= eta`` (or after ``max_stage`` additive steps), else
``W_ref + W_AI``; the QP is paced at ``W / T``. ``W_ref`` moves once per RTT, the ACKs in between
react from it (Li et al., SIGCOMM 2019, Algorithm 1, as the authors' ns-3 simulator
alibaba-edu/High-Precision-Congestion-Control ``rdma-hw.cc`` runs it). ``ack_every`` > 1 asks
for an ACK on every n-th packet only (and whenever the window fills), for fewer ACK frames and
events. ``base_rtt`` depends on
the fabric: :meth:`HpccParams.for_path` takes it from a path. Times take units as strings
(``"4us"``), rates ``"40Mbps"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from rdmasim.cc._param_checks import ParamChecks, is_zero
from rdmasim.units import parse_rate, parse_time


@dataclass(frozen=True)
class HpccParams:
    """HPCC reaction at the sender NIC (switches write INT, receivers echo it in their ACKs)."""

    eta: float = 0.95                # target utilisation (paper; ns-3 TargetUtil)
    max_stage: int = 5               # additive-only updates before a multiplicative (paper; ns-3 MiThresh)
    fast_react: bool = True          # react on every ACK between reference updates (ns-3 FastReact)
    base_rtt: str | int = "4us"      # T (rdmasim default: fabric-dependent; see for_path)
    ai_rate: str | int = 0           # W_AI = ai_rate x T; 0 = line rate / 2500 (ns-3 run.py)
    min_rate: str | int = "1Gbps"    # W >= min_rate x T (ns-3 run.py MIN_RATE)
    max_rate: str | int = 0          # W <= max_rate x T; 0 = line rate
    ack_every: int = 1               # ACK every n-th packet, and when the window fills (ns-3: 1)

    def __post_init__(self) -> None:
        checks = ParamChecks("HPCC", self)
        check, number, parses = checks.check, checks.number, checks.parses

        check("eta", number("eta") and 0 < self.eta <= 1, "0 < eta <= 1")
        check("max_stage", isinstance(self.max_stage, int) and not isinstance(self.max_stage, bool)
              and 0 <= self.max_stage < 2**32, "an integer >= 0")
        check("fast_react", isinstance(self.fast_react, bool), "true or false")
        check("ack_every", checks.integer("ack_every") and 1 <= self.ack_every < 2**32,
              "an integer >= 1 (at most 2**32 - 1)")
        check("base_rtt", parses("base_rtt", parse_time, False), "a positive time, e.g. '4us'")
        check("ai_rate", parses("ai_rate", parse_rate, True), "0 (line rate / 2500) or a positive rate")
        check("min_rate", parses("min_rate", parse_rate, True), "0 or a positive rate, e.g. '1Gbps'")
        check("max_rate", parses("max_rate", parse_rate, True), "0 (line rate) or a positive rate")
        if not is_zero(self.max_rate) and not is_zero(self.min_rate):
            check("min_rate", parse_rate(self.min_rate) <= parse_rate(self.max_rate),
                  f"a rate <= max_rate ({self.max_rate!r})")

    @classmethod
    def paper(cls, **overrides: Any) -> HpccParams:
        """The defaults (the paper's eta and max_stage, the ns-3 simulator's steps), with ``overrides``."""
        return cls(**overrides)

    @classmethod
    def for_path(cls, line_rate: str | int, rtt: str | int, **overrides: Any) -> HpccParams:
        """Settings for a path of ``line_rate`` and base round-trip time ``rtt`` (the largest of the
        fabric's paths, as ns-3's GLOBAL_T): ``base_rtt`` = ``rtt``, ``ai_rate`` = line / 2500
        (ns-3's 10 Mb/s per 25 Gb/s), ``min_rate`` = line / 100 (1 Gb/s at 100 Gb/s, ns-3's
        MIN_RATE); then ``overrides``."""
        rate, rtt_ps = parse_rate(line_rate), parse_time(rtt)
        if rate <= 0 or rtt_ps <= 0:
            raise ValueError(f"for_path needs a positive line_rate and rtt, got {line_rate!r}, {rtt!r}")
        kw: dict[str, Any] = dict(base_rtt=rtt_ps, ai_rate=rate // 2500, min_rate=rate // 100)
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def from_scenario(cls, values: dict[str, Any]) -> HpccParams:
        """From a scenario's parsed ``congestion_control.hpcc.*`` values (times in ps, rates as
        written)."""
        return cls(**{k: values[f"congestion_control.hpcc.{k}"] for k in cls.field_names()})

    def window(self, w_ref: float, u: float, inc_stage: int, line_rate: str | int) -> float:
        """Algorithm 1's window (bytes) from the reference window ``w_ref``, the smoothed
        utilisation ``u`` and the stage, before the min/max clamp (the C rule's formula)."""
        t = parse_time(self.base_rtt) * 1e-12
        ai = parse_rate(line_rate) / 2500 if is_zero(self.ai_rate) else parse_rate(self.ai_rate)
        if u / self.eta >= 1 or inc_stage >= self.max_stage:
            return w_ref / (u / self.eta) + ai * t / 8
        return w_ref + ai * t / 8

    def to_c(self) -> dict[str, Any]:
        """The fields of the C struct rs_hpcc_params (ps, bits/s)."""
        def rate(v: str | int) -> float:
            return 0.0 if is_zero(v) else float(parse_rate(v))

        return dict(
            eta=float(self.eta), max_stage=int(self.max_stage), fast_react=int(self.fast_react),
            base_rtt_ps=parse_time(self.base_rtt), ai_bps=rate(self.ai_rate),
            min_rate_bps=rate(self.min_rate), max_rate_bps=rate(self.max_rate), ack_every=int(self.ack_every),
        )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]
