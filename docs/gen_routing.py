"""Print the tables of docs/routing.md.

Usage (from the repository root)::

    PYTHONPATH=. python docs/gen_routing.py      # about 15 s

The experiments are tests/fabric/routing_util.py, the code tests/fabric/test_routing_validation.py and
tests/fabric/test_dragonfly.py assert on.
"""

from __future__ import annotations

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fabric"))

import numpy as np  # noqa: E402
from routing_util import (  # noqa: E402
    QPS,
    adversarial,
    dragonfly_gbps,
    expected_max_load,
    fat_tree_permutation,
    leaf_spine_permutation,
    spray_recovery,
    sustained_goodput_gbps,
    uniform_random,
)

from rdmasim import fabric  # noqa: E402
from rdmasim.topology import dragonfly  # noqa: E402

SEEDS = range(1, 21)


def balls_into_bins() -> None:
    print("| fabric | flows per switch over uplinks | ECMP busiest uplink | balls into bins E[max] | "
          "ln n / ln ln n | adaptive busiest uplink | longest FCT ECMP / adaptive |")
    print("|---|---|---|---|---|---|---|")
    got: dict[str, tuple[float, float]] = {}
    for mode in ("ecmp", "adaptive"):
        loads, fcts = [], []
        for s in SEEDS:
            m, f = leaf_spine_permutation(mode, s)
            loads += m
            fcts.append(f)
        got[mode] = (float(np.mean(loads)), float(np.mean(fcts)) / 1e6)
    print(f"| leaf-spine 8 x 8 x 8, 20 seeds | 8 over 8 | {got['ecmp'][0]:.3f} | "
          f"{expected_max_load(8, 8):.3f} | {math.log(8) / math.log(math.log(8)):.2f} | "
          f"{got['adaptive'][0]:.3f} | {got['ecmp'][1]:.1f} us / {got['adaptive'][1]:.1f} us |")
    ecmp = float(np.mean([x for s in range(1, 6) for x in fat_tree_permutation("ecmp", s)]))
    adaptive = float(np.mean([x for s in range(1, 3) for x in fat_tree_permutation("adaptive", s)]))
    print(f"| fat tree k = 8 (edge uplinks), 5 seeds | 4 over 4 | {ecmp:.3f} | {expected_max_load(4, 4):.3f} "
          f"| {math.log(4) / math.log(math.log(4)):.2f} | {adaptive:.3f} | |")


def spray() -> None:
    print("| path selection | loss recovery | goodput per flow (Gb/s) | lowest flow | "
          "retransmitted / data packets |")
    print("|---|---|---|---|---|")
    for m in ("ecmp", "spray", "adaptive"):
        for r in ("gbn", "irn"):
            v = spray_recovery(m, r)
            print(f"| {m} | {r.upper()} | {v['goodput']:.1f} | {v['min']:.1f} | {v['retx']:.3f} |")


def dragonfly_tables() -> None:
    print("| routing | Valiant's choice | QPs per host | adversarial (Gb/s per host) | "
          "uniform random (Gb/s per host) |")
    print("|---|---|---|---|---|")
    rows = [("minimal", "ecmp", 4), ("valiant", "ecmp", 4), ("ugal", "ecmp", 4), ("minimal", "ecmp", 1),
            ("valiant", "ecmp", 1), ("valiant", "spray", 1)]
    for routing, ps, qps in rows:
        adv = dragonfly_gbps(routing, adversarial, qps, ps)
        uni = dragonfly_gbps(routing, uniform_random, qps, ps)
        choice = "" if routing == "minimal" else ("per flow" if ps == "ecmp" else "per packet")
        print(f"| {routing} | {choice} | {qps} | {adv:.1f} | {uni:.1f} |")


def hop_classes_table() -> None:
    print("| routing | PFC priorities | adversarial (Gb/s per host) | uniform random (Gb/s per host) | "
          "deadlock |")
    print("|---|---|---|---|---|")
    for routing in ("minimal", "valiant"):
        for hc in (False, True):
            got, dead = [], False
            for pattern in (adversarial, uniform_random):
                df = dragonfly(routing=routing, hop_classes=hc)
                fabric.enable_deadlock_detector(df.sim, "10us")
                src, dst = pattern(df, QPS)
                g = sustained_goodput_gbps(df.sim, src, dst, recovery="gbn")
                got.append(float(g.reshape(-1, QPS).sum(axis=1).mean()))
                found = fabric.deadlock(df.sim)
                dead = dead or found is not None
                if found is not None and pattern is adversarial:
                    at = found[0] / 1e6
            classes = "3, 4, 5 (hop classes, WRR)" if hc else "3"
            print(f"| {routing} | {classes} | {got[0]:.1f} | {got[1]:.1f} | "
                  + (f"yes, at {at:.0f} us" if dead else "no") + " |")


if __name__ == "__main__":
    balls_into_bins()
    print()
    spray()
    print()
    dragonfly_tables()
    print()
    hop_classes_table()
