# Building rdmasim.verbs' work-request objects (SGE, SendWR, RecvWR) in C: with a Python __init__
# a SendWR took 0.51 us and an SGE 0.20 us to build, here 0.34 and 0.10 (bench/wr_costs.py), which
# a program that makes a new work request per post (a next_wr chain, pyverbs style) pays each time.
#
# The classes stay Python classes with __slots__ (rdmasim/verbs/wr.py): the interpreter reads and
# writes slots fastest (7 ns against 17 ns for an extension type's attribute), which a loop that
# reuses one work request and changes four fields per post feels. Each subclasses one of the
# bases here, which only fill those slots, at the offsets of the class's `_layout` (a WRLayout
# made once per class), and only in the plain case: every argument a plain int in range (keys: a
# plain int or the layout's `key_type`, an MR's key), no or one SGE of the layout's `sge_type`,
# num_sge and next_wr left out. Everything else goes to the class's `_init_checked`, which
# converts or refuses it with its own messages, so every check has one implementation.
# SendPoster (_post.pxi) reads the same slots.

cimport cython
from libc.stdint cimport UINT32_MAX
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF

cdef extern from "Python.h":
    unsigned long long _pylong_as_ull "PyLong_AsUnsignedLongLong" (object) noexcept
    PyObject *_pyerr_occurred "PyErr_Occurred" () noexcept
    void _pyerr_clear "PyErr_Clear" () noexcept

cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member

from types import MemberDescriptorType as _MemberDescriptorType


cdef Py_ssize_t _slot_offset(object cls, str name) except -1:
    """Where an instance of exactly ``cls`` keeps its ``__slots__`` field ``name`` (the offset its
    member descriptor reads from), so the fast path reads fields without an attribute lookup."""
    descr = cls.__dict__.get(name)
    if type(descr) is not _MemberDescriptorType:
        raise TypeError(f"{cls.__name__}.{name} is not a __slots__ field")
    return (<PyMemberDescrObject *> <PyObject *> descr).d_member.offset


cdef inline object _slot(object obj, Py_ssize_t off):
    """The field of ``obj`` at ``off`` (an exact instance of the class the offset is of); None if
    it is unset (then the conversion refuses it and the Python checks name it)."""
    cdef PyObject *v = (<PyObject **> ((<char *> <PyObject *> obj) + off))[0]
    if v == NULL:
        return None
    return <object> v


cdef inline bint _as_u64(object v, uint64_t *out) noexcept:
    """An int (enum members too, not bools) in [0, 2**64 - 1] into *out; False for anything
    else, with no error left set."""
    cdef unsigned long long x
    if type(v) is not int and (not isinstance(v, int) or isinstance(v, bool)):
        return False
    x = _pylong_as_ull(v)
    if x == <unsigned long long> -1 and _pyerr_occurred() != NULL:
        _pyerr_clear()
        return False
    out[0] = x
    return True


cdef inline bint _as_u32(object v, uint32_t *out) noexcept:
    cdef uint64_t x
    # UINT32_MAX, not the literal 0xFFFFFFFF: Cython compared that as a Python int (an int object
    # made and freed per field)
    if not _as_u64(v, &x) or x > UINT32_MAX:
        return False
    out[0] = <uint32_t> x
    return True



cdef inline void _set_slot(object obj, Py_ssize_t off, object v) noexcept:
    """Store ``v`` in the slot of ``obj`` at ``off`` (dropping what it held: __init__ may run
    twice)."""
    cdef PyObject **p = <PyObject **> ((<char *> <PyObject *> obj) + off)
    cdef PyObject *old = p[0]
    Py_INCREF(v)
    p[0] = <PyObject *> v
    Py_XDECREF(old)


cdef extern from "rdmasim/ib.h":
    enum:
        RS_WR_SEND
        RS_SEND_SIGNALED


cdef inline bint _plain_u64(object v) noexcept:
    """A plain int (not a subclass) in [0, 2**64 - 1]: a field the checks keep as it is."""
    cdef uint64_t x
    return type(v) is int and _as_u64(v, &x)


