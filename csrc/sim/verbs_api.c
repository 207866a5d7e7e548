/* The public verbs calls (rdmasim/verbs.h, and the host calls of fabric.h) take the simulation;
 * the transport works on its own context (transport/transport.h).  Each call here hands over the
 * transport and nothing else. */
#include "sim/sim_impl.h"

int rs_host_set_cc(rs_sim *sim, int host, int kind, const void *params, size_t params_size, int np_enabled,
                   int64_t cnp_interval_ps, uint32_t cnp_dscp)
{
    return rs_tp_host_set_cc(&sim->tp, host, kind, params, params_size, np_enabled, cnp_interval_ps, cnp_dscp);
}

void rs_sim_set_key_recheck(rs_sim *sim, int on) { sim->tp.key_recheck = on != 0; }

int rs_host_set_nic(rs_sim *sim, int host, uint32_t max_unacked_psns, uint32_t ack_coalesce_pkts,
                    int64_t ack_timeout_ps, uint32_t ack_req_interval)
{
    return rs_tp_host_set_nic(&sim->tp, host, max_unacked_psns, ack_coalesce_pkts, ack_timeout_ps,
                              ack_req_interval);
}

double rs_qp_rate_bps(const rs_sim *sim, int host, uint32_t qpn)
{
    return rs_tp_qp_rate_bps(&sim->tp, host, qpn);
}

int rs_qp_dcqcn_state(const rs_sim *sim, int host, uint32_t qpn, rs_dcqcn_rp *out)
{
    return rs_tp_qp_dcqcn_state(&sim->tp, host, qpn, out);
}

int rs_qp_cc_state(const rs_sim *sim, int host, uint32_t qpn, void *out, size_t cap, int *kind)
{
    return rs_tp_qp_cc_state(&sim->tp, host, qpn, out, cap, kind);
}

int rs_cq_create(rs_sim *sim, int host, uint32_t cqe)
{
    return rs_tp_cq_create(&sim->tp, host, cqe);
}

int rs_cq_destroy(rs_sim *sim, int host, int idx)
{
    return rs_tp_cq_destroy(&sim->tp, host, idx);
}

int rs_cq_resize(rs_sim *sim, int host, int idx, uint32_t cqe)
{
    return rs_tp_cq_resize(&sim->tp, host, idx, cqe);
}

int rs_cq_poll(rs_sim *sim, int host, int idx, rs_wc *out, int n)
{
    return rs_tp_cq_poll(&sim->tp, host, idx, out, n);
}

int rs_cq_count(const rs_sim *sim, int host, int idx)
{
    return rs_tp_cq_count(&sim->tp, host, idx);
}

int rs_host_rx_counters(const rs_sim *sim, int host, uint64_t out[RS_HOST_RX_COUNTERS])
{
    return rs_tp_host_rx_counters(&sim->tp, host, out);
}

int rs_host_set_dscp_map(rs_sim *sim, int host, const uint8_t *map)
{
    return rs_tp_host_set_dscp_map(&sim->tp, host, map);
}

int rs_host_set_rx(rs_sim *sim, int host, int enable, int64_t rate_bps, uint64_t buf_bytes, uint64_t xoff_bytes,
                   uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta)
{
    return rs_tp_host_set_rx(&sim->tp, host, enable, rate_bps, buf_bytes, xoff_bytes, xon_bytes, prio_mask, quanta);
}

int rs_host_rx_stats_get(const rs_sim *sim, int host, rs_host_rx_stats *out)
{
    return rs_tp_host_rx_stats_get(&sim->tp, host, out);
}

int rs_qp_set_recovery(rs_sim *sim, int host, uint32_t qpn, const rs_recovery_params *p)
{
    return rs_tp_qp_set_recovery(&sim->tp, host, qpn, p);
}

int rs_qp_get_recovery(const rs_sim *sim, int host, uint32_t qpn, rs_recovery_params *out)
{
    return rs_tp_qp_get_recovery(&sim->tp, host, qpn, out);
}

int rs_mr_reg(rs_sim *sim, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
              uint64_t *iova, uint32_t *lkey, uint32_t *rkey)
{
    return rs_tp_mr_reg(&sim->tp, host, pd, base, length, access, iova, lkey, rkey);
}

