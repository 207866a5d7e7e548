"""NSCC, the Ultra Ethernet network-signal congestion control (SMaRTT): parameters
(csrc/cc/nscc.c has the rules).

A window-based sender algorithm. Per ACK it compares the queueing delay (RTT minus the smallest
RTT seen) with a target and looks at the ECN echo: no ECN and delay above target, a small fair
increase; no ECN and delay below target, an increase proportional to the headroom (or a fast
increase when the delay stayed near zero for a window); ECN and delay above target, a
multiplicative decrease on the average delay, once per base RTT; ECN with a low delay, nothing.
QuickAdapt resets the window to what was delivered in the last RTT when losses or a very high
delay show that it is far too large. A loss (a trim in UET; a NAK or timeout on a RoCE QP)
removes the lost bytes from the window (Bonato et al., arXiv 2404.01630; the UEC reference
simulator htsim, ``uec.cpp``, for the constants).

The gains are given in packets (MSS) for the reference network of htsim (100 Gb/s, 12 us) and
scaled at start by the sender's line rate and ``base_rtt``. ``base_rtt`` depends on the fabric:
:meth:`NsccParams.for_path` takes it from a path. Times take units as strings (``"4us"``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from rdmasim.cc._param_checks import ParamChecks, is_zero
from rdmasim.units import parse_rate, parse_size, parse_time


@dataclass(frozen=True)
class NsccParams:
    """NSCC reaction at the sender NIC (receivers echo send stamps and CE marks in their ACKs)."""

    base_rtt: str | int = "4us"          # network base RTT (rdmasim default: fabric-dependent; for_path)
    trimming: bool = False               # the network trims: target 0.75 x base_rtt (else 1 x)
    target_qdelay: str | int = 0         # 0 = from base_rtt and trimming (htsim)
    qa_threshold: str | int = 0          # QuickAdapt above this delay; 0 = 4 x target (htsim)
    qa_gate: int = 3                     # QuickAdapt only below max window / 2**qa_gate delivered (htsim)
    quick_adapt: bool = True
    alpha_mss: float = 4.0               # proportional increase gain, MSS (htsim)
    fi_mss: float = 5.0                  # fair increase, MSS per RTT (htsim)
    fi_scale: float = 0.25               # fast increase per acked byte (htsim)
    fast_increase_delay: str | int = "1us"  # fast increase below this delay (htsim)
    eta_mss: float = 0.15                # added once per base RTT, MSS (htsim)
    gamma: float = 0.8                   # multiplicative decrease gain (htsim; Swift's beta)
    max_md: float = 0.5                  # a decrease keeps at least 1 - max_md (htsim)
    delay_alpha: float = 0.0125          # EWMA gain of the average delay (htsim)
    adjust_packets: int = 8              # increases applied every this many packets acked (htsim)
    ref_rate: str | int = "100Gbps"      # the reference network the gains are tuned for (htsim)
    ref_rtt: str | int = "12us"
    min_cwnd: str | int = 0              # bytes; 0 = one packet
    max_cwnd: str | int = 0              # bytes; 0 = 1.5 x line rate x base RTT (htsim)
    init_cwnd: str | int = 0             # bytes; 0 = max_cwnd (htsim)
    packet_bytes: int = 1024             # payload bytes of a packet (the path MTU)

    def __post_init__(self) -> None:
        checks = ParamChecks("NSCC", self)
        check, number, integer, parses = checks.check, checks.number, checks.integer, checks.parses

        def flag(name: str) -> bool:
            v = getattr(self, name)
            return isinstance(v, bool) or (integer(name) and v in (0, 1))

        check("base_rtt", parses("base_rtt", parse_time, False), "a positive time, e.g. '4us'")
        check("trimming", flag("trimming"), "true or false")
        check("target_qdelay", parses("target_qdelay", parse_time, True), "0 (derived) or a positive time")
        check("qa_threshold", parses("qa_threshold", parse_time, True), "0 (4 x target) or a positive time")
        check("qa_gate", integer("qa_gate") and 0 <= self.qa_gate <= 63, "an integer 0..63")
        check("quick_adapt", flag("quick_adapt"), "true or false")
        for name in ("alpha_mss", "fi_mss", "fi_scale", "eta_mss"):
            check(name, number(name) and getattr(self, name) >= 0, ">= 0")
        check("fast_increase_delay", parses("fast_increase_delay", parse_time, True),
              "a time >= 0, e.g. '1us'")
        check("gamma", number("gamma") and 0 < self.gamma <= 1, "0 < gamma <= 1")
        check("max_md", number("max_md") and 0 < self.max_md < 1, "0 < max_md < 1")
        check("delay_alpha", number("delay_alpha") and 0 < self.delay_alpha <= 1, "0 < delay_alpha <= 1")
        check("adjust_packets", integer("adjust_packets") and self.adjust_packets >= 1, "an integer >= 1")
        check("ref_rate", parses("ref_rate", parse_rate, False), "a positive rate, e.g. '100Gbps'")
        check("ref_rtt", parses("ref_rtt", parse_time, False), "a positive time, e.g. '12us'")
        for name in ("min_cwnd", "max_cwnd", "init_cwnd"):
            check(name, parses(name, parse_size, True), "0 (default) or a positive size, e.g. '64KB'")
        check("packet_bytes", integer("packet_bytes") and 0 < self.packet_bytes < 2**32, "a positive size")
        lo, hi = self._size("min_cwnd"), self._size("max_cwnd")
        check("max_cwnd", not hi or hi >= max(lo, self.packet_bytes),
              f"0 (1.5 BDP) or >= min_cwnd and packet_bytes ({max(lo, self.packet_bytes)} bytes)")
        check("adjust_packets", self.adjust_packets * self.packet_bytes < 2**32,
              f"adjust_packets x packet_bytes < 2**32 (packet_bytes {self.packet_bytes})")

    def _size(self, name: str) -> int:
        v = getattr(self, name)
        return 0 if is_zero(v) else parse_size(v)

    def _time(self, name: str) -> int:
        v = getattr(self, name)
        return 0 if is_zero(v) else parse_time(v)

    @classmethod
    def paper(cls, **overrides: Any) -> NsccParams:
        """The defaults, with ``overrides``."""
        return cls(**overrides)

    @classmethod
    def for_path(cls, rtt: str | int, mtu: int = 1024, trimming: bool = False,
                 **overrides: Any) -> NsccParams:
        """Settings for a path of base round-trip time ``rtt`` with path MTU ``mtu`` (the window's
        packet size); then ``overrides``."""
        kw: dict[str, Any] = dict(base_rtt=parse_time(rtt), packet_bytes=mtu, trimming=trimming)
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def from_scenario(cls, values: dict[str, Any]) -> NsccParams:
        """From a scenario's parsed ``congestion_control.nscc.*`` values (times in ps)."""
        return cls(**{k: values[f"congestion_control.nscc.{k}"] for k in cls.field_names()})

    def to_c(self) -> dict[str, Any]:
        """The fields of the C struct rs_nscc_params (ps, bytes)."""
        return dict(
            packet_bytes=int(self.packet_bytes), base_rtt_ps=parse_time(self.base_rtt),
            trimming=int(bool(self.trimming)), target_qdelay_ps=self._time("target_qdelay"),
            qa_threshold_ps=self._time("qa_threshold"), qa_gate=int(self.qa_gate),
            quick_adapt=int(bool(self.quick_adapt)), alpha_mss=float(self.alpha_mss),
            fi_mss=float(self.fi_mss),
            fi_scale=float(self.fi_scale), fast_increase_delay_ps=self._time("fast_increase_delay"),
            eta_mss=float(self.eta_mss), gamma=float(self.gamma), max_md=float(self.max_md),
            delay_alpha=float(self.delay_alpha), adjust_bytes=int(self.adjust_packets * self.packet_bytes),
            ref_rate_bps=float(parse_rate(self.ref_rate)), ref_rtt_ps=parse_time(self.ref_rtt),
            min_cwnd_bytes=self._size("min_cwnd"), max_cwnd_bytes=self._size("max_cwnd"),
            init_cwnd_bytes=self._size("init_cwnd"),
        )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]
