/* The packet delivery sublayer's state machines, sans-I/O: each function takes the PDC (and what
 * arrived) and says what follows; endpoint.c builds the frames and runs the timers.
 *
 * Initiator, one slot per PSN in flight (rs_pds_slot.state):
 *   FREE --send--> SENT --ACK / SACK bit--> ACKED --una passes--> FREE
 *                  SENT --SACK gap of reorder_pkts, NACK, or retransmit timeout--> LOST
 *                  LOST --retransmitted (same PSN, RETX flag)--> SENT;  LOST --ACK--> ACKED
 * A retransmission keeps its PSN (the target's bitmap tells a late original from it: the second
 * is a duplicate).  Bytes in flight count SENT slots only, so a lost packet frees window for its
 * own retransmission.  The SACK-gap rule (as htsim's UEC sender): a PSN still SENT while a PSN at
 * least reorder_pkts above it was acknowledged is lost; reordering by fewer PSNs is not loss.
 *
 * Target: every PSN up to rx_cack arrived; above it a bitmap.  Each request carries the clear PSN
 * (its PSN + clear_psn_offset; the initiator sends its oldest unacknowledged PSN): the initiator
 * has the ACKs of every PSN below it, so the target releases its state for them - a late
 * duplicate below it is dropped without an ACK (stale_dropped) rather than acknowledged again.  It acknowledges at once what asks
 * for it (AR), what arrives out of order or twice, and the message's last byte; otherwise every
 * ack_every packets.  Each ACK is an ACK_CC carrying the cumulative ACK PSN and a 64-bit SACK
 * bitmap whose base is the PSN after it rounded down to a multiple of 8 (bits of PSNs at or below
 * the cumulative one are set), as the specification's ACK_CC extension header lays it out.
 *
 * Delivery modes (prm.mode) change these rules here and nowhere else:
 *   RUD   as above.
 *   ROD   the target accepts only the next PSN in order (cumulative ACK PSN + 1); a later one is
 *         dropped unplaced and answered by one NACK (code ROD_OOO, payload: the PSN expected) per
 *         PSN expected.  The initiator goes back: every PSN from the expected one that is not yet
 *         acknowledged is resent in PSN order (as a timeout does).  The SACK-gap rule never fires
 *         (nothing above the cumulative PSN is ever acknowledged).
 *   RUDI  no PDC at the target: each request (its pkt_id names the initiator's context and the
 *         PSN) is executed on arrival, duplicates again (the operation is idempotent), and answered
 *         by a RUDI response echoing its pkt_id; the initiator treats each response as the ACK of
 *         that one PSN.
 *   UUD   no ACK and no retransmission: a packet sent is forgotten (no window, no timer); the
 *         target counts what arrives, and what the fabric drops is lost. */
#include <limits.h>
#include <string.h>

#include "uet/uet.h"

#define MASK (RS_PDS_SLOTS - 1u)

static inline int32_t pdiff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

void rs_pds_init(rs_pdc *c, uint64_t msg_len, uint32_t start_psn)
{
    /* The slots hold nothing of a past flow: those the PDC's last flow wrote (its PSNs start_psn ..
     * next_psn - 1) are cleared.  A new PDC's ring is not cleared at all: its slots are zeroed
     * lazily, each when its first PSN is sent (rs_pds_next; slots_init of them so far, in ring
     * order from 0), and nothing reads a slot of a PSN not sent (every read is of a PSN from
     * una_psn to next_psn - 1, or through rs_pds_slot_at).  The cost is that of the PSNs used,
     * not of the whole ring per flow. */
    uint32_t used = c->next_psn - c->start_psn;
    if (used >= RS_PDS_SLOTS) {
        memset(c->slots, 0, c->slots_init * sizeof(*c->slots));
    } else if (used) {
        uint32_t first = c->start_psn & MASK, n1 = RS_PDS_SLOTS - first < used ? RS_PDS_SLOTS - first : used;
        memset(c->slots + first, 0, n1 * sizeof(*c->slots));
        memset(c->slots, 0, (used - n1) * sizeof(*c->slots));
    }
    if ((start_psn & MASK) != 0 && c->slots_init < RS_PDS_SLOTS) { /* not from slot 0: all at once */
        memset(c->slots + c->slots_init, 0, (RS_PDS_SLOTS - c->slots_init) * sizeof(*c->slots));
        c->slots_init = RS_PDS_SLOTS;
    }
    c->msg_len = msg_len;
    c->next_off = c->acked_bytes = c->inflight_bytes = 0;
    c->start_psn = c->next_psn = c->una_psn = c->high_acked = c->loss_scan = start_psn;
    c->window_bytes = c->prm.window_bytes;
    c->rq_head = c->rq_len = 0;
    c->rx_cack = start_psn - 1u;
    c->rx_max = start_psn;
    c->rx_unacked = 0;
    c->rx_nacked = 0;
    c->rx_nack_sent = 0;
    c->rx_clear = start_psn;
    c->rx_bytes = 0;
    memset(c->rx_bitmap, 0, sizeof(c->rx_bitmap));
    memset(&c->st, 0, sizeof(c->st));
}

