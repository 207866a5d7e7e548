/* A host's Ultra Ethernet endpoint: PDC tables, the frames of pds.c's decisions, the transmit
 * round robin over PDCs with data, the retransmit timers, and bulk flows over PDCs. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/cc_nscc.h"
#include "uet/uet.h"

static void cc_loss(rs_uet *u, rs_pdc *c, uint64_t lost_bytes, int trimmed);

/* ---- PDC ids: cyclic 1..65535 (an id is not reused while a PDC has it), open addressing ---- */

static uint32_t id_hash(uint16_t id, uint32_t cap) { return ((uint32_t)id * 40503u) & (cap - 1u); }

static rs_pdc *ids_find(const rs_uet_ids *t, uint16_t id)
{
    if (!t->cap)
        return NULL;
    for (uint32_t i = id_hash(id, t->cap);; i = (i + 1u) & (t->cap - 1u)) {
        if (!t->slot[i])
            return NULL;
        if (t->key[i] == id && t->slot[i] != (rs_pdc *)t) /* (rs_pdc *)t marks a deleted entry */
            return t->slot[i];
    }
}

/* A fresh table without the deleted entries, twice as large when a quarter of it is live: the
 * searches end at an empty slot, so deleted entries must not fill it. */
static int ids_rebuild(rs_uet_ids *t)
{
    uint32_t cap = !t->cap ? 64u : (t->live + 1u) * 4u > t->cap ? t->cap * 2u : t->cap;
    rs_pdc **slot = calloc(cap, sizeof(*slot));
    uint16_t *key = calloc(cap, sizeof(*key));
    if (!slot || !key) {
        free(slot);
        free(key);
        return -1;
    }
    for (uint32_t i = 0; i < t->cap; i++) {
        if (!t->slot[i] || t->slot[i] == (rs_pdc *)t)
            continue;
        uint32_t j = id_hash(t->key[i], cap);
        while (slot[j])
            j = (j + 1u) & (cap - 1u);
        slot[j] = t->slot[i];
        key[j] = t->key[i];
    }
    free(t->slot);
    free(t->key);
    t->slot = slot;
    t->key = key;
    t->cap = cap;
    t->dead = 0;
    return 0;
}

/* A fresh id for c: 0 when 65535 are in use or out of memory. */
static uint16_t ids_add(rs_uet_ids *t, rs_pdc *c)
{
    if (t->live >= 65535u || ((t->live + t->dead + 1u) * 2u > t->cap && ids_rebuild(t) != 0))
        return 0;
    uint16_t id;
    do {
        id = ++t->next ? t->next : ++t->next;
    } while (ids_find(t, id));
    uint32_t i = id_hash(id, t->cap);
    while (t->slot[i] && t->slot[i] != (rs_pdc *)t)
        i = (i + 1u) & (t->cap - 1u);
    if (t->slot[i]) /* a deleted entry's slot, used again */
        t->dead--;
    t->slot[i] = c;
    t->key[i] = id;
    t->live++;
    return id;
}

static void ids_del(rs_uet_ids *t, uint16_t id)
{
    if (!t->cap)
        return;
    for (uint32_t i = id_hash(id, t->cap); t->slot[i]; i = (i + 1u) & (t->cap - 1u)) {
        if (t->key[i] == id && t->slot[i] != (rs_pdc *)t) {
            t->slot[i] = (rs_pdc *)t;
            t->live--;
            t->dead++;
            return;
        }
    }
}

/* ---- endpoints ---- */

rs_uet_ep *rs_uet_ep_get(rs_uet *u, int host)
{
    if (host < 0 || (uint32_t)host >= u->net->n_hosts)
        return NULL;
    if ((uint32_t)host >= u->n_eps) {
        uint32_t n = u->net->n_hosts;
        rs_uet_ep **ne = realloc(u->eps, n * sizeof(*ne));
        if (!ne)
            return NULL;
        memset(ne + u->n_eps, 0, (n - u->n_eps) * sizeof(*ne));
        u->eps = ne;
        u->n_eps = n;
    }
    if (u->eps[host])
        return u->eps[host];
    rs_uet_ep *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return NULL;
    ep->host = host;
    ep->port = u->net->host_ports[host];
    u->eps[host] = ep;
    return ep;
}

static void ring_add(rs_uet_ep *ep, rs_pdc *c)
{
    if (c->act_next)
        return;
    ep->ring_len++;
    if (!ep->ring) {
        c->act_next = c->act_prev = c;
        ep->ring = c;
        return;
    }
    rs_pdc *h = ep->ring;
    c->act_prev = h->act_prev;
    c->act_next = h;
    h->act_prev->act_next = c;
    h->act_prev = c;
}

static void ring_remove(rs_uet_ep *ep, rs_pdc *c)
{
    if (!c->act_next)
        return;
    ep->ring_len--;
    if (c->act_next == c) {
        ep->ring = NULL;
    } else {
        c->act_prev->act_next = c->act_next;
        c->act_next->act_prev = c->act_prev;
        if (ep->ring == c)
            ep->ring = c->act_next;
    }
    c->act_next = c->act_prev = NULL;
}

static rs_pkt *new_frame(rs_uet *u, const rs_link_path *path, int src, int dst)
{
    rs_pkt *p = rs_pkt_alloc(u->pool);
    if (!p) {
        u->net->eng.failed = 1;
        rs_engine_fail(&u->net->eng, RS_ERR_NOMEM, "out of memory allocating a packet");
        return NULL;
    }
    memset(&p->uet, 0, sizeof p->uet); /* the pool clears only the common fields */
    p->kind = RS_PKT_UET;
    p->src_node = (uint16_t)src;
    p->dst_node = (uint16_t)dst;
    rs_link_frame(p, path);
    return p;
}

