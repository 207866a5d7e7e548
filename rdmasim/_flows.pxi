# Bulk flows: arrays in, per-flow results out (csrc/include/rdmasim/flows.h).

cdef extern from "rdmasim/uet.h" nogil:
    ctypedef struct rs_uet_params:
        uint32_t mtu
        uint32_t window_bytes
        uint32_t reorder_pkts
        uint32_t ack_every
        int64_t rto_ps
        int64_t rto_min_ps
        int64_t rto_max_ps
        uint8_t rto_fixed
        uint8_t mode
        uint8_t trim_ok
        uint8_t lb
        uint8_t cc
        int64_t cc_base_rtt_ps
        uint64_t target_bytes
        uint8_t place
        uint8_t target_access
        uint32_t max_pdcs
        int64_t idle_close_ps

cdef extern from "rdmasim/flows.h" nogil:
    enum:
        RS_FLOW_MAX_RD_ATOMIC
        RS_FLOW_MAX_IRN_WINDOW
    ctypedef struct rs_flow_cfg:
        uint32_t path_mtu
        uint32_t timeout
        uint32_t retry_cnt
        uint32_t rnr_retry
        uint32_t min_rnr_timer
        uint32_t max_rd_atomic
        rs_recovery_params recovery
        uint32_t transport
        rs_uet_params uet
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
        uint64_t uet_nacks
        uint64_t uet_trims
        uint64_t uet_lost
    ctypedef struct rs_flows_counts:
        uint64_t total
        uint64_t started
        uint64_t finished
        uint64_t failed
    int64_t rs_flows_add(rs_sim *sim, uint32_t n, const int32_t *src, const int32_t *dst,
                         const uint64_t *size, const int64_t *start_ps, const int64_t *hold_ps, const uint8_t *verb,
                         const uint8_t *priority, const int64_t *dep_ptr, const int32_t *deps,
                         uint64_t n_deps, const uint8_t *dep_on, const uint32_t *need, const uint32_t *after,
                         const rs_flow_cfg *cfg)
    int rs_flows_results(const rs_sim *sim, uint64_t first, uint32_t n, rs_flow_result *out)
    void rs_flows_get_counts(const rs_sim *sim, rs_flows_counts *out)
    size_t rs_flows_bytes_per_flow()
    void rs_flows_stop_when_done(rs_sim *sim, int on)
    uint32_t rs_flows_sample(const rs_sim *sim, uint32_t cap, uint64_t *ids, uint64_t *bytes, double *rate_bps)
    int rs_flows_uet_bytes(const rs_sim *sim, uint64_t id, const uint8_t **src, uint64_t *src_len,
                           const uint8_t **dst, uint64_t *dst_len)

RUN_FLOWS_DONE = 7
FLOW_MAX_RD_ATOMIC = RS_FLOW_MAX_RD_ATOMIC
FLOW_MAX_IRN_WINDOW = RS_FLOW_MAX_IRN_WINDOW
FLOW_WAITING = 0x100
FLOW_RUNNING = 0x101
FLOW_LOCAL = 3  # RS_FLOW_LOCAL: no packets, finishes as it starts

#: one row of rs_flow_result, as numpy reads it (layout checked at import below)
FLOW_RESULT_DTYPE = _np.dtype([("start_ps", "<i8"), ("finish_ps", "<i8"), ("bytes_delivered", "<u8"),
                              ("retx_pkts", "<u8"), ("cnps", "<u8"), ("pause_ps", "<i8"),
                              ("status", "<u4"), ("req_host", "<u4"), ("req_qpn", "<u4"),
                              ("resp_qpn", "<u4"), ("uet_nacks", "<u8"), ("uet_trims", "<u8"),
                              ("uet_lost", "<u8")])
assert FLOW_RESULT_DTYPE.itemsize == sizeof(rs_flow_result)


