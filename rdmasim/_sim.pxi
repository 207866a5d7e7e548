# Simulation handle: the control-path calls of csrc/include/rdmasim/sim.h.
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc
from libc.errno cimport EIO, errno
from libc.string cimport memset

cdef extern from "rdmasim/sim.h" nogil:
    ctypedef struct rs_sim:
        pass
    ctypedef struct rs_run_args:
        int64_t until_ps
        uint64_t max_events
        int watch_host
        int watch_cq
        uint32_t watch_count
    ctypedef struct rs_link_stats:
        uint64_t frames
        uint64_t bytes
        uint64_t dropped
        uint64_t delivered
        int64_t busy_ps
    ctypedef struct rs_wc:
        uint64_t wr_id
        uint32_t status
        uint32_t opcode
        uint32_t byte_len
        uint32_t imm_data
        uint32_t qp_num
        uint32_t src_qp
        uint32_t wc_flags
        uint32_t vendor_err
        uint32_t pkey_index
        uint32_t sl
    ctypedef struct rs_qp_init:
        uint32_t pd
        int send_cq
        int recv_cq
        uint32_t max_send_wr
        uint32_t max_recv_wr
        uint32_t max_send_sge
        uint32_t max_recv_sge
        int sq_sig_all
        uint32_t qp_type
        uint32_t srq
    ctypedef struct rs_qp_attr:
        uint32_t qp_state
        uint32_t cur_qp_state
        uint32_t path_mtu
        uint32_t qp_access_flags
        uint32_t pkey_index
        uint32_t port_num
        uint32_t dest_qp_num
        uint32_t rq_psn
        uint32_t sq_psn
        uint32_t max_rd_atomic
        uint32_t max_dest_rd_atomic
        uint32_t min_rnr_timer
        uint32_t timeout
        uint32_t retry_cnt
        uint32_t rnr_retry
        int dest_host
        uint32_t traffic_class
        uint32_t qkey
    ctypedef struct rs_sge:
        uint64_t addr
        uint32_t length
        uint32_t lkey
    ctypedef struct rs_send_wr:
        uint64_t wr_id
        uint32_t opcode
        uint32_t send_flags
        uint32_t imm_data
        uint32_t num_sge
        const rs_sge *sg_list
        uint64_t remote_addr
        uint32_t rkey
        uint64_t compare_add
        uint64_t swap
        int ud_dest_host
        uint32_t ud_traffic_class
        uint32_t ud_remote_qpn
        uint32_t ud_remote_qkey
        uint32_t bind_mw_rkey
        uint32_t bind_lkey
        uint32_t bind_access
        uint64_t bind_len
    ctypedef struct rs_recv_wr:
        uint64_t wr_id
        uint32_t num_sge
        const rs_sge *sg_list
    ctypedef struct rs_qp_stats:
        uint64_t pkts_sent
        uint64_t bytes_sent
        uint64_t pkts_retx
        uint64_t bytes_retx
        uint64_t acks_rcvd
        uint64_t naks_rcvd
        uint64_t rnr_naks_rcvd
        uint64_t timeouts
        uint64_t acks_sent
        uint64_t naks_sent
        uint64_t dup_rcvd
        uint64_t ooo_dropped
        uint64_t bytes_rcvd
        uint64_t msgs_completed
        uint64_t read_resp_sent
        uint64_t atomics_executed
        uint64_t implied_naks
        uint64_t bad_responses
        uint64_t cnps_sent
        uint64_t cnps_rcvd
        uint64_t ce_rcvd
        uint64_t ooo_placed
        uint64_t ud_qkey_dropped
        uint64_t ud_no_recv_dropped
        uint64_t ud_too_long_dropped
        uint64_t ud_len_dropped
        uint64_t uc_msgs_dropped
        uint64_t uc_pkts_dropped
    ctypedef struct rs_recovery_params:
        uint32_t mode
        uint32_t window
        uint32_t rto_low_pkts
        int64_t rto_low_ps
        int64_t rto_high_ps
        int64_t reorder_ps
    int rs_qp_set_recovery(rs_sim *sim, int host, uint32_t qpn, const rs_recovery_params *p)
    int rs_qp_get_recovery(const rs_sim *sim, int host, uint32_t qpn, rs_recovery_params *out)

    rs_sim *rs_sim_new(uint64_t seed)
    void rs_sim_free(rs_sim *sim)
    const char *rs_sim_errmsg(const rs_sim *sim)
    int64_t rs_sim_now(const rs_sim *sim)
    int rs_sim_run(rs_sim *sim, const rs_run_args *args)
    uint64_t rs_sim_events(const rs_sim *sim)
    int rs_sim_set_partitions(rs_sim *sim, uint32_t parts, uint32_t threads, const uint16_t *host_part,
                              uint32_t n_hosts, const uint16_t *switch_part, uint32_t n_switches)
    int64_t rs_sim_partition_lookahead(const rs_sim *sim)
    uint32_t rs_sim_par_stats(const rs_sim *sim, uint64_t *out, uint32_t n)
    int rs_sim_par_check(rs_sim *sim, const rs_run_args *args)
    void rs_sim_pool_stats(const rs_sim *sim, uint64_t out[4])
    int rs_sim_pool_trim(rs_sim *sim)
    int rs_sim_pcap_open(rs_sim *sim, const char *path, uint32_t snaplen)
    int rs_sim_set_link_layer(rs_sim *sim, int link_layer)
    int rs_sim_pcap_open_as(rs_sim *sim, const char *path, uint32_t snaplen, uint32_t linktype)
    int rs_host_ib_addr(const rs_sim *sim, int host, uint16_t *lid, uint8_t gid[16])
    int rs_sim_pcap_close(rs_sim *sim)
    void rs_sim_pcap_flush(rs_sim *sim)
    int rs_host_add(rs_sim *sim)
    int rs_host_set_scripted(rs_sim *sim, int host, int on)
    void rs_sim_stop_after_next_frame(rs_sim *sim)
    ctypedef struct rs_qp_inspect:
        uint32_t state
        uint32_t req_psn
        uint32_t comp_psn
        uint32_t resp_psn
        uint32_t msn
        uint32_t sq_outstanding
        uint32_t sq_started
        uint32_t rq_posted
        uint32_t retry_left
        uint32_t rnr_left
        uint32_t rd_outstanding
        int nak_sent
        int in_msg
        int64_t rto_deadline_ps
        int64_t rnr_until_ps
        int64_t next_tx_ps
        double rate_bps
        uint32_t resp_queued
        uint32_t recovery
        int irn_in_recovery
        uint32_t irn_sacked
        uint32_t irn_ooo_held
    int rs_qp_get_inspect(const rs_sim *sim, int host, uint32_t qpn, rs_qp_inspect *out)
    int rs_host_set_cc(rs_sim *sim, int host, int kind, const void *params, size_t params_size, int np_enabled,
                       int64_t cnp_interval_ps, uint32_t cnp_dscp)
    int rs_qp_cc_state(const rs_sim *sim, int host, uint32_t qpn, void *out, size_t cap, int *kind)
    enum: RS_CC_PLUGINS
    int rs_cc_plugin_add(rs_sim *sim, const rs_cc_algo *algo, const char *name)
    const char *rs_cc_name(const rs_sim *sim, int kind)
    int rs_host_set_nic(rs_sim *sim, int host, uint32_t max_unacked_psns, uint32_t ack_coalesce_pkts,
                        int64_t ack_timeout_ps, uint32_t ack_req_interval)
    double rs_qp_rate_bps(const rs_sim *sim, int host, uint32_t qpn)
    void rs_sim_set_key_recheck(rs_sim *sim, int on)
    int rs_qp_dcqcn_state(const rs_sim *sim, int host, uint32_t qpn, rs_dcqcn_rp *out)
    int rs_peer_recv(rs_sim *sim, int host, uint8_t *buf, size_t cap, int64_t *t_ps)
    int rs_peer_send(rs_sim *sim, int host, const uint8_t *frame, size_t len)
    int rs_peer_send_raw(rs_sim *sim, int host, const uint8_t *frame, size_t len, int dst_host)
    int rs_host_rx_counters(const rs_sim *sim, int host, uint64_t out[4])
    int rs_link_connect(rs_sim *sim, int host_a, int host_b, int64_t rate_bps, int64_t delay_ps)
    int rs_link_set_loss(rs_sim *sim, int link, double loss_prob)
    int rs_link_set_gilbert(rs_sim *sim, int link, double p_good_bad, double p_bad_good, double loss_good,
                            double loss_bad)
    int rs_link_add_drop(rs_sim *sim, int link, int match, uint64_t value, uint32_t count)
    int rs_link_get_stats(const rs_sim *sim, int link, rs_link_stats *out)
    int rs_host_info(const rs_sim *sim, int host, uint8_t mac[6], uint32_t *ip)
    int rs_mr_reg(rs_sim *sim, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
                  uint64_t *iova, uint32_t *lkey, uint32_t *rkey)
    int rs_mr_dereg(rs_sim *sim, int host, int mr)
    int rs_mr_rereg(rs_sim *sim, int host, int mr, uint32_t pd, uint32_t access, uint32_t *rkey)
    int rs_mw_alloc(rs_sim *sim, int host, uint32_t pd, uint32_t type, uint32_t *rkey)
    int rs_mw_dealloc(rs_sim *sim, int host, int mw)
    int rs_cq_create(rs_sim *sim, int host, uint32_t cqe)
    int rs_cq_destroy(rs_sim *sim, int host, int cq)
    int rs_cq_resize(rs_sim *sim, int host, int cq, uint32_t cqe)
    int rs_cq_poll(rs_sim *sim, int host, int cq, rs_wc *out, int n)
    int rs_cq_count(const rs_sim *sim, int host, int cq)
    int rs_qp_create(rs_sim *sim, int host, const rs_qp_init *init)
    int rs_qp_destroy(rs_sim *sim, int host, uint32_t qpn)
    int rs_qp_modify(rs_sim *sim, int host, uint32_t qpn, const rs_qp_attr *attr, uint32_t mask)
    int rs_qp_query(const rs_sim *sim, int host, uint32_t qpn, rs_qp_attr *attr)
    int rs_post_send(rs_sim *sim, int host, uint32_t qpn, const rs_send_wr *wr)
    int rs_post_recv(rs_sim *sim, int host, uint32_t qpn, const rs_recv_wr *wr)
    int rs_srq_create(rs_sim *sim, int host, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit)
    int rs_srq_destroy(rs_sim *sim, int host, uint32_t srq)
    int rs_srq_modify(rs_sim *sim, int host, uint32_t srq, uint32_t mask, uint32_t max_wr, uint32_t limit)
    ctypedef struct rs_srq_attr:
        uint32_t max_wr
        uint32_t max_sge
        uint32_t limit
        uint32_t count
        uint32_t limit_events
    int rs_srq_query(rs_sim *sim, int host, uint32_t srq, rs_srq_attr *out)
    int rs_srq_take_limit_event(rs_sim *sim, int host, uint32_t srq)
    int rs_post_srq_recv(rs_sim *sim, int host, uint32_t srq, const rs_recv_wr *wr)
    enum: RS_UD_DEST_NO_AV
    int rs_qp_get_stats(const rs_sim *sim, int host, uint32_t qpn, rs_qp_stats *out)