static void send_ctrl(rs_uet *u, rs_uet_ep *ep, rs_pkt *p)
{
    p->next = NULL;
    if (ep->ctrl_tail)
        ep->ctrl_tail->next = p;
    else
        ep->ctrl_head = p;
    ep->ctrl_tail = p;
    rs_port_kick(u->net, ep->port);
}

static rs_pkt *build_data(rs_uet *u, rs_pdc *c, const rs_pds_tx *tx)
{
    rs_pkt *p = new_frame(u, &c->path, c->src, c->dst);
    if (!p)
        return NULL;
    uint16_t ev = rs_uet_lb_next(&c->lb); /* oblivious spraying or REPS (uet/lb.c) */
    c->slots[tx->psn & (RS_PDS_SLOTS - 1u)].ev = ev;
    p->udp_sport = ev; /* what the switches hash: each packet may take another path */
    p->psn = c->prm.mode == RS_UET_RUDI ? rs_pds_rudi_pkt_id(c, tx->psn) : tx->psn; /* RUDI: pkt_id */
    p->payload_len = tx->len;
    p->trim_ok = c->prm.trim_ok; /* a trimming switch may cut it to its headers (link/trim.c) */
    rs_uet_hdr *h = &p->uet;
    static const uint8_t req_type[] = {[RS_UET_RUD] = RS_UET_PDS_RUD_REQ, [RS_UET_ROD] = RS_UET_PDS_ROD_REQ,
                                       [RS_UET_RUDI] = RS_UET_PDS_RUDI_REQ, [RS_UET_UUD] = RS_UET_PDS_UUD_REQ};
    h->type = req_type[c->prm.mode];
    h->next_hdr = RS_UET_NH_REQ_STD;
    h->flags = (uint8_t)((tx->retx ? RS_UET_F_RETX : 0u) | (tx->ar ? RS_UET_F_AR : 0u));
    int32_t clear = (int32_t)(c->una_psn - tx->psn); /* clear_psn: below it nothing is outstanding */
    h->psn_off = (int16_t)(clear < INT16_MIN ? INT16_MIN : clear);
    h->spdcid = c->src_id;
    h->dpdcid = c->dst_id;
    if (c->syn) { /* no ACK yet: the target learns the start PSN from any of these (pdc_setup.c) */
        h->flags |= RS_UET_F_SYN;
        h->dpdcid = rs_pdc_syn_field(c, tx->psn);
        u->eps[c->src]->st.syn_sent++;
    }
    h->ses_opcode = c->ses_opcode;
    h->ses_flags = (uint8_t)((tx->som ? RS_UET_SES_SOM : 0u) | (tx->eom ? RS_UET_SES_EOM : 0u));
    h->msg_id = c->msg_id;
    h->initiator = (uint32_t)c->src;
    h->mem_key = c->dst_id; /* the target's buffer key: the PDC's (bulk flows place no bytes) */
    h->message_offset = tx->som ? 0 : tx->off;
    h->request_length = (uint32_t)c->msg_len;
    if (c->prm.cc == RS_UET_CC_RCCC)
        rs_uet_rccc_on_data(c, p); /* spends credit, carries the request (RUD_CC_REQ) */
    rs_ses_fill(u, c, p, tx->off); /* the bytes, when the flow has them (ses.c) */
    if (c->read_role)
        rs_ses_read_fill(c, tx, p); /* a READ request or a response with data (ses_read.c) */
    /* the retransmit timer; UUD: no retransmission, the timer only ends the flow `rto` after its
     * last packet if the target did not get every byte (rs_uet_rto) */
    if (!c->rto.armed && (c->prm.mode != RS_UET_UUD || tx->eom))
        rs_engine_arm(&u->net->eng, &c->rto, u->net->eng.now_ps + c->rto_ps);
    return p;
}

rs_pkt *rs_uet_next_frame(rs_uet_ep *ep)
{
    rs_port *port = ep->port;
    rs_pkt *prev = NULL;
    for (rs_pkt *p = ep->ctrl_head; p; prev = p, p = p->next) { /* ACKs first, unless paused */
        if ((port->paused_mask >> p->priority) & 1u)
            continue;
        if (prev)
            prev->next = p->next;
        else
            ep->ctrl_head = p->next;
        if (ep->ctrl_tail == p)
            ep->ctrl_tail = prev;
        p->next = NULL;
        return p;
    }
    for (uint32_t n = ep->ring_len; n && ep->ring; n--) {
        rs_pdc *c = ep->ring;
        if ((port->paused_mask >> c->path.priority) & 1u) {
            ep->ring = c->act_next; /* its priority is paused: the others may go */
            continue;
        }
        rs_pds_tx tx;
        if (c->prm.cc == RS_UET_CC_RCCC && rs_pds_can_send(c) && !rs_uet_rccc_may_send(c->uet, ep, c)) {
            ring_remove(ep, c); /* out of credit: a grant wakes it (rccc_pds.c) */
            continue;
        }
        if (rs_pds_next(c, c->uet->net->eng.now_ps, &tx)) {
            ep->ring = c->act_next; /* round robin: the next PDC goes first next time */
            if (tx.eom && !tx.retx && c->uet->flow_sent && c->flow_ref) /* the next message may go */
                c->uet->flow_sent(c->uet->flow_ctx, c->flow_ref, c);
            return build_data(c->uet, c, &tx);
        }
        ring_remove(ep, c); /* nothing to send until an ACK, NACK or timeout */
    }
    return NULL;
}

int rs_uet_idle_after(rs_uet_ep *ep, int64_t free_ps)
{
    (void)free_ps;
    return !ep->ctrl_head && !ep->ring;
}

static void complete(rs_uet *u, rs_uet_ep *ep, rs_pdc *c);
static void pdc_free(rs_uet *u, rs_pdc *c);
static rs_pdc *reverse_of(rs_pdc *c);
static void idle_touch(rs_uet *u, rs_pdc *c);

