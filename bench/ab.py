"""A/B timing of two builds (source trees) on one point of bench/scaling_models.py.

Usage::

    git worktree add ../rdmasim-base <commit> --detach
    (cd ../rdmasim-base && python setup.py build_ext --inplace -q)
    python bench/ab.py ../rdmasim-base . --rounds 7 \\
        --spec '{"kind": "qps", "flows": 100000, "total_pkts": 800000, "cc": false}'

Each round runs the point once per tree, in a fresh process, trees taking turns (a slow spell
of a shared machine then hits both).  Each process gets its own tree on ``PYTHONPATH``: a script
run as ``python bench/x.py`` has the script's directory on ``sys.path``, not the working
directory, so without it a second tree silently imports the editable install (the same code
twice).  Prints min and median of run and user CPU seconds per tree, the ratios, and whether
both builds simulated the same thing (events, simulated time, data packets, frames).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULT_PREFIX = "RESULT "
FINGERPRINT = ("events", "sim_time_ps", "data_pkts", "frames")


def tree_env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def check_tree(tree: Path) -> None:
    """Exit with a message unless `tree` has a built rdmasim that its processes will import."""
    worker = tree / "bench" / "scaling_models.py"
    if not worker.is_file():
        sys.exit(f"{tree}: no bench/scaling_models.py (not an rdmasim source tree?)")
    code = "import rdmasim, sys; sys.stdout.write(rdmasim.__file__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=tree_env(tree),
                          cwd=str(tree / "bench"))
    if proc.returncode != 0:
        sys.exit(f"{tree}: `import rdmasim` failed (built? python setup.py build_ext --inplace):\n"
                 f"{proc.stderr[-1500:]}")
    where = Path(proc.stdout).resolve()
    if tree.resolve() not in where.parents:
        sys.exit(f"{tree}: imports rdmasim from {where}, not from the tree")


def run_point(tree: Path, spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    cmd = [sys.executable, str(tree / "bench" / "scaling_models.py"), json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=tree_env(tree), cwd=str(tree),
                          timeout=timeout_s)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            out: dict[str, Any] = json.loads(line[len(RESULT_PREFIX):])
            return out
    sys.exit(f"{tree}: no result (exit {proc.returncode}):\n{proc.stderr[-2000:]}")


def ratio(b: float, a: float) -> str:
    """b / a, or "n/a" when a is 0 (CPU time of a very short run can read 0: clock ticks)."""
    return f"{b / a:.3f}" if a > 0 else "n/a"


def summarize(runs: list[dict[str, Any]], key: str) -> tuple[float, float]:
    xs = [r[key] for r in runs]
    return min(xs), statistics.median(xs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree_a", type=Path, help="source tree of build A (the baseline)")
    ap.add_argument("tree_b", type=Path, help="source tree of build B")
    ap.add_argument("--spec", required=True, help="JSON point for bench/scaling_models.py")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (each runs A then B; default 5)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per process (default 600)")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error(f"--rounds {a.rounds}: must be at least 1")
    try:
        spec = json.loads(a.spec)
    except json.JSONDecodeError as e:
        ap.error(f"--spec is not JSON: {e}")
    if not isinstance(spec, dict) or "kind" not in spec:
        ap.error('--spec must be a JSON object with a "kind", e.g. {"kind": "qps", "flows": 1000, ...}')
    trees = {"A": a.tree_a, "B": a.tree_b}
    for t in trees.values():
        check_tree(t)
    runs: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for i in range(a.rounds):
        for name, tree in trees.items():
            r = run_point(tree, spec, a.timeout)
            runs[name].append(r)
            print(f"round {i + 1}/{a.rounds} {name}: run {r['run_s']:.4f} s, user {r['user_s']:.4f} s",
                  file=sys.stderr, flush=True)
    print(f"spec: {json.dumps(spec)}; {a.rounds} rounds, A = {a.tree_a}, B = {a.tree_b}")
    for key in ("run_s", "user_s"):
        (amin, amed), (bmin, bmed) = summarize(runs["A"], key), summarize(runs["B"], key)
        print(f"{key:7} A min {amin:.4f} median {amed:.4f} | B min {bmin:.4f} median {bmed:.4f} | "
              f"B/A min {ratio(bmin, amin)} median {ratio(bmed, amed)}")
    same = all({tuple(r.get(k) for k in FINGERPRINT) for r in runs[n]} ==
               {tuple(runs["A"][0].get(k) for k in FINGERPRINT)} for n in runs)
    print("same simulated results (events, sim time, data packets, frames):", "yes" if same else "NO")
    return 0


if __name__ == "__main__":
    sys.exit(main())
