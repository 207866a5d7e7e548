"""Jain's index of the DCTCP window-mode incast over seeds: how fair the order of simultaneous
events is on average, rather than in one deterministic run (docs/design.md, "Parallel runs").

Each seed draws another order of nodes for the ties of simultaneous arrivals (engine/engine.h);
the run is tests/fabric/dctcp_util.py's incast (100 Gb/s, K = 20 KB, pace off, 10 ms, rates over
the second half).  Prints the distribution of Jain's index over the seeds and each flow's mean
rate over them (a sender favoured by the tie order shows there).

    python bench/tie_fairness.py --n 8 --seeds 1-40
    PYTHONPATH=OTHER_TREE python bench/tie_fairness.py ...   # another build, side by side
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/; PYTHONPATH wins

from rdmasim.analytic import jain_index  # noqa: E402
from tests.fabric.dctcp_util import run_dctcp_incast  # noqa: E402


def seeds_arg(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=8, help="senders")
    p.add_argument("--seeds", type=seeds_arg, default=seeds_arg("1-40"), help="e.g. 1-40")
    p.add_argument("--duration-us", type=int, default=10_000)
    p.add_argument("--pace", action="store_true", help="DCTCP paced at its rate (default: a pure window)")
    a = p.parse_args()
    runs = [run_dctcp_incast(a.n, k_bytes=20_000, duration_us=a.duration_us, pace=a.pace, seed=s)
            for s in a.seeds]
    js = np.array([r.jain for r in runs])
    rates = np.array([r.rates_gbps for r in runs])
    pace = "on" if a.pace else "off"
    print(f"N = {a.n}, pace {pace}, {a.duration_us} us, seeds {a.seeds[0]}-{a.seeds[-1]}")
    print(f"Jain: mean {js.mean():.4f}, median {np.median(js):.4f}, min {js.min():.4f}, max {js.max():.4f}, "
          f"{int((js < 0.99).sum())} of {len(js)} below 0.99")
    se = rates.std(axis=0, ddof=1) / np.sqrt(len(runs)) if len(runs) > 1 else np.zeros(a.n)
    means = rates.mean(axis=0)
    flows = ", ".join(f"{m:.2f} +- {e:.2f}" for m, e in zip(means, se, strict=True))
    print(f"each flow's mean rate (Gb/s): {flows}")
    print(f"Jain of the flows' mean rates: {jain_index(means.tolist()):.5f}")


if __name__ == "__main__":
    main()
