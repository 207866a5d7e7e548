"""incast-8 side by side: rdmasim, a SimPy model and stock ns-3 from PyPI.

Runs each simulator's model (bench/models/*_incast.py) in its own subprocess, ``--repeat`` times in
that process (``--processes`` fresh processes each), and reports for every row:

* what it simulates (footnotes), the payload bytes per data packet, data packets delivered once
  (first transmissions, from the simulation's own counters) and retransmissions apart, QPs per
  sender, ECN marks and CNPs, events and frames (every hop) per data packet;
* two timings: "run only" (the event loop: ``sim.wait_for`` / ``sim.run_flows``,
  ``Simulator::Run()``, ``env.run()``; median over every run) and "whole job" (import + topology
  and setup + run of a fresh process's first run; median over the processes);
* data packets per second of each, and each row's rate divided by the reference row's (``--ref``).

    python bench/compare.py                      # 10 MB per sender (80k packets), repeat 3
    python bench/compare.py --packets 800000     # 800k packets (SimPy's Store FIFO takes minutes)
    python bench/compare.py --quick              # 1 MB per sender, repeat 1, no plot: a smoke run
    python bench/compare.py --only rdmasim,simpy --packets 160000

Writes a JSON file, the table as Markdown and a PNG bar chart under bench/results/. ns-3 and SimPy
are bench-only dependencies (``pip install -e ".[bench]"``); a simulator that cannot be imported is
reported as skipped.
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

from incast_common import N_SENDERS, PAYLOAD, RESULT_PREFIX  # noqa: E402

SIMULATORS = ("rdmasim", "simpy", "ns3")
IMPORTS = {"rdmasim": "rdmasim", "simpy": "simpy", "ns3": "ns"}  # module whose absence means "skip"
RDMASIM_MODES = ("flows", "flows1qp", "write1MiB", "write1000")
#: per-run counts that must not change between runs of one row (same seed, same code)
COUNTS = ("packets", "packets_retx", "events", "frames", "ecn_marks", "cnps")


def parse_size(text: str) -> int:
    """'10MB' -> 10_000_000 (decimal units: 10 MB = 10k packets of 1000 payload bytes)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)(i?)B?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"size {text!r}: write e.g. 10MB, 100MB, 512KB")
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** " KMG".index(m.group(2).upper() or " "))


