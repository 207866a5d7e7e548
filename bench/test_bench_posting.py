"""pytest-benchmark: incast-8 with one 1024-byte WRITE per data packet posted one by one, as
``next_wr`` chains and as numpy batches, against 1 MiB WRITEs (bench/models/rdmasim_incast.py).

Reports data packets per wall second (extra_info). With benchmarking off (this repository's
default) each case runs once on a small incast as a smoke test. Measure:
``python -m pytest bench/test_bench_posting.py --benchmark-enable --benchmark-only``; the ratios in
one run: ``python bench/posting_ratio.py``.
"""

from __future__ import annotations

import os
import sys

import pytest

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")


sys.path.insert(0, MODELS)  # bench/models: module names of its own (incast_common, ...)
import rdmasim_incast  # noqa: E402


@pytest.mark.parametrize("mode", ["write1MiB", "write1024", "write1024-pyverbs", "write1024-chain",
                                  "write1024-batch"])
def test_incast8_posting(benchmark, mode: str) -> None:
    per_sender = 20_000 if benchmark.enabled else 1_500
    result = benchmark.pedantic(rdmasim_incast.run, args=(8, per_sender, mode), rounds=3, iterations=1)
    assert result["packets"] >= 8 * per_sender
    benchmark.extra_info["data_packets"] = result["packets"]
    benchmark.extra_info["events"] = result["events"]
    if benchmark.stats:
        benchmark.extra_info["packets_per_wall_s"] = result["packets"] / benchmark.stats.stats.median
