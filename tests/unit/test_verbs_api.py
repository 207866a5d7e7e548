"""The pyverbs-shaped verbs API (rdmasim.verbs): enum values, the QP state machine and its
attribute checks, memory registration, posting rules, completions and data-path errors.

Expected behaviour comes from rdma-core / rxe as summarised in protocol.md sections 2-5.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.verbs_pair import VerbsPair, gid_route

from rdmasim.capture import read_pcap
from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs import CQ, MR, PD, QP, SGE, WC, QPAttr, QPCap, QPInitAttr, RecvWR, SendWR, connect_qps
from rdmasim.verbs import enums as e

# ---------------------------------------------------------------------------------------------
# enums: rdma-core's values (libibverbs/verbs.h)
# ---------------------------------------------------------------------------------------------

RDMA_CORE_VALUES = {
    # ibv_wr_opcode
    "IBV_WR_RDMA_WRITE": 0, "IBV_WR_RDMA_WRITE_WITH_IMM": 1, "IBV_WR_SEND": 2,
    "IBV_WR_SEND_WITH_IMM": 3, "IBV_WR_RDMA_READ": 4, "IBV_WR_ATOMIC_CMP_AND_SWP": 5,
    "IBV_WR_ATOMIC_FETCH_AND_ADD": 6, "IBV_WR_LOCAL_INV": 7, "IBV_WR_BIND_MW": 8,
    "IBV_WR_SEND_WITH_INV": 9, "IBV_WR_TSO": 10,
    # ibv_wc_status
    "IBV_WC_SUCCESS": 0, "IBV_WC_LOC_LEN_ERR": 1, "IBV_WC_LOC_QP_OP_ERR": 2,
    "IBV_WC_LOC_EEC_OP_ERR": 3, "IBV_WC_LOC_PROT_ERR": 4, "IBV_WC_WR_FLUSH_ERR": 5,
    "IBV_WC_MW_BIND_ERR": 6, "IBV_WC_BAD_RESP_ERR": 7, "IBV_WC_LOC_ACCESS_ERR": 8,
    "IBV_WC_REM_INV_REQ_ERR": 9, "IBV_WC_REM_ACCESS_ERR": 10, "IBV_WC_REM_OP_ERR": 11,
    "IBV_WC_RETRY_EXC_ERR": 12, "IBV_WC_RNR_RETRY_EXC_ERR": 13, "IBV_WC_LOC_RDD_VIOL_ERR": 14,
    "IBV_WC_REM_INV_RD_REQ_ERR": 15, "IBV_WC_REM_ABORT_ERR": 16, "IBV_WC_INV_EECN_ERR": 17,
    "IBV_WC_INV_EEC_STATE_ERR": 18, "IBV_WC_FATAL_ERR": 19, "IBV_WC_RESP_TIMEOUT_ERR": 20,
    "IBV_WC_GENERAL_ERR": 21,
    # ibv_wc_opcode
    "IBV_WC_SEND": 0, "IBV_WC_RDMA_WRITE": 1, "IBV_WC_RDMA_READ": 2, "IBV_WC_COMP_SWAP": 3,
    "IBV_WC_FETCH_ADD": 4, "IBV_WC_BIND_MW": 5, "IBV_WC_LOCAL_INV": 6, "IBV_WC_TSO": 7,
    "IBV_WC_RECV": 128, "IBV_WC_RECV_RDMA_WITH_IMM": 129,
    # ibv_qp_state
    "IBV_QPS_RESET": 0, "IBV_QPS_INIT": 1, "IBV_QPS_RTR": 2, "IBV_QPS_RTS": 3, "IBV_QPS_SQD": 4,
    "IBV_QPS_SQE": 5, "IBV_QPS_ERR": 6,
    # ibv_qp_type
    "IBV_QPT_RC": 2, "IBV_QPT_UC": 3, "IBV_QPT_UD": 4,
    # ibv_access_flags
    "IBV_ACCESS_LOCAL_WRITE": 1, "IBV_ACCESS_REMOTE_WRITE": 2, "IBV_ACCESS_REMOTE_READ": 4,
    "IBV_ACCESS_REMOTE_ATOMIC": 8, "IBV_ACCESS_MW_BIND": 16, "IBV_ACCESS_ZERO_BASED": 32,
    "IBV_ACCESS_ON_DEMAND": 64,
    # ibv_send_flags
    "IBV_SEND_FENCE": 1, "IBV_SEND_SIGNALED": 2, "IBV_SEND_SOLICITED": 4, "IBV_SEND_INLINE": 8,
    "IBV_SEND_IP_CSUM": 16,
    # ibv_mtu
    "IBV_MTU_256": 1, "IBV_MTU_512": 2, "IBV_MTU_1024": 3, "IBV_MTU_2048": 4, "IBV_MTU_4096": 5,
    # ibv_qp_attr_mask
    "IBV_QP_STATE": 1 << 0, "IBV_QP_CUR_STATE": 1 << 1, "IBV_QP_EN_SQD_ASYNC_NOTIFY": 1 << 2,
    "IBV_QP_ACCESS_FLAGS": 1 << 3, "IBV_QP_PKEY_INDEX": 1 << 4, "IBV_QP_PORT": 1 << 5,
    "IBV_QP_QKEY": 1 << 6, "IBV_QP_AV": 1 << 7, "IBV_QP_PATH_MTU": 1 << 8,
    "IBV_QP_TIMEOUT": 1 << 9, "IBV_QP_RETRY_CNT": 1 << 10, "IBV_QP_RNR_RETRY": 1 << 11,
    "IBV_QP_RQ_PSN": 1 << 12, "IBV_QP_MAX_QP_RD_ATOMIC": 1 << 13, "IBV_QP_ALT_PATH": 1 << 14,
    "IBV_QP_MIN_RNR_TIMER": 1 << 15, "IBV_QP_SQ_PSN": 1 << 16,
    "IBV_QP_MAX_DEST_RD_ATOMIC": 1 << 17, "IBV_QP_PATH_MIG_STATE": 1 << 18, "IBV_QP_CAP": 1 << 19,
    "IBV_QP_DEST_QPN": 1 << 20, "IBV_QP_RATE_LIMIT": 1 << 25,
}


@pytest.mark.parametrize("name,value", sorted(RDMA_CORE_VALUES.items()))
def test_enum_values_match_rdma_core(name: str, value: int) -> None:
    assert getattr(e, name) == value


def test_enum_classes_and_helpers() -> None:
    assert e.ibv_wr_opcode.IBV_WR_RDMA_WRITE == 0
    assert e.ibv_qp_state(3).name == "IBV_QPS_RTS"
    assert e.ibv_access_flags.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE == 3
    assert e.IBV_WC_WITH_IMM == 2
    assert e.wc_status_to_str(12) == "IBV_WC_RETRY_EXC_ERR"
    assert [e.mtu_enum(b) for b in (256, 512, 1024, 2048, 4096)] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="256"):
        e.mtu_enum(1500)


# ---------------------------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------------------------

Env = VerbsPair  # two unconnected RC QPs: what the state-machine tests walk by hand


def make_env(cqe: int = 64, sq_sig_all: int = 1, max_wr: int = 16, max_sge: int = 4,
             mtu: int = 1024) -> Env:
    cap = QPCap(max_send_wr=max_wr, max_recv_wr=max_wr, max_send_sge=max_sge,
                max_recv_sge=max_sge)
    return VerbsPair(mtu=mtu, seed=11, cqe=cqe, cap=cap, sq_sig_all=sq_sig_all, connect=False)


class Conn(VerbsPair):
    """make_env's pair connected, with ``src`` (patterned) on a and a writable ``dst`` on b."""

    def __init__(self, size: int = 16384, cqe: int = 64, sq_sig_all: int = 1, **connect_kw: int) -> None:
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=4, max_recv_sge=4)
        super().__init__(mtu=1024, seed=11, cqe=cqe, cap=cap, sq_sig_all=sq_sig_all, **connect_kw)
        self.src = self.mr_a(size, e.IBV_ACCESS_LOCAL_WRITE,
                             fill=np.arange(size, dtype=np.uint64).astype(np.uint8) ^ 0x5A)
        self.dst = self.mr_b(size, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)


