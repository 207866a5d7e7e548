# InfiniBand CC (csrc/cc/ibcc.c): its params struct for rs_host_set_cc and a handle driving the C
# rules by hand for tests (no fabric).  Included after _cc.pxi.
from libc.stdint cimport uint16_t

cdef extern from "rdmasim/cc_ibcc.h" nogil:
    enum: RS_IBCC_CCT_MAX
    ctypedef struct rs_ibcc_params:
        int64_t ccti_timer_ps
        int64_t ipd_unit_ps
        uint16_t ccti_increase
        uint16_t ccti_limit
        uint16_t ccti_min
        uint16_t cct_len
        uint16_t cct[RS_IBCC_CCT_MAX]
    ctypedef struct rs_ibcc_state:
        double line_bps
        int64_t next_timer_ps
        uint32_t last_wire_bytes
        uint16_t ccti
        uint16_t ccti_peak
        uint64_t becns
        uint64_t at_limit
        uint64_t expiries
    uint32_t rs_ibcc_ipd(uint16_t entry)
    void rs_ibcc_init(rs_ibcc_state *s, const rs_ibcc_params *p, double line_bps)
    void rs_ibcc_on_becn(rs_ibcc_state *s, const rs_ibcc_params *p, int64_t now_ps)
    void rs_ibcc_on_timer(rs_ibcc_state *s, const rs_ibcc_params *p, int64_t now_ps)
    int64_t rs_ibcc_delay_ps(const rs_ibcc_state *s, const rs_ibcc_params *p)
    double rs_ibcc_rate_bps(const rs_ibcc_state *s, const rs_ibcc_params *p, uint32_t wire_bytes)

#: entries a C congestion control table holds (IbccParams checks the length against it)
IBCC_CCT_MAX = RS_IBCC_CCT_MAX


cdef void _ibcc_fill(rs_ibcc_params *p, dict fields) except *:
    memset(p, 0, sizeof(p[0]))
    cdef list cct = list(fields["cct"])
    if not 1 <= len(cct) <= RS_IBCC_CCT_MAX:
        raise ValueError(f"IB CC table of {len(cct)} entries: allowed 1..{RS_IBCC_CCT_MAX}")
    p.ccti_timer_ps = fields["ccti_timer_ps"]
    p.ipd_unit_ps = fields["ipd_unit_ps"]
    p.ccti_increase = fields["ccti_increase"]
    p.ccti_limit = fields["ccti_limit"]
    p.ccti_min = fields["ccti_min"]
    p.cct_len = len(cct)
    for i, entry in enumerate(cct):
        p.cct[i] = entry


def _ibcc_params_bytes(dict fields):
    cdef rs_ibcc_params p
    _ibcc_fill(&p, fields)
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["ibcc"] = _ibcc_params_bytes


cdef dict _ibcc_state_dict(const rs_ibcc_state *s):
    return dict(line_bps=s.line_bps, next_timer_ps=s.next_timer_ps, last_wire_bytes=s.last_wire_bytes,
                ccti=s.ccti, ccti_peak=s.ccti_peak, becns=s.becns, at_limit=s.at_limit,
                expiries=s.expiries)


def ibcc_state_from_bytes(bytes b):
    """The fields of an rs_ibcc_state given as bytes (SimCore.qp_cc_state_bytes)."""
    cdef rs_ibcc_state s
    if len(b) < sizeof(s):
        raise ValueError(f"IB CC state needs {sizeof(s)} bytes, got {len(b)}")
    memcpy(&s, <const char *>b, sizeof(s))
    return _ibcc_state_dict(&s)


_CC_STATE["ibcc"] = ibcc_state_from_bytes


def ibcc_ipd(uint16_t entry):
    """The inter-packet delay (in IPD units) of one encoded CCT entry (the C decoder)."""
    return rs_ibcc_ipd(entry)


cdef class IbccForTest:
    """The C IB CC rules driven by hand: becn(t), advance(t), rate(wire_bytes), delay_ps, state."""
    cdef rs_ibcc_params p
    cdef rs_ibcc_state s

    def __cinit__(self, dict params, double line_bps):
        _ibcc_fill(&self.p, params)
        rs_ibcc_init(&self.s, &self.p, line_bps)

    def becn(self, int64_t now_ps):
        rs_ibcc_on_becn(&self.s, &self.p, now_ps)

    def advance(self, int64_t now_ps):
        rs_ibcc_on_timer(&self.s, &self.p, now_ps)

    def rate(self, uint32_t wire_bytes):
        return rs_ibcc_rate_bps(&self.s, &self.p, wire_bytes)

    @property
    def delay_ps(self):
        return rs_ibcc_delay_ps(&self.s, &self.p)

    @property
    def state(self):
        return _ibcc_state_dict(&self.s)