/* Initiator: the CLOSE control packet for close_psn (again after a timeout, with RETX), or give
 * up after RS_PDC_CLOSE_TRIES of them. */
static void send_close(rs_uet *u, rs_pdc *c)
{
    rs_uet_ep *ep = u->eps[c->src];
    if (c->close_sends >= RS_PDC_CLOSE_TRIES) {
        ep->st.close_gave_up++;
        pdc_free(u, c);
        return;
    }
    rs_pkt *p = new_frame(u, &c->path, c->src, c->dst);
    if (!p)
        return;
    p->udp_sport = c->path.udp_sport;
    p->psn = c->close_psn;
    rs_uet_hdr *h = &p->uet;
    h->type = RS_UET_PDS_CTRL;
    h->next_hdr = RS_UET_CTL_CLOSE;
    h->flags = (uint8_t)(RS_UET_F_AR | (c->close_sends ? RS_UET_F_RETX : 0u));
    h->spdcid = c->src_id;
    h->dpdcid = c->dst_id;
    if (c->close_sends)
        rs_uet_rto_backoff(c);
    c->close_sends++;
    ep->st.closes_sent++;
    send_ctrl(u, ep, p);
    rs_engine_arm(&u->net->eng, &c->rto, u->net->eng.now_ps + c->rto_ps);
}

void rs_uet_rto(rs_uet *u, rs_pdc *c)
{
    if (!c->live)
        return;
    if (c->prm.mode == RS_UET_UUD) { /* what did not arrive by now is lost */
        complete(u, u->eps[c->src], c);
        return;
    }
    if (c->closing) { /* the CLOSE or its ACK was lost */
        send_close(u, c);
        return;
    }
    uint32_t lost;
    int64_t due = rs_pds_on_rto(c, u->net->eng.now_ps, &lost);
    if (lost) {
        rs_uet_rto_backoff(c); /* (uet/rto.c) the resends wait longer */
        due = rs_pds_rto_due(c);
    }
    if (due != INT64_MAX)
        rs_engine_arm(&u->net->eng, &c->rto, due);
    if (lost) {
        rs_uet_lb_on_timeout(&c->lb); /* a path may have failed: REPS freezes */
        cc_loss(u, c, (uint64_t)lost * c->prm.mtu, 0);
        rs_uet_ep *ep = u->eps[c->src];
        ring_add(ep, c);
        rs_port_kick(u->net, ep->port);
    }
}

/* ---- congestion control: the PDC's window from its rs_cc_algo ---- */

static void cc_window(rs_pdc *c)
{
    uint64_t w = c->cc->window_bytes ? c->cc->window_bytes(c->cc_state, c->cc_params) : 0;
    uint64_t hi = (uint64_t)RS_PDS_SLOTS * c->prm.mtu;
    if (!w || w > hi)
        w = hi;
    c->window_bytes = (uint32_t)(w < c->prm.mtu ? c->prm.mtu : w);
}

static void cc_loss(rs_uet *u, rs_pdc *c, uint64_t lost_bytes, int trimmed)
{
    if (!c->cc || !c->cc->on_loss)
        return;
    c->cc->on_loss(c->cc_state, c->cc_params, u->net->eng.now_ps, lost_bytes, trimmed);
    cc_window(c);
}

static void complete(rs_uet *u, rs_uet_ep *ep, rs_pdc *c)
{
    rs_timer_cancel(&c->rto);
    ring_remove(ep, c);
    if (u->flow_complete && c->flow_ref)
        u->flow_complete(u->flow_ctx, c->flow_ref, c);
}

