"""How rdmasim scales: run length, concurrent QPs, hosts, setup from arrays, and the cost of tracing.

Every point runs in a fresh subprocess (``bench/scaling_models.py``) so that its peak RSS
(``ru_maxrss``) is its own. Setup and run wall times are reported separately; the run's figures are
data packets per wall second, events per second and events per data packet. Data packets are
counted from the simulation's counters, each packet once (first transmissions; retransmissions
apart): in incast the senders' link frames minus the flows' retransmissions, in the fat tree the
packets the responders delivered (see ``bench/scaling_models.py``). See docs/scaling.md.

    python bench/scaling.py                       # everything (2-4 minutes on 2 shared cores)
    python bench/scaling.py --quick               # smoke version (seconds)
    python bench/scaling.py --only packets,qps    # some sections: packets,qps,qps_long,qps_one_sender,
                                                  # hosts,setup,tracing
    python bench/scaling.py --plots-dir docs/img/scaling

Writes ``bench/results/scaling-<timestamp>.json`` (git-ignored) and PNG plots next to it, and prints
Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import rdmasim

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORKER = HERE / "scaling_models.py"
RESULT_PREFIX = "RESULT "
SECTIONS = ("packets", "qps", "qps_long", "qps_one_sender", "hosts", "setup", "tracing")

# the QP series: what each holds fixed (table headings and plot titles)
QP_SERIES = {"qps": "incast-8, same total data",
             "qps_long": "incast-8, at least 64 packets per QP pair",
             "qps_one_sender": "one sender to the incast-8 receiver, at least 64 packets per QP pair"}

# (full, quick) plans; every point is one subprocess
PLAN: dict[str, dict[str, Any]] = {
    "full": {
        "packets": {"pkts_per_sender": [10_000, 100_000, 1_000_000, 10_000_000], "repeat": 3,
                    "repeat_max_pkts": 1_000_000, "budget_s": 900},
        "qps": {"flows": [1, 8, 100, 1_000, 10_000, 100_000], "total_pkts": 800_000, "budget_s": 300,
                "cc": [True, False], "repeat": 3},
        # the same with at least 64 packets per QP pair (one ACK request per flow, as rxe asks every
        # 64 packets): per-packet cost at many QPs, per-flow setup spread thin.  At 100 k pairs a QP
        # sends once per ~8.8 ms, so its 64 packets span ~0.56 s: timeout 18 (1.07 s) keeps the
        # default 67 ms ACK timer from firing while the ACK request is still queued behind the others
        "qps_long": {"flows": [8, 100, 1_000, 10_000, 100_000], "total_pkts": 800_000,
                     "min_pkts_per_flow": 64, "timeout": 18, "budget_s": 300, "cc": [False, True],
                     "repeat": 3},
        # the number of QPs alone: every flow from one sender to the receiver (no queue, no PFC,
        # no CNP at any point), at least 64 packets per pair as in qps_long
        "qps_one_sender": {"flows": [1, 8, 100, 1_000, 10_000, 100_000], "total_pkts": 800_000,
                           "min_pkts_per_flow": 64, "timeout": 18, "senders": 1, "budget_s": 300,
                           "cc": [False, True], "repeat": 3},
        "hosts": {"k": [4, 8, 16], "size": 1_000_000, "budget_s": 900},
        "setup": {"duration": ["30ms", "300ms"], "repeat": 3},
        "tracing": {"pkts_per_sender": 10_000, "rounds": 5},
    },
    "quick": {
        "packets": {"pkts_per_sender": [1_000, 10_000], "repeat": 1, "repeat_max_pkts": 0, "budget_s": 20},
        "qps": {"flows": [1, 10, 100], "total_pkts": 8_000, "budget_s": 10, "cc": [True], "repeat": 1},
        "qps_long": {"flows": [10, 100], "total_pkts": 1_000, "min_pkts_per_flow": 64, "timeout": 18,
                     "budget_s": 10, "cc": [False], "repeat": 1},
        "qps_one_sender": {"flows": [1, 10], "total_pkts": 1_000, "min_pkts_per_flow": 64, "timeout": 18,
                           "senders": 1, "budget_s": 10, "cc": [True], "repeat": 1},
        "hosts": {"k": [4], "size": 100_000, "budget_s": 20},
        "setup": {"duration": ["3ms"], "repeat": 1},
        "tracing": {"pkts_per_sender": 1_000, "rounds": 1},
    },
}


# ---------------------------------------------------------------- running points
def run_point(spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """Run one point in a fresh interpreter; its RESULT dict, or an error record."""
    env = dict(os.environ)
    pkg_root = str(Path(rdmasim.__file__).resolve().parents[1])  # the rdmasim this script imported
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, str(WORKER), json.dumps(spec)], capture_output=True, text=True,
                              timeout=timeout_s, env=env, cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {"spec": spec, "error": f"timed out after {timeout_s:.0f} s (subprocess killed)"}
    wall = time.perf_counter() - t0
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            out: dict[str, Any] = json.loads(line[len(RESULT_PREFIX):])
            out["process_wall_s"] = wall
            return out
    return {"spec": spec, "error": f"exit code {proc.returncode}, no result",
            "stderr_tail": proc.stderr[-2000:], "process_wall_s": wall}


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _brief(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"ERROR {r['error']}"
    keys = ("setup_s", "run_s", "pkts_per_s", "events_per_s")
    bits = [f"{k}={r[k]:.3g}" for k in keys if r.get(k) is not None]
    return " ".join(bits + [f"rss={r['peak_rss_mb']:.0f}MiB", "" if r.get("complete", True) else "PARTIAL"])


def section_packets(p: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for n in p["pkts_per_sender"]:
        reps = p["repeat"] if n <= p["repeat_max_pkts"] else 1
        for i in range(reps):
            spec = {"kind": "packets", "pkts_per_sender": n, "budget_s": p["budget_s"], "repeat_index": i}
            r = run_point(spec, p["budget_s"] + 300)
            _say(f"packets {n * 8:>10} #{i}: {_brief(r)}")
            out.append(r)
    return out


def section_qps(p: dict[str, Any], name: str = "qps") -> list[dict[str, Any]]:
    """Rounds over all points (not repeats of one point in a row): a noisy spell of the machine
    then hits every point once instead of one point three times."""
    out = []
    extra = {k: p[k] for k in ("min_pkts_per_flow", "timeout", "senders") if k in p}
    for i in range(p.get("repeat", 1)):
        for cc in p["cc"]:
            for n in p["flows"]:
                spec = {"kind": "qps", "flows": n, "total_pkts": p["total_pkts"], "budget_s": p["budget_s"],
                        "cc": cc, "repeat_index": i, **extra}
                r = run_point(spec, p["budget_s"] + 300)
                _say(f"{name} {n:>7} cc={'dcqcn' if cc else 'none'} #{i}: {_brief(r)}")
                out.append(r)
    return out


def section_qps_long(p: dict[str, Any]) -> list[dict[str, Any]]:
    return section_qps(p, "qps_long")


def section_qps_one_sender(p: dict[str, Any]) -> list[dict[str, Any]]:
    return section_qps(p, "qps_one_sender")


def section_hosts(p: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for k in p["k"]:
        spec = {"kind": "hosts", "k": k, "size": p["size"], "budget_s": p["budget_s"]}
        r = run_point(spec, p["budget_s"] + 300)
        _say(f"hosts k={k}: {_brief(r)}")
        out.append(r)
    return out


def section_setup(p: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for d in p["duration"]:
        for i in range(p["repeat"]):
            r = run_point({"kind": "setup", "duration": d, "repeat_index": i}, 600)
            _say(f"setup {d} #{i}: " + (f"ERROR {r['error']}" if "error" in r else
                                       f"{r['n_flows']} flows gen={r['generate_s']:.3f}s "
                                       f"add={r['add_flows_s']:.3f}s"))
            out.append(r)
    return out


def section_tracing(p: dict[str, Any]) -> dict[str, Any]:
    r = run_point({"kind": "tracing", "pkts_per_sender": p["pkts_per_sender"], "rounds": p["rounds"]}, 1200)
    _say("tracing: " + (f"ERROR {r['error']}" if "error" in r else f"ratios {r['ratio_vs_off']}"))
    return r


# ---------------------------------------------------------------- machine
def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"python": platform.python_version(), "platform": platform.platform(),
                            "cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in lscpu.splitlines():
            key, _, val = line.partition(":")
            if key.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "CPU max MHz", "L3 cache"):
                info[key.strip()] = val.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open("/proc/meminfo") as f:
            info["MemTotal"] = f.readline().split(":")[1].strip()
    except OSError:
        pass
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                            cwd=str(ROOT), timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


# ---------------------------------------------------------------- tables
def _median_by(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """One row per distinct ``spec[k] for k in keys``: the median over repeats of the numeric
    fields, plus ``best_*`` (the fastest repeat) of the rates."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        if "error" not in r:
            groups.setdefault(tuple(r["spec"].get(k) for k in keys), []).append(r)
    out = []
    for rs in groups.values():
        m = dict(rs[0])
        for f in ("setup_s", "run_s", "pkts_per_s", "events_per_s", "frames_per_s", "peak_rss_mb",
                  "generate_s", "add_flows_s", "user_s", "sys_s"):
            if all(isinstance(x.get(f), (int, float)) for x in rs):
                m[f] = statistics.median(x[f] for x in rs)
        for f in ("pkts_per_s", "frames_per_s"):
            if all(isinstance(x.get(f), (int, float)) for x in rs):
                m[f"best_{f}"] = max(x[f] for x in rs)
        m["complete"] = all(x.get("complete", True) for x in rs)
        m["repeats"] = len(rs)
        out.append(m)
    return out


