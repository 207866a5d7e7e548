"""The verbs API against hostile arguments: each is refused with a documented error type
(PyverbsUserError for malformed arguments, PyverbsRDMAError with an errno where ibv_* fails),
never a crash, an OverflowError, a silent cast, or a call that runs with the wrong object."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.verbs_pair import VerbsPair

from rdmasim.errors import PyverbsRDMAError, PyverbsUserError
from rdmasim.verbs import (
    CQ,
    MR,
    PD,
    QP,
    SGE,
    AHAttr,
    Context,
    GlobalRoute,
    QPAttr,
    QPCap,
    QPInitAttr,
    RecvWR,
    SendWR,
    connect_qps,
)
from rdmasim.verbs import enums as e

RW = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


class Pair(VerbsPair):
    def __init__(self, seed: int = 1) -> None:
        super().__init__(mtu=1024, seed=seed, cqe=16,
                         cap=QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=2, max_recv_sge=2),
                         connect=False)
        self.src = self.mr_a(256, e.IBV_ACCESS_LOCAL_WRITE)
        self.dst = self.mr_b(256, RW)

    def connect(self) -> Pair:  # type: ignore[override]
        connect_qps(self.qa, self.qb)
        return self

    def write(self, length: int = 64, **kw: Any) -> SendWR:
        wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(self.src.buf, length, self.src.lkey)], **kw)
        wr.set_wr_rdma(self.dst.rkey, self.dst.buf)
        return wr


# ---- the crash: an MR over Python object pointers ----------------------------------------------

def test_mr_over_an_object_array_is_refused() -> None:
    p = Pair()
    objs = np.array([object() for _ in range(64)], dtype=object)
    with pytest.raises(PyverbsUserError, match="dtype object"):
        MR(p.pd_b, access=RW, buffer=objs)
    structured_with_obj = np.zeros(4, dtype=[("a", "i4"), ("b", "O")])
    with pytest.raises(PyverbsUserError, match="object pointers"):
        MR(p.pd_b, access=RW, buffer=structured_with_obj)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.float64, np.complex64, "datetime64[ns]",
                                   [("a", "u4"), ("b", "f4")]])
def test_mr_over_fixed_size_values_is_accepted(dtype: Any) -> None:
    p = Pair().connect()
    buf = np.zeros(32, dtype=dtype)
    mr = MR(p.pd_b, access=RW, buffer=buf)
    assert mr.length == buf.nbytes
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(p.src.buf, 8, p.src.lkey)])
    p.src.write(bytes(range(1, 9)))
    wr.set_wr_rdma(mr.rkey, mr.buf)
    p.qa.post_send(wr)
    p.sim.run_until_idle()
    assert p.cq_a.poll(1)[1][0].ok
    assert buf.view(np.uint8)[:8].tobytes() == bytes(range(1, 9))  # written into the caller's array


def test_mr_buffer_rules() -> None:
    p = Pair()
    with pytest.raises(PyverbsUserError, match="contiguous"):
        MR(p.pd_b, access=RW, buffer=np.zeros(64, dtype=np.uint8)[::2])
    with pytest.raises(PyverbsUserError, match="empty"):
        MR(p.pd_b, access=RW, buffer=bytearray())
    with pytest.raises(PyverbsUserError, match="does not expose memory"):
        MR(p.pd_b, access=RW, buffer=[1, 2, 3])
    with pytest.raises(PyverbsUserError, match="read-only.*IBV_ACCESS_LOCAL_WRITE"):
        MR(p.pd_b, access=RW, buffer=b"\0" * 64)
    with pytest.raises(PyverbsUserError, match="length"):
        MR(p.pd_b, -1, RW)
    with pytest.raises(PyverbsUserError, match="length"):
        MR(p.pd_b, 10.5, RW)  # type: ignore[arg-type]


def test_read_only_memory_is_a_source_without_write_access() -> None:
    p = Pair().connect()
    ro = MR(p.pd_a, access=0, buffer=bytes(range(64)))
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(ro.buf, 64, ro.lkey)])
    wr.set_wr_rdma(p.dst.rkey, p.dst.buf)
    p.qa.post_send(wr)
    p.sim.run_until_idle()
    assert p.cq_a.poll(1)[1][0].ok and p.dst.read(64) == bytes(range(64))
    with pytest.raises(PyverbsUserError, match="read-only"):
        ro.write(b"x")


# ---- objects of two simulations -----------------------------------------------------------------

def test_connect_qps_of_two_simulations_is_refused() -> None:
    p, q = Pair(seed=1), Pair(seed=1)
    with pytest.raises(PyverbsUserError, match="another simulation"):
        connect_qps(p.qa, q.qb)


def test_sge_with_an_mr_of_another_simulation_is_refused() -> None:
    p, q = Pair(seed=1).connect(), Pair(seed=1)
    assert (q.src.lkey, q.src.buf) == (p.src.lkey, p.src.buf)  # same numbers: only the origin differs
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(q.src.buf, 64, q.src.lkey)])
    wr.set_wr_rdma(p.dst.rkey, p.dst.buf)
    with pytest.raises(PyverbsUserError, match="another simulation"):
        p.qa.post_send(wr)
    wr = p.write()
    wr.set_wr_rdma(q.dst.rkey, q.dst.buf)
    with pytest.raises(PyverbsUserError, match="another simulation"):
        p.qa.post_send(wr)
    p.sim.run_until_idle()
    assert p.cq_a.poll(4)[0] == 0  # nothing was posted


def test_address_vector_and_cq_of_another_simulation_are_refused() -> None:
    p, q = Pair(), Pair()
    with pytest.raises(PyverbsUserError, match="another simulation"):
        QP(p.pd_a, QPInitAttr(scq=q.cq_a, rcq=q.cq_a))
    attr = QPAttr(qp_access_flags=RW, dest_qp_num=q.qb.qp_num, ah_attr=AHAttr(dest=q.t.b))
    p.qa.to_init(attr)
    with pytest.raises(PyverbsUserError, match="another simulation"):
        p.qa.to_rtr(attr)
    with pytest.raises(PyverbsUserError, match="another simulation"):
        p.sim.wait_for(q.cq_a, 1)


# ---- flags and ranges ---------------------------------------------------------------------------

def test_unknown_send_flags_are_refused_by_name() -> None:
    p = Pair().connect()
    with pytest.raises(PyverbsUserError, match=r"send_flags = 0xffffffff has unknown bits.*SIGNALED"):
        p.qa.post_send(p.write(send_flags=0xFFFFFFFF))
    p.sim.run_until_idle()
    assert p.cq_a.poll(4)[0] == 0


def test_unknown_access_and_mask_bits_are_refused() -> None:
    p = Pair()
    with pytest.raises(PyverbsUserError, match="qp_access_flags"):
        QPAttr(qp_access_flags=1 << 30)
    with pytest.raises(PyverbsUserError, match="attr_mask"):
        p.qa.modify(QPAttr(), 1 << 31)
    with pytest.raises(PyverbsRDMAError) as exc:  # fits the C field: ibv_reg_mr's EINVAL
        MR(p.pd_a, 64, 1 << 30)
    assert exc.value.error_code == errno.EINVAL


def _negative_calls(p: Pair) -> list[tuple[str, Callable[[], Any]]]:
    return [
        ("MR access", lambda: MR(p.pd_a, 64, -1)),
        ("CQ cqe", lambda: CQ(p.ctx_a, -1)),
        ("CQ.poll", lambda: p.cq_a.poll(-1)),
        ("QPCap", lambda: QPCap(max_send_wr=-1)),
        ("QPAttr", lambda: QPAttr(sq_psn=-1)),
        ("GlobalRoute", lambda: GlobalRoute(traffic_class=-1)),
        ("AHAttr", lambda: AHAttr(sl=-1)),
        ("SGE addr", lambda: SGE(-1, 1, 0)),
        ("SGE lkey", lambda: SGE(0, 1, -1)),
        ("SendWR wr_id", lambda: SendWR(wr_id=-1)),
        ("SendWR imm_data", lambda: SendWR(imm_data=-1)),
        ("RecvWR wr_id", lambda: RecvWR(wr_id=-1)),
        ("set_wr_rdma", lambda: SendWR().set_wr_rdma(-1, 0)),
        ("set_wr_atomic", lambda: SendWR().set_wr_atomic(0, 0, -1)),
        ("connect_qps psn", lambda: connect_qps(p.qa, p.qb, psn_a=-1)),
        ("wait_for", lambda: p.sim.wait_for(p.cq_a, -1)),
        ("modify mask", lambda: p.qa.modify(QPAttr(), -1)),
        ("set_recovery", lambda: p.qa.set_recovery("irn", window=-1)),
    ]


@pytest.mark.parametrize("idx", range(18))
def test_a_negative_int_is_a_user_error_not_overflow(idx: int) -> None:
    p = Pair()
    name, call = _negative_calls(p)[idx]
    with pytest.raises(PyverbsUserError):
        call()


@pytest.mark.parametrize("value", [2**64, 1.5, "3", None, True])
def test_wrong_types_and_huge_values_reach_no_cast(value: Any) -> None:
    p = Pair().connect()
    wr = p.write()
    wr.wr_id = value  # mutated after construction: checked when posted
    with pytest.raises(PyverbsUserError, match="wr_id"):
        p.qa.post_send(wr)
    attr = QPAttr()
    attr.timeout = value
    with pytest.raises(PyverbsUserError, match="timeout"):
        p.qa.modify(attr, e.IBV_QP_TIMEOUT)
    sge = SGE(p.src.buf, 8, p.src.lkey)
    sge.length = value
    with pytest.raises(PyverbsUserError, match="length"):
        p.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[sge]))


def test_values_that_fit_but_are_out_of_range_are_the_nics_einval() -> None:
    p = Pair()
    attr = QPAttr(qp_access_flags=RW)
    p.qa.to_init(attr)
    attr = QPAttr(path_mtu=9, dest_qp_num=p.qb.qp_num, ah_attr=AHAttr(dest=p.t.b))
    with pytest.raises(PyverbsRDMAError, match="path_mtu"):
        p.qa.to_rtr(attr)


def test_a_looping_next_wr_chain_is_refused() -> None:
    p = Pair().connect()
    wr = p.write()
    wr.next_wr = wr
    with pytest.raises(PyverbsUserError, match="loops"):
        p.qa.post_send(wr)
    r = RecvWR(wr_id=1, sg=[SGE(p.dst.buf, 8, p.dst.lkey)])
    r2 = RecvWR(wr_id=2, sg=[SGE(p.dst.buf, 8, p.dst.lkey)], next_wr=r)
    r.next_wr = r2
    with pytest.raises(PyverbsUserError, match="loops"):
        p.qb.post_recv(r)


def test_wrong_objects_are_user_errors() -> None:
    p = Pair().connect()
    with pytest.raises(PyverbsUserError):
        p.qa.post_send("not a wr")  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError):
        SendWR(sg=[("addr", 1, 2)])  # type: ignore[list-item]
    with pytest.raises(PyverbsUserError):
        SendWR(sg=SGE(0, 1, 0))  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError):
        SendWR(next_wr=RecvWR())  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError):
        p.qa.modify("attr", e.IBV_QP_STATE)  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError):
        QP(p.pd_a, "init")  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError):
        connect_qps(p.qa, "qb")  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError):
        Context(p.sim, name=3)  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError, match="num_sge"):
        SendWR(sg=[SGE(0, 1, 0)], num_sge=2)


def test_closed_objects_are_refused() -> None:
    p = Pair()
    ctx = Context(p.t.a)
    ctx.close()
    with pytest.raises(PyverbsUserError, match="closed"):
        PD(ctx)
    with pytest.raises(PyverbsUserError, match="closed"):
        CQ(ctx)
    pd = PD(p.ctx_a)
    pd.close()
    with pytest.raises(PyverbsUserError, match="deallocated"):
        MR(pd, 8)
    cq = CQ(p.ctx_a, 4)
    cq.close()
    with pytest.raises(PyverbsUserError, match="destroyed"):
        cq.poll(1)


def test_many_sges_are_einval_not_value_error() -> None:
    p = Pair().connect()
    sg = [SGE(p.src.buf, 1, p.src.lkey)] * 33
    with pytest.raises(PyverbsRDMAError) as exc:
        p.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=sg))
    assert exc.value.error_code == errno.EINVAL


# ---- refused as pyverbs / rxe refuse them ------------------------------------------------------

@pytest.mark.parametrize("port", [0, 2, 255])
def test_an_address_handle_on_a_port_the_nic_lacks_is_einval(port: int) -> None:
    """The NIC has one port, 1: ``ibv_create_ah`` on any other is EINVAL (ib_uverbs_create_ah
    checks rdma_is_port_valid), and nothing is created."""
    from rdmasim.verbs import AH

    p = Pair()
    with pytest.raises(PyverbsRDMAError, match=f"port_num={port}") as exc:
        AH(p.pd_a, AHAttr(port_num=port, dest=p.t.b))
    assert exc.value.error_code == errno.EINVAL
    with pytest.raises(PyverbsRDMAError, match=f"port_num={port}"):
        AH(p.pd_a, AHAttr(port_num=port, is_global=1, gr=GlobalRoute(dgid=p.t.b.gid)))
    assert AH(p.pd_a, AHAttr(port_num=1, dest=p.t.b)).dest is p.t.b


def test_a_qp_address_vector_on_a_port_the_nic_lacks_is_einval() -> None:
    """``ibv_modify_qp`` with IBV_QP_AV on port 2 of a one-port NIC is EINVAL (the kernel's
    rdma_check_ah_attr) and leaves the QP where it was."""
    p = Pair()
    p.qa.to_init(QPAttr(qp_access_flags=RW))
    attr = QPAttr(dest_qp_num=p.qb.qp_num, ah_attr=AHAttr(port_num=2, is_global=1,
                                                          gr=GlobalRoute(dgid=p.t.b.gid)))
    with pytest.raises(PyverbsRDMAError, match="port_num=2") as exc:
        p.qa.to_rtr(attr)
    assert exc.value.error_code == errno.EINVAL
    assert p.qa.qp_state == e.IBV_QPS_INIT
    attr.ah_attr.port_num = 1
    p.qa.to_rtr(attr)
    assert p.qa.qp_state == e.IBV_QPS_RTR


def test_a_deregistered_mrs_bytes_are_refused() -> None:
    """After ``close`` (ibv_dereg_mr) the region's memory is no longer the MR's: read, write and
    ``array`` are refused (pyverbs: PyverbsUserError, 'The MR buffer isn't allocated')."""
    p = Pair()
    mr = MR(p.pd_a, 64, e.IBV_ACCESS_LOCAL_WRITE)
    mr.write(b"abc")
    assert mr.read(3) == b"abc"
    mr.close()
    with pytest.raises(PyverbsUserError, match="deregistered"):
        mr.write(b"x")
    with pytest.raises(PyverbsUserError, match="deregistered"):
        mr.read(1)
    with pytest.raises(PyverbsUserError, match="deregistered"):
        _ = mr.array


def test_a_wc_has_every_field_of_pyverbs_wc_with_roce_values() -> None:
    """pyverbs' WC has wr_id, status, opcode, vendor_err, byte_len, qp_num, src_qp, imm_data,
    wc_flags, pkey_index, slid, sl and dlid_path_bits; on RoCE slid and dlid_path_bits are 0
    (no LIDs: the source is in the GRH)."""
    from rdmasim.verbs import WC

    names = ("wr_id", "status", "opcode", "vendor_err", "byte_len", "qp_num", "src_qp", "imm_data",
             "wc_flags", "pkey_index", "slid", "sl", "dlid_path_bits")
    assert set(names) <= set(WC._fields)
    made = WC(**{n: i + 1 for i, n in enumerate(names)})  # pyverbs' keywords
    assert [getattr(made, n) for n in names] == list(range(1, len(names) + 1))
    assert (WC().slid, WC().dlid_path_bits) == (0, 0)
    p = Pair().connect()
    p.qb.post_recv(RecvWR(wr_id=9, sg=[SGE(p.dst.buf, 64, p.dst.lkey)]))
    p.qa.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, sg=[SGE(p.src.buf, 8, p.src.lkey)]))
    for cq in (p.cq_b, p.cq_a):
        n, [wc] = cq.poll(1)  # busy polling lets time pass until the completion is due
        assert n == 1 and wc.status == e.IBV_WC_SUCCESS
        assert (wc.slid, wc.dlid_path_bits) == (0, 0)
        assert len(wc) == len(WC._fields)
        assert wc._asdict()["slid"] == 0
