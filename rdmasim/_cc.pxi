# Congestion control: the kind table (rdmasim/cc.h), each algorithm's params struct as bytes for
# rs_host_set_cc, and the DCQCN reaction point handle for tests and for the parameter presets.
# An algorithm's own .pxi (_cc_<name>.pxi, included after this one) adds its struct converter to
# _CC_PARAMS and its test harness.
from libc.stdint cimport int64_t, uint32_t, uint64_t, uint8_t
from libc.string cimport memcpy

cdef extern from "rdmasim/cc.h" nogil:
    enum: RS_CC_COUNT
    enum: RS_CC_STATE_BYTES
    enum: RS_CC_PARAMS_BYTES
    ctypedef struct rs_cc_algo:
        const char *name
        int kind
        unsigned flags
        size_t params_size
        size_t state_size
    const rs_cc_algo *rs_cc_algo_get(int kind)
    const char *rs_cc_kind_name(int kind)


def cc_kinds():
    """{name: (kind number, built in)} for every kind of enum rs_cc_kind."""
    cdef int k
    return {rs_cc_kind_name(k).decode(): (k, k == 0 or rs_cc_algo_get(k) != NULL) for k in range(RS_CC_COUNT)}


#: algorithm name -> function turning its to_c() dict into the C params struct's bytes
_CC_PARAMS = {}
#: algorithm name -> function turning its C state struct's bytes into a dict (SimCore.qp_cc_state)
_CC_STATE = {}


def cc_params_bytes(str name, dict fields):
    """The C params struct of algorithm `name` (padding zeroed) from its fields."""
    try:
        conv = _CC_PARAMS[name]
    except KeyError:
        raise ValueError(f"congestion control {name!r} has no parameter struct in this build "
                         f"(known: {sorted(_CC_PARAMS)})") from None
    return conv(fields)


cdef bytes _struct_bytes(const void *p, size_t n):
    return (<const char *>p)[:n]


cdef extern from "rdmasim/cc_dcqcn.h" nogil:
    ctypedef struct rs_dcqcn_params:
        double g
        double initial_alpha
        int64_t alpha_timer_ps
        int alpha_update_on_timer
        int64_t rate_timer_ps
        uint64_t byte_counter_bytes
        uint32_t fast_recovery_steps
        double ai_bps
        double hai_bps
        double min_rate_bps
        double max_rate_bps
        double decrease_scale
        double min_dec_factor
        int64_t rate_reduce_period_ps
        double rate_on_first_cnp
        int clamp_tgt_rate
        int clamp_tgt_rate_after_time_inc
    ctypedef struct rs_dcqcn_rp:
        double rc_bps
        double rt_bps
        double alpha
        double line_bps
        uint32_t timer_events
        uint32_t byte_events
        uint64_t bytes_since
        int64_t next_alpha_ps
        int64_t next_rate_ps
        int64_t next_decrease_ps
        int reacting
        uint64_t cnps
        uint64_t decreases
        uint64_t increases
        uint64_t alpha_decays
    void rs_dcqcn_init(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, double line_bps)
    void rs_dcqcn_on_cnp(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now_ps)
    void rs_dcqcn_on_sent(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, uint64_t nbytes)
    void rs_dcqcn_on_timer(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now_ps)
    int64_t rs_dcqcn_next_timer(const rs_dcqcn_rp *rp)
    double rs_dcqcn_alpha(const rs_dcqcn_rp *rp, const rs_dcqcn_params *p)


cdef class DcqcnRpForTest:
    """The C DCQCN reaction point driven by hand: cnp(t), sent(bytes), advance(t)."""
    cdef rs_dcqcn_params p
    cdef rs_dcqcn_rp rp

    def __cinit__(self, dict params, double line_bps):
        self.p = params
        rs_dcqcn_init(&self.rp, &self.p, line_bps)

    def cnp(self, int64_t now_ps):
        rs_dcqcn_on_cnp(&self.rp, &self.p, now_ps)

    def sent(self, uint64_t nbytes):
        rs_dcqcn_on_sent(&self.rp, &self.p, nbytes)

    def advance(self, int64_t now_ps):
        rs_dcqcn_on_timer(&self.rp, &self.p, now_ps)

    def set_current_rate(self, double rc_bps):
        """Put Rc at an exact value (tests of the rate catch-up at chosen distances from the cap)."""
        self.rp.rc_bps = rc_bps

    @property
    def next_timer_ps(self):
        return rs_dcqcn_next_timer(&self.rp)

    @property
    def state(self):
        """The reaction point's fields; ``alpha`` is the current value (the stored one decayed by
        ``alpha_decays`` periods)."""
        cdef dict d = self.rp
        d["alpha"] = rs_dcqcn_alpha(&self.rp, &self.p)
        return d


def _dcqcn_params_bytes(dict fields):
    cdef rs_dcqcn_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["dcqcn"] = _dcqcn_params_bytes
