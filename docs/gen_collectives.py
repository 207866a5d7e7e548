"""Generate the table and the figure of docs/collectives.md (collectives against their alpha-beta models).

Usage (from the repository root)::

    python docs/gen_collectives.py   # the two tables (Markdown)

The figure, docs/img/collectives-crossover.png, is drawn by the page's own code
(python docs/gen_ladders.py docs/collectives.md).

The experiment is tests/traffic/collective_util.py, the same code tests/traffic/test_collective_cost_models.py
asserts on: each collective alone on an idle 100 Gb/s star (1 us links, 4096-byte MTU, PFC, no loss).
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "traffic"))

from collective_util import (  # noqa: E402
    CASES,
    alpha_beta,
    alpha_beta_aggregator,
    crossing,
    measure,
    model_crossover,
    ring_and_tree,
)

from rdmasim.traffic import bus_factor  # noqa: E402

KIND = {"allreduce": "allreduce", "allgather": "allgather", "reduce-scatter": "reduce_scatter",
        "broadcast": "broadcast", "reduce": "reduce", "alltoall": "alltoall"}
SIZES = (256 << 10, 2 << 20, 32 << 20)
CROSS_SIZES = [int(2 ** (17 + k / 2)) for k in range(17)]  # 128 KiB .. 32 MiB


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def table() -> None:
    ab, agg = alpha_beta(), alpha_beta_aggregator()
    print(f"alpha = {ab.alpha_ps / 1e6:.3f} us (rank to aggregator: {agg.alpha_ps / 1e6:.3f} us), "
          f"beta = {ab.beta_ps_per_byte:.2f} ps/byte ({8e3 / ab.beta_ps_per_byte:.2f} Gb/s of payload)\n")
    print("| algorithm | p | size | measured (us) | model (us) | upper bound (us) | measured / model | "
          "busbw (Gb/s) |")
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        kind = KIND[case.name.split()[0]]
        for p in (4, 8, 16):
            for n in SIZES:
                t, lo, hi = measure(case, p, n)
                busbw = n / (t * 1e-12) * bus_factor(kind, p) * 8 / 1e9
                upper = f"{hi / 1e6:,.1f}" if case.upper else "-"
                print(f"| {case.name} | {p} | {_size(n)} | {t / 1e6:,.1f} | {lo / 1e6:,.1f} | {upper} | "
                      f"{t / lo:.3f} | {busbw:.1f} |")


def crossover() -> None:
    print("\n| p | measured crossover | models cross |")
    print("|---|---|---|")
    for p in (8, 16):
        ring, tree = zip(*(ring_and_tree(p, n) for n in CROSS_SIZES), strict=True)
        got = crossing(CROSS_SIZES, list(tree), list(ring))
        print(f"| {p} | {got / 2**20:.2f} MiB | {model_crossover(p) / 2**20:.2f} MiB |")


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    table()
    crossover()


if __name__ == "__main__":
    main()