make_conn = Conn


def write_wr(c: Conn, wr_id: int, length: int, off: int = 0, send_flags: int = e.IBV_SEND_SIGNALED,
             rkey: int | None = None, lkey: int | None = None) -> SendWR:
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, send_flags=send_flags,
                sg=[SGE(c.src.buf + off, length, c.src.lkey if lkey is None else lkey)])
    wr.set_wr_rdma(c.dst.rkey if rkey is None else rkey, c.dst.buf + off)
    return wr


def send_wr(c: Conn, wr_id: int, length: int, off: int = 0, imm: int | None = None) -> SendWR:
    op = e.IBV_WR_SEND if imm is None else e.IBV_WR_SEND_WITH_IMM
    return SendWR(wr_id=wr_id, opcode=op, imm_data=imm or 0,
                  sg=[SGE(c.src.buf + off, length, c.src.lkey)])


def recv_wr(c: Conn, wr_id: int, length: int, off: int = 0) -> RecvWR:
    return RecvWR(wr_id=wr_id, sg=[SGE(c.dst.buf + off, length, c.dst.lkey)])


def drain(cq: CQ) -> list[WC]:
    n, wcs = cq.poll(1000)
    assert n == len(wcs)
    return wcs


def full_attr(env: Env, qp: QP, peer: QP, **kw: int) -> QPAttr:
    attr = QPAttr(qp_access_flags=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE,
                  path_mtu=e.IBV_MTU_1024, dest_qp_num=peer.qp_num, rq_psn=0x123, sq_psn=0x456,
                  timeout=12, retry_cnt=5, rnr_retry=6, min_rnr_timer=7,
                  ah_attr=gid_route(peer._host.gid))
    for k, v in kw.items():
        setattr(attr, k, v)
    return attr


INIT_MASK = e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS
RTR_MASK = (e.IBV_QP_STATE | e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
            | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER)
RTS_MASK = (e.IBV_QP_STATE | e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY
            | e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC)


def transition_re(a: str, b: str) -> str:
    return rf"{a}\s*(->|→|to)\s*{b}"


# ---------------------------------------------------------------------------------------------
# QP state machine
# ---------------------------------------------------------------------------------------------

def test_walk_with_helpers_and_query() -> None:
    env = make_env()
    qa, qb = env.qa, env.qb
    assert qa.qp_state == e.IBV_QPS_RESET
    attr = full_attr(env, qa, qb)
    qa.to_init(attr)
    assert qa.qp_state == e.IBV_QPS_INIT
    qa.to_rtr(attr)
    assert qa.qp_state == e.IBV_QPS_RTR
    qa.to_rts(attr)
    assert qa.qp_state == e.IBV_QPS_RTS
    got, init = qa.query(0)
    assert got.qp_state == e.IBV_QPS_RTS
    assert got.path_mtu == e.IBV_MTU_1024
    assert got.dest_qp_num == qb.qp_num
    assert (got.rq_psn, got.sq_psn) == (0x123, 0x456)
    assert (got.timeout, got.retry_cnt, got.rnr_retry, got.min_rnr_timer) == (12, 5, 6, 7)
    assert got.qp_access_flags == e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
    assert got.ah_attr is not None and got.ah_attr.gr is not None
    assert got.ah_attr.gr.dgid == env.t.b.gid
    assert init.send_cq is env.cq_a and init.recv_cq is env.cq_a
    assert init.cap.max_send_wr == 16 and init.sq_sig_all == 1


def test_walk_with_modify_and_explicit_masks() -> None:
    env = make_env()
    qa, qb = env.qa, env.qb
    attr = full_attr(env, qa, qb, path_mtu=e.IBV_MTU_4096, timeout=0, retry_cnt=0, rnr_retry=7,
                     min_rnr_timer=31, sq_psn=2**24 - 1, rq_psn=0)
    for state, mask in ((e.IBV_QPS_INIT, INIT_MASK), (e.IBV_QPS_RTR, RTR_MASK),
                        (e.IBV_QPS_RTS, RTS_MASK)):
        attr.qp_state = state
        qa.modify(attr, mask)
        assert qa.qp_state == state
    got, _ = qa.query()
    assert got.path_mtu == e.IBV_MTU_4096 and got.sq_psn == 2**24 - 1 and got.min_rnr_timer == 31
    assert (got.timeout, got.retry_cnt, got.rnr_retry) == (0, 0, 7)


