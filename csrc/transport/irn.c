/* IRN selective repeat: the per-QP alternative to Go-Back-N (qp->recovery == RS_RECOVERY_IRN).
 * Mittal et al., "Revisiting Network Support for RDMA", SIGCOMM 2018; docs/design.md
 * "Loss recovery: IRN".  The Go-Back-N entry points (rs_req_can_send, rs_req_build,
 * rs_req_rewind, rs_comp_arm_rto, rs_comp_receive, rs_resp_receive) branch here in one line.
 *
 * Responder (expected PSN e = resp_psn)
 *   psn == e             execute exactly as Go-Back-N does (rs_resp_execute: checks, errors, RNR,
 *                        ACK on the A bit), then move e over the out-of-order packets already
 *                        placed, doing in order what each still owes (MSN, receive completion,
 *                        message cursor), and ACK the new e-1 if it moved over any
 *   e < psn < e + cap    place the packet now from its IRN header (RETH on every WRITE packet;
 *                        receive WQE number + offset on SEND packets), mark it, and send a
 *                        NAK (PSN sequence error) carrying PSN = e (cumulative ACK) and
 *                        x_sack_psn = psn (selective ACK): one per out-of-order packet.  A packet
 *                        that cannot be placed yet (its receive WQE is not posted, or any check
 *                        fails) is dropped without SACK and handled when it arrives in order,
 *                        with Go-Back-N's error rules
 *   psn < e              duplicate, as Go-Back-N (re-ACK e-1)
 *
 * Requester
 *   normal    new packets while fewer than `window` PSNs are unacknowledged (BDP cap)
 *   NAK(e,s)  PSNs before e are acknowledged, s is SACKed (bitmap); not in recovery -> enter it:
 *             recovery_psn = next new PSN; every un-SACKed PSN below the highest SACK
 *             (lost_below) counts as lost
 *   recovery  the next packet is the lowest lost PSN >= retx_psn, else new data; recovery ends
 *             when the cumulative ACK reaches recovery_psn.  retx_psn only moves forward (across
 *             recoveries too), so a PSN is resent once per timeout: a lost retransmission is
 *             left to the timeout (as in IRN; OOO: the responder reports it again, and a tail
 *             probe goes before the timeout, ooo_loss.c and rs_irn_probe)
 *   timeout   RTO_low while fewer than N packets are in flight (un-SACKed, unacknowledged), else
 *             RTO_high, measured from the last cumulative progress; the oldest unacknowledged
 *             PSN (even if SACKed: the cumulative ACK may be what was lost) and every un-SACKed
 *             outstanding PSN are resent; each timeout uses one of retry_cnt
 *   RNR NAK   as Go-Back-N (wait, then resend), but selectively
 *
 * READ and atomics use Go-Back-N: they start only when no SEND/WRITE is outstanding, and no
 * SEND/WRITE starts while one is outstanding, so during such a phase the QP is a Go-Back-N QP
 * (the responder NAKs a READ/atomic ahead of the expected PSN once per gap, as Go-Back-N).
 * OOO places READ responses and atomic acknowledgements out of order and keeps READ and atomic
 * requests ahead of the expected PSN (ooo_read.c).
 * Completions stay in send-queue order (cumulative ACKs complete WQEs, rs_comp_ack_through). */
#include "transport/transport.h"
#include "transport/opcodes.h"

#include <stdlib.h>
#include <string.h>

#include "transport/trace_qp.h"
#include "rdmasim/ib.h"

#define IRN_MAX_WINDOW 65536u

