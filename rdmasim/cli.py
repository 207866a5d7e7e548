"""Command line: ``rdmasim demo``, ``rdmasim trace``, ``rdmasim run``, ``rdmasim validate``,
``rdmasim sweep`` and ``rdmasim pyverbs-run``.

Errors: :func:`main` is the one place where errors reach the user. A problem with what the user
gave (a scenario file, a key, an argument, an output folder, a full disk) is printed as one line
per problem, naming the file, key or argument, the value and what is allowed, and the exit status
is 2; Ctrl-C exits with 130 after saying what was kept, and during ``run`` SIGTERM and SIGHUP
likewise with 143 and 129 (128 + the signal number; a SIGHUP ignored by ``nohup`` stays
ignored). A Ctrl-C while the command is still starting is one line too. Only a bug in rdmasim
shows a traceback (``-v`` adds the traceback to any error, for a bug report).

``-q`` turns the progress bars off (they are drawn only on a terminal anyway); ``-v`` shows more:
every flow in ``run``'s summary, every file the demo wrote, every failed sweep run in full.
"""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import Any, NoReturn

# only light modules at import time (no numpy, no C core): a Ctrl-C while the rest loads is then
# caught by main()
from rdmasim import __version__
from rdmasim.units import format_rate, format_time, parse_rate, parse_size, parse_time

#: exit statuses
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130


class _Signals:
    """SIGTERM and SIGHUP handled as Ctrl-C (KeyboardInterrupt: a run stops and keeps what it did);
    remembers which signal came, for the message and the exit status 128 + its number."""

    CAUGHT = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.signum = int(signal.SIGINT)
        self.previous: dict[int, Any] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.signum = signum
        raise KeyboardInterrupt

    def install(self) -> None:
        """Handle SIGTERM and SIGHUP (not one that is ignored, as under nohup); only in the main
        thread (elsewhere Python allows no handlers)."""
        import threading

        if threading.current_thread() is not threading.main_thread():
            return
        for sig in self.CAUGHT:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                self.previous[sig] = signal.signal(sig, self._handler)

    def restore(self) -> None:
        """Put back the handlers :meth:`install` replaced."""
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        self.previous.clear()

    @property
    def exit_status(self) -> int:
        """128 + the number of the signal that stopped the command (130 for Ctrl-C)."""
        return 128 + self.signum

    @property
    def by(self) -> str:
        """`` by SIGTERM`` (nothing for Ctrl-C): for the messages."""
        return "" if self.signum == signal.SIGINT else f" by {signal.Signals(self.signum).name}"


def _demo(args: argparse.Namespace) -> int:
    from rdmasim.demo import DemoConfig, format_summary, run_demo

    cfg = DemoConfig(size_bytes=parse_size(args.size), messages=args.messages, mtu=args.mtu,
                     rate=args.rate, delay=args.delay, loss=args.loss, timeout=args.timeout,
                     seed=args.seed)
    print(f"rdmasim {__version__} demo: RDMA WRITE of {cfg.size_bytes:,} bytes in {cfg.messages} "
          f"message(s), back to back at {format_rate(parse_rate(cfg.rate))}, "
          f"{format_time(parse_time(cfg.delay))} delay, MTU {cfg.mtu}, "
          f"i.i.d. loss {cfg.loss:g} each way, seed {cfg.seed}")
    summary = run_demo(args.out, cfg, plot=not args.no_plot)
    print(format_summary(summary), flush=True)
    print(f"  open the capture with: wireshark {summary['pcap']}   (or tshark -r ...)")
    ok = summary["data_intact"] and list(summary["completions"]) == ["IBV_WC_SUCCESS"]
    if not args.no_scenarios:
        ok = _demo_scenarios(args.out, args) and ok
    return 0 if ok else 1


def _progress(args: argparse.Namespace) -> bool | None:
    """Progress bars: none under -q, else on a terminal (None lets the bar decide)."""
    return False if args.quiet else None


