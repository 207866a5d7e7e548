# Switched fabrics: the control-path calls of csrc/include/rdmasim/fabric.h (switches, links between
# any two nodes, link failure, counters).  Bound to a SimCore; Python never runs per packet.
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc

import numpy as np

cdef extern from "rdmasim/fabric.h" nogil:
    ctypedef struct rs_switch_cfg:
        uint32_t n_ports
        uint64_t buffer_bytes
        uint32_t reserve_bytes
        uint32_t headroom_bytes
        uint32_t dynamic
        uint32_t alpha_shift
        uint64_t xoff_bytes
        uint32_t resume_offset_bytes
        uint64_t lossy_limit_bytes
        uint8_t pfc_mask
        uint16_t pfc_quanta
        uint8_t dscp_to_prio[64]
        uint32_t wrr
        uint8_t wrr_weight[8]
        uint64_t ecn_kmin[8]
        uint64_t ecn_kmax[8]
        double ecn_pmax[8]
        uint32_t ecn_on_dequeue
        uint64_t ecmp_seed
        uint32_t path_select
        int64_t pfc_response_ps
        uint32_t routing
        uint32_t group
        uint32_t hop_classes
        int64_t latency_ps
        uint32_t ar_band_bytes
        uint32_t trim
        uint64_t trim_threshold_bytes
        uint32_t trim_prio
    ctypedef struct rs_swport_stats:
        uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes
        uint64_t drops[5]
        uint64_t ecn_marked
        uint64_t pfc_xoff_sent, pfc_xon_sent
        uint64_t q_bytes_peak[8]
        uint64_t in_bytes_peak[8]
        uint64_t hdrm_bytes_peak[8]
        uint64_t in_bytes_at_first_xoff[8]
        uint64_t wd_storms
        uint64_t q_tx_pkts[8]
        uint64_t q_tx_bytes[8]
        uint64_t q_ecn_marked[8]
        uint64_t q_drops[8]
        uint64_t trims
    ctypedef struct rs_pause_stats:
        uint64_t pfc_rx_frames
        uint64_t pfc_rx_xoff
        uint64_t pfc_rx_xon
        int64_t paused_ps[8]
        uint32_t paused_mask

    void rs_switch_cfg_default(rs_switch_cfg *cfg)
    int rs_switch_add(rs_sim *sim, const rs_switch_cfg *cfg)
    int rs_fabric_connect(rs_sim *sim, int kind_a, int a, int kind_b, int b, int64_t rate_bps,
                          int64_t delay_ps)
    int rs_link_ends(const rs_sim *sim, int link, int *from_kind, int *from_node, int *from_port,
                     int *to_kind, int *to_node, int *to_port)
    int rs_link_set_up(rs_sim *sim, int link, int up)
    int rs_link_schedule_up(rs_sim *sim, int link, int up, int64_t t_ps)
    int rs_link_set_rate(rs_sim *sim, int link, int64_t rate_bps)
    int rs_switch_port_stats(const rs_sim *sim, int sw, int port, rs_swport_stats *out)
    int rs_switch_queue_bytes(const rs_sim *sim, int sw, int port, int prio, uint64_t *egress,
                              uint64_t *ingress)
    int rs_port_set_pfc_response(rs_sim *sim, int kind, int node, int port, int64_t response_ps)
    int rs_port_inject_pfc(rs_sim *sim, int kind, int node, int port, uint16_t class_enable,
                           const uint16_t quanta[8])
    int rs_port_pause_stats(const rs_sim *sim, int kind, int node, int port, rs_pause_stats *out)
    ctypedef struct rs_queue_ref:
        int sw
        int port
        int prio
    ctypedef struct rs_host_rx_stats:
        uint64_t pfc_xoff_sent, pfc_xon_sent, dropped, peak_bytes, bytes
    int rs_host_set_rx(rs_sim *sim, int host, int enable, int64_t rate_bps, uint64_t buf_bytes,
                       uint64_t xoff_bytes, uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta)
    int rs_host_rx_stats_get(const rs_sim *sim, int host, rs_host_rx_stats *out)
    int rs_host_set_dscp_map(rs_sim *sim, int host, const uint8_t *map)
    int rs_switch_set_route(rs_sim *sim, int sw, int dst, const uint16_t *ports, int n)
    int rs_pfc_watchdog(rs_sim *sim, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps)
    int rs_deadlock_detector(rs_sim *sim, int64_t period_ps)
    int rs_deadlock_check_now(rs_sim *sim)
    int rs_deadlock_result(const rs_sim *sim, int64_t *t_ps, rs_queue_ref *cycle, int cap)
    int rs_sampler_config(rs_sim *sim, int64_t period_ps, const rs_queue_ref *probes, uint32_t n_probes,
                          uint32_t max_samples)
    int rs_sampler_read(const rs_sim *sim, int64_t *t, uint64_t *egress, uint64_t *ingress, uint8_t *paused,
                        uint64_t *missed)
    ctypedef struct rs_drop_spec:
        uint32_t fields
        uint32_t skip
        uint32_t count
        uint32_t psn
        uint32_t dest_qp
        uint64_t nth
        uint64_t opcodes[4]
    int rs_link_add_drop_rule(rs_sim *sim, int link, const rs_drop_spec *spec)
    int64_t rs_link_drops_pending(const rs_sim *sim, int link)
    int rs_link_mark_trim_ok(rs_sim *sim, int link, int on)
    int rs_link_schedule_loss(rs_sim *sim, int link, double loss_prob, int64_t t_ps)
    int rs_sim_pcap_links(rs_sim *sim, const int *links, uint32_t n)
    int rs_sim_pcap_status(const rs_sim *sim, uint64_t *frames, int *err)
    int rs_switch_next_hops(rs_sim *sim, int sw, int dst, uint16_t *out, int cap)
    int rs_switch_ecmp_port(rs_sim *sim, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport)
    int64_t rs_switch_route_bytes(rs_sim *sim, int sw)
    ctypedef struct rs_credit_cfg:
        uint32_t n_vls
        uint32_t buffer_blocks[8]
        uint8_t sl2vl[16]
        int64_t fc_period_ps
        uint32_t vlarb
        uint8_t vlarb_high[8]
        uint8_t vlarb_low[8]
        uint32_t vlarb_high_limit
    ctypedef struct rs_credit_stats:
        int64_t stall_ps[8]
        uint32_t stalled_mask
        uint64_t fc_sent, fc_rx, stalls
        uint32_t used_blocks[8]
        uint32_t peak_blocks[8]
        uint32_t cap_blocks[8]
        uint64_t overruns
    int rs_port_credit_config(rs_sim *sim, int kind, int node, int port, const rs_credit_cfg *cfg)
    void rs_net_set_switch_tx_eager(rs_sim *sim, int on)
    int rs_port_credit_stats(const rs_sim *sim, int kind, int node, int port, rs_credit_stats *out)
    int rs_switch_set_lft(rs_sim *sim, int sw, const uint16_t *ports, uint32_t n)
    int rs_switch_victim_mask(rs_sim *sim, int sw, int port, int on)