int rs_mr_rereg(rs_sim *sim, int host, int idx, uint32_t pd, uint32_t access, uint32_t *rkey)
{
    return rs_tp_mr_rereg(&sim->tp, host, idx, pd, access, rkey);
}

int rs_mr_dereg(rs_sim *sim, int host, int idx)
{
    return rs_tp_mr_dereg(&sim->tp, host, idx);
}

int rs_mw_alloc(rs_sim *sim, int host, uint32_t pd, uint32_t type, uint32_t *rkey)
{
    return rs_tp_mw_alloc(&sim->tp, host, pd, type, rkey);
}

int rs_mw_dealloc(rs_sim *sim, int host, int idx)
{
    return rs_tp_mw_dealloc(&sim->tp, host, idx);
}

int rs_host_set_scripted(rs_sim *sim, int host, int on)
{
    return rs_tp_host_set_scripted(&sim->tp, host, on);
}

int rs_peer_recv(rs_sim *sim, int host, uint8_t *buf, size_t cap, int64_t *t_ps)
{
    return rs_tp_peer_recv(&sim->tp, host, buf, cap, t_ps);
}

int rs_peer_send(rs_sim *sim, int host, const uint8_t *frame, size_t len)
{
    return rs_tp_peer_send(&sim->tp, host, frame, len);
}

int rs_peer_send_raw(rs_sim *sim, int host, const uint8_t *frame, size_t len, int dst_host)
{
    return rs_tp_peer_send_raw(&sim->tp, host, frame, len, dst_host);
}

int rs_qp_create(rs_sim *sim, int host, const rs_qp_init *in)
{
    return rs_tp_qp_create(&sim->tp, host, in);
}

int rs_qp_destroy(rs_sim *sim, int host, uint32_t qpn)
{
    return rs_tp_qp_destroy(&sim->tp, host, qpn);
}

int rs_post_send(rs_sim *sim, int host, uint32_t qpn, const rs_send_wr *wr)
{
    return rs_tp_post_send(&sim->tp, host, qpn, wr);
}

int rs_post_recv(rs_sim *sim, int host, uint32_t qpn, const rs_recv_wr *wr)
{
    return rs_tp_post_recv(&sim->tp, host, qpn, wr);
}

int rs_qp_query(const rs_sim *sim, int host, uint32_t qpn, rs_qp_attr *attr)
{
    return rs_tp_qp_query(&sim->tp, host, qpn, attr);
}

int rs_qp_get_stats(const rs_sim *sim, int host, uint32_t qpn, rs_qp_stats *out)
{
    return rs_tp_qp_get_stats(&sim->tp, host, qpn, out);
}

int rs_qp_modify(rs_sim *sim, int host, uint32_t qpn, const rs_qp_attr *attr, uint32_t mask)
{
    return rs_tp_qp_modify(&sim->tp, host, qpn, attr, mask);
}

int rs_qp_get_inspect(const rs_sim *sim, int host, uint32_t qpn, rs_qp_inspect *out)
{
    return rs_tp_qp_get_inspect(&sim->tp, host, qpn, out);
}

int rs_srq_create(rs_sim *sim, int host, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit)
{
    return rs_tp_srq_create(&sim->tp, host, pd, max_wr, max_sge, limit);
}

int rs_srq_destroy(rs_sim *sim, int host, uint32_t handle)
{
    return rs_tp_srq_destroy(&sim->tp, host, handle);
}

int rs_srq_modify(rs_sim *sim, int host, uint32_t handle, uint32_t mask, uint32_t max_wr, uint32_t limit)
{
    return rs_tp_srq_modify(&sim->tp, host, handle, mask, max_wr, limit);
}

int rs_srq_query(rs_sim *sim, int host, uint32_t handle, rs_srq_attr *out)
{
    return rs_tp_srq_query(&sim->tp, host, handle, out);
}

int rs_srq_take_limit_event(rs_sim *sim, int host, uint32_t handle)
{
    return rs_tp_srq_take_limit_event(&sim->tp, host, handle);
}

int rs_post_srq_recv(rs_sim *sim, int host, uint32_t handle, const rs_recv_wr *wr)
{
    return rs_tp_post_srq_recv(&sim->tp, host, handle, wr);
}