# rs_err codes -> Python exception classes (set by rdmasim.errors at import)
_ERROR_CLASSES = {}

RUN_UNTIL = 0
RUN_IDLE = 1
RUN_CQ = 2
RUN_MAX_EVENTS = 3
RUN_ERROR = 4
RUN_PEER = 5
RUN_STEP = 6
INT64_MAX = 0x7FFFFFFFFFFFFFFF
# a UD work request's ud_dest_host when its address handle gives the QP no address vector
UD_DEST_NO_AV = RS_UD_DEST_NO_AV

_QP_ATTR_FIELDS = ("qp_state", "cur_qp_state", "path_mtu", "qp_access_flags", "pkey_index", "port_num",
                   "dest_qp_num", "rq_psn", "sq_psn", "max_rd_atomic", "max_dest_rd_atomic",
                   "min_rnr_timer", "timeout", "retry_cnt", "rnr_retry", "dest_host", "traffic_class")


#: congestion-control plug-in slots per simulation, and the algorithm interface's size limits
CC_PLUGINS = RS_CC_PLUGINS
CC_STATE_BYTES = RS_CC_STATE_BYTES
CC_PARAMS_BYTES = RS_CC_PARAMS_BYTES
CC_ALGO_BYTES = sizeof(rs_cc_algo)


