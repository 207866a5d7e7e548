/* Completer (rxe_comp.c, protocol.md 3.4): acknowledgements in, completions out.
 *
 * ACKs are cumulative: an ACK for PSN p completes every WQE whose last PSN is
 * at or before p, in send-queue order.  A PSN-sequence-error NAK for p
 * acknowledges everything before p and rewinds the requester to p (Go-Back-N).
 * The retransmit timer (4.096 us * 2^timeout) restarts on every advance; each
 * retry, by NAK or timeout, uses one of retry_cnt; forward progress refills it. */
#include "transport/transport.h"

#include "core/trace.h"
#include "rdmasim/ib.h"

/* RNR NAK timer code -> microseconds (IBA table, protocol.md 2). */
static const int64_t rnr_timer_us[32] = {
    655360, 10,    20,    30,    40,    60,    80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,  2560,  3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

void rs_comp_arm_rto(rs_sim *sim, rs_qp *qp)
{
    if (!qp->rto_ps || qp->rto_deadline_ps)
        return;
    qp->rto_deadline_ps = sim->now_ps + qp->rto_ps;
    if (!qp->rto.armed || qp->rto.when_ps > qp->rto_deadline_ps)
        rs_sim_arm(sim, &qp->rto, qp->rto_deadline_ps);
}

/* Restart the timer if packets are outstanding, else stop it. The heap entry is
 * left in place and re-armed when it fires early (no heap traffic per ACK). */
static void restart_rto(rs_sim *sim, rs_qp *qp)
{
    qp->rto_deadline_ps = 0;
    if (qp->req_psn != qp->comp_psn)
        rs_comp_arm_rto(sim, qp);
    else
        rs_timer_cancel(&qp->rto); /* nothing outstanding: no stray timer keeps the run alive */
}

/* Everything up to and including `psn` is acknowledged. */
static void ack_through(rs_sim *sim, rs_qp *qp, uint32_t psn)
{
    qp->comp_psn = (psn + 1) & RS_PSN_MASK;
    while (qp->sq_count) {
        rs_swqe *w = rs_qp_swqe(qp, 0);
        uint32_t last = (w->first_psn + w->npkts - 1) & RS_PSN_MASK;
        if (!w->started || rs_psn_diff(last, psn) > 0)
            break;
        rs_qp_complete_head(sim, qp, RS_WC_STATUS_SUCCESS);
    }
    /* After a rewind the requester may be behind what the responder has already accepted
     * (an ACK for an earlier transmission arrived): skip forward instead of resending it. */
    if (rs_psn_diff(qp->comp_psn, qp->req_psn) > 0)
        rs_req_rewind(sim, qp, qp->comp_psn);
    qp->retry_left = qp->attr.retry_cnt;
    qp->rnr_left = qp->attr.rnr_retry;
    restart_rto(sim, qp);
}

/* Fail the oldest WQE with `status`; the QP enters ERR and the rest is flushed. */
static void fail_head(rs_sim *sim, rs_qp *qp, uint32_t status)
{
    qp->state = RS_QPS_ERR;
    if (qp->sq_count)
        rs_qp_complete_head(sim, qp, status);
    rs_qp_to_error(sim, qp);
}

/* One Go-Back-N retry from comp_psn, if retry_cnt allows; cause: rs_trace_retry_cause. */
static void retry(rs_sim *sim, rs_qp *qp, int cause)
{
    if (qp->retry_left == 0) {
        fail_head(sim, qp, RS_WC_STATUS_RETRY_EXC_ERR);
        return;
    }
    qp->retry_left--;
    qp->rto_deadline_ps = 0;
    rs_trace_retry(sim, qp, cause);
    rs_req_rewind(sim, qp, qp->comp_psn);
}

void rs_comp_rto(rs_sim *sim, rs_qp *qp)
{
    if (!qp->rto_deadline_ps || qp->state != RS_QPS_RTS)
        return;
    if (sim->now_ps < qp->rto_deadline_ps) { /* restarted since this entry was queued */
        rs_sim_arm(sim, &qp->rto, qp->rto_deadline_ps);
        return;
    }
    qp->rto_deadline_ps = 0;
    if (qp->req_psn == qp->comp_psn)
        return;
    qp->stats.timeouts++;
    rs_trace_timeout(sim, qp);
    retry(sim, qp, RS_TR_RETRY_TIMEOUT);
}

static void on_nak(rs_sim *sim, rs_qp *qp, uint32_t psn, uint8_t syndrome)
{
    /* a NAK for p implicitly acknowledges every PSN before p */
    if (rs_psn_diff(psn, qp->comp_psn) > 0)
        ack_through(sim, qp, (psn - 1) & RS_PSN_MASK);
    switch (syndrome) {
    case RS_AETH_NAK_PSN_SEQ:
        qp->stats.naks_rcvd++;
        retry(sim, qp, RS_TR_RETRY_NAK);
        break;
    case RS_AETH_NAK_INV_REQ:
        fail_head(sim, qp, RS_WC_STATUS_REM_INV_REQ_ERR);
        break;
    case RS_AETH_NAK_REM_ACCESS:
        fail_head(sim, qp, RS_WC_STATUS_REM_ACCESS_ERR);
        break;
    default:
        fail_head(sim, qp, RS_WC_STATUS_REM_OP_ERR);
        break;
    }
}

static void on_rnr_nak(rs_sim *sim, rs_qp *qp, uint32_t psn, uint8_t syndrome)
{
    qp->stats.rnr_naks_rcvd++;
    if (rs_psn_diff(psn, qp->comp_psn) > 0)
        ack_through(sim, qp, (psn - 1) & RS_PSN_MASK);
    if (qp->attr.rnr_retry != 7) { /* 7 = retry forever */
        if (qp->rnr_left == 0) {
            fail_head(sim, qp, RS_WC_STATUS_RNR_RETRY_EXC_ERR);
            return;
        }
        qp->rnr_left--;
    }
    qp->rto_deadline_ps = 0;
    qp->rnr_until_ps = sim->now_ps + rnr_timer_us[syndrome & 0x1F] * 1000000;
    rs_sim_arm(sim, &qp->rnr_timer, qp->rnr_until_ps);
    rs_trace_retry(sim, qp, RS_TR_RETRY_RNR);
    rs_req_rewind(sim, qp, psn);
}

void rs_comp_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt)
{
    uint32_t psn = pkt->psn;
    uint8_t syndrome = pkt->aeth_syndrome;
    /* an acknowledgement is valid for any PSN already sent, even if a rewind has since moved
     * the requester back (rxe compares with the WQE's PSNs, not with req.psn) */
    int valid = qp->state == RS_QPS_RTS && pkt->opcode == RS_OP_ACKNOWLEDGE &&
                rs_psn_diff(psn, qp->max_sent_psn_next) < 0;
    rs_pkt_release(&sim->pool, pkt);
    if (!valid)
        return;
    switch (syndrome & RS_AETH_TYPE_MASK) {
    case RS_AETH_ACK:
        qp->stats.acks_rcvd++;
        if (rs_psn_diff(psn, qp->comp_psn) >= 0) {
            ack_through(sim, qp, psn);
            rs_nic_wake(sim, qp); /* the window may have opened */
        }
        break;
    case RS_AETH_RNR_NAK:
        if (rs_psn_diff(psn, qp->comp_psn) >= 0)
            on_rnr_nak(sim, qp, psn, syndrome);
        break;
    case RS_AETH_NAK:
        if (rs_psn_diff(psn, qp->comp_psn) >= 0)
            on_nak(sim, qp, psn, syndrome);
        break;
    default:
        break; /* reserved syndrome: ignored */
    }
}