DROPF_NTH, DROPF_PSN, DROPF_OPCODE, DROPF_DEST_QP = 1, 2, 4, 8

SWITCH_DROP_REASONS = ("no_route", "lossy_threshold", "buffer_full", "headroom_overflow", "watchdog")
_SCALAR_CFG = ("n_ports", "buffer_bytes", "reserve_bytes", "headroom_bytes", "dynamic", "alpha_shift",
               "xoff_bytes", "resume_offset_bytes", "lossy_limit_bytes", "pfc_mask", "pfc_quanta", "wrr",
               "ecn_on_dequeue", "ecmp_seed", "path_select", "pfc_response_ps", "routing", "group",
               "hop_classes", "latency_ps", "ar_band_bytes", "trim", "trim_threshold_bytes", "trim_prio")
_ARRAY_CFG = ("dscp_to_prio", "wrr_weight", "ecn_kmin", "ecn_kmax", "ecn_pmax")


def switch_cfg_default():
    """The C defaults of rs_switch_cfg as a dict (scalars, and lists for the per-DSCP/priority arrays)."""
    cdef rs_switch_cfg c
    rs_switch_cfg_default(&c)
    d = c  # Cython converts the struct to a dict (fixed arrays to lists)
    d = dict(d)
    for k in _ARRAY_CFG:
        d[k] = list(d[k])
    return d


