"""Helpers of the routing tests: long flows on a fabric, and their sustained goodput."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: flows are never meant to finish inside the measurement
LONG_FLOW = 256 << 20


def sustained_goodput_gbps(sim, src: Sequence[str], dst: Sequence[str], *, until_us: int = 800,
                           recovery: str = "irn", irn_window: int = 64) -> np.ndarray:
    """Goodput of each flow src[i] -> dst[i] (Gb/s) between until_us / 2 and until_us: payload bytes
    its receiver took in order in that window (the first half is the warm-up)."""
    kw = {"irn_window": irn_window} if recovery == "irn" else {}
    table = {"src": list(src), "dst": list(dst), "size": [LONG_FLOW] * len(src)}
    sim.add_flows(table, recovery=recovery, **kw)
    until_ps = until_us * 1_000_000
    s = sim.run_flows(until=until_ps + 1, sample_every=until_ps // 2)  # samples at 0, until/2, until
    assert list(np.unique(s.t_ps)) == [0, until_ps // 2, until_ps], np.unique(s.t_ps)
    a, b = (s.bytes_acked[s.t_ps == t].astype(np.float64) for t in (until_ps // 2, until_ps))
    assert len(a) == len(src)
    return (b - a) * 8 / ((until_ps - until_ps // 2) * 1e-12) / 1e9


def expected_max_load(balls: int, bins: int) -> float:
    """Exact expectation of the fullest bin's count when ``balls`` balls fall uniformly and
    independently into ``bins`` bins (what ECMP hashing does with flows over equal-cost links).

    P(max <= k) = balls! / bins^balls x [x^balls] (sum_{j<=k} x^j / j!)^bins (a multinomial count),
    and E[max] = sum_{k>=0} (1 - P(max <= k)). For large n = balls = bins it grows as
    ln n / ln ln n."""
    from fractions import Fraction
    from math import factorial

    def p_max_at_most(k: int) -> Fraction:
        term = [Fraction(1, factorial(j)) for j in range(min(k, balls) + 1)]
        poly = [Fraction(1)]
        for _ in range(bins):
            out = [Fraction(0)] * min(len(poly) + len(term) - 1, balls + 1)
            for i, a in enumerate(poly):
                for j, b in enumerate(term):
                    if i + j <= balls:
                        out[i + j] += a * b
            poly = out
        coeff = poly[balls] if balls < len(poly) else Fraction(0)
        return coeff * factorial(balls) / Fraction(bins) ** balls

    return float(sum(1 - p_max_at_most(k) for k in range(balls)))
