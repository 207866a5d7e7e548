"""Protocol invariants checked on a finished run (:class:`rdmasim.testing.runner.RunResult`).

Each checker returns a list of :class:`Violation` (empty: the invariant holds). They read only
the trace records, the runner's samples and the switch counters, so they apply to any scenario.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rdmasim import trace as T
from rdmasim.testing.runner import RunResult
from rdmasim.verbs import enums as e

PSN_MOD = 2**24
OP_ACK = 0x11
OP_CNP = 0x81
_REQUEST_OPS = set(range(0x00, 0x0D)) | {0x13, 0x14, 0x16, 0x17}


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``what`` happened, ``where`` (node / QP / switch) and ``when`` (ps)."""

    invariant: str
    what: str
    where: str
    when: int

    def __str__(self) -> str:
        return f"[{self.invariant}] {self.what} at {self.where}, t={self.when} ps"


def psn_diff(a: int, b: int) -> int:
    """a - b in 24-bit serial arithmetic (-2^23 .. 2^23-1)."""
    d = (int(a) - int(b)) % PSN_MOD
    return d - PSN_MOD if d >= PSN_MOD // 2 else d


def _qp(r: RunResult, node: int, qpn: int) -> str:
    return f"{r.sim.host_by_index(int(node)).name}/qp{int(qpn)}"


def completions(r: RunResult) -> list[Violation]:
    """Every posted send WR completes exactly once, in posting order per QP; signaled ones (and
    every failure) write a CQE; with valid keys everything succeeds, and after an invalid key the
    failing WR reports an error and the rest are flushed."""
    out: list[Violation] = []
    recs = r.records
    for pr in r.pairs:
        q, node = pr.requester.qp_num, pr.requester._host.index
        where = _qp(r, node, q)
        mine = recs[(recs["node"] == node) & (recs["qpn"] == q) & (recs["node_kind"] == 0)]
        comp = mine[(mine["kind"] == T.COMPLETE) & ((mine["flags"] & T.FLAG_RECV) == 0)]
        ids = [int(x) for x in comp["wr_id"]]
        posted = [w for w, _ in pr.posted]
        for w, op in pr.posted:
            n = ids.count(w)
            if n != 1:
                out.append(
                    Violation(
                        "completions",
                        f"WR {w:#x} ({op.kind}) completed {n} times",
                        where,
                        int(comp["t_ps"][-1]) if len(comp) else r.sim.now,
                    )
                )
        seen = [w for w in ids if w in posted]
        if seen != sorted(seen, key=posted.index):
            out.append(
                Violation(
                    "completions",
                    f"completion order {[hex(w) for w in seen]} differs from posting order",
                    where,
                    int(comp["t_ps"][-1]),
                )
            )
        for c in comp:
            w = int(c["wr_id"])
            if w not in posted:
                continue
            i = posted.index(w)
            op = pr.posted[i][1]
            ok = int(c["status"]) == e.IBV_WC_SUCCESS
            cqe = bool(c["flags"] & T.FLAG_CQE)
            if (op.signaled or not ok) and not cqe:
                out.append(
                    Violation(
                        "completions",
                        f"WR {w:#x} completed (status {int(c['status'])}) without a CQE",
                        where,
                        int(c["t_ps"]),
                    )
                )
            if r.expect_success or (pr.first_bad is not None and i < pr.first_bad):
                if not ok:
                    out.append(
                        Violation(
                            "completions",
                            f"WR {w:#x} ({op.kind}) failed with status {int(c['status'])}",
                            where,
                            int(c["t_ps"]),
                        )
                    )
            elif pr.first_bad is not None and i == pr.first_bad and ok:
                out.append(
                    Violation(
                        "completions", f"WR {w:#x} with an invalid key succeeded", where, int(c["t_ps"])
                    )
                )
    return out