/* Initiator: an ACK or NACK for PDC c. */
static void initiator_receive(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt)
{
    if (pkt->uet.type == RS_UET_PDS_NACK && pkt->uet.nack_code == RS_UET_NACK_NO_PDC_AVAIL) {
        /* the target has no PDC for it yet: the SYN requests go again at the retransmit timeout */
        c->st.nacks_rcvd++;
        return;
    }
    if (rs_pdc_has_setup(c))
        rs_pdc_on_ack(c, pkt->uet.spdcid); /* the first answer ends SYN: the target's id */
    if (c->closing) { /* only the CLOSE's ACK matters now */
        if ((pkt->uet.type == RS_UET_PDS_ACK || pkt->uet.type == RS_UET_PDS_ACK_CC) &&
            rs_pdc_close_acked(c, pkt->uet.cack_psn)) {
            ep->st.pdcs_released++;
            pdc_free(u, c);
        }
        return;
    }
    if (pkt->uet.type == RS_UET_PDS_NACK &&
        (pkt->uet.nack_code == RS_UET_NACK_INV_DPDCID || pkt->uet.nack_code == RS_UET_NACK_CLOSING)) {
        /* the target does not know the PDC (any more): nothing sent again will be placed; the
         * message ends undelivered and the PDC goes without a close */
        c->failed = 1;
        c->ses_done = 1;
        c->ses_rc = RS_UET_RC_UNDELIVERABLE;
        c->ses_mod_len = 0;
        c->st.nacks_rcvd++;
        complete(u, ep, c);
        return;
    }
    if (c->prm.cc == RS_UET_CC_RCCC)
        rs_uet_rccc_on_feedback(c, pkt);
    if (pkt->uet.type == RS_UET_PDS_NACK) {
        if (pkt->uet.nack_code == RS_UET_NACK_TRIMMED)
            c->st.trims_rcvd++;
        const rs_pds_slot zero = {0}, *s = rs_pds_slot_at(c, pkt->psn, &zero);
        uint16_t ev = s->ev;
        uint32_t lost = rs_pds_on_nack(c, pkt->psn, pkt->uet.nack_code, pkt->uet.nack_payload);
        if (!lost)
            return;
        if (pkt->uet.nack_code != RS_UET_NACK_ROD_OOO) /* reordering is no path's fault */
            rs_uet_lb_on_loss(&c->lb, ev);
        cc_loss(u, c, lost == 1 ? s->len : (uint64_t)lost * c->prm.mtu, pkt->uet.nack_code == RS_UET_NACK_TRIMMED);
    } else {
        rs_pds_ack_res r;
        int ecn = (pkt->uet.flags & RS_UET_F_M) != 0;
        int rudi = pkt->uet.type == RS_UET_PDS_RUDI_RESP;
        c->st.ecn_acks += (uint64_t)ecn;
        rs_uet_lb_on_ack(&c->lb, pkt->udp_sport, ecn); /* the ACK echoes the entropy it acknowledges */
        uint32_t ack_psn = rudi ? rs_pds_rudi_psn(c, pkt->psn) : pkt->uet.cack_psn + (uint32_t)(int32_t)pkt->uet.psn_off;
        const rs_pds_slot *s = &c->slots[ack_psn & (RS_PDS_SLOTS - 1u)];
        int64_t rtt = -1; /* a sample only from a first transmission still unacknowledged (Karn) */
        if ((int32_t)(ack_psn - c->una_psn) >= 0 && (int32_t)(ack_psn - c->next_psn) < 0 &&
            (s->state == RS_PDS_SENT || s->state == RS_PDS_LOST) && s->sends == 1)
            rtt = u->net->eng.now_ps - s->sent_ps;
        int fell = rs_uet_rto_sample(c, rtt); /* the retransmit timeout follows the RTT (uet/rto.c) */
        if (rudi)
            rs_pds_on_resp(c, ack_psn, &r);
        else
            rs_pds_on_ack(c, &pkt->uet, &r);
        if (r.acked_bytes)
            fell |= rs_uet_rto_progress(c);
        if (fell && c->rto.armed && c->rto.when_ps > u->net->eng.now_ps + c->rto_ps)
            /* the timeout fell: fire no later than it says (early is harmless: the timer finds
             * what is due and sets itself again) */
            rs_engine_arm(&u->net->eng, &c->rto, u->net->eng.now_ps + c->rto_ps);
        if (c->cc) {
            rs_cc_ack a = {.now_ps = u->net->eng.now_ps, .rtt_ps = rtt, .acked_bytes = r.acked_bytes,
                           .inflight_bytes = c->inflight_bytes, .ack_psn = ack_psn, .snd_nxt_psn = c->next_psn,
                           .ce_echo = (uint8_t)ecn};
            if (c->cc->on_ack)
                c->cc->on_ack(c->cc_state, c->cc_params, &a);
            cc_window(c);
            if (r.lost)
                cc_loss(u, c, (uint64_t)r.lost * c->prm.mtu, 0);
        }
        /* the message completes on its SES response (ses.c); RUDI's responses carry none */
        if (rudi ? r.done && rs_ses_unanswered(c) : rs_ses_on_response(c, pkt) || rs_ses_read_acked(c, r.done)) {
            complete(u, ep, c);
            return;
        }
    }
    if (rs_pds_can_send(c)) {
        ring_add(ep, c);
        rs_port_kick(u->net, ep->port);
    }
}

/* A NACK's header for the request pkt: its PSN, its entropy echoed, the retransmit flag kept. */
static rs_uet_hdr *nack_header(rs_pkt *a, const rs_pkt *pkt, uint8_t code)
{
    a->udp_sport = pkt->udp_sport;
    a->psn = pkt->psn;
    rs_uet_hdr *h = &a->uet;
    h->type = RS_UET_PDS_NACK;
    h->next_hdr = RS_UET_NH_NONE;
    h->flags = (uint8_t)(pkt->uet.flags & RS_UET_F_RETX);
    h->nack_code = code;
    return h;
}

/* Target: a NACK for the request pkt, with its code and payload, echoing its entropy: TRIMMED for a
 * request a switch cut to its headers (link/trim.c; the PSN is not received, the initiator sends
 * it again at once), ROD_OOO for a ROD request out of order (pds.c). */
static void send_nack(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt, uint8_t code, uint32_t payload)
{
    rs_pkt *a = new_frame(u, &c->back, c->dst, c->src);
    if (!a)
        return;
    rs_uet_hdr *h = nack_header(a, pkt, code);
    h->spdcid = c->dst_id;
    h->dpdcid = c->src_id;
    h->nack_payload = payload;
    send_ctrl(u, ep, a);
}