cdef class SimCore:
    """Owner of one C simulation (rs_sim). Used by rdmasim.Simulator; not a public API."""
    cdef rs_sim *sim
    cdef readonly object _buffers  # mr index per host -> buffer object kept alive while registered
    cdef readonly object pcap_path  # the open capture's file (None: no capture)
    cdef public Py_ssize_t last_posted  # post_send_arrays (_post.pxi): rows posted by its last call

    def __cinit__(self, uint64_t seed):
        self.sim = rs_sim_new(seed)
        if self.sim == NULL:
            raise MemoryError("cannot allocate a simulation")
        self._buffers = {}

    def __dealloc__(self):
        if self.sim != NULL:
            rs_sim_free(self.sim)
            self.sim = NULL

    cdef int _check(self, int rc) except -1:
        if rc < 0:
            msg = rs_sim_errmsg(self.sim).decode("utf-8", "replace")
            cls = _ERROR_CLASSES.get(rc, RuntimeError)
            raise cls(msg)
        return rc

    @property
    def now_ps(self):
        return rs_sim_now(self.sim)

    @property
    def events(self):
        return rs_sim_events(self.sim)

    def pool_stats(self):
        cdef uint64_t out[4]
        rs_sim_pool_stats(self.sim, out)
        return {"pkts_in_use": out[0], "pkts_peak": out[1], "pkts_allocated": out[2],
                "payload_buffers_allocated": out[3]}

    def pool_trim(self):
        return rs_sim_pool_trim(self.sim) == 1

    def set_partitions(self, uint32_t parts, uint32_t threads, host_part, switch_part):
        """Split the runs from now on into ``parts`` partitions (host i in host_part[i], switch j in
        switch_part[j]); parts 1: one queue (sim/par.c).  ValueError when the split cannot run."""
        cdef uint16_t[::1] hp = _np.ascontiguousarray(host_part, dtype=_np.uint16)
        cdef uint16_t[::1] sp = _np.ascontiguousarray(switch_part, dtype=_np.uint16)
        cdef uint16_t dummy = 0
        cdef int rc = rs_sim_set_partitions(self.sim, parts, threads, &hp[0] if hp.shape[0] else &dummy,
                                            <uint32_t>hp.shape[0], &sp[0] if sp.shape[0] else &dummy,
                                            <uint32_t>sp.shape[0])
        if rc == -1:  # RS_ERR_INVAL: a split that cannot run
            raise ValueError(rs_sim_errmsg(self.sim).decode("utf-8", "replace"))
        self._check(rc)

    def partition_lookahead(self):
        """The lookahead of the partitioning in ps (INT64_MAX: no link cut), or -1 without one."""
        return rs_sim_partition_lookahead(self.sim)

    def par_stats(self):
        """What the partitioned runs did (sim/par.c rs_sim_par_stats): a list of counts, empty
        without partitions."""
        cdef uint32_t n = rs_sim_par_stats(self.sim, NULL, 0)
        cdef uint64_t[::1] out = _np.zeros(max(n, 1), dtype=_np.uint64)
        rs_sim_par_stats(self.sim, &out[0], n)
        return [int(x) for x in out[:n]]

    def par_check(self, uint64_t max_events=0, int watch_host=-1):
        """None, or why a partitioned run cannot hold this run (sim/par.c)."""
        cdef rs_run_args a
        a.until_ps = INT64_MAX
        a.max_events = max_events
        a.watch_host = watch_host
        a.watch_cq = -1
        a.watch_count = 0
        if rs_sim_par_check(self.sim, &a) < 0:
            return rs_sim_errmsg(self.sim).decode("utf-8", "replace")
        return None

    def run(self, until_ps=INT64_MAX, uint64_t max_events=0, int watch_host=-1,
            int watch_cq=-1, uint32_t watch_count=0):
        cdef rs_run_args a
        # INT64_MAX: no limit; else a time within MAX_TIME_PS (or now: the clock may be past it)
        if until_ps != INT64_MAX and until_ps != rs_sim_now(self.sim):
            from rdmasim.checks import check_time_ps
            until_ps = check_time_ps("run: until", until_ps)
        a.until_ps = until_ps
        a.max_events = max_events
        a.watch_host = watch_host
        a.watch_cq = watch_cq
        a.watch_count = watch_count
        cdef int r
        with nogil:
            r = rs_sim_run(self.sim, &a)
        if r == RUN_ERROR:
            raise MemoryError(rs_sim_errmsg(self.sim).decode("utf-8", "replace"))
        if self.pcap_path is not None:
            # every return of a run leaves a readable capture (a notebook can open it mid-run)
            rs_sim_pcap_flush(self.sim)
            self._pcap_raise()
        return r

    def set_link_layer(self, int link_layer):
        """The fabric's link layer (0 RoCEv2, 1 InfiniBand), before any host, switch or capture."""
        self._check(rs_sim_set_link_layer(self.sim, link_layer))

    def pcap_open(self, path, uint32_t snaplen=0, uint32_t linktype=0):
        from rdmasim.checks import check_path
        cdef bytes bpath = check_path("capture path", path)
        if self.pcap_path is not None:
            self.pcap_close()  # the previous capture's write error, if any, is not lost
        cdef int rc = rs_sim_pcap_open_as(self.sim, bpath, snaplen, linktype)
        if rc == -5:  # RS_ERR_IO: the file cannot be created or its header written
            e = errno or EIO
            raise OSError(e, f"{os.strerror(e)}: cannot write a capture there", os.fsdecode(bpath))
        self._check(rc)
        self.pcap_path = os.fsdecode(bpath)

    def _pcap_raise(self):
        """A write error stopped the capture: close it and raise OSError naming the file."""
        cdef uint64_t frames = 0
        cdef int err = 0
        rs_sim_pcap_status(self.sim, &frames, &err)
        if err == 0:
            return
        path, self.pcap_path = self.pcap_path, None
        rs_sim_pcap_close(self.sim)
        raise OSError(err, f"{os.strerror(err)}: the capture stopped at the first write error and is "
                      f"closed; the file holds its first {frames} frames (the simulation itself ran on, "
                      f"now t={rs_sim_now(self.sim)} ps)", path)

    def pcap_close(self):
        if self.pcap_path is not None:
            self._pcap_raise()
        path, self.pcap_path = self.pcap_path, None
        if rs_sim_pcap_close(self.sim) != 0:  # the last block failed to write; errno says why
            e = errno or EIO
            raise OSError(e, f"{os.strerror(e)}: writing the end of the capture failed", path)

    def host_add(self):
        return self._check(rs_host_add(self.sim))

    def host_set_cc(self, int host, int kind, bytes params, bint np_enabled, int64_t cnp_interval_ps,
                    uint32_t cnp_dscp):
        """kind: enum rs_cc_kind (cc_kinds()); params: the kind's C params struct as bytes
        (cc_params_bytes), None for kind 0."""
        cdef const char *p = NULL
        cdef size_t n = 0
        if params is not None:
            p = params
            n = len(params)
        self._check(rs_host_set_cc(self.sim, host, kind, p, n, np_enabled, cnp_interval_ps, cnp_dscp))

    def cc_plugin_add(self, uintptr_t table, str name):
        """Register the rs_cc_algo at address `table` (a plug-in's, rdmasim.cc_plugin) under `name`
        with this simulation; returns its kind for host_set_cc."""
        if not table:
            raise ValueError("congestion control plug-in: table address is NULL")
        cdef bytes b = name.encode()
        return self._check(rs_cc_plugin_add(self.sim, <const rs_cc_algo *>table, b))

    def cc_name(self, int kind):
        """The name of congestion-control kind `kind` (built in or a plug-in of this simulation), or None."""
        cdef const char *n = rs_cc_name(self.sim, kind)
        return None if n == NULL else n.decode()

    def qp_cc_state(self, int host, uint32_t qpn):
        """The QP's CC state as a dict with "algorithm" (its name), or None when it runs none."""
        r = self.qp_cc_state_bytes(host, qpn)
        if r is None:
            return None
        name = self.cc_name(r[0])
        if name == "dcqcn":
            d = dict(self.qp_dcqcn_state(host, qpn))
        elif name in _CC_STATE:
            d = dict(_CC_STATE[name](r[1]))
        else:
            d = {"state_bytes": r[1]}
        d["algorithm"] = name
        return d

    def qp_cc_state_bytes(self, int host, uint32_t qpn):
        """(kind, the QP's CC state struct as bytes) as of now, or None when it runs none."""
        cdef uint8_t buf[RS_CC_STATE_BYTES]
        cdef int kind = 0
        if not rs_qp_cc_state(self.sim, host, qpn, buf, sizeof(buf), &kind):
            return None
        return kind, (<const char *>buf)[:sizeof(buf)]

    def host_set_nic(self, int host, uint32_t max_unacked_psns, uint32_t ack_coalesce_pkts,
                     int64_t ack_timeout_ps, uint32_t ack_req_interval):
        """NIC-dependent constants of `host` (rdmasim.nic.NicProfile applies them)."""
        self._check(rs_host_set_nic(self.sim, host, max_unacked_psns, ack_coalesce_pkts, ack_timeout_ps,
                                    ack_req_interval))

    def _set_key_recheck(self, bint on):
        """Tests: every packet resolves its memory keys itself (no one-packet shortcut)."""
        rs_sim_set_key_recheck(self.sim, on)

    def qp_rate_bps(self, int host, uint32_t qpn):
        return rs_qp_rate_bps(self.sim, host, qpn)

    def qp_dcqcn_state(self, int host, uint32_t qpn):
        cdef rs_dcqcn_rp rp
        if not rs_qp_dcqcn_state(self.sim, host, qpn, &rp):
            return None
        return rp

    def stop_after_next_frame(self):
        rs_sim_stop_after_next_frame(self.sim)

    def qp_inspect(self, int host, uint32_t qpn):
        cdef rs_qp_inspect q
        self._check(rs_qp_get_inspect(self.sim, host, qpn, &q))
        return q

    def set_scripted(self, int host, bint on):
        self._check(rs_host_set_scripted(self.sim, host, on))

    def peer_recv(self, int host):
        """Oldest frame received by a scripted host: (frame bytes, arrival ps), or None."""
        cdef uint8_t buf[8192]
        cdef int64_t t = 0
        n = self._check(rs_peer_recv(self.sim, host, buf, sizeof(buf), &t))
        if n == 0:
            return None
        return bytes(buf[:n]), t

    def peer_send(self, int host, bytes frame):
        self._check(rs_peer_send(self.sim, host, frame, len(frame)))

    def peer_send_raw(self, int host, bytes frame, int dst_host):
        self._check(rs_peer_send_raw(self.sim, host, frame, len(frame), dst_host))

    def host_rx_counters(self, int host):
        """A NIC's receive drops by reason (rs_host_rx_counters)."""
        cdef uint64_t out[4]
        self._check(rs_host_rx_counters(self.sim, host, out))
        return {"unknown_qp": out[0], "bad_state": out[1], "bad_icrc": out[2], "malformed": out[3]}

    def host_info(self, int host):
        cdef uint8_t mac[6]
        cdef uint32_t ip
        self._check(rs_host_info(self.sim, host, mac, &ip))
        return bytes(mac[:6]), ip

    def host_ib_addr(self, int host):
        cdef uint16_t lid
        cdef uint8_t gid[16]
        self._check(rs_host_ib_addr(self.sim, host, &lid, gid))
        return lid, bytes(gid[:16])

    def link_connect(self, int a, int b, int64_t rate_bps, int64_t delay_ps):
        return self._check(rs_link_connect(self.sim, a, b, rate_bps, delay_ps))

    def link_set_loss(self, int link, double p):
        self._check(rs_link_set_loss(self.sim, link, p))

    def link_set_gilbert(self, int link, double p_good_bad, double p_bad_good, double loss_good,
                         double loss_bad):
        self._check(rs_link_set_gilbert(self.sim, link, p_good_bad, p_bad_good, loss_good, loss_bad))

    def link_add_drop(self, int link, int match, uint64_t value, uint32_t count):
        self._check(rs_link_add_drop(self.sim, link, match, value, count))

    def link_stats(self, int link):
        cdef rs_link_stats s
        self._check(rs_link_get_stats(self.sim, link, &s))
        return s

    def mr_reg(self, int host, uint32_t pd, object buf, uint32_t access):
        cdef const unsigned char[::1] view = buf  # read-only only without write access (verbs/mr.py)
        cdef uint64_t iova
        cdef uint32_t lkey, rkey
        idx = self._check(rs_mr_reg(self.sim, host, pd, <uint8_t *>&view[0], view.shape[0], access,
                                    &iova, &lkey, &rkey))
        self._buffers[(host, idx)] = buf
        return idx, iova, lkey, rkey

    def mr_rereg(self, int host, int idx, uint32_t pd, uint32_t access):
        """Change a region's PD and access in place (keys kept); returns the rkey."""
        cdef uint32_t rkey
        self._check(rs_mr_rereg(self.sim, host, idx, pd, access, &rkey))
        return rkey

    def mw_alloc(self, int host, uint32_t pd, uint32_t mw_type):
        """Allocate a memory window; returns (slot, rkey)."""
        cdef uint32_t rkey
        idx = self._check(rs_mw_alloc(self.sim, host, pd, mw_type, &rkey))
        return idx, rkey

    def mw_dealloc(self, int host, int idx):
        self._check(rs_mw_dealloc(self.sim, host, idx))

    def mr_dereg(self, int host, int idx):
        self._check(rs_mr_dereg(self.sim, host, idx))
        self._buffers.pop((host, idx), None)

    def cq_create(self, int host, uint32_t cqe):
        return self._check(rs_cq_create(self.sim, host, cqe))

    def cq_destroy(self, int host, int cq):
        self._check(rs_cq_destroy(self.sim, host, cq))

    def cq_resize(self, int host, int cq, uint32_t cqe):
        self._check(rs_cq_resize(self.sim, host, cq, cqe))

    def cq_count(self, int host, int cq):
        return rs_cq_count(self.sim, host, cq)

    def cq_poll(self, int host, int cq, int n):
        """Return a list of completion dicts (at most n)."""
        if n <= 0:
            return []
        cdef rs_wc *out = <rs_wc *> malloc(n * sizeof(rs_wc))
        if out == NULL:
            raise MemoryError()
        try:
            got = self._check(rs_cq_poll(self.sim, host, cq, out, n))
            return [out[i] for i in range(got)]
        finally:
            free(out)

    def qp_create(self, int host, uint32_t pd, int send_cq, int recv_cq, uint32_t max_send_wr,
                  uint32_t max_recv_wr, uint32_t max_send_sge, uint32_t max_recv_sge, bint sq_sig_all,
                  uint32_t qp_type=2, uint32_t srq=0):
        """qp_type: IBV_QPT_RC (2), IBV_QPT_UC (3) or IBV_QPT_UD (4); srq: an srq_create handle (0: none)."""
        cdef rs_qp_init init
        memset(&init, 0, sizeof(init))
        init.qp_type = qp_type
        init.srq = srq
        init.pd = pd
        init.send_cq = send_cq
        init.recv_cq = recv_cq
        init.max_send_wr = max_send_wr
        init.max_recv_wr = max_recv_wr
        init.max_send_sge = max_send_sge
        init.max_recv_sge = max_recv_sge
        init.sq_sig_all = sq_sig_all
        return self._check(rs_qp_create(self.sim, host, &init))

    def qp_destroy(self, int host, uint32_t qpn):
        self._check(rs_qp_destroy(self.sim, host, qpn))

    def qp_modify(self, int host, uint32_t qpn, dict attr, uint32_t mask):
        cdef rs_qp_attr a
        memset(&a, 0, sizeof(a))
        a.dest_host = -1
        for k, v in attr.items():
            if k == "qp_state": a.qp_state = v
            elif k == "cur_qp_state": a.cur_qp_state = v
            elif k == "path_mtu": a.path_mtu = v
            elif k == "qp_access_flags": a.qp_access_flags = v
            elif k == "pkey_index": a.pkey_index = v
            elif k == "port_num": a.port_num = v
            elif k == "dest_qp_num": a.dest_qp_num = v
            elif k == "rq_psn": a.rq_psn = v
            elif k == "sq_psn": a.sq_psn = v
            elif k == "max_rd_atomic": a.max_rd_atomic = v
            elif k == "max_dest_rd_atomic": a.max_dest_rd_atomic = v
            elif k == "min_rnr_timer": a.min_rnr_timer = v
            elif k == "timeout": a.timeout = v
            elif k == "retry_cnt": a.retry_cnt = v
            elif k == "rnr_retry": a.rnr_retry = v
            elif k == "dest_host": a.dest_host = v
            elif k == "traffic_class": a.traffic_class = v
            elif k == "qkey": a.qkey = v
            else:
                raise KeyError(f"unknown QP attribute {k!r}")
        self._check(rs_qp_modify(self.sim, host, qpn, &a, mask))

    def qp_query(self, int host, uint32_t qpn):
        cdef rs_qp_attr a
        self._check(rs_qp_query(self.sim, host, qpn, &a))
        return a

    def qp_stats(self, int host, uint32_t qpn):
        cdef rs_qp_stats s
        self._check(rs_qp_get_stats(self.sim, host, qpn, &s))
        return s

    def qp_set_recovery(self, int host, uint32_t qpn, uint32_t mode, uint32_t window=0,
                        uint32_t rto_low_pkts=0, int64_t rto_low_ps=0, int64_t rto_high_ps=0,
                        int64_t reorder_ps=0):
        """mode 0 = Go-Back-N, 1 = IRN (window in packets, RTO_low below rto_low_pkts in flight),
        2 = OOO (IRN's placement with a reorder-tolerant responder: reorder_ps > 0)."""
        cdef rs_recovery_params p
        memset(&p, 0, sizeof(p))
        p.mode = mode
        p.reorder_ps = reorder_ps
        p.window = window
        p.rto_low_pkts = rto_low_pkts
        p.rto_low_ps = rto_low_ps
        p.rto_high_ps = rto_high_ps
        self._check(rs_qp_set_recovery(self.sim, host, qpn, &p))

    def qp_get_recovery(self, int host, uint32_t qpn):
        cdef rs_recovery_params p
        self._check(rs_qp_get_recovery(self.sim, host, qpn, &p))
        return p

    def post_send(self, int host, uint32_t qpn, uint64_t wr_id, uint32_t opcode, uint32_t send_flags,
                  uint32_t imm_data, list sges, uint64_t remote_addr, uint32_t rkey,
                  uint64_t compare_add=0, uint64_t swap=0, int ud_dest_host=-1,
                  uint32_t ud_traffic_class=0, uint32_t ud_remote_qpn=0, uint32_t ud_remote_qkey=0,
                  uint32_t bind_mw_rkey=0, uint32_t bind_lkey=0, uint32_t bind_access=0,
                  uint64_t bind_len=0):
        """sges: list of (addr, length, lkey); ud_*: a UD QP's address handle, remote QPN and Q_Key;
        bind_*: a BIND_MW's window (current rkey) and bind info (rkey: the new key)."""
        cdef rs_send_wr wr
        memset(&wr, 0, sizeof(wr))
        wr.bind_mw_rkey = bind_mw_rkey
        wr.bind_lkey = bind_lkey
        wr.bind_access = bind_access
        wr.bind_len = bind_len
        wr.ud_dest_host = ud_dest_host
        wr.ud_traffic_class = ud_traffic_class
        wr.ud_remote_qpn = ud_remote_qpn
        wr.ud_remote_qkey = ud_remote_qkey
        cdef rs_sge sg[32]
        if len(sges) > 32:
            raise ValueError(f"{len(sges)} SGEs: at most 32 per work request")
        for i, (addr, length, lkey) in enumerate(sges):
            sg[i].addr = addr
            sg[i].length = length
            sg[i].lkey = lkey
        wr.wr_id = wr_id
        wr.opcode = opcode
        wr.send_flags = send_flags
        wr.imm_data = imm_data
        wr.num_sge = len(sges)
        wr.sg_list = sg
        wr.remote_addr = remote_addr
        wr.rkey = rkey
        wr.compare_add = compare_add
        wr.swap = swap
        self._check(rs_post_send(self.sim, host, qpn, &wr))

    def post_recv(self, int host, uint32_t qpn, uint64_t wr_id, list sges):
        cdef rs_recv_wr wr
        cdef rs_sge sg[32]
        if len(sges) > 32:
            raise ValueError(f"{len(sges)} SGEs: at most 32 per work request")
        for i, (addr, length, lkey) in enumerate(sges):
            sg[i].addr = addr
            sg[i].length = length
            sg[i].lkey = lkey
        wr.wr_id = wr_id
        wr.num_sge = len(sges)
        wr.sg_list = sg
        self._check(rs_post_recv(self.sim, host, qpn, &wr))

    def srq_create(self, int host, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit=0):
        """A shared receive queue; returns its handle (>= 1). limit > 0 arms the SRQ limit."""
        return self._check(rs_srq_create(self.sim, host, pd, max_wr, max_sge, limit))

    def srq_modify(self, int host, uint32_t srq, uint32_t mask, uint32_t max_wr, uint32_t limit):
        """mask: 1 resize to max_wr, 2 arm the limit (0 disarms)."""
        self._check(rs_srq_modify(self.sim, host, srq, mask, max_wr, limit))

    def srq_query(self, int host, uint32_t srq):
        """dict of max_wr, max_sge, limit (0: not armed), count (posted), limit_events (pending)."""
        cdef rs_srq_attr a
        self._check(rs_srq_query(self.sim, host, srq, &a))
        return a

    def srq_take_limit_event(self, int host, uint32_t srq):
        """True if a pending SRQ limit event was taken."""
        return self._check(rs_srq_take_limit_event(self.sim, host, srq)) == 1

    def srq_destroy(self, int host, uint32_t srq):
        self._check(rs_srq_destroy(self.sim, host, srq))

    def post_srq_recv(self, int host, uint32_t srq, uint64_t wr_id, list sges):
        cdef rs_recv_wr wr
        cdef rs_sge sg[32]
        if len(sges) > 32:
            raise ValueError(f"{len(sges)} SGEs: at most 32 per work request")
        for i, (addr, length, lkey) in enumerate(sges):
            sg[i].addr = addr
            sg[i].length = length
            sg[i].lkey = lkey
        wr.wr_id = wr_id
        wr.num_sge = len(sges)
        wr.sg_list = sg
        self._check(rs_post_srq_recv(self.sim, host, srq, &wr))


def _register_error_classes(mapping):
    """Called by rdmasim.errors: rs_err code -> exception class."""
    _ERROR_CLASSES.update(mapping)
