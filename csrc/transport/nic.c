/* NIC: frame headers common to a QP, receive dispatch, and the transmit
 * scheduler (control frames first, then data round-robin over QPs). */
#include "transport/transport.h"

#include <string.h>

#include "core/trace.h"
#include "rdmasim/ib.h"

rs_pkt *rs_nic_new_packet(rs_sim *sim, rs_qp *qp, uint8_t opcode, uint32_t psn)
{
    rs_pkt *p = rs_pkt_alloc(&sim->pool);
    if (!p) {
        sim->failed = 1;
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory allocating a packet");
        return NULL;
    }
    rs_host *h = qp->host;
    p->kind = RS_PKT_ROCE;
    p->src_qpn = qp->qpn;
    p->src_node = (uint16_t)h->id;
    p->dst_node = (uint16_t)qp->attr.dest_host;
    memcpy(p->src_mac, h->mac, 6);
    memcpy(p->dst_mac, qp->dst_mac, 6);
    p->tos = (uint8_t)((qp->attr.traffic_class & 0xFC) | 0x02); /* ECT(0): ECN-capable transport */
    p->priority = h->dscp_to_prio[p->tos >> 2];                 /* PFC class of everything the QP sends */
    p->ttl = 64;
    p->src_ip = h->ip;
    p->dst_ip = qp->dst_ip;
    p->udp_sport = qp->udp_sport;
    p->opcode = opcode;
    p->pkey = RS_DEFAULT_PKEY;
    p->dest_qpn = qp->attr.dest_qp_num;
    p->psn = psn & RS_PSN_MASK;
    return p;
}

void rs_nic_send_ctrl(rs_sim *sim, rs_host *h, rs_pkt *pkt)
{
    rs_port *port = &h->port;
    pkt->next = NULL;
    if (port->ctrl_tail)
        port->ctrl_tail->next = pkt;
    else
        port->ctrl_head = pkt;
    port->ctrl_tail = pkt;
    rs_port_kick(sim, port);
}

static void ring_remove(rs_host *h, rs_qp *qp)
{
    if (qp->act_next == qp) {
        h->act_head = NULL;
    } else {
        qp->act_prev->act_next = qp->act_next;
        qp->act_next->act_prev = qp->act_prev;
        if (h->act_head == qp)
            h->act_head = qp->act_next;
    }
    qp->act_next = qp->act_prev = NULL;
    qp->active = 0;
}

/* Responses (READ data, ACKs queued behind it) go before the QP's own requests. */
static int has_work(const rs_sim *sim, const rs_qp *qp)
{
    return qp->respq_head != NULL || rs_req_can_send(sim, qp);
}

void rs_nic_wake(rs_sim *sim, rs_qp *qp)
{
    rs_host *h = qp->host;
    if (!qp->active && has_work(sim, qp)) {
        /* insert at the tail of the ring (just before the head) */
        if (!h->act_head) {
            qp->act_next = qp->act_prev = qp;
            h->act_head = qp;
        } else {
            rs_qp *head = h->act_head;
            qp->act_prev = head->act_prev;
            qp->act_next = head;
            head->act_prev->act_next = qp;
            head->act_prev = qp;
        }
        qp->active = 1;
    }
    rs_port_kick(sim, &h->port);
}

/* Called by rs_qp_to_error / destroy so the scheduler never sees a dead QP. */
void rs_nic_forget(rs_host *h, rs_qp *qp)
{
    if (qp->active)
        ring_remove(h, qp);
}

static int qp_paused(const rs_port *port, const rs_qp *qp)
{
    return (port->paused_mask >> qp->host->dscp_to_prio[(qp->attr.traffic_class >> 2) & 63u]) & 1u;
}

/* Control frames first (the oldest whose priority is not paused), then data round robin over QPs,
 * skipping QPs whose priority a received PFC frame has paused (they keep their place in the ring). */