def test_optional_attributes_accepted() -> None:
    env = make_env()
    qa, qb = env.qa, env.qb
    attr = full_attr(env, qa, qb)
    qa.to_init(attr)
    # INIT -> INIT with optional attributes only
    attr.qp_state = e.IBV_QPS_INIT
    attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ
    qa.modify(attr, e.IBV_QP_STATE | e.IBV_QP_ACCESS_FLAGS)
    assert qa.query()[0].qp_access_flags == e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ
    # INIT -> RTR with optional ACCESS_FLAGS and PKEY_INDEX
    attr.qp_state = e.IBV_QPS_RTR
    qa.modify(attr, RTR_MASK | e.IBV_QP_ACCESS_FLAGS | e.IBV_QP_PKEY_INDEX)
    # RTR -> RTS with optional MIN_RNR_TIMER
    attr.qp_state = e.IBV_QPS_RTS
    attr.min_rnr_timer = 3
    qa.modify(attr, RTS_MASK | e.IBV_QP_MIN_RNR_TIMER)
    assert qa.query()[0].min_rnr_timer == 3
    # RTS -> RTS changing MIN_RNR_TIMER
    attr.min_rnr_timer = 9
    qa.modify(attr, e.IBV_QP_STATE | e.IBV_QP_MIN_RNR_TIMER)
    assert qa.qp_state == e.IBV_QPS_RTS and qa.query()[0].min_rnr_timer == 9


REQUIRED = [
    ("RESET", "INIT", e.IBV_QPS_INIT, INIT_MASK,
     ["IBV_QP_PKEY_INDEX", "IBV_QP_PORT", "IBV_QP_ACCESS_FLAGS"]),
    ("INIT", "RTR", e.IBV_QPS_RTR, RTR_MASK,
     ["IBV_QP_AV", "IBV_QP_PATH_MTU", "IBV_QP_DEST_QPN", "IBV_QP_RQ_PSN",
      "IBV_QP_MAX_DEST_RD_ATOMIC", "IBV_QP_MIN_RNR_TIMER"]),
    ("RTR", "RTS", e.IBV_QPS_RTS, RTS_MASK,
     ["IBV_QP_TIMEOUT", "IBV_QP_RETRY_CNT", "IBV_QP_RNR_RETRY", "IBV_QP_SQ_PSN",
      "IBV_QP_MAX_QP_RD_ATOMIC"]),
]
MISSING_CASES = [(f, t, s, m, a) for f, t, s, m, attrs in REQUIRED for a in attrs]


def _bring_to(env: Env, state_name: str) -> QPAttr:
    attr = full_attr(env, env.qa, env.qb)
    order = ["RESET", "INIT", "RTR", "RTS"]
    steps = [env.qa.to_init, env.qa.to_rtr, env.qa.to_rts]
    for step in steps[: order.index(state_name)]:
        step(attr)
    return attr


@pytest.mark.parametrize("frm,to,state,mask,missing", MISSING_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[4]}" for c in MISSING_CASES])
def test_missing_required_attribute_named(frm: str, to: str, state: int, mask: int,
                                          missing: str) -> None:
    env = make_env()
    attr = _bring_to(env, frm)
    attr.qp_state = state
    with pytest.raises(PyverbsRDMAError) as ei:
        env.qa.modify(attr, mask & ~getattr(e, missing))
    msg = str(ei.value)
    assert missing in msg
    assert re.search(transition_re(frm, to), msg), msg
    assert ei.value.error_code == 22  # EINVAL
    assert env.qa.qp_state == getattr(e, f"IBV_QPS_{frm}"), "a failed modify changes nothing"


@pytest.mark.parametrize("frm,to,state,mask,extra", [
    ("RESET", "INIT", e.IBV_QPS_INIT, INIT_MASK, "IBV_QP_TIMEOUT"),
    ("RESET", "INIT", e.IBV_QPS_INIT, INIT_MASK, "IBV_QP_SQ_PSN"),
    ("INIT", "RTR", e.IBV_QPS_RTR, RTR_MASK, "IBV_QP_SQ_PSN"),
    ("INIT", "RTR", e.IBV_QPS_RTR, RTR_MASK, "IBV_QP_RETRY_CNT"),
    ("RTR", "RTS", e.IBV_QPS_RTS, RTS_MASK, "IBV_QP_DEST_QPN"),
    ("RTR", "RTS", e.IBV_QPS_RTS, RTS_MASK, "IBV_QP_PATH_MTU"),
    ("RTS", "RTS", e.IBV_QPS_RTS, e.IBV_QP_STATE, "IBV_QP_TIMEOUT"),
])
def test_extra_attribute_named(frm: str, to: str, state: int, mask: int, extra: str) -> None:
    env = make_env()
    attr = _bring_to(env, frm)
    attr.qp_state = state
    with pytest.raises(PyverbsRDMAError) as ei:
        env.qa.modify(attr, mask | getattr(e, extra))
    assert extra in str(ei.value)
    assert re.search(transition_re(frm, to), str(ei.value)), str(ei.value)
    assert env.qa.qp_state == getattr(e, f"IBV_QPS_{frm}")


@pytest.mark.parametrize("frm,to", [("RESET", "RTS"), ("RESET", "RTR"), ("INIT", "RTS"),
                                    ("RTR", "INIT"), ("RTS", "INIT"), ("RTS", "RTR"),
                                    ("RTR", "RTR")])
def test_illegal_transition_raises(frm: str, to: str) -> None:
    env = make_env()
    attr = _bring_to(env, frm)
    attr.qp_state = getattr(e, f"IBV_QPS_{to}")
    masks = {"INIT": INIT_MASK, "RTR": RTR_MASK, "RTS": RTS_MASK}
    with pytest.raises(PyverbsRDMAError) as ei:
        env.qa.modify(attr, masks[to])
    assert re.search(transition_re(frm, to), str(ei.value)), str(ei.value)
    assert env.qa.qp_state == getattr(e, f"IBV_QPS_{frm}")