static inline uint32_t bidx(const rs_irn *x, uint32_t psn) { return psn & (x->cap - 1); }
static inline int bget(const uint8_t *m, uint32_t i) { return (m[i >> 3] >> (i & 7)) & 1; }
static inline void bset(uint8_t *m, uint32_t i) { m[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void bclr(uint8_t *m, uint32_t i) { m[i >> 3] &= (uint8_t)~(1u << (i & 7)); }
static inline uint32_t psn_next(uint32_t psn) { return (psn + 1) & RS_PSN_MASK; }

/* Work requests that consume a receive WQE at the responder (and so get a WQE number). */
static int wr_uses_recv(uint32_t wr_op)
{
    return wr_op == RS_WR_SEND || wr_op == RS_WR_SEND_WITH_IMM || wr_op == RS_WR_RDMA_WRITE_WITH_IMM;
}

/* A READ/atomic at the head of the send queue has been sent: Go-Back-N phase. */
static int rd_atomic_phase(const rs_qp *qp)
{
    const rs_swqe *head = &qp->sq[qp->sq_head];
    return qp->sq_count && head->started && rs_wr_is_rd_atomic(head->opcode);
}

/* ---------------------------------------------------------------- requester */

static uint32_t in_flight(const rs_qp *qp)
{
    int32_t n = rs_psn_diff(qp->req_psn, qp->comp_psn) - (int32_t)qp->irn->sacked_count;
    return n > 0 ? (uint32_t)n : 0;
}

static int has_retx(const rs_qp *qp)
{
    const rs_irn *x = qp->irn;
    return x->in_recovery && rs_psn_diff(x->retx_psn, x->lost_below) < 0 &&
           rs_psn_diff(x->retx_psn, qp->req_psn) < 0;
}

/* retx_psn moves past acknowledged and SACKed PSNs: it then names the next lost one, if any. */
static void advance_retx(rs_qp *qp)
{
    rs_irn *x = qp->irn;
    if (rs_psn_diff(x->retx_psn, qp->comp_psn) < 0)
        x->retx_psn = qp->comp_psn;
    /* IRN resends what is not SACKed, OOO what was reported lost */
    const uint8_t *skip = x->reorder_ps ? x->lost : x->sacked;
    int skip_if = x->reorder_ps ? 0 : 1;
    while (rs_psn_diff(x->retx_psn, x->lost_below) < 0 && rs_psn_diff(x->retx_psn, qp->req_psn) < 0 &&
           bget(skip, bidx(x, x->retx_psn)) == skip_if)
        x->retx_psn = psn_next(x->retx_psn);
}

/* OOO: the probe's wait, the requester's latest round trip (before one is measured, the reorder
 * time) plus the reorder time: an ACK that has not come by then will not come (RFC 8985 6.2, 7) */
static int64_t probe_wait(const rs_irn *x)
{
    return (x->srtt_ps ? x->srtt_ps : x->reorder_ps) + x->reorder_ps;
}

/* RTO_low or RTO_high after the timer's start, by what is in flight now */
static int64_t rto_at(const rs_qp *qp)
{
    const rs_irn *x = qp->irn;
    return x->rto_start_ps + (in_flight(qp) < x->rto_low_pkts ? x->rto_low_ps : x->rto_high_ps);
}

/* OOO: the tail probe is due probe_wait after the later of the timer's start (the last
 * cumulative progress) and the last packet sent (RFC 8985 7.2: the probe timer restarts with
 * every transmission) */
static int64_t probe_at(const rs_irn *x)
{
    return (x->last_tx_ps > x->rto_start_ps ? x->last_tx_ps : x->rto_start_ps) + probe_wait(x);
}

/* The running timer's deadline: RTO_low or RTO_high after its start, by what is in flight now;
 * OOO: the tail probe's before it, once per start (rs_irn_probe). */
static void set_deadline(rs_transport *tp, rs_qp *qp)
{
    const rs_irn *x = qp->irn;
    int64_t t = rto_at(qp);
    if (x->reorder_ps && !x->probed && probe_at(x) < t)
        t = probe_at(x);
    if (t < tp->net.eng.now_ps)
        t = tp->net.eng.now_ps;
    qp->rto_deadline_ps = t;
    if (!qp->rto.armed || qp->rto.when_ps > t)
        rs_engine_arm(&tp->net.eng, &qp->rto, t); /* a later deadline re-arms lazily (rs_comp_rto) */
}

void rs_irn_arm_rto(rs_transport *tp, rs_qp *qp)
{
    qp->irn->last_tx_ps = tp->net.eng.now_ps; /* a request packet was sent */
    if (!qp->rto_deadline_ps) {
        qp->irn->rto_start_ps = tp->net.eng.now_ps;
        qp->irn->probed = 0;
    }
    set_deadline(tp, qp);
}

int rs_irn_req_can_send(const rs_transport *tp, const rs_qp *qp)
{
    if (qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD)
        return 0;
    if (qp->rnr_until_ps > tp->net.eng.now_ps)
        return 0;
    if (has_retx(qp))
        return 1;
    if (qp->req_idx >= qp->sq_count)
        return 0;
    if (rs_psn_diff(qp->req_psn, qp->comp_psn) >= (int32_t)qp->irn->window)
        return 0; /* BDP cap */
    /* READ/atomics and SEND/WRITEs are never outstanding together: a READ/atomic phase runs
     * Go-Back-N, a SEND/WRITE phase IRN (rd_phase: the outstanding WQEs are READ/atomics) */
    int rd_phase = qp->req_idx > 0 && rs_wr_is_rd_atomic(qp->sq[qp->sq_head].opcode);
    const rs_swqe *w = &qp->sq[rs_qp_sq_slot(qp, qp->req_idx)];
    if (rs_wr_is_rd_atomic(w->opcode) ? (qp->req_psn != qp->comp_psn && !rd_phase) : rd_phase)
        return 0;
    if (qp->req_off == 0 && !rs_req_may_start(qp, w))
        return 0;
    return rs_cc_window_open(tp, qp, w); /* new packets only: a retransmission goes regardless */
}

/* Where PSN `psn` (a SEND/WRITE packet already sent) lives: WQE offset from the head, byte offset. */
static int locate(rs_qp *qp, uint32_t psn, uint32_t *idx, uint64_t *off)
{
    for (uint32_t i = 0; i <= qp->req_idx && i < qp->sq_count; i++) {
        const rs_swqe *w = rs_qp_swqe(qp, i);
        if (!w->started || (i == qp->req_idx && qp->req_off == 0))
            break;
        int32_t d = rs_psn_diff(psn, w->first_psn);
        if (d >= 0 && (uint32_t)d < w->npkts) {
            if (rs_wr_is_rd_atomic(w->opcode))
                return -1;
            *idx = i;
            *off = (uint64_t)d * qp->pmtu;
            return 0;
        }
    }
    return -1;
}

/* The IRN header of a SEND/WRITE packet (what IRN adds on the wire; metadata here). */
static void tag(const rs_swqe *w, uint64_t off, rs_pkt *p)
{
    p->x_valid = 1;
    p->x_off = off;
    if (w->opcode == RS_WR_RDMA_WRITE || w->opcode == RS_WR_RDMA_WRITE_WITH_IMM) {
        p->x_va = w->remote_addr + off;
        p->x_rkey = w->rkey;
        p->x_len = (uint32_t)w->length;
    }
    if (wr_uses_recv(w->opcode))
        p->x_seq = w->irn_recv_seq;
}

/* A bit at least every window/8 packets (and on every last packet): ACKs keep the window open.
 * OOO: every window/4 (half the ACKs: the window still opens in quarters) */
static uint32_t ack_step(const rs_irn *x)
{
    if (x->reorder_ps)
        return x->window >= 8 ? x->window / 4 : 1;
    return x->window >= 16 ? x->window / 8 : 1;
}

static rs_pkt *retransmit(rs_transport *tp, rs_qp *qp, uint32_t idx, uint64_t off)
{
    rs_irn *x = qp->irn;
    uint32_t psn = x->retx_psn;
    uint32_t save_idx = qp->req_idx, save_psn = qp->req_psn, save_ack = qp->since_ackreq;
    uint64_t save_off = qp->req_off;
    qp->req_idx = idx;
    qp->req_off = off;
    qp->req_psn = psn;
    const rs_swqe *w = rs_qp_swqe(qp, idx);
    rs_pkt *p = rs_req_build_packet(tp, qp);
    if (!p && qp->state == RS_QPS_ERR)
        return NULL; /* local error: the QP was flushed */
    qp->req_idx = save_idx;
    qp->req_off = save_off;
    qp->req_psn = save_psn;
    qp->since_ackreq = save_ack;
    if (qp->rto_deadline_ps)
        set_deadline(tp, qp); /* armed while req_psn pointed here: RTO_low/high by what is in flight */
    if (!p)
        return NULL;
    tag(w, off, p);
    p->ackreq = 1;
    if (x->rtt_on && psn == x->rtt_psn)
        x->rtt_on = 0; /* Karn: no round trip from a PSN sent twice */
    if (x->reorder_ps)
        bclr(x->lost, bidx(x, psn));
    x->retx_psn = psn_next(psn);
    advance_retx(qp);
    return p;
}

rs_pkt *rs_irn_req_build(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    if (has_retx(qp)) {
        uint32_t idx;
        uint64_t off;
        if (locate(qp, x->retx_psn, &idx, &off) == 0)
            return retransmit(tp, qp, idx, off);
        x->in_recovery = 0; /* nothing resendable there: go on with new data */
        if (!rs_irn_req_can_send(tp, qp))
            return NULL;
    }
    if (qp->req_psn == qp->comp_psn) { /* nothing outstanding: recovery state starts afresh here */
        x->in_recovery = 0;
        x->retx_psn = x->snd_base = qp->comp_psn;
    }
    rs_swqe *w = rs_qp_swqe(qp, qp->req_idx);
    uint64_t off = qp->req_off;
    if (!w->started && wr_uses_recv(w->opcode))
        w->irn_recv_seq = x->send_seq++;
    rs_pkt *p = rs_req_build_packet(tp, qp);
    if (!p || rs_wr_is_rd_atomic(w->opcode))
        return p;
    tag(w, off, p);
    if (p->ackreq || ++x->since_ackreq >= ack_step(x)) {
        p->ackreq = 1;
        x->since_ackreq = 0;
        if (x->reorder_ps && !x->rtt_on) { /* time its ACK: one round trip measured at a time */
            x->rtt_on = 1;
            x->rtt_psn = p->psn;
            x->rtt_sent_ps = tp->net.eng.now_ps;
        }
    }
    return p;
}

int rs_irn_rewind(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    rs_irn *x = qp->irn;
    if (rd_atomic_phase(qp) || rs_psn_diff(psn, qp->req_psn) >= 0) {
        x->in_recovery = 0; /* Go-Back-N: a READ/atomic alone in flight, or skipping forward */
        return 0;
    }
    /* timeout or RNR: `psn` (the oldest unacknowledged) and every un-SACKed PSN after it up to
     * the last one sent is resent.  `psn` goes even if SACKed: then the responder has everything
     * and only its cumulative ACK was lost, and the duplicate makes it ACK again. */
    if (x->reorder_ps) {
        /* OOO: nothing is SACKed.  A timeout resends the oldest unacknowledged PSN only (the
         * responder reports the gaps after it once it holds later PSNs); an RNR NAK (the
         * responder refused `psn` and holds nothing it could not place) every PSN from it on */
        int rnr = qp->rnr_until_ps > tp->net.eng.now_ps;
        uint32_t end = rnr ? qp->req_psn : psn_next(psn);
        for (uint32_t m = psn; m != end; m = psn_next(m))
            bset(x->lost, bidx(x, m));
        x->in_recovery = 1;
        x->recovery_psn = qp->req_psn;
        x->lost_below = end;
        x->retx_psn = psn;
        rs_nic_wake(tp, qp);
        return 1;
    }
    x->in_recovery = 1;
    x->recovery_psn = qp->req_psn;
    x->lost_below = qp->req_psn;
    x->retx_psn = psn;
    rs_nic_wake(tp, qp);
    return 1;
}

/* The cumulative ACK (comp_psn) may have moved: clear the SACK bits behind it, end recovery. */
static void on_cumulative(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    int32_t d = rs_psn_diff(qp->comp_psn, x->snd_base);
    if (d < 0 || (uint32_t)d >= x->cap) {
        memset(x->sacked, 0, x->cap / 8);
        memset(x->lost, 0, x->cap / 8);
        x->sacked_count = 0;
    } else {
        for (; x->snd_base != qp->comp_psn; x->snd_base = psn_next(x->snd_base)) {
            uint32_t i = bidx(x, x->snd_base);
            if (bget(x->sacked, i)) {
                bclr(x->sacked, i);
                x->sacked_count--;
            }
            bclr(x->lost, i);
        }
    }
    x->snd_base = qp->comp_psn;
    if (x->rtt_on && rs_psn_diff(qp->comp_psn, x->rtt_psn) > 0) {
        x->rtt_on = 0;
        x->srtt_ps = tp->net.eng.now_ps - x->rtt_sent_ps; /* RACK.rtt: the latest (RFC 8985 6.2) */
    }
    if (x->in_recovery && rs_psn_diff(qp->comp_psn, x->recovery_psn) >= 0)
        x->in_recovery = 0;
    advance_retx(qp);
}

static void on_sack(rs_transport *tp, rs_qp *qp, uint32_t sack)
{
    rs_irn *x = qp->irn;
    if (rs_psn_diff(sack, qp->comp_psn) < 0 || rs_psn_diff(sack, qp->req_psn) >= 0)
        return;
    uint32_t i = bidx(x, sack);
    if (!bget(x->sacked, i)) {
        bset(x->sacked, i);
        x->sacked_count++;
    }
    if (!x->in_recovery) {
        x->in_recovery = 1;
        x->recovery_psn = qp->req_psn;
        /* PSNs before retx_psn were resent already (a retransmission still on its way must not
         * go twice): only a timeout moves retx_psn back */
        if (rs_psn_diff(x->retx_psn, qp->comp_psn) < 0 || rs_psn_diff(x->retx_psn, qp->req_psn) > 0)
            x->retx_psn = qp->comp_psn;
        x->lost_below = sack;
        rs_trace_retry(tp, qp, RS_TR_RETRY_NAK);
    } else if (rs_psn_diff(sack, x->lost_below) > 0) {
        x->lost_below = sack;
    }
    advance_retx(qp);
}

/* OOO: the responder reports `m` lost (or the tail probe resends it): it is resent once (again
 * only on a later report, probe or timeout); recovery lasts until the cumulative ACK passes
 * everything sent so far. */
static void on_lost(rs_transport *tp, rs_qp *qp, uint32_t m)
{
    rs_irn *x = qp->irn;
    if (rs_psn_diff(m, qp->comp_psn) < 0 || rs_psn_diff(m, qp->req_psn) >= 0)
        return;
    x->rtt_on = 0; /* the timed PSN's ACK may wait for this gap: no round trip from it */
    bset(x->lost, bidx(x, m));
    if (!x->in_recovery) {
        x->in_recovery = 1;
        x->retx_psn = m;
        x->lost_below = psn_next(m);
        rs_trace_retry(tp, qp, RS_TR_RETRY_NAK);
    } else {
        if (rs_psn_diff(m, x->lost_below) >= 0)
            x->lost_below = psn_next(m);
        if (rs_psn_diff(m, x->retx_psn) < 0)
            x->retx_psn = m;
    }
    x->recovery_psn = qp->req_psn;
    advance_retx(qp);
}

/* OOO tail loss probe (RFC 8985 7: TLP): no cumulative progress for probe_wait since the timer
 * started, so the ACKs, or the last packets, were lost: the last PSN sent goes again with the A
 * bit, once per timer start.  The responder ACKs it as a duplicate (or places it and reports the
 * gaps before it), so a lost ACK or tail costs a round trip and the reorder time, not RTO_high.
 * 1: probed (the retransmit timer runs on); 0: a timeout. */
int rs_irn_probe(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    int64_t now = tp->net.eng.now_ps;
    if (!x || !x->reorder_ps || rd_atomic_phase(qp) || now >= rto_at(qp))
        return 0;
    if (x->probed || now < probe_at(x)) { /* packets went since it was set: not due yet */
        set_deadline(tp, qp);
        return 1;
    }
    x->probed = 1;
    x->rtt_on = 0;
    set_deadline(tp, qp);
    on_lost(tp, qp, (qp->req_psn - 1) & RS_PSN_MASK);
    rs_nic_wake(tp, qp);
    return 1;
}

int rs_irn_comp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    uint8_t syn = pkt->aeth_syndrome;
    int is_ack = (syn & RS_AETH_TYPE_MASK) == RS_AETH_ACK;
    if (pkt->opcode != RS_OP_ACKNOWLEDGE || !(is_ack || syn == RS_AETH_NAK_PSN_SEQ) || rd_atomic_phase(qp))
        return 0; /* READ/atomic responses, RNR and error NAKs: Go-Back-N's rules */
    if ((qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) ||
        rs_psn_diff(pkt->psn, qp->max_sent_psn_next) >= 0)
        return 0; /* not for anything sent: Go-Back-N counts and drops it */
    uint32_t psn = pkt->psn, sack = pkt->x_sack_psn;
    int has_sack = !is_ack && pkt->x_valid, lost = pkt->x_lost;
    rs_pkt_release(&tp->pool, pkt);
    if (is_ack) {
        qp->stats.acks_rcvd++;
        if (rs_psn_diff(psn, qp->comp_psn) >= 0)
            rs_comp_ack_through(tp, qp, psn); /* completes WQEs in order, restarts the timer */
    } else {
        qp->stats.naks_rcvd++;
        if (rs_psn_diff(psn, qp->comp_psn) > 0)
            rs_comp_ack_through(tp, qp, (psn - 1) & RS_PSN_MASK);
    }
    if (qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD)
        return 1;
    qp->irn->probed = 0; /* the responder was heard since a probe: another may go (RFC 8985 7.3) */
    on_cumulative(tp, qp);
    if (has_sack && lost)
        on_lost(tp, qp, sack);
    else if (has_sack)
        on_sack(tp, qp, sack);
    if (qp->rto_deadline_ps)
        set_deadline(tp, qp); /* fewer in flight may mean RTO_low now */
    rs_nic_wake(tp, qp);
    return 1;
}

/* ---------------------------------------------------------------- responder */

/* ACK, or NAK (PSN sequence error) with the selective ACK `sack` (no SACK if sack_valid is 0; with
 * sack_valid 2 `sack` is a PSN reported lost, RS_RECOVERY_OOO) */
static void send_aeth(rs_transport *tp, rs_qp *qp, uint8_t syndrome, uint32_t psn, uint32_t sack, int sack_valid)
{
    rs_pkt *a = rs_nic_new_packet(tp, qp, RS_OP_ACKNOWLEDGE, psn);
    if (!a)
        return;
    a->aeth_syndrome = syndrome;
    a->aeth_msn = qp->msn & 0xFFFFFF;
    if ((syndrome & RS_AETH_TYPE_MASK) == RS_AETH_ACK) {
        qp->stats.acks_sent++;
    } else {
        a->x_valid = sack_valid != 0;
        a->x_lost = sack_valid == 2;
        a->x_sack_psn = sack;
        qp->stats.naks_sent++;
    }
    rs_resp_send_ctrl(tp, qp, a);
}

/* Place an out-of-order SEND/WRITE packet; 0 placed, -1 not now (no receive WQE yet, or a check
 * fails: it is then handled in order, with Go-Back-N's error rules). */
static int place(rs_qp *qp, const rs_pkt *pkt, rs_irn_slot *slot)
{
    uint8_t op = pkt->opcode;
    uint32_t len = pkt->payload_len;
    if (!rs_resp_length_ok(qp, op, len))
        return -1;
    const rs_rwqe *r = NULL;
    if (rs_op_is_send(op) || (rs_op_has_imm(op) && rs_op_ends(op))) {
        uint32_t k = pkt->x_seq - qp->rq_done; /* the receive WQE it lands in, from the head */
        if (k >= qp->rq_count)
            return -1;
        r = &qp->rq[(qp->rq_head + k) % qp->init.max_recv_wr];
    }
    if (rs_op_is_send(op)) {
        if (pkt->x_off + len > r->length)
            return -1;
        if (len && rs_scatter_sges(qp->host, qp->init.pd, r->sge, r->num_sge, pkt->x_off, pkt->payload, len))
            return -1;
        slot->byte_len = (uint32_t)(pkt->x_off + len);
    } else {
        if (!(qp->attr.qp_access_flags & RS_ACCESS_REMOTE_WRITE) || pkt->x_off + len > pkt->x_len)
            return -1;
        if (len) {
            uint8_t *dst = rs_mr_resolve(qp->host, pkt->x_rkey, qp->qpn, qp->init.pd, RS_ACCESS_REMOTE_WRITE,
                                         pkt->x_va, len);
            if (!dst)
                return -1;
            if (dst == RS_MR_NO_BYTES)
                ; /* size-only region: nothing to place */
            else if (pkt->payload)
                memcpy(dst, pkt->payload, len);
            else
                memset(dst, 0, len);
        }
        slot->byte_len = pkt->x_len;
    }
    slot->opcode = op;
    slot->ackreq = pkt->ackreq;
    slot->imm = pkt->imm;
    return 0;
}

/* OOO: report PSN `m` lost (ooo_loss.c decides when): a NAK (PSN sequence error) carrying the
 * cumulative ACK and the lost PSN. */
void rs_irn_nak_lost(rs_transport *tp, rs_qp *qp, uint32_t m)
{
    send_aeth(tp, qp, RS_AETH_NAK_PSN_SEQ, qp->resp_psn, m, 2);
}

static void receive_ooo(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    rs_irn *x = qp->irn;
    uint32_t i = bidx(x, pkt->psn);
    if (bget(x->rcvd, i) && pkt->ackreq && x->reorder_ps)
        rs_ooo_probed(tp, qp, pkt->psn); /* a tail probe is answered (ooo_loss.c) */
    if (!bget(x->rcvd, i)) {
        if (place(qp, pkt, &x->slot[i]) != 0) {
            qp->stats.ooo_dropped++;
            return;
        }
        bset(x->rcvd, i);
        qp->stats.ooo_placed++;
        qp->stats.bytes_rcvd += pkt->payload_len;
        if (x->reorder_ps) {
            rs_ooo_filled(tp, qp, pkt->psn);
            rs_ooo_sync(qp);
            if (rs_psn_diff(psn_next(pkt->psn), x->rcv_high) > 0)
                x->rcv_high = psn_next(pkt->psn);
        }
    }
    if (x->reorder_ps)
        rs_ooo_detect(tp, qp); /* an out-of-order arrival is no error: no NAK for it */
    else
        send_aeth(tp, qp, RS_AETH_NAK_PSN_SEQ, qp->resp_psn, pkt->psn, 1);
}

/* The expected PSN passes a packet placed out of order: what it owes, in order. */
static void pass_placed(rs_transport *tp, rs_qp *qp, const rs_irn_slot *s)
{
    uint8_t op = s->opcode;
    if (!rs_op_ends(op)) {
        qp->in_msg = rs_op_is_send(op) ? 1 : 2; /* inside a SEND / a WRITE */
        return;
    }
    qp->msn = (qp->msn + 1) & 0xFFFFFF;
    qp->in_msg = 0;
    rs_qp_msg_received(tp, qp);
    if (rs_op_is_send(op))
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_SUCCESS, RS_WC_OPCODE_RECV, s->byte_len, rs_op_has_imm(op), s->imm);
    else if (rs_op_has_imm(op))
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_SUCCESS, RS_WC_OPCODE_RECV_RDMA_WITH_IMM, s->byte_len, 1, s->imm);
}