cdef inline bint _plain_u32(object v) noexcept:
    cdef uint32_t x
    return type(v) is int and _as_u32(v, &x)


cdef inline bint _plain_key(object v, object key_type) noexcept:
    """A 32-bit key the checks keep as it is: a plain int, or an MR's key (``key_type``)."""
    cdef uint32_t x
    return (type(v) is int or type(v) is key_type) and _as_u32(v, &x)


cdef enum:  # the fields of the three layouts, in slot order of WRLayout's `names`
    _F_ADDR = 0
    _F_LENGTH = 1
    _F_LKEY = 2
    _F_WR_ID = 0
    _F_SG = 1
    _F_NUM_SGE = 2
    _F_NEXT_WR = 3
    _F_OPCODE = 4
    _F_IMM_DATA = 5
    _F_SEND_FLAGS = 6
    _F_REMOTE_ADDR = 7
    _F_RKEY = 8
    _F_COMPARE_ADD = 9
    _F_SWAP = 10
    _F_REMOTE_QPN = 11
    _F_REMOTE_QKEY = 12
    _F_MAX = 16


SGE_SLOTS = ("addr", "length", "lkey")
RECV_WR_SLOTS = ("wr_id", "sg", "num_sge", "next_wr")
SEND_WR_SLOTS = ("wr_id", "sg", "num_sge", "next_wr", "opcode", "imm_data", "send_flags", "remote_addr",
                 "rkey", "compare_add", "swap", "remote_qpn", "remote_qkey", "ah", "bind_mw", "bind_info")


cdef enum:  # which class a layout is of
    _K_SGE = 0
    _K_RECV_WR = 1
    _K_SEND_WR = 2

_KINDS = {SGE_SLOTS: _K_SGE, RECV_WR_SLOTS: _K_RECV_WR, SEND_WR_SLOTS: _K_SEND_WR}


cdef class WRLayout:
    """Where ``cls`` (a work-request class: its ``__slots__`` are one of SGE_SLOTS, RECV_WR_SLOTS,
    SEND_WR_SLOTS) keeps its fields, and what its plain case takes: ``key_type`` (an MR's key),
    ``sge_type``, ``wr_type`` (what a RecvWR's next_wr may be)."""

    cdef Py_ssize_t off[_F_MAX]
    cdef int kind
    cdef object cls
    cdef object key_type
    cdef object sge_type
    cdef object wr_type

    def __init__(self, cls, key_type=None, sge_type=None, wr_type=None):
        cdef Py_ssize_t i
        names = cls.__dict__.get("__slots__")
        if names not in _KINDS:
            raise TypeError(f"{cls.__name__}: its __slots__ {names!r} are not those of a work-request class")
        self.kind = _KINDS[names]
        for i in range(len(names)):
            self.off[i] = _slot_offset(cls, names[i])
        self.cls = cls
        self.key_type = key_type
        self.sge_type = sge_type
        self.wr_type = wr_type


cdef WRLayout _layout_of_class(object cls, int kind):
    """The layout of exactly ``cls`` (its own, of ``kind``), for code that reads its instances'
    slots (the posters)."""
    L = cls.__dict__.get("_layout")
    if type(L) is not WRLayout or (<WRLayout> L).kind != kind or (<WRLayout> L).cls is not cls:
        raise TypeError(f"{cls.__name__}: no work-request layout of its own")
    return <WRLayout> L


cdef inline WRLayout _layout_of(object obj, int kind):
    """The layout of ``obj``'s class, if it is one of ``kind`` that ``obj`` is an instance of (the
    offsets are only valid then: anything else would write outside the object)."""
    cdef WRLayout L = <WRLayout?> type(obj)._layout
    if L.kind != kind or (type(obj) is not L.cls and not isinstance(obj, L.cls)):
        raise TypeError(f"{type(obj).__name__}._layout is not a layout of its own work-request class")
    return L