def _demo_scenarios(out: str, args: argparse.Namespace) -> bool:
    from pathlib import Path

    from rdmasim.demo_scenarios import BUNDLED, run_bundled
    from rdmasim.units import format_time

    print(f"\nbundled scenarios ({len(BUNDLED)}), each into {Path(out) / 'scenarios'}/<name>/:", flush=True)
    all_ok = True
    for name in BUNDLED:
        (r,) = run_bundled(Path(out) / "scenarios", [name], progress=_progress(args))
        all_ok = all_ok and r["completed"] == r["flows"]
        sd = "-" if r["median_slowdown"] is None else f"{r['median_slowdown']:.2f} / {r['p99_slowdown']:.2f}"
        print(f"  {r['name']}: {r['what']}")
        print(f"    flows {r['completed']}/{r['flows']} completed, FCT slowdown median/p99 {sd}, "
              f"simulated {format_time(r['sim_time_ps'])} in {r['wall_s']:.2f} s ({r['events']:,} events)")
        plots = sorted(v for k, v in r["files"].items() if k.startswith("plot_"))
        table = r["files"].get("flows_parquet") or r["files"]["flows_csv"]
        print(f"    {table}; plots: {', '.join(Path(p).name for p in plots)}", flush=True)
        if args.verbose:
            for kind, path in sorted(r["files"].items()):
                print(f"      {kind}: {path}")
    return all_ok


def _trace(args: argparse.Namespace) -> int:
    """Print the ladder diagram of a saved trace (FILE.npz), of a scenario (FILE.toml) or of the
    built-in teaching run, in the window the options choose (the same in every output)."""
    from rdmasim import ladder
    from rdmasim.trace import load

    if args.file and str(args.file).endswith(".toml"):
        t = _trace_scenario(args.file, progress=_progress(args))
        title = f"rdmasim trace {args.file}"
    elif args.file:
        t = _load_trace(args.file, load)
        title = f"rdmasim trace {args.file}"
    else:
        drops = [] if args.drop_psn is None or args.drop_psn < 0 else [args.drop_psn]
        size = parse_size(args.size)
        t = ladder.example_write(size=size, mtu=args.mtu, drop_psn=drops, loss=args.loss, op=args.op,
                                 seed=args.seed, timeout=args.timeout, pcap=args.pcap,
                                 recovery=args.recovery)
        what = "RDMA WRITE" if args.op == "write" else "SEND"
        dropped = f", PSN {drops[0]} dropped once" if drops else ""
        title = f"{what} of {size:,} bytes a -> b, MTU {args.mtu}, loss {args.loss:g}{dropped}"
        if args.format == "text":
            print(f"rdmasim {__version__} trace: {title}")
    # the window is found once and every output draws it (a check before any file is written)
    v = ladder.view(t, start=args.start, end=args.end, around=args.around,
                    max_frames=args.max_frames, focus=True)
    if args.format == "mermaid":
        print(ladder.mermaid_string(v, title=title), end="")
    else:
        print(ladder.render_text(v, ascii=args.ascii, max_lines=args.max_lines, state=args.state))
    out = sys.stdout if args.format == "text" else sys.stderr
    if args.svg:
        print(f"  SVG: {ladder.render_svg(v, args.svg, title=title)}", file=out)
    if args.html:
        print(f"  HTML: {ladder.render_html(v, args.html, title=title)}", file=out)
    if args.mermaid:
        print(f"  Mermaid: {ladder.render_mermaid(v, args.mermaid, title=title)}", file=out)
    if args.save:
        print(f"  trace: {t.save(args.save)}", file=out)
    if args.pcap and not args.file:
        print(f"  pcap: {args.pcap}", file=out)
    return 0


