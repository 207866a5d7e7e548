"""Synthetic inputs shaped like the ones the simulator's result writers produce, for tests/plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

LINE_RATE_BPS = 100e9
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

FLOW_DTYPE = np.dtype([
    ("flow_id", "i8"), ("src", "U8"), ("dst", "U8"), ("verb", "U5"), ("size_bytes", "i8"), ("priority", "i8"),
    ("start_ps", "i8"), ("finish_ps", "f8"), ("fct_ps", "f8"), ("ideal_fct_ps", "i8"), ("slowdown", "f8"),
    ("bytes_delivered", "i8"), ("retx_pkts", "i8"), ("cnps", "i8"), ("status", "U10"), ("group", "U8"),
])


def flow_table(n: int = 400, seed: int = 1, unfinished: int = 17) -> np.ndarray:
    """``n`` flows of 100 B .. 30 MB (log-uniform) on a 100 Gb/s fabric; ``unfinished`` of them never
    finish (finish_ps NaN or -1, fct/slowdown NaN, status 'timeout'). Groups 'dcqcn' / 'nocc'."""
    rng = np.random.default_rng(seed)
    t = np.zeros(n, dtype=FLOW_DTYPE)
    t["flow_id"] = np.arange(n)
    t["src"] = [f"h{i % 16}" for i in range(n)]
    t["dst"] = [f"h{(i * 7 + 3) % 16}" for i in range(n)]
    t["verb"] = rng.choice(["WRITE", "READ", "SEND"], n)
    size = np.round(10 ** rng.uniform(2, np.log10(3e7), n)).astype(np.int64)
    t["size_bytes"] = size
    t["priority"] = 3
    t["start_ps"] = np.sort(rng.integers(0, 2 * 10**9, n))
    ideal = np.round(size * 8 / LINE_RATE_BPS * 1e12 + 4e6).astype(np.int64)  # + a 4 µs round trip
    # small flows wait behind big ones more: a heavier-tailed slowdown for them
    slowdown = 1.0 + rng.lognormal(0.0, 1.0, n) * (6.0 / np.log10(size))
    fct = np.round(ideal * slowdown)
    t["ideal_fct_ps"] = ideal
    t["fct_ps"] = fct
    t["slowdown"] = fct / ideal
    t["finish_ps"] = t["start_ps"] + fct
    t["bytes_delivered"] = size
    t["retx_pkts"] = rng.poisson(0.5, n)
    t["cnps"] = rng.poisson(3.0, n) * (size > 10**5)
    t["status"] = "ok"
    t["group"] = np.where(np.arange(n) % 2 == 0, "dcqcn", "nocc")
    lost = rng.choice(n, unfinished, replace=False)
    t["finish_ps"][lost] = np.where(np.arange(unfinished) % 2 == 0, np.nan, -1.0)
    t["fct_ps"][lost] = np.nan
    t["slowdown"][lost] = np.nan
    t["bytes_delivered"][lost] //= 3
    t["status"][lost] = "timeout"
    return t


def as_dict(table: np.ndarray) -> dict[str, Any]:
    """The structured table as a dict of columns; a flow table's unfinished values become None
    (object columns)."""
    out: dict[str, Any] = {name: table[name].copy() for name in table.dtype.names or ()}
    if "status" not in out:
        return out
    lost = table["status"] != "ok"
    for name in ("finish_ps", "fct_ps", "slowdown"):
        col = out[name].astype(object)
        col[lost] = None
        out[name] = col
    return out


def flow_series(nflows: int = 20, period_ps: int = 10**6, steps: int = 300, seed: int = 2) -> np.ndarray:
    """Long-format per-flow samples every ``period_ps``: cumulative bytes_acked rising at a DCQCN-like
    rate (unlimited = 0 until the first CNP, then cuts and recoveries). Flow 0 runs at exactly 10 Gb/s."""
    rng = np.random.default_rng(seed)
    dt = np.dtype([("t_ps", "i8"), ("flow_id", "i8"), ("bytes_acked", "u8"), ("rate_bps", "f8")])
    rows = np.zeros(nflows * steps, dtype=dt)
    share = LINE_RATE_BPS / nflows
    for f in range(nflows):
        start = 0 if f == 0 else int(rng.integers(0, steps // 3))
        t = np.arange(steps, dtype=np.int64) * period_ps
        rate = np.zeros(steps)
        rc = LINE_RATE_BPS
        first_cnp = start + int(rng.integers(5, 30))
        for k in range(steps):
            if k >= first_cnp:
                rc = rc * 0.5 if rng.random() < 0.08 else min(LINE_RATE_BPS, rc + 2e9)
                rate[k] = rc
        sent = np.where(np.arange(steps) < start, 0.0, np.minimum(np.where(rate > 0, rate, LINE_RATE_BPS),
                                                                   share * rng.uniform(0.5, 1.5)))
        if f == 0:
            sent[:] = 10e9
        cum = np.cumsum(np.r_[0.0, sent[:-1]] * period_ps * 1e-12 / 8.0)
        block = slice(f * steps, (f + 1) * steps)
        rows["t_ps"][block] = t
        rows["flow_id"][block] = f
        rows["bytes_acked"][block] = np.round(cum).astype(np.uint64)
        rows["rate_bps"][block] = rate
    # the writer interleaves flows by time
    return rows[np.lexsort((rows["flow_id"], rows["t_ps"]))]


Spans = list[list[tuple[int, int]]]


def queue_samples(
    n: int = 500, probes: int = 4, period_ps: int = 10**6
) -> tuple[dict[str, Any], list[str], Spans]:
    """QueueSampler.arrays()-shaped samples with PFC hysteresis (XOFF above 200 KB, XON below 100 KB)
    and the pause spans they contain, computed independently sample by sample."""
    t = np.arange(n, dtype=np.int64) * period_ps
    egress = np.zeros((n, probes), dtype=np.int64)
    paused = np.zeros((n, probes), dtype=bool)
    spans: Spans = [[] for _ in range(probes)]
    for j in range(probes):
        q = 0.0
        on = False
        for k in range(n):
            # bursts arrive faster than the 12.5 KB/µs egress drains; a pause stops the arrivals
            burst = (k // (60 + 20 * j)) % 2 == 0
            arriving = 0.0 if on or not burst else 20_000.0 * (1 + 0.5 * j)
            q = max(0.0, q + arriving - 12_500.0)
            if not on and q > 200_000:
                on = True
                spans[j].append((int(t[k]), -1))
            elif on and q < 100_000:
                on = False
                spans[j][-1] = (spans[j][-1][0], int(t[k]))
            egress[k, j] = int(q)
            paused[k, j] = on
        if on:
            spans[j][-1] = (spans[j][-1][0], int(t[-1] + period_ps))
    samples = {"t_ps": t, "egress_bytes": egress, "ingress_bytes": egress // 2, "paused": paused,
               "missed": 0}
    labels = [f"sw0 p{j} prio3" for j in range(probes)]
    return samples, labels, spans


def assert_png_svg(paths: list[Path]) -> None:
    """Each path exists; .png ones start with the PNG signature, .svg ones parse as SVG XML."""
    assert paths, "nothing written"
    for p in paths:
        assert p.exists() and p.stat().st_size > 0, p
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == PNG_MAGIC, p
        elif p.suffix == ".svg":
            root = ElementTree.parse(p).getroot()
            assert root.tag.endswith("svg"), root.tag