/* The queued retransmission at the head, dropping entries acknowledged since they were queued. */
static rs_pds_slot *rq_peek(rs_pdc *c, uint32_t *psn)
{
    while (c->rq_len) {
        uint32_t p = c->rq[c->rq_head];
        rs_pds_slot *s = &c->slots[p & MASK];
        if (s->state == RS_PDS_LOST) {
            *psn = p;
            return s;
        }
        c->rq_head = (c->rq_head + 1u) & MASK;
        c->rq_len--;
    }
    return NULL;
}

static int window_allows(const rs_pdc *c, uint32_t len)
{
    return c->inflight_bytes == 0 || c->inflight_bytes + len <= c->window_bytes;
}

static uint32_t next_len(const rs_pdc *c)
{
    uint64_t left = c->msg_len - c->next_off;
    return left < c->prm.mtu ? (uint32_t)left : c->prm.mtu;
}

/* New bytes left to send; a message of no bytes (a READ request) is one packet without payload. */
static int new_left(const rs_pdc *c)
{
    return c->next_off < c->msg_len || (c->msg_len == 0 && c->next_psn == c->start_psn);
}

int rs_pds_can_send(const rs_pdc *c)
{
    if (c->prm.mode == RS_UET_UUD)
        return c->next_off < c->msg_len;
    for (uint32_t i = 0, h = c->rq_head; i < c->rq_len; i++, h = (h + 1u) & MASK) {
        const rs_pds_slot *s = &c->slots[c->rq[h] & MASK];
        if (s->state == RS_PDS_LOST)
            return window_allows(c, s->len);
    }
    return new_left(c) && pdiff(c->next_psn, c->una_psn) < (int32_t)RS_PDS_SLOTS &&
           window_allows(c, next_len(c));
}

static int wants_ack(const rs_pdc *c, uint32_t psn, int eom)
{
    if (c->prm.mode == RS_UET_UUD || c->prm.mode == RS_UET_RUDI)
        return 0; /* UUD: nothing is acknowledged; RUDI: every request is answered (no AR flag) */
    uint32_t every = c->prm.ack_every ? c->prm.ack_every : 1u;
    /* the last packet, one that fills the window (no more will come to carry the request), and
     * every ack_every-th */
    return eom || c->inflight_bytes + c->prm.mtu > c->window_bytes ||
           (uint32_t)(psn - c->start_psn) % every == every - 1u;
}

