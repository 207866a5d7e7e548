/* Loss detection of an out-of-order (OOO) responder: when a gap in the PSNs it holds is reported
 * lost, and reported again (RS_RECOVERY_OOO, docs/multipath.md "Loss detection").
 *
 * The rules are RACK's (Cheng et al., RFC 8985), applied at the receiver, which alone sees the
 * PSNs that arrived (the requester gets cumulative ACKs and one NAK per lost PSN, no SACK):
 *
 *   first report   a gap counts as lost once a later PSN has been held for reorder_ps (RFC 8985
 *                  6.2: lost once a later-sent packet was delivered and the reordering window has
 *                  passed; time, not a packet count, because per-packet paths reorder by many).
 *                  A checkpoint (ck_ps, ck_psn) notes when PSN ck_psn - 1 at the latest was held;
 *                  reorder_ps later every gap before ck_psn is reported, one NAK per lost PSN.
 *   report again   a reported gap whose retransmission has not arrived rtt + reorder_ps after the
 *                  report is reported again (RFC 8985 6.2: a packet, retransmissions included, is
 *                  lost once now >= its transmit time + RACK.rtt + RACK.reo_wnd, which detects
 *                  lost retransmissions without a timeout).  The report stands for the
 *                  retransmission's transmit time; rtt is the time from the latest report of a
 *                  gap reported once to its arrival (RACK.rtt: the RTT of the most recently
 *                  delivered packet, not measured on one reported twice, Karn's rule), before the
 *                  first such arrival reorder_ps.  A lost NAK is covered by the same rule.
 *
 * One timer (qp->reorder_timer) runs to the earlier of the checkpoint's end and the first
 * report due again, so a requester whose window is full behind a gap is not left to its
 * retransmit timeout. */
#include "transport/transport.h"

#include "rdmasim/ib.h"

