"""What pyverbs (rdma-core) and Linux rxe refuse, the namespace refuses too, with their error
types: an address handle on a port the device lacks (PyverbsRDMAError, EINVAL, as
``ibv_create_ah``), a deregistered MR's bytes (PyverbsUserError, as pyverbs' ``MR.read``/``write``
once the buffer is gone). A float or bool where a C integer goes is a TypeError that is also a
PyverbsUserError, never silently truncated; the one float pyverbs programs rely on, a CQ's
``cqe`` (rdma-core's tests create ``CQ(ctx, max_cqe/2)``), is truncated as pyverbs' C conversion
does, with a warning. WCs carry every field of pyverbs' WC."""

from __future__ import annotations

import errno
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from support.pyverbs_pair import poll

from rdmasim.errors import PyverbsError, PyverbsRDMAError, PyverbsUserError
from rdmasim.pyverbs import libibverbs_enums as e
from rdmasim.pyverbs.addr import AH, AHAttr, GlobalRoute
from rdmasim.pyverbs.cq import CQ, CQEX, WC, CqInitAttrEx, PollCqAttr, TruncatedCqeWarning
from rdmasim.pyverbs.device import Context
from rdmasim.pyverbs.mr import MR
from rdmasim.pyverbs.pd import PD
from rdmasim.pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from rdmasim.pyverbs.srq import SrqAttr
from rdmasim.pyverbs.wr import SGE, RecvWR, SendWR
from rdmasim.verbs import connect_qps

# pyverbs' WC(...) keywords (rdma-core pyverbs/cq.pyx), all of them
PYVERBS_WC_FIELDS = ("wr_id", "status", "opcode", "vendor_err", "byte_len", "qp_num", "src_qp",
                     "imm_data", "wc_flags", "pkey_index", "slid", "sl", "dlid_path_bits")


def _constructors(ctx: Context, pd: PD) -> dict[str, Callable[[Any], object]]:
    """Each takes the value for one integer argument."""
    return {
        "CQ cqe": lambda v: CQ(ctx, v),
        "CQ comp_vector": lambda v: CQ(ctx, 4, comp_vector=v),
        "CQEX cqe": lambda v: CQEX(ctx, CqInitAttrEx(cqe=v)),
        "MR length": lambda v: MR(pd, v, e.IBV_ACCESS_LOCAL_WRITE),
        "MR access": lambda v: MR(pd, 8, v),
        "QPCap max_send_wr": lambda v: QPCap(max_send_wr=v),
        "QPCap max_recv_sge": lambda v: QPCap(max_recv_sge=v),
        "QPAttr timeout": lambda v: QPAttr(timeout=v),
        "QPInitAttr qp_type": lambda v: QPInitAttr(qp_type=v),
        "SrqAttr max_wr": lambda v: SrqAttr(max_wr=v),
        "AHAttr port_num": lambda v: AHAttr(port_num=v),
        "GlobalRoute sgid_index": lambda v: GlobalRoute(sgid_index=v),
        "SGE length": lambda v: SGE(0, v, 0),
        "SendWR wr_id": lambda v: SendWR(wr_id=v),
        "RecvWR num_sge": lambda v: RecvWR(num_sge=v),
    }


INT_ARGUMENTS = ("CQ cqe", "CQ comp_vector", "CQEX cqe", "MR length", "MR access", "QPCap max_send_wr",
                 "QPCap max_recv_sge", "QPAttr timeout", "QPInitAttr qp_type", "SrqAttr max_wr",
                 "AHAttr port_num", "GlobalRoute sgid_index", "SGE length", "SendWR wr_id", "RecvWR num_sge")


@pytest.mark.parametrize(("what", "value"), [(w, v) for w in INT_ARGUMENTS for v in (1.5, 2.0, True)
                                              if not (w.endswith("cqe") and isinstance(v, float))])
def test_a_float_or_bool_integer_argument_is_a_type_error(what: str, value: Any) -> None:
    """pyverbs hands these to C integers; rdmasim never truncates 1.5 to 1 or reads True as 1:
    each constructor refuses them, naming the argument and the value (a CQ's float cqe is
    converted as pyverbs converts it: the next test)."""
    ctx = Context(name="rxe0")
    make = _constructors(ctx, PD(ctx))[what]
    with pytest.raises(TypeError, match=what.split()[-1]) as exc:
        make(value)
    assert isinstance(exc.value, PyverbsUserError)
    assert repr(value) in str(exc.value)