def memory(r: RunResult) -> list[Violation]:
    """Completed bytes equal posted bytes (COMPLETE ``len`` of successful READ/WRITE/SEND) and, once
    every WR completed, both ends' memory equals the reference built from the workload."""
    out: list[Violation] = []
    recs = r.records
    for pr in r.pairs:
        node, q = pr.requester._host.index, pr.requester.qp_num
        where = _qp(r, node, q)
        comp = recs[(recs["kind"] == T.COMPLETE) & (recs["node"] == node) & (recs["qpn"] == q)]
        sizes = {w: op.size for w, op in pr.posted}
        for c in comp:
            w = int(c["wr_id"])
            op = dict(pr.posted).get(w)
            if op is None or int(c["status"]) != 0 or op.kind in ("FADD", "CSWAP"):
                continue
            if op.kind == "READ" and int(c["len"]) != sizes[w]:
                out.append(
                    Violation(
                        "memory",
                        f"WR {w:#x} READ completed {int(c['len'])} of {sizes[w]} bytes",
                        where,
                        int(c["t_ps"]),
                    )
                )
        if not r.finished:
            continue
        for name, mr, ref in (
            ("requester", pr.local, pr.expected_local),
            ("responder", pr.remote, pr.expected_remote),
        ):
            bad = np.flatnonzero(mr.array != ref)
            if len(bad):
                span = next((f"WR {w:#x} {k}" for w, k, lo, _ in pr.spans if lo[0] <= bad[0] < lo[1]), "")
                out.append(
                    Violation(
                        "memory",
                        f"{len(bad)} {name} bytes differ from the reference, first "
                        f"at offset {int(bad[0])} {span}".rstrip(),
                        where,
                        r.sim.now,
                    )
                )
    return out


def responder_order(r: RunResult) -> list[Violation]:
    """The responder accepts PSNs strictly in order from the configured start, NAKs every new
    sequence gap (one NAK-PSN-sequence-error at or past the gap's expected PSN), and never
    acknowledges a PSN it has not accepted."""
    out: list[Violation] = []
    recs = r.records
    for pr in r.pairs:
        node, q = pr.responder._host.index, pr.responder.qp_num
        where = _qp(r, node, q)
        expected = r.scenario.params.psn
        mine = recs[
            (recs["node"] == node)
            & (recs["node_kind"] == 0)
            & (
                ((recs["kind"] == T.ACCEPT) & (recs["qpn"] == q))
                | ((recs["kind"] == T.RX) & (recs["dest_qpn"] == q))
                | ((recs["kind"] == T.TX) & (recs["qpn"] == q) & (recs["opcode"] == OP_ACK))
            )
        ]
        # the ACK of a packet goes out inside the call that accepts it: order ACCEPT first
        mine = mine[np.lexsort((mine["kind"] != T.ACCEPT, mine["t_ps"]))]
        # expected PSN -> (since when it was expected, first time a packet past it arrived)
        gaps: dict[int, tuple[int, int]] = {}
        rx_time: dict[int, int] = {}  # PSN -> when a request with it last arrived
        since = 0  # when `expected` took its current value
        naks: list[tuple[int, int]] = []
        for x in mine:
            k, t, psn = int(x["kind"]), int(x["t_ps"]), int(x["psn"])
            if k == T.ACCEPT:
                if psn != expected:
                    out.append(
                        Violation(
                            "responder_order", f"accepted PSN {psn} while expecting {expected}", where, t
                        )
                    )
                # it had arrived before the gap was seen (held behind a READ): not a real gap.
                # (ACCEPT sorts before the RX of the same instant, so rx_time is an earlier arrival.)
                if psn in gaps and rx_time.get(psn, gaps[psn][1]) < gaps[psn][1]:
                    del gaps[psn]
                expected = int(x["aux"])
                since = t
            elif k == T.RX and int(x["opcode"]) in _REQUEST_OPS and int(x["pkt_kind"]) == 0:
                if 0 < psn_diff(psn, expected) < 2**22:
                    gaps.setdefault(expected, (since, t))
                rx_time[psn] = t
            elif k == T.TX:
                syn = int(x["syndrome"])
                if syn & 0x60 == 0 and psn_diff(psn, expected) >= 0:
                    out.append(
                        Violation(
                            "responder_order",
                            f"ACK of PSN {psn} before it was accepted (expecting {expected})",
                            where,
                            t,
                        )
                    )
                elif syn & 0xE0 == 0x60 and syn & 0x1F == 0:
                    naks.append((t, psn))
        fatal = bool(
            np.any(
                (mine["kind"] == T.TX)
                & ((mine["syndrome"] & 0xE0) == 0x60)
                & ((mine["syndrome"] & 0x1F) != 0)
            )
        )
        if fatal:
            continue
        # the one NAK of a gap may precede the RX that shows it to us (requests held behind a
        # READ are processed later), but never the moment its PSN became the expected one
        for e_psn, (t_since, t) in gaps.items():
            if not any(tn >= t_since and psn_diff(p, e_psn) >= 0 for tn, p in naks):
                out.append(
                    Violation(
                        "responder_order", f"sequence gap at expected PSN {e_psn} never NAKed", where, t
                    )
                )
    return out


