# Event trace: csrc/include/rdmasim/trace.h. Records are drained in bulk into a numpy
# structured array by one memcpy; Python never touches a record one by one here.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

import numpy as _np

cdef extern from "rdmasim/trace.h" nogil:
    ctypedef struct rs_trace_rec:
        int64_t t_ps
        uint64_t wr_id
        uint32_t qpn
        uint32_t dest_qpn
        uint32_t psn
        uint32_t msn
        uint32_t len
        uint32_t aux
        int32_t link
        uint16_t node
        uint16_t peer
        uint8_t kind
        uint8_t node_kind
        uint8_t peer_kind
        uint8_t pkt_kind
        uint8_t opcode
        uint8_t syndrome
        uint8_t ecn
        uint8_t flags
        uint8_t reason
        uint8_t status
        uint8_t verb_op
        uint8_t priority
        uint32_t reserved
    int rs_trace_enable(rs_sim *sim, uint64_t max_records)
    void rs_trace_disable(rs_sim *sim)
    int rs_trace_enabled(const rs_sim *sim)
    size_t rs_trace_pending(const rs_sim *sim)
    size_t rs_trace_drain(rs_sim *sim, rs_trace_rec *out, size_t n)
    void rs_trace_counts(const rs_sim *sim, uint64_t out[3])


cdef list _TRACE_FIELDS = [
    ("t_ps", "<i8"), ("wr_id", "<u8"), ("qpn", "<u4"), ("dest_qpn", "<u4"), ("psn", "<u4"),
    ("msn", "<u4"), ("len", "<u4"), ("aux", "<u4"), ("link", "<i4"), ("node", "<u2"),
    ("peer", "<u2"), ("kind", "u1"), ("node_kind", "u1"), ("peer_kind", "u1"), ("pkt_kind", "u1"),
    ("opcode", "u1"), ("syndrome", "u1"), ("ecn", "u1"), ("flags", "u1"), ("reason", "u1"),
    ("status", "u1"), ("verb_op", "u1"), ("priority", "u1"), ("reserved", "<u4"),
]


cdef object _trace_dtype():
    """The numpy dtype of rs_trace_rec, with offsets read from the compiled struct."""
    cdef rs_trace_rec r
    cdef char *base = <char *> &r
    offsets = [
        <char *> &r.t_ps - base, <char *> &r.wr_id - base, <char *> &r.qpn - base,
        <char *> &r.dest_qpn - base, <char *> &r.psn - base, <char *> &r.msn - base,
        <char *> &r.len - base, <char *> &r.aux - base, <char *> &r.link - base,
        <char *> &r.node - base, <char *> &r.peer - base, <char *> &r.kind - base,
        <char *> &r.node_kind - base, <char *> &r.peer_kind - base, <char *> &r.pkt_kind - base,
        <char *> &r.opcode - base, <char *> &r.syndrome - base, <char *> &r.ecn - base,
        <char *> &r.flags - base, <char *> &r.reason - base, <char *> &r.status - base,
        <char *> &r.verb_op - base, <char *> &r.priority - base, <char *> &r.reserved - base,
    ]
    return _np.dtype({"names": [f[0] for f in _TRACE_FIELDS],
                      "formats": [f[1] for f in _TRACE_FIELDS],
                      "offsets": offsets, "itemsize": sizeof(rs_trace_rec)})


#: numpy structured dtype of one trace record (csrc/include/rdmasim/trace.h)
TRACE_DTYPE = _trace_dtype()


def trace_enable(SimCore core, uint64_t max_records=0):
    """Start recording into a fresh buffer; ``max_records`` caps the records kept (0: no cap)."""
    core._check(rs_trace_enable(core.sim, max_records))


def trace_disable(SimCore core):
    """Stop recording and free the C buffer (records not drained are discarded)."""
    rs_trace_disable(core.sim)


def trace_enabled(SimCore core):
    return bool(rs_trace_enabled(core.sim))


def trace_counts(SimCore core):
    """(recorded, not_recorded, cap) since the trace was enabled."""
    cdef uint64_t out[3]
    rs_trace_counts(core.sim, out)
    return int(out[0]), int(out[1]), int(out[2])


def trace_drain(SimCore core):
    """Move every pending record into a new numpy structured array (TRACE_DTYPE)."""
    cdef size_t n = rs_trace_pending(core.sim)
    arr = _np.empty(n, dtype=TRACE_DTYPE)
    if n == 0:
        return arr
    cdef unsigned char[::1] raw = arr.view(_np.uint8)
    cdef size_t got = rs_trace_drain(core.sim, <rs_trace_rec *> &raw[0], n)
    return arr[:got]
