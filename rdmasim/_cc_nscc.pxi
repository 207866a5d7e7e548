# NSCC (csrc/cc/nscc.c): its params struct for rs_host_set_cc, its state as a dict, and a handle
# driving the C rules by hand for tests (no fabric).  Included after _cc.pxi.

cdef extern from "rdmasim/cc_nscc.h" nogil:
    ctypedef struct rs_nscc_params:
        uint32_t packet_bytes
        int64_t base_rtt_ps
        int trimming
        int64_t target_qdelay_ps
        int64_t qa_threshold_ps
        uint32_t qa_gate
        int quick_adapt
        double alpha_mss
        double fi_mss
        double fi_scale
        int64_t fast_increase_delay_ps
        double eta_mss
        double gamma
        double max_md
        double delay_alpha
        uint32_t adjust_bytes
        double ref_rate_bps
        int64_t ref_rtt_ps
        uint64_t min_cwnd_bytes
        uint64_t max_cwnd_bytes
        uint64_t init_cwnd_bytes
    ctypedef struct rs_nscc_state:
        double cwnd
        double inc_bytes
        double avg_delay_ps
        double max_cwnd
        double line_bps
        double alpha
        double fi
        double fi_scale
        double eta
        int64_t target_ps
        int64_t qa_threshold_ps
        int64_t base_rtt_ps
        int64_t last_delay_ps
        int64_t last_dec_ps
        int64_t last_adjust_ps
        int64_t qa_end_ps
        uint64_t achieved_bytes
        uint64_t received_bytes
        uint64_t bytes_to_ignore
        uint64_t bytes_ignored
        uint64_t fi_count
        uint8_t increasing
        uint8_t trigger_qa
        uint32_t min_cwnd
        uint32_t acks
        uint32_t fair_increases
        uint32_t prop_increases
        uint32_t fast_increases
        uint32_t md_decreases
        uint32_t noops
        uint32_t losses
        uint32_t trims
        uint32_t quick_adapts
        uint32_t ignored
    void rs_nscc_params_default(rs_nscc_params *p, uint32_t mtu, int64_t base_rtt_ps, int trimming)
    int rs_nscc_params_check(const rs_nscc_params *p)
    void rs_nscc_init(rs_nscc_state *s, const rs_nscc_params *p, double line_bps, int64_t now_ps)
    void rs_nscc_on_ack(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t acked,
                        int64_t rtt_ps, int ecn, uint64_t inflight)
    void rs_nscc_on_loss(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t lost_bytes,
                         int trimmed)
    uint64_t rs_nscc_window(const rs_nscc_state *s, const rs_nscc_params *p)


def _nscc_params_bytes(dict fields):
    cdef rs_nscc_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["nscc"] = _nscc_params_bytes


def nscc_default_params(uint32_t mtu, int64_t base_rtt_ps, bint trimming):
    """The C defaults (rs_nscc_params_default) as a dict: the PDS and the Python defaults agree."""
    cdef rs_nscc_params p
    rs_nscc_params_default(&p, mtu, base_rtt_ps, trimming)
    return p


def nscc_params_check(dict fields):
    """rs_nscc_params_check: 0, or the 1-based index of the first bad field."""
    cdef rs_nscc_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return rs_nscc_params_check(&p)


def nscc_state_from_bytes(bytes b):
    """The fields of an rs_nscc_state given as bytes (SimCore.qp_cc_state_bytes)."""
    cdef rs_nscc_state s
    if len(b) < sizeof(s):
        raise ValueError(f"NSCC state needs {sizeof(s)} bytes, got {len(b)}")
    memcpy(&s, <const char *>b, sizeof(s))
    return s


_CC_STATE["nscc"] = nscc_state_from_bytes


cdef class NsccForTest:
    """The C NSCC rules driven by hand: ack(now_ps, acked, rtt_ps, ecn, inflight),
    loss(now_ps, lost_bytes, trimmed), window, state."""
    cdef rs_nscc_params p
    cdef rs_nscc_state s

    def __cinit__(self, dict params, double line_bps, int64_t now_ps=0):
        memset(&self.p, 0, sizeof(self.p))
        self.p = params
        rs_nscc_init(&self.s, &self.p, line_bps, now_ps)

    def ack(self, int64_t now_ps, uint64_t acked, int64_t rtt_ps, bint ecn=False, uint64_t inflight=0):
        rs_nscc_on_ack(&self.s, &self.p, now_ps, acked, rtt_ps, ecn, inflight)

    def loss(self, int64_t now_ps, uint64_t lost_bytes, bint trimmed=True):
        rs_nscc_on_loss(&self.s, &self.p, now_ps, lost_bytes, trimmed)

    def set_cwnd(self, double cwnd):
        """Put the window at an exact value (tests of the rules at chosen windows)."""
        self.s.cwnd = cwnd

    @property
    def window(self):
        return rs_nscc_window(&self.s, &self.p)

    @property
    def state(self):
        return self.s