static void receive_in_order(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    if (pkt->x_valid && !rs_op_starts(op)) {
        /* earlier packets of this message may have been placed out of order: the message
         * cursor Go-Back-N keeps comes from this packet's IRN header */
        if (rs_op_is_send(op)) {
            qp->recv_off = pkt->x_off;
        } else if (rs_op_is_write(op)) {
            qp->write_va = pkt->x_va;
            qp->write_rkey = pkt->x_rkey;
            qp->write_len = pkt->x_len;
            qp->write_left = pkt->x_off <= pkt->x_len ? pkt->x_len - pkt->x_off : 0;
            qp->write_gen = 0; /* the cursor moved: the rest of the message resolves per packet */
        }
    }
    rs_irn *x = qp->irn;
    if (x->reorder_ps)
        rs_ooo_filled(tp, qp, pkt->psn);
    int asked = pkt->ackreq;
    if (bget(x->rcvd, bidx(x, psn_next(pkt->psn))))
        pkt->ackreq = 0; /* it fills a hole: the ACK after the placed packets covers it */
    uint32_t before = qp->resp_psn;
    rs_resp_execute(tp, qp, pkt);
    if (qp->resp_psn == before || (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD))
        return; /* refused (NAK or RNR NAK sent) */
    uint32_t passed = 0;
    for (uint32_t i = bidx(x, qp->resp_psn); bget(x->rcvd, i); i = bidx(x, qp->resp_psn)) {
        bclr(x->rcvd, i);
        pass_placed(tp, qp, &x->slot[i]);
        asked |= x->slot[i].ackreq;
        qp->resp_psn = psn_next(qp->resp_psn);
        passed++;
    }
    rs_trace_accept(tp, qp, pkt->psn, qp->resp_psn); /* accepted, and the placed ones after it */
    /* IRN acknowledges every filled hole; OOO only when one of the packets asked for it (the
     * requester's A bits come every window/4 packets and on each message's last) */
    if (passed && (asked || !x->reorder_ps))
        send_aeth(tp, qp, RS_AETH_ACK_UNLIMITED, (qp->resp_psn - 1) & RS_PSN_MASK, 0, 0);
    if (x->reorder_ps)
        rs_ooo_detect(tp, qp);
}

