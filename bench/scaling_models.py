"""One measurement point of bench/scaling.py, run in its own process (so peak RSS is per point).

Usage (what scaling.py does for every point)::

    python bench/scaling_models.py '{"kind": "packets", "pkts_per_sender": 100000}'

prints one line ``RESULT {json}``. Kinds:

* ``packets``: incast-8 (8 senders, 100 Gb/s 1 us links, one switch, MTU 1024, PFC on priority 3,
  DCQCN + ECN), ``pkts_per_sender`` data packets per sender in flows of at most ``max_flow_pkts``
  packets chained one after the other (dependencies), so one flow per sender is in flight.
* ``qps``: the same incast-8, ``total_pkts`` data packets split over ``flows`` flows that all start
  at 0 (round robin over the 8 senders): one QP pair per flow in flight at once.  Optional
  ``min_pkts_per_flow`` raises the total to at least that many packets per flow, ``timeout``
  sets the QPs' local ACK timeout exponent (default 14, 67 ms), and ``senders`` (default 8) uses
  only the first that many senders: with 1, every flow goes from one host to the receiver, so
  no queue builds and only the number of QPs changes from point to point.  ``dcqcn``:
  ``"paper"`` (default) or ``"nvidia"``, the parameter preset when ``cc`` is on.
* ``hosts``: a k-ary fat tree (k^3/4 hosts), a random permutation of ``size`` bytes per host.
* ``setup``: ``traffic.poisson`` on a 32-host leaf-spine, then ``add_flows``: the time of each.
* ``tracing``: the 80k-packet incast-8 run with nothing, ``sim.trace()`` (drained every
  ``chunk_events`` events), a pcap capture of whole frames or of 128 bytes per frame on,
  alternating the modes for ``rounds`` rounds.

Data packets are counted from the simulation's own counters, each data packet once (first
transmissions; retransmissions are reported apart as ``retx_pkts``):

* incast kinds (``packets``, ``qps``, ``tracing``): the frames the senders' NICs put on their links
  minus the flows' ``retx_pkts``. An incast sender only requests (RDMA WRITE): every frame it sends
  is a data packet; the ACKs, NAKs and CNPs come from the receiver, the PFC frames from the switch.
* ``hosts``: every host of the fat tree both sends and receives, so its link also carries the ACKs
  and CNPs it returns as a responder; there the count is the responders' delivered bytes
  (``bytes_delivered``, the responder QP's in-order byte counter) in MTU packets, per flow. For a
  finished flow both counts are ceil(size / MTU).

Optional ``loss`` (``packets``, ``qps``): i.i.d. loss probability of each frame on the receiver's
link (switch to receiver), to exercise retransmission.  Frames = every frame the hosts sent
(data, ACK/NAK, CNP): with DCQCN and many QPs, CNPs approach one per data packet (one per QP per
50 us while its packets arrive marked), work a simulator must do.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

# one OpenBLAS thread, as `import rdmasim` would set had it come first: otherwise numpy's idle
# worker spins on the second CPU and its time lands in the point's user_s
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

MTU = 1024
SENDERS = 8
ECN = {"kmin": "5KB", "kmax": "200KB", "pmax": 0.01}  # DCQCN paper's RED marking at the switch
RESULT_PREFIX = "RESULT "
MAX_FLOW_BYTES = 2**31 - 1


class BudgetExceeded(Exception):
    """Raised from the run_flows progress callback when a point used up its wall-time budget."""


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _dcqcn(sim: Any, on: bool, preset: str = "paper") -> None:
    from rdmasim.cc import DcqcnParams

    if on:
        if preset not in ("paper", "nvidia"):
            raise ValueError(f"dcqcn preset {preset!r}: use 'paper' or 'nvidia'")
        params = getattr(DcqcnParams, preset)()
        for h in sim.hosts.values():
            h.set_congestion_control("dcqcn", params)


def incast8(cc: bool = True, seed: int = 1, preset: str = "paper",
            loss: float = 0.0) -> tuple[Any, list[Any]]:
    """The incast-8 fabric (DCQCN with the paper's or NVIDIA's parameters when cc; ``loss`` on the
    receiver's link, into the receiver); returns (the Simulator, the sender hosts)."""
    from rdmasim import topology

    cfg: dict[str, Any] = {"ecn": ECN} if cc else {}
    topo = topology.incast(SENDERS, rate="100Gbps", delay="1us", mtu=MTU, seed=seed, switch_config=cfg)
    sim = topo.sim
    _dcqcn(sim, cc, preset)
    if loss:
        rcv = topo.receiver
        link = rcv.link
        link.direction(link.b if link.a is rcv else link.a).set_loss(float(loss))
    return sim, list(topo.senders)


#: how data_packets counted (written into every result as ``counted``)
COUNTED_SENDERS = "senders' link frames (WRITE senders send data only) minus the flows' retx_pkts"
COUNTED_DELIVERED = "responders' bytes_delivered per flow in MTU packets"


def delivered_packets(res: np.ndarray) -> int:
    """Data packets the responders accepted, each once: per flow ceil(bytes_delivered / MTU)."""
    got = res["bytes_delivered"].astype(np.int64)
    return int(((got + MTU - 1) // MTU).sum())


def data_packets(res: np.ndarray, senders_frames: int | None) -> int:
    """Data packets sent once (first transmissions): ``senders_frames`` (the frames of hosts that
    send data only) minus the flows' retransmissions; without it (hosts that also respond), the
    packets the responders delivered."""
    if senders_frames is None:
        return delivered_packets(res)
    return senders_frames - int(res["retx_pkts"].astype(np.int64).sum())


def frames_of(hosts: Any) -> int:
    """Frames these hosts' NICs put on their links."""
    return sum(h.link.direction(h).stats()["frames"] for h in hosts if h.link is not None)


def host_frames(sim: Any) -> int:
    """Frames the hosts' NICs put on their links: data, ACK/NAK, CNP and PFC."""
    return frames_of(sim.hosts.values())


def run_measured(sim: Any, fs: Any, budget_s: float | None, chunk_events: int = 100_000,
                 on_chunk: Callable[[], None] | None = None,
                 senders: list[Any] | None = None) -> dict[str, Any]:
    """run_flows to the end (or until ``budget_s`` of wall time); the run's figures. ``senders``:
    hosts that send data packets only (counted by their link frames); None counts delivered bytes."""
    ev0, now0, frames0 = sim.events, sim.now, host_frames(sim)
    sender0 = frames_of(senders) if senders is not None else 0
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()

    def progress(now_ps: int, events: int, counts: dict[str, int]) -> None:
        if on_chunk is not None:
            on_chunk()
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            raise BudgetExceeded

    complete = True
    try:
        sim.run_flows(progress=progress, chunk_events=chunk_events)
    except BudgetExceeded:
        complete = False
    run_s = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    res = fs.results()
    counts = dict(sim._flows_core().counts())
    pkts = data_packets(res, frames_of(senders) - sender0 if senders is not None else None)
    events = sim.events - ev0
    sim_ps = sim.now - now0
    frames = host_frames(sim) - frames0
    done = res[res["finish_ps"] >= 0]
    return {
        "complete": complete,
        "run_s": run_s,
        "data_pkts": pkts,
        "counted": COUNTED_SENDERS if senders is not None else COUNTED_DELIVERED,
        "delivered_pkts": delivered_packets(res),
        "retx_pkts": int(res["retx_pkts"].sum()),
        "events": events,
        "sim_time_ps": sim_ps,
        "pkts_per_s": pkts / run_s if run_s > 0 else None,
        "events_per_s": events / run_s if run_s > 0 else None,
        "events_per_pkt": events / pkts if pkts else None,
        "frames": frames,
        "frames_per_s": frames / run_s if run_s > 0 else None,
        "events_per_frame": events / frames if frames else None,
        "sim_s_per_wall_s": sim_ps / 1e12 / run_s if run_s > 0 else None,
        # CPU time of the run: user (the simulator) and system (mostly the kernel zeroing memory
        # touched for the first time, e.g. a new QP slab chunk), and the page faults behind it
        "user_s": ru1.ru_utime - ru0.ru_utime,
        "sys_s": ru1.ru_stime - ru0.ru_stime,
        "minor_faults": ru1.ru_minflt - ru0.ru_minflt,
        "flows": counts,
        "flows_failed": int(np.count_nonzero(done["status"] != 0)),
        "pool": dict(sim.pool_stats()),
    }


# ---------------------------------------------------------------- kinds
def point_packets(spec: dict[str, Any]) -> dict[str, Any]:
    from rdmasim import traffic

    per_sender = int(spec["pkts_per_sender"])
    max_flow = int(spec.get("max_flow_pkts", 1_000_000))
    assert max_flow * MTU <= MAX_FLOW_BYTES
    t0 = time.perf_counter()
    sim, senders = incast8(cc=spec.get("cc", True), loss=float(spec.get("loss", 0.0)))
    # per sender: flows of at most max_flow packets, each depending on the previous one
    full, rest = divmod(per_sender, max_flow)
    chunks = [max_flow] * full + ([rest] if rest else [])
    k = len(chunks)
    src = np.repeat(np.arange(SENDERS), k)
    size = np.tile(np.array(chunks, dtype=np.int64) * MTU, SENDERS)
    idx = np.arange(SENDERS * k)
    has_dep = (idx % k) != 0
    dep_ptr = np.concatenate([[0], np.cumsum(has_dep)]).astype(np.int64)
    deps = (idx[has_dep] - 1).astype(np.int32)
    table = traffic.FlowTable.from_columns(src=src, dst=SENDERS, size=size, dep_ptr=dep_ptr, deps=deps)
    fs = sim.add_flows(table)
    setup_s = time.perf_counter() - t0
    out = run_measured(sim, fs, spec.get("budget_s"), senders=senders)
    out.update(setup_s=setup_s, flows_per_sender=k, expected_pkts=per_sender * SENDERS)
    return out


def point_qps(spec: dict[str, Any]) -> dict[str, Any]:
    n = int(spec["flows"])
    # min_pkts_per_flow (optional): more data when the split would leave fewer packets per flow,
    # so per-flow setup and teardown are paid over at least that many packets
    total = max(int(spec["total_pkts"]), n * int(spec.get("min_pkts_per_flow", 0)))
    t0 = time.perf_counter()
    sim, hosts = incast8(cc=spec.get("cc", True), preset=spec.get("dcqcn", "paper"),
                         loss=float(spec.get("loss", 0.0)))
    per, extra = divmod(total, n)
    assert (per + 1) * MTU <= MAX_FLOW_BYTES, "use more flows or fewer packets: a flow is < 2 GiB"
    pkts = np.full(n, per, dtype=np.int64)
    pkts[:extra] += 1
    qp_attrs = {"timeout": int(spec["timeout"])} if "timeout" in spec else {}
    senders = int(spec.get("senders", SENDERS))
    if not 1 <= senders <= SENDERS:
        raise ValueError(f"qps point: senders={senders}, allowed 1..{SENDERS}")
    fs = sim.add_flows({"src": np.arange(n) % senders, "dst": np.full(n, SENDERS), "size": pkts * MTU},
                       **qp_attrs)
    setup_s = time.perf_counter() - t0
    out = run_measured(sim, fs, spec.get("budget_s"), chunk_events=int(spec.get("chunk_events", 50_000)),
                       senders=hosts)
    out.update(setup_s=setup_s, qp_pairs=n, expected_pkts=total, senders=senders)
    return out


def point_hosts(spec: dict[str, Any]) -> dict[str, Any]:
    from rdmasim import topology, traffic

    k = int(spec["k"])
    t0 = time.perf_counter()
    cc = spec.get("cc", True)
    topo = topology.fat_tree(k, rate="100Gbps", delay="1us", mtu=MTU, seed=1,
                             switch_config={"ecn": ECN} if cc else {})
    sim = topo.sim
    _dcqcn(sim, cc)
    t_topo = time.perf_counter() - t0
    n = len(topo.hosts)
    pattern = spec.get("pattern", "permutation")
    if pattern == "permutation":
        table = traffic.permutation(n, int(spec["size"]), seed=1)
    else:
        table = traffic.all_to_all(n, int(spec["size"]))
    fs = sim.add_flows(table)
    setup_s = time.perf_counter() - t0
    out = run_measured(sim, fs, spec.get("budget_s"))
    out.update(setup_s=setup_s, topology_s=t_topo, hosts=n, switches=len(sim.switches),
               links=len(sim.links), n_flows=len(table), expected_pkts=int(((table.flows["size"] + MTU - 1)
                                                                           // MTU).sum()))
    return out


def point_setup(spec: dict[str, Any]) -> dict[str, Any]:
    from rdmasim import topology, traffic

    t0 = time.perf_counter()
    sim = topology.leaf_spine(4, 2, 8, host_rate="100Gbps", fabric_rate="100Gbps", delay="1us", mtu=MTU).sim
    t1 = time.perf_counter()
    small = traffic.SizeCDF((1000.0, 64_000.0), (0.0, 1.0), "small")
    table = traffic.poisson(32, 0.3, "100Gbps", spec["duration"], size_cdf=small, seed=1)
    t2 = time.perf_counter()
    rss_table = peak_rss_mb()
    fs = sim.add_flows(table)
    t3 = time.perf_counter()
    assert sim._flows_core().counts()["total"] == len(fs)
    res = fs.results()
    t4 = time.perf_counter()
    return {
        "n_flows": len(table),
        "topology_s": t1 - t0,
        "generate_s": t2 - t1,
        "add_flows_s": t3 - t2,
        "results_s": t4 - t3,
        "flows_per_s_add": len(table) / (t3 - t2),
        "rss_after_generate_mb": rss_table,
        "results_rows": len(res),
    }


def point_tracing(spec: dict[str, Any]) -> dict[str, Any]:
    per_sender = int(spec["pkts_per_sender"])
    rounds = int(spec.get("rounds", 3))
    modes = ["off", "trace", "pcap", "pcap128"]  # pcap128: sim.capture(snaplen=128), headers only
    runs: list[dict[str, Any]] = []
    tmpdir = tempfile.mkdtemp(prefix="rdmasim-scaling-")
    for r in range(rounds):
        k = r % len(modes)
        order = modes[k:] + modes[:k]  # rotate so no mode always runs first
        for mode in order:
            sim, senders = incast8()
            fs = sim.add_flows({"src": np.arange(SENDERS), "dst": np.full(SENDERS, SENDERS),
                                "size": np.full(SENDERS, per_sender * MTU)})
            drained: list[int] = [0]
            trace = None
            pcap = os.path.join(tmpdir, f"r{r}.pcap")
            on_chunk: Callable[[], None] | None = None
            if mode == "trace":
                trace = sim.trace()

                def on_chunk(tr: Any = trace, count: list[int] = drained) -> None:
                    count[0] += len(tr.drain())
                    tr._chunks.clear()  # drop what was drained (Trace keeps drained records otherwise)
            elif mode in ("pcap", "pcap128"):
                sim.capture(pcap, snaplen=128 if mode == "pcap128" else None)
            out = run_measured(sim, fs, None, chunk_events=int(spec.get("chunk_events", 200_000)),
                               on_chunk=on_chunk, senders=senders)
            if trace is not None:
                drained[0] += len(trace.drain())
                trace._chunks.clear()
                trace.stop()
            pcap_bytes = 0
            if mode in ("pcap", "pcap128"):
                sim.close_capture()
                pcap_bytes = os.path.getsize(pcap)
                os.remove(pcap)
            runs.append({"round": r, "mode": mode, "run_s": out["run_s"], "data_pkts": out["data_pkts"],
                         "events": out["events"], "pkts_per_s": out["pkts_per_s"],
                         "trace_records": drained[0], "pcap_bytes": pcap_bytes})
    os.rmdir(tmpdir)
    med = {m: float(np.median([x["run_s"] for x in runs if x["mode"] == m])) for m in modes}
    per_round = {m: [x["run_s"] / y["run_s"] for x in runs for y in runs
                     if x["mode"] == m and y["mode"] == "off" and x["round"] == y["round"]]
                 for m in modes[1:]}
    return {
        "runs": runs,
        "median_run_s": med,
        "ratio_vs_off": {m: med[m] / med["off"] for m in modes[1:]},
        "ratio_per_round": per_round,
        "pkts_per_sender": per_sender,
    }


KINDS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "packets": point_packets, "qps": point_qps, "hosts": point_hosts, "setup": point_setup,
    "tracing": point_tracing,
}


def main() -> None:
    spec = json.loads(sys.argv[1])
    rss0 = peak_rss_mb()
    t_import = time.perf_counter()
    import rdmasim  # noqa: F401  (imported before the point so its cost is not in setup)

    import_s = time.perf_counter() - t_import
    rss_imported = peak_rss_mb()
    load0 = os.getloadavg()
    out = KINDS[spec["kind"]](spec)
    out.update(spec=spec, import_s=import_s, rss_start_mb=rss0, rss_after_import_mb=rss_imported,
               peak_rss_mb=peak_rss_mb(), loadavg_start=load0, loadavg_end=os.getloadavg())
    sys.stdout.write(RESULT_PREFIX + json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