int rs_pds_next(rs_pdc *c, int64_t now, rs_pds_tx *out)
{
    uint32_t psn;
    rs_pds_slot *s = rq_peek(c, &psn);
    if (s) {
        if (!window_allows(c, s->len))
            return 0;
        c->rq_head = (c->rq_head + 1u) & MASK;
        c->rq_len--;
        s->state = RS_PDS_SENT;
        s->sent_ps = now;
        s->sends++;
        c->inflight_bytes += s->len;
        c->st.pkts_sent++;
        c->st.pkts_retx++;
        *out = (rs_pds_tx){.psn = psn, .off = s->off, .len = s->len, .retx = 1, .ar = 1,
                           .som = s->off == 0, .eom = s->off + s->len == c->msg_len};
        return 1;
    }
    if (c->prm.mode == RS_UET_UUD) { /* sent and forgotten: no slot, no window */
        if (c->next_off >= c->msg_len)
            return 0;
        uint32_t len = next_len(c);
        psn = c->next_psn++;
        c->una_psn = c->high_acked = c->loss_scan = c->next_psn;
        *out = (rs_pds_tx){.psn = psn, .off = (uint32_t)c->next_off, .len = (uint16_t)len,
                           .som = c->next_off == 0, .eom = c->next_off + len == c->msg_len};
        c->next_off += len;
        c->st.pkts_sent++;
        return 1;
    }
    if (!new_left(c) || pdiff(c->next_psn, c->una_psn) >= (int32_t)RS_PDS_SLOTS)
        return 0;
    uint32_t len = next_len(c);
    if (!window_allows(c, len))
        return 0;
    psn = c->next_psn++;
    if ((psn & MASK) >= c->slots_init)
        c->slots_init = (psn & MASK) + 1u; /* its first use: written whole below */
    s = &c->slots[psn & MASK];
    *s = (rs_pds_slot){.sent_ps = now, .off = (uint32_t)c->next_off, .len = (uint16_t)len,
                       .state = RS_PDS_SENT, .sends = 1};
    int eom = c->next_off + len == c->msg_len;
    *out = (rs_pds_tx){.psn = psn, .off = (uint32_t)c->next_off, .len = (uint16_t)len,
                       .som = c->next_off == 0, .eom = (uint8_t)eom};
    c->next_off += len;
    c->inflight_bytes += len;
    c->st.pkts_sent++;
    out->ar = (uint8_t)wants_ack(c, psn, eom);
    return 1;
}

const rs_pds_slot *rs_pds_slot_at(const rs_pdc *c, uint32_t psn, const rs_pds_slot *zero)
{
    uint32_t i = psn & MASK;
    return i < c->slots_init ? &c->slots[i] : zero;
}

static void lose(rs_pdc *c, uint32_t psn, rs_pds_slot *s)
{
    s->state = RS_PDS_LOST;
    c->inflight_bytes -= s->len;
    c->rq[(c->rq_head + c->rq_len) & MASK] = psn;
    c->rq_len++;
}

/* ROD: resend every PSN from `from` not yet acknowledged, in PSN order (the queue is rebuilt, so a
 * PSN queued earlier does not go ahead of a lower one); returns the PSNs newly declared lost. */
static uint32_t go_back(rs_pdc *c, uint32_t from)
{
    uint32_t lost = 0;
    if (pdiff(from, c->una_psn) < 0)
        from = c->una_psn;
    c->rq_head = c->rq_len = 0;
    for (uint32_t p = c->una_psn; p != c->next_psn; p++) {
        rs_pds_slot *s = &c->slots[p & MASK];
        if (pdiff(p, from) >= 0 && s->state == RS_PDS_SENT) {
            lose(c, p, s);
            lost++;
        } else if (s->state == RS_PDS_LOST) {
            c->rq[(c->rq_head + c->rq_len) & MASK] = p;
            c->rq_len++;
        }
    }
    return lost;
}

static void ack_one(rs_pdc *c, uint32_t psn, rs_pds_ack_res *res)
{
    rs_pds_slot *s = &c->slots[psn & MASK];
    if (s->state == RS_PDS_SENT)
        c->inflight_bytes -= s->len;
    else if (s->state != RS_PDS_LOST)
        return; /* acknowledged before */
    s->state = RS_PDS_ACKED;
    c->acked_bytes += s->len;
    res->acked_bytes += s->len;
    if (pdiff(psn + 1u, c->high_acked) > 0)
        c->high_acked = psn + 1u;
}

/* After acknowledgements: free the slots below the first unacknowledged PSN, apply the SACK-gap
 * rule, and say whether the message is done. */
static void settle(rs_pdc *c, rs_pds_ack_res *res)
{
    while (c->una_psn != c->next_psn && c->slots[c->una_psn & MASK].state == RS_PDS_ACKED) {
        c->slots[c->una_psn & MASK].state = RS_PDS_FREE;
        c->una_psn++;
    }
    if (pdiff(c->loss_scan, c->una_psn) < 0)
        c->loss_scan = c->una_psn;
    while (pdiff(c->high_acked, c->loss_scan) > (int32_t)c->prm.reorder_pkts) {
        rs_pds_slot *s = &c->slots[c->loss_scan & MASK];
        if (s->state == RS_PDS_SENT) {
            lose(c, c->loss_scan, s);
            res->lost++;
            c->st.loss_sack++;
        }
        c->loss_scan++;
    }
    res->done = c->acked_bytes == c->msg_len;
}