def _f(x: Any, fmt: str = ".3g") -> str:
    return "n/a" if x is None else format(x, fmt)


def _qps_table(rows: list[dict[str, Any]], title: str) -> list[str]:
    lines = [title, "",
             "Frames: everything the hosts sent (data, ACK/NAK, CNP, PFC). Median of the repeats; "
             "best = the fastest repeat. user s / sys s: CPU time of the run in the process and in "
             "the kernel (mostly zeroing memory touched for the first time); frames per user s leaves "
             "the kernel's share out. vs first: best frames/s and median frames / user s against the "
             "point with the fewest QP pairs of the same CC.", "",
             "| CC | flows = QP pairs | repeats | complete | data packets | frames | run s | user s | "
             "sys s | data packets/s | best | frames/s | best | frames / user s | vs first: best | "
             "vs first: per user s | events/frame | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['spec'].get('cc')} | {r['spec']['flows']} | ERROR {r['error']} |")
    medians = _median_by(rows, "cc", "flows")
    first: dict[Any, dict[str, Any]] = {}
    for r in sorted(medians, key=lambda r: r["qp_pairs"]):
        first.setdefault(r["spec"]["cc"], r)

    def per_user_s(r: dict[str, Any]) -> float | None:
        user = r.get("user_s")
        return r.get("frames", 0) / user if user else None

    def ratio(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or not b else f"{100 * a / b:.0f} %"

    for r in medians:
        user = r.get("user_s")
        per_user = per_user_s(r)
        base = first[r["spec"]["cc"]]
        lines.append(f"| {'DCQCN' if r['spec']['cc'] else 'none'} | {r['qp_pairs']:,} | {r['repeats']} | "
                     f"{'yes' if r['complete'] else 'no'} | {r['data_pkts']:,} | "
                     f"{r.get('frames', 0):,} | "
                     f"{_f(r['run_s'])} | {_f(user)} | {_f(r.get('sys_s'))} | "
                     f"{_f(r['pkts_per_s'])} | {_f(r.get('best_pkts_per_s'))} | "
                     f"{_f(r.get('frames_per_s'))} | {_f(r.get('best_frames_per_s'))} | {_f(per_user)} | "
                     f"{ratio(r.get('best_frames_per_s'), base.get('best_frames_per_s'))} | "
                     f"{ratio(per_user, per_user_s(base))} | "
                     f"{_f(r.get('events_per_frame'))} | {r['peak_rss_mb']:.1f} |")
    lines.append("")
    return lines


def tables(res: dict[str, Any]) -> str:
    s = res["sections"]
    lines: list[str] = []
    if "packets" in s:
        lines += ["### Packets (incast-8, DCQCN + PFC)", "",
                  "Median of the repeats; best = the fastest repeat; user s: CPU time of the run in the "
                  "process (less sensitive to other jobs than wall time).", "",
                  "| data packets | retx | flows/sender | repeats | setup s | run s | user s | packets/s | "
                  "best | packets / user s | events/s | "
                  "events/pkt | sim s / wall s | peak RSS MiB | RSS after import MiB | pkt pool peak |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in _median_by(s["packets"], "pkts_per_sender"):
            user = r.get("user_s")
            lines.append(f"| {r['data_pkts']:,} | {r.get('retx_pkts', 0):,} | {r['flows_per_sender']} | "
                         f"{r['repeats']} | {_f(r['setup_s'])} | {_f(r['run_s'])} | {_f(user)} | "
                         f"{_f(r['pkts_per_s'])} | {_f(r.get('best_pkts_per_s'))} | "
                         f"{_f(r['data_pkts'] / user if user else None)} | "
                         f"{_f(r['events_per_s'])} | {_f(r['events_per_pkt'])} | "
                         f"{_f(r['sim_s_per_wall_s'])} | {r['peak_rss_mb']:.1f} | "
                         f"{r['rss_after_import_mb']:.1f} | {r['pool']['pkts_peak']} |")
        lines.append("")
    for key, title in QP_SERIES.items():
        if key in s:
            lines += _qps_table(s[key], f"### Concurrent QPs ({title}, all flows start at 0)")
    if "hosts" in s:
        lines += ["### Hosts (fat tree, permutation, DCQCN + PFC)", "",
                  "| k | hosts | switches | complete | data packets | setup s | run s | user s | sim time | "
                  "sim s / wall s | packets/s | events/s | events/pkt | peak RSS MiB | pkt pool peak |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in s["hosts"]:
            if "error" in r:
                lines.append(f"| {r['spec']['k']} | ERROR {r['error']} |")
                continue
            lines.append(f"| {r['spec']['k']} | {r['hosts']} | {r['switches']} | "
                         f"{'yes' if r['complete'] else 'no'} | {r['data_pkts']:,} | {_f(r['setup_s'])} | "
                         f"{_f(r['run_s'])} | {_f(r.get('user_s'))} | {r['sim_time_ps'] / 1e6:.1f} µs | "
                         f"{_f(r['sim_s_per_wall_s'])} | "
                         f"{_f(r['pkts_per_s'])} | {_f(r['events_per_s'])} | {_f(r['events_per_pkt'])} | "
                         f"{r['peak_rss_mb']:.1f} | {r['pool']['pkts_peak']} |")
        lines.append("")
    if "setup" in s:
        lines += ["### Setup from arrays (poisson on a 32-host leaf-spine, then add_flows)", "",
                  "| flows | repeats | generate s | add_flows s | flows/s added | peak RSS MiB |",
                  "|---|---|---|---|---|---|"]
        for r in _median_by(s["setup"], "duration"):
            lines.append(f"| {r['n_flows']:,} | {r['repeats']} | {_f(r['generate_s'])} | "
                         f"{_f(r['add_flows_s'])} | {_f(r['n_flows'] / r['add_flows_s'])} | "
                         f"{r['peak_rss_mb']:.1f} |")
        lines.append("")
    t = s.get("tracing")
    if t and "error" not in t:
        lines += [f"### Tracing cost (incast-8, {t['pkts_per_sender'] * 8:,} data packets, "
                  f"{len(t['runs']) // len(t['median_run_s'])} rounds alternating)", "",
                  "| mode | median run s | ratio to off | per-round ratios | output |",
                  "|---|---|---|---|---|"]
        out = {"off": "", "trace": f"{max(x['trace_records'] for x in t['runs']):,} records"}
        for m in ("pcap", "pcap128"):
            out[m] = f"{max(x['pcap_bytes'] for x in t['runs'] if x['mode'] == m) / 1e6:.1f} MB pcap"
        for m in t["median_run_s"]:
            ratio = 1.0 if m == "off" else t["ratio_vs_off"][m]
            per = "" if m == "off" else ", ".join(f"{x:.2f}" for x in t["ratio_per_round"][m])
            lines.append(f"| {m} | {t['median_run_s'][m]:.3f} | {ratio:.2f} | {per} | {out[m]} |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------- plots
def plots(res: dict[str, Any], out_dir: Path, stem: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = res["sections"]
    made: list[str] = []

    Series = tuple[str, list[dict[str, Any]], str, str]  # label, rows, x key, rate key

    def fig(name: str, title: str, xlabel: str, series: list[Series],
            ylabel: str = "data packets / wall s") -> None:
        if not any(rows for _, rows, _, _ in series):
            return
        f, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4), dpi=80)
        for label, rows, xkey, ykey in series:
            xs = [r[xkey] for r in rows]
            for ax, key in ((a, ykey), (b, "peak_rss_mb")):
                line = ax.plot(xs, [r[key] for r in rows], "-", label=label)[0]
                for done, face in ((True, line.get_color()), (False, "none")):
                    pts = [(x, r[key]) for x, r in zip(xs, rows, strict=True)
                           if r.get("complete", True) is done]
                    if pts:
                        ax.plot(*zip(*pts, strict=True), "o", color=line.get_color(), mfc=face)
        for ax, yl in ((a, ylabel), (b, "peak RSS (MiB)")):
            ax.set_xscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(yl)
            ax.grid(True, which="both", alpha=0.3)
        a.set_yscale("log")
        b.set_ylim(bottom=0)
        if len(series) > 1:
            a.legend(fontsize=8)
        f.suptitle(title, fontsize=10)
        f.tight_layout()
        path = out_dir / f"{stem}-{name}.png"
        f.savefig(path)
        plt.close(f)
        made.append(str(path))

    if "packets" in s:
        rows = sorted(_median_by(s["packets"], "pkts_per_sender"), key=lambda r: r["data_pkts"])
        fig("packets", "incast-8: run length", "data packets",
            [("incast-8", rows, "data_pkts", "pkts_per_s")])
    for key, what in QP_SERIES.items():
        if key not in s:
            continue
        series: list[Series] = []
        for cc in (True, False):
            rows = sorted((r for r in _median_by(s[key], "cc", "flows") if r["spec"]["cc"] == cc),
                          key=lambda r: r["qp_pairs"])
            if rows:
                name = "DCQCN" if cc else "no CC"
                series += [(f"{name}: frames", rows, "qp_pairs", "best_frames_per_s"),
                           (f"{name}: data packets", rows, "qp_pairs", "best_pkts_per_s")]
        fig(key, f"QP pairs, {what} (best repeat; hollow: stopped at the budget)",
            "concurrent flows (QP pairs)", series, ylabel="per wall s")
    if "hosts" in s:
        rows = [r for r in s["hosts"] if "error" not in r]
        fig("hosts", "fat tree k = 4, 8, 16: permutation", "hosts",
            [("fat tree", rows, "hosts", "pkts_per_s")])
    return made


# ---------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small smoke version (seconds)")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections of {','.join(SECTIONS)}")
    ap.add_argument("--out", default=str(HERE / "results"), help="directory for the JSON and the PNGs")
    ap.add_argument("--plots-dir", default=None, help="also write the PNGs here (e.g. docs/img/scaling)")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    only = [x.strip() for x in a.only.split(",") if x.strip()]
    bad = sorted(set(only) - set(SECTIONS))
    if bad:
        ap.error(f"unknown sections {bad}: choose from {','.join(SECTIONS)}")
    plan = PLAN["quick" if a.quick else "full"]
    res: dict[str, Any] = {"quick": a.quick, "plan": {k: plan[k] for k in only}, "machine": machine(),
                           "sections": {}}
    runners = {"packets": section_packets, "qps": section_qps, "qps_long": section_qps_long,
               "qps_one_sender": section_qps_one_sender, "hosts": section_hosts, "setup": section_setup,
               "tracing": section_tracing}
    t0 = time.perf_counter()
    for name in SECTIONS:
        if name in only:
            res["sections"][name] = runners[name](plan[name])
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["total_wall_s"] = time.perf_counter() - t0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "scaling-" + time.strftime("%Y%m%d-%H%M%S") + ("-quick" if a.quick else "")
    if not a.no_plot:
        res["plots"] = plots(res, out, stem)
        if a.plots_dir:
            pd = Path(a.plots_dir)
            pd.mkdir(parents=True, exist_ok=True)
            res["plots"] += plots(res, pd, "scaling")
    path = out / f"{stem}.json"
    path.write_text(json.dumps(res, indent=1))
    print(tables(res))
    print(f"wrote {path}")
    points = [r for v in res["sections"].values() for r in (v if isinstance(v, list) else [v])]
    errors = [r for r in points if "error" in r]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