def lossless(r: RunResult) -> list[Violation]:
    """No packet of a lossless class is dropped inside the fabric (link impairments excluded)."""
    out: list[Violation] = []
    for sw in r.sim.switches.values():
        prios = [p for p in range(8) if sw.config["pfc_mask"] >> p & 1]
        for port, st in enumerate(r.switch_counters[sw.name]["ports"]):
            for p in prios:
                n = int(st["queue_drops"][p])
                if n:
                    out.append(
                        Violation(
                            "lossless",
                            f"{n} packets of lossless priority {p} dropped",
                            f"{sw.name} port {port}",
                            r.sim.now,
                        )
                    )
    recs = r.records
    fab = recs[(recs["kind"] == T.DROP) & (recs["reason"] == T.DROP_REASON_CODES["buffer-full"])]
    for x in fab:
        out.append(
            Violation("lossless", "frame dropped for buffer", f"node {int(x['node'])}", int(x["t_ps"]))
        )
    return out


def pfc_hysteresis(r: RunResult) -> list[Violation]:
    """A switch pauses an ingress queue only above XOFF (headroom in use or shared >= threshold) and
    resumes it only below XON (no headroom, shared + resume offset <= threshold, or empty)."""
    out: list[Violation] = []
    recs = r.records
    for x in recs[recs["kind"] == T.PFC]:
        sw_idx = int(x["node"]) & 0x7FFF
        cfg = r.switch_configs[sw_idx]
        name = next(s.name for s in r.sim.switches.values() if s.index == sw_idx)
        shared, hdrm, thr = int(x["len"]), int(x["psn"]), int(x["aux"])
        where = f"{name} port {int(x['msn'])} priority {int(x['priority'])}"
        if x["flags"] & 1:
            if not (hdrm > 0 or shared >= thr):
                out.append(
                    Violation(
                        "pfc_hysteresis",
                        f"XOFF with shared {shared} B < threshold {thr} B and no headroom in use",
                        where,
                        int(x["t_ps"]),
                    )
                )
        elif hdrm > 0 or not (shared == 0 or shared + int(cfg["resume_offset_bytes"]) <= thr):
            out.append(
                Violation(
                    "pfc_hysteresis",
                    f"XON with shared {shared} B, headroom {hdrm} B above XON "
                    f"(threshold {thr} B - offset {int(cfg['resume_offset_bytes'])} B)",
                    where,
                    int(x["t_ps"]),
                )
            )
    return out


def cnp_spacing(r: RunResult) -> list[Violation]:
    """CNPs of one QP are never closer than its host's configured CNP interval (less two maximal
    frame times of transmit queueing)."""
    out: list[Violation] = []
    recs = r.records
    slack = int(2 * (4096 + 100) * 8 * 1e12 / r.line_rate_bps)
    cnps = recs[(recs["kind"] == T.TX) & (recs["opcode"] == OP_CNP) & (recs["node_kind"] == 0)]
    last: dict[tuple[int, int], int] = {}
    for x in cnps:
        key = (int(x["node"]), int(x["qpn"]))
        t = int(x["t_ps"])
        interval = r.cnp_interval_ps.get(key[0])
        if interval is not None and key in last and t - last[key] < interval - slack:
            out.append(
                Violation(
                    "cnp_spacing", f"CNPs {t - last[key]} ps apart (interval {interval} ps)", _qp(r, *key), t
                )
            )
        last[key] = t
    return out


