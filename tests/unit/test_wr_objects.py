"""SGE / SendWR / RecvWR as Python objects: construction (the one-test common case and the
field-by-field checks give the same object), defaults, fixed fields, repr, copy and pickle."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdmasim
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


def test_plain_construction_is_decided_in_c_and_the_rest_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """The common request (plain ints, an MR's key, no or one SGE) never reaches the Python
    checks (``_init_checked``); anything else does, and is decided there."""
    from rdmasim.verbs import MR, PD, Context
    from rdmasim.verbs._checks import MRKey

    calls: list[str] = []
    for cls, name in ((SGE, "_init_checked"), (SendWR, "_init_checked"), (RecvWR, "_init_checked"),
                      (SendWR, "_set_wr_rdma_checked")):
        checked = getattr(cls, name)
        monkeypatch.setattr(cls, name, lambda self, *a, _c=checked, _n=f"{cls.__name__}.{name}": (
            calls.append(_n), _c(self, *a))[1])
    topo = rdmasim.back_to_back()
    mr = MR(PD(Context(topo.a)), 4096, e.IBV_ACCESS_LOCAL_WRITE)
    s = SGE(mr.buf, 64, mr.lkey)
    assert type(s.lkey) is MRKey  # kept, so post_send can check its simulation
    wr = SendWR(wr_id=1, opcode=e.IBV_WR_RDMA_WRITE, sg=[s], send_flags=0)
    wr.set_wr_rdma(mr.rkey, mr.buf)
    RecvWR(wr_id=2, sg=[s])
    assert calls == []
    SGE(mr.buf, _Int(64), mr.lkey)
    SendWR(wr_id=1, sg=[s, s])
    RecvWR(wr_id=2, sg=[s], next_wr=RecvWR(wr_id=3, sg=[s]))  # a RecvWR as next_wr: still plain
    RecvWR(wr_id=2, sg=[s], num_sge=1)
    wr.set_wr_rdma(_Int(1), 0)
    assert calls == ["SGE._init_checked", "SendWR._init_checked", "RecvWR._init_checked",
                     "SendWR._set_wr_rdma_checked"]


def test_a_work_request_never_initialised_is_refused_when_posted() -> None:
    """``SendWR.__new__`` without ``__init__`` (or ``del wr.field``) leaves fields unset: posting
    it names the first one (no crash, nothing posted)."""
    from rdmasim.verbs import CQ, MR, PD, QP, Context, QPCap, QPInitAttr, connect_qps

    topo = rdmasim.back_to_back()
    ca, cb = Context(topo.a), Context(topo.b)
    pa, pb = PD(ca), PD(cb)
    cqa, cqb = CQ(ca, 4), CQ(cb, 4)
    qa = QP(pa, QPInitAttr(scq=cqa, rcq=cqa, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    qb = QP(pb, QPInitAttr(scq=cqb, rcq=cqb, cap=QPCap(max_send_wr=4, max_recv_wr=4)))
    connect_qps(qa, qb)
    MR(pa, 64, e.IBV_ACCESS_LOCAL_WRITE)
    bare = SendWR.__new__(SendWR)
    with pytest.raises(AttributeError):
        _ = bare.wr_id
    with pytest.raises(AttributeError, match="wr_id"):
        qa.post_send(bare)
    with pytest.raises(AttributeError, match="wr_id"):
        qb.post_recv(RecvWR.__new__(RecvWR))
    wr = SendWR(sg=[SGE(0, 1, 0)])
    del wr.rkey
    with pytest.raises(AttributeError, match="rkey"):
        qa.post_send(wr)
    topo.sim.run_until_idle()
    assert qa.stats()["pkts_sent"] == 0


def test_signatures_for_help() -> None:
    import inspect

    assert list(inspect.signature(SendWR).parameters) == ["wr_id", "opcode", "num_sge", "imm_data", "sg",
                                                          "send_flags", "next_wr"]
    assert list(inspect.signature(SGE).parameters) == ["addr", "length", "lkey"]
    assert inspect.signature(RecvWR).parameters["next_wr"].default is None


def _outcome(make: Any) -> tuple[str, Any]:
    """What building a work request gives: its fields (with their types), or its error."""
    try:
        obj = make()
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return "error", (type(exc), str(exc))
    names = [k for cls in type(obj).__mro__ for k in cls.__dict__.get("__slots__", ())]
    out = {}
    for k in names:
        v = getattr(obj, k)
        out[k] = ([(type(s), s.as_tuple()) for s in v] if k == "sg" else (type(v), v))
    return "ok", out


# mostly plain in-range ints (the C path is taken only when every field is one), else edges and
# the wrong types
_PLAIN = st.integers(0, 3)
_VALUES = st.one_of(_PLAIN, _PLAIN, _PLAIN, _PLAIN, _PLAIN, _PLAIN, _PLAIN, _PLAIN,
                    st.integers(-2, -1), st.integers(2**32 - 1, 2**32), st.integers(2**64 - 1, 2**64),
                    st.integers(0, 9).map(_Int), st.booleans(), st.none(), st.just(1.0), st.just("1"))


@settings(max_examples=500, deadline=None)
@given(st.lists(_VALUES, min_size=7, max_size=7), st.sampled_from(["none", "one", "two", "tuple", "bad"]))
def test_c_construction_gives_what_the_checks_give(args: list[Any], sg_kind: str) -> None:
    """Whatever the arguments, SendWR(...) (the C plain case, else the checks) and the checks
    alone (``_init_checked`` on a bare object) give the same fields or the same error."""
    s = SGE(0x1000, 8, 2)
    sg = {"none": None, "one": [s], "two": [s, s], "tuple": (s,), "bad": [(0, 1, 2)]}[sg_kind]
    wr_id, opcode, num_sge, imm, flags, nxt, rkey = args
    kw = {"wr_id": wr_id, "opcode": opcode, "imm_data": imm, "sg": sg, "send_flags": flags}
    for extra in ({}, {"num_sge": num_sge}, {"next_wr": nxt}):
        def checked(extra: dict = extra) -> SendWR:
            obj = SendWR.__new__(SendWR)
            a = {"num_sge": None, "next_wr": None, **kw, **extra}
            obj._init_checked(a["wr_id"], a["opcode"], a["num_sge"], a["imm_data"], a["sg"], a["send_flags"],
                              a["next_wr"])
            return obj
        assert _outcome(lambda extra=extra: SendWR(**kw, **extra)) == _outcome(checked)
    for a in (args[:3], [args[0], args[1], rkey]):
        def sge_checked(a: list[Any] = a) -> SGE:
            obj = SGE.__new__(SGE)
            obj._init_checked(*a)
            return obj
        assert _outcome(lambda a=a: SGE(*a)) == _outcome(sge_checked)
    rkw = {"wr_id": wr_id, "sg": sg}

    def recv_checked() -> RecvWR:
        obj = RecvWR.__new__(RecvWR)
        obj._init_checked(wr_id, None, sg, None)
        return obj
    assert _outcome(lambda: RecvWR(**rkw)) == _outcome(recv_checked)
    w1, w2 = SendWR(), SendWR()
    assert _outcome(lambda: (w1.set_wr_rdma(rkey, wr_id), w1)[1]) == _outcome(
        lambda: (w2._set_wr_rdma_checked(rkey, wr_id), w2)[1])


def test_a_layout_only_serves_its_own_class() -> None:
    """The C constructors store fields at the offsets of the class's ``_layout``: a layout of
    another class, or of the wrong kind, is refused (TypeError) instead of writing outside the
    object."""
    from rdmasim import _core

    class Other(_core.SendWRInit):
        __slots__ = ("a",)
        _layout = SendWR._layout  # offsets of SendWR's 16 slots: Other has one

    with pytest.raises(TypeError, match="not a layout of its own"):
        Other()

    class Wrong(_core.SGEInit):
        __slots__ = _core.SGE_SLOTS
        _layout = SendWR._layout  # a send WR's layout for an SGE

    with pytest.raises(TypeError, match="not a layout of its own"):
        Wrong(0, 1, 2)

    class NoSlots(_core.RecvWRInit):
        __slots__ = ("x",)

    with pytest.raises(TypeError, match="not those of a work-request class"):
        _core.WRLayout(NoSlots)

    class Sub(SendWR):  # a user's subclass: the parent's layout, valid in its instances
        __slots__ = ("note",)

    s = Sub(wr_id=3, sg=[SGE(0, 1, 2)])
    assert (s.wr_id, s.num_sge, s.rkey) == (3, 1, 0)