cdef class FlowsCore:
    """Bulk-flow calls on one SimCore. Used by rdmasim.flows; not a public API."""
    cdef SimCore core

    def __cinit__(self, SimCore core):
        self.core = core

    def add(self, src, dst, size, start_ps, verb, priority, dep_ptr, deps, dict cfg, hold_ps=None, after=None,
            dep_on=None, need=None):
        """Columns as numpy arrays of the C types (rdmasim.flows.add_flows checked their values);
        dep_ptr/deps, hold_ps and after (all 0) may be None; dep_on (one per dependency, all 0: on
        completion) and need (one per flow, all 0: every dependency) too. The C side checks
        everything again and a refusal is a ValueError."""
        # contiguous and aligned: a one-row field of a packed record array is contiguous but can
        # start at any byte, and C reads int64 columns as int64
        cols = [_np.require(col, dtype=typ, requirements="CA") for col, typ in
                ((src, _np.int32), (dst, _np.int32), (size, _np.uint64), (start_ps, _np.int64),
                 (verb, _np.uint8), (priority, _np.uint8),
                 (_np.zeros(len(src), dtype=_np.int64) if hold_ps is None else hold_ps, _np.int64),
                 (_np.zeros(len(src), dtype=_np.uint32) if after is None else after, _np.uint32))]
        if any(col.ndim != 1 for col in cols) or len({col.shape[0] for col in cols}) != 1:
            raise ValueError("flow columns must be one-dimensional and all of the same length")
        if cols[0].shape[0] > 0xFFFFFFFF:
            raise ValueError(f"{cols[0].shape[0]} flows in one call: at most {0xFFFFFFFF}")
        cdef const int32_t[::1] a_src = cols[0]
        cdef const int32_t[::1] a_dst = cols[1]
        cdef const uint64_t[::1] a_size = cols[2]
        cdef const int64_t[::1] a_start = cols[3]
        cdef const uint8_t[::1] a_verb = cols[4]
        cdef const uint8_t[::1] a_prio = cols[5]
        cdef const int64_t[::1] a_hold = cols[6]
        cdef const uint32_t[::1] a_after = cols[7]
        cdef const uint32_t *p_after = NULL  # NULL: every flow on a QP pair of its own
        cdef const int64_t[::1] a_ptr
        cdef const int32_t[::1] a_deps
        cdef const int64_t *p_ptr = NULL
        cdef const int32_t *p_deps = NULL
        cdef uint64_t n_deps = 0
        cdef uint32_t n = <uint32_t>a_src.shape[0]
        cdef const uint8_t[::1] a_on
        cdef const uint32_t[::1] a_need
        cdef const uint8_t *p_on = NULL
        cdef const uint32_t *p_need = NULL
        if (dep_ptr is None) != (deps is None):
            raise ValueError("dep_ptr and deps go together: give both or neither")
        if dep_ptr is not None:
            a_ptr = _np.require(dep_ptr, dtype=_np.int64, requirements="CA")
            a_deps = _np.require(deps, dtype=_np.int32, requirements="CA")
            if a_ptr.shape[0] != <Py_ssize_t>n + 1:  # C reads dep_ptr[0 .. n]
                raise ValueError(f"dep_ptr has {a_ptr.shape[0]} entries: it needs len(flows) + 1 = {n + 1}")
            p_ptr = &a_ptr[0]
            n_deps = <uint64_t>a_deps.shape[0]
            p_deps = &a_deps[0] if n_deps else NULL
        if dep_on is not None:
            a_on = _np.require(dep_on, dtype=_np.uint8, requirements="CA")
            if a_on.shape[0] != <Py_ssize_t>n_deps:
                raise ValueError(f"dep_on has {a_on.shape[0]} entries: it needs one per dependency, {n_deps}")
            p_on = &a_on[0] if n_deps else NULL
        if need is not None:
            a_need = _np.require(need, dtype=_np.uint32, requirements="CA")
            if a_need.shape[0] != <Py_ssize_t>n:
                raise ValueError(f"need has {a_need.shape[0]} entries: it needs one per flow, {n}")
            p_need = &a_need[0] if n else NULL
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
        c.recovery.reorder_ps = cfg.get("reorder_ps", 0)
        uet = cfg.get("uet")
        if uet is not None:  # the flows run on the Ultra Ethernet transport (rdmasim.flows checked it)
            c.transport = 1
            c.uet.mtu = uet["mtu"]
            c.uet.window_bytes = uet["window_bytes"]
            c.uet.reorder_pkts = uet["reorder_pkts"]
            c.uet.ack_every = uet["ack_every"]
            c.uet.rto_ps = uet["rto_ps"]
            c.uet.rto_min_ps = uet["rto_min_ps"]
            c.uet.rto_max_ps = uet["rto_max_ps"]
            c.uet.rto_fixed = uet["rto_fixed"]
            c.uet.mode = uet["mode"]
            c.uet.trim_ok = uet["trim_ok"]
            c.uet.lb = uet["lb"]
            c.uet.cc = uet["cc"]
            c.uet.cc_base_rtt_ps = uet["cc_base_rtt_ps"]
            c.uet.target_bytes = uet.get("target_bytes", 0)
            c.uet.place = uet.get("place", 0)
            c.uet.target_access = uet.get("target_access", 0)
            c.uet.max_pdcs = uet.get("max_pdcs", 0)
            c.uet.idle_close_ps = uet.get("idle_close_ps", 0)
        cdef int64_t first
        if after is not None and n:
            p_after = &a_after[0]
        if n == 0:
            first = rs_flows_add(self.core.sim, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, p_ptr, p_deps, n_deps,
                                 p_on, NULL, NULL, &c)
        else:
            first = rs_flows_add(self.core.sim, n, &a_src[0], &a_dst[0], &a_size[0], &a_start[0], &a_hold[0],
                                 &a_verb[0], &a_prio[0], p_ptr, p_deps, n_deps, p_on, p_need, p_after, &c)
        if first == -1:  # RS_ERR_INVAL: a value the core refuses is the caller's mistake, not the NIC's
            raise ValueError("add_flows: " + rs_sim_errmsg(self.core.sim).decode("utf-8", "replace"))
        if first < 0:
            self.core._check(<int>first)
        return first

    def results(self, uint64_t first, uint32_t n):
        out = _np.zeros(n, dtype=FLOW_RESULT_DTYPE)
        cdef unsigned char[::1] raw = out.view(_np.uint8)
        if n:
            self.core._check(rs_flows_results(self.core.sim, first, n, <rs_flow_result *>&raw[0]))
        return out

    def uet_bytes(self, uint64_t flow_id):
        cdef const uint8_t *src = NULL
        cdef const uint8_t *dst = NULL
        cdef uint64_t src_len = 0, dst_len = 0
        self.core._check(rs_flows_uet_bytes(self.core.sim, flow_id, &src, &src_len, &dst, &dst_len))
        return (<const char *>src)[:src_len], (<const char *>dst)[:dst_len]

    def bytes_per_flow(self):
        return rs_flows_bytes_per_flow()

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
