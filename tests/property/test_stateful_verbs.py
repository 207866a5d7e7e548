"""Random verbs sequences against a small Python model of RDMA memory semantics (issue 3).

A hypothesis RuleBasedStateMachine drives one RC connection a -> b (path MTU 256, so messages
span several packets): it registers and deregisters memory regions on both hosts (some in another
PD, some without remote or local-write access), posts RDMA WRITE / READ / SEND / atomics with
valid and invalid keys, ranges and alignment, posts receives, turns loss on and off, runs the
simulation, moves QPs to ERR and reconnects them through RESET.

The model (pure Python, numpy byte arrays) executes each batch of posted work requests in order
with the rules of protocol.md 5 as rxe applies them: the requester's local SGE check
(IBV_WC_LOC_PROT_ERR), then at the responder the QP access flags (NAK invalid request ->
IBV_WC_REM_INV_REQ_ERR), the rkey / PD / MR access / range check (NAK remote access ->
IBV_WC_REM_ACCESS_ERR), atomic alignment (IBV_WC_REM_INV_REQ_ERR), receive availability
(RNR -> IBV_WC_RNR_RETRY_EXC_ERR with rnr_retry=1) and receive length (IBV_WC_REM_INV_REQ_ERR,
responder IBV_WC_LOC_LEN_ERR). It predicts every completion and every byte of every region.

Invariants checked after every run:
* one completion per signaled WR, every WR completes on error (IBV_WC_WR_FLUSH_ERR after the
  first error), all in posting order, statuses as the model says;
* receive completions in posting order, with the byte counts of the SENDs;
* memory of every region (also deregistered ones, which must never change) equal to the model's.

Where the outcome is legitimately timing dependent the model allows exactly the possible
outcomes and then adopts what happened: WRs that were in flight when the QP failed may or may not
have executed at the responder (a prefix of them did; bytes of a multi-packet WRITE that was cut
short may be partly written), and with loss a lost NAK/ACK can end in IBV_WC_RETRY_EXC_ERR.
Atomics are never executed twice, whatever the loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from support.verbs_pair import qp_pair

import rdmasim
from rdmasim.verbs import CQ, MR, PD, SGE, Context, QPAttr, QPCap, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

MTU = 256
LW, RW, RR, RA = (e.IBV_ACCESS_LOCAL_WRITE, e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_READ,
                  e.IBV_ACCESS_REMOTE_ATOMIC)
REMOTE_ALL = RW | RR | RA
U64 = (1 << 64) - 1
RBUF_SLOTS, RBUF_SLOT = 8, 512

S_OK = e.IBV_WC_SUCCESS
S_FLUSH = e.IBV_WC_WR_FLUSH_ERR
S_LOC_PROT = e.IBV_WC_LOC_PROT_ERR
S_INV_REQ = e.IBV_WC_REM_INV_REQ_ERR
S_ACCESS = e.IBV_WC_REM_ACCESS_ERR
S_RETRY = e.IBV_WC_RETRY_EXC_ERR
S_RNR = e.IBV_WC_RNR_RETRY_EXC_ERR
REMOTE_NAKS = {S_INV_REQ, S_ACCESS}  # the responder goes to ERR

WRITE, READ, SEND, FAA, CAS = "WRITE", "READ", "SEND", "FAA", "CAS"
VERB = {WRITE: e.IBV_WR_RDMA_WRITE, READ: e.IBV_WR_RDMA_READ, SEND: e.IBV_WR_SEND,
        FAA: e.IBV_WR_ATOMIC_FETCH_AND_ADD, CAS: e.IBV_WR_ATOMIC_CMP_AND_SWP}
WC_OP = {WRITE: e.IBV_WC_RDMA_WRITE, READ: e.IBV_WC_RDMA_READ, SEND: e.IBV_WC_SEND,
         FAA: e.IBV_WC_FETCH_ADD, CAS: e.IBV_WC_COMP_SWAP}


@dataclass
class ModelMR:
    host: str  # "a" (requester) or "b" (responder)
    mr: MR
    pd_ok: bool  # registered in the PD of the host's QP
    arr: np.ndarray  # the region's bytes, kept: a closed MR refuses MR.array, the memory stays ours
    valid: bool = True

    @property
    def size(self) -> int:
        return self.mr.length


@dataclass
class Wr:
    kind: str
    wr_id: int
    signaled: bool
    length: int  # local SGE length (8 for atomics)
    lkey: int
    laddr: int
    rkey: int = 0
    raddr: int = 0
    compare_add: int = 0
    swap: int = 0


@dataclass
class Recv:
    wr_id: int
    slot: int
    length: int


@dataclass
class World:
    """Model state a batch executes against (copied per candidate outcome)."""

    mem: list[np.ndarray]
    rq: list[Recv]
    qb_err: bool
    sends_done: list[int] = field(default_factory=list)  # byte counts of SENDs that completed
    len_err_recv: Recv | None = None

    def copy(self) -> World:
        return World([m.copy() for m in self.mem], list(self.rq), self.qb_err, list(self.sends_done),
                     self.len_err_recv)


class RdmaMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.t = rdmasim.back_to_back(rate="100Gbps", delay="1us", mtu=1024, seed=3)
        self.sim = self.t.sim
        ctx_a, ctx_b = Context(self.t.a), Context(self.t.b)
        self.ctx = {"a": ctx_a, "b": ctx_b}
        self.pd = {"a": PD(ctx_a), "b": PD(ctx_b)}
        self.other_pd = {"a": PD(ctx_a), "b": PD(ctx_b)}
        self.scq = CQ(ctx_a, 8192)
        self.rcq_a = CQ(ctx_a, 16)
        self.scq_b = CQ(ctx_b, 16)
        self.rcq = CQ(ctx_b, 8192)
        cap = QPCap(max_send_wr=64, max_recv_wr=64)
        self.qa, self.qb = qp_pair(self.pd["a"], (self.scq, self.rcq_a), self.pd["b"], (self.scq_b, self.rcq),
                                   cap=cap, sq_sig_all=0, connect=False)
        self.mrs: list[ModelMR] = []
        self.mem: list[np.ndarray] = []  # the model's bytes of every region ever registered
        self.rng = np.random.default_rng(1)
        self.rbuf = self._reg("b", RBUF_SLOTS * RBUF_SLOT, LW, True)
        self.pending: list[Wr] = []
        self.rq: list[Recv] = []
        self.n_recv = 0
        self.next_wr = 0
        self.loss = 0.0
        self.qa_err = False
        self.qb_err = False
        self.qp_access = REMOTE_ALL
        self.runs = 0

    # ---------------------------------------------------------------- helpers
    def _reg(self, host: str, size: int, access: int, pd_ok: bool) -> int:
        pd = self.pd[host] if pd_ok else self.other_pd[host]
        mr = MR(pd, size, access)
        mr.array[:] = self.rng.integers(0, 256, size, dtype=np.uint8)
        self.mrs.append(ModelMR(host, mr, pd_ok, mr.array))
        self.mem.append(mr.array.copy())
        return len(self.mrs) - 1

    def _resolve(self, host: str, key: int, remote: bool, need: int, addr: int,
                 length: int) -> tuple[int, int] | None:
        """protocol.md 5 / rxe lookup_mr + range check: (region index, offset) or None."""
        for i, m in enumerate(self.mrs):
            if m.host != host or not m.valid:
                continue
            if (m.mr.rkey if remote else m.mr.lkey) != key:
                continue
            if not m.pd_ok or (m.mr.access & need) != need:
                return None
            if addr < m.mr.buf or addr + length > m.mr.buf + m.size:
                return None
            return i, addr - m.mr.buf
        return None

    def _local_ok(self, wr: Wr) -> bool:
        need = LW if wr.kind in (READ, FAA, CAS) else 0
        return not wr.length or self._resolve("a", wr.lkey, False, need, wr.laddr, wr.length) is not None

    def _connect(self, psn_a: int, psn_b: int, access: int, max_rd_atomic: int) -> None:
        connect_qps(self.qa, self.qb, path_mtu=MTU, psn_a=psn_a, psn_b=psn_b, timeout=6,
                    retry_cnt=3, rnr_retry=1, min_rnr_timer=1, max_rd_atomic=max_rd_atomic,
                    access=LW | access)
        self.qp_access = access
        self.qa_err = self.qb_err = False

    def _execute(self, w: World, wr: Wr) -> int:
        """Run one WR on the model; SUCCESS or the error status the requester must see."""
        need = LW if wr.kind in (READ, FAA, CAS) else 0
        loc = None
        if wr.length:
            loc = self._resolve("a", wr.lkey, False, need, wr.laddr, wr.length)
            if loc is None:
                return S_LOC_PROT
        if w.qb_err:
            return S_RETRY  # the responder drops everything: retries run out
        if wr.kind == SEND:
            if not w.rq:
                return S_RNR  # rnr_retry=1 and no receive appears during the run
            r = w.rq.pop(0)
            if wr.length > r.length:
                # the packets that fit are placed before the one that overflows is refused
                fit = r.length // MTU * MTU
                if fit:
                    assert loc is not None
                    off = r.slot * RBUF_SLOT
                    w.mem[self.rbuf][off:off + fit] = w.mem[loc[0]][loc[1]:loc[1] + fit]
                w.qb_err = True
                w.len_err_recv = r
                return S_INV_REQ
            if wr.length:
                assert loc is not None
                src = w.mem[loc[0]][loc[1]:loc[1] + wr.length]
                off = r.slot * RBUF_SLOT
                w.mem[self.rbuf][off:off + wr.length] = src
            w.sends_done.append(wr.length)
            return S_OK
        perm = {WRITE: RW, READ: RR, FAA: RA, CAS: RA}[wr.kind]
        if not self.qp_access & perm:
            w.qb_err = True
            return S_INV_REQ
        rlen = 8 if wr.kind in (FAA, CAS) else wr.length
        rem = None
        if rlen:
            rem = self._resolve("b", wr.rkey, True, perm, wr.raddr, rlen)
            if rem is None:
                w.qb_err = True
                return S_ACCESS
        if wr.kind in (FAA, CAS) and wr.raddr % 8:
            w.qb_err = True
            return S_INV_REQ
        if rlen == 0:
            return S_OK
        assert rem is not None and loc is not None
        rm = w.mem[rem[0]]
        lm = w.mem[loc[0]]
        ro, lo = rem[1], loc[1]
        if wr.kind == WRITE:
            rm[ro:ro + rlen] = lm[lo:lo + rlen]
        elif wr.kind == READ:
            lm[lo:lo + rlen] = rm[ro:ro + rlen]
        else:
            orig = int(rm[ro:ro + 8].view(np.uint64)[0])
            if wr.kind == FAA:
                new = (orig + wr.compare_add) & U64
            else:
                new = wr.swap if orig == wr.compare_add else orig
            rm[ro:ro + 8] = np.frombuffer(np.uint64(new).tobytes(), dtype=np.uint8)
            lm[lo:lo + 8] = np.frombuffer(np.uint64(orig).tobytes(), dtype=np.uint8)
        return S_OK

    def _candidates(self, n: int, k: int, err: int | None, lossy: bool) -> list[tuple[int, list[int]]]:
        """(m, statuses) for every acceptable outcome: m WRs succeeded first (protocol.md 3.4)."""
        out = []
        for m in range(0, k + 1):
            if m == n:
                out.append((m, [S_OK] * n))
                continue
            if err == S_LOC_PROT and m <= k < n:
                # design.md: WQEs before a local error that were still unacknowledged are flushed
                out.append((m, [S_OK] * m + [S_FLUSH] * (k - m) + [S_LOC_PROT] + [S_FLUSH] * (n - k - 1)))
            elif err is not None and m == k:
                out.append((m, [S_OK] * k + [err] + [S_FLUSH] * (n - k - 1)))
            if lossy or err == S_RETRY:
                out.append((m, [S_OK] * m + [S_RETRY] + [S_FLUSH] * (n - m - 1)))
        return out

    # ---------------------------------------------------------------- run + check
    def _run_and_check(self, flushed_by_modify: bool = False) -> None:
        batch, self.pending = self.pending, []
        self.sim.run_until_idle()
        self.runs += 1
        lossy = self.loss > 0
        # the model: execute the batch in order until the first error
        world = World([m.copy() for m in self.mem], list(self.rq), self.qb_err)
        states = [world.copy()]
        k, err = len(batch), None
        if self.qa_err and not flushed_by_modify:
            k, err = 0, S_FLUSH  # posted to a QP in ERR: flushed at once, never sent
        else:
            for i, wr in enumerate(batch):
                st_ = self._execute(world, wr)
                if st_ != S_OK:
                    k, err = i, st_
                    break
                states.append(world.copy())
        failed_state = world  # after the failing WR (it may have partly scattered a SEND)
        n = len(batch)
        # A local SGE error is found when the WR is built, which can be before the NAK (or RNR
        # NAK, or last retry) of an earlier WR arrives: then the earlier WR is flushed instead.
        k_local = next((i for i, wr in enumerate(batch) if not self._local_ok(wr)), None)
        overtaken = err not in (None, S_LOC_PROT, S_FLUSH) and k_local is not None and k_local > k
        # ---- send completions
        _, wcs = self.scq.poll(8192)
        got = [(w.wr_id, w.status) for w in wcs]
        if err == S_FLUSH or flushed_by_modify:
            first_local = err == S_LOC_PROT and k == 0
            expect = [(wr.wr_id, S_LOC_PROT if (first_local and i == 0) else S_FLUSH)
                      for i, wr in enumerate(batch)]
            assert got == expect, (got, expect)
            m = 0
            k = 0 if err == S_FLUSH else k
        else:
            matches = []
            cands_st = self._candidates(n, k, err, lossy)
            if overtaken:
                assert k_local is not None
                cands_st += [(m_, [S_OK] * m_ + [S_FLUSH] * (k_local - m_) + [S_LOC_PROT]
                              + [S_FLUSH] * (n - k_local - 1)) for m_ in range(k + 1)]
            for m_, statuses in cands_st:
                exp = [(wr.wr_id, s) for wr, s in zip(batch, statuses, strict=True)
                       if s != S_OK or wr.signaled]
                if exp == got:
                    matches.append(m_)
            assert matches, (f"completions {got} do not fit the model: first error {err} at {k} "
                             f"of {[(w.wr_id, w.kind) for w in batch]}, loss={self.loss}")
            m = min(matches)
        for w in wcs:
            if w.status == S_OK:
                wr = next(x for x in batch if x.wr_id == w.wr_id)
                assert w.opcode == WC_OP[wr.kind]
                assert w.byte_len == (8 if wr.kind in (FAA, CAS) else wr.length)
                assert w.qp_num == self.qa.qp_num
        for _, s_ in got:
            event(f"status {e.wc_status_to_str(s_)}")
        event(f"batch of {min(n, 10)}{'+' if n >= 10 else ''} WRs, loss={lossy}")
        any_error = any(s != S_OK for _, s in got)
        # ---- QP states
        if any_error or self.qa_err:
            assert self.qa.qp_state == e.IBV_QPS_ERR
            self.qa_err = True
        else:
            assert self.qa.qp_state == e.IBV_QPS_RTS
        qb_now = self.qb.qp_state == e.IBV_QPS_ERR
        if not lossy and not flushed_by_modify and err in REMOTE_NAKS and not overtaken:
            assert qb_now, "a NAK that ends the connection moves the responder to ERR (class C)"
        if not lossy and err in (S_LOC_PROT, S_RNR, None) and not self.qb_err and not overtaken:
            assert not qb_now, "the responder is unaffected"
        self.qb_err = qb_now
        # ---- receive completions (in posting order; SENDs executed = a prefix of the batch)
        _, rwcs = self.rcq.poll(8192)
        certain = len(states[m].sends_done)
        possible = len(states[-1].sends_done)
        lens = states[-1].sends_done
        i = 0
        while i < len(rwcs) and rwcs[i].status == S_OK:
            assert rwcs[i].wr_id == self.rq[i].wr_id
            assert rwcs[i].byte_len == lens[i] and rwcs[i].opcode == e.IBV_WC_RECV
            i += 1
        assert certain <= i <= possible, (certain, i, possible)
        if i < len(rwcs) and rwcs[i].status == e.IBV_WC_LOC_LEN_ERR:
            assert failed_state.len_err_recv is not None and i == possible
            assert rwcs[i].wr_id == self.rq[i].wr_id
            i += 1
        rest = rwcs[i:]
        assert [(w.wr_id, w.status) for w in rest] == [(r.wr_id, S_FLUSH) for r in self.rq[i:i + len(rest)]]
        i += len(rest)
        if self.qb_err:
            assert i == len(self.rq), "entering ERR flushes every posted receive"
        else:
            assert not rest
        self.rq = self.rq[i:]
        # ---- memory: every byte is one that some allowed outcome gives it
        cands = [s.mem for s in states[m:]]
        if err is not None and err != S_FLUSH and k < n:
            cands.append(failed_state.mem)
        for idx, mm in enumerate(self.mrs):
            actual = mm.arr
            ok = np.zeros(actual.size, dtype=bool)
            for c in cands:
                ok |= actual == c[idx]
            if not ok.all():
                bad = int(np.flatnonzero(~ok)[0])
                raise AssertionError(
                    f"region {idx} ({mm.host}, valid={mm.valid}) byte {bad} = {actual[bad]}, model "
                    f"{[int(c[idx][bad]) for c in cands]}; batch {[(w.wr_id, w.kind) for w in batch]}, "
                    f"first error {err} at {k}, {m} succeeded")
            if len(cands) == 1 or not mm.valid:
                assert np.array_equal(actual, cands[0][idx])
            self.mem[idx] = actual.copy()

    # ---------------------------------------------------------------- rules
    @initialize(psn_a=st.integers(0, 2**24 - 1), psn_b=st.integers(0, 2**24 - 1),
                rd=st.integers(1, 4))
    def start(self, psn_a: int, psn_b: int, rd: int) -> None:
        self._connect(psn_a, psn_b, REMOTE_ALL, rd)
        self._reg("a", 2048, LW, True)
        self._reg("b", 2048, LW | REMOTE_ALL, True)

    @precondition(lambda self: len(self.mrs) < 12)
    @rule(host=st.sampled_from("ab"), size=st.sampled_from([64, 256, 600, 1024, 2048]),
          remote=st.sampled_from([0, RW, RR, RA, RW | RR, REMOTE_ALL, REMOTE_ALL, REMOTE_ALL]),
          lw=st.sampled_from([True, True, True, False]), pd_ok=st.sampled_from([True] * 5 + [False]))
    def register(self, host: str, size: int, remote: int, lw: bool, pd_ok: bool) -> None:
        access = remote | LW if (lw or remote & (RW | RA)) else remote
        self._reg(host, size, access, pd_ok)

    @rule(pick=st.integers(0, 100))
    def deregister(self, pick: int) -> None:
        live = [i for i, m in enumerate(self.mrs) if m.valid and i != self.rbuf]
        if not live:
            return
        i = live[pick % len(live)]
        m = self.mrs[i]
        # posted, not yet completed send WRs naming its lkey keep a region in use. Posting to an
        # idle port builds the first WR at once: if its SGE is bad the QP is in ERR already and
        # every pending WR has been flushed (so has everything posted to a QP in ERR).
        outstanding = (not self.qa_err and bool(self.pending) and self._local_ok(self.pending[0]))
        busy = m.host == "a" and outstanding and any(w.lkey == m.mr.lkey for w in self.pending)
        if busy:
            with pytest.raises(Exception, match="in use"):
                m.mr.close()
            return
        if m.host == "b" and self.qb.inspect()["in_msg"] == 2:
            # b is inside a multi-packet WRITE whose sender went to ERR: if it targets this region,
            # the region stays in use (EBUSY naming the WRITE); the model does not track which
            try:
                m.mr.close()
            except Exception as exc:
                assert "RDMA WRITE being received" in str(exc), exc
                return
            m.valid = False
            return
        m.mr.close()
        m.valid = False

    def _target(self, host: str, pick: int, off: int, length: int, bad: str,
                remote: bool) -> tuple[int, int, int]:
        """(key, address, length) in one of the host's regions; `bad` makes it wrong on purpose."""
        pool = [m for m in self.mrs if m.host == host and m is not self.mrs[self.rbuf]]
        live = [m for m in pool if m.valid]
        if bad == "stale":
            pool = [m for m in pool if not m.valid] or pool
        elif live:
            pool = live
        m = pool[pick % len(pool)]
        key = m.mr.rkey if remote else m.mr.lkey
        if bad == "key":
            key ^= 0x100 if pick % 2 else 0x01
        if bad == "range":
            off = m.size - length // 2 + off % 9  # crosses (or starts past) the end
        else:
            length = min(length, m.size)
            off = off % (m.size - length + 1)
        return key, m.mr.buf + off, length

    def _needs_fence(self, wr: Wr) -> bool:
        """IBV_SEND_FENCE where the program would otherwise race with an earlier READ/atomic:
        * a WRITE/SEND whose source bytes an earlier READ/atomic writes (its data may be gathered
          before the response lands: undefined without a fence, on any RDMA NIC);
        * a WRITE/atomic to remote bytes an earlier READ reads: if a READ response is lost, the
          re-issued READ is re-executed against current memory (rxe duplicate_request too) and may
          return the later data."""
        def span(addr: int, n: int) -> tuple[int, int]:
            return addr, addr + n

        def overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
            return a[0] < b[1] and b[0] < a[1]

        mine_l = span(wr.laddr, wr.length)
        mine_r = span(wr.raddr, 8 if wr.kind in (FAA, CAS) else wr.length)
        for p in self.pending:
            if p.kind not in (READ, FAA, CAS):
                continue
            if wr.kind in (WRITE, SEND) and overlap(mine_l, span(p.laddr, p.length)):
                return True
            if p.kind == READ and wr.kind in (WRITE, FAA, CAS) and overlap(mine_r, span(p.raddr, p.length)):
                return True
        return False

    WR_SPEC = st.fixed_dictionaries({
        "kind": st.sampled_from([WRITE, WRITE, READ, READ, SEND, SEND, FAA, CAS]),
        "lpick": st.integers(0, 100), "loff": st.integers(0, 4096),
        "length": st.one_of(st.integers(0, 8), st.integers(0, 700), st.sampled_from([255, 256, 257, 512])),
        "rpick": st.integers(0, 100), "roff": st.integers(0, 4096),
        "bad": st.sampled_from(["none"] * 36 + ["lkey", "rkey", "lstale", "rstale", "lrange", "rrange"]),
        "misalign": st.sampled_from([0] * 9 + [4]),
        "operand": st.integers(0, U64), "swap": st.integers(0, U64), "signaled": st.booleans(),
        "recv": st.sampled_from([True, True, True, False]), "slack": st.integers(0, 64)})

    @precondition(lambda self: len(self.pending) < 24)
    @rule(specs=st.lists(WR_SPEC, min_size=1, max_size=5))
    def post(self, specs: list[dict[str, Any]]) -> None:
        for spec in specs:
            self._post_one(**spec)

    # posting and running are the point: the same rules again give them more weight
    @precondition(lambda self: len(self.pending) < 24)
    @rule(specs=st.lists(WR_SPEC, min_size=1, max_size=5))
    def post_more(self, specs: list[dict[str, Any]]) -> None:
        self.post(specs)

    @precondition(lambda self: len(self.pending) < 24)
    @rule(specs=st.lists(WR_SPEC, min_size=1, max_size=5))
    def post_again(self, specs: list[dict[str, Any]]) -> None:
        self.post(specs)

    def _post_one(self, kind: str, lpick: int, loff: int, length: int, rpick: int, roff: int, bad: str,
                  misalign: int, operand: int, swap: int, signaled: bool, recv: bool,
                  slack: int) -> None:
        atomic = kind in (FAA, CAS)
        if kind == SEND and recv:  # usually a receive is posted for it; its size may still be short
            length = min(length, RBUF_SLOT)
            self.post_recv(min(RBUF_SLOT, max(0, length + slack - 8)))
        if atomic:
            length = 8
        lbad = {"lkey": "key", "lstale": "stale", "lrange": "range"}.get(bad, "none")
        rbad = {"rkey": "key", "rstale": "stale", "rrange": "range"}.get(bad, "none")
        lkey, laddr, llen = self._target("a", lpick, loff, length, lbad, False)
        rkey, raddr, rlen = self._target("b", rpick, roff, length, rbad, True)
        if not atomic:
            length = min(llen, rlen) if kind != SEND else llen
        elif bad == "none" and misalign and self._resolve("b", rkey, True, RA, raddr - raddr % 8, 8):
            raddr = raddr - raddr % 8 + misalign  # misaligned only on valid targets (see rc-semantics.md)
        else:
            raddr -= raddr % 8
        if atomic and kind == CAS and operand % 3 == 0:  # make compares succeed often
            r = self._resolve("b", rkey, True, RA, raddr, 8)
            if r is not None:
                operand = int(self.mem[r[0]][r[1]:r[1] + 8].view(np.uint64)[0])
        wr = Wr(kind, self.next_wr, signaled, length, lkey, laddr, rkey, raddr, operand, swap)
        self.next_wr += 1
        flags = (e.IBV_SEND_SIGNALED if signaled else 0) | (e.IBV_SEND_FENCE if self._needs_fence(wr) else 0)
        sw = SendWR(wr_id=wr.wr_id, opcode=VERB[kind], send_flags=flags, sg=[SGE(laddr, length, lkey)])
        if atomic:
            sw.set_wr_atomic(rkey, raddr, operand, swap)
        elif kind != SEND:
            sw.set_wr_rdma(rkey, raddr)
        self.qa.post_send(sw)
        self.pending.append(wr)

    @precondition(lambda self: len(self.rq) < 48)
    @rule(length=st.one_of(st.integers(0, RBUF_SLOT), st.sampled_from([0, 8, 256, 512])))
    def post_recv(self, length: int) -> None:
        slot = self.n_recv % RBUF_SLOTS
        r = Recv(10_000 + self.n_recv, slot, length)
        self.n_recv += 1
        buf = self.mrs[self.rbuf].mr
        self.qb.post_recv(RecvWR(wr_id=r.wr_id, sg=[SGE(buf.buf + slot * RBUF_SLOT, length, buf.lkey)]))
        self.rq.append(r)

    @rule(p=st.sampled_from([0.0, 0.0, 0.02, 0.05]))
    def set_loss(self, p: float) -> None:
        self.t.link.ab.set_loss(p)
        self.t.link.ba.set_loss(p)
        self.loss = p

    @rule(recover=st.sampled_from([True, True, True, False]))
    def run_more(self, recover: bool) -> None:
        self.run(recover)

    @rule(recover=st.sampled_from([True, True, True, False]))
    def run(self, recover: bool) -> None:
        self._run_and_check()
        if recover and (self.qa_err or self.qb_err):
            self.reconnect(0xFFFFF0, 17, REMOTE_ALL, 2)

    @rule(which=st.sampled_from(["a", "b", "both", "none", "none", "none"]))
    def to_err(self, which: str) -> None:
        if which == "none":
            return
        err = QPAttr(qp_state=e.IBV_QPS_ERR)
        if which in ("b", "both"):
            self.qb.modify(err, e.IBV_QP_STATE)  # its receives are flushed at once
            self.qb_err = True
        if which in ("a", "both"):
            was_err = self.qa_err
            self.qa.modify(err, e.IBV_QP_STATE)
            self.qa_err = True
            self._run_and_check(flushed_by_modify=not was_err)
        else:
            self._run_and_check()

    @rule(psn_a=st.integers(0, 2**24 - 1), psn_b=st.integers(0, 2**24 - 1),
          access=st.sampled_from([REMOTE_ALL, REMOTE_ALL, RW | RR, RR | RA, RW | RA]),
          rd=st.integers(1, 4))
    def reconnect(self, psn_a: int, psn_b: int, access: int, rd: int) -> None:
        self._run_and_check()  # settle: nothing in flight, every completion checked
        reset = QPAttr(qp_state=e.IBV_QPS_RESET)
        self.qa.modify(reset, e.IBV_QP_STATE)
        self.qb.modify(reset, e.IBV_QP_STATE)
        assert self.qa.qp_state == self.qb.qp_state == e.IBV_QPS_RESET
        assert len(self.scq) == 0 and len(self.rcq) == 0, "RESET discards queues without completions"
        self.rq = []
        self._connect(psn_a, psn_b, access, rd)

    def teardown(self) -> None:
        if self.pending:
            self._run_and_check()


def _settings(n: int, steps: int) -> settings:
    return settings(max_examples=n, stateful_step_count=steps, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


TestStatefulVerbs = RdmaMachine.TestCase
TestStatefulVerbs.settings = _settings(400, 50)


@pytest.mark.slow
def test_stateful_verbs_long() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(RdmaMachine, settings=_settings(3000, 100))

