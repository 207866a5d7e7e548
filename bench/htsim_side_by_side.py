"""rdmasim side by side with csg-htsim on the same workloads: CPU time, data packets, FCTs.

Each workload is written once as an htsim connection matrix (``.cm``) plus htsim's command-line
options, and the rdmasim side is made from the same connection lines by ``rdmasim import htsim``
(docs/import-htsim.md) with the same link rate, hop delay, MTU, PFC thresholds and flow sizes, and
the congestion control set in the scenario. Both sides run in processes of their own, interleaved
(rounds alternate which side goes first), each run's CPU time taken from ``getrusage`` of the
finished child (user + system). Each side also runs the same fabric and flows with one packet per
flow ("setup"): its median is taken off to give the CPU of the traffic itself ("net").

    python bench/htsim_side_by_side.py --htsim /path/to/csg-htsim            # every workload, 3 rounds
    python bench/htsim_side_by_side.py --htsim /path/to/csg-htsim --quick    # small sizes, 1 round
    python bench/htsim_side_by_side.py --htsim DIR --workloads incast8-dcqcn --callgrind

``--htsim`` is a directory holding the built binaries ``htsim_roce`` and ``htsim_hpcc`` (or a
csg-htsim checkout, whose ``sim/datacenter`` holds them). Nothing of csg-htsim is in this tree:
build it where you keep it (docs/performance.md, "Against csg-htsim").

Counted by each simulator itself: htsim's data packets are its flows' final cumulative ACKs
("Flow ... finished at T total bytes B", B / MTU packets; every flow size here is a multiple of
the MTU), its FCTs those lines' times; rdmasim's data packets are its flows' delivered bytes in MTU
packets (``bytes_delivered``, bulk flows) or its QPs' first transmissions (``pkts_sent -
pkts_retx``, one WRITE per packet), its FCTs the flow table's. ``--callgrind`` also counts the
instructions each simulator executes in its event loop (htsim ``EventList::doNextEvent``, rdmasim
``SimCore.run`` less the routing tables computed as it starts) per data packet, on the ``--quick``
sizes.

What differs, by construction (also printed with the table): htsim has no DCQCN and no ECN in
``htsim_roce``, so the DCQCN and no-CC rows run the same htsim (RoCE at line rate, an ACK per data
packet); rdmasim's bulk flows are one WRITE each, acknowledged every 64 packets as rxe does, so
they put fewer frames on the wire than htsim for the same data packets (the one-WRITE-per-packet row
has an ACK per packet like htsim). ECMP hashes differ, so which permutation flows share a link, and
with it the FCTs, differ in the fat trees. Results go to ``bench/results/htsim_side_by_side*.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULT_PREFIX = "RESULT "

MTU = 1024
LINK_MBPS = 100_000  # htsim -linkspeed (Mb/s)
HOP_US = 1  # htsim -hop_latency (us)
HTSIM_HDR = 64  # htsim RocePacket::ACKSIZE: a data packet is MTU + 64 bytes, an ACK 64
#: PFC at each switch ingress (both sides): pause above XOFF packets of MTU bytes queued from that
#: input, resume below XON (htsim -pfc_thresholds XON XOFF; rdmasim switch.threshold = XOFF x MTU,
#: switch.resume_offset = (XOFF - XON) x MTU: htsim's default 3-packet hysteresis, rdmasim's 3 KB)
PFC_XON, PFC_XOFF = 97, 100
HTSIM_QUEUE_PKTS = 10_000  # htsim -q: output queues of 10,000 packets (~10 MB; rdmasim: 12 MB shared)
#: HPCC as htsim's hpcc.cpp has it: T = 12 us, eta 0.95, 5 stages, W_AI = one MSS per T
HPCC_T_US = 12
SEED = 1
INCAST_SENDERS = 8
LOSSLESS_TCLASS = 24 << 2  # IP traffic class of DSCP 24: a scenario switch maps DSCP 8p to priority p


@dataclass(frozen=True)
class Workload:
    """One side-by-side point: ``kind`` incast (8 senders and a receiver on one switch) or fattree
    (a k-ary 3-tier fat tree, a random permutation, every host sends one flow)."""

    name: str
    kind: str
    cc: str  # rdmasim congestion control: dcqcn, none, hpcc
    htsim: str  # the htsim binary: htsim_roce or htsim_hpcc
    size: int  # bytes per flow (a multiple of MTU)
    quick_size: int
    k: int = 0  # fat tree radix
    per_packet: bool = False  # rdmasim: one MTU-sized WRITE per data packet (verbs) instead of a bulk flow
    max_rounds: int = 0  # at most this many rounds (0: --rounds), for the costly points
    what: str = ""


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            "incast8-dcqcn",
            "incast",
            "dcqcn",
            "htsim_roce",
            128 << 20,
            1 << 20,
            what="incast-8, rdmasim DCQCN (RED ECN 5 KB/200 KB/1 %) bulk WRITEs; htsim_roce (no CC)",
        ),
        Workload(
            "incast8-nocc",
            "incast",
            "none",
            "htsim_roce",
            128 << 20,
            1 << 20,
            what="incast-8, no CC on either side; rdmasim bulk WRITEs",
        ),
        Workload(
            "incast8-write1",
            "incast",
            "dcqcn",
            "htsim_roce",
            32 << 20,
            1 << 20,
            per_packet=True,
            what="incast-8, rdmasim one 1024-B WRITE per data packet (verbs, DCQCN); htsim_roce",
        ),
        Workload(
            "incast8-hpcc",
            "incast",
            "hpcc",
            "htsim_hpcc",
            32 << 20,
            1 << 20,
            what="incast-8, HPCC on both sides (T 12 us, eta 0.95, 5 stages, W_AI 1 MSS)",
        ),
        Workload(
            "fattree16-dcqcn",
            "fattree",
            "dcqcn",
            "htsim_roce",
            8 << 20,
            512 << 10,
            k=4,
            what="fat tree k=4 (16 hosts) permutation, rdmasim DCQCN; htsim_roce",
        ),
        Workload(
            "fattree128-dcqcn",
            "fattree",
            "dcqcn",
            "htsim_roce",
            1 << 20,
            64 << 10,
            k=8,
            what="fat tree k=8 (128 hosts) permutation, rdmasim DCQCN; htsim_roce",
        ),
        Workload(
            "fattree432-dcqcn",
            "fattree",
            "dcqcn",
            "htsim_roce",
            256 << 10,
            32 << 10,
            k=12,
            what="fat tree k=12 (432 hosts) permutation, rdmasim DCQCN; htsim_roce",
        ),
        Workload(
            "fattree1024-dcqcn",
            "fattree",
            "dcqcn",
            "htsim_roce",
            256 << 10,
            32 << 10,
            k=16,
            max_rounds=2,
            what="fat tree k=16 (1,024 hosts) permutation, rdmasim DCQCN; htsim_roce",
        ),
    )
}
DEFAULT_WORKLOADS = (
    "incast8-dcqcn",
    "incast8-nocc",
    "incast8-write1",
    "incast8-hpcc",
    "fattree16-dcqcn",
    "fattree128-dcqcn",
    "fattree1024-dcqcn",
)
QUICK_WORKLOADS = (
    "incast8-dcqcn",
    "incast8-nocc",
    "incast8-write1",
    "incast8-hpcc",
    "fattree16-dcqcn",
    "fattree128-dcqcn",
)


# ------------------------------------------------------------------ workload generation
def flows_of(w: Workload, size: int) -> tuple[int, list[tuple[int, int]]]:
    """(hosts the rdmasim fabric has, the flows as (src, dst) host ids): incast-8 is hosts 1..8 to
    host 0; a fat tree's permutation is seeded (``SEED``) and has no host sending to itself."""
    if w.kind == "incast":
        return INCAST_SENDERS + 1, [(s, 0) for s in range(1, INCAST_SENDERS + 1)]
    n = w.k**3 // 4
    rng = random.Random(SEED)
    perm = list(range(n))
    while any(i == p for i, p in enumerate(perm)):
        rng.shuffle(perm)
    return n, [(i, perm[i]) for i in range(n)]