def _load_trace(path: str, load: Any) -> Any:
    """A saved trace, or a UserInputError naming the file (missing, empty, not a trace)."""
    import zipfile

    from rdmasim.errors import UserInputError

    try:
        return load(path)
    except OSError as exc:
        raise UserInputError(f"trace file {path!r}: cannot read: {exc.strerror or exc}") from None
    except (EOFError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise UserInputError(
            f"trace file {path!r}: not a trace saved by rdmasim ({type(exc).__name__}: {exc}) "
            "(allowed: a .npz written by --save or Trace.save, or a scenario .toml)") from None


def _trace_scenario(path: str, progress: bool | None = False) -> Any:
    """Run a scenario file with tracing on (results in a temporary folder) and return its trace;
    ``progress`` as for ``rdmasim run`` (a bar on a terminal, none under -q)."""
    import tempfile

    from rdmasim.scenario import load as load_scenario
    from rdmasim.scenario import run_scenario
    from rdmasim.trace import load

    sc = load_scenario(path)
    sc.values["outputs.trace"] = True
    with tempfile.TemporaryDirectory() as tmp:
        result = run_scenario(sc, tmp, progress=progress)
        return load(result.files["trace"])


def _validate(args: argparse.Namespace) -> int:
    """Check a scenario file: print "ok" with the estimate (exit 0) or every problem (exit 2)."""
    from rdmasim.results import stale_staging
    from rdmasim.scenario import load
    from rdmasim.scenario.check import validate

    sc = load(args.file)
    est, warnings = validate(sc, args.max_memory)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    for f in stale_staging(sc.values["outputs.dir"]) if sc.values["outputs.dir"] else []:
        what = (f"left by process {f.pid}, no longer running: `rdmasim run` removes it" if f.pid is not None
                else "left by an earlier rdmasim: remove it by hand if no run is writing it")
        print(f"warning: {f.path} ({_size(f.size_bytes)}): a results folder's hidden staging folder {what}",
              file=sys.stderr)
    print(f"{args.file}: ok; {est.describe()}")
    return 0


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n:,} bytes"


def _remove_stale(out: str) -> None:
    """Remove the hidden staging folders dead runs left beside ``out``, saying which."""
    from rdmasim.results import remove_stale_staging

    for f in remove_stale_staging(out) if out else []:
        print(f"rdmasim run: removed {f.path} ({_size(f.size_bytes)}): the unfinished results of process "
              f"{f.pid}, which is no longer running", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    """Run a scenario file: progress on stderr, summary table, results folder."""
    from rdmasim.scenario import load, run_scenario
    from rdmasim.scenario.check import validate
    from rdmasim.scenario.load import parse_assignments
    from rdmasim.scenario.run import results_dir

    overrides = parse_assignments(args.set or [], "--set")
    if args.seed is not None:
        if "simulation.seed" in overrides:
            raise ValueError("--seed and --set simulation.seed both given (allowed: one of them)")
        overrides["simulation.seed"] = args.seed
    sc = load(args.file, overrides)
    out, note = results_dir(sc, args.out)
    _remove_stale(out)  # before the free space is measured
    _, warnings = validate(sc, args.max_memory, build=False, out_dir=out)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if args.verbose:
        from rdmasim.scenario.check import estimate

        print(f"{args.file}: {estimate(sc).describe()}", file=sys.stderr)
    res = run_scenario(sc, out_dir=out, progress=_progress(args))
    print(f"rdmasim {__version__} run {args.file} (seed {res.seed})")
    print(res.summary(max_rows=None if args.verbose else 20))
    if res.files:
        print(f"results: {out}" + (f" ({note})" if note else ""))
    for kind, path in res.files.items():
        print(f"  {kind}: {path}")
    if res.interrupted:
        where = f"; partial results (metadata.json: \"complete\": false) in {res.files['metadata']}" if (
            "metadata" in res.files) else "; nothing written"
        from rdmasim.units import format_time

        sigs = args.signals
        print(f"rdmasim run: interrupted{sigs.by} at simulated time {format_time(res.sim_time_ps)}: "
              f"{sum(f.status == 'ok' for f in res.flows)} of {len(res.flows)} flows finished{where}",
              file=sys.stderr)
        return int(sigs.exit_status)
    return 0 if all(f.status == "ok" for f in res.flows) else 1


def _sweep(args: argparse.Namespace) -> int:
    """Run a scenario over a parameter grid into one SQLite store; print a table per combination."""
    from pathlib import Path

    from rdmasim.sweep import run_sweep
    from rdmasim.sweep.grid import normalize_params

    params = normalize_params(args.param or [])
    if args.x is not None and args.x not in params:
        raise ValueError(f"--x {args.x!r}: not a swept parameter (allowed: {', '.join(params) or 'none'})")
    res = run_sweep(
        args.file,
        params,
        args.out or str(Path("sweeps") / Path(args.file).stem),
        seeds=args.seeds,
        executor="dask" if args.dask_local else None,
        scheduler=args.scheduler,
        max_workers=args.workers,
        resume=not args.no_resume,
        keep_runs=args.keep_runs,
        new_version=args.new_version,
        progress=_progress(args),
    )
    runs = res.runs_records()
    failed = [r for r in runs if r["status"] == "error"]
    cut = [r for r in runs if r["status"] == "incomplete"]
    unfinished = sum(r["unfinished"] or 0 for r in cut)
    where = f" on {res.executor}" if res.executor else ""
    print(
        f"rdmasim {__version__} sweep {args.file}: {len(runs)} runs: {res.ran} ran{where}, "
        f"{res.skipped} already in the store, {len(failed)} failed, {len(cut)} incomplete"
        + (f" ({unfinished} flows unfinished)" if cut else "")
    )
    print(res.summary_text())
    if not args.no_plot and runs and len(failed) < len(runs):
        from rdmasim.plots import save

        metric = args.metric or res.default_metric()
        rows = res.summary_rows()
        if not params:
            print("  plot: none (no --param to draw the metric against)")
        elif all(r[metric] is None for r in rows):
            print(f"  plot: none (no run has a value of {metric})")
        else:
            (png,) = save(res.plot(metric, x=args.x), res.out_dir / metric, formats=("png",))
            print(f"  plot: {png}")
    for r in cut if args.verbose else cut[:5]:
        errs = r["flow_errors"] or 0
        running = r["unfinished"] - errs
        why = [f"{running} still running at {format_time(r['sim_time_ps'])}" if running else "",
               f"{errs} ended by an error completion" if errs else ""]
        print(f"  incomplete run {r['run_name'] or r['run_key']}: {r['unfinished']} of {r['flows']} flows "
              f"unfinished ({', '.join(w for w in why if w)})")
    if len(cut) > 5 and not args.verbose:
        print(f"  ... {len(cut) - 5} more incomplete runs (-v lists them all)")
    for r in failed if args.verbose else failed[:5]:
        lines = (r["error"] or "").strip().splitlines() or ["?"]
        print(f"  failed run {r['run_name'] or r['run_key']}: {lines[-1]}")
        if args.verbose:
            print("\n".join(f"    {ln}" for ln in lines[:-1]))
    if len(failed) > 5 and not args.verbose:
        print(f"  ... {len(failed) - 5} more failed runs (-v lists them all)")
    print(f"  store: {res.store_path}")
    return 1 if failed or cut else 0


U63 = (1 << 63) - 1


def _int_arg(lo: int, hi: int) -> Any:
    """An argparse type: an integer in [lo, hi] (argparse names the argument in its error)."""

    def conv(text: str) -> int:
        try:
            v = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer (allowed: {lo}..{hi})") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text} is out of range (allowed: {lo}..{hi})")
        return v

    conv.__name__ = "integer"
    return conv


