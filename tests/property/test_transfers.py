"""End-to-end RC transfers over back_to_back under i.i.d. loss (hypothesis property tests).

For random message sizes (biased to MTU multiples +-1, 0 and 1), path MTUs, opcodes, start PSNs
near the 2^24 wrap and loss in both directions, every transfer must be reliable: the responder's
memory equals the source bytes (and nothing outside the target ranges is touched), every send WR
completes exactly once, in posting order, with IBV_WC_SUCCESS, and every receive completion
carries the right byte_len / imm_data / opcode / wc_flags.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.verbs_pair import VerbsPair, random_bytes

from rdmasim.verbs import SGE, QPCap, RecvWR, SendWR
from rdmasim.verbs import enums as e

MTUS = (256, 512, 1024, 2048, 4096)
MAX_MSG = 2 * 1024 * 1024
WITH_IMM = 2  # IBV_WC_WITH_IMM
GUARD = 0xA5
OPS = (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM)
OP_NAMES = {e.IBV_WR_RDMA_WRITE: "WRITE", e.IBV_WR_RDMA_WRITE_WITH_IMM: "WRITE_IMM",
            e.IBV_WR_SEND: "SEND", e.IBV_WR_SEND_WITH_IMM: "SEND_IMM"}


@dataclass
class Msg:
    size: int
    op: int
    imm: int
    gap: int  # untouched guard bytes after the message's target range
    recv_slack: int  # extra bytes in the receive buffer (SEND) beyond the message

    def __repr__(self) -> str:
        return (f"Msg({self.size}, {OP_NAMES[self.op]}, imm=0x{self.imm:x}, gap={self.gap}, "
                f"slack={self.recv_slack})")


# ---- strategies ----
def sizes_for(mtu: int, max_size: int) -> st.SearchStrategy[int]:
    """Message sizes: 0, 1, k*MTU + {-1, 0, +1} (packet boundary cases), or anything."""
    k_max = max_size // mtu
    boundary = st.builds(lambda k, d: min(max(k * mtu + d, 0), max_size),
                         st.integers(1, k_max), st.sampled_from((-1, 0, 1)))
    small_boundary = st.builds(lambda k, d: max(k * mtu + d, 0),
                               st.integers(1, 4), st.sampled_from((-1, 0, 1)))
    return st.one_of(
        st.sampled_from((0, 1)),
        small_boundary,
        boundary,
        st.integers(0, 3 * mtu),
        st.integers(0, max_size),
        st.integers(max_size // 2, max_size),  # hypothesis favours small integers: force big ones
    )


def psns() -> st.SearchStrategy[int]:
    return st.one_of(
        st.integers(1, 300).map(lambda k: 2**24 - k),  # wraps during the transfer
        st.integers(0, 2**24 - 1),
        st.just(0),
    )


losses = st.one_of(st.just(0.0), st.floats(0.0, 0.05), st.sampled_from((0.01, 0.05)))


@st.composite
def scenarios(draw, max_msgs: int = 4, max_size: int = MAX_MSG):
    mtu = draw(st.sampled_from(MTUS))
    n = draw(st.integers(1, max_msgs))
    msgs = [
        Msg(
            size=draw(sizes_for(mtu, max_size)),
            op=draw(st.sampled_from(OPS)),
            imm=draw(st.integers(0, 2**32 - 1)),
            gap=draw(st.sampled_from((0, 0, 1, 7, 64))),
            recv_slack=draw(st.sampled_from((0, 0, 1, 100))),
        )
        for _ in range(n)
    ]
    return {
        "mtu": mtu,
        "msgs": msgs,
        "psn_a": draw(psns()),
        "psn_b": draw(psns()),
        "loss_ab": draw(losses),
        "loss_ba": draw(losses),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


# ---- the transfer ----
def run_transfer(mtu, msgs, psn_a, psn_b, loss_ab, loss_ba, seed, timeout=10, **connect):
    n = len(msgs)
    pair = VerbsPair(mtu=4096, loss_ab=loss_ab, loss_ba=loss_ba, seed=seed, cqe=4 * n + 8,
                     cap=(QPCap(max_send_wr=n, max_recv_wr=1), QPCap(max_send_wr=1, max_recv_wr=n)),
                     path_mtu=mtu, psn_a=psn_a, psn_b=psn_b, timeout=timeout, retry_cnt=7, **connect)
    t, cq_a, cq_b, qa, qb = pair.t, pair.cq_a, pair.cq_b, pair.qa, pair.qb

    # Layout: message i reads src[s_off[i]:+size]; it lands at dst[d_off[i]:+size], followed by
    # recv_slack (SEND receive buffers are larger than the message) and gap guard bytes.
    s_off, d_off = [], []
    s_total = d_total = 0
    for m in msgs:
        s_off.append(s_total)
        d_off.append(d_total)
        s_total += m.size
        d_total += m.size + m.recv_slack + m.gap
    src = pair.mr_a(max(s_total, 1), e.IBV_ACCESS_LOCAL_WRITE, fill=random_bytes(max(s_total, 1), seed))
    src_copy = src.array.copy()
    dst = pair.mr_b(max(d_total, 1), e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE, fill=GUARD)

    recv_ids = []
    for i, m in enumerate(msgs):
        if m.op in (e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM):
            qb.post_recv(RecvWR(wr_id=1000 + i,
                                sg=[SGE(dst.buf + d_off[i], m.size + m.recv_slack, dst.lkey)]))
            recv_ids.append(i)
        elif m.op == e.IBV_WR_RDMA_WRITE_WITH_IMM:
            qb.post_recv(RecvWR(wr_id=1000 + i, sg=[]))
            recv_ids.append(i)
    for i, m in enumerate(msgs):
        sge = SGE(src.buf + s_off[i], m.size, src.lkey)
        wr = SendWR(wr_id=i, opcode=m.op, imm_data=m.imm, sg=[sge])
        if m.op in (e.IBV_WR_RDMA_WRITE, e.IBV_WR_RDMA_WRITE_WITH_IMM):
            wr.set_wr_rdma(dst.rkey, dst.buf + d_off[i])
        qa.post_send(wr)

    swcs = t.sim.wait_for(cq_a, n, timeout="30s")
    rwcs = t.sim.wait_for(cq_b, len(recv_ids), timeout="30s") if recv_ids else []
    t.sim.run_until_idle()
    extra_a, extra_b = cq_a.poll(100)[0], cq_b.poll(100)[0]
    return {
        "t": t, "qa": qa, "qb": qb, "src": src, "src_copy": src_copy, "dst": dst,
        "s_off": s_off, "d_off": d_off, "swcs": swcs, "rwcs": rwcs, "recv_ids": recv_ids,
        "extra": (extra_a, extra_b),
    }


def check_transfer(sc, r, *, spurious_retx_ok: bool = False):
    """Completions, memory and final state of a run_transfer; without drops no retransmission,
    unless ``spurious_retx_ok`` (a retransmit timer shorter than the gap between ACKs)."""
    msgs = sc["msgs"]
    qa, qb = r["qa"], r["qb"]
    ctx = f"{sc} stats_a={qa.stats()} link_ab={r['t'].link.ab.stats()}"

    # Send completions: exactly once each, in posting order, all successful.
    swcs = r["swcs"]
    assert [w.wr_id for w in swcs] == list(range(len(msgs))), ctx
    for w, m in zip(swcs, msgs, strict=True):
        assert w.status == e.IBV_WC_SUCCESS, (w, ctx)
        is_send = m.op in (e.IBV_WR_SEND, e.IBV_WR_SEND_WITH_IMM)
        want = e.IBV_WC_SEND if is_send else e.IBV_WC_RDMA_WRITE
        assert w.opcode == want, (w, ctx)
        assert w.qp_num == qa.qp_num
    assert r["extra"] == (0, 0), ("duplicate/extra completions", ctx)

    # Receive completions: one per SEND / WRITE_WITH_IMM, in order, with length, imm and opcode.
    rwcs = r["rwcs"]
    assert [w.wr_id for w in rwcs] == [1000 + i for i in r["recv_ids"]], ctx
    for w, i in zip(rwcs, r["recv_ids"], strict=True):
        m = msgs[i]
        assert w.status == e.IBV_WC_SUCCESS, (w, ctx)
        assert w.byte_len == m.size, (w, m, ctx)
        assert w.qp_num == qb.qp_num
        if m.op == e.IBV_WR_RDMA_WRITE_WITH_IMM:
            assert w.opcode == e.IBV_WC_RECV_RDMA_WITH_IMM, (w, ctx)
        else:
            assert w.opcode == e.IBV_WC_RECV, (w, ctx)
        if m.op in (e.IBV_WR_RDMA_WRITE_WITH_IMM, e.IBV_WR_SEND_WITH_IMM):
            assert w.wc_flags & WITH_IMM, (w, ctx)
            assert w.imm_data == m.imm, (w, m, ctx)
        else:
            assert not w.wc_flags & WITH_IMM, (w, ctx)

    # Memory: every target range equals its source; slack and gaps are untouched.
    src, dst = r["src_copy"], r["dst"].array
    assert np.array_equal(r["src"].array, src), "source buffer modified"
    touched = np.zeros(dst.size, dtype=bool)
    for i, m in enumerate(msgs):
        so, do = r["s_off"][i], r["d_off"][i]
        got = dst[do:do + m.size]
        if not np.array_equal(got, src[so:so + m.size]):
            bad = int(np.flatnonzero(got != src[so:so + m.size])[0])
            raise AssertionError(f"message {i} ({m}) differs first at byte {bad}; {ctx}")
        touched[do:do + m.size] = True
    assert np.all(dst[~touched] == GUARD), ("bytes outside the messages were written", ctx)

    # The QPs end healthy and the sender counted every message.
    assert qa.qp_state == e.IBV_QPS_RTS and qb.qp_state == e.IBV_QPS_RTS
    st_a = qa.stats()
    assert st_a["msgs_completed"] == len(msgs), ctx
    link = r["t"].link
    if link.ab.stats()["dropped"] == 0 and link.ba.stats()["dropped"] == 0 and not spurious_retx_ok:
        assert st_a["pkts_retx"] == 0 and st_a["timeouts"] == 0 and st_a["naks_rcvd"] == 0, ctx


SETTINGS = dict(deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@settings(max_examples=800, **SETTINGS)
@given(scenarios())
def test_transfers_are_reliable(sc):
    check_transfer(sc, run_transfer(**sc))


@settings(max_examples=400, **SETTINGS)
@given(scenarios(max_msgs=8, max_size=20_000))
def test_many_small_messages_near_wrap(sc):
    """Many short messages (several packets each) keep the window busy across PSN wrap."""
    check_transfer(sc, run_transfer(**sc))


@pytest.mark.parametrize("op", OPS, ids=[OP_NAMES[o] for o in OPS])
@pytest.mark.parametrize("mtu", MTUS)
def test_zero_and_boundary_sizes_each_mtu(op, mtu):
    """Deterministic corner cases: 0, 1, MTU-1, MTU, MTU+1, 2*MTU bytes across the PSN wrap."""
    sizes = (0, 1, mtu - 1, mtu, mtu + 1, 2 * mtu)
    msgs = [Msg(size, op, 0xDEADBEEF ^ size, 1, 1) for size in sizes]
    sc = {"mtu": mtu, "msgs": msgs, "psn_a": 2**24 - 3, "psn_b": 2**24 - 1, "loss_ab": 0.0,
          "loss_ba": 0.0, "seed": 1}
    check_transfer(sc, run_transfer(**sc))


@pytest.mark.slow
@settings(max_examples=1500, **SETTINGS)
@given(scenarios(max_msgs=8))
def test_transfers_are_reliable_slow(sc):
    check_transfer(sc, run_transfer(**sc))
