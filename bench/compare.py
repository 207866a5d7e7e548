"""incast-8 side by side: rdmasim, a SimPy model and stock ns-3 from PyPI.

Runs each simulator's model (bench/models/*_incast.py) in its own subprocess (one process tree),
``--repeat`` times in that process, and reports the median data packets per wall second, the ratio
rdmasim / other, a JSON file and a PNG bar chart under bench/results/.

    python bench/compare.py                      # 10 MB per sender (80k packets), repeat 3
    python bench/compare.py --size 100MB         # 800k packets (SimPy's Store FIFO takes minutes)
    python bench/compare.py --quick              # 1 MB per sender, repeat 1, no plot: a smoke run
    python bench/compare.py --only rdmasim,simpy --packets 160000

ns-3 and SimPy are bench-only dependencies (``pip install -e ".[bench]"``); a simulator that cannot
be imported is reported as skipped. What each model times is in its docstring and in the JSON
(``timed``); start-up costs (cppyy/cling for ns-3) are measured and reported, never timed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
sys.path.insert(0, str(MODELS))

from _common import N_SENDERS, PAYLOAD, RESULT_PREFIX  # noqa: E402

SIMULATORS = ("rdmasim", "simpy", "ns3")
IMPORTS = {"rdmasim": "rdmasim", "simpy": "simpy", "ns3": "ns"}  # module whose absence means "skip"
RDMASIM_MODES = ("write1000", "write1MiB", "flows")


def parse_size(text: str) -> int:
    """'10MB' -> 10_000_000 (decimal units, as the issue counts 10 MB = 10k 1000-byte packets)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)(i?)B?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"size {text!r}: write e.g. 10MB, 100MB, 512KB")
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** " KMG".index(m.group(2).upper() or " "))


def available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run_model(sim: str, args: argparse.Namespace, per_sender: int, extra: list[str]) -> dict[str, Any]:
    """Run one model subprocess; returns {"runs": [...], ...} or {"error": ...}."""
    script = MODELS / f"{sim}_incast.py"
    cmd = [sys.executable, str(script), "--senders", str(args.senders), "--packets-per-sender",
           str(per_sender), "--repeat", str(args.repeat), *extra]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"cmd": cmd, "error": f"timed out after {args.timeout} s"}
    process_s = time.perf_counter() - t0
    runs = [json.loads(line[len(RESULT_PREFIX):]) for line in proc.stdout.splitlines()
            if line.startswith(RESULT_PREFIX)]
    if proc.returncode != 0 or len(runs) != args.repeat:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        return {"cmd": cmd, "error": f"exit {proc.returncode}, {len(runs)} results:\n{tail}"}
    return {"cmd": cmd, "runs": runs, "process_s": process_s}


def summarise(name: str, out: dict[str, Any]) -> dict[str, Any]:
    runs = out["runs"]
    walls = [r["wall_s"] for r in runs]
    median_wall = statistics.median(walls)
    first = runs[0]
    pps = [r["packets"] / r["wall_s"] for r in runs]
    return {
        "name": name,
        "label": first["label"],
        "simulator": first["simulator"],
        "scenario": first["scenario"],
        "placeholder": bool(first.get("placeholder")),
        "packets": first["packets"],
        "packets_expected": first["packets_expected"],
        "payload_bytes": first["payload_bytes"],
        "wall_s_median": median_wall,
        "packets_per_s_median": statistics.median(pps),
        "startup_s": first.get("import_s", 0.0),  # paid once per process, not timed
        "first_setup_s": first.get("setup_s"),
        "timed": first["timed"],
        "process_s": out["process_s"],
        "runs": runs,
    }


