"""Build and run one scenario; collect everything the invariant checkers need.

A :class:`Scenario` is plain frozen data (so hypothesis prints it readably when a property
fails): a topology, a verbs workload run on every sender/receiver pair, link impairments and
protocol parameters. :func:`run_scenario` builds it, traces it, runs it in chunks (sampling QP
rates and states), and returns a :class:`RunResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import rdmasim
from rdmasim.cc import DcqcnParams
from rdmasim.sim import Host, Simulator
from rdmasim.units import parse_rate, parse_time
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

#: verbs operations a workload may contain
OP_KINDS = ("WRITE", "READ", "SEND", "FADD", "CSWAP")
_WR_OPCODE = {
    "WRITE": e.IBV_WR_RDMA_WRITE,
    "READ": e.IBV_WR_RDMA_READ,
    "SEND": e.IBV_WR_SEND,
    "FADD": e.IBV_WR_ATOMIC_FETCH_AND_ADD,
    "CSWAP": e.IBV_WR_ATOMIC_CMP_AND_SWP,
}
_REMOTE_ACCESS = (
    e.IBV_ACCESS_LOCAL_WRITE
    | e.IBV_ACCESS_REMOTE_WRITE
    | e.IBV_ACCESS_REMOTE_READ
    | e.IBV_ACCESS_REMOTE_ATOMIC
)


@dataclass(frozen=True)
class Op:
    """One send work request: ``kind`` in OP_KINDS, ``size`` bytes (atomics: 8), an invalid
    remote key (``bad_key``, WRITE/READ only) and whether it asks for a CQE (``signaled``)."""

    kind: str
    size: int = 0
    bad_key: bool = False
    signaled: bool = True


@dataclass(frozen=True)
class Impairment:
    """Loss on the data direction (sender -> fabric) and the ACK direction (fabric -> sender):
    i.i.d. ``loss``/``ack_loss``, a Gilbert-Elliott chain ``gilbert`` = (p_gb, p_bg, loss_good,
    loss_bad), and explicit drops of the data packets ``drop_psns`` (offsets from the start PSN)."""

    loss: float = 0.0
    ack_loss: float = 0.0
    gilbert: tuple[float, float, float, float] | None = None
    drop_psns: tuple[int, ...] = ()


@dataclass(frozen=True)
class Params:
    """Protocol parameters: path ``mtu``, ``timeout``/``retry_cnt``/``rnr_retry`` (IB encodings),
    first PSN ``psn``, switch settings (``threshold``, ``lossless``, ``ecn``: RED dict or None,
    ``buffer``, ``lossy_limit``), and DCQCN (``dcqcn``: a DcqcnParams or None = no CC)."""

    mtu: int = 1024
    timeout: int = 8
    retry_cnt: int = 7
    rnr_retry: int = 7
    psn: int = 0
    threshold: str = "dynamic"
    lossless: tuple[int, ...] = (3,)
    ecn: dict[str, Any] | None = None
    buffer: str = "4MB"
    lossy_limit: str | None = None
    dcqcn: DcqcnParams | None = None
    #: another congestion control on every host instead of DCQCN: an algorithm's name (a C plug-in's
    #: too, rdmasim.cc.register_plugin) and its parameters (None: the defaults); its rates are sampled
    cc: str | None = None
    cc_params: Any = None


@dataclass(frozen=True)
class Scenario:
    """One run: ``topology`` in back_to_back / star / dumbbell with ``hosts`` hosts (star: incast of
    hosts-1 senders; dumbbell: hosts//2 pairs), the workload ``ops`` run on every pair, impairments
    on the senders' links, parameters, the ``seed`` and a ``mutant`` name (mutant builds only)."""

    topology: str = "back_to_back"
    hosts: int = 2
    ops: tuple[Op, ...] = (Op("WRITE", 1024),)
    impairment: Impairment = field(default_factory=Impairment)
    params: Params = field(default_factory=Params)
    rate: str = "100Gbps"
    seed: int = 1
    mutant: str | None = None


@dataclass
class PairResult:
    """One requester/responder QP pair: QPs, MRs and the expected final memory."""

    requester: QP
    responder: QP
    local: MR
    remote: MR
    expected_local: np.ndarray
    expected_remote: np.ndarray
    #: (wr_id, local range, remote range) of ops that touch memory, for precise reports
    spans: list[tuple[int, str, tuple[int, int], tuple[int, int]]]
    posted: list[tuple[int, Op]]
    first_bad: int | None  # index of the first op with an invalid key (later ones are flushed)


@dataclass
class RunResult:
    """Everything a finished run leaves for the invariant checkers."""

    scenario: Scenario
    sim: Simulator
    records: np.ndarray
    pairs: list[PairResult]
    hosts: list[Host]
    #: (t_ps, host index, qpn, rate_bps) samples of senders' congestion-control rates
    rate_samples: list[tuple[int, int, int, float]]
    #: (t_ps, host index, qpn, IBV_QPS state) observations; the runner's own modifies included
    state_log: list[tuple[int, int, int, int, str]]
    switch_counters: dict[str, dict[str, Any]]
    switch_buffered: dict[str, int]
    switch_configs: dict[int, dict[str, Any]]
    #: host index -> CNP interval (ps) of its notification point (absent: CC off)
    cnp_interval_ps: dict[int, int]
    min_rate_bps: float
    line_rate_bps: float
    finished: bool
    expect_success: bool
    mtu: int


def _bad(o: Op) -> bool:
    """An invalid rkey only matters when there is data (zero-length RDMA checks no key)."""
    return o.bad_key and o.kind in ("WRITE", "READ") and o.size > 0


def _expected_atomic(kind: str, old: int, arg: int, swap: int) -> int:
    if kind == "FADD":
        return (old + arg) & (2**64 - 1)
    return swap if old == arg else old


def _build_pair(
    sim: Simulator, a: Host, b: Host, sc: Scenario, idx: int, rng: np.random.Generator
) -> tuple[PairResult, list[SendWR], list[RecvWR]]:
    p = sc.params
    ca, cb = Context(a), Context(b)
    pa, pb = PD(ca), PD(cb)
    n = len(sc.ops)
    cq_a, cq_b = CQ(ca, 4 * n + 16), CQ(cb, 4 * n + 16)
    sizes = [8 if o.kind in ("FADD", "CSWAP") else o.size for o in sc.ops]
    total = sum(-(-s // 8) * 8 for s in sizes) + 8
    local = MR(pa, total, e.IBV_ACCESS_LOCAL_WRITE)
    remote = MR(pb, total, _REMOTE_ACCESS)
    local.array[:] = rng.integers(0, 256, total, dtype=np.uint8)
    remote.array[:] = rng.integers(0, 256, total, dtype=np.uint8)
    exp_l, exp_r = local.array.copy(), remote.array.copy()
    qa = QP(pa, QPInitAttr(scq=cq_a, rcq=cq_a, cap=QPCap(max_send_wr=max(n, 1), max_recv_wr=1), sq_sig_all=0))
    qb = QP(pb, QPInitAttr(scq=cq_b, rcq=cq_b, cap=QPCap(max_send_wr=1, max_recv_wr=max(n, 1))))
    wrs: list[SendWR] = []
    recvs: list[RecvWR] = []
    spans: list[tuple[int, str, tuple[int, int], tuple[int, int]]] = []
    posted: list[tuple[int, Op]] = []
    first_bad = next((i for i, o in enumerate(sc.ops) if _bad(o)), None)
    off = 0
    for i, (o, size) in enumerate(zip(sc.ops, sizes, strict=True)):
        wr_id = (idx << 16) | i
        flags = e.IBV_SEND_SIGNALED if o.signaled else 0
        wr = SendWR(
            wr_id=wr_id,
            opcode=_WR_OPCODE[o.kind],
            sg=[SGE(local.buf + off, size, local.lkey)],
            send_flags=flags,
        )
        rkey = remote.rkey + 0x100 if _bad(o) else remote.rkey
        ok = first_bad is None or i < first_bad
        if o.kind in ("WRITE", "READ"):
            wr.set_wr_rdma(rkey, remote.buf + off)
            if ok and o.kind == "WRITE":
                exp_r[off : off + size] = exp_l[off : off + size]
            elif ok:
                exp_l[off : off + size] = exp_r[off : off + size]
        elif o.kind == "SEND":
            recvs.append(RecvWR(wr_id=wr_id, sg=[SGE(remote.buf + off, max(size, 1), remote.lkey)]))
            if ok:
                exp_r[off : off + size] = exp_l[off : off + size]
        else:
            arg, swap = int(rng.integers(0, 2**32)), int(rng.integers(0, 2**32))
            old = int.from_bytes(bytes(exp_r[off : off + 8]), "little")
            if o.kind == "CSWAP" and rng.integers(0, 2):
                arg = old  # make half the compares succeed
            wr.set_wr_atomic(rkey, remote.buf + off, arg, swap)
            if ok:
                exp_l[off : off + 8] = np.frombuffer(old.to_bytes(8, "little"), np.uint8)
                new = _expected_atomic(o.kind, old, arg, swap)
                exp_r[off : off + 8] = np.frombuffer(new.to_bytes(8, "little"), np.uint8)
        spans.append((wr_id, o.kind, (off, off + size), (off, off + size)))
        posted.append((wr_id, o))
        wrs.append(wr)
        off += -(-size // 8) * 8
    connect_qps(
        qa,
        qb,
        path_mtu=p.mtu,
        psn_a=p.psn,
        psn_b=(p.psn + 7) % 2**24,
        timeout=p.timeout,
        retry_cnt=p.retry_cnt,
        rnr_retry=p.rnr_retry,
        max_rd_atomic=4,
    )
    pr = PairResult(qa, qb, local, remote, exp_l, exp_r, spans, posted, first_bad)
    return pr, wrs, recvs


def _topology(sc: Scenario) -> tuple[Simulator, list[Host], list[tuple[Host, Host]], list[Any]]:
    """(sim, hosts, (sender, receiver) pairs, sender-side link directions to impair)."""
    p = sc.params
    swcfg: dict[str, Any] = {
        "threshold": p.threshold,
        "lossless": p.lossless,
        "buffer": p.buffer,
        "lossy_limit": p.lossy_limit,
        "ecn": p.ecn,
    }
    if sc.topology == "back_to_back":
        t = rdmasim.back_to_back(rate=sc.rate, mtu=4096, seed=sc.seed)
        return t.sim, [t.a, t.b], [(t.a, t.b)], [(t.link.ab, t.link.ba)]
    if sc.topology == "star":
        s = rdmasim.star(max(sc.hosts, 2), rate=sc.rate, mtu=4096, seed=sc.seed, switch_config=swcfg)
        dirs = [(link.ab, link.ba) for link in s.links[:-1]]  # host -> switch is `ab` (host connected first)
        return s.sim, s.hosts, [(h, s.receiver) for h in s.senders], dirs
    if sc.topology == "dumbbell":
        k = max(sc.hosts // 2, 1)
        d = rdmasim.dumbbell(k, k, rate=sc.rate, mtu=4096, seed=sc.seed, switch_config=swcfg)
        dirs = []
        for h in d.left:
            assert h.link is not None
            dirs.append((h.link.ab, h.link.ba))
        return d.sim, d.left + d.right, list(zip(d.left, d.right, strict=True)), dirs
    raise ValueError(f"unknown topology {sc.topology!r} (back_to_back, star, dumbbell)")


def _impair(dirs: list[Any], imp: Impairment, psn: int) -> None:
    for fwd, rev in dirs:
        if imp.gilbert is not None:
            fwd.set_gilbert_elliott(*imp.gilbert)
        elif imp.loss:
            fwd.set_loss(imp.loss)
        if imp.ack_loss:
            rev.set_loss(imp.ack_loss)
        for k in imp.drop_psns:
            fwd.drop(psn=(psn + k) % 2**24)


def run_scenario(
    sc: Scenario,
    *,
    deadline: str | int = "50ms",
    chunk: str | int = "20us",
    max_records: int | None = 2_000_000,
) -> RunResult:
    """Build ``sc``, run it until every send WR completed and the network is idle (or ``deadline``
    of simulated time passed), and return a :class:`RunResult` for the invariant checkers.

    Every ``chunk`` of simulated time the runner samples each sender QP's congestion-control rate
    and each QP's state.
    """
    sim, hosts, pairs, dirs = _topology(sc)
    p = sc.params
    if sc.mutant is not None:
        from rdmasim.testing.mutants import enable

        enable(sim, sc.mutant)
    cnp: dict[int, int] = {}
    if p.dcqcn is not None and p.cc is not None:
        raise ValueError(f"Params: dcqcn and cc={p.cc!r} both set; choose one congestion control")
    if p.dcqcn is not None:
        for h in hosts:
            h.set_congestion_control("dcqcn", p.dcqcn)
            cnp[h.index] = parse_time(p.dcqcn.cnp_interval)
    elif p.cc is not None:
        for h in hosts:
            h.set_congestion_control(p.cc, p.cc_params, notification_point=False)
    _impair(dirs, sc.impairment, p.psn)
    rng = np.random.default_rng(sc.seed)
    trace = sim.trace(max_records=max_records)
    state_log: list[tuple[int, int, int, int, str]] = []
    built = []
    for i, (a, b) in enumerate(pairs):
        pr, wrs, recvs = _build_pair(sim, a, b, sc, i, rng)
        for q in (pr.requester, pr.responder):
            state_log.append((sim.now, q._host.index, q.qp_num, e.IBV_QPS_RTS, "modify"))
        built.append((pr, wrs, recvs))
    for pr, wrs, recvs in built:
        for r in recvs:
            pr.responder.post_recv(r)
        for w in wrs:
            pr.requester.post_send(w)
    n_send = len(sc.ops) * len(pairs)
    rate_samples: list[tuple[int, int, int, float]] = []
    deadline_ps = parse_time(deadline)
    chunk_ps = parse_time(chunk)
    finished = False
    quiet = 0
    while sim.now < deadline_ps:
        until = min(sim.now + chunk_ps, deadline_ps)
        sim.run(until)
        for pr, _, _ in built:
            for q in (pr.requester, pr.responder):
                state_log.append((sim.now, q._host.index, q.qp_num, q.qp_state, "observed"))
            if p.dcqcn is not None or p.cc is not None:
                rate_samples.append(
                    (sim.now, pr.requester._host.index, pr.requester.qp_num, pr.requester.rate_bps)
                )
        recs = trace.to_numpy()
        done = int(np.count_nonzero((recs["kind"] == 6) & ((recs["flags"] & 0x08) == 0)))
        if done >= n_send:
            finished = True
        idle = sim.now < until
        if finished and idle:
            break
        if finished:
            quiet += 1
            if quiet > 50:  # timers keep the simulation busy: stop after a millisecond of tail
                break
    trace.stop()
    counters: dict[str, dict[str, Any]] = {}
    buffered: dict[str, int] = {}
    for sw in sim.switches.values():
        counters[sw.name] = sw.totals()
        buffered[sw.name] = sum(
            sum(sw.queue_bytes(port, prio)) for port in range(len(sw.ports)) for prio in range(8)
        )
        counters[sw.name]["ports"] = sw.stats()
    min_rate = float(parse_rate(p.dcqcn.min_rate)) if p.dcqcn is not None else 0.0
    return RunResult(
        scenario=sc,
        sim=sim,
        records=trace.to_numpy(),
        pairs=[b[0] for b in built],
        hosts=hosts,
        rate_samples=rate_samples,
        state_log=state_log,
        switch_counters=counters,
        switch_buffered=buffered,
        switch_configs={sw.index: sw.config for sw in sim.switches.values()},
        cnp_interval_ps=cnp,
        min_rate_bps=min_rate,
        line_rate_bps=float(parse_rate(sc.rate)),
        finished=finished,
        expect_success=not any(_bad(o) for o in sc.ops),
        mtu=p.mtu,
    )