static inline uint32_t bidx(const rs_irn *x, uint32_t psn) { return psn & (x->cap - 1); }
static inline int bget(const uint8_t *m, uint32_t i) { return (m[i >> 3] >> (i & 7)) & 1; }
static inline void bset(uint8_t *m, uint32_t i) { m[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void bclr(uint8_t *m, uint32_t i) { m[i >> 3] &= (uint8_t)~(1u << (i & 7)); }
static inline uint32_t psn_next(uint32_t psn) { return (psn + 1) & RS_PSN_MASK; }

/* rcv_high and reported stay in [resp_psn, resp_psn + cap] (no gap: both at resp_psn). */
void rs_ooo_sync(rs_qp *qp)
{
    rs_irn *x = qp->irn;
    int32_t d = rs_psn_diff(x->rcv_high, qp->resp_psn);
    if (d <= 0 || (uint32_t)d > x->cap) {
        x->rcv_high = x->reported = qp->resp_psn;
        x->ck_set = 0;
        x->rr_due_ps = 0;
    } else if (rs_psn_diff(x->reported, qp->resp_psn) < 0) {
        x->reported = qp->resp_psn;
    }
}

static int64_t rereport_wait(const rs_irn *x)
{
    return (x->rr_rtt_ps ? x->rr_rtt_ps : x->reorder_ps) + x->reorder_ps;
}

void rs_ooo_filled(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    rs_irn *x = qp->irn;
    if (rs_psn_diff(psn, qp->resp_psn) < 0 || rs_psn_diff(psn, x->reported) >= 0)
        return; /* never reported */
    uint32_t i = bidx(x, psn);
    if (!bget(x->rep_again, i))
        x->rr_rtt_ps = tp->net.eng.now_ps - x->rep_at[i];
}

/* Report gap `m` lost now (again if it was before). */
static void report(rs_transport *tp, rs_qp *qp, uint32_t m, int again)
{
    rs_irn *x = qp->irn;
    uint32_t i = bidx(x, m);
    x->rep_at[i] = tp->net.eng.now_ps;
    if (again)
        bset(x->rep_again, i);
    else
        bclr(x->rep_again, i);
    int64_t due = x->rep_at[i] + rereport_wait(x);
    if (!x->rr_due_ps || due < x->rr_due_ps)
        x->rr_due_ps = due;
    rs_irn_nak_lost(tp, qp, m);
}

/* The gaps before `reported` whose report is older than rtt + reorder_ps are reported again. */
static void report_again(rs_transport *tp, rs_qp *qp, int64_t now)
{
    rs_irn *x = qp->irn;
    if (!x->rr_due_ps || now < x->rr_due_ps)
        return;
    int64_t wait = rereport_wait(x), next = 0;
    x->rr_due_ps = 0;
    for (uint32_t m = qp->resp_psn; rs_psn_diff(m, x->reported) < 0; m = psn_next(m)) {
        uint32_t i = bidx(x, m);
        if (m != qp->resp_psn && bget(x->rcvd, i))
            continue;
        int64_t due = x->rep_at[i] + wait;
        if (due <= now) {
            report(tp, qp, m, 1);
            due = now + wait;
        }
        if (!next || due < next)
            next = due;
    }
    if (next && (!x->rr_due_ps || next < x->rr_due_ps))
        x->rr_due_ps = next;
}

/* The timer to the checkpoint's end or the first report due again, whichever comes first. */
static void arm(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    int64_t t = x->ck_set ? x->ck_ps + x->reorder_ps : 0;
    if (x->rr_due_ps && (!t || x->rr_due_ps < t))
        t = x->rr_due_ps;
    if (!t)
        return;
    if (t < tp->net.eng.now_ps)
        t = tp->net.eng.now_ps;
    if (!qp->reorder_timer.armed || qp->reorder_timer.when_ps > t)
        rs_engine_arm(&tp->net.eng, &qp->reorder_timer, t); /* a later one: it re-arms when it fires */
}

void rs_ooo_detect(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    rs_ooo_sync(qp);
    if (x->rcv_high == qp->resp_psn)
        return; /* no gap */
    int64_t now = tp->net.eng.now_ps;
    if (x->ck_set && rs_psn_diff(x->ck_psn, qp->resp_psn) <= 0)
        x->ck_set = 0; /* the gaps it covered are filled */
    if (!x->ck_set) {
        x->ck_set = 1;
        x->ck_ps = now;
        x->ck_psn = x->rcv_high;
    } else if (now - x->ck_ps >= x->reorder_ps) {
        report_again(tp, qp, now); /* before: the gaps reported now are not due again */
        for (uint32_t m = x->reported; rs_psn_diff(m, x->ck_psn) < 0; m = psn_next(m))
            if (m == qp->resp_psn || !bget(x->rcvd, bidx(x, m)))
                report(tp, qp, m, 0);
        if (rs_psn_diff(x->ck_psn, x->reported) > 0)
            x->reported = x->ck_psn;
        x->ck_set = rs_psn_diff(x->rcv_high, x->ck_psn) > 0; /* the later PSNs: a new checkpoint */
        x->ck_ps = now;
        x->ck_psn = x->rcv_high;
    }
    report_again(tp, qp, now);
    arm(tp, qp);
}

/* The highest PSN held arrived again with the A bit: the requester's tail probe (irn.c
 * rs_irn_probe: the last PSN sent, because nothing it heard moved the cumulative ACK; a resent
 * gap is never the highest PSN held).  A probe is answered
 * (RFC 8985 7: the receiver's ACK of the probe carries what it holds, and the sender's RACK then
 * marks the holes lost): every gap already reported and still missing is reported again now, so
 * a lost report, or a lost retransmission of a reported gap, costs the probe's round trip, not a
 * report-again period or the retransmit timeout.  Gaps not yet reported wait for their
 * checkpoint as before (the reorder time has not passed for them). */
void rs_ooo_probed(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    rs_irn *x = qp->irn;
    rs_ooo_sync(qp);
    if (psn_next(psn) != x->rcv_high)
        return;
    for (uint32_t m = qp->resp_psn; rs_psn_diff(m, x->reported) < 0; m = psn_next(m))
        if (m == qp->resp_psn || !bget(x->rcvd, bidx(x, m)))
            report(tp, qp, m, 1);
    arm(tp, qp);
}

void rs_irn_reorder_due(rs_transport *tp, rs_qp *qp)
{
    if (!qp->irn || !qp->irn->reorder_ps ||
        (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD))
        return;
    rs_ooo_detect(tp, qp);
}