rs_pkt *rs_nic_next_frame(rs_sim *sim, rs_host *h)
{
    rs_port *port = &h->port;
    rs_pkt *prev = NULL;
    for (rs_pkt *p = port->ctrl_head; p; prev = p, p = p->next) {
        if (p->kind != RS_PKT_PFC && ((port->paused_mask >> p->priority) & 1u))
            continue; /* pause frames are never paused */
        if (prev)
            prev->next = p->next;
        else
            port->ctrl_head = p->next;
        if (port->ctrl_tail == p)
            port->ctrl_tail = prev;
        p->next = NULL;
        return p;
    }
    rs_qp *first_skipped = NULL; /* first QP passed over: paused by PFC or held by its rate limiter */
    int64_t wake_at = 0;
    while (h->act_head) {
        rs_qp *qp = h->act_head;
        if (qp == first_skipped)
            break; /* went round the ring: every QP with work is paused or held */
        if (!has_work(sim, qp)) {
            ring_remove(h, qp);
            continue;
        }
        h->act_head = qp->act_next; /* round robin: the next QP goes first next time */
        if (port->paused_mask && qp_paused(port, qp)) {
            if (!first_skipped)
                first_skipped = qp;
            continue;
        }
        if (!qp->respq_head && rs_req_paced(sim, qp)) {
            if (!first_skipped)
                first_skipped = qp;
            if (!wake_at || qp->next_tx_ps < wake_at)
                wake_at = qp->next_tx_ps;
            continue;
        }
        rs_pkt *p = qp->respq_head ? rs_respq_next(sim, qp) : rs_req_build(sim, qp);
        if (p)
            return p;
    }
    if (wake_at && (!h->pace.armed || h->pace.when_ps > wake_at))
        rs_sim_arm(sim, &h->pace, wake_at);
    return NULL;
}

/* Only a few QPs are examined (the common case of one or a few per NIC); with more, the port keeps
 * its transmit-done event. */
#define IDLE_SCAN_QPS 4

int rs_nic_idle_after(rs_sim *sim, rs_host *h, int64_t free_ps)
{
    const rs_port *port = &h->port;
    if (port->ctrl_head)
        return 0;
    int64_t wake = INT64_MAX;
    rs_qp *qp = h->act_head;
    for (int n = 0; qp; n++) {
        if (n == IDLE_SCAN_QPS)
            return 0;
        if (has_work(sim, qp) && !(port->paused_mask && qp_paused(port, qp))) { /* pause end kicks */
            if (qp->respq_head || qp->next_tx_ps <= free_ps)
                return 0; /* it can go when the port is free */
            if (qp->next_tx_ps < wake)
                wake = qp->next_tx_ps;
        }
        qp = qp->act_next;
        if (qp == h->act_head)
            break;
    }
    if (wake != INT64_MAX && (!h->pace.armed || h->pace.when_ps > wake))
        rs_sim_arm(sim, &h->pace, wake);
    return 1;
}

static int is_response(uint8_t op)
{
    return op >= RS_OP_READ_RESP_FIRST && op <= RS_OP_ATOMIC_ACK;
}

void rs_nic_receive(rs_sim *sim, rs_host *h, rs_pkt *pkt)
{
    if (h->scripted) {
        rs_peer_deliver(sim, h, pkt);
        return;
    }
    rs_qp *qp = pkt->kind == RS_PKT_ROCE ? rs_host_qp(h, pkt->dest_qpn) : NULL;
    if (!qp) {
        h->rx_unknown_qp += (pkt->kind == RS_PKT_ROCE);
        if (pkt->kind == RS_PKT_ROCE)
            rs_trace_host_drop(sim, h->id, pkt, RS_TR_DROP_UNKNOWN_QP);
        rs_pkt_release(&sim->pool, pkt);
        return;
    }
    if (pkt->opcode == RS_OP_CNP) {
        rs_cc_on_cnp(sim, qp);
        rs_pkt_release(&sim->pool, pkt);
        return;
    }
    if ((pkt->tos & 3u) == 3u) /* ECN CE: congestion on the way here */
        rs_cc_np_on_ce(sim, qp);
    if (is_response(pkt->opcode))
        rs_comp_receive(sim, qp, pkt);
    else
        rs_resp_receive(sim, qp, pkt);
}
