/* NIC: frame headers common to a QP, receive dispatch, and the transmit
 * scheduler (control frames first, then data round-robin over QPs). */
#include "transport/transport.h"

#include <stdlib.h>
#include <string.h>

#include "codec/trace_frame.h"
#include "rdmasim/ib.h"

void rs_qp_resolve_path(rs_qp *qp)
{
    rs_host *h = qp->host;
    qp->req_flen_key = 0;
    if (qp->attr.dest_host >= 0)
        rs_port_resolve_path(&h->tp->net, &h->port, qp->attr.dest_host, (uint8_t)qp->attr.traffic_class, qp->qpn,
                             &qp->path);
}

rs_pkt *rs_nic_new_packet(rs_transport *tp, rs_qp *qp, uint8_t opcode, uint32_t psn)
{
    rs_pkt *p = rs_pkt_alloc(&tp->pool);
    if (!p) {
        tp->net.eng.failed = 1;
        rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory allocating a packet");
        return NULL;
    }
    rs_host *h = qp->host;
    p->kind = RS_PKT_ROCE;
    p->src_qpn = qp->qpn;
    p->src_node = (uint16_t)h->id;
    p->dst_node = (uint16_t)qp->attr.dest_host;
    rs_link_frame(p, &qp->path); /* the link header: MACs, IPv4, UDP source port, ECT, PFC priority */
    p->opcode = opcode;
    p->pkey = RS_DEFAULT_PKEY;
    p->dest_qpn = qp->attr.dest_qp_num;
    p->psn = psn & RS_PSN_MASK;
    return p;
}

void rs_nic_send_ctrl(rs_transport *tp, rs_host *h, rs_pkt *pkt) { rs_port_send_ctrl(&tp->net, &h->port, pkt); }

/* ---- the transmit scheduler ----
 * A QP with something to send waits in exactly one place (qp->active, enum rs_sched):
 *   RS_SCHED_RING    the round-robin ring of its PFC priority (can send unless that priority is
 *                    paused by a received PFC frame: a paused ring is skipped as a whole)
 *   RS_SCHED_PACED   the pace heap, until its rate limiter's next_tx_ps (h->pace fires then)
 * Rings take turns packet by packet, as a NIC's traffic classes under equal weights.  Picking a
 * frame costs O(log QPs) however many QPs are paused or rate limited, not a walk over them. */
enum rs_sched { RS_SCHED_IDLE = 0, RS_SCHED_RING = 1, RS_SCHED_PACED = 2 };

/* circular doubly-linked ring through act_next/act_prev */
static void ring_add_tail(rs_qp **head, rs_qp *qp)
{
    if (!*head) {
        qp->act_next = qp->act_prev = qp;
        *head = qp;
        return;
    }
    rs_qp *h = *head;
    qp->act_prev = h->act_prev;
    qp->act_next = h;
    h->act_prev->act_next = qp;
    h->act_prev = qp;
}

static void ring_remove(rs_qp **head, rs_qp *qp)
{
    if (qp->act_next == qp) {
        *head = NULL;
    } else {
        qp->act_prev->act_next = qp->act_next;
        qp->act_next->act_prev = qp->act_prev;
        if (*head == qp)
            *head = qp->act_next;
    }
    qp->act_next = qp->act_prev = NULL;
}

/* pace heap: binary min-heap on (next_tx_ps, qpn); pace_pos is each QP's index + 1 */
static int pace_less(const rs_qp *a, const rs_qp *b)
{
    return a->next_tx_ps < b->next_tx_ps || (a->next_tx_ps == b->next_tx_ps && a->qpn < b->qpn);
}

static void pace_place(rs_host *h, uint32_t i, rs_qp *qp)
{
    h->pace_heap[i] = qp;
    qp->pace_pos = i + 1;
}

