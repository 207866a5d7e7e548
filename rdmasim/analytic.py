"""Analytical results the simulator is checked against (protocol.md §9), usable by anyone.

All functions are closed forms or a bisection; none call the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def gbn_efficiency(p: float, m: float) -> float:
    """Go-Back-N efficiency with i.i.d. loss ``p`` and ``m`` packets resent per loss (incl. the
    lost one): eta = (1 - p) / (1 + (m - 1) p)  (Leung et al.)."""
    if not 0 <= p < 1 or m < 1:
        raise ValueError(f"need 0 <= p < 1 and m >= 1, got p={p}, m={m}")
    return (1 - p) / (1 + (m - 1) * p)


def pfc_pause_ps(quanta: int, rate_bps: float) -> float:
    """Pause duration of ``quanta`` (each 512 bit times) at ``rate_bps``, in picoseconds."""
    return quanta * 512 / rate_bps * 1e12


def retransmit_timeout_ps(timeout: int) -> int:
    """Local ACK timeout 4.096 us * 2^timeout in picoseconds (0 = disabled)."""
    return 0 if timeout == 0 else 4_096_000 << timeout


@dataclass(frozen=True)
class DcqcnFixedPoint:
    """The DCQCN fluid model's fixed point for N flows on one bottleneck."""

    p: float           # marking probability
    alpha: float
    rate_pps: float    # per-flow rate Rc* = C / N (packets/s)
    target_pps: float  # Rt*
    queue_bytes: float


def dcqcn_fixed_point(capacity_bps: float, n_flows: int, packet_bytes: int = 1000, *,
                      kmin_bytes: float = 5_000, kmax_bytes: float = 200_000, pmax: float = 0.01,
                      g: float = 1 / 256, cnp_interval_s: float = 50e-6, alpha_timer_s: float = 55e-6,
                      rate_timer_s: float = 55e-6, byte_counter_bytes: float = 10e6, f: int = 5,
                      ai_bps: float = 40e6) -> DcqcnFixedPoint:
    """Solve the DCQCN fluid model (Zhu et al. SIGCOMM'15 §5; protocol.md §8.5) for its fixed point.

    With R* = C/N, the derivatives vanish when alpha(p) a(p)^2 = tau^2 R_AI R* (b+d)(c+e); the root in
    (0, Pmax] is found by bisection. Defaults are the paper's parameters.
    """
    r = capacity_bps / (8 * packet_bytes) / n_flows      # packets/s per flow
    rai = ai_bps / (8 * packet_bytes)
    b_pk = byte_counter_bytes / packet_bytes
    tau, tau_a, t = cnp_interval_s, alpha_timer_s, rate_timer_s

    def terms(p: float) -> tuple[float, float, float, float, float, float]:
        q = 1 - p
        a = 1 - q ** (tau * r)
        b = p / (q ** (-b_pk) - 1)
        c = b * q ** (f * b_pk)
        d = p / (q ** (-t * r) - 1)
        e = d * q ** (f * t * r)
        alpha = 1 - q ** (tau_a * r)
        return a, b, c, d, e, alpha

    def residual(p: float) -> float:
        a, b, c, d, e, alpha = terms(p)
        return alpha * a * a - tau * tau * rai * r * (b + d) * (c + e)

    lo, hi = 1e-12, pmax
    if residual(lo) * residual(hi) > 0:
        raise ValueError("no fixed point in (0, Pmax]: the marking range cannot hold these flows")
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if residual(lo) * residual(mid) <= 0:
            hi = mid
        else:
            lo = mid
    p = math.sqrt(lo * hi)
    a, b, c, d, e, alpha = terms(p)
    rt = r * (1 + tau * rai * (c + e) / a)
    q_bytes = kmin_bytes + p / pmax * (kmax_bytes - kmin_bytes)
    return DcqcnFixedPoint(p=p, alpha=alpha, rate_pps=r, target_pps=rt, queue_bytes=q_bytes)


def jain_index(rates: list[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 = perfectly fair."""
    if not rates:
        raise ValueError("need at least one rate")
    s = sum(rates)
    s2 = sum(x * x for x in rates)
    return (s * s) / (len(rates) * s2) if s2 else 1.0
