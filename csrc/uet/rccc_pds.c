/* RCCC wired into the packet delivery sublayer: the pure credit module (rccc.c) driven by PDCs'
 * packets and the target's pacer timer.
 *
 * Wire (UE specification 1.0 header formats, offsets as Wireshark's packet-uet.c reads them):
 *   initiator data packets are RUD_CC_REQ (PDS type 13): the RUD request header and its 4-byte CC
 *     state, ccc_id:8 (0) and credit_target:24, the sender's cumulative credit request;
 *   the target's ACK_CC carries cc_type 1 (credit) and in its CC state credit:24 (the cumulative
 *     grant), reserved:24, ooo_count:16 (0);
 *   the pacer's grants go in PDS control packets (type 11) with ctl_type 7 (CREDIT), the payload
 *     the cumulative grant; a sender with no credit and more to ask sends ctl_type 8
 *     (CREDIT_REQ), the payload its cumulative request.
 * Every credit value on the wire is a byte count modulo 2^24 (the 24-bit fields; the
 * specification's credit unit is not modelled): each side keeps the full count and unwraps a
 * field against it (serial arithmetic), so a step of less than 8 MiB between two values is exact.
 *
 * Rules (rccc.c has the sources): a PDC starts speculating with `window` bytes of credit, which
 * is also the most credit it holds or asks for; every data packet spends its bytes and asks for
 * min(backlog, window) minus the credit it still holds; the target's pacer grants 4 MSS at a time
 * at 0.99 of its link rate, round robin over the PDCs that asked for more than they were granted.
 * A target already scheduling RS_RCCC_MAX_SENDERS PDCs answers a further one's request with a
 * grant of what it asked (it is not paced).  Bytes sent on speculation (marked in simulator
 * metadata, rs_uet_hdr.spec: the wire has no such flag) delay the target's pacer by their time on
 * its link when they arrive (rs_rccc_rx_on_unsolicited), so the grants do not add to the queue the
 * speculation built. */
#include <stdlib.h>
#include <string.h>

#include "uet/uet.h"

#define W24 0xFFFFFFu
/* A full data packet's bytes on the wire besides its payload: Ethernet, IPv4, UDP, the PDS CC
 * request, the SES standard header, FCS, preamble and inter-frame gap. */
#define WIRE_OVERHEAD (14u + 20u + 8u + RS_UET_PDS_CC_REQ_BYTES + RS_UET_SES_STD_BYTES + 4u + 20u)

static uint64_t unwrap24(uint64_t last, uint32_t w)
{
    int32_t d = (int32_t)(((w - (uint32_t)last) & W24) << 8) >> 8; /* signed 24-bit step */
    if (d <= 0)
        return last; /* an older value, reordered: nothing new */
    return last + (uint64_t)d;
}

void rs_uet_rccc_start(rs_uet *u, rs_pdc *c)
{
    (void)u;
    /* speculation and the cap: the PDC's window (default 2 x BDP) */
    rs_rccc_tx_init(&c->rccc, c->prm.window_bytes, c->prm.window_bytes, c->prm.mtu);
    c->rccc_req_sent = c->rccc_req_seen = 0;
    c->window_bytes = RS_PDS_SLOTS * c->prm.mtu; /* credit, not a window, limits it */
}

/* Bytes the initiator still has to send: new ones and those declared lost. */
static uint64_t backlog(const rs_pdc *c) { return c->msg_len - c->acked_bytes - c->inflight_bytes; }

static void send_credit_ctrl(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, int to_target, uint64_t value)
{
    rs_pkt *p = to_target ? rs_uet_frame(u, &c->path, c->src, c->dst) : rs_uet_frame(u, &c->back, c->dst, c->src);
    if (!p)
        return;
    rs_uet_hdr *h = &p->uet;
    h->type = RS_UET_PDS_CTRL;
    h->next_hdr = to_target ? RS_UET_CTL_CREDIT_REQ : RS_UET_CTL_CREDIT;
    h->spdcid = to_target ? c->src_id : c->dst_id;
    h->dpdcid = to_target ? c->dst_id : c->src_id;
    h->nack_payload = (uint32_t)(value & W24);
    p->psn = to_target ? c->next_psn : c->rx_max;
    rs_uet_send_ctrl(u, ep, p);
}

int rs_uet_rccc_may_send(rs_uet *u, rs_uet_ep *ep, rs_pdc *c)
{
    if (rs_rccc_tx_may_send(&c->rccc))
        return 1;
    uint64_t req = rs_rccc_tx_request(&c->rccc, backlog(c), 1);
    if (req > c->rccc_req_sent) { /* nothing carries its ask: a credit request does */
        c->rccc_req_sent = req;
        send_credit_ctrl(u, ep, c, 1, req);
    }
    return 0;
}

void rs_uet_rccc_on_data(rs_pdc *c, rs_pkt *p)
{
    p->uet.spec = (uint8_t)c->rccc.speculating;
    rs_rccc_tx_on_sent(&c->rccc, p->payload_len);
    uint64_t req = rs_rccc_tx_request(&c->rccc, backlog(c), 1);
    c->rccc_req_sent = req;
    p->uet.type = c->prm.mode == RS_UET_ROD ? RS_UET_PDS_ROD_CC_REQ : RS_UET_PDS_RUD_CC_REQ;
    p->uet.ccc_id = 0;
    p->uet.credit_target = (uint32_t)(req & W24);
}