@pytest.mark.parametrize("frm", ["RESET", "INIT", "RTR", "RTS"])
def test_any_state_to_err_and_reset(frm: str) -> None:
    env = make_env()
    attr = _bring_to(env, frm)
    attr.qp_state = e.IBV_QPS_ERR
    env.qa.modify(attr, e.IBV_QP_STATE)
    assert env.qa.qp_state == e.IBV_QPS_ERR
    attr.qp_state = e.IBV_QPS_RESET
    env.qa.modify(attr, e.IBV_QP_STATE)
    assert env.qa.qp_state == e.IBV_QPS_RESET
    # and the QP can be brought up again
    _bring_to(env, "RTS")
    assert env.qa.qp_state == e.IBV_QPS_RTS


@pytest.mark.parametrize("field,value,step,allowed", [
    ("timeout", 32, "RTS", "0..31"),
    ("retry_cnt", 8, "RTS", "0..7"),
    ("rnr_retry", 8, "RTS", "0..7"),
    ("sq_psn", 2**24, "RTS", "16777215"),
    ("path_mtu", 6, "RTR", "1..5"),
    ("path_mtu", 0, "RTR", "1..5"),
    ("rq_psn", 2**24, "RTR", "16777215"),
    ("min_rnr_timer", 32, "RTR", "0..31"),
])
def test_out_of_range_values_raise_with_range(field: str, value: int, step: str,
                                              allowed: str) -> None:
    env = make_env()
    attr = _bring_to(env, {"RTR": "INIT", "RTS": "RTR"}[step])
    setattr(attr, field, value)
    with pytest.raises(PyverbsRDMAError) as ei:
        (env.qa.to_rtr if step == "RTR" else env.qa.to_rts)(attr)
    msg = str(ei.value)
    assert field in msg and str(value) in msg and allowed in msg, msg


@pytest.mark.parametrize("state", ["RESET", "INIT", "RTR"])
def test_post_send_before_rts_raises_naming_state(state: str) -> None:
    env = make_env()
    _bring_to(env, state)
    mr = MR(env.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    with pytest.raises(PyverbsRDMAError) as ei:
        env.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mr.buf, 8, mr.lkey)]))
    assert "RTS" in str(ei.value)
    assert env.qa.stats()["pkts_sent"] == 0


@pytest.mark.parametrize("state", ["RESET", "INIT", "RTR"])
def test_post_send_error_names_state_by_name(state: str) -> None:
    env = make_env()
    _bring_to(env, state)
    mr = MR(env.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    with pytest.raises(PyverbsRDMAError) as ei:
        env.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(mr.buf, 8, mr.lkey)]))
    assert re.search(rf"\b{state}\b", str(ei.value)), str(ei.value)