def cm_text(nodes: int, flows: list[tuple[int, int]], size: int) -> str:
    """An htsim connection matrix: every flow starts at 0 with ``size`` bytes."""
    lines = [f"Nodes {nodes}", f"Connections {len(flows)}"]
    lines += [f"{s}->{d} id {i + 1} start 0 size {size}" for i, (s, d) in enumerate(flows)]
    return "\n".join(lines) + "\n"


def htsim_topology(w: Workload) -> tuple[int, list[str]]:
    """(hosts of htsim's fat tree, its topology options). incast-8 needs nine hosts on one ToR:
    htsim_roce's 2-tier tree of K = 18 (162 hosts, 9 per ToR), htsim_hpcc's 3-tier tree of K = 18
    (1,458 hosts, 9 per ToR; it has no -tiers option). Idle hosts add setup, not events."""
    if w.kind == "fattree":
        return w.k**3 // 4, []
    if w.htsim == "htsim_roce":
        return 18 * 18 // 2, ["-tiers", "2"]
    return 18**3 // 4, []


def end_us(w: Workload, size: int, flows: int) -> int:
    """htsim -end: well past the last flow's completion (htsim's clock keeps the event list busy
    until then, every 50 ms of simulated time)."""
    wire = (size // MTU) * (MTU + HTSIM_HDR) * 8 / (LINK_MBPS * 1e6) * 1e6  # one flow alone, us
    factor = flows if w.kind == "incast" else w.k  # incast: all share one link; fat tree: ECMP collisions
    return int(4 * wire * factor + 2000)


def generate(w: Workload, size: int, out: Path) -> dict[str, Any]:
    """Write both sides' inputs for ``w`` with ``size`` bytes per flow into ``out``; returns the
    plan: the htsim argv (binary name first), the rdmasim scenario file and what to expect."""
    if size % MTU:
        raise ValueError(f"{w.name}: size {size}: not a multiple of the MTU {MTU} (allowed: k x {MTU})")
    out.mkdir(parents=True, exist_ok=True)
    r_nodes, flows = flows_of(w, size)
    h_nodes, topo_opts = htsim_topology(w)
    (out / "htsim.cm").write_text(cm_text(h_nodes, flows, size))
    (out / "rdmasim.cm").write_text(cm_text(r_nodes, flows, size))
    end = end_us(w, size, len(flows))
    htsim_argv = [
        w.htsim,
        "-tm",
        "htsim.cm",
        "-nodes",
        str(h_nodes),
        *topo_opts,
        "-linkspeed",
        str(LINK_MBPS),
        "-hop_latency",
        str(HOP_US),
        "-switch_latency",
        "0",
        "-mtu",
        str(MTU),
        "-q",
        str(HTSIM_QUEUE_PKTS),
        "-pfc_thresholds",
        str(PFC_XON),
        str(PFC_XOFF),
        "-strat",
        "ecmp_host",
        "-paths",
        "256",
        "-seed",
        str(SEED),
        "-end",
        str(end),
        "-o",
        "htsim.log",
    ]
    toml = out / "rdmasim.toml"
    import_rdmasim(w, out / "rdmasim.cm", toml, r_nodes)
    return {
        "workload": w.name,
        "size": size,
        "flows": len(flows),
        "mtu": MTU,
        "dir": str(out),
        "htsim_argv": htsim_argv,
        "rdmasim_toml": str(toml),
        "per_packet": w.per_packet,
        "expect_data_pkts": len(flows) * (size // MTU),
    }


def import_rdmasim(w: Workload, cm: Path, toml: Path, nodes: int) -> None:
    """``rdmasim import htsim`` of ``cm`` with the htsim run's options, then the congestion control
    and the PFC thresholds of the side by side appended."""
    from rdmasim.cli import main as rdmasim_main

    topo = (
        ["--topology", "star", "--hosts", str(nodes)]
        if w.kind == "incast"
        else ["--topology", "fat_tree", "--k", str(w.k)]
    )
    args = [
        "import",
        "htsim",
        str(cm),
        *topo,
        "--linkspeed",
        str(LINK_MBPS),
        "--hop-latency",
        str(HOP_US),
        "--mtu",
        str(MTU),
        "--seed",
        str(SEED),
        "-o",
        str(toml),
    ]
    with contextlib.redirect_stdout(io.StringIO()) as said:
        rc = rdmasim_main(args)
    if rc != 0:
        raise RuntimeError(f"rdmasim {' '.join(args)}: exit status {rc}: {said.getvalue()}")
    extra = [
        "",
        "# htsim side by side (bench/htsim_side_by_side.py)",
        "[switch]",
        f'threshold = "{PFC_XOFF * MTU}B"',
        f'resume_offset = "{(PFC_XOFF - PFC_XON) * MTU}B"',
        "",
        "[congestion_control]",
        f'algorithm = "{w.cc}"',
    ]
    if w.cc == "hpcc":
        ai_bps = round(MTU * 8 / (HPCC_T_US * 1e-6))
        extra += [
            "",
            "[congestion_control.hpcc]",
            f'base_rtt = "{HPCC_T_US}us"',
            "eta = 0.95",
            "max_stage = 5",
            f'ai_rate = "{ai_bps}bps"',
            "ack_every = 1",
        ]
    with toml.open("a") as f:
        f.write("\n".join(extra) + "\n")


# ------------------------------------------------------------------ running
def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _children_sys() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime


def _python() -> str:
    """The interpreter binary itself (valgrind must not trace a pyenv shell shim)."""
    return os.path.realpath(sys.executable)


def htsim_binary(htsim_dir: Path, name: str) -> Path:
    """``name`` in ``htsim_dir`` or in its ``sim/datacenter``."""
    for p in (htsim_dir / name, htsim_dir / "sim" / "datacenter" / name):
        if p.is_file() and os.access(p, os.X_OK):
            return p
    raise FileNotFoundError(
        f"--htsim {htsim_dir}: no executable {name} in it or in its sim/datacenter "
        "(build csg-htsim first: docs/performance.md, 'Against csg-htsim')"
    )


#: htsim's clock prints a "." every 50 ms of simulated time, with no newline: lines may start with dots
FINISHED = re.compile(r"^\.*Flow (\S+)(?: \d+)? finished at ([0-9.eE+-]+) total bytes (\d+)", re.M)
RTX = re.compile(r"^\.*New: (\d+) Rtx: (\d+)", re.M)


def parse_htsim(stdout: str, mtu: int) -> dict[str, Any]:
    """Data packets, retransmitted bytes and FCTs from htsim's own output: every finished flow
    prints its final cumulative ACK ("total bytes") and the time (us), the run its go-back-N
    retransmissions ("Rtx", in bytes)."""
    fin = FINISHED.findall(stdout)
    rtx = RTX.search(stdout)
    fcts = sorted(float(t) for _name, t, _b in fin)
    return {
        "flows_done": len(fin),
        "data_pkts": sum(int(b) // mtu for _n, _t, b in fin),
        "retx_pkts": int(rtx.group(2)) // mtu if rtx else None,
        "fct_us": fcts,
    }


def run_htsim(plan: dict[str, Any], htsim_dir: Path, callgrind: bool = False) -> dict[str, Any]:
    """One htsim run in the plan's directory; its CPU seconds (getrusage of the child)."""
    argv = [str(htsim_binary(htsim_dir, plan["htsim_argv"][0])), *plan["htsim_argv"][1:]]
    cg_out = Path(plan["dir"]) / "htsim.callgrind"
    if callgrind:
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=EventList::doNextEvent*",
            f"--callgrind-out-file={cg_out}",
            *argv,
        ]
    out = Path(plan["dir"]) / "htsim.out"  # a file: htsim_hpcc writes a line per ACK
    c0, s0 = _children_cpu(), _children_sys()
    with out.open("w") as f:
        p = subprocess.run(argv, cwd=plan["dir"], stdout=f, stderr=subprocess.PIPE, text=True)
    cpu, sys_s = _children_cpu() - c0, _children_sys() - s0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit status {p.returncode}: {p.stderr[-2000:]}")
    with out.open() as f:
        text = "".join(ln.lstrip(".") for ln in f if ln.lstrip(".").startswith(("Flow ", "New: ")))
    res = {"side": "htsim", "cpu_s": cpu, "sys_s": sys_s, **parse_htsim(text, plan["mtu"])}
    out.unlink()
    if callgrind:
        res["instructions"] = callgrind_total(cg_out)
    return res


def run_rdmasim(plan: dict[str, Any], callgrind: bool = False) -> dict[str, Any]:
    """One rdmasim run (this script's ``--worker``) in a process of its own; its CPU seconds."""
    argv = [_python(), str(Path(__file__).resolve()), "--worker", json.dumps(plan)]
    cg_out = Path(plan["dir"]) / "rdmasim.callgrind"
    if callgrind:
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=*SimCore*run*",
            f"--callgrind-out-file={cg_out}",
            *argv,
        ]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    c0, s0 = _children_cpu(), _children_sys()
    p = subprocess.run(argv, cwd=plan["dir"], capture_output=True, text=True, env=env)
    cpu, sys_s = _children_cpu() - c0, _children_sys() - s0
    if p.returncode != 0:
        raise RuntimeError(
            f"rdmasim worker {plan['workload']}: exit status {p.returncode}: {p.stderr[-3000:]}"
        )
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith(RESULT_PREFIX))
    res = {"side": "rdmasim", "cpu_s": cpu, "sys_s": sys_s, **json.loads(line[len(RESULT_PREFIX) :])}
    if callgrind:
        total = callgrind_total(cg_out)
        routes = callgrind_inclusive(cg_out, "rs_routes_compute")
        res["instructions"] = total - routes
        res["route_instructions"] = routes
    return res