def _prob_arg(text: str) -> float:
    """An argparse type: a probability in [0, 1] (NaN refused)."""
    from rdmasim.checks import check_real

    try:
        return check_real("value", float(text), 0.0, 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability (allowed: 0..1)") from None


def _size_arg(text: str) -> int:
    """An argparse type: a size like 8GB (or bytes)."""
    try:
        v = parse_size(text)
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{exc} (allowed: a size like 8GB)") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1 byte")
    return v


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``rdmasim run: error: argument --seed: ... (see --help)``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USER_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from rdmasim.sweep.grid import MAX_RUNS

    # -q / -v, accepted before or after the command (rdmasim -q run f.toml, rdmasim run f.toml -q)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars")
    common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                        help="more detail: every flow in the summary, every file written, full errors")
    p = _Parser(prog="rdmasim", description="Packet-level RDMA (RoCEv2) emulator", parents=[common])
    p.add_argument("--version", action="version", version=f"rdmasim {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=help)

    d = cmd("demo", "a lossy back-to-back RDMA WRITE (summary, plot, pcap), then the "
                       "bundled scenarios (tables, time series, plots)")
    d.add_argument("--out", default="rdmasim-demo", help="output folder (default: rdmasim-demo)")
    d.add_argument("--size", default="4MiB", help="total bytes to write (default 4MiB)")
    d.add_argument("--messages", type=_int_arg(1, 1 << 20), default=4,
                   help="number of WRITE work requests (default 4)")
    d.add_argument("--mtu", type=int, default=1024, choices=[256, 512, 1024, 2048, 4096])
    d.add_argument("--rate", default="100Gbps", help="link rate (default 100Gbps)")
    d.add_argument("--delay", default="1us", help="propagation delay (default 1us)")
    d.add_argument("--loss", type=_prob_arg, default=0.001, help="i.i.d. loss per direction (default 0.001)")
    d.add_argument("--timeout", type=_int_arg(0, 31), default=10,
                   help="QP local ACK timeout exponent: 4.096us * 2^t (default 10 = 4.2 ms)")
    d.add_argument("--seed", type=_int_arg(0, U63), default=1)
    d.add_argument("--no-plot", action="store_true", help="skip the PNG plot")
    d.add_argument("--no-scenarios", action="store_true",
                   help="skip the bundled scenarios (incast with DCQCN, ring all-reduce, web-search)")
    d.set_defaults(func=_demo)
    t = cmd("trace", "ladder diagram of a small teaching run (or of a saved trace)")
    t.add_argument("file", nargs="?", help="a trace saved with Trace.save / --save (.npz); "
                   "default: run the built-in scenario")
    t.add_argument("--op", default="write", choices=["write", "send"], help="verb to run (default write)")
    t.add_argument("--size", default="3072", help="message bytes (default 3072: 3 packets at MTU 1024)")
    t.add_argument("--mtu", type=int, default=1024, choices=[256, 512, 1024, 2048, 4096])
    t.add_argument("--drop-psn", type=_int_arg(-1, (1 << 24) - 1), default=1,
                   help="drop the first transmission of this PSN a->b (default 1; -1: none)")
    t.add_argument("--loss", type=_prob_arg, default=0.0, help="i.i.d. loss per direction (default 0)")
    t.add_argument("--timeout", type=_int_arg(0, 31), default=10,
                   help="QP local ACK timeout exponent: 4.096us * 2^t (default 10)")
    t.add_argument("--seed", type=_int_arg(0, U63), default=1)
    t.add_argument("--recovery", default="gbn", choices=["gbn", "irn"],
                   help="loss recovery: Go-Back-N (default) or IRN selective repeat")
    t.add_argument("--ascii", action="store_true", help="draw with ASCII characters only")
    t.add_argument("--format", choices=["text", "mermaid"], default="text",
                   help="what to print: the text ladder (default) or a Mermaid sequence diagram")
    t.add_argument("--state", action="store_true",
                   help="text: note each QP's requester window and responder expected PSN as they change")
    win = t.add_argument_group(
        "window (applies to every output)",
        "A trace of more than 200 frames with no window focuses on its first loss (or NAK, "
        "timeout, error completion), 60 frames, and says so (--max-frames 0: all frames).")
    win.add_argument("--from", dest="start", metavar="TIME", default=None,
                     help="first send time shown, with units (e.g. 12us, 1.5ms)")
    win.add_argument("--to", dest="end", metavar="TIME", default=None, help="last send time shown")
    win.add_argument("--around", metavar="ANCHOR", default=None,
                     help="first-loss, first-nak, first-timeout, first-retry, first-error, psn=N, "
                     "t=TIME, or qp=N (only that QP's frames and events)")
    win.add_argument("--max-frames", type=_int_arg(0, (1 << 31) - 1), default=None, metavar="N",
                     help="at most N frames (0: all; default 40 around an anchor)")
    t.add_argument("--max-lines", type=_int_arg(0, (1 << 31) - 1), default=None,
                   help="text: print at most this many events")
    t.add_argument("--svg", metavar="PATH", help="also write the ladder as SVG")
    t.add_argument("--html", metavar="PATH",
                   help="also write a self-contained HTML page (click a frame for its headers, step "
                   "event by event)")
    t.add_argument("--mermaid", metavar="PATH", help="also write a Mermaid sequence diagram (.mmd)")
    t.add_argument("--save", metavar="PATH", help="also save the trace (.npz) for `rdmasim trace FILE`")
    t.add_argument("--pcap", metavar="PATH", help="also capture the run to a pcap file")
    t.set_defaults(func=_trace)
    r = cmd("run", "run a scenario file (TOML): summary table and results folder")
    r.add_argument("file", help="scenario file (see docs/scenarios.md)")
    r.add_argument("--out", default=None, help="results folder (default: [outputs] dir, else "
                   "results/<file stem>, numbered -2, -3, ... when it holds an earlier run)")
    r.add_argument("--seed", type=_int_arg(0, U63), default=None, help="override [simulation] seed")
    r.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="set a key path to a value (TOML syntax, as sweep's --param), e.g. link.loss=0.01 "
                   "or flows[].size=64KiB; repeat for more keys")
    r.add_argument("--max-memory", type=_size_arg, default=None, metavar="SIZE",
                   help="refuse runs estimated to need more (default: this machine's RAM)")
    r.set_defaults(func=_run)
    v = cmd("validate", "check a scenario file; exit 2 listing every problem")
    v.add_argument("file", help="scenario file")
    v.add_argument("--max-memory", type=_size_arg, default=None, metavar="SIZE",
                   help="refuse runs estimated to need more (default: this machine's RAM)")
    v.set_defaults(func=_validate)
    sw = cmd("sweep", "run a scenario over a parameter grid; results in one SQLite store")
    sw.add_argument("file", help="scenario file")
    sw.add_argument("--param", action="append", metavar="KEY=V1,V2",
                    help="a key path and its values (TOML syntax), e.g. link.loss=0,0.01 or "
                    "flows[].size=64KiB,1MiB; repeat for a grid (the cartesian product)")
    sw.add_argument("--seeds", type=_int_arg(1, MAX_RUNS), default=None, metavar="N",
                    help="N replicates of each combination: simulation.seed = 1..N")
    sw.add_argument("--out", default=None, help="sweep folder (default: sweeps/<file stem>)")
    sw.add_argument("--workers", type=_int_arg(1, 1024), default=None,
                    help="worker processes (default: one per core)")
    where = sw.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR",
                       help="run on this Dask scheduler (tcp://host:port; its workers need rdmasim)")
    where.add_argument("--dask-local", action="store_true", help="run on a local Dask cluster")
    sw.add_argument("--no-resume", action="store_true",
                    help="run every run again, even those the store has as ok")
    sw.add_argument("--keep-runs", action="store_true",
                    help="also keep each run's folder, named by its parameters (runs/algorithm=dcqcn,seed=1)")
    sw.add_argument("--new-version", action="store_true",
                    help="the scenario (or rdmasim) changed since the store's last sweep: keep the "
                    "stored runs apart and start this version in the same --out (refused otherwise)")
    from rdmasim.sweep.result import METRICS

    sw.add_argument("--metric", choices=list(METRICS), default=None, metavar="NAME",
                    help="what the plot shows against the swept parameter: " + ", ".join(METRICS)
                    + " (default: collective_time_ps with a collective, else median_slowdown); the plot "
                    "is <out>/<NAME>.png")
    sw.add_argument("--x", default=None, metavar="KEY",
                    help="the parameter on the plot's x axis (default: the numeric one with the most values)")
    sw.add_argument("--no-plot", action="store_true",
                    help="skip the plot (the metric against the swept parameter, a line per other value)")
    sw.set_defaults(func=_sweep)
    pv = cmd("pyverbs-run", "run an unmodified pyverbs program on the emulated devices "
                        "(rxe0, rxe1: two hosts back to back)")
    pv.add_argument("--fabric", default=None, metavar="NAME",
                    help="run on fabric NAME's daemon (started if none runs), shared with other processes "
                         "(client/server programs, forked children, rdma_cm): as `rdmasim exec --fabric NAME "
                         "-- rdmasim pyverbs-run ...`; docs/pyverbs.md")
    pv.add_argument("--host", default=None, help="with --fabric: the host whose device comes first")
    pv.add_argument("script", help="the pyverbs program (.py); `import pyverbs` loads rdmasim.pyverbs")
    pv.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the program")
    pv.set_defaults(func=_pyverbs_run)
    from rdmasim.hpcc.cli import add_commands

    add_commands(cmd)  # import hpcc, export-fct
    from rdmasim.fabricd.cli import add_commands as add_fabric_commands

    add_fabric_commands(cmd)  # exec
    return p