/* A request ahead of the expected PSN that is not kept (a READ/atomic -- then the requester is in
 * a Go-Back-N phase and gets Go-Back-N's one NAK per gap -- or one beyond the bitmap). */
static void ooo_not_kept(rs_transport *tp, rs_qp *qp)
{
    qp->stats.ooo_dropped++;
    if (!qp->nak_sent) {
        qp->nak_sent = 1;
        send_aeth(tp, qp, RS_AETH_NAK_PSN_SEQ, qp->resp_psn, 0, 0);
    }
}

void rs_irn_resp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) {
        qp->host->rx_bad_state++;
        rs_pkt_release(&tp->pool, pkt);
        return;
    }
    uint8_t op = pkt->opcode;
    int32_t d = rs_psn_diff(pkt->psn, qp->resp_psn);
    if (d < 0) {
        rs_resp_duplicate(tp, qp, pkt);
    } else if (d == 0) {
        receive_in_order(tp, qp, pkt);
        /* OOO: READ requests kept ahead, now in order (ooo_read.c) */
        for (rs_pkt *r; qp->irn && qp->irn->n_rd_req && (r = rs_ooo_rdreq_take(tp, qp));) {
            receive_in_order(tp, qp, r);
            rs_pkt_release(&tp->pool, r);
        }
    } else if ((rs_op_is_send(op) || rs_op_is_write(op)) && pkt->x_valid && (uint32_t)d < qp->irn->cap) {
        receive_ooo(tp, qp, pkt);
    } else if (qp->irn->reorder_ps && (rs_op_is_read(op) || rs_op_is_atomic(op)) && rs_ooo_rdreq_hold(tp, qp, pkt)) {
        return; /* kept (or dropped as a duplicate) by ooo_read.c */
    } else {
        ooo_not_kept(tp, qp);
    }
    rs_pkt_release(&tp->pool, pkt);
}

