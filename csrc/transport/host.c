/* Host (NIC) construction and teardown. */
#include "transport/transport.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "link/rxpipe.h"
#include "rdmasim/ib.h"

int rs_tp_fail(rs_transport *tp, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rs_engine_vfail(&tp->net.eng, code, fmt, ap);
    va_end(ap);
    return code;
}

rs_host *rs_host_new(rs_transport *tp, int id)
{
    rs_host *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->tp = tp;
    h->id = id;
    rs_port_client client = rs_nic_port_client(h);
    rs_port_init_host(&h->port, id, &client); /* the port assigns the host's MAC and IPv4 address */
    h->next_iova = 0x100000;
    rs_qpn_init(&h->qpns, RS_QPN_MASK);
    h->pace.owner = h;
    h->pace.kind = RS_EV_NIC_PACE;
    h->loopback.owner = h;
    h->loopback.kind = RS_EV_NIC_LOOPBACK;
    h->pace.ent = h->loopback.ent = h->port.tx_done.ent;
    /* congestion control off by default; NVIDIA's CNP defaults when turned on */
    h->cc.kind = RS_CC_NONE;
    h->cc.cnp_interval_ps = 4000000;
    h->cc.cnp_dscp = 48;
    rs_nic_params_default(&h->nic);
    rs_rng_seed(&h->rng, tp->net.eng.seed, (uint64_t)id);
    return h;
}

void rs_host_free(rs_host *h)
{
    rs_pkt *p = h->port.ctrl_head;
    while (p) {
        rs_pkt *next = p->next;
        rs_pkt_release(&h->tp->pool, p);
        p = next;
    }
    for (p = h->port.pfc_wait_head; p;) { /* PFC frames waiting for the response time */
        rs_pkt *next = p->next;
        rs_pkt_release(&h->tp->pool, p);
        p = next;
    }
    for (p = h->lb_head; p;) {
        rs_pkt *next = p->next;
        rs_pkt_release(&h->tp->pool, p);
        p = next;
    }
    for (size_t i = 0; i < rs_qpn_slots(&h->qpns); i++) {
        rs_qp *qp = h->qpns.slot[i].qp;
        if (qp)
            rs_qp_free_storage(qp); /* the QP itself is in tp->qp_slab */
    }
    for (uint32_t i = 0; i < h->n_cqs; i++)
        free(h->cqs[i].ring);
    rs_qpn_free(&h->qpns);
    rs_host_free_srqs(h);
    for (int i = 0; i < RS_CC_PLUGINS; i++)
        free(h->cc_plugin_params[i]);
    free(h->pace_heap);
    free(h->cqs);
    free(h->mrs);
    free(h->mws);
    free(h);
}

int rs_tp_host_rx_counters(const rs_transport *tp, int host, uint64_t out[RS_HOST_RX_COUNTERS])
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return rs_tp_fail((rs_transport *)tp, RS_ERR_INVAL, "no host %d", host);
    const rs_host *h = tp->hosts[host];
    out[0] = h->rx_unknown_qp;
    out[1] = h->rx_bad_state;
    out[2] = h->rx_bad_icrc;
    out[3] = h->rx_malformed;
    return RS_OK;
}

int rs_tp_host_set_dscp_map(rs_transport *tp, int host, const uint8_t *map)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d (hosts 0..%d)", host, (int)tp->n_hosts - 1);
    for (int i = 0; i < 64; i++)
        if (map[i] > 7)
            return rs_tp_fail(tp, RS_ERR_INVAL, "dscp_map[%d] = %u outside 0..7", i, map[i]);
    rs_host *h = tp->hosts[host];
    memcpy(h->port.addr.dscp_to_prio, map, 64);
    /* the priority is part of each QP's resolved path: resolve them again */
    for (size_t i = 0; i < rs_qpn_slots(&h->qpns); i++) {
        rs_qp *qp = h->qpns.slot[i].qp;
        if (qp)
            rs_qp_resolve_path(qp);
    }
    return RS_OK;
}

/* The slow-receiver pipeline is the host port's (link/rxpipe.c); these find the host. */
int rs_tp_host_set_rx(rs_transport *tp, int host, int enable, int64_t rate_bps, uint64_t buf_bytes, uint64_t xoff_bytes,
                      uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d (hosts 0..%d)", host, (int)tp->n_hosts - 1);
    rs_host *h = tp->hosts[host];
    return rs_rxpipe_set(&tp->net, &h->port, h->port.addr.mac, enable, rate_bps, buf_bytes, xoff_bytes, xon_bytes, prio_mask,
                         quanta);
}

int rs_tp_host_rx_stats_get(const rs_transport *tp, int host, rs_host_rx_stats *out)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return RS_ERR_INVAL;
    rs_rxpipe_stats(&tp->hosts[host]->port, out);
    return RS_OK;
}

int rs_tp_host_set_nic(rs_transport *tp, int host, uint32_t max_unacked_psns, uint32_t ack_coalesce_pkts,
                       int64_t ack_timeout_ps, uint32_t ack_req_interval)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (max_unacked_psns < 1 || max_unacked_psns > RS_NIC_MAX_UNACKED_PSNS_LIMIT)
        return rs_tp_fail(tp, RS_ERR_INVAL, "max_unacked_psns %u not in 1..%u", max_unacked_psns,
                          RS_NIC_MAX_UNACKED_PSNS_LIMIT);
    if (ack_coalesce_pkts < 1)
        return rs_tp_fail(tp, RS_ERR_INVAL, "ack_coalesce_pkts %u must be >= 1", ack_coalesce_pkts);
    if (ack_timeout_ps < 0 || (ack_coalesce_pkts > 1 && ack_timeout_ps == 0))
        return rs_tp_fail(tp, RS_ERR_INVAL, "ack_timeout_ps %lld must be > 0 with ack_coalesce_pkts > 1 (>= 0 otherwise)",
                          (long long)ack_timeout_ps);
    if (ack_req_interval < 1)
        return rs_tp_fail(tp, RS_ERR_INVAL, "ack_req_interval %u must be >= 1", ack_req_interval);
    /* the window must hold the packets up to the next AckReq, or it stalls until the retransmit
     * timeout (the requester never asks for an ACK because the window is full, as rxe_req.c) */
    if (max_unacked_psns + 1 < ack_req_interval)
        return rs_tp_fail(tp, RS_ERR_INVAL, "max_unacked_psns %u + 1 < ack_req_interval %u: the window "
                          "ends before the next AckReq", max_unacked_psns, ack_req_interval);
    rs_nic_params *n = &tp->hosts[host]->nic;
    n->max_unacked_psns = max_unacked_psns;
    n->ack_coalesce_pkts = ack_coalesce_pkts;
    n->ack_timeout_ps = ack_timeout_ps;
    n->ack_req_interval = ack_req_interval;
    return RS_OK;
}