def _pyverbs_run(args: argparse.Namespace) -> int:
    """Run a pyverbs program as __main__ with ``pyverbs`` mapped to rdmasim.pyverbs."""
    import os

    from rdmasim.pyverbs import run_script

    if not os.path.isfile(args.script):
        raise FileNotFoundError(2, "no such file", args.script)
    if args.fabric is not None and not os.environ.get("RDMASIM_FABRIC_SOCKET"):
        from rdmasim.fabricd.launch import exec_program

        exec_program([sys.executable, "-m", "rdmasim", "pyverbs-run", args.script, *args.args],
                     fabric=args.fabric, host=args.host)  # replaces this process
    try:
        run_script(args.script, list(args.args))
    except SystemExit as exc:  # the program's own exit status
        code = exc.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the program failed: its traceback, as `python script.py` prints it
        _print_program_traceback(exc, os.path.abspath(args.script))
        return 1
    return 0


def _print_program_traceback(exc: BaseException, script: str) -> None:
    """Print ``exc``'s traceback from the program's first frame on (rdmasim's CLI and runpy
    frames before it are not the program's). An error rdmasim raised on purpose (a
    PyverbsError: a verbs call refused, as a device refuses it) ends at the program's call: the
    frames inside rdmasim that raised it are left out; any other error keeps all its frames."""
    import os
    import traceback

    from rdmasim.errors import PyverbsError

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep

    def keep(frames: traceback.StackSummary, first_seen: list[bool]) -> traceback.StackSummary:
        out = []
        for f in frames:
            first_seen[0] = first_seen[0] or f.filename == script
            if not first_seen[0]:
                continue
            if isinstance(exc, PyverbsError) and f.filename.startswith(package):
                continue
            out.append(f)
        return traceback.StackSummary.from_list(out)

    te = traceback.TracebackException.from_exception(exc)
    seen = [False]
    te.stack = keep(te.stack, seen)
    if not seen[0]:  # the program's file is not in the traceback (a compile error, say)
        te = traceback.TracebackException.from_exception(exc)
    print("".join(te.format()), end="", file=sys.stderr)


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rdmasim`` command: the one error boundary (see the module docs)."""
    sigs = _Signals()
    prog = "rdmasim"
    try:
        args = build_parser().parse_args(argv)  # loads the modules a command needs
        if args.command == "run":  # (a sweep's parent must not wait for its workers' runs to end)
            sigs.install()
        args.quiet = bool(getattr(args, "quiet", False))
        args.verbose = int(getattr(args, "verbose", 0) or 0)
        args.signals = sigs
        prog = f"rdmasim {args.command}"
        return _dispatch(args, prog)
    except KeyboardInterrupt:  # while starting, a second Ctrl-C, or one while an error is shown
        print(f"{prog}: interrupted{sigs.by}", file=sys.stderr)
        return sigs.exit_status
    finally:
        sigs.restore()


def _detail(args: argparse.Namespace) -> None:
    """Under -v, the traceback of the error just reported (for a bug report)."""
    if args.verbose:
        import traceback

        traceback.print_exc(file=sys.stderr)


def _dispatch(args: argparse.Namespace, prog: str) -> int:
    import sqlite3

    from rdmasim.errors import PyverbsError
    from rdmasim.scenario import ScenarioError

    try:
        return int(args.func(args))
    except ScenarioError as exc:
        for problem in exc.problems:
            print(_one_line(str(problem)), file=sys.stderr)
        print(f"{getattr(args, 'file', prog)}: {len(exc.problems)} problem(s)", file=sys.stderr)
        _detail(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted{args.signals.by}", file=sys.stderr)
        return int(args.signals.exit_status)
    except OSError as exc:  # the environment: a folder, a file, a full disk
        named = exc.filename and str(exc.filename) not in str(exc.strerror or "")
        where = f"{exc.filename}: " if named else ""
        print(f"{prog}: error: {where}{_one_line(exc.strerror or str(exc))}", file=sys.stderr)
        _detail(args)
    except sqlite3.Error as exc:
        print(f"{prog}: error: sweep store: {_one_line(str(exc))}", file=sys.stderr)
        _detail(args)
    except MemoryError:
        print(f"{prog}: error: out of memory (see `rdmasim validate` for the estimate)", file=sys.stderr)
        _detail(args)
    except (ValueError, TypeError, OverflowError, PyverbsError) as exc:  # what the user gave
        print(f"{prog}: error: {_one_line(str(exc))}", file=sys.stderr)
        _detail(args)
    return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