void rs_pds_on_ack(rs_pdc *c, const rs_uet_hdr *ack, rs_pds_ack_res *res)
{
    *res = (rs_pds_ack_res){0};
    c->st.acks_rcvd++;
    uint32_t cack = ack->cack_psn;
    if (pdiff(cack, c->next_psn) >= 0) /* acknowledges what was never sent: ignore it */
        return;
    for (uint32_t p = c->una_psn; pdiff(p, cack) <= 0; p++)
        ack_one(c, p, res);
    if (ack->type == RS_UET_PDS_ACK_CC) {
        uint32_t base = cack + (uint32_t)(int32_t)ack->sack_off;
        for (uint64_t m = ack->sack_bitmap; m; m &= m - 1u) {
            uint32_t p = base + (uint32_t)__builtin_ctzll(m);
            if (pdiff(p, c->una_psn) >= 0 && pdiff(p, c->next_psn) < 0)
                ack_one(c, p, res);
        }
    }
    settle(c, res);
}

void rs_pds_on_resp(rs_pdc *c, uint32_t psn, rs_pds_ack_res *res)
{
    *res = (rs_pds_ack_res){0};
    c->st.acks_rcvd++;
    if (pdiff(psn, c->una_psn) >= 0 && pdiff(psn, c->next_psn) < 0) {
        ack_one(c, psn, res);
        c->st.bytes_rcvd += res->acked_bytes; /* RUDI: the target keeps no count; a response proves it */
    }
    settle(c, res);
}

uint32_t rs_pds_on_nack(rs_pdc *c, uint32_t psn, uint8_t code, uint32_t payload)
{
    c->st.nacks_rcvd++;
    if (code == RS_UET_NACK_ROD_OOO) {
        /* go back to the PSN the target expects, unless that one is already queued again */
        if (c->prm.mode != RS_UET_ROD || pdiff(payload, c->una_psn) < 0 || pdiff(payload, c->next_psn) >= 0 ||
            c->slots[payload & MASK].state != RS_PDS_SENT)
            return 0;
        return go_back(c, payload);
    }
    if (pdiff(psn, c->una_psn) < 0 || pdiff(psn, c->next_psn) >= 0)
        return 0;
    rs_pds_slot *s = &c->slots[psn & MASK];
    if (s->state != RS_PDS_SENT)
        return 0;
    lose(c, psn, s);
    return 1;
}

int64_t rs_pds_on_rto(rs_pdc *c, int64_t now, uint32_t *lost)
{
    int64_t due = INT64_MAX;
    *lost = 0;
    for (uint32_t p = c->una_psn; p != c->next_psn; p++) {
        rs_pds_slot *s = &c->slots[p & MASK];
        if (s->state != RS_PDS_SENT)
            continue;
        if (s->sent_ps + c->rto_ps <= now) {
            lose(c, p, s);
            (*lost)++;
            c->st.loss_rto++;
        } else if (s->sent_ps + c->rto_ps < due) {
            due = s->sent_ps + c->rto_ps;
        }
    }
    if (*lost && c->prm.mode == RS_UET_ROD)
        go_back(c, c->una_psn); /* in PSN order, with whatever was queued before */
    return due;
}

int64_t rs_pds_rto_due(const rs_pdc *c)
{
    int64_t due = INT64_MAX;
    for (uint32_t p = c->una_psn; p != c->next_psn; p++) {
        const rs_pds_slot *s = &c->slots[p & MASK];
        if (s->state == RS_PDS_SENT && s->sent_ps + c->rto_ps < due)
            due = s->sent_ps + c->rto_ps;
    }
    return due;
}

/* ---- target ---- */

static inline int rx_has(const rs_pdc *c, uint32_t psn)
{
    uint32_t i = psn & MASK;
    return (int)((c->rx_bitmap[i >> 6] >> (i & 63u)) & 1u);
}