def callgrind_total(path: Path) -> int:
    """Instructions callgrind collected (the toggled function's, inclusive)."""
    text = subprocess.run(
        ["callgrind_annotate", str(path)], check=True, capture_output=True, text=True
    ).stdout
    m = re.search(r"^\s*([\d,]+)\s.*PROGRAM TOTALS", text, re.M)
    if not m:
        raise RuntimeError(f"{path}: no PROGRAM TOTALS in callgrind_annotate's output")
    return int(m.group(1).replace(",", ""))


def callgrind_inclusive(path: Path, func: str) -> int:
    """Inclusive instructions of ``func`` (0 when it never ran)."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", str(path)], check=True, capture_output=True, text=True
    ).stdout
    m = re.search(rf"^\s*([\d,]+)\s.*[:\s]{re.escape(func)}\b", text, re.M)
    return int(m.group(1).replace(",", "")) if m else 0


# ------------------------------------------------------------------ the rdmasim side (worker)
def worker(plan: dict[str, Any]) -> dict[str, Any]:
    """Run the plan's scenario (bulk flows) or its fabric with one WRITE per data packet; the
    simulation's own counts."""
    import numpy as np

    from rdmasim.scenario import build, load, run_scenario

    sc = load(plan["rdmasim_toml"])
    t0 = time.process_time()
    if not plan["per_packet"]:
        res = run_scenario(sc, out_dir="")
        cpu = time.process_time() - t0
        mtu = plan["mtu"]
        done = [f for f in res.flows if f.status == "ok"]
        return {
            "flows_done": len(done),
            "data_pkts": sum(-(-f.bytes_delivered // mtu) for f in res.flows),
            "retx_pkts": sum(f.retx_pkts for f in res.flows),
            "fct_us": sorted(f.fct_ps / 1e6 for f in done if f.fct_ps is not None),
            "events": int(res.events),
            "frames": sum(n["tx_frames"] for n in res.nics.values()),
            "in_process_cpu_s": cpu,
        }
    sim = build(sc)
    from rdmasim.scenario.traffic import traffic_table

    table, names = traffic_table(sc)
    fl = table.flows
    state = []
    for src, dst, size in zip(fl["src"], fl["dst"], fl["size"], strict=True):
        state.append(
            _per_packet_qp(
                sim,
                sim.hosts[names[int(src)]],
                sim.hosts[names[int(dst)]],
                int(size),
                plan["mtu"],
                np.asarray,
            )
        )
    t_run = time.process_time()
    fct = []
    for cq, _qp, *_ in state:
        wcs = sim.wait_for(cq, 1, timeout=None)
        if not all(wc.ok for wc in wcs):
            raise RuntimeError(f"WRITE failed: {wcs[0]!r}")
        fct.append(sim.now / 1e6)
    stats = [qp.stats() for _cq, qp, *_ in state]
    return {
        "flows_done": len(state),
        "data_pkts": sum(s["pkts_sent"] - s["pkts_retx"] for s in stats),
        "retx_pkts": sum(s["pkts_retx"] for s in stats),
        "fct_us": sorted(fct)[-1:],
        "events": int(sim.events),
        "frames": sum(h.link.direction(h).stats()["frames"] for h in sim.hosts.values() if h.link),
        "in_process_cpu_s": time.process_time() - t0,
        "run_cpu_s": time.process_time() - t_run,
    }


def _per_packet_qp(sim: Any, src: Any, dst: Any, size: int, mtu: int, asarray: Any) -> tuple[Any, ...]:
    """A connected RC QP pair from ``src`` to ``dst`` with ``size / mtu`` one-packet WRITEs posted
    (one numpy batch; the last signaled)."""
    import numpy as np

    from rdmasim.verbs import CQ, MR, PD, QP, Context, QPCap, QPInitAttr, connect_qps
    from rdmasim.verbs import enums as e

    n = size // mtu
    ctx_s, ctx_d = Context(src), Context(dst)
    pd_s, pd_d = PD(ctx_s), PD(ctx_d)
    cq_s, cq_d = CQ(ctx_s, 1), CQ(ctx_d, 1)
    buf = 1 << 16
    mr_s = MR(pd_s, buf, e.IBV_ACCESS_LOCAL_WRITE)
    mr_d = MR(pd_d, buf, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    qp = QP(pd_s, QPInitAttr(scq=cq_s, rcq=cq_s, cap=QPCap(max_send_wr=n), sq_sig_all=0))
    qr = QP(pd_d, QPInitAttr(scq=cq_d, rcq=cq_d, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
    # DSCP 24 (traffic class 96): priority 3, the lossless class the scenario's flows use
    connect_qps(qp, qr, path_mtu=mtu, timeout=14, traffic_class=LOSSLESS_TCLASS)
    i = np.arange(n, dtype=np.uint64)
    flags = np.zeros(n, dtype=np.uint32)
    flags[-1] = e.IBV_SEND_SIGNALED
    slots = buf // mtu
    qp.post_send_batch(
        e.IBV_WR_RDMA_WRITE,
        mr_s.buf,
        asarray(np.full(n, mtu, dtype=np.uint32)),
        mr_s.lkey,
        remote_addr=mr_d.buf + (i % slots) * mtu,
        rkey=mr_d.rkey,
        wr_id=i,
        send_flags=flags,
    )
    return cq_s, qp, qr, mr_s, mr_d, cq_d, pd_s, pd_d, ctx_s, ctx_d


# ------------------------------------------------------------------ the table
@dataclass
class Point:
    """Every run of one workload and what came of them."""

    workload: str
    size: int
    flows: int
    runs: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"htsim": [], "rdmasim": []})
    setup: dict[str, list[float]] = field(default_factory=lambda: {"htsim": [], "rdmasim": []})
    callgrind: dict[str, dict[str, Any]] = field(default_factory=dict)

    def net_ratio_rounds(self) -> list[float]:
        """Each round's net ratio (its runs less its own setup runs), where both were positive."""
        out = []
        hr, rr, hs, rs = self.runs["htsim"], self.runs["rdmasim"], self.setup["htsim"], self.setup["rdmasim"]
        for i in range(min(len(hr), len(rr), len(hs), len(rs))):
            hn, rn = hr[i]["cpu_s"] - hs[i], rr[i]["cpu_s"] - rs[i]
            if hn > 0 and rn > 0:
                out.append((rr[i]["data_pkts"] / rn) / (hr[i]["data_pkts"] / hn))
        return out

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "size": self.size, "flows": self.flows}
        for side in ("htsim", "rdmasim"):
            runs = self.runs[side]
            cpu = statistics.median(r["cpu_s"] for r in runs)
            setup = statistics.median(self.setup[side]) if self.setup[side] else None
            last = runs[-1]
            fct = last["fct_us"]
            out[side] = {
                "cpu_s": cpu,
                "cpu_s_all": [r["cpu_s"] for r in runs],
                "sys_s": statistics.median(r["sys_s"] for r in runs),
                "setup_cpu_s": setup,
                "net_cpu_s": None if setup is None else cpu - setup,
                "data_pkts": last["data_pkts"],
                "retx_pkts": last["retx_pkts"],
                "flows_done": last["flows_done"],
                "fct_median_us": statistics.median(fct) if fct else None,
                "fct_max_us": max(fct) if fct else None,
                "same_counts_every_round": all(r["data_pkts"] == last["data_pkts"] for r in runs),
                **{k: last[k] for k in ("events", "frames") if k in last},
            }
            if side in self.callgrind:
                cg = self.callgrind[side]
                out[side]["instr_per_pkt"] = cg["instructions"] / cg["data_pkts"] if cg["data_pkts"] else None
                out[side]["callgrind_size"] = cg["size"]
        h, r = out["htsim"], out["rdmasim"]
        out["ratio_whole"] = (r["data_pkts"] / r["cpu_s"]) / (h["data_pkts"] / h["cpu_s"])
        net_ok = (
            h["net_cpu_s"] is not None and r["net_cpu_s"] is not None and h["net_cpu_s"] > 0 < r["net_cpu_s"]
        )
        out["ratio_net"] = (
            (r["data_pkts"] / r["net_cpu_s"]) / (h["data_pkts"] / h["net_cpu_s"]) if net_ok else None
        )
        out["ratio_net_rounds"] = self.net_ratio_rounds()
        out["same_pkts"] = h["data_pkts"] == r["data_pkts"]
        out["fct_max_ratio"] = (
            (r["fct_max_us"] / h["fct_max_us"]) if h["fct_max_us"] and r["fct_max_us"] else None
        )
        if "instr_per_pkt" in h and "instr_per_pkt" in r and h["instr_per_pkt"] and r["instr_per_pkt"]:
            out["instr_ratio"] = h["instr_per_pkt"] / r["instr_per_pkt"]
        return out


def _f(x: float | None, fmt: str) -> str:
    return "–" if x is None else format(x, fmt)


def _range(xs: list[float]) -> str:
    return f"({min(xs):.2f}–{max(xs):.2f}) " if len(xs) > 1 else ""


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| workload | data pkts htsim / rdmasim | retx | FCT max us htsim / rdmasim | FCT median us "
        "htsim / rdmasim | CPU s htsim / rdmasim | setup CPU s htsim / rdmasim | x htsim, whole "
        "| x htsim, net (rounds) | instr/pkt htsim / rdmasim |"
    )
    lines = [head, "|" + "---|" * 10]
    for s in rows:
        h, r = s["htsim"], s["rdmasim"]
        same = "" if s["same_pkts"] else " (differ)"
        lines.append(
            f"| {s['workload']} | {h['data_pkts']:,} / {r['data_pkts']:,}{same} "
            f"| {h['retx_pkts']} / {r['retx_pkts']} "
            f"| {_f(h['fct_max_us'], ',.1f')} / {_f(r['fct_max_us'], ',.1f')} "
            f"| {_f(h['fct_median_us'], ',.1f')} / {_f(r['fct_median_us'], ',.1f')} "
            f"| {h['cpu_s']:.3f} / {r['cpu_s']:.3f} "
            f"| {_f(h['setup_cpu_s'], '.3f')} / {_f(r['setup_cpu_s'], '.3f')} "
            f"| {s['ratio_whole']:.2f} | {_f(s['ratio_net'], '.2f')} {_range(s['ratio_net_rounds'])}"
            f"| {_f(h.get('instr_per_pkt'), ',.0f')} / {_f(r.get('instr_per_pkt'), ',.0f')} |"
        )
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        cpu = next(
            (
                ln.split(":", 1)[1].strip()
                for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")
            ),
            "",
        )
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
    }