static void target_receive(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt)
{
    idle_touch(u, c);
    if (c->prm.cc == RS_UET_CC_RCCC)
        rs_uet_rccc_on_request(u, ep, c, pkt);
    if (pkt->trimmed) {
        if (c->prm.mode != RS_UET_UUD) /* UUD: a trimmed packet is a lost one */
            send_nack(u, ep, c, pkt, RS_UET_NACK_TRIMMED, c->rx_max);
        return;
    }
    rs_pds_rx_res r;
    if (c->prm.mode == RS_UET_RUDI) { /* no PDC state: executed (again, if a duplicate) and answered */
        r = (rs_pds_rx_res){.ack = 1};
    } else {
        rs_pds_rx(c, pkt->psn, pkt->psn + (uint32_t)(int32_t)pkt->uet.psn_off, pkt->payload_len,
                  (pkt->uet.flags & RS_UET_F_AR) != 0, &r);
        if (r.nack)
            send_nack(u, ep, c, pkt, r.nack, r.nack_payload);
        if (c->prm.cc == RS_UET_CC_RCCC && r.fresh)
            rs_uet_rccc_on_received(u, ep, pkt);
        if (r.fresh) {
            rs_ses_target_check(c, pkt);
            rs_ses_place(c, pkt);
        }
        if (r.complete && c->read_role == RS_UET_READ_REQ && !rs_ses_read_execute(u, c) &&
            c->tgt_rc == RS_UET_RC_OK)
            return; /* out of memory (the engine failed) */
        if (r.complete && u->flow_received && c->flow_ref)
            u->flow_received(u->flow_ctx, c->flow_ref, c);
        if (r.complete && c->prm.mode == RS_UET_UUD) {
            complete(u, u->eps[c->src], c); /* every byte arrived: nothing more will */
            return;
        }
    }
    if (!r.ack)
        return;
    rs_pkt *a = new_frame(u, &c->back, c->dst, c->src);
    if (!a)
        return;
    a->udp_sport = pkt->udp_sport; /* the entropy of the packet it acknowledges, echoed */
    rs_uet_hdr *h = &a->uet;
    if (c->prm.mode == RS_UET_RUDI) {
        a->psn = pkt->psn; /* its pkt_id */
        h->type = RS_UET_PDS_RUDI_RESP;
        h->next_hdr = RS_UET_NH_NONE;
        h->flags = (uint8_t)(((pkt->tos & 3u) == 3u ? RS_UET_F_M : 0u) | (pkt->uet.flags & RS_UET_F_RETX));
        h->spdcid = c->dst_id; /* not on the wire: RUDI has no PDC ids */
        h->dpdcid = c->src_id;
        send_ctrl(u, ep, a);
        return;
    }
    h->type = RS_UET_PDS_ACK_CC;
    h->next_hdr = RS_UET_NH_NONE;
    h->flags = (uint8_t)(((pkt->tos & 3u) == 3u ? RS_UET_F_M : 0u) | (pkt->uet.flags & RS_UET_F_RETX));
    h->psn_off = r.ack_psn_off;
    h->cack_psn = r.cack_psn;
    h->spdcid = c->dst_id;
    h->dpdcid = c->src_id;
    h->sack_off = r.sack_off;
    h->sack_bitmap = r.sack_bitmap;
    if (c->prm.cc == RS_UET_CC_RCCC)
        rs_uet_rccc_ack(ep, c, h);
    if (c->rx_bytes == c->msg_len && rs_ses_read_answered(c)) /* every byte arrived: each ACK carries the SES response */
        rs_ses_response(c, h);
    send_ctrl(u, ep, a);
}

/* A frame answering pkt from this host, for a PDC it does not know: built from the packet alone. */
static rs_pkt *reply_frame(rs_uet *u, rs_uet_ep *ep, const rs_pkt *pkt)
{
    rs_link_path back;
    rs_port_resolve_path(u->net, ep->port, pkt->src_node, (uint8_t)(pkt->tos & 0xFCu), 0, &back);
    return new_frame(u, &back, ep->host, pkt->src_node);
}

/* Target: a RUD/ROD request without SYN for a PDC id this host does not know (closed, or never
 * opened): NACK INV_DPDCID from the packet alone (its PSN, the ids swapped, its entropy echoed);
 * a SYN request when max_pdcs PDCs are open here: NACK NO_PDC_AVAIL (no id of this host yet). */
static void nack_unknown(rs_uet *u, rs_uet_ep *ep, const rs_pkt *pkt, uint8_t code)
{
    rs_pkt *a = reply_frame(u, ep, pkt);
    if (!a)
        return;
    rs_uet_hdr *h = nack_header(a, pkt, code);
    h->spdcid = code == RS_UET_NACK_INV_DPDCID ? pkt->uet.dpdcid : 0;
    h->dpdcid = pkt->uet.spdcid;
    send_ctrl(u, ep, a);
}

/* Target under PDC pressure (max_pdcs): ask the initiator of each PDC whose message arrived whole
 * here, and that it has not asked yet, to close it - a control packet REQ_CLOSE with the next PSN
 * expected.  An initiator closes a PDC once its message is done; one that sent its CLOSE already
 * sends it again at once (it may have been lost). */
static int may_request_close(rs_uet_ep *ep, rs_pdc *c)
{
    return c->dst == ep->host && c->tgt_live && rs_pdc_has_setup(c) && !c->read_req && !c->close_req_sent &&
           c->rx_bytes == c->msg_len && !reverse_of(c);
}

/* Target: REQ_CLOSE for c (0 when out of frames). */
static int request_close(rs_uet *u, rs_uet_ep *ep, rs_pdc *c)
{
    rs_pkt *p = new_frame(u, &c->back, c->dst, c->src);
    if (!p)
        return 0;
    p->udp_sport = c->back.udp_sport;
    p->psn = c->rx_cack + 1u;
    rs_uet_hdr *h = &p->uet;
    h->type = RS_UET_PDS_CTRL;
    h->next_hdr = RS_UET_CTL_REQ_CLOSE;
    h->spdcid = c->dst_id;
    h->dpdcid = c->src_id;
    c->close_req_sent = 1;
    ep->st.close_reqs_sent++;
    send_ctrl(u, ep, p);
    return 1;
}

static void request_closes(rs_uet *u, rs_uet_ep *ep)
{
    const rs_uet_ids *t = &ep->ids;
    for (uint32_t i = 0; i < t->cap; i++) {
        rs_pdc *c = t->slot[i];
        if (!c || c == (rs_pdc *)t || !may_request_close(ep, c))
            continue;
        if (!request_close(u, ep, c))
            return;
    }
}

/* Target: a packet of c arrived; with idle_close, its idle timer runs from now (armed once, it
 * moves itself on when it fires early: no heap work per packet). */
static void idle_touch(rs_uet *u, rs_pdc *c)
{
    if (!c->prm.idle_close_ps || !rs_pdc_has_setup(c))
        return;
    c->rx_last_ps = u->net->eng.now_ps;
    if (!c->idle.armed) {
        c->idle.ent = rs_ent_host(c->dst); /* it fires at the target */
        rs_engine_arm(&u->net->eng, &c->idle, c->rx_last_ps + c->prm.idle_close_ps);
    }
}

/* The idle-close timer: a target PDC that heard nothing for idle_close_ps with its message whole
 * asks its initiator to close it (once; the initiator closes as on any REQ_CLOSE). */
