"""Swift delay-based window control: parameters (csrc/cc/swift.c has the rules).

Per ACK the sender compares the RTT sample with a target delay: ``base_target`` plus ``hop_scale``
per hop plus a flow-scaling term that grows as the window shrinks (up to ``fs_range`` at
``fs_min_cwnd`` packets, nothing at ``fs_max_cwnd``). Below the target the window grows by
``ai`` packets per RTT; above it the window is cut by ``beta`` x (delay - target) / delay, at most
``max_mdf``, once per RTT. A window below one packet sends one packet at a time, paced one RTT /
cwnd apart (Kumar et al., SIGCOMM 2020, Algorithm 1 and sec. 3.5). ``ai``, ``beta``, ``max_mdf``
and the flow-scaling window range are the values of the paper's Algorithm 1 as public
reimplementations use them; the delays depend on the fabric (the paper tunes them per
deployment), so :meth:`SwiftParams.for_path` derives them from a path's base RTT. Without INT or
TTL feedback the hop count is a parameter. Packets ask for ``acks_per_window`` ACKs per window
(ACK coalescing: each ACK's acknowledged bytes count), not one per packet. Times take units as
strings (``"6us"``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from rdmasim.cc._param_checks import ParamChecks
from rdmasim.units import parse_time


@dataclass(frozen=True)
class SwiftParams:
    """Swift reaction at the sender NIC (receivers only echo send stamps in their ACKs)."""

    ai: float = 1.0                  # additive increase, packets per RTT
    beta: float = 0.8                # multiplicative decrease scale
    max_mdf: float = 0.5             # a cut keeps at least 1 - max_mdf of the window
    base_target: str | int = "10us"  # one-hop target with few flows (rdmasim default: fabric-dependent)
    hop_scale: str | int = "1us"     # h: target added per hop
    hops: int = 1                    # switches on the forward path
    fs_range: str | int = "10us"     # flow scaling: most target added (at fs_min_cwnd)
    fs_min_cwnd: float = 0.1         # packets
    fs_max_cwnd: float = 100.0       # packets
    min_cwnd: float = 0.001          # packets; below 1 the QP is paced one RTT / cwnd apart
    max_cwnd: float = 0.0            # packets; 0 = no cap
    init_cwnd: float = 0.0           # packets; 0 = line rate x base_target
    packet_bytes: int = 1024         # payload bytes of one packet (the path MTU)
    acks_per_window: int = 8         # ACKs asked for per window (and when it fills); 0 = every packet

    def __post_init__(self) -> None:
        checks = ParamChecks("Swift", self)
        check, number, integer = checks.check, checks.number, checks.integer

        def time(name: str, zero_ok: bool) -> bool:
            try:
                t = parse_time(getattr(self, name))
            except (TypeError, ValueError):
                return False
            return t >= 0 if zero_ok else t > 0

        check("ai", number("ai") and self.ai > 0, "> 0 packets per RTT")
        check("beta", number("beta") and 0 < self.beta <= 1, "0 < beta <= 1")
        check("max_mdf", number("max_mdf") and 0 < self.max_mdf < 1, "0 < max_mdf < 1")
        check("base_target", time("base_target", False), "a positive time, e.g. '10us'")
        check("hop_scale", time("hop_scale", True), "a time >= 0, e.g. '1us'")
        check("hops", integer("hops") and 0 <= self.hops < 2**32, "an integer >= 0")
        check("fs_range", time("fs_range", True), "a time >= 0, e.g. '10us'")
        check("fs_min_cwnd", number("fs_min_cwnd") and self.fs_min_cwnd > 0, "> 0 packets")
        check("fs_max_cwnd", number("fs_max_cwnd") and self.fs_max_cwnd > self.fs_min_cwnd,
              f"> fs_min_cwnd ({self.fs_min_cwnd!r})")
        check("min_cwnd", number("min_cwnd") and self.min_cwnd > 0, "> 0 packets")
        check("max_cwnd", number("max_cwnd") and (self.max_cwnd == 0 or self.max_cwnd >= self.min_cwnd),
              f"0 (no cap) or >= min_cwnd ({self.min_cwnd!r})")
        check("init_cwnd", number("init_cwnd") and self.init_cwnd >= 0, "0 (line rate x base_target) or > 0")
        check("packet_bytes", integer("packet_bytes") and 0 < self.packet_bytes < 2**32, "a positive size")
        check("acks_per_window", integer("acks_per_window") and 0 <= self.acks_per_window < 2**32,
              "an integer >= 0 (0 = an ACK per packet)")

    @classmethod
    def paper(cls, **overrides: Any) -> SwiftParams:
        """The defaults, with ``overrides``."""
        return cls(**overrides)

    @classmethod
    def for_path(cls, line_rate: str | int, rtt: str | int, hops: int = 1, mtu: int = 1024,
                 **overrides: Any) -> SwiftParams:
        """Settings for a path of base round-trip time ``rtt`` through ``hops`` switches with path
        MTU ``mtu``: ``base_target`` = 1.5 x ``rtt`` (half an RTT of queue keeps a one-hop path
        busy), ``hop_scale`` = ``rtt`` / 8, ``fs_range`` = ``rtt``, ``max_cwnd`` = 4 bandwidth-delay
        products; then ``overrides``. ``line_rate`` sizes the cap."""
        from rdmasim.units import parse_rate

        rate, rtt_ps = parse_rate(line_rate), parse_time(rtt)
        if rate <= 0 or rtt_ps <= 0 or mtu <= 0:
            raise ValueError(f"for_path needs a positive line_rate, rtt and mtu, got {line_rate!r}, {rtt!r}, "
                             f"{mtu!r}")
        bdp_pkts = rate * rtt_ps / 8e12 / mtu
        kw: dict[str, Any] = dict(base_target=round(1.5 * rtt_ps), hop_scale=rtt_ps // 8, hops=hops,
                                  fs_range=rtt_ps, max_cwnd=4 * bdp_pkts, packet_bytes=mtu)
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def from_scenario(cls, values: dict[str, Any]) -> SwiftParams:
        """From a scenario's parsed ``congestion_control.swift.*`` values (times in ps)."""
        return cls(**{k: values[f"congestion_control.swift.{k}"] for k in cls.field_names()})

    def target(self, cwnd: float) -> int:
        """The target delay (ps) at a window of ``cwnd`` packets (the C rule's formula)."""
        lo, hi, rng = self.fs_min_cwnd, self.fs_max_cwnd, parse_time(self.fs_range)
        a = rng / (lo ** -0.5 - hi ** -0.5)
        fs = min(max(a * cwnd ** -0.5 - a * hi ** -0.5, 0.0), rng)
        return parse_time(self.base_target) + self.hops * parse_time(self.hop_scale) + int(fs + 0.5)

    def to_c(self) -> dict[str, Any]:
        """The fields of the C struct rs_swift_params (ps, packets, bytes)."""
        return dict(
            ai=float(self.ai), beta=float(self.beta), max_mdf=float(self.max_mdf),
            base_target_ps=parse_time(self.base_target), hop_scale_ps=parse_time(self.hop_scale),
            hops=int(self.hops), fs_range_ps=parse_time(self.fs_range), fs_min_cwnd=float(self.fs_min_cwnd),
            fs_max_cwnd=float(self.fs_max_cwnd), min_cwnd=float(self.min_cwnd), max_cwnd=float(self.max_cwnd),
            init_cwnd=float(self.init_cwnd), packet_bytes=int(self.packet_bytes),
            acks_per_window=int(self.acks_per_window),
        )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]