def git_commit(path: Path) -> str | None:
    p = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--htsim",
        type=Path,
        help="directory of the built htsim_roce and htsim_hpcc (or a "
        "csg-htsim checkout with them in sim/datacenter)",
    )
    p.add_argument(
        "--htsim-commit",
        default=None,
        help="the csg-htsim commit built (recorded in the JSON; "
        "default: git rev-parse of --htsim, when it is a git tree)",
    )
    p.add_argument(
        "--workloads",
        default=None,
        help=f"comma-separated, of {', '.join(WORKLOADS)} (default: "
        f"{', '.join(DEFAULT_WORKLOADS)}; --quick: {', '.join(QUICK_WORKLOADS)})",
    )
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3; --quick 1)")
    p.add_argument("--quick", action="store_true", help="small flows, 1 round, no 1,024-host tree")
    p.add_argument(
        "--callgrind",
        action="store_true",
        help="also count instructions per data packet in each event loop (valgrind; on the --quick sizes)",
    )
    p.add_argument(
        "--no-setup", action="store_true", help="skip the one-packet-per-flow setup runs (no net column)"
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON file (default bench/results/htsim_side_by_side[_quick].json)",
    )
    p.add_argument(
        "--generate",
        type=Path,
        default=None,
        metavar="DIR",
        help="only write both sides' inputs of the workloads into DIR (no htsim needed)",
    )
    p.add_argument("--keep", action="store_true", help="keep the runs' directory (inputs, callgrind files)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker is not None:
        print(RESULT_PREFIX + json.dumps(worker(json.loads(a.worker))), flush=True)
        return 0
    names = a.workloads.split(",") if a.workloads else list(QUICK_WORKLOADS if a.quick else DEFAULT_WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        p.error(f"--workloads {','.join(unknown)}: unknown (allowed: {', '.join(WORKLOADS)})")
    rounds = a.rounds if a.rounds is not None else (1 if a.quick else 3)
    if rounds < 1:
        p.error(f"--rounds {rounds}: allowed 1 or more")
    if a.generate is not None:
        for n in names:
            w = WORKLOADS[n]
            plan = generate(w, w.quick_size if a.quick else w.size, a.generate / n)
            print(
                f"{n}: {plan['dir']}: htsim {' '.join(plan['htsim_argv'])}; "
                f"rdmasim run {plan['rdmasim_toml']}"
            )
        return 0
    if a.htsim is None:
        p.error("--htsim DIR is needed (or --generate DIR)")
    for n in names:
        htsim_binary(a.htsim, WORKLOADS[n].htsim)  # fail before any run
    if a.callgrind and shutil.which("valgrind") is None:
        p.error("--callgrind: valgrind not found")
    load0 = os.getloadavg()
    t0 = time.time()
    work = Path(tempfile.mkdtemp(prefix="htsim_sbs_"))
    points: list[Point] = []
    try:
        for n in names:
            w = WORKLOADS[n]
            size = w.quick_size if a.quick else w.size
            plan = generate(w, size, work / n)
            setup = generate(w, MTU, work / f"{n}-setup")
            pt = Point(n, size, plan["flows"])
            for rnd in range(min(rounds, w.max_rounds or rounds)):
                order = ("htsim", "rdmasim") if rnd % 2 == 0 else ("rdmasim", "htsim")
                for side in order:
                    run = run_htsim(plan, a.htsim) if side == "htsim" else run_rdmasim(plan)
                    pt.runs[side].append(run)
                    if not a.no_setup:
                        s = run_htsim(setup, a.htsim) if side == "htsim" else run_rdmasim(setup)
                        pt.setup[side].append(s["cpu_s"])
                    print(
                        f"  {n} round {rnd + 1} {side}: {run['cpu_s']:.3f} s CPU, "
                        f"{run['data_pkts']:,} data pkts",
                        file=sys.stderr,
                        flush=True,
                    )
            if a.callgrind:
                cg_plan = generate(w, w.quick_size, work / f"{n}-cg")
                for side in ("htsim", "rdmasim"):
                    r = run_htsim(cg_plan, a.htsim, True) if side == "htsim" else run_rdmasim(cg_plan, True)
                    pt.callgrind[side] = {
                        "instructions": r["instructions"],
                        "data_pkts": r["data_pkts"],
                        "size": w.quick_size,
                    }
            points.append(pt)
    finally:
        if a.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    rows = [pt.summary() for pt in points]
    load1 = os.getloadavg()
    print(table(rows))
    print(
        f"\nload average {load0[0]:.2f} before, {load1[0]:.2f} after; {rounds} round(s); "
        f"{time.time() - t0:.0f} s wall"
    )
    for s in rows:
        h, r = s["htsim"], s["rdmasim"]
        ok = s["same_pkts"] and h["flows_done"] == r["flows_done"] == s["flows"]
        print(
            f"{s['workload']}: {WORKLOADS[s['workload']].what}; same work: "
            f"{'yes' if ok else 'NO'} ({h['flows_done']}/{s['flows']} and {r['flows_done']}/{s['flows']} "
            f"flows done, data packets {h['data_pkts']:,} / {r['data_pkts']:,}, max FCT ratio "
            f"{_f(s['fct_max_ratio'], '.3f')})"
        )
    out = a.out or HERE / "results" / f"htsim_side_by_side{'_quick' if a.quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "machine": machine(),
        "load_before": load0,
        "load_after": load1,
        "rounds": rounds,
        "quick": a.quick,
        "rdmasim_commit": git_commit(ROOT),
        "htsim_dir": str(a.htsim),
        "htsim_commit": a.htsim_commit or git_commit(a.htsim),
        "settings": {
            "mtu": MTU,
            "link_mbps": LINK_MBPS,
            "hop_us": HOP_US,
            "pfc_xon_xoff_pkts": [PFC_XON, PFC_XOFF],
            "htsim_queue_pkts": HTSIM_QUEUE_PKTS,
            "hpcc_t_us": HPCC_T_US,
            "seed": SEED,
        },
        "workloads": {n: asdict(WORKLOADS[n]) for n in names},
        "summary": rows,
        "runs": [
            {"workload": pt.workload, "runs": pt.runs, "setup": pt.setup, "callgrind": pt.callgrind}
            for pt in points
        ],
    }
    out.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