void rs_uet_idle(rs_uet *u, rs_pdc *c)
{
    if (!c->tgt_live || (uint32_t)c->dst >= u->n_eps || !u->eps[c->dst])
        return;
    int64_t due = c->rx_last_ps + c->prm.idle_close_ps;
    if (due > u->net->eng.now_ps) { /* a packet came since it was armed */
        rs_engine_arm(&u->net->eng, &c->idle, due);
        return;
    }
    rs_uet_ep *ep = u->eps[c->dst];
    if (may_request_close(ep, c))
        request_close(u, ep, c);
}

/* Target: a CLOSE (pdc_setup.c).  c: the PDC it names, or NULL when this host does not know it
 * (closed already: the ACK was lost) - then the ACK is built from the packet alone. */
static void target_close(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt)
{
    if (c && !rs_pdc_close_ok(c, pkt->psn))
        return; /* PSNs below it still missing: the initiator's timer sends it again */
    rs_pkt *a = c ? new_frame(u, &c->back, ep->host, pkt->src_node) : reply_frame(u, ep, pkt);
    if (!a)
        return;
    a->udp_sport = pkt->udp_sport;
    rs_uet_hdr *h = &a->uet;
    h->type = RS_UET_PDS_ACK;
    h->next_hdr = RS_UET_NH_NONE;
    h->flags = (uint8_t)(pkt->uet.flags & RS_UET_F_RETX);
    h->cack_psn = pkt->psn;
    h->spdcid = pkt->uet.dpdcid;
    h->dpdcid = pkt->uet.spdcid;
    send_ctrl(u, ep, a);
    if (c) {
        ids_del(&ep->ids, c->dst_id);
        rs_timer_cancel(&c->idle);
        c->tgt_live = 0;
        ep->n_tgt--;
        ep->st.pdcs_closed++;
    }
}

/* The READ responses riding on request PDC c in its reverse direction (ses_read.c), or NULL. */
static rs_pdc *reverse_of(rs_pdc *c)
{
    rs_pdc *r = c->read_resp;
    return r && r->live && r->read_req == c ? r : NULL;
}

/* Target: the PDC a request names: by dpdcid, or for a SYN request (RUD/ROD) by the initiator's
 * address and spdcid, creating the target's half from the first SYN (pdc_setup.c). */
static rs_pdc *target_pdc(rs_uet *u, rs_uet_ep *ep, const rs_pkt *pkt, int *full)
{
    if (!(pkt->uet.flags & RS_UET_F_SYN) ||
        (pkt->uet.type != RS_UET_PDS_RUD_REQ && pkt->uet.type != RS_UET_PDS_ROD_REQ &&
         pkt->uet.type != RS_UET_PDS_RUD_CC_REQ && pkt->uet.type != RS_UET_PDS_ROD_CC_REQ)) {
        rs_pdc *c = ids_find(&ep->ids, pkt->uet.dpdcid);
        if (c && c->src == ep->host) /* a request on a PDC this host initiated: its reverse direction */
            c = reverse_of(c);
        return c && c->tgt_live && c->dst == ep->host ? c : NULL;
    }
    /* (initiator, spdcid) -> the PDC: the simulator reads it from the initiator's table */
    rs_uet_ep *ie = pkt->src_node < u->n_eps ? u->eps[pkt->src_node] : NULL;
    rs_pdc *c = ie ? ids_find(&ie->ids, pkt->uet.spdcid) : NULL;
    if (!c || !c->live || c->dst != ep->host || !rs_pdc_syn_accept(c, pkt->psn, pkt->uet.dpdcid))
        return NULL;
    if (!c->tgt_live) {
        if (c->closing)
            return NULL; /* a SYN request late after the close */
        if (c->prm.max_pdcs && ep->n_tgt >= c->prm.max_pdcs) {
            *full = 1; /* no PDC resource: NACK NO_PDC_AVAIL, ask idle PDCs to close */
            return NULL;
        }
        c->dst_id = ids_add(&ep->ids, c);
        if (!c->dst_id)
            return NULL; /* 65535 PDCs open here */
        c->tgt_live = 1;
        ep->n_tgt++;
        ep->st.pdcs_created++;
    }
    return c;
}