def test_a_float_cqe_is_truncated_as_pyverbs_does_with_a_warning() -> None:
    """pyverbs passes cqe to ibv_create_cq's C int through Cython's conversion, which truncates
    a float (rdma-core's test_cq creates CQ(ctx, max_cqe/2, ...), 16383.5 on rxe): the same CQ
    here, and a TruncatedCqeWarning naming the value, so the truncation is not silent."""
    ctx = Context(name="rxe0")
    max_cqe = ctx.query_device().max_cqe
    with pytest.warns(TruncatedCqeWarning, match=r"CQ cqe=1\.5 is not an integer: truncated to 1"):
        assert CQ(ctx, 1.5).cqe == 1
    with pytest.warns(TruncatedCqeWarning, match=f"truncated to {max_cqe // 2}"):
        assert CQ(ctx, max_cqe / 2, None, None, 0).cqe == max_cqe // 2
    with pytest.warns(TruncatedCqeWarning):
        assert CQEX(ctx, CqInitAttrEx(cqe=7.9)).cqe == 7
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert CQ(ctx, 2.0).cqe == 2  # nothing lost: no warning
        warnings.simplefilter("error", TruncatedCqeWarning)
        with pytest.raises(TruncatedCqeWarning):
            CQ(ctx, 2.5)
    for bad in (True, float("nan"), "3"):
        with pytest.raises(TypeError, match="CQ cqe") as exc:
            CQ(ctx, bad)
        assert isinstance(exc.value, PyverbsUserError)


def test_the_verbs_cq_refuses_a_float_cqe() -> None:
    """rdmasim.verbs (not the pyverbs namespace) takes integers only."""
    from rdmasim import verbs

    ctx = Context(name="rxe0")
    with pytest.raises(TypeError, match=r"CQ cqe must be an integer .*not 1\.5 \(float\)") as exc:
        verbs.CQ(ctx, 1.5)
    assert isinstance(exc.value, PyverbsUserError)


@pytest.mark.parametrize("port", [0, 2])
def test_an_ah_on_a_port_the_device_lacks_is_einval(port: int) -> None:
    ctx0, ctx1 = Context(name="rxe0"), Context(name="rxe1")
    pd = PD(ctx0)
    gid = ctx1.query_gid(1, 0)
    with pytest.raises(PyverbsRDMAError, match=f"port_num={port}") as exc:
        AH(pd, AHAttr(port_num=port, gr=GlobalRoute(dgid=gid)))
    assert exc.value.error_code == errno.EINVAL
    assert AH(pd, AHAttr(port_num=1, gr=GlobalRoute(dgid=gid))).ah_attr.port_num == 1


def test_a_closed_mrs_read_and_write_are_refused() -> None:
    pd = PD(Context(name="rxe0"))
    mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE)
    mr.write("hello", 5)
    assert mr.read(5, 0) == b"hello"
    mr.close()
    for call in (lambda: mr.write("x", 1), lambda: mr.read(1, 0)):
        with pytest.raises(PyverbsError, match="deregistered"):
            call()
    pd2 = PD(Context(name="rxe0"))
    mr2 = MR(pd2, 64, e.IBV_ACCESS_LOCAL_WRITE)
    pd2.close()  # closing the PD deregisters its MRs
    with pytest.raises(PyverbsUserError, match="deregistered"):
        mr2.read(1, 0)


def test_wcs_carry_every_pyverbs_wc_field_slid_and_dlid_path_bits_zero_on_roce() -> None:
    made = WC(**{n: i for i, n in enumerate(PYVERBS_WC_FIELDS)})
    assert [getattr(made, n) for n in PYVERBS_WC_FIELDS] == list(range(len(PYVERBS_WC_FIELDS)))
    ctx0, ctx1 = Context(name="rxe0"), Context(name="rxe1")
    pd0, pd1 = PD(ctx0), PD(ctx1)
    cq0 = CQ(ctx0, 8)
    cq1 = CQEX(ctx1, CqInitAttrEx(cqe=8))
    q0 = QP(pd0, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq0, rcq=cq0, cap=QPCap(max_send_wr=4)))
    q1 = QP(pd1, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq1, rcq=cq1, cap=QPCap(max_recv_wr=4)))
    connect_qps(q0, q1)
    src, dst = MR(pd0, 64, e.IBV_ACCESS_LOCAL_WRITE), MR(pd1, 64, e.IBV_ACCESS_LOCAL_WRITE)
    q1.post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(dst.buf, 64, dst.lkey)]))
    q0.post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(src.buf, 8, src.lkey)]))
    [wc] = poll(cq0)
    assert wc.status == e.IBV_WC_SUCCESS
    assert all(hasattr(wc, n) for n in PYVERBS_WC_FIELDS)
    assert (wc.slid, wc.sl, wc.dlid_path_bits) == (0, 0, 0)
    while cq1.start_poll(PollCqAttr()) != 0:
        pass
    assert cq1.wr_id == 2 and cq1.read_byte_len() == 8
    assert (cq1.read_slid(), cq1.read_sl(), cq1.read_dlid_path_bits()) == (0, 0, 0)
    cq1.end_poll()