@cython.auto_pickle(False)  # the fields are the subclass's slots: object's pickling
cdef class SGEInit:
    """``SGE(addr, length, lkey)`` in C (the plain case); rdmasim.verbs.SGE is the class to use."""

    def __init__(self, addr, length, lkey):
        cdef WRLayout L = _layout_of(self, _K_SGE)
        if _plain_u64(addr) and _plain_u32(length) and _plain_key(lkey, L.key_type):
            _set_slot(self, L.off[_F_ADDR], addr)
            _set_slot(self, L.off[_F_LENGTH], length)
            _set_slot(self, L.off[_F_LKEY], lkey)
            return
        self._init_checked(addr, length, lkey)


cdef inline bint _plain_sg(object obj, WRLayout L, object sg):
    """No SGE, or a list of one of the layout's SGE type: stored as a list of its own."""
    if sg is None:
        _set_slot(obj, L.off[_F_SG], [])
        _set_slot(obj, L.off[_F_NUM_SGE], 0)
        return True
    if type(sg) is list and len(<list> sg) == 1 and type((<list> sg)[0]) is L.sge_type:
        _set_slot(obj, L.off[_F_SG], [(<list> sg)[0]])
        _set_slot(obj, L.off[_F_NUM_SGE], 1)
        return True
    return False


@cython.auto_pickle(False)  # the fields are the subclass's slots: object's pickling
cdef class SendWRInit:
    """``SendWR(...)`` and ``set_wr_rdma`` in C (the plain case); rdmasim.verbs.SendWR is the class
    to use."""

    def __init__(self, wr_id=0, opcode=RS_WR_SEND, num_sge=None, imm_data=0, sg=None,
                 send_flags=RS_SEND_SIGNALED, next_wr=None):
        cdef WRLayout L = _layout_of(self, _K_SEND_WR)
        cdef int k
        if (num_sge is None and next_wr is None and _plain_u64(wr_id) and _plain_u32(opcode)
                and _plain_u32(imm_data) and _plain_u32(send_flags) and _plain_sg(self, L, sg)):
            _set_slot(self, L.off[_F_WR_ID], wr_id)
            _set_slot(self, L.off[_F_NEXT_WR], None)
            _set_slot(self, L.off[_F_OPCODE], opcode)
            _set_slot(self, L.off[_F_IMM_DATA], imm_data)
            _set_slot(self, L.off[_F_SEND_FLAGS], send_flags)
            for k in range(_F_REMOTE_ADDR, _F_REMOTE_QKEY + 1):
                _set_slot(self, L.off[k], 0)
            for k in range(_F_REMOTE_QKEY + 1, _F_MAX):  # ah, bind_mw, bind_info
                _set_slot(self, L.off[k], None)
            return
        self._init_checked(wr_id, opcode, num_sge, imm_data, sg, send_flags, next_wr)

    def set_wr_rdma(self, rkey, addr):
        """Target of an RDMA WRITE/READ: the remote MR's ``rkey`` and an address in it."""
        cdef WRLayout L = _layout_of(self, _K_SEND_WR)
        if _plain_key(rkey, L.key_type) and _plain_u64(addr):
            _set_slot(self, L.off[_F_RKEY], rkey)
            _set_slot(self, L.off[_F_REMOTE_ADDR], addr)
            return
        self._set_wr_rdma_checked(rkey, addr)


@cython.auto_pickle(False)  # the fields are the subclass's slots: object's pickling
cdef class RecvWRInit:
    """``RecvWR(...)`` in C (the plain case); rdmasim.verbs.RecvWR is the class to use."""

    def __init__(self, wr_id=0, num_sge=None, sg=None, next_wr=None):
        cdef WRLayout L = _layout_of(self, _K_RECV_WR)
        if (num_sge is None and _plain_u64(wr_id) and type(sg) is list
                and (next_wr is None or isinstance(next_wr, L.wr_type)) and _plain_sg(self, L, sg)):
            _set_slot(self, L.off[_F_WR_ID], wr_id)
            _set_slot(self, L.off[_F_NEXT_WR], next_wr)
            return
        self._init_checked(wr_id, num_sge, sg, next_wr)
