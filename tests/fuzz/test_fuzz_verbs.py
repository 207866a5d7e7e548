"""Fuzzing the verbs API: random sequences of verbs calls with hostile arguments.

Property: no crash, only the documented exception types (PyverbsUserError for malformed
arguments, PyverbsRDMAError where ibv_* would fail; wait_for's TimeoutError/RuntimeError), and the
core stays consistent: every live QP can be queried, and afterwards a fresh connection in each
simulation still moves bytes and completes SUCCESS.

Two simulations with the same seed run side by side so that objects of one are handed to the
other (their keys and addresses have the same numbers). The default run takes a few seconds;
``test_fuzz_verbs_long`` (slow) runs many more sequences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.verbs_pair import TwoHosts, gid_route, qp_pair, write_wr

import rdmasim
from rdmasim import verbs
from rdmasim.errors import PyverbsError
from rdmasim.verbs import CQ, MR, PD, QP, SGE, Context, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

# Values that break C conversions: negative, one past each unsigned width, floats, NaN, wrong types.
EDGE_VALUES: list[Any] = [-1, -(2**63), 2**8, 2**16, 2**24, 2**31, 2**32 + 1, 2**63, 2**64, 2**70,
                          1.5, 0.0, math.nan, math.inf, None, "1", b"\x01", True, [1], object()]


def value(lo: int, hi: int) -> st.SearchStrategy[Any]:
    """Mostly (3 in 4) valid integers, else an edge value, a wrong type or any big integer."""
    hostile = st.one_of(st.sampled_from(EDGE_VALUES), st.integers(-(2**66), 2**66))
    return st.integers(0, 3).flatmap(lambda i: st.integers(lo, hi) if i else hostile)


ACCESS = st.one_of(st.sampled_from([0, e.IBV_ACCESS_LOCAL_WRITE,
                                    e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE,
                                    e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                                    | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC,
                                    e.IBV_ACCESS_REMOTE_WRITE]), value(0, 0xFFFF))
WR_OPCODES = st.one_of(st.sampled_from([e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND,
                                        e.IBV_WR_SEND_WITH_IMM, e.IBV_WR_RDMA_READ,
                                        e.IBV_WR_ATOMIC_CMP_AND_SWP, e.IBV_WR_ATOMIC_FETCH_AND_ADD]),
                       value(0, 20))


def buffers(draw: Callable[[st.SearchStrategy[Any]], Any]) -> Any:
    kind = draw(st.sampled_from(["u8", "f64", "object", "readonly", "strided", "list", "empty", "structured",
                                 "bytearray"]))
    n = draw(st.integers(1, 512))
    return {
        "u8": lambda: np.zeros(n, dtype=np.uint8),
        "f64": lambda: np.zeros(n, dtype=np.float64),
        "object": lambda: np.array([None] * n, dtype=object),
        "readonly": lambda: bytes(n),
        "strided": lambda: np.zeros(2 * n, dtype=np.uint8)[::2],
        "list": lambda: [0] * n,
        "empty": lambda: bytearray(),
        "structured": lambda: np.zeros(n, dtype=[("a", "u4"), ("b", "O")]),
        "bytearray": lambda: bytearray(n),
    }[kind]()


class World:
    """One simulation: two hosts on a link, and the verbs objects made in it so far."""

    def __init__(self, seed: int) -> None:
        self.t = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=seed)
        self.sim = self.t.sim
        self.hosts = [self.t.a, self.t.b]


class Fuzzer:
    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.worlds = [World(5), World(5)]
        self.ctxs: list[Context] = [Context(h) for w in self.worlds for h in w.hosts]
        self.pds: list[PD] = [PD(c) for c in self.ctxs]
        self.cqs: list[CQ] = [CQ(c, 32) for c in self.ctxs]
        self.mrs: list[MR] = [MR(pd, 256, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
                                 | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC) for pd in self.pds]
        self.qps: list[QP] = []
        for i in range(0, len(self.pds), 2):  # a connected pair per simulation to start from
            self.qps += qp_pair(self.pds[i], self.cqs[i], self.pds[i + 1], self.cqs[i + 1],
                                cap=QPCap(8, 8, 2, 2))

    def draw(self, strategy: st.SearchStrategy[Any]) -> Any:
        return self.data.draw(strategy)

    def pick(self, objs: list[Any]) -> Any:
        return self.draw(st.sampled_from(objs)) if objs else None

    def mr_near(self, sim: Any) -> MR:
        """Mostly an MR of ``sim``, sometimes any (of the other simulation too)."""
        near = [mr for mr in self.mrs if mr._host.sim is sim]
        return self.pick(near) if near and self.draw(st.integers(0, 5)) else self.pick(self.mrs)

    def sge(self, sim: Any) -> SGE:
        mr = self.mr_near(sim)
        if self.draw(st.integers(0, 3)):
            off = self.draw(st.integers(0, 300))
            return SGE(mr.buf + off, self.draw(st.integers(0, 300)), mr.lkey)
        s = SGE(mr.buf, 8, mr.lkey)
        setattr(s, self.draw(st.sampled_from(["addr", "length", "lkey"])), self.draw(value(0, 2**32)))
        return s

    # ---- operations: each may raise only PyverbsError ----
    def op_context(self) -> None:
        w = self.pick(self.worlds)
        ctx = Context(self.pick(w.hosts))
        self.ctxs.append(ctx)
        if self.draw(st.booleans()):
            ctx.close()

    def op_pd(self) -> None:
        self.pds.append(PD(self.pick(self.ctxs)))

    def op_mr(self) -> None:
        pd = self.pick(self.pds)
        if self.draw(st.booleans()):
            mr = MR(pd, self.draw(value(1, 4096)), self.draw(ACCESS))
        else:
            mr = MR(pd, access=self.draw(ACCESS), buffer=buffers(self.draw))
        self.mrs.append(mr)

    def op_cq(self) -> None:
        self.cqs.append(CQ(self.pick(self.ctxs), self.draw(value(1, 64)), comp_vector=self.draw(value(0, 3))))

    def op_poll(self) -> None:
        self.pick(self.cqs).poll(self.draw(value(0, 64)))

    def op_qp(self) -> None:
        pd = self.pick(self.pds)
        cap = QPCap()
        for f in ("max_send_wr", "max_recv_wr", "max_send_sge", "max_recv_sge"):
            setattr(cap, f, self.draw(st.one_of(st.integers(1, 16), value(0, 64))))
        near = [cq for cq in self.cqs if cq.ctx.host is pd.ctx.host]  # mostly CQs that can work
        scq, rcq = (self.pick(near or self.cqs) if self.draw(st.integers(0, 5)) else self.pick(self.cqs)
                    for _ in range(2))
        init = QPInitAttr(scq=scq, rcq=rcq, cap=cap)
        if self.draw(st.booleans()):
            init.sq_sig_all = self.draw(value(0, 1))
        self.qps.append(QP(pd, init))

    def op_connect(self) -> None:
        if len(self.qps) < 2:
            return
        kw: dict[str, Any] = {}
        for name, lo, hi in (("psn_a", 0, 2**24 - 1), ("timeout", 0, 31), ("retry_cnt", 0, 7),
                             ("max_rd_atomic", 0, 16), ("traffic_class", 0, 255)):
            if self.draw(st.booleans()):
                kw[name] = self.draw(value(lo, hi))
        if self.draw(st.booleans()):
            kw["path_mtu"] = self.draw(st.one_of(st.sampled_from([256, 1024, 4096]), value(0, 5000)))
        connect_qps(self.pick(self.qps), self.pick(self.qps), **kw)

    def op_modify(self) -> None:
        qp = self.pick(self.qps)
        if qp is None:
            return
        attr = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE)
        for _ in range(self.draw(st.integers(0, 3))):
            field = self.draw(st.sampled_from(["qp_state", "cur_qp_state", "path_mtu", "qp_access_flags",
                                               "pkey_index", "port_num", "dest_qp_num", "rq_psn", "sq_psn",
                                               "max_rd_atomic", "timeout", "retry_cnt", "rnr_retry"]))
            setattr(attr, field, self.draw(value(0, 8)))
        w = self.pick(self.worlds)
        attr.ah_attr = self.draw(st.sampled_from([
            None, verbs.AHAttr(dest=self.pick(w.hosts)),
            gid_route(self.pick(w.hosts).gid),
            gid_route(self.pick(w.hosts).gid, is_global=0),
            gid_route("::1")]))
        qp.modify(attr, self.draw(st.one_of(st.sampled_from([
            e.IBV_QP_STATE, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
            e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
            | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER]), value(0, 2**21))))

    def op_post_send(self) -> None:
        qp = self.pick(self.qps)
        if qp is None:
            return
        sg = [self.sge(qp._sim) for _ in range(self.draw(st.integers(0, 3)))]
        wr = SendWR(wr_id=self.draw(st.integers(0, 2**64 - 1)), opcode=self.draw(st.integers(0, 12)), sg=sg)
        for f, lo, hi in (("opcode", 0, 20), ("send_flags", 0, 15), ("imm_data", 0, 2**32 - 1),
                          ("num_sge", 0, 3), ("wr_id", 0, 2**64 - 1)):
            if self.draw(st.integers(0, 9)) == 0:
                setattr(wr, f, self.draw(value(lo, hi)))
        wr.opcode = self.draw(WR_OPCODES) if self.draw(st.booleans()) else wr.opcode
        mr = self.mr_near(qp._sim)
        wr.set_wr_rdma(mr.rkey, mr.buf + self.draw(st.integers(0, 300)))
        if self.draw(st.integers(0, 4)) == 0:
            setattr(wr, self.draw(st.sampled_from(["rkey", "remote_addr", "compare_add", "swap"])),
                    self.draw(value(0, 2**32)))
        if self.draw(st.integers(0, 6)) == 0:
            wr.next_wr = self.draw(st.sampled_from([wr, SendWR(), RecvWR(), "x"]))
        qp.post_send(wr, [])

    def op_post_recv(self) -> None:
        qp = self.pick(self.qps)
        if qp is None:
            return
        wr = RecvWR(wr_id=self.draw(st.integers(0, 2**64 - 1)),
                    sg=[self.sge(qp._sim) for _ in range(self.draw(st.integers(0, 3)))])
        if self.draw(st.integers(0, 4)) == 0:
            wr.num_sge = self.draw(value(0, 3))
        qp.post_recv(wr)

    def op_run(self) -> None:
        w = self.pick(self.worlds)
        w.sim.run(w.sim.now + self.draw(st.integers(0, 2_000_000)))

    def op_wait(self) -> None:
        w = self.pick(self.worlds)
        try:
            near = [cq for cq in self.cqs if cq.ctx.sim is w.sim]
            w.sim.wait_for(self.pick(near if self.draw(st.integers(0, 5)) else self.cqs),
                           self.draw(value(1, 4)), timeout="5us")
        except (TimeoutError, RuntimeError):
            pass  # documented outcomes of wait_for

    def op_close(self) -> None:
        pool = self.draw(st.sampled_from([self.qps, self.mrs, self.cqs, self.pds, self.ctxs]))
        obj = self.pick(pool)
        if obj is not None:
            obj.close()

    OPS = ("op_context", "op_pd", "op_mr", "op_cq", "op_poll", "op_qp", "op_connect", "op_modify",
           "op_post_send", "op_post_recv", "op_run", "op_wait", "op_close")

    def check_consistent(self) -> None:
        for qp in self.qps:
            if not qp._closed:
                assert 0 <= qp.qp_state <= e.IBV_QPS_ERR
                qp.inspect()
        for cq in self.cqs:
            if not cq._closed:
                assert 0 <= len(cq) <= cq.cqe or cq.cqe == 0
        for w in self.worlds:
            assert w.sim.pool_stats()["pkts_in_use"] >= 0

    def check_still_works(self) -> None:
        """After everything: run each simulation on, then a fresh connection moves bytes."""
        for w in self.worlds:
            w.sim.run(w.sim.now + 200_000_000)  # bounded: QPs left retrying give up or keep waiting
            h = TwoHosts(topology=w.t, cqe=8)
            qa, _ = h.qp_pair()
            src = h.mr_a(64, e.IBV_ACCESS_LOCAL_WRITE)
            src.write(bytes(range(64)))
            dst = h.mr_b(64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
            qa.post_send(write_wr(77, src, dst, 64))
            wcs = w.sim.wait_for(h.cq_a, 1, timeout="1ms")
            assert [(c.wr_id, c.status) for c in wcs] == [(77, e.IBV_WC_SUCCESS)]
            assert dst.read(64) == bytes(range(64))


def run_fuzz(data: st.DataObject, steps: int) -> None:
    f = Fuzzer(data)
    for _ in range(data.draw(st.integers(1, steps))):
        op = data.draw(st.sampled_from(Fuzzer.OPS))
        try:
            getattr(f, op)()
        except PyverbsError:
            pass  # the documented error types; anything else fails the test
        f.check_consistent()
    f.check_still_works()


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                 derandomize=False)


@settings(max_examples=150, **_SETTINGS)  # type: ignore[arg-type]
@given(st.data())
def test_fuzz_verbs(data: st.DataObject) -> None:
    run_fuzz(data, 25)


@pytest.mark.slow
@settings(max_examples=1500, **_SETTINGS)  # type: ignore[arg-type]
@given(st.data())
def test_fuzz_verbs_long(data: st.DataObject) -> None:
    run_fuzz(data, 80)