void rs_uet_receive(rs_uet *u, rs_uet_ep *ep, rs_pkt *pkt)
{
    uint8_t t = pkt->uet.type;
    if (t == RS_UET_PDS_CTRL) {
        if (pkt->uet.next_hdr == RS_UET_CTL_CLOSE) {
            rs_pdc *c = ids_find(&ep->ids, pkt->uet.dpdcid);
            target_close(u, ep, c && c->tgt_live && c->dst == ep->host ? c : NULL, pkt);
        } else if (pkt->uet.next_hdr == RS_UET_CTL_REQ_CLOSE) {
            rs_pdc *c = ids_find(&ep->ids, pkt->uet.dpdcid);
            if (c && c->live && c->src == ep->host) {
                if (c->closing) /* its CLOSE went: again now (the target still has the PDC) */
                    send_close(u, c);
            } else {
                ep->rx_unknown++;
            }
        } else if (pkt->uet.next_hdr == RS_UET_CTL_CREDIT || pkt->uet.next_hdr == RS_UET_CTL_CREDIT_REQ) {
            rs_pdc *c = ids_find(&ep->ids, pkt->uet.dpdcid); /* RCCC (rccc_pds.c) */
            int to_target = pkt->uet.next_hdr == RS_UET_CTL_CREDIT_REQ;
            if (c && (to_target ? c->tgt_live && c->dst == ep->host : c->live && c->src == ep->host))
                rs_uet_rccc_ctrl(u, ep, c, pkt);
            else
                ep->rx_unknown++;
        } else {
            ep->rx_unknown++;
        }
        rs_pkt_release(u->pool, pkt);
        return;
    }
    int request = t == RS_UET_PDS_RUD_REQ || t == RS_UET_PDS_ROD_REQ || t == RS_UET_PDS_RUDI_REQ ||
                  t == RS_UET_PDS_UUD_REQ || t == RS_UET_PDS_RUD_CC_REQ || t == RS_UET_PDS_ROD_CC_REQ;
    /* a RUDI response names the initiator's context by its pkt_id; RUDI and UUD requests carry no
     * PDC id on the wire, the simulator finds the flow's counters by the packet's record */
    int full = 0;
    rs_pdc *c = request ? target_pdc(u, ep, pkt, &full)
                        : ids_find(&ep->ids, t == RS_UET_PDS_RUDI_RESP ? (uint16_t)(pkt->psn >> 16) : pkt->uet.dpdcid);
    if (c && !request && c->src != ep->host && c->dst == ep->host)
        c = reverse_of(c); /* an ACK or NACK of what this host sent as the PDC's target (READ data) */
    if (!c || (request ? !c->tgt_live : !c->live || c->src != ep->host)) {
        if (full) {
            ep->st.pdcs_refused++;
            nack_unknown(u, ep, pkt, RS_UET_NACK_NO_PDC_AVAIL);
            request_closes(u, ep);
        } else {
            ep->rx_unknown++;
            if (request && !(pkt->uet.flags & RS_UET_F_SYN) &&
                (t == RS_UET_PDS_RUD_REQ || t == RS_UET_PDS_ROD_REQ || t == RS_UET_PDS_RUD_CC_REQ ||
                 t == RS_UET_PDS_ROD_CC_REQ))
                nack_unknown(u, ep, pkt, RS_UET_NACK_INV_DPDCID); /* RUDI / UUD requests name no PDC */
        }
    } else if (t == RS_UET_PDS_CTRL) {
        rs_uet_rccc_ctrl(u, ep, c, pkt);
    } else if (request) {
        target_receive(u, ep, c, pkt);
    } else {
        initiator_receive(u, ep, c, pkt);
    }
    rs_pkt_release(u->pool, pkt);
}

/* ---- PDCs ---- */

static rs_pdc *pdc_alloc(rs_uet *u)
{
    if (u->free_pdcs) {
        rs_pdc *c = u->free_pdcs;
        u->free_pdcs = c->free_next;
        return c;
    }
    if (u->n_all == u->cap_all) {
        uint32_t cap = u->cap_all ? 2u * u->cap_all : 16u;
        rs_pdc **n = realloc(u->all_pdcs, cap * sizeof(*n));
        if (!n)
            return NULL;
        u->all_pdcs = n;
        u->cap_all = cap;
    }
    rs_pdc *c = calloc(1, sizeof(*c));
    rs_pds_slot *slots = malloc(RS_PDS_SLOTS * sizeof(*slots)); /* zeroed as used (pds.c) */
    uint32_t *rq = malloc(RS_PDS_SLOTS * sizeof(*rq));
    if (!c || !slots || !rq) {
        free(c);
        free(slots);
        free(rq);
        return NULL;
    }
    c->slots = slots;
    c->rq = rq;
    c->rto.owner = c;
    c->rto.kind = RS_EV_UET_RTO;
    c->idle.owner = c;
    c->idle.kind = RS_EV_UET_IDLE;
    u->all_pdcs[u->n_all++] = c;
    return c;
}

rs_pdc *rs_uet_start(rs_uet *u, int src, int dst, uint64_t size, uint8_t prio, uint8_t ses_opcode,
                     const rs_uet_params *prm, uint64_t flow_ref)
{
    rs_uet_ep *se = rs_uet_ep_get(u, src), *de = rs_uet_ep_get(u, dst);
    if (!se || !de) {
        rs_engine_fail(&u->net->eng, RS_ERR_NOMEM, "out of memory for a UET endpoint");
        return NULL;
    }
    rs_pdc *c = pdc_alloc(u);
    if (!c) {
        rs_engine_fail(&u->net->eng, RS_ERR_NOMEM, "out of memory for a UET PDC");
        return NULL;
    }
    c->uet = u;
    c->src = src;
    c->rto.ent = rs_ent_host(src); /* it fires at the initiator */
    c->dst = dst;
    c->prm = *prm;
    c->ses_opcode = ses_opcode;
    c->flow_ref = flow_ref;
    c->msg_id = (uint16_t)(flow_ref & 0xFFFFu);
    rs_pdc_setup_init(c);
    c->live = 0;
    c->tgt_live = 0;
    c->read_req = u->next_read_req; /* READ responses: the reverse direction of the request's PDC */
    c->close_wait = 0;
    c->failed = 0;
    u->next_read_req = NULL;
    if (c->read_req) { /* its ids, established already: no SYN */
        c->syn = 0;
        c->src_id = c->read_req->dst_id;
        c->dst_id = c->read_req->src_id;
    } else {
        c->src_id = ids_add(&se->ids, c);
        /* RUD / ROD: the target's half comes with the first SYN request (pdc_setup.c); RUDI / UUD
         * have no PDC at the target, the simulator keeps an id there for the flow's counters */
        c->dst_id = !c->src_id ? 0 : c->syn ? 0 : ids_add(&de->ids, c);
    }
    if (!c->src_id || (!c->syn && !c->dst_id)) {
        if (c->src_id)
            ids_del(&se->ids, c->src_id);
        c->free_next = u->free_pdcs;
        u->free_pdcs = c;
        rs_engine_fail(&u->net->eng, RS_ERR_NOMEM, "no UET PDC id left on host %d or %d (65535 in use)", src, dst);
        return NULL;
    }
    uint8_t tc = (uint8_t)((8u * prio) << 2);
    rs_port_resolve_path(u->net, se->port, dst, tc, c->src_id, &c->path);
    rs_port_resolve_path(u->net, de->port, src, tc, c->dst_id, &c->back); /* (its UDP port: the echoes') */
    rs_pds_init(c, size, 0);
    rs_uet_rto_init(c);
    c->tgt_rc = RS_UET_RC_OK;
    c->src_buf = u->next_src; /* its bytes, when the workload gave them (ses.c) */
    c->dst_buf = u->next_dst;
    c->dst_len = u->next_dst_len;
    u->next_src = u->next_dst = NULL;
    u->next_dst_len = 0;
    c->ses_done = c->ses_rc = 0;
    c->ses_mod_len = 0;
    c->read_role = u->next_read_role; /* a READ request or its responses (ses_read.c) */
    c->read_len = u->next_read_len;
    c->read_msg_id = u->next_read_msg_id;
    c->read_prio = prio;
    c->read_resp = NULL;
    u->next_read_role = 0;
    u->next_read_len = 0;
    u->next_read_msg_id = 0;
    c->cc = NULL;
    if (prm->cc == RS_CC_NSCC) {
        rs_nscc_params_default((rs_nscc_params *)(void *)c->cc_params, prm->mtu, prm->cc_base_rtt_ps, prm->trim_ok);
        c->cc = rs_cc_algo_get(RS_CC_NSCC);
    }
    if (prm->cc == RS_UET_CC_RCCC)
        rs_uet_rccc_start(u, c);
    if (c->cc) {
        double line = se->port->tx ? (double)se->port->tx->rate_bps : 0.0;
        c->cc->init(c->cc_state, c->cc_params, line, u->net->eng.now_ps);
        cc_window(c);
    }
    rs_uet_lb_cfg lbc;
    rs_uet_lb_cfg_default(&lbc, prm->lb);
    rs_uet_lb_init(&c->lb, &lbc, u->net->eng.seed ^ (flow_ref * UINT64_C(0x9E3779B97F4A7C15)) ^ (uint64_t)src << 32);
    c->start_ps = u->net->eng.now_ps;
    c->live = 1;
    c->tgt_live = (uint8_t)!c->syn;
    c->act_next = c->act_prev = NULL;
    ring_add(se, c);
    rs_port_kick(u->net, se->port);
    return c;
}