static void pace_sift(rs_host *h, uint32_t i)
{
    rs_qp *qp = h->pace_heap[i];
    while (i > 0 && pace_less(qp, h->pace_heap[(i - 1) / 2])) {
        pace_place(h, i, h->pace_heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->pace_len)
            break;
        if (c + 1 < h->pace_len && pace_less(h->pace_heap[c + 1], h->pace_heap[c]))
            c++;
        if (!pace_less(h->pace_heap[c], qp))
            break;
        pace_place(h, i, h->pace_heap[c]);
        i = c;
    }
    pace_place(h, i, qp);
}

static void pace_remove(rs_host *h, rs_qp *qp)
{
    uint32_t i = qp->pace_pos - 1;
    qp->pace_pos = 0;
    if (--h->pace_len != i) {
        pace_place(h, i, h->pace_heap[h->pace_len]);
        pace_sift(h, i);
    }
}

static void arm_pace(rs_transport *tp, rs_host *h)
{
    if (h->pace_len) {
        int64_t t = h->pace_heap[0]->next_tx_ps;
        if (!h->pace.armed || h->pace.when_ps > t)
            rs_engine_arm(&tp->net.eng, &h->pace, t);
    }
}

static int prio_of(const rs_qp *qp)
{
    /* from the address vector's traffic class, not the path: a UD QP has none (its datagrams'
     * priorities are their address handles') and rings with traffic class 0 */
    return rs_port_dscp_prio(&qp->host->port, (uint8_t)((qp->attr.traffic_class >> 2) & 63u));
}

static void to_ring(rs_host *h, rs_qp *qp)
{
    qp->ring_prio = (uint8_t)prio_of(qp);
    ring_add_tail(&h->ring[qp->ring_prio], qp);
    h->ring_len[qp->ring_prio]++;
    h->ring_mask |= (uint8_t)(1u << qp->ring_prio);
    qp->active = RS_SCHED_RING;
}

static void off_ring(rs_host *h, rs_qp *qp)
{
    ring_remove(&h->ring[qp->ring_prio], qp);
    h->ring_len[qp->ring_prio]--;
    if (!h->ring[qp->ring_prio])
        h->ring_mask &= (uint8_t)~(1u << qp->ring_prio);
}

/* A QP its rate limiter holds: from its ring to the pace heap. 0, or RS_ERR_NOMEM. */
static int to_pace(rs_transport *tp, rs_host *h, rs_qp *qp)
{
    if (h->pace_len == h->pace_cap) { /* grows with QPs held at once (rare) */
        uint32_t cap = h->pace_cap ? 2 * h->pace_cap : 16;
        rs_qp **n = realloc(h->pace_heap, cap * sizeof(*n));
        if (!n) {
            tp->net.eng.failed = 1;
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for the NIC pace heap");
        }
        h->pace_heap = n;
        h->pace_cap = cap;
    }
    off_ring(h, qp);
    qp->active = RS_SCHED_PACED;
    pace_place(h, h->pace_len++, qp);
    pace_sift(h, h->pace_len - 1);
    return RS_OK;
}

static void unschedule(rs_host *h, rs_qp *qp)
{
    if (qp->active == RS_SCHED_RING)
        off_ring(h, qp);
    else if (qp->active == RS_SCHED_PACED)
        pace_remove(h, qp);
    qp->active = RS_SCHED_IDLE;
}

/* Responses (READ data, ACKs queued behind it) go before the QP's own requests. */
static int has_work(const rs_transport *tp, const rs_qp *qp)
{
    return qp->respq_head != NULL || rs_req_can_send(tp, qp);
}

void rs_nic_wake(rs_transport *tp, rs_qp *qp)
{
    rs_host *h = qp->host;
    if (qp->active == RS_SCHED_PACED && qp->respq_head) { /* responses are not rate limited */
        pace_remove(h, qp);
        to_ring(h, qp);
    } else if (qp->active == RS_SCHED_IDLE && has_work(tp, qp)) {
        to_ring(h, qp);
    }
    rs_port_kick(&tp->net, &h->port);
}