void rs_pds_rx_ack_fields(const rs_pdc *c, uint32_t psn, rs_pds_rx_res *res)
{
    uint32_t cack = c->rx_cack;
    int32_t off = pdiff(psn, cack);
    res->cack_psn = cack;
    res->ack_psn_off = (int16_t)(off > INT16_MAX ? INT16_MAX : off < INT16_MIN ? INT16_MIN : off);
    uint32_t base = (cack + 1u) & ~7u;
    res->sack_off = (int16_t)pdiff(base, cack);
    uint32_t pos = base & MASK, w = pos >> 6, sh = pos & 63u;
    const uint32_t nw = RS_PDS_SLOTS / 64u;
    uint64_t v = c->rx_bitmap[w] >> sh;
    if (sh)
        v |= c->rx_bitmap[(w + 1u) & (nw - 1u)] << (64u - sh);
    uint32_t below = cack + 1u - base; /* PSNs base .. cack: received (0..7 of them) */
    v |= (UINT64_C(1) << below) - 1u;
    res->sack_bitmap = v;
}

uint32_t rs_pds_rudi_pkt_id(const rs_pdc *c, uint32_t psn) { return (uint32_t)c->src_id << 16 | (psn & 0xFFFFu); }

uint32_t rs_pds_rudi_psn(const rs_pdc *c, uint32_t pkt_id)
{
    /* the PSNs in flight lie within RS_PDS_SLOTS of una_psn: the low 16 bits name one */
    return c->una_psn + (uint32_t)(uint16_t)((uint16_t)pkt_id - (uint16_t)c->una_psn);
}

void rs_pds_rx(rs_pdc *c, uint32_t psn, uint32_t clear, uint32_t len, int ar, rs_pds_rx_res *res)
{
    *res = (rs_pds_rx_res){0};
    int32_t d = pdiff(psn, c->rx_cack);
    int in_order = d == 1;
    /* the clear PSN: the initiator has the ACKs of every PSN below it and forgot them; it cannot
     * clear what did not arrive (beyond the cumulative PSN + 1: not taken) */
    if (pdiff(clear, c->rx_clear) > 0 && pdiff(clear, c->rx_cack + 1u) <= 0)
        c->rx_clear = clear;
    if (c->prm.mode == RS_UET_UUD) { /* nothing acknowledged, nothing tracked but the count */
        res->fresh = 1;
        c->rx_bytes += len;
        c->st.bytes_rcvd += len;
        c->st.pkts_rcvd++;
        res->complete = c->rx_bytes == c->msg_len;
        return;
    }
    if (c->prm.mode == RS_UET_ROD && d > 1 && d <= (int32_t)RS_PDS_SLOTS && !rx_has(c, psn)) {
        /* out of order on a ROD PDC: dropped, one NACK per PSN expected */
        c->st.ooo_dropped++;
        if (!c->rx_nack_sent || c->rx_nacked != c->rx_cack + 1u) {
            c->rx_nack_sent = 1;
            c->rx_nacked = c->rx_cack + 1u;
            res->nack = RS_UET_NACK_ROD_OOO;
            res->nack_payload = c->rx_cack + 1u;
        }
        return;
    }
    if (d <= 0 && pdiff(psn, c->rx_clear) < 0) {
        /* below the cleared PSN: its state is released; the initiator needs no ACK of it */
        c->st.stale_dropped++;
        return;
    }
    if (d <= 0 || d > (int32_t)RS_PDS_SLOTS || rx_has(c, psn)) {
        c->st.dups_rcvd += d <= (int32_t)RS_PDS_SLOTS;
        /* a duplicate (or beyond the bitmap): acknowledge what is known, so a sender that missed
         * ACKs learns it */
        res->ack = d <= (int32_t)RS_PDS_SLOTS;
    } else {
        uint32_t i = psn & MASK;
        c->rx_bitmap[i >> 6] |= UINT64_C(1) << (i & 63u);
        res->fresh = 1;
        c->rx_bytes += len;
        c->st.bytes_rcvd += len;
        if (pdiff(psn + 1u, c->rx_max) > 0)
            c->rx_max = psn + 1u;
        while (rx_has(c, c->rx_cack + 1u)) {
            uint32_t j = (c->rx_cack + 1u) & MASK;
            c->rx_bitmap[j >> 6] &= ~(UINT64_C(1) << (j & 63u));
            c->rx_cack++;
        }
        res->complete = c->rx_bytes == c->msg_len;
        c->rx_unacked++;
        uint32_t every = c->prm.ack_every ? c->prm.ack_every : 1u;
        res->ack = ar || !in_order || res->complete || c->rx_unacked >= every || c->rx_cack != psn;
    }
    if (res->ack) {
        c->rx_unacked = 0;
        c->st.acks_sent++;
        rs_pds_rx_ack_fields(c, psn, res);
    }
}