static rs_rccc_rx *pacer_of(rs_uet *u, rs_uet_ep *ep, uint32_t mss)
{
    if (ep->rccc)
        return ep->rccc;
    rs_rccc_rx *rx = calloc(1, sizeof(*rx));
    if (!rx) {
        u->net->eng.failed = 1;
        rs_engine_fail(&u->net->eng, RS_ERR_NOMEM, "out of memory for a UET credit pacer");
        return NULL;
    }
    rs_rccc_rx_params prm;
    double line = ep->port->tx ? (double)ep->port->tx->rate_bps : 100e9;
    /* credit counts payload bytes: the link carries mss of them per mss + WIRE_OVERHEAD bytes */
    line = line * mss / (mss + WIRE_OVERHEAD);
    rs_rccc_rx_params_default(&prm, line, mss); /* quanta of 4 MSS of the first PDC's */
    rs_rccc_rx_init(rx, &prm);
    ep->rccc = rx;
    ep->pacer.owner = ep;
    ep->pacer.kind = RS_EV_UET_PACER;
    return rx;
}

static void arm_pacer(rs_uet *u, rs_uet_ep *ep)
{
    int64_t t = rs_rccc_rx_next_ps(ep->rccc);
    if (!t)
        return;
    if (t < u->net->eng.now_ps)
        t = u->net->eng.now_ps;
    if (!ep->pacer.armed || ep->pacer.when_ps > t)
        rs_engine_arm(&u->net->eng, &ep->pacer, t);
}

/* Target: c's cumulative request is now `req` bytes. */
static void request(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, uint32_t field)
{
    rs_rccc_rx *rx = pacer_of(u, ep, c->prm.mtu);
    if (!rx)
        return;
    c->rccc_req_seen = unwrap24(c->rccc_req_seen, field);
    if (rs_rccc_rx_on_request(rx, u->net->eng.now_ps, c->dst_id, c->rccc_req_seen) < 0) {
        send_credit_ctrl(u, ep, c, 0, c->rccc_req_seen); /* no room to pace it: all it asked */
        return;
    }
    arm_pacer(u, ep);
}

static uint64_t granted_to(const rs_uet_ep *ep, const rs_pdc *c);

void rs_uet_rccc_on_request(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt)
{
    uint8_t t = pkt->uet.type;
    if (t == RS_UET_PDS_RUD_CC_REQ || t == RS_UET_PDS_ROD_CC_REQ)
        request(u, ep, c, pkt->uet.credit_target);
}

void rs_uet_rccc_on_received(rs_uet *u, rs_uet_ep *ep, const rs_pkt *pkt)
{
    if (!pkt->uet.spec || !ep->rccc)
        return;
    /* speculative bytes took the receiver's link as granted ones do: the pacer waits for them */
    rs_rccc_rx_on_unsolicited(ep->rccc, u->net->eng.now_ps, pkt->payload_len);
    arm_pacer(u, ep);
}

static uint64_t granted_to(const rs_uet_ep *ep, const rs_pdc *c)
{
    const rs_rccc_rx *rx = ep->rccc;
    for (uint32_t i = 0; rx && i < RS_RCCC_MAX_SENDERS; i++)
        if (rx->s[i].used && rx->s[i].key == c->dst_id)
            return rx->s[i].granted;
    return c->rccc_req_seen; /* not paced here (refused or gone): what it asked */
}

void rs_uet_rccc_ack(const rs_uet_ep *ep, const rs_pdc *c, rs_uet_hdr *h)
{
    h->cc_type = RS_UET_CC_TYPE_CREDIT;
    h->cc_state = (uint64_t)(granted_to(ep, c) & W24) << 40; /* credit:24, reserved:24, ooo_count:16 */
}

static void credit(rs_pdc *c, uint32_t field)
{
    rs_rccc_tx_on_credit(&c->rccc, unwrap24(c->rccc.granted, field));
}

void rs_uet_rccc_on_feedback(rs_pdc *c, const rs_pkt *pkt)
{
    if (pkt->uet.type == RS_UET_PDS_ACK_CC && pkt->uet.cc_type == RS_UET_CC_TYPE_CREDIT)
        credit(c, (uint32_t)(pkt->uet.cc_state >> 40));
    else
        rs_rccc_tx_on_feedback(&c->rccc);
}

void rs_uet_rccc_ctrl(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt)
{
    if (c->prm.cc != RS_UET_CC_RCCC)
        return;
    if (pkt->uet.next_hdr == RS_UET_CTL_CREDIT_REQ) {
        request(u, ep, c, pkt->uet.nack_payload);
    } else if (pkt->uet.next_hdr == RS_UET_CTL_CREDIT) {
        credit(c, pkt->uet.nack_payload);
        rs_uet_wake(u, c);
    }
}

void rs_uet_pacer(rs_uet *u, rs_uet_ep *ep)
{
    uint32_t key;
    uint64_t granted;
    if (ep->rccc && rs_rccc_rx_pull(ep->rccc, u->net->eng.now_ps, &key, &granted)) {
        rs_pdc *c = rs_uet_pdc_of(ep, (uint16_t)key);
        if (c && c->live)
            send_credit_ctrl(u, ep, c, 0, granted);
    }
    if (ep->rccc)
        arm_pacer(u, ep);
}

void rs_uet_rccc_close(rs_uet *u, rs_pdc *c)
{
    if ((uint32_t)c->dst < u->n_eps && u->eps[c->dst] && u->eps[c->dst]->rccc)
        rs_rccc_rx_remove(u->eps[c->dst]->rccc, c->dst_id);
}