/* Called by rs_qp_to_error / destroy so the scheduler never sees a dead QP. */
void rs_nic_forget(rs_host *h, rs_qp *qp) { unschedule(h, qp); }

/* Below this many QPs on a host theirs stay in the caches and prefetching them costs more than it
 * saves (8 DCQCN flows: 0.171 -> 0.182 s with it, 5 alternating rounds). */
#define PREFETCH_MIN_QPS 64

/* The send side's lines of a QP, with its CC state when the host runs CC (qp.h). */
RS_PREFETCH_HELPER prefetch_send_side(const rs_host *h, const rs_qp *qp)
{
    rs_qp_prefetch_requester(qp);
    if (h->cc.kind != RS_CC_NONE)
        rs_qp_prefetch_cc(qp);
}

/* The next frame of the ring of priority p (its QPs without work leave, rate-limited ones go to the
 * pace heap), or NULL when the ring has none now. */
static rs_pkt *ring_next(rs_transport *tp, rs_host *h, int p)
{
    while (h->ring[p]) {
        rs_qp *qp = h->ring[p];
        if (!has_work(tp, qp)) {
            unschedule(h, qp);
            continue;
        }
        if (!qp->respq_head && rs_req_paced(tp, qp)) {
            if (to_pace(tp, h, qp) != RS_OK)
                return NULL;
            continue;
        }
        h->ring[p] = qp->act_next; /* round robin: the next QP goes first next time */
        if (h->qpns.live > PREFETCH_MIN_QPS)
            prefetch_send_side(h, qp->act_next);
        rs_pkt *out = qp->respq_head ? rs_respq_next(tp, qp) : rs_req_build(tp, qp);
        if (out)
            return out;
    }
    return NULL;
}

/* Control frames first (the oldest whose priority is not paused), then data: the rings of the
 * priorities not paused take turns, round robin over QPs within each. */
rs_pkt *rs_nic_next_frame(rs_transport *tp, rs_host *h)
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
    while (h->pace_len && h->pace_heap[0]->next_tx_ps <= tp->net.eng.now_ps) { /* rate limiters that let go */
        rs_qp *qp = h->pace_heap[0];
        pace_remove(h, qp);
        to_ring(h, qp);
    }
    rs_pkt *out = NULL;
    unsigned ready = h->ring_mask & ~(unsigned)port->paused_mask;
    /* rotate so that bit 0 is rr_prio: the rings take turns from there */
    unsigned rot = ((ready | ready << 8) >> h->rr_prio) & 0xFFu;
    for (; rot && !out && !tp->net.eng.failed; rot &= rot - 1) {
        int p = (h->rr_prio + __builtin_ctz(rot)) & 7;
        out = ring_next(tp, h, p);
        if (out)
            h->rr_prio = (uint8_t)((p + 1) & 7);
    }
    /* With a frame, the port asks rs_nic_idle_after next: it arms the pace timer only if the port
     * goes idle after this frame (else the transmit-done pulls released QPs; a pace event while
     * the port is busy would do nothing). */
    if (!out)
        arm_pace(tp, h);
    return out;
}

/* Only a few QPs of the rings are examined (the common case of one or a few per NIC); with more,
 * the port keeps its transmit-done event, decided from the ring sizes without touching a QP (the
 * next QP's lines, prefetched by ring_next, are still loading). */
#define IDLE_SCAN_QPS 4

