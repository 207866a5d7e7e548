"""Two hosts back to back with a connected QP pair on them: the setup most verbs tests start from.

``TwoHosts`` builds, on ``rdmasim.back_to_back``, a context, PD and CQ per host; ``VerbsPair``
adds a QP ``qa`` on host a facing ``qb`` on host b (RC, UC or UD), connected unless asked not to
be.
``CapturedPair`` is the RC pair the wire-level conformance tests share: every frame captured, a
patterned source region on a and a writable target on b. The helpers below build the pieces for
setups of another shape (``qp_pair`` on any PDs, e.g. many senders to one receiver; ``mr`` and
``random_bytes`` for regions; ``write_wr``, ``recv_wr`` and ``post_writes`` for work requests;
``gid_route`` for an address vector).

What the simulation does depends on the order objects are made in (memory keys and addresses are
drawn per host in registration order, QP numbers in creation order), so each helper makes its
objects in one fixed, documented order: contexts, PDs, CQs, then ``qa`` before ``qb``; regions
when the caller asks for them.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

import rdmasim
from rdmasim import verbs
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

T = TypeVar("T")
LOCAL = e.IBV_ACCESS_LOCAL_WRITE
WRITABLE = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
ALL_REMOTE = WRITABLE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC
UD_QKEY = 0x11111111


def per_side(value: T | tuple[T, T]) -> tuple[T, T]:
    """``(a, b)`` from one value for both sides or a pair of them."""
    return value if isinstance(value, tuple) else (value, value)  # type: ignore[return-value]


def random_bytes(n: int, seed: int) -> np.ndarray:
    """``n`` bytes from ``numpy.random.default_rng(seed)``, its first draw."""
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def mr(pd: PD, size: int, access: int = LOCAL, fill: int | np.ndarray | None = None) -> MR:
    """A region of ``size`` bytes in ``pd``; ``fill`` (a byte value or ``size`` bytes) is copied in."""
    region = MR(pd, size, access)
    if fill is not None:
        region.array[:] = fill
    return region


def open_host(host: Any, cqe: int) -> tuple[Context, PD, CQ]:
    """A Context on ``host``, a PD in it and a CQ of ``cqe`` entries."""
    ctx = Context(host)
    return ctx, PD(ctx), CQ(ctx, cqe)


def gid_route(dgid: str, *, is_global: int = 1, traffic_class: int = 0) -> verbs.AHAttr:
    """The address vector connect_qps gives a QP: a global route to ``dgid`` (a host's ``gid``)."""
    return verbs.AHAttr(is_global=is_global, gr=verbs.GlobalRoute(dgid=dgid, traffic_class=traffic_class))


def ud_to_rts(qp: QP, qkey: int = UD_QKEY, sq_psn: int = 0) -> None:
    """Walk a UD QP RESET -> INIT -> RTR -> RTS with ``qkey``."""
    attr = QPAttr(qkey=qkey, sq_psn=sq_psn)
    qp.to_init(attr)
    qp.to_rtr(attr)
    qp.to_rts(attr)


def qp_pair(pd_a: PD, cq_a: CQ | tuple[CQ, CQ], pd_b: PD, cq_b: CQ | tuple[CQ, CQ], *,
            qp_type: int | tuple[int, int] = e.IBV_QPT_RC, cap: QPCap | tuple[QPCap, QPCap] | None = None,
            sq_sig_all: int | tuple[int, int] = 1, srq_b: Any = None, connect: bool = True,
            **connect_kw: Any) -> tuple[QP, QP]:
    """QP ``qa`` in ``pd_a`` (send and receive CQ ``cq_a``, or ``(send, receive)``), then ``qb`` in
    ``pd_b`` (``cq_b`` likewise, and ``srq_b`` if given). ``cap``/``sq_sig_all``: one for both or
    ``(a, b)``, likewise ``qp_type``; ``cap=None`` is QPInitAttr's default. With ``connect``, RC
    and UC pairs (also a mixed one) go through ``connect_qps(qa, qb, **connect_kw)`` and UD QPs
    to RTS (``connect_kw``: ``qkey`` and ``sq_psn``, one for both or ``(a, b)``)."""
    types, caps, sigs = per_side(qp_type), per_side(cap), per_side(sq_sig_all)
    (scq_a, rcq_a), (scq_b, rcq_b) = per_side(cq_a), per_side(cq_b)
    qa = QP(pd_a, QPInitAttr(qp_type=types[0], scq=scq_a, rcq=rcq_a, cap=caps[0], sq_sig_all=sigs[0]))
    qb = QP(pd_b, QPInitAttr(qp_type=types[1], scq=scq_b, rcq=rcq_b, srq=srq_b, cap=caps[1],
                             sq_sig_all=sigs[1]))
    if connect:
        if types == (e.IBV_QPT_UD, e.IBV_QPT_UD):
            qkeys = per_side(connect_kw.pop("qkey", UD_QKEY))
            psns = per_side(connect_kw.pop("sq_psn", 0))
            if connect_kw:
                raise TypeError(f"qp_pair: UD takes qkey and sq_psn, not {sorted(connect_kw)}")
            for qp, qkey, psn in zip((qa, qb), qkeys, psns, strict=True):
                ud_to_rts(qp, qkey, psn)
        else:
            connect_qps(qa, qb, **connect_kw)
    return qa, qb


class TwoHosts:
    """Hosts ``a`` and ``b`` on ``rdmasim.back_to_back``, each with a Context, a PD and a CQ.

    Topology: ``rate``, ``delay``, ``mtu``, ``loss_ab``, ``loss_ba``, ``seed``, ``sim``, ``names``
    (back_to_back's defaults), or ``topology``, a back_to_back made before, for fresh verbs objects
    on its hosts; ``pcap`` starts a capture of every frame to that file; ``cqe``: the CQs' size, one
    for both or ``(a, b)``. Attributes: ``t``, ``sim``, ``pcap``, ``ctx_a/b``, ``pd_a/b``,
    ``cq_a/b``."""

    def __init__(self, *, rate: str | int = "100Gbps", delay: str | int = "1us", mtu: int = 4096,
                 loss_ab: float = 0.0, loss_ba: float = 0.0, seed: int = 1,
                 sim: rdmasim.Simulator | None = None, names: tuple[str, str] = ("a", "b"),
                 pcap: str | Path | None = None, cqe: int | tuple[int, int] = 64,
                 topology: Any = None) -> None:
        if topology is None:
            topology = rdmasim.back_to_back(rate=rate, delay=delay, mtu=mtu, loss_ab=loss_ab,
                                            loss_ba=loss_ba, seed=seed, sim=sim, names=names)
        self.t = topology
        self.sim = self.t.sim
        self.pcap = None if pcap is None else Path(pcap)
        if self.pcap is not None:
            self.sim.capture(str(self.pcap))
        cqe_a, cqe_b = per_side(cqe)
        self.ctx_a, self.pd_a, self.cq_a = open_host(self.t.a, cqe_a)
        self.ctx_b, self.pd_b, self.cq_b = open_host(self.t.b, cqe_b)

    def mr_a(self, size: int, access: int = LOCAL, fill: int | np.ndarray | None = None) -> MR:
        """A region on host a (see ``mr``)."""
        return mr(self.pd_a, size, access, fill)

    def mr_b(self, size: int, access: int = LOCAL, fill: int | np.ndarray | None = None) -> MR:
        """A region on host b (see ``mr``)."""
        return mr(self.pd_b, size, access, fill)

    def qp_pair(self, **kw: Any) -> tuple[QP, QP]:
        """``qp_pair(pd_a, cq_a, pd_b, cq_b, **kw)``: one more pair a -> b on these PDs and CQs."""
        return qp_pair(self.pd_a, self.cq_a, self.pd_b, self.cq_b, **kw)

    def ah_to_b(self) -> verbs.AH:
        """An address handle in ``pd_a`` for host b (UD sends a -> b)."""
        return verbs.AH(self.pd_a, attr=gid_route(self.t.b.gid, is_global=0))

    @staticmethod
    def ip(host: Any) -> int:
        """A host's IPv4 address as the codec's ``src_ip``/``dst_ip`` fields hold it."""
        return int(ipaddress.IPv4Address(host.ip))


class VerbsPair(TwoHosts):
    """``TwoHosts`` (all its arguments) and QP ``qa`` on a facing ``qb`` on b, made by ``qp_pair``
    (``qp_type``, ``cap``, ``sq_sig_all``, ``srq_b``, ``connect`` and, for RC/UC, the knobs of
    ``connect_qps``: ``path_mtu``, ``psn_a``, ``timeout``, ``retry_cnt``, ``recovery``, ...; for UD
    ``qkey`` and ``sq_psn``)."""

    def __init__(self, *, qp_type: int | tuple[int, int] = e.IBV_QPT_RC,
                 cap: QPCap | tuple[QPCap, QPCap] | None = None, sq_sig_all: int | tuple[int, int] = 1,
                 srq_b: Any = None, connect: bool = True, rate: str | int = "100Gbps",
                 delay: str | int = "1us", mtu: int = 4096, loss_ab: float = 0.0, loss_ba: float = 0.0,
                 seed: int = 1, sim: rdmasim.Simulator | None = None, names: tuple[str, str] = ("a", "b"),
                 pcap: str | Path | None = None, cqe: int | tuple[int, int] = 64, topology: Any = None,
                 **connect_kw: Any) -> None:
        super().__init__(rate=rate, delay=delay, mtu=mtu, loss_ab=loss_ab, loss_ba=loss_ba, seed=seed,
                         sim=sim, names=names, pcap=pcap, cqe=cqe, topology=topology)
        self.qa, self.qb = self.qp_pair(qp_type=qp_type, cap=cap, sq_sig_all=sq_sig_all, srq_b=srq_b,
                                        connect=connect, **connect_kw)

    def connect(self, **connect_kw: Any) -> None:
        """``connect_qps(qa, qb, **connect_kw)``, for a pair made with ``connect=False``."""
        connect_qps(self.qa, self.qb, **connect_kw)


class CapturedPair(VerbsPair):
    """The RC pair the wire-level conformance tests (Go-Back-N, IRN, error paths) share: ``qa``
    sends from ``src`` (``size`` random bytes from ``seed``) on host a to ``dst`` on host b
    through ``qb``; every frame goes to ``pcap`` (``tmp_path/cap.pcap``). The CQs hold ``4 * n_wr``
    entries, the QPs ``n_wr`` send and receive WRs; ``psn`` is qa's first PSN and ``connect``
    holds the other connect_qps knobs (timeout, retry_cnt, recovery, IRN knobs)."""

    def __init__(self, tmp_path: Path, *, mtu: int = 1024, psn: int = 0, size: int = 1 << 20,
                 n_wr: int = 64, rate: str = "100Gbps", delay: str = "1us", seed: int = 7,
                 **connect: Any) -> None:
        super().__init__(rate=rate, delay=delay, mtu=mtu, seed=seed, pcap=tmp_path / "cap.pcap",
                         cqe=4 * n_wr, cap=QPCap(max_send_wr=n_wr, max_recv_wr=n_wr), sq_sig_all=1,
                         psn_a=psn, **connect)
        self.src = self.mr_a(size, LOCAL, random_bytes(size, seed))
        self.dst = self.mr_b(size, WRITABLE)
        self.psn = psn
        self.a_ip, self.b_ip = self.ip(self.t.a), self.ip(self.t.b)
        self.n_posted = 0
        self.delay_ns = self.t.link.delay_ps / 1000

    def post(self, length: int, offset: int = 0, opcode: int = e.IBV_WR_RDMA_WRITE, imm: int = 0,
             post_recv: bool = True) -> None:
        """Post WR number ``n_posted``: ``length`` bytes of ``src`` at ``offset`` to ``dst`` at the
        same offset (WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM); for all but a plain WRITE first
        a receive of that range on ``qb`` (unless ``post_recv`` is false)."""
        wr = SendWR(wr_id=self.n_posted, opcode=opcode, imm_data=imm,
                    sg=[SGE(self.src.buf + offset, length, self.src.lkey)])
        if opcode in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM):
            wr.set_wr_rdma(self.dst.rkey, self.dst.buf + offset)
        if opcode != e.IBV_WR_RDMA_WRITE and post_recv:
            self.post_recv(self.n_posted, length, offset)
        self.qa.post_send(wr)
        self.n_posted += 1

    def post_recv(self, wr_id: int, length: int, offset: int) -> None:
        """A receive on ``qb`` of ``dst`` at ``offset``, ``max(length, 1)`` bytes."""
        self.qb.post_recv(recv_wr(wr_id, self.dst, max(length, 1), offset))


