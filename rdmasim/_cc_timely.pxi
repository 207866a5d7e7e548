# TIMELY (csrc/cc/timely.c): its params struct for rs_host_set_cc and a handle driving the C rules
# by hand for tests (no fabric).  Included after _cc.pxi.

cdef extern from "rdmasim/cc_timely.h" nogil:
    ctypedef struct rs_timely_params:
        double alpha
        double beta
        int64_t t_low_ps
        int64_t t_high_ps
        int64_t min_rtt_ps
        double ai_bps
        uint32_t hai_after
        double hai_factor
        double min_rate_bps
        double max_rate_bps
        double initial_rate_bps
        uint64_t segment_bytes
    ctypedef struct rs_timely_state:
        double rate_bps
        double max_bps
        double rtt_diff_ps
        double gradient
        int64_t prev_rtt_ps
        uint64_t acked_pos
        uint64_t next_update_pos
        uint32_t neg_count
        int started
        int want_sample
        uint64_t sent_bytes
        uint64_t next_ask
        uint64_t updates
        uint64_t low_increases
        uint64_t high_decreases
        uint64_t gradient_increases
        uint64_t hai_increases
        uint64_t gradient_decreases
        int64_t rtt_last_ps
        int64_t rtt_min_ps
        uint64_t rtt_samples
    void rs_timely_init(rs_timely_state *s, const rs_timely_params *p, double line_bps)
    int rs_timely_ack_request(rs_timely_state *s, const rs_timely_params *p, uint32_t payload)
    void rs_timely_on_ack(rs_timely_state *s, const rs_timely_params *p, uint64_t acked, uint64_t inflight,
                          int64_t rtt_ps)


def _timely_params_bytes(dict fields):
    cdef rs_timely_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["timely"] = _timely_params_bytes


def timely_state_from_bytes(bytes b):
    """The fields of an rs_timely_state given as bytes (SimCore.qp_cc_state_bytes)."""
    cdef rs_timely_state s
    if len(b) < sizeof(s):
        raise ValueError(f"TIMELY state needs {sizeof(s)} bytes, got {len(b)}")
    memcpy(&s, <const char *>b, sizeof(s))
    return s


_CC_STATE["timely"] = timely_state_from_bytes


cdef class TimelyForTest:
    """The C TIMELY rules driven by hand: sent(payload) -> asks for an ACK, ack(acked, inflight,
    rtt_ps), state."""
    cdef rs_timely_params p
    cdef rs_timely_state s

    def __cinit__(self, dict params, double line_bps):
        memset(&self.p, 0, sizeof(self.p))
        self.p = params
        rs_timely_init(&self.s, &self.p, line_bps)

    def sent(self, uint32_t payload):
        return bool(rs_timely_ack_request(&self.s, &self.p, payload))

    def ack(self, uint64_t acked, uint64_t inflight, int64_t rtt_ps):
        rs_timely_on_ack(&self.s, &self.p, acked, inflight, rtt_ps)

    @property
    def state(self):
        return self.s