int rs_nic_idle_after(rs_transport *tp, rs_host *h, int64_t free_ps)
{
    const rs_port *port = &h->port;
    if (port->ctrl_head)
        return 0;
    /* the rings of priorities not paused (a pause's end kicks the port) */
    unsigned rings = h->ring_mask & ~(unsigned)port->paused_mask;
    uint32_t queued = 0;
    for (unsigned m = rings; m; m &= m - 1)
        queued += h->ring_len[__builtin_ctz(m)];
    if (queued > IDLE_SCAN_QPS)
        return 0;
    int64_t wake = INT64_MAX; /* a held QP stays in its ring (no heap traffic for a few QPs) */
    for (unsigned m = rings; m; m &= m - 1) {
        int p = __builtin_ctz(m);
        rs_qp *qp = h->ring[p];
        do {
            if (has_work(tp, qp)) {
                if (qp->respq_head || qp->next_tx_ps <= free_ps)
                    return 0; /* it can go when the port is free */
                if (qp->next_tx_ps < wake)
                    wake = qp->next_tx_ps;
            }
            qp = qp->act_next;
        } while (qp != h->ring[p]);
    }
    if (h->pace_len && h->pace_heap[0]->next_tx_ps < wake)
        wake = h->pace_heap[0]->next_tx_ps;
    if (wake <= free_ps)
        return 0;
    if (wake != INT64_MAX && (!h->pace.armed || h->pace.when_ps > wake))
        rs_engine_arm(&tp->net.eng, &h->pace, wake);
    return 1;
}

static int is_response(uint8_t op)
{
    return op >= RS_OP_READ_RESP_FIRST && op <= RS_OP_ATOMIC_ACK;
}

void rs_nic_frame_coming(rs_host *h, const rs_pkt *pkt)
{
    if (pkt->kind != RS_PKT_ROCE || h->qpns.live <= PREFETCH_MIN_QPS)
        return;
    const rs_qp *qp = rs_host_qp(h, pkt->dest_qpn);
    if (!qp)
        return;
    if (is_response(pkt->opcode) || pkt->opcode == RS_OP_CNP)
        prefetch_send_side(h, qp);
    else
        rs_qp_prefetch_responder(qp, (pkt->tos & 3u) == 3u);
}

void rs_nic_receive(rs_transport *tp, rs_host *h, rs_pkt *pkt)
{
    /* What the NIC cannot parse, and frames whose ICRC is wrong, are dropped silently and counted
     * before any transport state is looked at (IBA 9.7.8: no response for an invalid packet; rxe
     * rxe_recv.c: a failed header check or rxe_icrc_check drops it).  The scripted peer's NIC
     * too: what it receives passed the same checks. */
    if (pkt->kind == RS_PKT_RAW || pkt->icrc_bad) {
        if (pkt->kind == RS_PKT_RAW)
            h->rx_malformed++;
        else
            h->rx_bad_icrc++;
        rs_pkt_release(&tp->pool, pkt);
        return;
    }
    if (h->scripted) {
        rs_peer_deliver(tp, h, pkt);
        return;
    }
    rs_qp *qp = pkt->kind == RS_PKT_ROCE ? rs_host_qp(h, pkt->dest_qpn) : NULL;
    if (!qp) {
        h->rx_unknown_qp += (pkt->kind == RS_PKT_ROCE);
        if (pkt->kind == RS_PKT_ROCE)
            rs_trace_host_drop(&tp->net.eng, h->id, pkt, RS_TR_DROP_UNKNOWN_QP);
        rs_pkt_release(&tp->pool, pkt);
        return;
    }
    if (pkt->opcode == RS_OP_CNP) {
        rs_cc_on_cnp(tp, qp);
        rs_pkt_release(&tp->pool, pkt);
        return;
    }
    if ((pkt->tos & 3u) == 3u) /* ECN CE: congestion on the way here */
        rs_cc_np_on_ce(tp, qp);
    int ud_op = pkt->opcode == RS_OP_UD_SEND_ONLY || pkt->opcode == RS_OP_UD_SEND_ONLY_IMM;
    if (qp->is_ud || ud_op) { /* a QP takes its own transport's opcodes only (rxe check_type_state) */
        if (qp->is_ud && ud_op) {
            rs_ud_receive(tp, qp, pkt);
        } else {
            h->rx_bad_state++;
            rs_pkt_release(&tp->pool, pkt);
        }
        return;
    }
    int uc_op = (pkt->opcode & 0xE0u) == 0x20u && pkt->opcode <= 0x2Bu; /* UC SEND/WRITE (IBA 9.2.1) */
    if (qp->is_uc || uc_op) {
        if (qp->is_uc && uc_op) {
            pkt->opcode &= 0x1Fu; /* the same packet as RC's: the UC responder works on RC's values */
            rs_uc_receive(tp, qp, pkt);
        } else {
            h->rx_bad_state++;
            rs_pkt_release(&tp->pool, pkt);
        }
        return;
    }
    if (is_response(pkt->opcode))
        rs_comp_receive(tp, qp, pkt);
    else
        rs_resp_receive(tp, qp, pkt);
}

