"""SGE / SendWR / RecvWR as Python objects: construction (the one-test common case and the
field-by-field checks give the same object), defaults, fixed fields, repr, copy and pickle."""

from __future__ import annotations

import copy
import pickle

import pytest

from rdmasim.errors import PyverbsUserError
from rdmasim.verbs import enums as e
from rdmasim.verbs.wr import SGE, RecvWR, SendWR, copy_wr_fields

SEND_FIELDS = ("wr_id", "opcode", "sg", "num_sge", "imm_data", "send_flags", "next_wr", "remote_addr",
               "rkey", "compare_add", "swap", "ah", "remote_qpn", "remote_qkey", "bind_mw", "bind_info")


class _Int(int):
    """An int subclass: not a plain int, so construction takes the field-by-field checks."""


def _fields(obj: object, names: tuple[str, ...]) -> dict[str, object]:
    out = {}
    for k in names:
        v = getattr(obj, k)
        out[k] = [s.as_tuple() for s in v] if k == "sg" else v
    return out


def test_sge_fields_and_types() -> None:
    s = SGE(0x1000, 64, 7)
    assert s.as_tuple() == (0x1000, 64, 7)
    t = SGE(_Int(0x1000), _Int(64), _Int(7))  # the checks' path: plain ints stored
    assert t.as_tuple() == (0x1000, 64, 7)
    assert all(type(v) is int for v in t.as_tuple())
    assert repr(s) == "SGE(addr=0x1000, length=64, lkey=0x7)"
    for args, what in (((-1, 1, 1), "SGE addr"), ((1, 1 << 32, 1), "SGE length"), ((1, 1, True), "SGE lkey"),
                       ((1 << 64, 1, 1), "SGE addr"), ((1, 1.0, 1), "SGE length")):
        with pytest.raises(PyverbsUserError, match=what):
            SGE(*args)


def test_sendwr_defaults() -> None:
    wr = SendWR()
    assert _fields(wr, SEND_FIELDS) == {
        "wr_id": 0, "opcode": e.IBV_WR_SEND, "sg": [], "num_sge": 0, "imm_data": 0,
        "send_flags": e.IBV_SEND_SIGNALED, "next_wr": None, "remote_addr": 0, "rkey": 0, "compare_add": 0,
        "swap": 0, "ah": None, "remote_qpn": 0, "remote_qkey": 0, "bind_mw": None, "bind_info": None}
    assert repr(wr) == "SendWR(wr_id=0, opcode=IBV_WR_SEND, sg=[], send_flags=2)"


@pytest.mark.parametrize("nsge", [0, 1, 3])
def test_sendwr_common_case_equals_checked_case(nsge: int) -> None:
    sg = [SGE(0x1000 * (i + 1), 64 + i, 7 + i) for i in range(nsge)]
    fast = SendWR(wr_id=5, opcode=e.IBV_WR_RDMA_WRITE, sg=sg, send_flags=0, imm_data=9)
    tail = SendWR()
    checked = SendWR(wr_id=_Int(5), opcode=_Int(e.IBV_WR_RDMA_WRITE), num_sge=nsge, imm_data=_Int(9),
                     sg=tuple(sg), send_flags=_Int(0), next_wr=tail)
    checked.next_wr = None
    assert _fields(fast, SEND_FIELDS) == _fields(checked, SEND_FIELDS)
    assert all(type(getattr(checked, k)) is int for k in ("wr_id", "opcode", "imm_data", "send_flags"))
    assert fast.sg is not sg and fast.sg == sg  # a list of its own, the same SGE objects
    positional = SendWR(5, e.IBV_WR_RDMA_WRITE, None, 9, sg, 0, None)
    assert _fields(positional, SEND_FIELDS) == _fields(fast, SEND_FIELDS)


