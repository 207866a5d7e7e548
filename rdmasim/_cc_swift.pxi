# Swift (csrc/cc/swift.c): its params struct for rs_host_set_cc and a handle driving the C rules
# by hand for tests (no fabric).  Included after _cc.pxi.

cdef extern from "rdmasim/cc_swift.h" nogil:
    ctypedef struct rs_swift_params:
        double ai
        double beta
        double max_mdf
        int64_t base_target_ps
        int64_t hop_scale_ps
        uint32_t hops
        int64_t fs_range_ps
        double fs_min_cwnd
        double fs_max_cwnd
        double min_cwnd
        double max_cwnd
        double init_cwnd
        uint32_t packet_bytes
        uint32_t acks_per_window
    ctypedef struct rs_swift_state:
        double cwnd
        double fs_alpha_ps
        double fs_beta_ps
        int64_t target_ps
        int64_t last_decrease_ps
        int decreased
        uint32_t last_wire_bytes
        uint32_t since_ask
        uint64_t acks
        uint64_t increases
        uint64_t decreases
        uint64_t capped_decreases
        uint64_t held
        int64_t rtt_last_ps
        int64_t rtt_min_ps
        uint64_t rtt_samples
    void rs_swift_init(rs_swift_state *s, const rs_swift_params *p, double line_bps)
    int64_t rs_swift_target(const rs_swift_state *s, const rs_swift_params *p)
    void rs_swift_on_ack(rs_swift_state *s, const rs_swift_params *p, int64_t now_ps, uint64_t acked,
                         int64_t rtt_ps)
    int rs_swift_ack_request(rs_swift_state *s, const rs_swift_params *p, uint64_t inflight)
    uint64_t rs_swift_window(const rs_swift_state *s, const rs_swift_params *p)
    double rs_swift_rate(const rs_swift_state *s, const rs_swift_params *p)


def _swift_params_bytes(dict fields):
    cdef rs_swift_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["swift"] = _swift_params_bytes


def swift_state_from_bytes(bytes b):
    """The fields of an rs_swift_state given as bytes (SimCore.qp_cc_state_bytes)."""
    cdef rs_swift_state s
    if len(b) < sizeof(s):
        raise ValueError(f"Swift state needs {sizeof(s)} bytes, got {len(b)}")
    memcpy(&s, <const char *>b, sizeof(s))
    return s


_CC_STATE["swift"] = swift_state_from_bytes


cdef class SwiftForTest:
    """The C Swift rules driven by hand: ack(now_ps, acked, rtt_ps), sent(wire_bytes), target,
    window, rate, state."""
    cdef rs_swift_params p
    cdef rs_swift_state s

    def __cinit__(self, dict params, double line_bps):
        memset(&self.p, 0, sizeof(self.p))
        self.p = params
        rs_swift_init(&self.s, &self.p, line_bps)

    def ack(self, int64_t now_ps, uint64_t acked, int64_t rtt_ps):
        rs_swift_on_ack(&self.s, &self.p, now_ps, acked, rtt_ps)

    def sent(self, uint32_t wire_bytes):
        self.s.last_wire_bytes = wire_bytes

    def ack_request(self, uint64_t inflight):
        """A request packet leaves with `inflight` payload bytes outstanding: does it ask for an ACK?"""
        return bool(rs_swift_ack_request(&self.s, &self.p, inflight))

    def set_cwnd(self, double cwnd):
        """Put the window at an exact value (tests of the rules at chosen windows)."""
        self.s.cwnd = cwnd

    @property
    def target_ps(self):
        return rs_swift_target(&self.s, &self.p)

    @property
    def window(self):
        return rs_swift_window(&self.s, &self.p)

    @property
    def rate_bps(self):
        return rs_swift_rate(&self.s, &self.p)

    @property
    def state(self):
        return self.s
