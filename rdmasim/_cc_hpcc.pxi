# HPCC (csrc/cc/hpcc.c): its params struct for rs_host_set_cc and a handle driving the C rules
# by hand for tests (no fabric).  Included after _cc.pxi.

cdef extern from "rdmasim/telemetry.h" nogil:
    enum: RS_INT_MAX_HOPS
    ctypedef struct rs_int_hop:
        int64_t ts_ps
        uint64_t tx_bytes
        uint32_t qlen_bytes
        uint64_t rate_bps
    ctypedef struct rs_int_stack:
        uint8_t n_hops
        rs_int_hop hop[5]

cdef extern from "rdmasim/cc_hpcc.h" nogil:
    ctypedef struct rs_hpcc_params:
        double eta
        uint32_t max_stage
        int fast_react
        int64_t base_rtt_ps
        double ai_bps
        double min_rate_bps
        double max_rate_bps
        uint32_t ack_every
    ctypedef struct rs_hpcc_hop:
        int64_t ts_ps
        uint64_t tx_bytes
        uint32_t qlen_bytes
    ctypedef struct rs_hpcc_state:
        double w_bytes
        double w_ref_bytes
        double u
        double u_last
        double w_ai_bytes
        double w_min_bytes
        double w_max_bytes
        uint64_t acked_pos
        uint64_t last_update_pos
        uint32_t inc_stage
        uint32_t unasked
        uint8_t n_hops
        uint8_t started
        uint8_t probe
        rs_hpcc_hop hop[5]
        uint64_t acks
        uint64_t updates
        uint64_t fast_reacts
        uint64_t mi_updates
        uint64_t no_int
        uint64_t ask_pos
    void rs_hpcc_init(rs_hpcc_state *s, const rs_hpcc_params *p, double line_bps)
    void rs_hpcc_on_ack(rs_hpcc_state *s, const rs_hpcc_params *p, uint64_t acked, uint64_t inflight,
                        const rs_int_stack *intel)
    int rs_hpcc_ack_request(rs_hpcc_state *s, const rs_hpcc_params *p, uint32_t payload, uint64_t inflight)
    uint64_t rs_hpcc_window(const rs_hpcc_state *s, const rs_hpcc_params *p)
    double rs_hpcc_rate(const rs_hpcc_state *s, const rs_hpcc_params *p)


def _hpcc_params_bytes(dict fields):
    cdef rs_hpcc_params p
    memset(&p, 0, sizeof(p))
    p = fields
    return _struct_bytes(&p, sizeof(p))


_CC_PARAMS["hpcc"] = _hpcc_params_bytes


cdef dict _hpcc_state_dict(const rs_hpcc_state *s):
    d = dict(w_bytes=s.w_bytes, w_ref_bytes=s.w_ref_bytes, u=s.u, u_last=s.u_last, w_ai_bytes=s.w_ai_bytes,
             w_min_bytes=s.w_min_bytes, w_max_bytes=s.w_max_bytes, acked_pos=s.acked_pos,
             last_update_pos=s.last_update_pos, inc_stage=s.inc_stage, n_hops=s.n_hops, started=s.started,
             acks=s.acks, updates=s.updates, fast_reacts=s.fast_reacts, mi_updates=s.mi_updates,
             no_int=s.no_int, unasked=s.unasked, probe=s.probe, ask_pos=s.ask_pos)
    d["hop"] = [dict(ts_ps=s.hop[i].ts_ps, tx_bytes=s.hop[i].tx_bytes, qlen_bytes=s.hop[i].qlen_bytes)
                for i in range(s.n_hops)]
    return d


def hpcc_state_from_bytes(bytes b):
    """The fields of an rs_hpcc_state given as bytes (SimCore.qp_cc_state_bytes); ``hop`` lists
    the stored INT records of the hops in use."""
    cdef rs_hpcc_state s
    if len(b) < sizeof(s):
        raise ValueError(f"HPCC state needs {sizeof(s)} bytes, got {len(b)}")
    memcpy(&s, <const char *>b, sizeof(s))
    return _hpcc_state_dict(&s)


_CC_STATE["hpcc"] = hpcc_state_from_bytes


cdef class HpccForTest:
    """The C HPCC rules driven by hand: ack(acked, inflight, hops) with hops a list of INT records
    (ts_ps, tx_bytes, qlen_bytes, rate_bps) or None for an ACK without INT; ack_request(payload,
    inflight) as a request packet leaves; window, rate, state."""
    cdef rs_hpcc_params p
    cdef rs_hpcc_state s

    def __cinit__(self, dict params, double line_bps):
        memset(&self.p, 0, sizeof(self.p))
        self.p = params
        rs_hpcc_init(&self.s, &self.p, line_bps)

    def ack(self, uint64_t acked, uint64_t inflight, hops=None):
        cdef rs_int_stack st
        cdef int i
        if hops is None:
            rs_hpcc_on_ack(&self.s, &self.p, acked, inflight, NULL)
            return
        if len(hops) > RS_INT_MAX_HOPS:
            raise ValueError(f"at most {RS_INT_MAX_HOPS} INT records, got {len(hops)}")
        memset(&st, 0, sizeof(st))
        st.n_hops = len(hops)
        for i, (ts, tx, q, r) in enumerate(hops):
            st.hop[i].ts_ps = ts
            st.hop[i].tx_bytes = tx
            st.hop[i].qlen_bytes = q
            st.hop[i].rate_bps = r
        rs_hpcc_on_ack(&self.s, &self.p, acked, inflight, &st)

    def ack_request(self, uint32_t payload, uint64_t inflight):
        return bool(rs_hpcc_ack_request(&self.s, &self.p, payload, inflight))

    @property
    def window(self):
        return rs_hpcc_window(&self.s, &self.p)

    @property
    def rate_bps(self):
        return rs_hpcc_rate(&self.s, &self.p)

    @property
    def state(self):
        return _hpcc_state_dict(&self.s)