# ---- work requests ----

def write_wr(wr_id: int, src: MR, dst: MR, length: int, off: int = 0, roff: int | None = None,
             opcode: int = e.IBV_WR_RDMA_WRITE, **kw: Any) -> SendWR:
    """An RDMA WRITE (or ``opcode``: READ, WRITE_WITH_IMM) of ``length`` bytes between ``src`` at
    ``off`` and ``dst`` at ``roff`` (default ``off``); ``kw`` goes to SendWR (send_flags, imm_data)."""
    wr = SendWR(wr_id=wr_id, opcode=opcode, sg=[SGE(src.buf + off, length, src.lkey)], **kw)
    wr.set_wr_rdma(dst.rkey, dst.buf + (off if roff is None else roff))
    return wr


def recv_wr(wr_id: int, dst: MR, length: int, off: int = 0) -> RecvWR:
    """A receive of up to ``length`` bytes into ``dst`` at ``off``."""
    return RecvWR(wr_id=wr_id, sg=[SGE(dst.buf + off, length, dst.lkey)])


def post_writes(qp: QP, src: MR, dst: MR, n: int, size: int | None = None, **kw: Any) -> None:
    """Post ``size`` bytes (default: all of ``src``) as ``n`` RDMA WRITEs of ``size // n`` bytes,
    ``wr_id`` 0..n-1, each from and to the same offset; ``kw`` goes to SendWR (send_flags)."""
    step = (src.length if size is None else size) // n
    for k in range(n):
        qp.post_send(write_wr(k, src, dst, step, off=k * step, **kw))