def test_post_recv_in_reset_raises_and_allowed_from_init() -> None:
    env = make_env()
    mr = MR(env.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    with pytest.raises(PyverbsRDMAError, match="RESET"):
        env.qa.post_recv(RecvWR(wr_id=1, sg=[SGE(mr.buf, 8, mr.lkey)]))
    _bring_to(env, "INIT")
    env.qa.post_recv(RecvWR(wr_id=1, sg=[SGE(mr.buf, 8, mr.lkey)]))


def test_post_in_err_is_flushed() -> None:
    c = make_conn()
    attr, _ = c.qa.query()
    attr.qp_state = e.IBV_QPS_ERR
    c.qa.modify(attr, e.IBV_QP_STATE)
    c.qa.post_send(write_wr(c, 1, 100))
    c.qa.post_recv(RecvWR(wr_id=2, sg=[SGE(c.src.buf, 100, c.src.lkey)]))
    c.sim.run_until_idle()
    wcs = drain(c.cq_a)
    assert sorted((w.wr_id, w.status) for w in wcs) == [(1, e.IBV_WC_WR_FLUSH_ERR),
                                                        (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qa.stats()["pkts_sent"] == 0


# ---------------------------------------------------------------------------------------------
# memory registration
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["bytearray", "numpy"])
def test_mr_over_user_buffer_receives_bytes_in_place(kind: str) -> None:
    env = make_env()
    connect_qps(env.qa, env.qb)
    src_buf = bytearray(range(256)) * 2
    dst_buf: bytearray | np.ndarray = (bytearray(512) if kind == "bytearray"
                                       else np.zeros(512, dtype=np.uint8))
    src = MR(env.pd_a, access=e.IBV_ACCESS_LOCAL_WRITE, buffer=src_buf)
    dst = MR(env.pd_b, access=e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE, buffer=dst_buf)
    assert src.length == dst.length == 512
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf + 10, 300, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf + 100)
    env.qa.post_send(wr)
    wcs = env.sim.wait_for(env.cq_a, 1)
    assert wcs[0].status == e.IBV_WC_SUCCESS and wcs[0].byte_len == 300
    got = bytes(dst_buf)
    assert got[100:400] == bytes(src_buf[10:310])
    assert got[:100] == bytes(100) and got[400:] == bytes(112)
    # the MR is a view of the user's memory, not a copy
    dst.array[0] = 0xEE
    assert bytes(dst_buf)[0] == 0xEE


def test_mr_sender_reads_users_buffer_at_send_time() -> None:
    env = make_env()
    connect_qps(env.qa, env.qb)
    src_buf = bytearray(64)
    src = MR(env.pd_a, access=e.IBV_ACCESS_LOCAL_WRITE, buffer=src_buf)
    dst = MR(env.pd_b, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    src_buf[:] = b"Z" * 64  # written by the user after registration
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 64, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    env.qa.post_send(wr)
    env.sim.wait_for(env.cq_a, 1)
    assert dst.read(64) == b"Z" * 64


@pytest.mark.parametrize("buf", [b"read-only bytes", memoryview(b"abc")])
def test_mr_on_read_only_buffer_raises(buf: object) -> None:
    env = make_env()
    with pytest.raises(PyverbsUserError, match="read-only"):
        MR(env.pd_a, access=e.IBV_ACCESS_LOCAL_WRITE, buffer=buf)


def test_mr_non_contiguous_buffer_raises() -> None:
    env = make_env()
    with pytest.raises(PyverbsUserError, match="contiguous"):
        MR(env.pd_a, access=e.IBV_ACCESS_LOCAL_WRITE, buffer=np.zeros(16, dtype=np.uint8)[::2])


@pytest.mark.parametrize("access", [e.IBV_ACCESS_REMOTE_WRITE, e.IBV_ACCESS_REMOTE_ATOMIC,
                                    e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ])
def test_remote_write_or_atomic_without_local_write_raises(access: int) -> None:
    env = make_env()
    with pytest.raises(PyverbsRDMAError, match="LOCAL_WRITE") as ei:
        MR(env.pd_a, 64, access)
    assert ei.value.error_code == 22


def test_rkey_is_lkey_as_rxe() -> None:
    env = make_env()
    local = MR(env.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    none = MR(env.pd_a, 64, 0)
    read = MR(env.pd_a, 64, e.IBV_ACCESS_REMOTE_READ)
    write = MR(env.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    # rxe_mr_init gives every MR one key for both (remote use is gated by the access flags)
    assert local.rkey == local.lkey != 0 and none.rkey == none.lkey != 0
    assert read.rkey == read.lkey != 0
    assert write.rkey == write.lkey != 0
    assert len({local.lkey, none.lkey, read.lkey, write.lkey}) == 4


def test_mr_length_checks() -> None:
    env = make_env()
    with pytest.raises(PyverbsUserError):
        MR(env.pd_a, 0, e.IBV_ACCESS_LOCAL_WRITE)
    with pytest.raises(PyverbsUserError, match="length"):
        MR(env.pd_a, 10, e.IBV_ACCESS_LOCAL_WRITE, buffer=bytearray(20))


# ---------------------------------------------------------------------------------------------
# completions
# ---------------------------------------------------------------------------------------------

def test_unsignaled_wrs_produce_no_completion_and_order_kept() -> None:
    c = make_conn(sq_sig_all=0)
    signaled = {1, 3, 4}
    for i in range(6):
        c.qa.post_send(write_wr(c, i, 100, off=i * 100,
                                send_flags=e.IBV_SEND_SIGNALED if i in signaled else 0))
    c.sim.run_until_idle()
    wcs = drain(c.cq_a)
    assert [w.wr_id for w in wcs] == sorted(signaled)
    assert all(w.status == e.IBV_WC_SUCCESS and w.opcode == e.IBV_WC_RDMA_WRITE for w in wcs)
    assert c.dst.read(600) == c.src.read(600)  # the unsignaled ones did their work


def test_only_unsignaled_wrs_complete_silently() -> None:
    c = make_conn(sq_sig_all=0)
    c.qa.post_send(write_wr(c, 1, 100, send_flags=0))
    c.sim.run_until_idle()
    assert c.cq_a.poll(10) == (0, [])
    assert c.dst.read(100) == c.src.read(100)


def test_sq_sig_all_signals_every_wr() -> None:
    c = make_conn(sq_sig_all=1)
    c.qa.post_send(write_wr(c, 1, 100, send_flags=0))
    c.sim.run_until_idle()
    assert [w.wr_id for w in drain(c.cq_a)] == [1]


def test_unsignaled_error_still_completes() -> None:
    c = make_conn(sq_sig_all=0)
    c.qa.post_send(write_wr(c, 1, 100, send_flags=0, lkey=c.src.lkey ^ 0x1))
    c.sim.run_until_idle()
    wcs = drain(c.cq_a)
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_LOC_PROT_ERR)]


def test_cq_poll_returns_count_and_list() -> None:
    c = make_conn()
    for i in range(3):
        c.qa.post_send(write_wr(c, i, 10))
    c.sim.run_until_idle()
    assert len(c.cq_a) == 3
    n, wcs = c.cq_a.poll(1)
    assert n == 1 and len(wcs) == 1 and isinstance(wcs[0], WC) and wcs[0].wr_id == 0
    n, wcs = c.cq_a.poll(10)
    assert n == 2 and [w.wr_id for w in wcs] == [1, 2]
    assert c.cq_a.poll() == (0, [])
    assert wcs[0].qp_num == c.qa.qp_num and wcs[0].byte_len == 10 and wcs[0].ok


def test_cq_overrun_raises_on_poll() -> None:
    c = make_conn(cqe=2)
    for i in range(4):
        c.qa.post_send(write_wr(c, i, 10))
    c.sim.run_until_idle()
    with pytest.raises(PyverbsRDMAError) as ei:
        c.cq_a.poll(10)
    msg = str(ei.value)
    assert "overrun" in msg.lower()
    assert "cqe=2" in msg


def test_destroy_cq_in_use_raises() -> None:
    env = make_env()
    with pytest.raises(PyverbsRDMAError, match="QP") as ei:
        env.cq_a.close()
    assert ei.value.error_code == 16  # EBUSY
    env.qa.close()
    env.cq_a.close()  # no user left
    env.cq_a.close()  # idempotent


def test_send_and_recv_completions_fields() -> None:
    c = make_conn()
    c.qb.post_recv(recv_wr(c, 7, 100))
    c.qb.post_recv(recv_wr(c, 8, 100, off=100))
    c.qa.post_send(send_wr(c, 1, 50, imm=0xDEADBEEF))
    w = SendWR(wr_id=2, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, imm_data=0x1234,
               sg=[SGE(c.src.buf, 3000, c.src.lkey)])
    w.set_wr_rdma(c.dst.rkey, c.dst.buf + 1000)
    c.qa.post_send(w)
    c.sim.run_until_idle()
    a = drain(c.cq_a)
    b = drain(c.cq_b)
    assert [(x.wr_id, x.status, x.opcode, x.byte_len) for x in a] == [
        (1, e.IBV_WC_SUCCESS, e.IBV_WC_SEND, 50), (2, e.IBV_WC_SUCCESS, e.IBV_WC_RDMA_WRITE, 3000)]
    assert [(x.wr_id, x.status, x.opcode, x.byte_len, x.imm_data, x.wc_flags & e.IBV_WC_WITH_IMM)
            for x in b] == [(7, 0, e.IBV_WC_RECV, 50, 0xDEADBEEF, e.IBV_WC_WITH_IMM),
                            (8, 0, e.IBV_WC_RECV_RDMA_WITH_IMM, 3000, 0x1234, e.IBV_WC_WITH_IMM)]
    assert b[0].qp_num == c.qb.qp_num
    assert c.dst.read(50) == c.src.read(50)
    assert c.dst.read(3000, 1000) == c.src.read(3000)


# ---------------------------------------------------------------------------------------------
# data path: SGEs, chains, errors
# ---------------------------------------------------------------------------------------------

def test_send_scatters_into_multiple_receive_sges() -> None:
    c = make_conn()
    sges = [SGE(c.dst.buf, 10, c.dst.lkey), SGE(c.dst.buf + 100, 20, c.dst.lkey),
            SGE(c.dst.buf + 200, 3000, c.dst.lkey)]
    c.qb.post_recv(RecvWR(wr_id=7, sg=sges))
    length = 10 + 20 + 2000  # spans two MTUs in the last SGE
    c.qa.post_send(send_wr(c, 1, length))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_SUCCESS)]
    rw = drain(c.cq_b)
    assert [(w.wr_id, w.status, w.opcode, w.byte_len) for w in rw] == [
        (7, e.IBV_WC_SUCCESS, e.IBV_WC_RECV, length)]
    src = c.src.read(length)
    assert c.dst.read(10) == src[:10]
    assert c.dst.read(20, 100) == src[10:30]
    assert c.dst.read(2000, 200) == src[30:]
    assert c.dst.read(90, 10) == bytes(90) and c.dst.read(70, 130) == bytes(70)
    assert c.dst.read(1000, 2200) == bytes(1000)