def table(rows: list[dict[str, Any]], refs: list[dict[str, Any]]) -> str:
    """One ratio column per rdmasim row: that row's packets/s divided by each row's."""
    ratio_heads = [f"{r['name'].replace('rdmasim:', '')}/this" for r in refs]
    head = (f"{'simulator':<62} {'packets':>9} {'wall s':>9} {'packets/s':>12}"
            + "".join(f" {h:>16}" for h in ratio_heads))
    lines = [head, "-" * len(head)]
    for r in rows:
        ratios = "".join(f" {ref['packets_per_s_median'] / r['packets_per_s_median']:>15.2f}x"
                         for ref in refs)
        lines.append(f"{r['label'][:62]:<62} {r['packets']:>9} {r['wall_s_median']:>9.4f} "
                     f"{r['packets_per_s_median']:>12,.0f}{ratios}")
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.7 * len(rows) + 1.8))
    labels = [r["label"] for r in rows]
    values = [r["packets_per_s_median"] for r in rows]
    colors = ["#1f77b4" if r["simulator"] == "rdmasim" else "#7f7f7f" for r in rows]
    bars = ax.barh(range(len(rows)), values, color=colors)
    for bar, r in zip(bars, rows, strict=True):
        if r["placeholder"]:
            bar.set_hatch("//")
            bar.set_facecolor("#ffffff")
            bar.set_edgecolor("#d62728")
        ax.text(bar.get_width() * 1.05, bar.get_y() + bar.get_height() / 2,
                f"{r['packets_per_s_median']:,.0f}", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(min(values) / 2, max(values) * 8)
    ax.set_xlabel("data packets per wall second (median, log scale)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=parse_size, default=None,
                   help="bytes per sender, e.g. 10MB (80k packets in all) or 100MB (800k); default 10MB")
    p.add_argument("--packets", type=int, default=None,
                   help="total data packets over all senders (instead of --size)")
    p.add_argument("--senders", type=int, default=N_SENDERS)
    p.add_argument("--only", default=",".join(SIMULATORS),
                   help="comma-separated subset of rdmasim,simpy,ns3")
    p.add_argument("--repeat", type=int, default=None, help="runs per simulator; the median is reported")
    p.add_argument("--quick", action="store_true",
                   help="CI-like smoke run: 1 MB per sender, repeat 1, no plot (unless overridden)")
    p.add_argument("--rdmasim-modes", default=",".join(RDMASIM_MODES),
                   help="write1000 (1000-byte WRITEs, one per packet) and/or write1MiB (1024-byte "
                        "payloads); the first is the reference of the ratio column")
    p.add_argument("--rdmasim-topology", choices=["auto", "incast", "back_to_back"], default="auto")
    p.add_argument("--rdmasim-cc", choices=["auto", "none", "dcqcn"], default="auto")
    p.add_argument("--simpy-fifo", choices=["store", "deque"], default="store")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per simulator process")
    p.add_argument("--out", type=Path, default=HERE / "results", help="directory for JSON and PNG")
    p.add_argument("--no-plot", action="store_true")
    args = p.parse_args(argv)

    if args.size is not None and args.packets is not None:
        p.error("give --size or --packets, not both")
    if args.packets is not None:
        per_sender = max(1, args.packets // args.senders)
    else:
        size = args.size if args.size is not None else (1_000_000 if args.quick else 10_000_000)
        per_sender = max(1, size // PAYLOAD)
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    no_plot = args.no_plot or args.quick
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = [s for s in only if s not in SIMULATORS]
    if bad:
        p.error(f"--only: unknown {bad}; choose from {','.join(SIMULATORS)}")
    modes = [m.strip() for m in args.rdmasim_modes.split(",") if m.strip()]
    if any(m not in RDMASIM_MODES for m in modes):
        p.error(f"--rdmasim-modes: choose from {','.join(RDMASIM_MODES)}")

    total = per_sender * args.senders
    print(f"incast-{args.senders}: {args.senders} senders x {per_sender:,} packets = {total:,} data packets "
          f"of {PAYLOAD} B, repeat {args.repeat} (median)", flush=True)

    jobs: list[tuple[str, str, list[str]]] = []
    for sim in only:
        if sim == "rdmasim":
            for m in modes:
                jobs.append((f"rdmasim:{m}", sim, ["--mode", m, "--topology", args.rdmasim_topology,
                                                   "--cc", args.rdmasim_cc]))
        elif sim == "simpy":
            jobs.append(("simpy", sim, ["--fifo", args.simpy_fifo]))
        else:
            jobs.append(("ns3", sim, []))

    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for name, sim, extra in jobs:
        if not available(IMPORTS[sim]):
            skipped[name] = f"module {IMPORTS[sim]!r} not installed (pip install -e \".[bench]\")"
            print(f"  {name}: skipped ({skipped[name]})", flush=True)
            continue
        print(f"  {name}: running ...", end="", flush=True)
        out = run_model(sim, args, per_sender, extra)
        if "error" in out:
            skipped[name] = out["error"]
            print(f" FAILED: {out['error']}", flush=True)
            continue
        row = summarise(name, out)
        rows.append(row)
        print(f" {row['packets_per_s_median']:,.0f} packets/s (start-up {row['startup_s']:.2f} s, "
              f"process {row['process_s']:.1f} s)", flush=True)
        if row["packets"] != row["packets_expected"]:
            print(f"    note: {row['packets']:,} of {row['packets_expected']:,} packets delivered/sent")

    refs = [r for r in rows if r["simulator"] == "rdmasim"]
    ref = refs[0] if refs else None
    print()
    print(table(rows, refs))
    if ref is not None:
        if ref["placeholder"]:
            print("\nrdmasim rows are a PLACEHOLDER (back_to_back, one sender, no switch): no "
                  "rdmasim.topology.incast, or --rdmasim-topology back_to_back. Not incast-8 figures.")
        print("\nratio columns: that rdmasim row's packets/s divided by each row's (>1: rdmasim faster).")
    for r in rows:
        if r["startup_s"] > 1:
            print(f"{r['name']}: start-up {r['startup_s']:.1f} s (import/JIT, not timed); "
                  f"first setup {r['first_setup_s']:.2f} s; timed: {r['timed']}")
    for name, why in skipped.items():
        print(f"skipped {name}: {why.splitlines()[0]}")

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path = args.out / f"compare-{stamp}.json"
    ratios = {f"{a['name']} / {b['name']}": a["packets_per_s_median"] / b["packets_per_s_median"]
              for a in refs for b in rows if a is not b}
    doc = {
        "scenario": f"incast-{args.senders}",
        "senders": args.senders,
        "packets_per_sender": per_sender,
        "packets_total": total,
        "payload_bytes": PAYLOAD,
        "repeat": args.repeat,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "processor": platform.processor()},
        "ratios": ratios,
        "results": rows,
        "skipped": skipped,
    }
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\nwrote {json_path}")
    if rows and not no_plot:
        png = json_path.with_suffix(".png")
        placeholder = ("\nrdmasim: PLACEHOLDER back_to_back, 1 sender, not incast-8"
                       if ref and ref["placeholder"] else "")
        plot(rows, png, f"incast-{args.senders}, {total:,} data packets, median of {args.repeat}"
             f"{placeholder}")
        print(f"wrote {png}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
