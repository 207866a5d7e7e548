/* Completer (rxe_comp.c, protocol.md 3.4): acknowledgements in, completions out.
 *
 * ACKs are cumulative: an ACK for PSN p completes every WQE whose last PSN is
 * at or before p, in send-queue order.  A PSN-sequence-error NAK for p
 * acknowledges everything before p and rewinds the requester to p (Go-Back-N).
 * The retransmit timer (4.096 us * 2^timeout) restarts on every advance; each
 * retry, by NAK or timeout, uses one of retry_cnt; forward progress refills it. */
#include "transport/transport.h"

#include "transport/trace_qp.h"
#include "rdmasim/ib.h"

#include <string.h>

/* RNR NAK timer code -> microseconds (IBA table, protocol.md 2). */
static const int64_t rnr_timer_us[32] = {
    655360, 10,    20,    30,    40,    60,    80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,  2560,  3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

void rs_comp_arm_rto(rs_transport *tp, rs_qp *qp)
{
    if (qp->recovery == RS_RECOVERY_IRN)
        return rs_irn_arm_rto(tp, qp);
    if (!qp->rto_ps || qp->rto_deadline_ps)
        return;
    qp->rto_deadline_ps = tp->net.eng.now_ps + qp->rto_ps;
    if (!qp->rto.armed || qp->rto.when_ps > qp->rto_deadline_ps)
        rs_engine_arm(&tp->net.eng, &qp->rto, qp->rto_deadline_ps);
}

/* Restart the timer if packets are outstanding, else stop it. The heap entry is
 * left in place and re-armed when it fires early (no heap traffic per ACK). */
static void restart_rto(rs_transport *tp, rs_qp *qp)
{
    qp->rto_deadline_ps = 0;
    if (qp->req_psn != qp->comp_psn)
        rs_comp_arm_rto(tp, qp);
    else
        rs_timer_cancel(&qp->rto); /* nothing outstanding: no stray timer keeps the run alive */
}

static uint32_t last_psn(const rs_swqe *w) { return (w->first_psn + w->npkts - 1) & RS_PSN_MASK; }

/* Complete SEND/WRITE WQEs at the head whose last PSN is before `psn` (ACKs and responses for
 * later PSNs acknowledge them implicitly). Stops at a READ/atomic: only its response completes it. */
static void complete_implied(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    while (qp->sq_count) {
        rs_swqe *w = rs_qp_swqe(qp, 0);
        if (!w->started || rs_wr_is_rd_atomic(w->opcode) || rs_psn_diff(last_psn(w), psn) >= 0)
            break;
        rs_qp_complete_head(tp, qp, RS_WC_STATUS_SUCCESS);
    }
}

/* Everything up to and including `psn` is acknowledged. Forward progress (the oldest
 * unacknowledged PSN moves, or a WQE completes) refills the retry counters. */
void rs_comp_ack_through(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    uint32_t comp_before = qp->comp_psn, count_before = qp->sq_count;
    complete_implied(tp, qp, (psn + 1) & RS_PSN_MASK);
    if (qp->sq_count) { /* a READ/atomic at the head caps what a plain ACK can acknowledge */
        rs_swqe *w = rs_qp_swqe(qp, 0);
        if (w->started && rs_wr_is_rd_atomic(w->opcode) && rs_psn_diff(psn, w->first_psn) >= 0)
            psn = (w->first_psn - 1) & RS_PSN_MASK;
    }
    if (rs_psn_diff((psn + 1) & RS_PSN_MASK, qp->comp_psn) > 0)
        qp->comp_psn = (psn + 1) & RS_PSN_MASK;
    if (qp->comp_psn != comp_before || qp->sq_count != count_before) {
        qp->retry_started = 0;
        qp->retry_left = qp->attr.retry_cnt;
        qp->rnr_left = qp->attr.rnr_retry;
    }
    /* After a rewind the requester may be behind what the responder has already accepted
     * (an ACK for an earlier transmission arrived): skip forward instead of resending it. */
    if (rs_psn_diff(qp->comp_psn, qp->req_psn) > 0)
        rs_req_rewind(tp, qp, qp->comp_psn);
    restart_rto(tp, qp);
}

/* Fail the oldest WQE with `status`; the QP enters ERR and the rest is flushed. */
static void fail_head(rs_transport *tp, rs_qp *qp, uint32_t status)
{
    qp->state = RS_QPS_ERR;
    if (qp->sq_count)
        rs_qp_complete_head(tp, qp, status);
    rs_qp_to_error(tp, qp);
#ifdef RDMASIM_MUTANTS /* retry_to_reset: the failed QP lands in RESET, not ERR */
    if (RS_MUTANT(&tp->net.eng, RS_MUT_RETRY_TO_RESET))
        qp->state = RS_QPS_RESET;
#endif
}

/* One Go-Back-N retry from comp_psn, if retry_cnt allows; cause: rs_trace_retry_cause.
 * Once a retry sequence has started, later NAKs and implied NAKs caused by the packets that were
 * already in flight behind the lost one do not start another (and do not use retry_cnt) until
 * forward progress ends the sequence; only a timeout does (rxe_comp.c `started_retry`). */
static void retry(rs_transport *tp, rs_qp *qp, int cause)
{
    if (qp->retry_started && cause != RS_TR_RETRY_TIMEOUT)
        return;
    if (qp->retry_left == 0) {
        fail_head(tp, qp, RS_WC_STATUS_RETRY_EXC_ERR);
        return;
    }
    qp->retry_left--;
    qp->retry_started = 1;
    qp->rto_deadline_ps = 0;
    rs_trace_retry(tp, qp, cause);
    rs_cc_on_loss(tp, qp, qp->pmtu, 0); /* one packet lost, as far as the NAK or timeout tells */
    rs_req_rewind(tp, qp, qp->comp_psn);
}

void rs_comp_rto(rs_transport *tp, rs_qp *qp)
{
    if (!qp->rto_deadline_ps || (qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD))
        return;
    if (tp->net.eng.now_ps < qp->rto_deadline_ps) { /* restarted since this entry was queued */
        rs_engine_arm(&tp->net.eng, &qp->rto, qp->rto_deadline_ps);
        return;
    }
    if (qp->req_psn != qp->comp_psn && rs_irn_probe(tp, qp))
        return; /* OOO: a tail probe first (irn.c) */
    qp->rto_deadline_ps = 0;
    if (qp->req_psn == qp->comp_psn)
        return;
    qp->stats.timeouts++;
    rs_trace_timeout(tp, qp);
    retry(tp, qp, RS_TR_RETRY_TIMEOUT);
}

static void implied_nak(rs_transport *tp, rs_qp *qp);

static void on_nak(rs_transport *tp, rs_qp *qp, uint32_t psn, uint8_t syndrome)
{
    /* a NAK for p implicitly acknowledges every PSN before p */
    if (rs_psn_diff(psn, qp->comp_psn) > 0)
        rs_comp_ack_through(tp, qp, (psn - 1) & RS_PSN_MASK);
    if (qp->sq_count) { /* a NAK past a READ/atomic still unanswered: its response was lost (rxe check_psn) */
        rs_swqe *w = rs_qp_swqe(qp, 0);
        if (w->started && rs_wr_is_rd_atomic(w->opcode) && rs_psn_diff(psn, last_psn(w)) > 0) {
            implied_nak(tp, qp);
            return;
        }
    }
    switch (syndrome) {
    case RS_AETH_NAK_PSN_SEQ:
        qp->stats.naks_rcvd++;
        retry(tp, qp, RS_TR_RETRY_NAK);
        break;
    case RS_AETH_NAK_INV_REQ:
        fail_head(tp, qp, RS_WC_STATUS_REM_INV_REQ_ERR);
        break;
    case RS_AETH_NAK_REM_ACCESS:
        fail_head(tp, qp, RS_WC_STATUS_REM_ACCESS_ERR);
        break;
    default:
        fail_head(tp, qp, RS_WC_STATUS_REM_OP_ERR);
        break;
    }
}

static void on_rnr_nak(rs_transport *tp, rs_qp *qp, uint32_t psn, uint8_t syndrome)
{
    qp->stats.rnr_naks_rcvd++;
    if (rs_psn_diff(psn, qp->comp_psn) > 0)
        rs_comp_ack_through(tp, qp, (psn - 1) & RS_PSN_MASK);
    if (qp->sq_count) {
        /* An RNR NAK past a READ/atomic still unanswered: its response was lost, so resend from
         * it (rxe check_psn: COMPST_ERROR_RETRY before the RNR is looked at). Rewinding to the
         * NAK's PSN here would resend the head WQE under a later WQE's PSN. */
        rs_swqe *w = rs_qp_swqe(qp, 0);
        if (w->started && rs_wr_is_rd_atomic(w->opcode) && rs_psn_diff(psn, last_psn(w)) > 0) {
            implied_nak(tp, qp);
            return;
        }
    }
    if (qp->attr.rnr_retry != 7) { /* 7 = retry forever */
        if (qp->rnr_left == 0) {
            fail_head(tp, qp, RS_WC_STATUS_RNR_RETRY_EXC_ERR);
            return;
        }
        qp->rnr_left--;
    }
    qp->rto_deadline_ps = 0;
    qp->rnr_until_ps = tp->net.eng.now_ps + rnr_timer_us[syndrome & 0x1F] * 1000000;
    rs_engine_arm(&tp->net.eng, &qp->rnr_timer, qp->rnr_until_ps);
    rs_trace_retry(tp, qp, RS_TR_RETRY_RNR);
    rs_req_rewind(tp, qp, psn);
}

/* A response skipped PSNs (or an ACK covered a READ/atomic that got no response): the
 * missing responses were lost. Retry once per gap ("implied NAK", rxe COMPST_ERROR_RETRY). */
static void implied_nak(rs_transport *tp, rs_qp *qp)
{
    if (qp->retry_started)
        return;
    qp->stats.implied_naks++;
    retry(tp, qp, RS_TR_RETRY_IMPLIED_NAK);
}

/* A READ response or atomic acknowledgement for the head WQE, at the expected PSN, checked. */
static void on_response(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    rs_swqe *w = rs_qp_swqe(qp, 0);
    if (pkt->opcode == RS_OP_ATOMIC_ACK) {
        uint8_t *dst = rs_mr_resolve(qp->host, w->sge[0].lkey, 0, qp->init.pd, RS_ACCESS_LOCAL_WRITE,
                                     w->sge[0].addr, 8);
        if (!dst) {
            fail_head(tp, qp, RS_WC_STATUS_LOC_PROT_ERR);
            return;
        }
        if (dst != RS_MR_NO_BYTES)
            memcpy(dst, &pkt->atomic_orig, 8);
    } else if (pkt->payload_len) {
        uint64_t off = (uint64_t)(uint32_t)rs_psn_diff(pkt->psn, w->first_psn) * qp->pmtu;
        if (rs_scatter_sges(qp->host, qp->init.pd, w->sge, w->num_sge, off, pkt->payload, pkt->payload_len) != 0) {
            fail_head(tp, qp, RS_WC_STATUS_LOC_PROT_ERR);
            return;
        }
    }
    int done = pkt->psn == last_psn(w); /* the packet that ends the message (checked by the caller) */
    qp->comp_psn = (pkt->psn + 1) & RS_PSN_MASK;
    qp->retry_started = 0;
    qp->retry_left = qp->attr.retry_cnt;
    qp->rnr_left = qp->attr.rnr_retry;
    int ooo = qp->irn && qp->irn->reorder_ps;
    if (ooo)
        rs_ooo_read_take(qp, pkt->psn);
    for (;;) {
        if (done) {
            rs_qp_complete_head(tp, qp, RS_WC_STATUS_SUCCESS);
            complete_implied(tp, qp, qp->comp_psn); /* local operations (no PSN) right behind it */
        }
        /* OOO: the responses placed before, now in order (ooo_read.c) */
        if (!ooo || !qp->sq_count || !rs_ooo_read_take(qp, qp->comp_psn))
            break;
        w = rs_qp_swqe(qp, 0);
        done = qp->comp_psn == last_psn(w);
        qp->comp_psn = (qp->comp_psn + 1) & RS_PSN_MASK;
    }
    if (ooo)
        rs_ooo_read_progress(tp, qp);
    restart_rto(tp, qp);
    rs_nic_wake(tp, qp); /* a READ/atomic credit may be free */
}

static int is_read_response(uint8_t op) { return op >= RS_OP_READ_RESP_FIRST && op <= RS_OP_READ_RESP_ONLY; }

/* Does READ response `pkt` fit PSN pkt->psn of READ `w`?  By position: FIRST at the first PSN,
 * MIDDLE inside, LAST at the last PSN (ONLY when there is one).  A READ re-issued for its tail
 * (w->read_psn) may be answered either way at that PSN: continuing the message (MIDDLE/LAST, as
 * rxe's responder does) or as a new READ (FIRST, or ONLY for a one-packet tail, as qib/hfi1 do;
 * rxe check_ack accepts a FIRST/ONLY at the re-issued request's first PSN).  FIRST and MIDDLE
 * carry exactly one PMTU, LAST/ONLY the rest of the message; AETH (all but MIDDLE) is an ACK.
 * A READ completes only on the packet that ends it (rxe do_read: END mask). */
int rs_comp_read_response_fits(const rs_qp *qp, const rs_swqe *w, const rs_pkt *pkt)
{
    uint32_t idx = (uint32_t)rs_psn_diff(pkt->psn, w->first_psn);
    int first = idx == 0, last = idx + 1 == w->npkts;
    uint8_t want = first && last ? RS_OP_READ_RESP_ONLY
                   : first       ? RS_OP_READ_RESP_FIRST
                   : last        ? RS_OP_READ_RESP_LAST
                                 : RS_OP_READ_RESP_MIDDLE;
    uint8_t restart = last ? RS_OP_READ_RESP_ONLY : RS_OP_READ_RESP_FIRST; /* a new answer from here */
    if (pkt->opcode != want && !(w->opcode == RS_WR_RDMA_READ && pkt->psn == w->read_psn && pkt->opcode == restart))
        return 0;
    if (pkt->opcode != RS_OP_READ_RESP_MIDDLE && (pkt->aeth_syndrome & RS_AETH_TYPE_MASK) != RS_AETH_ACK)
        return 0;
    uint64_t len = last ? w->length - (uint64_t)idx * qp->pmtu : qp->pmtu;
    if (w->opcode == RS_WR_ATOMIC_WRITE || w->opcode == RS_WR_FLUSH)
        len = 0; /* answered by a zero-length READ response ONLY (rxe send_read_response_ack) */
    return pkt->payload_len == len;
}

static void on_read_or_atomic_response(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    uint32_t psn = pkt->psn;
    if (rs_psn_diff(psn, qp->comp_psn) < 0)
        return; /* stale: an answer to a request already resent */
    complete_implied(tp, qp, psn);
    if (!qp->sq_count)
        return;
    rs_swqe *w = rs_qp_swqe(qp, 0);
    int held = psn != qp->comp_psn ? rs_ooo_read_hold(tp, qp, pkt) : 0; /* OOO: placed ahead */
    if (held) {
        if (held == 2)
            implied_nak(tp, qp); /* the gap before it outlived the reorder time: lost */
        return;
    }
    if (w->started && rs_wr_is_rd_atomic(w->opcode) && rs_psn_diff(psn, last_psn(w)) > 0) {
        implied_nak(tp, qp); /* an answer to a later request: the head's response was lost */
        return;
    }
    if (!w->started || rs_psn_diff(psn, w->first_psn) < 0 || rs_psn_diff(psn, last_psn(w)) > 0) {
        qp->stats.bad_responses++; /* not for a PSN of the head WQE: dropped */
        return;
    }
    /* A response of the wrong kind for the request at its PSN ends the QP at once (rxe check_ack):
     * a READ response for anything but a READ, ATOMIC WRITE or FLUSH is IBV_WC_FATAL_ERR as in rxe; an ATOMIC_ACKNOWLEDGE
     * for anything but an atomic IBV_WC_BAD_RESP_ERR (rxe sets no status there). */
    if (is_read_response(pkt->opcode) && w->opcode != RS_WR_RDMA_READ && w->opcode != RS_WR_ATOMIC_WRITE &&
        w->opcode != RS_WR_FLUSH) {
        qp->stats.bad_responses++;
        fail_head(tp, qp, RS_WC_STATUS_FATAL_ERR);
        return;
    }
    if (pkt->opcode == RS_OP_ATOMIC_ACK && w->opcode != RS_WR_ATOMIC_CMP_AND_SWP &&
        w->opcode != RS_WR_ATOMIC_FETCH_AND_ADD) {
        qp->stats.bad_responses++;
        fail_head(tp, qp, RS_WC_STATUS_BAD_RESP_ERR);
        return;
    }
    if (rs_psn_diff(qp->comp_psn, w->first_psn) < 0) /* SEND/WRITE before it implicitly acknowledged */
        qp->comp_psn = w->first_psn;
    if (psn != qp->comp_psn) {
        implied_nak(tp, qp);
        return;
    }
    /* at the expected PSN: an opcode, length or AETH that does not fit is a bad response */
    int fits = pkt->opcode == RS_OP_ATOMIC_ACK ? (pkt->aeth_syndrome & RS_AETH_TYPE_MASK) == RS_AETH_ACK
                                               : rs_comp_read_response_fits(qp, w, pkt);
    if (!fits) {
        qp->stats.bad_responses++;
        fail_head(tp, qp, RS_WC_STATUS_BAD_RESP_ERR);
        return;
    }
    on_response(tp, qp, pkt);
}

void rs_comp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->recovery == RS_RECOVERY_IRN && rs_irn_comp_receive(tp, qp, pkt))
        return;
    uint32_t psn = pkt->psn;
    uint8_t syndrome = pkt->aeth_syndrome;
    /* an acknowledgement is valid for any PSN already sent, even if a rewind has since moved
     * the requester back (rxe compares with the WQE's PSNs, not with req.psn) */
    int valid = (qp->state == RS_QPS_RTS || qp->state == RS_QPS_SQD) &&
                rs_psn_diff(psn, qp->max_sent_psn_next) < 0;
    if (valid && pkt->opcode != RS_OP_ACKNOWLEDGE) {
        if (is_read_response(pkt->opcode) || pkt->opcode == RS_OP_ATOMIC_ACK)
            on_read_or_atomic_response(tp, qp, pkt);
        else
            qp->stats.bad_responses++;
        valid = 0;
    } else if (!valid) {
        qp->stats.bad_responses++; /* a response for a PSN never sent, or the QP cannot take it */
    }
    /* ACK events for the algorithm (when it asks for them): the echo, and the acknowledged byte
     * position before this ACK */
    const int cc_acks = valid && qp->cc && (qp->cc->flags & RS_CC_WANTS_ACKS) &&
                        (syndrome & RS_AETH_TYPE_MASK) == RS_AETH_ACK;
    rs_cc_echo echo = {0};
    uint64_t una_before = 0;
    rs_int_stack *intel = NULL; /* the ACK's INT outlives the packet: taken from it, returned below */
    if (cc_acks) {
        echo = (rs_cc_echo){.tx_ps = pkt->cc_tx_ps, .ce_bytes = pkt->cc_ce_bytes, .stamped = pkt->cc_stamped,
                            .ce = pkt->cc_ce_echo};
        intel = pkt->intel;
        pkt->intel = NULL;
        echo.intel = intel;
        una_before = rs_req_acked_pos(qp);
    }
    rs_pkt_release(&tp->pool, pkt);
    if (!valid)
        return;
    switch (syndrome & RS_AETH_TYPE_MASK) {
    case RS_AETH_ACK:
        qp->stats.acks_rcvd++;
        if (rs_psn_diff(psn, qp->comp_psn) < 0) { /* a duplicate: acknowledges nothing new */
            if (cc_acks) {
                rs_cc_on_ack(tp, qp, &echo, psn, una_before);
                if (qp->cc->window_bytes)
                    rs_nic_wake(tp, qp); /* the algorithm may have opened its window */
            }
        } else {
            rs_comp_ack_through(tp, qp, psn);
            if (cc_acks)
                rs_cc_on_ack(tp, qp, &echo, psn, una_before);
            /* an ACK past a READ/atomic at the head means its response was lost */
            if (qp->sq_count) {
                rs_swqe *w = rs_qp_swqe(qp, 0);
                if (w->started && rs_wr_is_rd_atomic(w->opcode) && rs_psn_diff(psn, w->first_psn) >= 0) {
                    implied_nak(tp, qp);
                    break;
                }
            }
            rs_nic_wake(tp, qp); /* the window may have opened */
        }
        break;
    case RS_AETH_RNR_NAK:
        if (rs_psn_diff(psn, qp->comp_psn) >= 0)
            on_rnr_nak(tp, qp, psn, syndrome);
        break;
    case RS_AETH_NAK:
        if (rs_psn_diff(psn, qp->comp_psn) >= 0)
            on_nak(tp, qp, psn, syndrome);
        break;
    default: /* reserved AETH type: not an acknowledgement; a bad response (rxe check_ack: COMPST_ERROR) */
        qp->stats.bad_responses++;
        fail_head(tp, qp, RS_WC_STATUS_BAD_RESP_ERR);
        break;
    }
    if (intel)
        rs_pool_put_int(&tp->pool, intel);
}