/* Both halves gone: the ids back, the PDC to the free list. */
static void pdc_free(rs_uet *u, rs_pdc *c)
{
    rs_timer_cancel(&c->rto);
    rs_timer_cancel(&c->idle);
    if (c->prm.cc == RS_UET_CC_RCCC)
        rs_uet_rccc_close(u, c);
    int own_ids = !c->read_req; /* READ responses hold none: the request's PDC has them */
    if (c->live && (uint32_t)c->src < u->n_eps && u->eps[c->src]) {
        ring_remove(u->eps[c->src], c);
        if (own_ids)
            ids_del(&u->eps[c->src]->ids, c->src_id);
    }
    if (own_ids && c->tgt_live && (uint32_t)c->dst < u->n_eps && u->eps[c->dst]) {
        ids_del(&u->eps[c->dst]->ids, c->dst_id);
        if (rs_pdc_has_setup(c))
            u->eps[c->dst]->n_tgt--;
    }
    c->live = c->tgt_live = 0;
    c->closing = c->close_wait = 0;
    c->free_next = u->free_pdcs;
    u->free_pdcs = c;
}

void rs_uet_release(rs_uet *u, rs_pdc *c)
{
    if (!c->live || c->closing)
        return;
    rs_timer_cancel(&c->rto);
    ring_remove(u->eps[c->src], c);
    if (reverse_of(c)) { /* READ responses still on its PDC: the close waits for them */
        c->close_wait = 1;
        return;
    }
    c->close_wait = 0;
    if (c->failed) { /* its target does not know it: no close exchange */
        pdc_free(u, c);
        return;
    }
    rs_pdc *req = c->read_req;
    if (req) { /* READ responses done: their direction of the request's PDC ends, no close of its own */
        pdc_free(u, c);
        if (req->live && req->close_wait && req->read_resp == c)
            rs_uet_release(u, req);
        return;
    }
    if (rs_pdc_close_begin(c)) /* RUD / ROD: the close exchange releases it (pdc_setup.c) */
        send_close(u, c);
    else
        pdc_free(u, c);
}

void rs_uet_free(rs_uet *u)
{
    for (uint32_t i = 0; i < u->n_eps; i++) {
        rs_uet_ep *ep = u->eps[i];
        if (!ep)
            continue;
        for (rs_pkt *p = ep->ctrl_head, *n; p; p = n) {
            n = p->next;
            rs_pkt_release(u->pool, p);
        }
        free(ep->ids.slot);
        free(ep->ids.key);
        free(ep->rccc);
        free(ep);
    }
    free(u->eps);
    for (uint32_t i = 0; i < u->n_all; i++) {
        free(u->all_pdcs[i]->slots);
        free(u->all_pdcs[i]->rq);
        free(u->all_pdcs[i]);
    }
    free(u->all_pdcs);
    memset(u, 0, sizeof(*u));
}

/* ---- for the sublayers beside the endpoint (rccc_pds.c) ---- */

rs_pkt *rs_uet_frame(rs_uet *u, const rs_link_path *path, int src, int dst) { return new_frame(u, path, src, dst); }

void rs_uet_send_ctrl(rs_uet *u, rs_uet_ep *ep, rs_pkt *p) { send_ctrl(u, ep, p); }

rs_pdc *rs_uet_pdc_of(rs_uet_ep *ep, uint16_t id) { return ids_find(&ep->ids, id); }

void rs_uet_wake(rs_uet *u, rs_pdc *c)
{
    if (!c->live || !rs_pds_can_send(c))
        return;
    rs_uet_ep *ep = u->eps[c->src];
    ring_add(ep, c);
    rs_port_kick(u->net, ep->port);
}
