"""Flow-size distributions given as piecewise-linear CDFs, and two published datacenter workloads."""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass

import numpy as np

from rdmasim._userfile import read_user_file
from rdmasim.workload.traffic.table import MAX_FLOW_SIZE

#: Largest size CDF file read (8 MiB: some 400,000 ``size,cdf`` rows)
MAX_CDF_FILE_BYTES = 8 << 20


@dataclass(frozen=True)
class SizeCDF:
    """A flow-size distribution: ``sizes`` (bytes, non-decreasing) and ``cdf`` (non-decreasing, last 1.0).

    Between two points the distribution is uniform (the CDF is linear); a first probability above zero is a
    point mass at ``sizes[0]``, and two points with the same size make a point mass there. Samples are
    rounded to whole bytes and are at least 1.
    """

    sizes: tuple[float, ...]
    cdf: tuple[float, ...]
    name: str = "custom"

    def __post_init__(self) -> None:
        s = np.asarray(self.sizes, dtype=float)
        p = np.asarray(self.cdf, dtype=float)
        where = f"size CDF {self.name!r}"
        if s.ndim != 1 or p.shape != s.shape or s.size == 0:
            raise ValueError(f"{where}: sizes and cdf must be 1-D and of equal, non-zero length "
                             f"(got {s.shape} and {p.shape})")
        for i in range(s.size):
            problem = _point_problem(s, p, i)
            if problem:
                raise ValueError(f"{where}: point {i}: {problem}")
        object.__setattr__(self, "sizes", tuple(float(x) for x in s))
        object.__setattr__(self, "cdf", tuple(float(x) for x in p))

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.sizes, dtype=float), np.asarray(self.cdf, dtype=float)

    def quantile(self, u: np.ndarray) -> np.ndarray:
        """Inverse CDF (linear between points) of probabilities ``u`` in [0, 1), as float bytes."""
        s, p = self._arrays()
        u = np.asarray(u, dtype=float)
        if len(p) == 1:  # a single point: all mass at that size
            return np.full(u.shape, s[0])
        k = np.clip(np.searchsorted(p, u, side="right"), 1, len(p) - 1)  # p[k-1] <= u < p[k] inside
        lo_p, width = p[k - 1], p[k] - p[k - 1]
        safe = np.where(width > 0, width, 1.0)
        frac = np.clip((u - lo_p) / safe, 0.0, 1.0)
        out = s[k - 1] + frac * (s[k] - s[k - 1])
        result: np.ndarray = np.where(u < p[0], s[0], out)  # below the first point: the mass at sizes[0]
        return result

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` sizes (uint64 bytes, >= 1) drawn by inverse CDF from ``rng``."""
        raw = self.quantile(rng.random(n))
        out: np.ndarray = np.maximum(np.rint(raw), 1).astype(np.uint64)
        return out

    def mean(self) -> float:
        """Mean size in bytes under the piecewise-linear CDF (what :meth:`sample` draws, before rounding)."""
        s, p = self._arrays()
        seg = np.diff(p) * (s[1:] + s[:-1]) / 2.0
        return float(p[0] * s[0] + seg.sum())

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], name: str | None = None) -> SizeCDF:
        """Read two columns ``size,cdf`` (comma or whitespace separated; a header line is optional).

        ``cdf`` may be a fraction (ending at 1) or a percentage (ending at 100). Errors name the file, the
        line and the value. Only a regular file of at most :data:`MAX_CDF_FILE_BYTES` is read (a
        device, a named pipe or a larger file raises :class:`~rdmasim.errors.UserInputError`).
        """
        path = os.fspath(path)
        data = read_user_file(path, "size CDF file", MAX_CDF_FILE_BYTES)
        try:
            text_all = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not UTF-8 text: byte {data[exc.start]:#04x} at offset "
                             f"{exc.start}") from None
        rows: list[tuple[int, float, float]] = []
        seen_content = False
        for lineno, line in enumerate(io.StringIO(text_all, newline=""), start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            first, seen_content = not seen_content, True
            fields = next(csv.reader([text])) if "," in text else text.split()
            fields = [f.strip() for f in fields if f.strip()]
            if len(fields) != 2:
                raise ValueError(f"{path}:{lineno}: expected two columns size,cdf, got {len(fields)}: "
                                 f"{text!r}")
            bad = [f for f in fields if not _is_float(f)]
            if bad:
                if first:
                    continue  # a header
                raise ValueError(f"{path}:{lineno}: {bad[0]!r} is not a number")
            rows.append((lineno, float(fields[0]), float(fields[1])))
        if not rows:
            raise ValueError(f"{path}: no size,cdf rows found")
        s = np.array([r[1] for r in rows])
        p = np.array([r[2] for r in rows])
        if p[-1] == 100.0:
            p = p / 100.0
        for i, (lineno, _, _) in enumerate(rows):
            problem = _point_problem(s, p, i)
            if problem:
                raise ValueError(f"{path}:{lineno}: {problem}")
        return cls(tuple(s.tolist()), tuple(p.tolist()), name or os.path.basename(path))


def _point_problem(s: np.ndarray, p: np.ndarray, i: int) -> str | None:
    """What is wrong with point ``i`` of a CDF given as ``sizes`` ``s`` and probabilities ``p`` (or None)."""
    if not (np.isfinite(s[i]) and 0 <= s[i] <= MAX_FLOW_SIZE):
        return f"size {s[i]:g} is outside [0, {MAX_FLOW_SIZE}]"
    if not (np.isfinite(p[i]) and 0.0 <= p[i] <= 1.0):
        return f"cdf {p[i]:g} is outside [0, 1]"
    if i and s[i] < s[i - 1]:
        return f"size {s[i]:g} is below the previous size {s[i - 1]:g} (sizes must not decrease)"
    if i and p[i] < p[i - 1]:
        return f"cdf {p[i]:g} is below the previous cdf {p[i - 1]:g} (the cdf must not decrease)"
    if i == len(s) - 1 and p[i] != 1.0:
        return f"the last cdf value must be 1.0 (or 100 for percentages), got {p[i]:g}"
    return None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# Web search (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010, Fig. 4 background flows), in the
# piecewise-linear form that the HPCC simulator ships as traffic_gen/WebSearch_distribution.txt
# (alibaba-edu/High-Precision-Congestion-Control) and pFabric/HPCC evaluations use. Bytes vs cumulative
# fraction; half of all flows are under ~73 KB, while most bytes are in flows of 1-30 MB.
WEB_SEARCH = SizeCDF(
    sizes=(0, 10e3, 20e3, 30e3, 50e3, 80e3, 200e3, 1e6, 2e6, 5e6, 10e6, 30e6),
    cdf=(0.0, 0.15, 0.20, 0.30, 0.40, 0.53, 0.60, 0.70, 0.80, 0.90, 0.97, 1.0),
    name="web-search",
)
"""DCTCP web-search flow sizes (Alizadeh et al., SIGCOMM 2010); mean 1,711,250 bytes (~1.7 MB)."""

_PKT = 1460  # the data-mining CDF is published in 1460-byte packets
# Data mining (Greenberg et al., "VL2: A Scalable and Flexible Data Center Network", SIGCOMM 2009, Fig. 2),
# in the form pFabric (Alizadeh et al., SIGCOMM 2013) used for its ns-2 runs: flow sizes in 1460 B packets
# 1, 1, 2, 3, 7, 267, 2107, 66667, 666667 at cumulative 0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1 (also in
# ETH netbench's pFabricDataMining distribution). Half the flows are one packet; ~1% of flows (97 MB to
# 973 MB) carry most of the bytes.
DATA_MINING = SizeCDF(
    sizes=tuple(float(_PKT * k) for k in (1, 1, 2, 3, 7, 267, 2107, 66667, 666667)),
    cdf=(0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0),
    name="data-mining",
)
"""VL2 data-mining flow sizes (Greenberg et al., SIGCOMM 2009, via pFabric); mean 7,470,236 B (~7.5 MB)."""
