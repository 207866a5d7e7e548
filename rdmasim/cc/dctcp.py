"""DCTCP-style ECN congestion control for RDMA: parameters (csrc/cc/dctcp.c has the rules).

The sender keeps alpha, the fraction of its bytes that arrived CE-marked per window of data
(alpha <- (1 - g) alpha + g F), cuts its rate to R (1 - alpha/2) at most once per window when an
ACK echoes a mark, and otherwise adds ``ai_rate`` per window; its window follows the rate
(``window`` x R / max rate). This is the RDMA form of DCTCP in the HPCC authors' ns-3 simulator
(alibaba-edu/High-Precision-Congestion-Control, ``rdma-hw.cc`` ``HandleAckDctcp``); the defaults are
that simulator's ``run.py`` settings for ``--cc dctcp`` and the DCTCP paper's g = 1/16
(Alizadeh et al., SIGCOMM 2010). Times and rates take units as strings (``"615Mbps"``), sizes
bytes or ``"60KB"``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from rdmasim.cc._param_checks import ParamChecks, is_zero
from rdmasim.units import parse_rate, parse_size


@dataclass(frozen=True)
class DctcpParams:
    """DCTCP reaction at the sender NIC (receivers only echo CE marks in their ACKs: no CNPs)."""

    g: float = 1 / 16                 # alpha gain (DCTCP paper; run.py EWMA_GAIN 0.0625)
    initial_alpha: float = 1.0        # ns-3 rdma-queue-pair.cc: dctcp.m_alpha = 1
    ai_rate: str | int = "615Mbps"    # run.py DCTCP_RATE_AI: one 1 KB MTU per 13 us RTT
    min_rate: str | int = "1Gbps"     # run.py MIN_RATE
    max_rate: str | int = 0           # 0 = line rate
    window: str | int = 0             # window at the maximum rate, bytes (run.py: the BDP); 0 = none
    var_win: bool = True              # the window follows the rate (run.py VAR_WIN 1)
    pace: bool = True                 # pace packets at the rate (run.py RATE_BOUND 1)
    ack_every: int = 1                # ACK every n-th packet (run.py L2_ACK_INTERVAL 1; delayed ACK: 2)

    def __post_init__(self) -> None:
        checks = ParamChecks("DCTCP", self)
        check, number, parses = checks.check, checks.number, checks.parses

        check("g", number("g") and 0 < self.g <= 1, "0 < g <= 1")
        check("initial_alpha", number("initial_alpha") and 0 <= self.initial_alpha <= 1, "0..1")
        check("ack_every", type(self.ack_every) is int and 1 <= self.ack_every <= 65536,
              "an integer 1..65536")
        for name in ("var_win", "pace"):
            check(name, isinstance(getattr(self, name), bool), "true or false")

        check("ai_rate", parses("ai_rate", parse_rate, False), "a positive rate, e.g. '615Mbps'")
        check("min_rate", parses("min_rate", parse_rate, True), "0 or a positive rate, e.g. '1Gbps'")
        check("max_rate", parses("max_rate", parse_rate, True), "0 (line rate) or a positive rate")
        check("window", parses("window", parse_size, True), "0 (no window) or a size in bytes, e.g. '60KB'")
        check("pace", self.pace or not is_zero(self.window),
              "true, or a nonzero window (with neither nothing limits the sender)")

    @classmethod
    def paper(cls, **overrides: Any) -> DctcpParams:
        """The defaults (the HPCC simulator's DCTCP settings), with ``overrides``."""
        return cls(**overrides)

    @classmethod
    def for_path(cls, line_rate: str | int, rtt: str | int, mtu: int = 1024, **overrides: Any) -> DctcpParams:
        """Settings for a path of ``line_rate`` and base round-trip time ``rtt``: window = the
        bandwidth-delay product and one MTU per RTT of additive increase (how run.py derived its
        615 Mb/s from a 13 us RTT and 1 KB MTU), then ``overrides``."""
        from rdmasim.units import parse_time

        rate, rtt_ps = parse_rate(line_rate), parse_time(rtt)
        if rate <= 0 or rtt_ps <= 0 or mtu <= 0:
            raise ValueError(f"for_path needs a positive line_rate, rtt and mtu, got {line_rate!r}, {rtt!r}, "
                             f"{mtu!r}")
        kw: dict[str, Any] = dict(window=int(rate * rtt_ps / 8e12), ai_rate=int(mtu * 8 * 1e12 / rtt_ps))
        kw.update(overrides)
        return cls(**kw)

    @classmethod
    def from_scenario(cls, values: dict[str, Any]) -> DctcpParams:
        """From a scenario's parsed ``congestion_control.dctcp.*`` values (rates in b/s, sizes in
        bytes)."""
        return cls(**{k: values[f"congestion_control.dctcp.{k}"] for k in cls.field_names()})

    def to_c(self) -> dict[str, Any]:
        """The fields of the C struct rs_dctcp_params (bits/s, bytes)."""
        def rate(v: str | int) -> float:
            return 0.0 if is_zero(v) else float(parse_rate(v))

        return dict(
            g=float(self.g), initial_alpha=float(self.initial_alpha), ai_bps=rate(self.ai_rate),
            min_rate_bps=rate(self.min_rate), max_rate_bps=rate(self.max_rate),
            window_bytes=0 if is_zero(self.window) else parse_size(self.window), var_win=int(self.var_win),
            pace=int(self.pace), ack_every=int(self.ack_every),
        )

    def as_dict(self) -> dict[str, Any]:
        """The parameters as written (strings with units kept)."""
        return asdict(self)

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of every parameter."""
        return [f.name for f in fields(cls)]