def available(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run_model(sim: str, args: argparse.Namespace, per_sender: int, extra: list[str]) -> dict[str, Any]:
    """Run ``args.processes`` model subprocesses one after another; returns {"runs": [...], ...}
    (each run has ``process``, its process's index) or {"error": ...}."""
    script = MODELS / f"{sim}_incast.py"
    cmd = [sys.executable, str(script), "--senders", str(args.senders), "--packets-per-sender",
           str(per_sender), "--repeat", str(args.repeat), *extra]
    runs: list[dict[str, Any]] = []
    process_s: list[float] = []
    for proc_i in range(args.processes):
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return {"cmd": cmd, "error": f"timed out after {args.timeout} s"}
        process_s.append(time.perf_counter() - t0)
        got = [json.loads(line[len(RESULT_PREFIX):]) for line in proc.stdout.splitlines()
               if line.startswith(RESULT_PREFIX)]
        if proc.returncode != 0 or len(got) != args.repeat:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
            return {"cmd": cmd, "error": f"exit {proc.returncode}, {len(got)} results:\n{tail}"}
        for r in got:
            r["process"] = proc_i
        runs.extend(got)
    return {"cmd": cmd, "runs": runs, "process_s": process_s}


def summarise(name: str, out: dict[str, Any]) -> dict[str, Any]:
    """One table row from a model's runs: counts of the first run (checked equal in every run),
    run-only medians over every run, whole-job medians over each process's first run."""
    runs = out["runs"]
    first = runs[0]
    changed = [k for k in COUNTS if any(r[k] != first[k] for r in runs)]
    if changed:  # the same seed and code simulate the same thing: a difference is worth a look
        print(f"\n    warning: {name}: {changed} differ between runs; the table shows the first run's",
              end="", flush=True)
    cold = [r for r in runs if r["repeat_index"] == 0]  # a fresh process: import + setup + run
    row = {k: first.get(k) for k in (
        "label", "simulator", "mode", "simulates", "scenario", "placeholder", "packets", "packets_expected",
        "packets_retx", "payload_bytes", "qps_per_sender", "ecn_marks", "cnps", "events", "frames",
        "events_per_packet", "frames_per_packet", "counted", "timed_run", "timed_whole", "sim_time_s")}
    row.update({
        "name": name,
        "placeholder": bool(first.get("placeholder")),
        "run_s_median": statistics.median(r["run_s"] for r in runs),
        "packets_per_s_run": statistics.median(r["packets"] / r["run_s"] for r in runs),
        "whole_s_median": statistics.median(r["whole_s"] for r in cold),
        "packets_per_s_whole": statistics.median(r["packets"] / r["whole_s"] for r in cold),
        "import_s_median": statistics.median(r["import_s"] for r in cold),
        "setup_s_first": statistics.median(r["setup_s"] for r in cold),
        "process_s": out["process_s"],
        "counts_differ_between_runs": changed,
        "runs": runs,
    })
    return row


def _num(v: Any, fmt: str) -> str:
    return "–" if v is None else format(v, fmt)


def table_cells(rows: list[dict[str, Any]], ref: dict[str, Any] | None) -> tuple[list[str], list[list[str]]]:
    """Header and cells of the result table; footnote numbers point to what each row simulates."""
    head = ["simulator [what it simulates]", "payload B/pkt", "data pkts (once)", "retx", "QPs/sender",
            "ECN marks", "CNPs", "events/pkt", "frames/pkt", "run only s", "whole job s", "pkts/s run only",
            "pkts/s whole job"]
    if ref is not None:
        head += ["x ref, run only", "x ref, whole job"]
    cells = []
    for i, r in enumerate(rows, 1):
        c = [f"{r['label']} [{i}]", _num(r["payload_bytes"], ".0f"), f"{r['packets']:,}",
             f"{r['packets_retx']:,}", _num(r["qps_per_sender"], "d"), _num(r["ecn_marks"], ","),
             _num(r["cnps"], ","), _num(r["events_per_packet"], ".2f"), _num(r["frames_per_packet"], ".2f"),
             f"{r['run_s_median']:.3f}", f"{r['whole_s_median']:.2f}", f"{r['packets_per_s_run']:,.0f}",
             f"{r['packets_per_s_whole']:,.0f}"]
        if ref is not None:
            c += [f"{r['packets_per_s_run'] / ref['packets_per_s_run']:.2f}",
                  f"{r['packets_per_s_whole'] / ref['packets_per_s_whole']:.2f}"]
        cells.append(c)
    return head, cells


def footnotes(rows: list[dict[str, Any]]) -> list[str]:
    return [f"[{i}] {r['simulates']}. Counted: {r['counted']}; run only: {r['timed_run']}; whole job: "
            f"{r['timed_whole']}." for i, r in enumerate(rows, 1)]


def table(rows: list[dict[str, Any]], ref: dict[str, Any] | None) -> str:
    """The result table as aligned text."""
    head, cells = table_cells(rows, ref)
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=True)]
    fmt = [f"{{:<{w}}}" if j == 0 else f"{{:>{w}}}" for j, w in enumerate(widths)]
    lines = [" ".join(f.format(h) for f, h in zip(fmt, head, strict=True))]
    lines.append("-" * len(lines[0]))
    lines += [" ".join(f.format(x) for f, x in zip(fmt, c, strict=True)) for c in cells]
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]], ref: dict[str, Any] | None) -> str:
    """The result table as Markdown, with its footnotes."""
    head, cells = table_cells(rows, ref)
    out = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    out += ["| " + " | ".join(c) + " |" for c in cells]
    return "\n".join(out + [""] + footnotes(rows))


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.9 * len(rows) + 1.8))
    labels = [r["label"] for r in rows]
    h = 0.4
    for k, (key, color, what) in enumerate((("packets_per_s_run", "#1f77b4", "run only"),
                                            ("packets_per_s_whole", "#aec7e8", "whole job"))):
        values = [r[key] for r in rows]
        bars = ax.barh([i + k * h for i in range(len(rows))], values, height=h, color=color, label=what)
        for bar, r in zip(bars, rows, strict=True):
            if r["placeholder"]:
                bar.set_hatch("//")
            ax.text(bar.get_width() * 1.05, bar.get_y() + bar.get_height() / 2, f"{r[key]:,.0f}",
                    va="center", fontsize=7)
    ax.set_yticks([i + h / 2 for i in range(len(rows))], labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    every = [r[k] for r in rows for k in ("packets_per_s_run", "packets_per_s_whole")]
    ax.set_xlim(min(every) / 2, max(every) * 4)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel("data packets delivered once per wall second (median, log scale)")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=parse_size, default=None,
                   help="bytes per sender in 1000-byte packets, e.g. 10MB (80k packets in all) or "
                        "100MB (800k); default 10MB")
    p.add_argument("--packets", type=int, default=None,
                   help="total data packets over all senders (instead of --size)")
    p.add_argument("--senders", type=int, default=N_SENDERS)
    p.add_argument("--only", default=",".join(SIMULATORS),
                   help="comma-separated subset of rdmasim,simpy,ns3")
    p.add_argument("--repeat", type=int, default=None,
                   help="runs per process; run-only figures are their median")
    p.add_argument("--processes", type=int, default=1,
                   help="fresh processes per row (default 1); whole-job figures are the median of "
                        "their first runs")
    p.add_argument("--quick", action="store_true",
                   help="CI-like smoke run: 1 MB per sender, repeat 1, no plot (unless overridden)")
    p.add_argument("--rdmasim-modes", default=",".join(RDMASIM_MODES),
                   help=f"comma-separated subset of {','.join(RDMASIM_MODES)} "
                        "(see bench/models/rdmasim_incast.py)")
    p.add_argument("--rdmasim-topology", choices=["auto", "incast", "back_to_back"], default="auto")
    p.add_argument("--rdmasim-cc", choices=["auto", "none", "dcqcn"], default="auto")
    p.add_argument("--rdmasim-loss", type=float, default=0.0,
                   help="i.i.d. loss of data frames into the receiver in the rdmasim rows (default 0)")
    p.add_argument("--simpy-fifo", choices=["store", "deque"], default="store")
    p.add_argument("--ref", default=None,
                   help="row whose packets/s the ratio columns divide by (default ns3 when it ran, "
                        "else the first)")
    p.add_argument("--timeout", type=float, default=3600, help="seconds per simulator process")
    p.add_argument("--out", type=Path, default=HERE / "results", help="directory for JSON, Markdown and PNG")
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
    if args.repeat < 1 or args.processes < 1:
        p.error(f"--repeat {args.repeat} / --processes {args.processes}: each must be at least 1")
    no_plot = args.no_plot or args.quick
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    bad = [s for s in only if s not in SIMULATORS]
    if bad:
        p.error(f"--only: unknown {bad}; choose from {','.join(SIMULATORS)}")
    modes = [m.strip() for m in args.rdmasim_modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in RDMASIM_MODES]
    if bad:
        p.error(f"--rdmasim-modes: unknown {bad}; choose from {','.join(RDMASIM_MODES)}")

    total = per_sender * args.senders
    print(f"incast-{args.senders}: {args.senders} senders x {per_sender:,} data packets = {total:,}, "
          f"{args.processes} process(es) x {args.repeat} run(s) per row", flush=True)

    jobs: list[tuple[str, str, list[str]]] = []
    for sim in only:
        if sim == "rdmasim":
            for m in modes:
                jobs.append((f"rdmasim:{m}", sim, ["--mode", m, "--topology", args.rdmasim_topology, "--cc",
                                                   args.rdmasim_cc, "--loss", str(args.rdmasim_loss)]))
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
        print(f" {row['packets_per_s_run']:,.0f} packets/s run only, "
              f"{row['packets_per_s_whole']:,.0f} whole job", flush=True)
        if row["packets"] != row["packets_expected"]:
            print(f"    note: {row['packets']:,} of {row['packets_expected']:,} data packets delivered")

    names = {r["name"]: r for r in rows}
    if args.ref is not None and args.ref not in names:
        print(f"--ref {args.ref!r}: no such row (rows: {', '.join(names)})", file=sys.stderr)
        return 2
    ref = names.get(args.ref or "ns3") or (rows[0] if rows else None)
    print()
    print(table(rows, ref))
    print()
    print("\n".join(footnotes(rows)))
    if ref is not None:
        print(f"\nx ref columns: this row's data packets/s divided by {ref['name']}'s (>1: faster). "
              "On a shared, noisy machine compare ratios within one run, not figures across runs.")
    if any(r["placeholder"] for r in rows):
        print("\nrdmasim rows marked PLACEHOLDER ran back_to_back (one sender, no switch): "
              "not incast-8 figures.")
    for name, why in skipped.items():
        print(f"skipped {name}: {why.splitlines()[0]}")

    args.out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    json_path = args.out / f"compare-{stamp}.json"
    ratios = {t: {f"{a['name']} / {b['name']}": a[f"packets_per_s_{t}"] / b[f"packets_per_s_{t}"]
                  for a in rows for b in rows if a is not b} for t in ("run", "whole")}
    command = " ".join([Path(sys.executable).name, *sys.argv]) if argv is None else " ".join(
        ["python", "bench/compare.py", *argv])
    doc = {
        "scenario": f"incast-{args.senders}",
        "senders": args.senders,
        "packets_per_sender": per_sender,
        "packets_total": total,
        "repeat": args.repeat,
        "processes": args.processes,
        "reference": ref["name"] if ref else None,
        "command": command,
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": os.cpu_count(), "processor": platform.processor(),
                    "load_avg": os.getloadavg()},
        "ratios": ratios,
        "results": rows,
        "skipped": skipped,
        "markdown": markdown(rows, ref),
    }
    json_path.write_text(json.dumps(doc, indent=2) + "\n")
    json_path.with_suffix(".md").write_text(f"`{command}`\n\n{doc['markdown']}\n")
    print(f"\nwrote {json_path} and {json_path.with_suffix('.md').name}")
    if rows and not no_plot:
        png = json_path.with_suffix(".png")
        plot(rows, png, f"incast-{args.senders}, {total:,} data packets; run only: median of "
             f"{args.repeat * args.processes} runs, whole job: a fresh process's first run")
        print(f"wrote {png}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