def test_send_gathers_from_multiple_send_sges() -> None:
    c = make_conn()
    c.qb.post_recv(recv_wr(c, 7, 4096))
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_SEND,
                sg=[SGE(c.src.buf + 5, 7, c.src.lkey), SGE(c.src.buf + 1000, 1500, c.src.lkey)])
    c.qa.post_send(wr)
    c.sim.run_until_idle()
    assert drain(c.cq_b)[0].byte_len == 1507
    assert c.dst.read(1507) == c.src.read(7, 5) + c.src.read(1500, 1000)


def test_send_larger_than_receive_buffer() -> None:
    c = make_conn()
    c.qb.post_recv(recv_wr(c, 7, 100))
    c.qb.post_recv(recv_wr(c, 8, 100))
    c.qa.post_send(send_wr(c, 1, 1500))
    c.qa.post_send(send_wr(c, 2, 10))
    c.qa.post_send(write_wr(c, 3, 10))
    c.sim.run_until_idle()
    a = drain(c.cq_a)
    assert [(w.wr_id, w.status) for w in a] == [(1, e.IBV_WC_REM_INV_REQ_ERR),
                                                (2, e.IBV_WC_WR_FLUSH_ERR),
                                                (3, e.IBV_WC_WR_FLUSH_ERR)]
    b = drain(c.cq_b)
    assert [w.wr_id for w in b] == [7, 8]
    # spec: LOC_LEN_ERR; rxe: REM_INV_REQ_ERR (protocol.md 5)
    assert b[0].status in (e.IBV_WC_LOC_LEN_ERR, e.IBV_WC_REM_INV_REQ_ERR)
    assert b[1].status == e.IBV_WC_WR_FLUSH_ERR
    assert c.qa.qp_state == e.IBV_QPS_ERR and c.qb.qp_state == e.IBV_QPS_ERR


def test_write_with_wrong_rkey_rem_access_err() -> None:
    c = make_conn()
    c.qa.post_send(write_wr(c, 1, 100, rkey=c.dst.rkey ^ 0x5500))
    c.qa.post_send(write_wr(c, 2, 100))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_REM_ACCESS_ERR),
                                                            (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qa.qp_state == e.IBV_QPS_ERR
    assert c.qb.qp_state == e.IBV_QPS_ERR  # class C error on the responder
    assert c.dst.read(100) == bytes(100)


def test_write_to_mr_without_remote_write_rem_access_err() -> None:
    c = make_conn()
    ro = MR(c.pd_b, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(c.src.buf, 64, c.src.lkey)])
    wr.set_wr_rdma(ro.rkey, ro.buf)
    c.qa.post_send(wr)
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_REM_ACCESS_ERR)]
    assert ro.read(64) == bytes(64)


def test_bad_local_lkey_loc_prot_err() -> None:
    c = make_conn()
    c.qa.post_send(write_wr(c, 1, 100, lkey=c.src.lkey ^ 0x1))
    c.qa.post_send(write_wr(c, 2, 100))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_LOC_PROT_ERR),
                                                            (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qa.stats()["pkts_sent"] == 0, "nothing is sent for a WR that cannot be gathered"
    assert c.qa.qp_state == e.IBV_QPS_ERR


def test_local_sge_out_of_bounds_loc_prot_err() -> None:
    c = make_conn(size=4096)
    c.qa.post_send(write_wr(c, 1, 200, off=4000))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_LOC_PROT_ERR)]


@pytest.mark.parametrize("rnr_retry", [0, 1, 3])
def test_rnr_retry_exhausted(rnr_retry: int) -> None:
    c = make_conn(rnr_retry=rnr_retry, min_rnr_timer=1)
    c.qa.post_send(send_wr(c, 1, 10))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_RNR_RETRY_EXC_ERR)]
    s = c.qa.stats()
    assert s["rnr_naks_rcvd"] == rnr_retry + 1 and s["pkts_sent"] == rnr_retry + 1
    assert c.qa.qp_state == e.IBV_QPS_ERR
    assert c.qb.qp_state == e.IBV_QPS_RTS  # an RNR NAK does not hurt the responder


def test_rnr_then_receive_posted_succeeds_after_rnr_delay(tmp_path) -> None:
    c = make_conn(rnr_retry=7, min_rnr_timer=1)  # code 1 = 0.01 ms
    pcap = tmp_path / "rnr.pcap"
    c.sim.capture(str(pcap))
    c.qa.post_send(send_wr(c, 1, 10))
    c.sim.run("30us")
    assert len(c.cq_a) == 0
    c.qb.post_recv(recv_wr(c, 7, 100))
    wcs = c.sim.wait_for(c.cq_a, 1)
    c.sim.run_until_idle()
    c.sim.close_capture()
    assert [(w.wr_id, w.status) for w in wcs] == [(1, e.IBV_WC_SUCCESS)]
    assert [(w.wr_id, w.status, w.byte_len) for w in drain(c.cq_b)] == [(7, 0, 10)]
    assert c.dst.read(10) == c.src.read(10)
    frames = [(f.t_ns, f.fields) for f in read_pcap(pcap)]
    sends = [t for t, f in frames if f["opcode"] == 0x04]
    rnr = [(t, f) for t, f in frames if f["opcode"] == 0x11 and f["aeth_syndrome"] & 0xE0 == 0x20]
    assert len(rnr) >= 2 and len(sends) == len(rnr) + 1
    assert all(f["aeth_syndrome"] == 0x21 for _, f in rnr)  # 0x20 | min_rnr_timer
    # each retry waits the RNR delay (10 us) after the RNR NAK reaches the requester
    for (t_nak, _), t_retry in zip(rnr, sends[1:], strict=True):
        wait = t_retry - (t_nak + 1000)  # 1 us propagation
        assert 10_000 - 50 <= wait <= 10_000 + 200, wait
    assert c.qa.stats()["rnr_naks_rcvd"] == len(rnr)