/* ---------------------------------------------------------------- QP setup */

void rs_irn_reset(rs_qp *qp)
{
    rs_irn *x = qp->irn;
    if (!x)
        return;
    memset(x->sacked, 0, x->cap / 8);
    memset(x->lost, 0, x->cap / 8);
    memset(x->rcvd, 0, x->cap / 8);
    memset(x->slot, 0, x->cap * sizeof(*x->slot));
    memset(x->rep_at, 0, x->cap * sizeof(*x->rep_at));
    memset(x->rep_again, 0, x->cap / 8);
    x->rr_rtt_ps = x->rr_due_ps = 0;
    rs_ooo_read_clear(qp);
    x->rcv_high = x->reported = x->ck_psn = qp->resp_psn;
    x->ck_set = 0;
    x->ck_ps = 0;
    x->sacked_count = 0;
    x->snd_base = qp->comp_psn;
    x->in_recovery = 0;
    x->recovery_psn = x->lost_below = x->retx_psn = 0;
    x->send_seq = 0;
    x->since_ackreq = 0;
    x->rto_start_ps = 0;
    x->probed = x->rtt_on = 0;
    x->srtt_ps = x->last_tx_ps = 0;
}

uint32_t rs_irn_held(const rs_qp *qp)
{
    uint32_t n = 0;
    for (uint32_t i = 0; qp->irn && i < qp->irn->cap; i++)
        n += (uint32_t)bget(qp->irn->rcvd, i);
    return n;
}

