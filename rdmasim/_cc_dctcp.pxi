# DCTCP (csrc/cc/dctcp.c): its params struct for rs_host_set_cc and a handle driving the C rules
# by hand for tests (no fabric).  Included after _cc.pxi.

cdef extern from "rdmasim/cc_dctcp.h" nogil:
    ctypedef struct rs_dctcp_params:
        double g
        double initial_alpha
        double ai_bps
        double min_rate_bps
        double max_rate_bps
        uint64_t window_bytes
        int var_win
        int pace
        uint32_t ack_every
    ctypedef struct rs_dctcp_state:
        double rate_bps
        double max_bps
        double alpha
        uint64_t acked_pos
        uint64_t batch_end
        uint64_t cwr_end
        uint64_t batch_acked
        uint64_t batch_ce
        int in_cwr
        int started
        uint64_t acks
        uint64_t ce_acks
        uint64_t cuts
        uint64_t increases
        uint64_t alpha_updates
        int64_t rtt_last_ps
        int64_t rtt_min_ps
        uint64_t rtt_samples
        uint32_t unasked
    void rs_dctcp_init(rs_dctcp_state *s, const rs_dctcp_params *p, double line_bps)
    void rs_dctcp_on_ack(rs_dctcp_state *s, const rs_dctcp_params *p, uint64_t acked, uint64_t inflight,
                         uint64_t ce_bytes, int ce_echo)
    uint64_t rs_dctcp_window(const rs_dctcp_state *s, const rs_dctcp_params *p)
    int rs_dctcp_ack_request(rs_dctcp_state *s, const rs_dctcp_params *p, uint32_t payload, uint64_t inflight)


def _dctcp_params_bytes(dict fields):
    cdef rs_dctcp_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["dctcp"] = _dctcp_params_bytes


def dctcp_state_from_bytes(bytes b):
    """The fields of an rs_dctcp_state given as bytes (SimCore.qp_cc_state_bytes)."""
    cdef rs_dctcp_state s
    if len(b) < sizeof(s):
        raise ValueError(f"DCTCP state needs {sizeof(s)} bytes, got {len(b)}")
    memcpy(&s, <const char *>b, sizeof(s))
    return s


_CC_STATE["dctcp"] = dctcp_state_from_bytes


cdef class DctcpForTest:
    """The C DCTCP rules driven by hand: ack(acked, inflight, ce_bytes, ce_echo), window, state."""
    cdef rs_dctcp_params p
    cdef rs_dctcp_state s

    def __cinit__(self, dict params, double line_bps):
        memset(&self.p, 0, sizeof(self.p))
        self.p = params
        rs_dctcp_init(&self.s, &self.p, line_bps)

    def ack(self, uint64_t acked, uint64_t inflight, uint64_t ce_bytes=0, bint ce_echo=False):
        rs_dctcp_on_ack(&self.s, &self.p, acked, inflight, ce_bytes, ce_echo)

    def ack_request(self, uint32_t payload, uint64_t inflight):
        return bool(rs_dctcp_ack_request(&self.s, &self.p, payload, inflight))

    @property
    def window(self):
        return rs_dctcp_window(&self.s, &self.p)

    @property
    def state(self):
        return self.s