def dcqcn_rate_bounds(r: RunResult) -> list[Violation]:
    """Every sampled DCQCN rate lies in [min rate, line rate] (0 = not rate limited)."""
    out: list[Violation] = []
    for t, node, q, rate in r.rate_samples:
        if rate == 0:
            continue
        if rate < r.min_rate_bps * (1 - 1e-9) or rate > r.line_rate_bps * (1 + 1e-9):
            out.append(
                Violation(
                    "dcqcn_rate_bounds",
                    f"rate {rate:.6g} b/s outside [{r.min_rate_bps:.6g}, {r.line_rate_bps:.6g}]",
                    _qp(r, node, q),
                    t,
                )
            )
    return out


def switch_conservation(r: RunResult) -> list[Violation]:
    """Packets are conserved at every switch: received = forwarded (excluding PFC frames it made)
    + dropped + still buffered (exact once its buffers are empty)."""
    out: list[Violation] = []
    for name, t in r.switch_counters.items():
        fwd = t["tx_pkts"] - t["pfc_xoff_sent"] - t["pfc_xon_sent"]
        missing = t["rx_pkts"] - fwd - t["drops"]
        if missing < 0 or (missing != 0 and r.switch_buffered[name] == 0):
            out.append(
                Violation(
                    "switch_conservation",
                    f"rx {t['rx_pkts']} != tx {fwd} + dropped {t['drops']}"
                    f" + buffered ({r.switch_buffered[name]} B)",
                    name,
                    r.sim.now,
                )
            )
    return out


#: transitions a QP may make without a modify call (IB spec 10.3.1: errors)
_SPONTANEOUS = {
    e.IBV_QPS_RTS: {e.IBV_QPS_SQE, e.IBV_QPS_ERR},
    e.IBV_QPS_SQD: {e.IBV_QPS_SQE, e.IBV_QPS_ERR},
    e.IBV_QPS_RTR: {e.IBV_QPS_ERR},
    e.IBV_QPS_INIT: {e.IBV_QPS_ERR},
    e.IBV_QPS_SQE: {e.IBV_QPS_ERR},
}


def qp_states(r: RunResult) -> list[Violation]:
    """Between the runner's own modify calls a QP only moves along error edges (RTS -> SQE/ERR ...)."""
    out: list[Violation] = []
    cur: dict[tuple[int, int], int] = {}
    for t, node, q, state, how in r.state_log:
        key = (node, q)
        prev = cur.get(key)
        if (
            how != "modify"
            and prev is not None
            and state != prev
            and state not in _SPONTANEOUS.get(prev, set())
        ):
            out.append(
                Violation(
                    "qp_states",
                    f"illegal transition {e.ibv_qp_state(prev).name} -> "
                    f"{e.ibv_qp_state(state).name} without a modify",
                    _qp(r, node, q),
                    t,
                )
            )
        cur[key] = state
    return out


#: every checker by name
ALL_INVARIANTS: dict[str, Callable[[RunResult], list[Violation]]] = {
    "completions": completions,
    "memory": memory,
    "responder_order": responder_order,
    "lossless": lossless,
    "pfc_hysteresis": pfc_hysteresis,
    "cnp_spacing": cnp_spacing,
    "dcqcn_rate_bounds": dcqcn_rate_bounds,
    "switch_conservation": switch_conservation,
    "qp_states": qp_states,
}


def check_all(r: RunResult, names: list[str] | None = None) -> list[Violation]:
    """Run the named checkers (default: all) and return their violations together."""
    out: list[Violation] = []
    for n in names or list(ALL_INVARIANTS):
        out += ALL_INVARIANTS[n](r)
    return out