@pytest.mark.parametrize("retry_cnt", [0, 2])
def test_retry_exceeded(retry_cnt: int) -> None:
    c = make_conn(retry_cnt=retry_cnt, timeout=1)
    c.t.link.ab.set_loss(1.0)
    c.qa.post_send(write_wr(c, 1, 100))
    c.qa.post_send(write_wr(c, 2, 100))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_RETRY_EXC_ERR),
                                                            (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert c.qa.stats()["timeouts"] == retry_cnt + 1
    assert c.qa.qp_state == e.IBV_QPS_ERR


def test_chain_posts_all_wrs() -> None:
    c = make_conn()
    wrs = [write_wr(c, i, 100, off=i * 100) for i in range(5)]
    for a, b in zip(wrs, wrs[1:], strict=False):
        a.next_wr = b
    c.qa.post_send(wrs[0])
    c.sim.run_until_idle()
    assert [w.wr_id for w in drain(c.cq_a)] == list(range(5))
    assert c.dst.read(500) == c.src.read(500)


def test_recv_chain_posts_all_wrs() -> None:
    c = make_conn()
    rws = [recv_wr(c, 10 + i, 100, off=i * 100) for i in range(3)]
    rws[0].next_wr, rws[1].next_wr = rws[1], rws[2]
    c.qb.post_recv(rws[0])
    for i in range(3):
        c.qa.post_send(send_wr(c, i, 20 + i, off=i * 100))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.byte_len) for w in drain(c.cq_b)] == [(10, 20), (11, 21), (12, 22)]


def test_bad_wr_gets_failing_wr_and_rest_not_posted() -> None:
    c = make_conn()
    wrs = [write_wr(c, i, 10) for i in range(5)]
    wrs[2].opcode = 99
    for a, b in zip(wrs, wrs[1:], strict=False):
        a.next_wr = b
    bad: list[SendWR] = []
    with pytest.raises(PyverbsRDMAError, match="99"):
        c.qa.post_send(wrs[0], bad)
    assert bad == [wrs[2]]
    c.sim.run_until_idle()
    assert [w.wr_id for w in drain(c.cq_a)] == [0, 1]


def test_bad_wr_send_queue_full() -> None:
    c = make_conn()  # max_send_wr=16
    wrs = [write_wr(c, i, 10) for i in range(20)]
    for a, b in zip(wrs, wrs[1:], strict=False):
        a.next_wr = b
    bad: list[SendWR] = []
    with pytest.raises(PyverbsRDMAError, match="full") as ei:
        c.qa.post_send(wrs[0], bad)
    assert ei.value.error_code == 12  # ENOMEM, as ibv_post_send
    assert bad == [wrs[16]]
    c.sim.run_until_idle()
    assert [w.wr_id for w in drain(c.cq_a)] == list(range(16))


def test_too_many_sges_rejected() -> None:
    c = make_conn()  # max_send_sge = max_recv_sge = 4
    sg = [SGE(c.src.buf + i, 1, c.src.lkey) for i in range(5)]
    bad: list[SendWR] = []
    wr = SendWR(wr_id=9, opcode=e.IBV_WR_SEND, sg=sg)
    with pytest.raises(PyverbsRDMAError, match="num_sge"):
        c.qa.post_send(wr, bad)
    assert bad == [wr]
    with pytest.raises(PyverbsRDMAError, match="num_sge"):
        c.qb.post_recv(RecvWR(wr_id=1, sg=[SGE(c.dst.buf, 1, c.dst.lkey)] * 5))


def test_query_returns_rd_atomic_pkey_port_and_traffic_class() -> None:
    env = make_env()
    attr = full_attr(env, env.qa, env.qb, max_rd_atomic=4, max_dest_rd_atomic=8)
    attr.ah_attr = gid_route(env.t.b.gid, traffic_class=3)
    env.qa.to_init(attr)
    env.qa.to_rtr(attr)
    env.qa.to_rts(attr)
    got, _ = env.qa.query()
    assert (got.max_rd_atomic, got.max_dest_rd_atomic) == (4, 8)
    assert (got.pkey_index, got.port_num) == (0, 1)
    assert got.ah_attr.gr.traffic_class == 3


def test_responder_qp_without_remote_write_rem_inv_req() -> None:
    """QP-level access is checked first: NAK invalid request, not access error (protocol.md 5)."""
    env = make_env()
    connect_qps(env.qa, env.qb, access=e.IBV_ACCESS_LOCAL_WRITE)
    src = MR(env.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    dst = MR(env.pd_b, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(src.buf, 64, src.lkey)])
    wr.set_wr_rdma(dst.rkey, dst.buf)
    env.qa.post_send(wr)
    env.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(env.cq_a)] == [(1, e.IBV_WC_REM_INV_REQ_ERR)]
    assert dst.read(64) == bytes(64)


def test_write_to_deregistered_mr_rem_access_err() -> None:
    c = make_conn()
    rkey = c.dst.rkey
    c.dst.close()
    c.qa.post_send(write_wr(c, 1, 100, rkey=rkey))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_REM_ACCESS_ERR)]


def test_write_to_mr_of_another_pd_rem_access_err() -> None:
    c = make_conn()
    other_pd = PD(c.pd_b.ctx)
    foreign = MR(other_pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(c.src.buf, 64, c.src.lkey)])
    wr.set_wr_rdma(foreign.rkey, foreign.buf)
    c.qa.post_send(wr)
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_REM_ACCESS_ERR)]
    assert foreign.read(64) == bytes(64)


def test_local_sge_from_another_pd_loc_prot_err() -> None:
    c = make_conn()
    foreign = MR(PD(c.pd_a.ctx), 64, e.IBV_ACCESS_LOCAL_WRITE)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(foreign.buf, 64, foreign.lkey)])
    wr.set_wr_rdma(c.dst.rkey, c.dst.buf)
    c.qa.post_send(wr)
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_LOC_PROT_ERR)]