cdef class FabricCore:
    """Fabric calls on one SimCore. Used by rdmasim.fabric; not a public API."""
    cdef SimCore core

    def __cinit__(self, SimCore core):
        self.core = core

    def switch_add(self, dict cfg):
        cdef rs_switch_cfg c
        cdef int i
        rs_switch_cfg_default(&c)
        c.n_ports = cfg["n_ports"]
        c.buffer_bytes = cfg["buffer_bytes"]
        c.reserve_bytes = cfg["reserve_bytes"]
        c.headroom_bytes = cfg["headroom_bytes"]
        c.dynamic = cfg["dynamic"]
        c.alpha_shift = cfg["alpha_shift"]
        c.xoff_bytes = cfg["xoff_bytes"]
        c.resume_offset_bytes = cfg["resume_offset_bytes"]
        c.lossy_limit_bytes = cfg["lossy_limit_bytes"]
        c.pfc_mask = cfg["pfc_mask"]
        c.pfc_quanta = cfg["pfc_quanta"]
        c.wrr = cfg["wrr"]
        c.ecn_on_dequeue = cfg["ecn_on_dequeue"]
        c.ecmp_seed = cfg["ecmp_seed"]
        c.path_select = cfg.get("path_select", 0)
        c.pfc_response_ps = cfg.get("pfc_response_ps", 0)
        c.routing = cfg.get("routing", 0)
        c.group = cfg.get("group", 0)
        c.hop_classes = cfg.get("hop_classes", 0)
        c.latency_ps = cfg.get("latency_ps", 0)
        c.ar_band_bytes = cfg.get("ar_band_bytes", 0)
        c.trim = cfg.get("trim", 0)
        c.trim_threshold_bytes = cfg.get("trim_threshold_bytes", c.trim_threshold_bytes)
        c.trim_prio = cfg.get("trim_prio", c.trim_prio)
        for i in range(64):
            c.dscp_to_prio[i] = cfg["dscp_to_prio"][i]
        for i in range(8):
            c.wrr_weight[i] = cfg["wrr_weight"][i]
            c.ecn_kmin[i] = cfg["ecn_kmin"][i]
            c.ecn_kmax[i] = cfg["ecn_kmax"][i]
            c.ecn_pmax[i] = cfg["ecn_pmax"][i]
        return self.core._check(rs_switch_add(self.core.sim, &c))

    def connect(self, int kind_a, int a, int kind_b, int b, int64_t rate_bps, int64_t delay_ps):
        return self.core._check(rs_fabric_connect(self.core.sim, kind_a, a, kind_b, b, rate_bps, delay_ps))

    def link_ends(self, int link):
        cdef int fk, fn, fp, tk, tn, tp
        self.core._check(rs_link_ends(self.core.sim, link, &fk, &fn, &fp, &tk, &tn, &tp))
        return (fk, fn, fp), (tk, tn, tp)

    def link_set_up(self, int link, bint up):
        self.core._check(rs_link_set_up(self.core.sim, link, up))

    def link_schedule_up(self, int link, bint up, int64_t t_ps):
        self.core._check(rs_link_schedule_up(self.core.sim, link, up, t_ps))

    def link_set_rate(self, int link, int64_t rate_bps):
        self.core._check(rs_link_set_rate(self.core.sim, link, rate_bps))

    def port_stats(self, int sw, int port):
        cdef rs_swport_stats s
        self.core._check(rs_switch_port_stats(self.core.sim, sw, port, &s))
        d = {"rx_pkts": s.rx_pkts, "rx_bytes": s.rx_bytes, "tx_pkts": s.tx_pkts, "tx_bytes": s.tx_bytes,
             "ecn_marked": s.ecn_marked, "pfc_xoff_sent": s.pfc_xoff_sent, "pfc_xon_sent": s.pfc_xon_sent,
             "drops": {SWITCH_DROP_REASONS[i]: s.drops[i] for i in range(5)},
             "egress_peak_bytes": [s.q_bytes_peak[i] for i in range(8)],
             "ingress_peak_bytes": [s.in_bytes_peak[i] for i in range(8)],
             "headroom_peak_bytes": [s.hdrm_bytes_peak[i] for i in range(8)],
             "ingress_bytes_at_first_xoff": [s.in_bytes_at_first_xoff[i] for i in range(8)],
             "watchdog_storms": s.wd_storms,
             "queue_tx_pkts": [s.q_tx_pkts[i] for i in range(8)],
             "queue_tx_bytes": [s.q_tx_bytes[i] for i in range(8)],
             "queue_ecn_marked": [s.q_ecn_marked[i] for i in range(8)],
             "queue_drops": [s.q_drops[i] for i in range(8)],
             "trims": s.trims}
        return d

    def queue_bytes(self, int sw, int port, int prio):
        cdef uint64_t eg, ing
        self.core._check(rs_switch_queue_bytes(self.core.sim, sw, port, prio, &eg, &ing))
        return eg, ing

    def pause_stats(self, int kind, int node, int port):
        cdef rs_pause_stats s
        self.core._check(rs_port_pause_stats(self.core.sim, kind, node, port, &s))
        return {"pfc_rx_frames": s.pfc_rx_frames, "pfc_rx_xoff": s.pfc_rx_xoff, "pfc_rx_xon": s.pfc_rx_xon,
                "paused_ps": [s.paused_ps[i] for i in range(8)], "paused_mask": s.paused_mask}

    def set_pfc_response(self, int kind, int node, int port, int64_t response_ps):
        self.core._check(rs_port_set_pfc_response(self.core.sim, kind, node, port, response_ps))

    def inject_pfc(self, int kind, int node, int port, uint16_t class_enable, quanta):
        cdef uint16_t q[8]
        cdef int i
        for i in range(8):
            q[i] = quanta[i]
        self.core._check(rs_port_inject_pfc(self.core.sim, kind, node, port, class_enable, q))

    def next_hops(self, int sw, int dst):
        cdef uint16_t buf[4096]
        n = self.core._check(rs_switch_next_hops(self.core.sim, sw, dst, buf, 4096))
        return [buf[i] for i in range(n)]

    def route_bytes(self, int sw):
        return self.core._check(rs_switch_route_bytes(self.core.sim, sw))

    def ecmp_port(self, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport):
        return self.core._check(rs_switch_ecmp_port(self.core.sim, sw, dst, sip, dip, sport))

    def set_route(self, int sw, int dst, ports):
        cdef uint16_t buf[4096]
        cdef int i
        n = len(ports)
        if n > 4096:
            raise ValueError(f"at most 4096 next hops, got {n}")
        for i in range(n):
            buf[i] = ports[i]
        self.core._check(rs_switch_set_route(self.core.sim, sw, dst, buf, n))

    def pfc_watchdog(self, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps):
        self.core._check(rs_pfc_watchdog(self.core.sim, poll_ps, detect_ps, restore_ps))

    def deadlock_detector(self, int64_t period_ps):
        self.core._check(rs_deadlock_detector(self.core.sim, period_ps))

    def deadlock_check_now(self):
        """One deadlock check now (link/deadlock.c), unless one was already found."""
        self.core._check(rs_deadlock_check_now(self.core.sim))

    def deadlock_result(self):
        cdef rs_queue_ref cyc[64]
        cdef int64_t t = 0
        n = rs_deadlock_result(self.core.sim, &t, cyc, 64)
        if n == 0:
            return None
        return t, [(cyc[i].sw, cyc[i].port, cyc[i].prio) for i in range(n)]

    def host_set_rx(self, int host, bint enable, int64_t rate_bps, uint64_t buf, uint64_t xoff, uint64_t xon,
                    uint8_t prio_mask, uint16_t quanta):
        self.core._check(rs_host_set_rx(self.core.sim, host, enable, rate_bps, buf, xoff, xon, prio_mask, quanta))

    def host_rx_stats(self, int host):
        cdef rs_host_rx_stats s
        self.core._check(rs_host_rx_stats_get(self.core.sim, host, &s))
        return {"pfc_xoff_sent": s.pfc_xoff_sent, "pfc_xon_sent": s.pfc_xon_sent, "dropped": s.dropped,
                "peak_bytes": s.peak_bytes, "bytes": s.bytes}

    def sampler_config(self, int64_t period_ps, probes, uint32_t max_samples):
        cdef uint32_t n = len(probes)
        cdef rs_queue_ref *buf = <rs_queue_ref *>malloc((n if n else 1) * sizeof(rs_queue_ref))
        cdef uint32_t k
        if buf == NULL:
            raise MemoryError()
        try:
            for k in range(n):
                buf[k].sw, buf[k].port, buf[k].prio = probes[k]
            self.core._check(rs_sampler_config(self.core.sim, period_ps, buf, n, max_samples))
        finally:
            free(buf)

    def sampler_read(self, uint32_t n_probes, uint32_t max_samples):
        t = np.zeros(max_samples, dtype=np.int64)
        eg = np.zeros((max_samples, n_probes), dtype=np.uint64)
        ing = np.zeros((max_samples, n_probes), dtype=np.uint64)
        pa = np.zeros((max_samples, n_probes), dtype=np.uint8)
        cdef int64_t[::1] tv = t
        cdef uint64_t[:, ::1] ev = eg
        cdef uint64_t[:, ::1] iv = ing
        cdef uint8_t[:, ::1] pv = pa
        cdef uint64_t missed = 0
        n = rs_sampler_read(self.core.sim, &tv[0], &ev[0, 0], &iv[0, 0], &pv[0, 0], &missed)
        return t[:n], eg[:n], ing[:n], pa[:n].astype(bool), missed

    def host_set_dscp_map(self, int host, table):
        cdef uint8_t m[64]
        cdef int i
        for i in range(64):
            m[i] = table[i]
        self.core._check(rs_host_set_dscp_map(self.core.sim, host, m))

    def link_mark_trim_ok(self, int link, bint on):
        self.core._check(rs_link_mark_trim_ok(self.core.sim, link, on))

    def link_add_drop_rule(self, int link, uint32_t fields, uint32_t skip, uint32_t count, uint32_t psn,
                           uint32_t dest_qp, uint64_t nth, opcodes):
        cdef rs_drop_spec spec
        cdef int i
        spec.fields, spec.skip, spec.count, spec.psn, spec.dest_qp, spec.nth = fields, skip, count, psn, dest_qp, nth
        for i in range(4):
            spec.opcodes[i] = 0
        for o in opcodes:
            spec.opcodes[o >> 6] |= (<uint64_t>1) << (o & 63)
        self.core._check(rs_link_add_drop_rule(self.core.sim, link, &spec))

    def link_drops_pending(self, int link):
        return self.core._check(rs_link_drops_pending(self.core.sim, link))

    def link_schedule_loss(self, int link, double p, int64_t t_ps):
        self.core._check(rs_link_schedule_loss(self.core.sim, link, p, t_ps))

    def pcap_links(self, links):
        """Capture only these link directions (None: all, also those added later)."""
        cdef uint32_t n = 0 if links is None else len(links)
        cdef int *buf = <int *>malloc((n if n else 1) * sizeof(int))
        cdef uint32_t k
        if buf == NULL:
            raise MemoryError()
        try:
            for k in range(n):
                buf[k] = links[k]
            self.core._check(rs_sim_pcap_links(self.core.sim, NULL if links is None else buf, n))
        finally:
            free(buf)

    def pcap_status(self):
        """(open, frames, errno) of the capture."""
        cdef uint64_t frames = 0
        cdef int err = 0
        closed = rs_sim_pcap_status(self.core.sim, &frames, &err)
        return not closed, frames, err

    def credit_config(self, int kind, int node, int port, uint32_t n_vls, blocks, sl2vl, int64_t fc_period_ps,
                      vlarb=None):
        """Put a port in InfiniBand credit mode (link/credit.h); vlarb: (high[8], low[8], limit) or None."""
        cdef rs_credit_cfg c
        cdef int i
        c.n_vls = n_vls
        c.vlarb = 0 if vlarb is None else 1
        c.vlarb_high_limit = 0 if vlarb is None else vlarb[2]
        for i in range(8):
            c.vlarb_high[i] = 0 if vlarb is None else vlarb[0][i]
            c.vlarb_low[i] = 0 if vlarb is None else vlarb[1][i]
        for i in range(8):
            c.buffer_blocks[i] = blocks[i]
        for i in range(16):
            c.sl2vl[i] = sl2vl[i]
        c.fc_period_ps = fc_period_ps
        self.core._check(rs_port_credit_config(self.core.sim, kind, node, port, &c))

    def set_switch_tx_eager(self, bint on):
        """Testing: every switch port arms a transmit-done event after each frame (same results)."""
        rs_net_set_switch_tx_eager(self.core.sim, on)

    def credit_stats(self, int kind, int node, int port):
        """Credit counters of a port, or None when it is not in credit mode."""
        cdef rs_credit_stats s
        rc = rs_port_credit_stats(self.core.sim, kind, node, port, &s)
        if rc == 1:
            return None
        self.core._check(rc)
        return {"credit_stall_ps": [s.stall_ps[i] for i in range(8)], "credit_stalled_mask": s.stalled_mask,
                "fc_sent": s.fc_sent, "fc_rx": s.fc_rx, "credit_stalls": s.stalls,
                "credit_used_blocks": [s.used_blocks[i] for i in range(8)],
                "credit_peak_blocks": [s.peak_blocks[i] for i in range(8)],
                "credit_cap_blocks": [s.cap_blocks[i] for i in range(8)],
                "credit_overruns": s.overruns}

    def victim_mask(self, int sw, int port, bint on):
        """IB CC Victim_Mask bit of a switch port (link/credit.h rs_credit_starved)."""
        self.core._check(rs_switch_victim_mask(self.core.sim, sw, port, on))

    def set_lft(self, int sw, ports):
        """Linear forwarding table of a switch: ports[dlid] (0xFFFF: none); [] clears it."""
        cdef uint32_t n = len(ports)
        cdef uint16_t *buf = <uint16_t *>malloc((n if n else 1) * sizeof(uint16_t))
        cdef uint32_t k
        if buf == NULL:
            raise MemoryError()
        try:
            for k in range(n):
                buf[k] = ports[k]
            self.core._check(rs_switch_set_lft(self.core.sim, sw, buf, n))
        finally:
            free(buf)