/* ---- RoCE loopback ----
 * A QP whose address vector names its own host (rdma-core's tests connect two QPs of one device)
 * sends frames that never appear on the link, as NICs and rxe loop them back internally (rxe:
 * rxe_net.c hands a packet for a local address to its own receive path).  The frame still takes
 * the transmit pipeline for its serialisation time at the port rate, so the scheduler, pacing
 * and PFC priorities work as for any frame; it reaches the receive path when that time is over.
 * It is neither captured nor traced (it is not on a link) and no link counter sees it.  The port
 * recognises such a frame (its destination node is the port's own) and hands it back here with
 * its serialisation time (link/port.c). */
void rs_nic_loopback(rs_transport *tp, rs_host *h, rs_pkt *pkt, int64_t ser_ps)
{
    h->lb_frames++;
    pkt->t_arrive_ps = tp->net.eng.now_ps + ser_ps; /* one after another: the FIFO stays in time order */
    pkt->next = NULL;
    if (h->lb_tail) {
        h->lb_tail->next = pkt;
    } else {
        h->lb_head = pkt;
        rs_engine_arm(&tp->net.eng, &h->loopback, pkt->t_arrive_ps);
    }
    h->lb_tail = pkt;
}

void rs_nic_loopback_arrival(rs_transport *tp, rs_host *h)
{
    rs_pkt *pkt = h->lb_head;
    if (!pkt)
        return;
    h->lb_head = pkt->next;
    if (!h->lb_head)
        h->lb_tail = NULL;
    else
        rs_engine_arm(&tp->net.eng, &h->loopback, h->lb_head->t_arrive_ps);
    pkt->next = NULL;
    pkt->t_arrive_ps = tp->net.eng.now_ps;
    rs_nic_receive(tp, h, pkt); /* may loop more frames: the FIFO is consistent by now */
}

/* ---- the host port's client (link/port.h): the port's calls up into this NIC ---- */

static rs_pkt *client_next_frame(void *ctx)
{
    rs_host *h = ctx;
    return rs_nic_next_frame(h->tp, h);
}

static int client_idle_after(void *ctx, int64_t free_ps)
{
    rs_host *h = ctx;
    return rs_nic_idle_after(h->tp, h, free_ps);
}

static void client_loopback(void *ctx, rs_pkt *pkt, int64_t ser_ps)
{
    rs_host *h = ctx;
    rs_nic_loopback(h->tp, h, pkt, ser_ps);
}

static void client_frame_coming(void *ctx, const rs_pkt *pkt) { rs_nic_frame_coming(ctx, pkt); }

static void client_receive(void *ctx, rs_pkt *pkt)
{
    rs_host *h = ctx;
    rs_nic_receive(h->tp, h, pkt);
}

void rs_nic_qps_changed(rs_host *h)
{
    if (h->port.client.ctx != h)
        return; /* the port's client multiplexes two transports (sim/nic_mux.c): no hint */
    h->port.client.frame_coming = h->qpns.live > PREFETCH_MIN_QPS ? client_frame_coming : NULL;
}

rs_port_client rs_nic_port_client(rs_host *h)
{
    return (rs_port_client){.ctx = h,
                            .next_frame = client_next_frame,
                            .idle_after = client_idle_after,
                            .loopback = client_loopback,
                            .frame_coming = NULL, /* rs_nic_qps_changed installs it */
                            .receive = client_receive};
}