def test_write_out_of_remote_bounds_rem_access_err() -> None:
    c = make_conn(size=4096)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(c.src.buf, 200, c.src.lkey)])
    wr.set_wr_rdma(c.dst.rkey, c.dst.buf + 4000)
    c.qa.post_send(wr)
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_REM_ACCESS_ERR)]


def test_rnr_nak_carries_responders_min_rnr_timer(tmp_path) -> None:
    c = make_conn(rnr_retry=1, min_rnr_timer=1)
    attr, _ = c.qb.query()
    attr.min_rnr_timer = 2  # 0.02 ms, on the responder only
    c.qb.modify(attr, e.IBV_QP_STATE | e.IBV_QP_MIN_RNR_TIMER)
    pcap = tmp_path / "rnr2.pcap"
    c.sim.capture(str(pcap))
    c.qa.post_send(send_wr(c, 1, 10))
    c.sim.run_until_idle()
    c.sim.close_capture()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_RNR_RETRY_EXC_ERR)]
    frames = [(f.t_ns, f.fields) for f in read_pcap(pcap)]
    naks = [(t, f) for t, f in frames if f["opcode"] == 0x11]
    sends = [t for t, f in frames if f["opcode"] == 0x04]
    assert [f["aeth_syndrome"] for _, f in naks] == [0x22, 0x22]
    assert len(sends) == 2
    wait = sends[1] - (naks[0][0] + 1000)
    assert 20_000 - 50 <= wait <= 20_000 + 200, wait


def test_write_with_imm_without_receive_is_rnr() -> None:
    c = make_conn(rnr_retry=0, min_rnr_timer=1)
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, imm_data=5,
                sg=[SGE(c.src.buf, 10, c.src.lkey)])
    wr.set_wr_rdma(c.dst.rkey, c.dst.buf)
    c.qa.post_send(wr)
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_RNR_RETRY_EXC_ERR)]


def test_zero_length_send() -> None:
    c = make_conn()
    c.qb.post_recv(recv_wr(c, 7, 16))
    c.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[]))
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status, w.byte_len) for w in drain(c.cq_a)] == [(1, 0, 0)]
    assert [(w.wr_id, w.status, w.byte_len) for w in drain(c.cq_b)] == [(7, 0, 0)]


def test_sqd_transitions() -> None:
    env = make_env()
    attr = _bring_to(env, "RTS")
    attr.qp_state = e.IBV_QPS_SQD
    env.qa.modify(attr, e.IBV_QP_STATE)
    assert env.qa.qp_state == e.IBV_QPS_SQD
    attr.timeout = 3  # SQD -> SQD may change the timeout
    env.qa.modify(attr, e.IBV_QP_STATE | e.IBV_QP_TIMEOUT)
    assert env.qa.query()[0].timeout == 3
    attr.qp_state = e.IBV_QPS_RTS
    env.qa.modify(attr, e.IBV_QP_STATE)
    assert env.qa.qp_state == e.IBV_QPS_RTS
    attr.qp_state = e.IBV_QPS_SQE  # RC never enters SQE
    with pytest.raises(PyverbsRDMAError, match=transition_re("RTS", "SQE")):
        env.qa.modify(attr, e.IBV_QP_STATE)


def test_cur_state_must_match() -> None:
    env = make_env()
    attr = _bring_to(env, "RTS")
    attr.qp_state = e.IBV_QPS_RTS
    attr.cur_qp_state = e.IBV_QPS_INIT
    with pytest.raises(PyverbsRDMAError, match="cur_qp_state"):
        env.qa.modify(attr, e.IBV_QP_STATE | e.IBV_QP_CUR_STATE)
    attr.cur_qp_state = e.IBV_QPS_RTS
    env.qa.modify(attr, e.IBV_QP_STATE | e.IBV_QP_CUR_STATE)
    assert env.qa.qp_state == e.IBV_QPS_RTS


def test_qp_state_out_of_range() -> None:
    env = make_env()
    attr = _bring_to(env, "INIT")
    attr.qp_state = 9
    with pytest.raises(PyverbsRDMAError, match="0..6"):
        env.qa.modify(attr, e.IBV_QP_STATE)


def test_creation_limits() -> None:
    env = make_env()
    with pytest.raises(PyverbsRDMAError, match="cqe"):
        CQ(env.cq_a.ctx, 0)
    with pytest.raises(PyverbsRDMAError, match="max_send_wr"):
        QP(env.pd_a, QPInitAttr(scq=env.cq_a, rcq=env.cq_a, cap=QPCap(max_send_wr=0)))
    with pytest.raises(PyverbsUserError, match="another host"):
        QP(env.pd_a, QPInitAttr(scq=env.cq_a, rcq=env.cq_b))
    with pytest.raises(PyverbsUserError, match="IBV_QPT_UC"):  # XRC (9) is not emulated (RC, UC, UD are)
        QP(env.pd_a, QPInitAttr(qp_type=9, scq=env.cq_a, rcq=env.cq_a))


def test_destroyed_qp_refuses_work() -> None:
    c = make_conn()
    c.qa.close()
    with pytest.raises(PyverbsRDMAError):
        c.qa.post_send(write_wr(c, 1, 10))
    c.qa.close()  # idempotent


def test_modify_to_err_flushes_outstanding_wrs() -> None:
    c = make_conn()
    c.qa.post_send(write_wr(c, 1, 100))
    c.qa.post_send(write_wr(c, 2, 100))
    c.qb.post_recv(recv_wr(c, 9, 100))
    for qp in (c.qa, c.qb):
        attr, _ = qp.query()
        attr.qp_state = e.IBV_QPS_ERR
        qp.modify(attr, e.IBV_QP_STATE)
    c.sim.run_until_idle()
    assert [(w.wr_id, w.status) for w in drain(c.cq_a)] == [(1, e.IBV_WC_WR_FLUSH_ERR),
                                                            (2, e.IBV_WC_WR_FLUSH_ERR)]
    assert [(w.wr_id, w.status, w.opcode) for w in drain(c.cq_b)] == [
        (9, e.IBV_WC_WR_FLUSH_ERR, e.IBV_WC_RECV)]
