# Bulk flows: arrays in, per-flow results out (csrc/include/rdmasim/flows.h).

cdef extern from "rdmasim/flows.h" nogil:
    ctypedef struct rs_flow_cfg:
        uint32_t path_mtu
        uint32_t timeout
        uint32_t retry_cnt
        uint32_t rnr_retry
        uint32_t min_rnr_timer
        uint32_t max_rd_atomic
        rs_recovery_params recovery
    ctypedef struct rs_flow_result:
        int64_t start_ps
        int64_t finish_ps
        uint64_t bytes_delivered
        uint64_t retx_pkts
        uint64_t cnps
        int64_t pause_ps
        uint32_t status
        uint32_t req_host
        uint32_t req_qpn
        uint32_t resp_qpn
    ctypedef struct rs_flows_counts:
        uint64_t total
        uint64_t started
        uint64_t finished
        uint64_t failed
    int64_t rs_flows_add(rs_sim *sim, uint32_t n, const int32_t *src, const int32_t *dst,
                         const uint64_t *size, const int64_t *start_ps, const uint8_t *verb,
                         const uint8_t *priority, const int64_t *dep_ptr, const int32_t *deps,
                         const rs_flow_cfg *cfg)
    int rs_flows_results(const rs_sim *sim, uint64_t first, uint32_t n, rs_flow_result *out)
    void rs_flows_get_counts(const rs_sim *sim, rs_flows_counts *out)
    void rs_flows_stop_when_done(rs_sim *sim, int on)
    uint32_t rs_flows_sample(const rs_sim *sim, uint32_t cap, uint64_t *ids, uint64_t *bytes, double *rate_bps)

RUN_FLOWS_DONE = 7
FLOW_WAITING = 0x100
FLOW_RUNNING = 0x101

#: one row of rs_flow_result, as numpy reads it (layout checked at import below)
FLOW_RESULT_DTYPE = _np.dtype([("start_ps", "<i8"), ("finish_ps", "<i8"), ("bytes_delivered", "<u8"),
                              ("retx_pkts", "<u8"), ("cnps", "<u8"), ("pause_ps", "<i8"),
                              ("status", "<u4"), ("req_host", "<u4"), ("req_qpn", "<u4"),
                              ("resp_qpn", "<u4")])
assert FLOW_RESULT_DTYPE.itemsize == sizeof(rs_flow_result)


cdef class FlowsCore:
    """Bulk-flow calls on one SimCore. Used by rdmasim.flows; not a public API."""
    cdef SimCore core

    def __cinit__(self, SimCore core):
        self.core = core

    def add(self, src, dst, size, start_ps, verb, priority, dep_ptr, deps, dict cfg):
        """Columns as contiguous numpy arrays of the C types; dep_ptr/deps may be None."""
        cdef const int32_t[::1] a_src = _np.ascontiguousarray(src, dtype=_np.int32)
        cdef const int32_t[::1] a_dst = _np.ascontiguousarray(dst, dtype=_np.int32)
        cdef const uint64_t[::1] a_size = _np.ascontiguousarray(size, dtype=_np.uint64)
        cdef const int64_t[::1] a_start = _np.ascontiguousarray(start_ps, dtype=_np.int64)
        cdef const uint8_t[::1] a_verb = _np.ascontiguousarray(verb, dtype=_np.uint8)
        cdef const uint8_t[::1] a_prio = _np.ascontiguousarray(priority, dtype=_np.uint8)
        cdef const int64_t[::1] a_ptr
        cdef const int32_t[::1] a_deps
        cdef const int64_t *p_ptr = NULL
        cdef const int32_t *p_deps = NULL
        cdef uint32_t n = <uint32_t>a_src.shape[0]
        if not (a_dst.shape[0] == a_size.shape[0] == a_start.shape[0] == a_verb.shape[0] == a_prio.shape[0] == n):
            raise ValueError("flow columns must all have the same length")
        if dep_ptr is not None:
            a_ptr = _np.ascontiguousarray(dep_ptr, dtype=_np.int64)
            a_deps = _np.ascontiguousarray(deps, dtype=_np.int32)
            if a_ptr.shape[0] != n + 1 or (n and a_ptr[n] != a_deps.shape[0]):
                raise ValueError("dep_ptr must have len(flows)+1 entries ending at len(deps)")
            p_ptr = &a_ptr[0]
            p_deps = &a_deps[0] if a_deps.shape[0] else NULL
        cdef rs_flow_cfg c
        memset(&c, 0, sizeof(c))
        c.path_mtu = cfg["path_mtu"]
        c.timeout = cfg["timeout"]
        c.retry_cnt = cfg["retry_cnt"]
        c.rnr_retry = cfg["rnr_retry"]
        c.min_rnr_timer = cfg["min_rnr_timer"]
        c.max_rd_atomic = cfg["max_rd_atomic"]
        c.recovery.mode = cfg["recovery_mode"]
        c.recovery.window = cfg.get("window", 0)
        c.recovery.rto_low_pkts = cfg.get("rto_low_pkts", 0)
        c.recovery.rto_low_ps = cfg.get("rto_low_ps", 0)
        c.recovery.rto_high_ps = cfg.get("rto_high_ps", 0)
        cdef int32_t dummy32 = 0
        cdef uint64_t dummy64 = 0
        cdef int64_t dummyi64 = 0
        cdef uint8_t dummy8 = 0
        cdef int64_t first
        if n == 0:
            first = rs_flows_add(self.core.sim, 0, &dummy32, &dummy32, &dummy64, &dummyi64, &dummy8, &dummy8,
                                 NULL, NULL, &c)
        else:
            first = rs_flows_add(self.core.sim, n, &a_src[0], &a_dst[0], &a_size[0], &a_start[0], &a_verb[0],
                                 &a_prio[0], p_ptr, p_deps, &c)
        if first < 0:
            self.core._check(<int>first)
        return first

    def results(self, uint64_t first, uint32_t n):
        out = _np.zeros(n, dtype=FLOW_RESULT_DTYPE)
        cdef unsigned char[::1] raw = out.view(_np.uint8)
        if n:
            self.core._check(rs_flows_results(self.core.sim, first, n, <rs_flow_result *>&raw[0]))
        return out

    def counts(self):
        cdef rs_flows_counts c
        rs_flows_get_counts(self.core.sim, &c)
        return {"total": c.total, "started": c.started, "finished": c.finished, "failed": c.failed}

    def stop_when_done(self, bint on):
        rs_flows_stop_when_done(self.core.sim, on)

    def sample(self, uint32_t cap):
        ids = _np.empty(cap, dtype=_np.uint64)
        nbytes = _np.empty(cap, dtype=_np.uint64)
        rate = _np.empty(cap, dtype=_np.float64)
        cdef uint64_t[::1] b_ids = ids
        cdef uint64_t[::1] b_bytes = nbytes
        cdef double[::1] b_rate = rate
        cdef uint32_t k = 0
        if cap:
            k = rs_flows_sample(self.core.sim, cap, &b_ids[0], &b_bytes[0], &b_rate[0])
        return ids[:k], nbytes[:k], rate[:k]
