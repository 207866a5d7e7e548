"""Robustness: the wire decoder never crashes on any input, and no verbs call sequence, however
wrong, crashes the process — each call returns, raises a rdmasim error (PyverbsError or
ValueError), or the work completes with an error status. Run under ASan/UBSan in CI."""

from __future__ import annotations

import os
import struct
import tempfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdmasim
from rdmasim import codec
from rdmasim.errors import PyverbsError
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

_LONG = os.environ.get("RDMASIM_LONG") == "1"
_N = 2000 if _LONG else 150
_FAST = settings(max_examples=_N, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
ALLOWED = (PyverbsError, ValueError)


# ---- the wire decoder ----------------------------------------------------------------------------

def _decode_ok(frame: bytes) -> None:
    try:
        out = codec.decode(frame)
    except ValueError:
        return
    assert isinstance(out, dict)


@_FAST
@given(st.binary(max_size=300))
def test_decode_arbitrary_bytes(frame: bytes) -> None:
    _decode_ok(frame)


def _valid_frames() -> list[bytes]:
    """Frames of a short traced WRITE + READ exchange, captured to pcap and read back."""
    t = rdmasim.back_to_back(rate="100Gbps", mtu=4096, seed=1)
    frames: list[bytes] = []
    ca, cb = Context(t.a), Context(t.b)
    pa, pb = PD(ca), PD(cb)
    qa = QP(pa, QPInitAttr(scq=CQ(ca, 16), rcq=CQ(ca, 16), cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qb = QP(pb, QPInitAttr(scq=CQ(cb, 16), rcq=CQ(cb, 16), cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    acc = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
    la, rb = MR(pa, 3000, acc), MR(pb, 3000, acc)
    connect_qps(qa, qb, path_mtu=1024, max_rd_atomic=1)
    for i, op in enumerate((e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ)):
        wr = SendWR(wr_id=i, opcode=op, sg=[SGE(la.buf, 2500, la.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(rb.rkey, rb.buf)
        qa.post_send(wr)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "x.pcap")
        t.sim.capture(path)
        t.sim.run("1ms")
        t.sim.close_capture()
        data = open(path, "rb").read()
    off = 24  # classic pcap: global header, then (ts_sec, ts_frac, incl_len, orig_len) records
    while off + 16 <= len(data):
        n = struct.unpack_from("<I", data, off + 8)[0]
        frames.append(data[off + 16 : off + 16 + n])
        off += 16 + n
    return frames


_FRAMES: list[bytes] = []


def _frames() -> list[bytes]:
    if not _FRAMES:
        _FRAMES.extend(f for f in _valid_frames() if f)
    return _FRAMES


@_FAST
@given(st.data())
def test_decode_mutated_valid_frames(data: st.DataObject) -> None:
    frames = _frames()
    if not frames:
        return
    f = bytearray(data.draw(st.sampled_from(frames)))
    for _ in range(data.draw(st.integers(1, 6))):
        kind = data.draw(st.sampled_from(("flip", "set", "cut", "extend", "insert")))
        pos = data.draw(st.integers(0, max(len(f) - 1, 0)))
        if kind == "flip" and f:
            f[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "set" and f:
            f[pos] = data.draw(st.sampled_from((0, 0xFF, 0x7F, 0x80)))
        elif kind == "cut":
            del f[pos:]
        elif kind == "extend":
            f += data.draw(st.binary(max_size=64))
        else:
            f[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
    _decode_ok(bytes(f))


# ---- wrong verbs call sequences ------------------------------------------------------------------

_ACC = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ
        | e.IBV_ACCESS_REMOTE_ATOMIC)
_LENGTHS = st.sampled_from((0, 1, 8, 4096, 4097, 2**31, 2**32 - 1))
_OPCODES = st.sampled_from(
    (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_READ, e.IBV_WR_SEND, e.IBV_WR_ATOMIC_FETCH_AND_ADD,
     e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_LOCAL_INV, 99)
)
_KEYS = st.sampled_from(("good", "bad", 0, 2**32 - 1))
_ADDRS = st.sampled_from(("good", "good+1", 0, 2**64 - 1, "end"))
_STATES = st.sampled_from(
    (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS, e.IBV_QPS_SQD, e.IBV_QPS_SQE,
     e.IBV_QPS_ERR, 42)
)

_ACTIONS = st.one_of(
    st.tuples(st.just("send"), st.sampled_from((0, 1)), _OPCODES, _LENGTHS, _KEYS, _ADDRS, _KEYS),
    st.tuples(st.just("recv"), st.sampled_from((0, 1)), _LENGTHS, _KEYS),
    st.tuples(st.just("modify"), st.sampled_from((0, 1)), _STATES, st.integers(0, 2**21 - 1),
              st.sampled_from((0, 1, 7, 255))),
    st.tuples(st.just("connect"), st.sampled_from((0, 1, 4)), st.sampled_from((256, 1024, 4096, 100))),
    st.tuples(st.just("close"), st.sampled_from(("mr_a", "mr_b", "qp_a", "qp_b", "cq_a", "pd_a", "ctx_a"))),
    st.tuples(st.just("run"), st.sampled_from((1, 10, 1000))),
    st.tuples(st.just("poll"), st.sampled_from((0, 1)), st.sampled_from((0, 1, 64))),
    st.tuples(st.just("query"), st.sampled_from((0, 1))),
)


class _Env:
    def __init__(self) -> None:
        t = rdmasim.back_to_back(rate="100Gbps", mtu=4096, seed=3)
        self.sim = t.sim
        self.ctx = [Context(t.a), Context(t.b)]
        self.pd = [PD(c) for c in self.ctx]
        self.cq = [CQ(c, 8) for c in self.ctx]
        self.mr = [MR(p, 4096, _ACC) for p in self.pd]
        cap = QPCap(max_send_wr=4, max_recv_wr=4)
        self.qp = [QP(p, QPInitAttr(scq=c, rcq=c, cap=cap)) for p, c in zip(self.pd, self.cq, strict=True)]

    def key(self, k: object, i: int, remote: bool) -> int:
        mr = self.mr[1 - i] if remote else self.mr[i]
        if k == "good":
            return mr.rkey if remote else mr.lkey
        if k == "bad":
            return (mr.rkey if remote else mr.lkey) + 0x100
        return int(k)  # type: ignore[call-overload]

    def addr(self, a: object, i: int, remote: bool) -> int:
        mr = self.mr[1 - i] if remote else self.mr[i]
        return {"good": mr.buf, "good+1": mr.buf + 1, "end": mr.buf + 4096}.get(a, a)  # type: ignore[arg-type]

    def do(self, act: tuple) -> None:
        kind, *a = act
        if kind == "send":
            i, op, n, lkey, raddr, rkey = a
            sge = SGE(self.addr("good", i, False), n, self.key(lkey, i, False))
            wr = SendWR(wr_id=7, opcode=op, sg=[sge], send_flags=e.IBV_SEND_SIGNALED)
            if op in (e.IBV_WR_ATOMIC_FETCH_AND_ADD, e.IBV_WR_ATOMIC_CMP_AND_SWP):
                wr.set_wr_atomic(self.key(rkey, i, True), self.addr(raddr, i, True), 1, 2)
            else:
                wr.set_wr_rdma(self.key(rkey, i, True), self.addr(raddr, i, True))
            self.qp[i].post_send(wr)
        elif kind == "recv":
            i, n, lkey = a
            self.qp[i].post_recv(RecvWR(wr_id=8, sg=[SGE(self.mr[i].buf, n, self.key(lkey, i, False))]))
        elif kind == "modify":
            i, state, mask, rd = a
            self.qp[i].modify(QPAttr(qp_state=state, max_rd_atomic=rd, max_dest_rd_atomic=rd), mask)
        elif kind == "connect":
            rd, mtu = a
            connect_qps(self.qp[0], self.qp[1], path_mtu=mtu, max_rd_atomic=rd, timeout=1, retry_cnt=1)
        elif kind == "close":
            (what,) = a
            obj = {"mr_a": self.mr[0], "mr_b": self.mr[1], "qp_a": self.qp[0], "qp_b": self.qp[1],
                   "cq_a": self.cq[0], "pd_a": self.pd[0], "ctx_a": self.ctx[0]}[what]
            obj.close()
        elif kind == "run":
            (us,) = a
            self.sim.run(self.sim.now + us * 1_000_000)
        elif kind == "poll":
            i, n = a
            _, wcs = self.cq[i].poll(n)
            for wc in wcs:
                assert isinstance(wc.status, int)
        else:
            (i,) = a
            self.qp[i].query()


@settings(max_examples=_N * 2, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ACTIONS, min_size=1, max_size=12))
def test_wrong_verbs_sequences_never_crash(actions: list[tuple]) -> None:
    env = _Env()
    for act in [*actions, ("run", 1000), ("poll", 0, 64), ("poll", 1, 64)]:
        try:
            env.do(act)
        except ALLOWED:
            pass


def test_read_with_max_rd_atomic_zero_errors_or_completes() -> None:
    env = _Env()
    env.do(("connect", 0, 1024))
    try:
        env.do(("send", 0, e.IBV_WR_RDMA_READ, 100, "good", "good", "good"))
    except ALLOWED:
        return
    env.sim.run("5ms")
    n, wcs = env.cq[0].poll(8)
    assert n == 1 and isinstance(wcs[0].status, int)


def test_zero_and_huge_lengths_are_rejected_or_fail_cleanly() -> None:
    env = _Env()
    env.do(("connect", 1, 1024))
    for n in (0, 2**31, 2**32 - 1):
        try:
            env.do(("send", 0, e.IBV_WR_RDMA_WRITE, n, "good", "good", "good"))
        except ALLOWED:
            continue
    env.sim.run("5ms")
    _, wcs = env.cq[0].poll(8)
    assert all(isinstance(w.status, int) for w in wcs)
    assert np.asarray(env.mr[1].array).size == 4096
