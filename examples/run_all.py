"""Run every example (``--quick``: the reduced versions, a few seconds each) into one folder.

    python examples/run_all.py [--out DIR] [--quick] [--only NAME ...]

Each example's ``main`` prints its table and writes ``DIR/<name>.png`` and ``.svg``; at the end a
line per example gives its wall time and files. Exit status 1 if an example failed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the examples, in the order of examples/README.md
EXAMPLES = ("gbn_loss", "incast_dcqcn", "pfc_victim", "pfc_deadlock", "ring_allreduce", "fabric_compare",
            "link_layers", "multipath_compare")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the examples; return the exit status (0: all ran)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--out", default="examples-out", help="folder for every figure (default examples-out/)")
    ap.add_argument("--quick", action="store_true", help="the reduced versions")
    ap.add_argument("--only", nargs="+", choices=EXAMPLES, help="run only these examples")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    status = 0
    report = []
    for name in args.only or EXAMPLES:
        print(f"=== {name} ===", flush=True)
        t0 = time.perf_counter()
        try:
            flags = ["--out", args.out, *(["--quick"] if args.quick else [])]
            result = importlib.import_module(name).main(flags)
            files = ", ".join(Path(f).name for f in result.get("files", []))
            report.append(f"{name:<16} ok      {time.perf_counter() - t0:6.1f} s  {files}")
        except Exception:
            traceback.print_exc()
            report.append(f"{name:<16} FAILED  {time.perf_counter() - t0:6.1f} s")
            status = 1
        print(flush=True)
    print("\n".join(report))
    return status


if __name__ == "__main__":
    sys.exit(main())