def test_sendwr_bad_fields_named_in_order() -> None:
    for kw, what in (({"wr_id": -1}, "SendWR wr_id"), ({"opcode": True}, "SendWR opcode"),
                     ({"imm_data": 1 << 32}, "SendWR imm_data"), ({"send_flags": "2"}, "SendWR send_flags"),
                     ({"wr_id": -1, "opcode": -1}, "SendWR wr_id"), ({"sg": [SGE(0, 1, 0)], "num_sge": 2},
                                                                    "SendWR num_sge"),
                     ({"sg": [(0, 1, 0)]}, r"SendWR sg\[0\]"), ({"sg": SGE(0, 1, 0)}, "SendWR sg")):
        with pytest.raises(PyverbsUserError, match=what):
            SendWR(**kw)  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError, match="SendWR next_wr"):
        SendWR(next_wr=RecvWR())  # type: ignore[arg-type]


def test_recvwr_common_case_equals_checked_case() -> None:
    s = SGE(0x2000, 32, 3)
    fast = RecvWR(wr_id=4, sg=[s])
    checked = RecvWR(wr_id=_Int(4), sg=(s,), num_sge=1)
    names = ("wr_id", "sg", "num_sge", "next_wr")
    assert _fields(fast, names) == _fields(checked, names) == {"wr_id": 4, "sg": [(0x2000, 32, 3)],
                                                               "num_sge": 1, "next_wr": None}
    assert type(checked.wr_id) is int
    assert RecvWR(wr_id=1, sg=[s], next_wr=fast).next_wr is fast
    with pytest.raises(PyverbsUserError, match="RecvWR next_wr"):
        RecvWR(wr_id=1, sg=[s], next_wr=SendWR())  # type: ignore[arg-type]
    with pytest.raises(PyverbsUserError, match="RecvWR wr_id"):
        RecvWR(wr_id=True, sg=[s])
    d = RecvWR()
    assert (d.wr_id, d.sg, d.num_sge, d.next_wr) == (0, [], 0, None)
    assert repr(fast) == "RecvWR(wr_id=4, sg=[SGE(addr=0x2000, length=32, lkey=0x3)])"


def test_fixed_fields() -> None:
    for obj in (SGE(0, 1, 0), SendWR(sg=[SGE(0, 1, 0)]), RecvWR(sg=[SGE(0, 1, 0)])):
        with pytest.raises(AttributeError):
            obj.wr_idd = 1  # type: ignore[union-attr]
        with pytest.raises(AttributeError):
            _ = obj.lenght  # type: ignore[union-attr]
        assert not hasattr(obj, "__dict__")


def test_set_wr_rdma_fast_and_checked() -> None:
    wr = SendWR()
    wr.set_wr_rdma(5, 0x3000)
    assert (wr.rkey, wr.remote_addr) == (5, 0x3000)
    wr.set_wr_rdma(_Int(6), _Int(0x4000))
    assert (wr.rkey, wr.remote_addr) == (6, 0x4000) and type(wr.remote_addr) is int
    with pytest.raises(PyverbsUserError, match="set_wr_rdma rkey"):
        wr.set_wr_rdma(1 << 32, 0)
    with pytest.raises(PyverbsUserError, match="set_wr_rdma addr"):
        wr.set_wr_rdma(1, -1)


def test_copy_pickle_and_copy_wr_fields() -> None:
    wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_WRITE, sg=[SGE(0x1000, 8, 2)], send_flags=0)
    wr.set_wr_rdma(9, 0x5000)
    for dup in (copy.copy(wr), copy.deepcopy(wr), pickle.loads(pickle.dumps(wr))):
        assert type(dup) is SendWR and _fields(dup, SEND_FIELDS) == _fields(wr, SEND_FIELDS)
    dst = SendWR()
    copy_wr_fields(dst, wr)
    assert _fields(dst, SEND_FIELDS) == _fields(wr, SEND_FIELDS)
    r = RecvWR(wr_id=2, sg=[SGE(0x1000, 8, 2)])
    rd = pickle.loads(pickle.dumps(r))
    assert (rd.wr_id, [s.as_tuple() for s in rd.sg], rd.num_sge) == (2, [(0x1000, 8, 2)], 1)