void rs_irn_free(rs_qp *qp)
{
    if (!qp->irn)
        return;
    rs_ooo_read_clear(qp);
    free(qp->irn->rd_held);
    free(qp->irn->rep_at);
    free(qp->irn->rep_again);
    free(qp->irn->sacked);
    free(qp->irn->lost);
    free(qp->irn->rcvd);
    free(qp->irn->slot);
    free(qp->irn);
    qp->irn = NULL;
}

static rs_qp *find_qp(const rs_transport *tp, int host, uint32_t qpn)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return NULL;
    return rs_host_qp(tp->hosts[host], qpn);
}

int rs_tp_qp_set_recovery(rs_transport *tp, int host, uint32_t qpn, const rs_recovery_params *p)
{
    rs_qp *qp = find_qp(tp, host, qpn);
    if (!qp)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no QP 0x%x on host %d", qpn, host);
    if (qp->state != RS_QPS_RESET && qp->state != RS_QPS_INIT && qp->state != RS_QPS_RTR)
        return rs_tp_fail(tp, RS_ERR_STATE,
                          "QP 0x%x is in %s: choose the loss recovery in RESET, INIT or RTR, before it "
                          "sends (both ends of the connection must use the same)",
                          qpn, rs_qp_state_name(qp->state));
    if (p->mode == RS_RECOVERY_GBN) {
        rs_irn_free(qp);
        qp->recovery = RS_RECOVERY_GBN;
        return RS_OK;
    }
    if (qp->is_ud || qp->is_uc || qp->srq)
        return rs_tp_fail(tp, RS_ERR_INVAL, "QP 0x%x: IRN loss recovery is for RC QPs with their own receive "
                          "queue (not UD or UC, which recover nothing, not an SRQ)", qpn);
    if (p->mode != RS_RECOVERY_IRN && p->mode != RS_RECOVERY_OOO)
        return rs_tp_fail(tp, RS_ERR_INVAL, "loss recovery mode %u: 0 = Go-Back-N, 1 = IRN, 2 = out-of-order "
                          "placement (OOO)", p->mode);
    if (p->mode == RS_RECOVERY_OOO && (p->reorder_ps <= 0 || p->reorder_ps > RS_MAX_TIME_PS))
        return rs_tp_fail(tp, RS_ERR_INVAL, "OOO reorder time %lld ps is out of range (1..%lld)",
                          (long long)p->reorder_ps, (long long)RS_MAX_TIME_PS);
    if (p->window < 1 || p->window > IRN_MAX_WINDOW)
        return rs_tp_fail(tp, RS_ERR_INVAL, "IRN window=%u packets is out of range (1..%u)", p->window,
                          IRN_MAX_WINDOW);
    if (p->rto_low_ps <= 0 || p->rto_high_ps < p->rto_low_ps)
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "IRN timeouts rto_low=%lld ps, rto_high=%lld ps: need 0 < rto_low <= rto_high",
                          (long long)p->rto_low_ps, (long long)p->rto_high_ps);
    uint32_t cap = 8;
    while (cap < p->window)
        cap <<= 1;
    uint8_t *sacked = calloc(cap / 8, 1), *rcvd = calloc(cap / 8, 1), *lost = calloc(cap / 8, 1);
    uint8_t *rd_held = calloc(cap / 8, 1), *rep_again = calloc(cap / 8, 1);
    int64_t *rep_at = calloc(cap, sizeof(*rep_at));
    rs_irn_slot *slot = calloc(cap, sizeof(*slot));
    rs_irn *x = calloc(1, sizeof(*x));
    if (!sacked || !rcvd || !lost || !rd_held || !rep_again || !rep_at || !slot || !x) {
        free(rep_again);
        free(rep_at);
        free(rd_held);
        free(sacked);
        free(lost);
        free(rcvd);
        free(slot);
        free(x);
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for IRN bitmaps of %u packets", cap);
    }
    rs_irn_free(qp);
    qp->irn = x;
    x->window = p->window;
    x->rto_low_pkts = p->rto_low_pkts;
    x->rto_low_ps = p->rto_low_ps;
    x->rto_high_ps = p->rto_high_ps;
    x->cap = cap;
    x->reorder_ps = p->mode == RS_RECOVERY_OOO ? p->reorder_ps : 0;
    x->sacked = sacked;
    x->lost = lost;
    x->rcvd = rcvd;
    x->slot = slot;
    x->rd_held = rd_held;
    x->rep_at = rep_at;
    x->rep_again = rep_again;
    rs_irn_reset(qp);
    qp->recovery = RS_RECOVERY_IRN;
    return RS_OK;
}

int rs_tp_qp_get_recovery(const rs_transport *tp, int host, uint32_t qpn, rs_recovery_params *out)
{
    const rs_qp *qp = find_qp(tp, host, qpn);
    if (!qp)
        return RS_ERR_INVAL;
    *out = (rs_recovery_params){.mode = qp->recovery};
    if (qp->irn) {
        if (qp->irn->reorder_ps)
            out->mode = RS_RECOVERY_OOO;
        out->reorder_ps = qp->irn->reorder_ps;
        out->window = qp->irn->window;
        out->rto_low_pkts = qp->irn->rto_low_pkts;
        out->rto_low_ps = qp->irn->rto_low_ps;
        out->rto_high_ps = qp->irn->rto_high_ps;
    }
    return RS_OK;
}
