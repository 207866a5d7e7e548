/* QP objects: creation, posting work requests, completions, entering ERR. */
#include "transport/transport.h"

#include <stdlib.h>
#include <string.h>

#include "transport/trace_qp.h"
#include "rdmasim/ib.h"

#define RS_MAX_WR (1u << 16)
#define RS_MAX_SGE 32u

static rs_host *get_host(const rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

static rs_qp *get_qp(const rs_transport *tp, int host, uint32_t qpn)
{
    rs_host *h = get_host(tp, host);
    return h ? rs_host_qp(h, qpn) : NULL;
}

static rs_cq *host_cq(rs_host *h, int cq)
{
    return (cq >= 0 && (uint32_t)cq < h->n_cqs && h->cqs[cq].ring) ? &h->cqs[cq] : NULL;
}

/* The slab a QP comes from and goes back to: with room for CC state after it, or without. */
static rs_slab *qp_slab(rs_transport *tp, int cc_room) { return cc_room ? &tp->qp_cc_slab : &tp->qp_slab; }

int rs_tp_qp_create(rs_transport *tp, int host, const rs_qp_init *in)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    rs_cq *scq = host_cq(h, in->send_cq), *rcq = host_cq(h, in->recv_cq);
    if (!scq || !rcq)
        return rs_tp_fail(tp, RS_ERR_INVAL, "send_cq/recv_cq must be CQs of the same context");
    if (in->max_send_wr < 1 || in->max_send_wr > RS_MAX_WR || in->max_recv_wr < 1 || in->max_recv_wr > RS_MAX_WR)
        return rs_tp_fail(tp, RS_ERR_INVAL, "max_send_wr=%u, max_recv_wr=%u: each must be in 1..%u",
                          in->max_send_wr, in->max_recv_wr, RS_MAX_WR);
    if (in->max_send_sge < 1 || in->max_send_sge > RS_MAX_SGE || in->max_recv_sge < 1 ||
        in->max_recv_sge > RS_MAX_SGE)
        return rs_tp_fail(tp, RS_ERR_INVAL, "max_send_sge=%u, max_recv_sge=%u: each must be in 1..%u",
                          in->max_send_sge, in->max_recv_sge, RS_MAX_SGE);
    if (in->qp_type != 0 && in->qp_type != RS_QPT_RC && in->qp_type != RS_QPT_UC && in->qp_type != RS_QPT_UD)
        return rs_tp_fail(tp, RS_ERR_INVAL, "qp_type=%u: IBV_QPT_RC (%d), IBV_QPT_UC (%d) or IBV_QPT_UD (%d)",
                          in->qp_type, RS_QPT_RC, RS_QPT_UC, RS_QPT_UD);
    rs_srq *srq = NULL;
    rs_qp_init init = *in;
    if (in->srq) {
        srq = rs_host_srq(h, in->srq);
        if (!srq)
            return rs_tp_fail(tp, RS_ERR_INVAL, "srq=%u: no such SRQ on host %d", in->srq, host);
        if (srq->pd != in->pd)
            return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ %u belongs to another PD than the QP", in->srq);
        /* receive WQEs come from the SRQ one at a time: a ring of one, as wide as the SRQ's */
        init.max_recv_wr = 1;
        init.max_recv_sge = srq->max_sge;
        in = &init;
    }
    /* a destroyed QP's memory first (see rs_sim.qp_slab); with room for CC state if the host runs CC */
    int cc_room = rs_tp_cc_algo(tp, h->cc.kind) != NULL;
    rs_qp *qp = rs_slab_alloc(qp_slab(tp, cc_room));
    if (!qp)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    memset(qp, 0, sizeof(*qp));
    qp->has_cc_room = (uint8_t)cc_room;
    uint32_t qpn;
    if (rs_qpn_add(&h->qpns, qp, &qpn) != RS_OK) {
        rs_slab_put(qp_slab(tp, cc_room), qp);
        if (!qpn)
            return rs_tp_fail(tp, RS_ERR_NOMEM, "no QP numbers left on host %d: all %u are in use", host,
                              h->qpns.limit - RS_QPN_BASE + 1);
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    }
    /* the send and receive rings and their SGE arrays in one block: inside the QP when they fit
     * (bulk flows create and free QPs by the hundred thousand), else one allocation; qp->sq is
     * the block's base */
    size_t n_sq = in->max_send_wr, n_rq = in->max_recv_wr;
    size_t n_sq_sge = n_sq * in->max_send_sge, n_rq_sge = n_rq * in->max_recv_sge;
    size_t bytes = n_sq * sizeof(rs_swqe) + n_rq * sizeof(rs_rwqe) + (n_sq_sge + n_rq_sge) * sizeof(rs_sge);
    uint8_t *block = bytes <= sizeof(qp->ring_inline) ? qp->ring_inline : calloc(1, bytes);
    if (!block) {
        rs_qpn_remove(&h->qpns, qpn);
        rs_slab_put(qp_slab(tp, cc_room), qp);
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for the QP's queues");
    }
    rs_nic_qps_changed(h);
    qp->sq = (rs_swqe *)block; /* then its SGEs (a one-WQE send queue's lines together), rq, rq's SGEs */
    qp->sq_sge = (rs_sge *)(block + n_sq * sizeof(rs_swqe));
    qp->rq = (rs_rwqe *)(qp->sq_sge + n_sq_sge);
    qp->rq_sge = (rs_sge *)(qp->rq + n_rq);
    for (uint32_t i = 0; i < in->max_send_wr; i++)
        qp->sq[i].sge = &qp->sq_sge[(size_t)i * in->max_send_sge];
    for (uint32_t i = 0; i < in->max_recv_wr; i++)
        qp->rq[i].sge = &qp->rq_sge[(size_t)i * in->max_recv_sge];
    qp->host = h;
    qp->qpn = qpn;
    qp->init = *in;
    qp->state = RS_QPS_RESET;
    qp->is_ud = in->qp_type == RS_QPT_UD;
    qp->is_uc = in->qp_type == RS_QPT_UC;
    qp->srq = srq;
    if (srq)
        srq->users++;
    qp->attr.dest_host = -1;
    qp->attr.path_mtu = RS_MTU_1024;
    qp->pmtu = 1024;
    qp->rto.owner = qp;
    qp->rto.kind = RS_EV_QP_RTO;
    qp->rnr_timer.owner = qp;
    qp->rnr_timer.kind = RS_EV_QP_RNR;
    qp->drain_timer.owner = qp;
    qp->drain_timer.kind = RS_EV_QP_RESP_DRAIN;
    qp->ack_timer.owner = qp;
    qp->ack_timer.kind = RS_EV_QP_ACK;
    qp->reorder_timer.owner = qp;
    qp->reorder_timer.kind = RS_EV_QP_REORDER;
    qp->rto.ent = qp->rnr_timer.ent = qp->drain_timer.ent = qp->ack_timer.ent = qp->reorder_timer.ent =
        h->port.tx_done.ent;
    qp->last_cnp_ps = -1;
    scq->users++;
    if (rcq != scq)
        rcq->users++; /* users counts QPs, not attachments */
    return (int)qp->qpn;
}

int rs_tp_qp_destroy(rs_transport *tp, int host, uint32_t qpn)
{
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no QP 0x%x on host %d", qpn, host);
    /* Work requests still posted, send and receive, are dropped with the QP without completions,
     * as rxe's rxe_qp_do_cleanup (the QP is no longer valid, so its flush does not notify);
     * completions already in a CQ stay there.  Frames already sent by or to it are harmless:
     * they carry its number, not a pointer, and arrive at no QP (unknown-QP drops), since its
     * number is not handed out again before the whole range went round (qpn.h). */
    rs_qp_release(tp, qp);
    return RS_OK;
}

void rs_qp_release(rs_transport *tp, rs_qp *qp)
{
    rs_host *h = qp->host;
    uint32_t qpn = qp->qpn;
    rs_nic_forget(h, qp);
    rs_timer_cancel(&qp->rto);
    rs_timer_cancel(&qp->rnr_timer);
    rs_timer_cancel(&qp->drain_timer);
    rs_timer_cancel(&qp->ack_timer);
    rs_timer_cancel(&qp->reorder_timer);
    h->cqs[qp->init.send_cq].users--;
    if (qp->init.recv_cq != qp->init.send_cq)
        h->cqs[qp->init.recv_cq].users--;
    if (qp->srq)
        qp->srq->users--;
    qp->srq = NULL;
    rs_qpn_remove(&h->qpns, qpn); /* frames still in flight to it are counted as unknown-QP drops */
    rs_nic_qps_changed(h);
    rs_mw_forget_qp(h, qpn);      /* type 2 windows bound through it grant nothing any more */
    rs_respq_clear(tp, qp);
    rs_resp_release_held(tp, qp);
    rs_cc_qp_release(tp, qp);
    rs_qp_free_storage(qp);
    qp->host = NULL;
    /* not freed: its timers may have stale heap entries */
    rs_slab_put(qp_slab(tp, qp->has_cc_room), qp);
}

void rs_qp_free_storage(rs_qp *qp)
{
    rs_irn_free(qp);
    if (qp->res != &qp->res_inline)
        free(qp->res);
    if (qp->sq != (rs_swqe *)qp->ring_inline)
        free(qp->sq); /* the block with rq and both SGE arrays */
    qp->res = NULL;
    qp->sq = NULL;
}

static uint32_t wc_opcode_of(uint32_t wr_op)
{
    switch (wr_op) {
    case RS_WR_RDMA_WRITE:
    case RS_WR_RDMA_WRITE_WITH_IMM:
        return RS_WC_OPCODE_RDMA_WRITE;
    case RS_WR_RDMA_READ:
        return RS_WC_OPCODE_RDMA_READ;
    case RS_WR_ATOMIC_CMP_AND_SWP:
        return RS_WC_OPCODE_COMP_SWAP;
    case RS_WR_ATOMIC_FETCH_AND_ADD:
        return RS_WC_OPCODE_FETCH_ADD;
    case RS_WR_BIND_MW:
        return RS_WC_OPCODE_BIND_MW;
    case RS_WR_LOCAL_INV:
        return RS_WC_OPCODE_LOCAL_INV;
    case RS_WR_ATOMIC_WRITE:
        return RS_WC_OPCODE_ATOMIC_WRITE;
    case RS_WR_FLUSH:
        return RS_WC_OPCODE_FLUSH;
    default:
        return RS_WC_OPCODE_SEND;
    }
}

void rs_qp_complete_head(rs_transport *tp, rs_qp *qp, uint32_t status)
{
    rs_swqe *w = rs_qp_swqe(qp, 0);
    /* unsignaled successes produce no completion; errors always do (IBA 10.7.3.1) */
    int signaled = qp->init.sq_sig_all || (w->send_flags & RS_SEND_SIGNALED);
    int cqe = status != RS_WC_STATUS_SUCCESS || signaled;
    rs_trace_complete(tp, qp, w->wr_id, status, wc_opcode_of(w->opcode), (uint32_t)w->length, cqe ? RS_TRF_CQE : 0);
    if (qp->flow_ref)
        tp->flow_complete(tp->flow_ctx, qp, status); /* a bulk flow: the workload records it, no CQE */
    else if (cqe) {
        rs_wc wc = {.wr_id = w->wr_id,
                    .status = status,
                    .opcode = wc_opcode_of(w->opcode),
                    .byte_len = status != RS_WC_STATUS_SUCCESS ? 0
                                : w->opcode == RS_WR_FLUSH ? 0
                                : rs_wr_is_rd_atomic(w->opcode) && w->opcode != RS_WR_RDMA_READ ? 8
                                                                                               : (uint32_t)w->length,
                    .qp_num = qp->qpn};
        rs_cq_push(&qp->host->cqs[qp->init.send_cq], &wc);
    }
    if (status == RS_WC_STATUS_SUCCESS)
        qp->stats.msgs_completed++;
    qp->sq_head = rs_qp_sq_slot(qp, 1);
    qp->sq_count--;
    if (qp->req_idx > 0) {
        qp->req_idx--;
        if (rs_wr_is_rd_atomic(w->opcode) && qp->rd_outstanding)
            qp->rd_outstanding--; /* its request was sent in the current pass: return the credit */
    } else {
        qp->req_off = 0;
    }
}

void rs_qp_msg_received(rs_transport *tp, rs_qp *qp)
{
    if (qp->flow_ref && tp->flow_received)
        tp->flow_received(tp->flow_ctx, qp); /* a bulk flow: the workload's receive-side event */
}

void rs_qp_complete_recv(rs_transport *tp, rs_qp *qp, uint32_t status, uint32_t opcode, uint32_t byte_len,
                         int with_imm, uint32_t imm)
{
    rs_rwqe *r = &qp->rq[qp->rq_head];
    rs_wc wc = {.wr_id = r->wr_id,
                .status = status,
                .opcode = opcode,
                .byte_len = byte_len,
                .imm_data = with_imm ? imm : 0, /* ImmDt, or invalidated_rkey (a union in verbs) */
                .wc_flags = with_imm == RS_RECV_WITH_INV ? 8u /* IBV_WC_WITH_INV */
                            : with_imm ? 2u /* IBV_WC_WITH_IMM */ : 0u,
                .qp_num = qp->qpn,
                .src_qp = qp->attr.dest_qp_num};
    rs_trace_complete(tp, qp, r->wr_id, status, opcode, byte_len, RS_TRF_CQE | RS_TRF_RECV);
    if (!qp->flow_ref)
        rs_cq_push(&qp->host->cqs[qp->init.recv_cq], &wc);
    qp->rq_head = (qp->rq_head + 1) % qp->init.max_recv_wr;
    qp->rq_count--;
    qp->rq_done++;
}

void rs_qp_to_error(rs_transport *tp, rs_qp *qp)
{
    qp->state = RS_QPS_ERR;
    rs_nic_forget(qp->host, qp);
    rs_respq_clear(tp, qp);
    rs_resp_release_held(tp, qp);
    qp->rd_outstanding = 0;
    rs_timer_cancel(&qp->rto);
    rs_timer_cancel(&qp->rnr_timer);
    rs_timer_cancel(&qp->ack_timer);
    rs_timer_cancel(&qp->reorder_timer);
    qp->ack_pending = 0;
    qp->rto_deadline_ps = 0;
    while (qp->sq_count)
        rs_qp_complete_head(tp, qp, RS_WC_STATUS_WR_FLUSH_ERR);
    while (qp->rq_count)
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_WR_FLUSH_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
    qp->req_idx = 0;
    qp->req_off = 0;
}

void rs_qp_reset(rs_transport *tp, rs_qp *qp)
{
    rs_nic_forget(qp->host, qp);
    rs_timer_cancel(&qp->ack_timer);
    rs_timer_cancel(&qp->reorder_timer);
    qp->ack_pending = 0;
    qp->unacked_rx = 0;
    rs_timer_cancel(&qp->rto);
    rs_timer_cancel(&qp->rnr_timer);
    qp->sq_head = qp->sq_count = qp->rq_head = qp->rq_count = qp->rq_done = 0;
    rs_irn_reset(qp);
    qp->req_idx = 0;
    qp->req_off = 0;
    qp->since_ackreq = 0;
    qp->rnr_until_ps = 0;
    qp->rto_deadline_ps = 0;
    qp->msn = 0;
    qp->nak_sent = 0;
    qp->rd_outstanding = 0;
    qp->sq_draining = 0;
    qp->retry_started = 0;
    rs_respq_clear(tp, qp);
    rs_resp_release_held(tp, qp);
    rs_cc_resp_drop_int(tp, qp);
    for (uint32_t i = 0; i < qp->res_cap; i++)
        qp->res[i].valid = 0;
    qp->res_next = 0;
    qp->in_msg = 0;
    qp->uc_drop = 0;
    qp->recv_off = 0;
    qp->write_left = 0;
}

static int validate_sges(rs_transport *tp, const rs_sge *sg, uint32_t n, uint32_t max, uint64_t *total)
{
    if (n > max)
        return rs_tp_fail(tp, RS_ERR_INVAL, "num_sge=%u exceeds the QP's max (%u)", n, max);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += sg[i].length;
    if (sum > 0x80000000ull)
        return rs_tp_fail(tp, RS_ERR_INVAL, "message length %llu exceeds 2^31 bytes",
                                     (unsigned long long)sum);
    *total = sum;
    return 0;
}

/* UD send WR: SEND or SEND_WITH_IMM only, to an address handle of this simulation, one packet. */
static int check_ud_wr(rs_transport *tp, const rs_qp *qp, const rs_send_wr *wr)
{
    if (wr->opcode != RS_WR_SEND && wr->opcode != RS_WR_SEND_WITH_IMM)
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "opcode %u on UD QP 0x%x: a UD QP sends IBV_WR_SEND (%d) or IBV_WR_SEND_WITH_IMM (%d) "
                          "only", wr->opcode, qp->qpn, RS_WR_SEND, RS_WR_SEND_WITH_IMM);
    /* the QP's own host is allowed: the NIC loops the datagram back (RoCE loopback, as RC) */
    if (wr->ud_dest_host != RS_UD_DEST_NO_AV && (wr->ud_dest_host < 0 || (uint32_t)wr->ud_dest_host >= tp->n_hosts))
        return rs_tp_fail(tp, RS_ERR_INVAL, "UD work request: address handle destination host=%d is out of "
                          "range (allowed: a host of this simulation)", wr->ud_dest_host);
    if (wr->ud_remote_qpn > RS_QPN_MASK)
        return rs_tp_fail(tp, RS_ERR_INVAL, "UD work request: remote_qpn=%u is out of range (0..16777215)",
                          wr->ud_remote_qpn);
    if (wr->ud_traffic_class > 255)
        return rs_tp_fail(tp, RS_ERR_INVAL, "UD work request: traffic_class=%u is out of range (0..255)",
                          wr->ud_traffic_class);
    return RS_OK;
}

int rs_tp_post_send(rs_transport *tp, int host, uint32_t qpn, const rs_send_wr *wr)
{
    int rc;
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no QP 0x%x on host %d", qpn, host);
    if (qp->state != RS_QPS_RTS && qp->state != RS_QPS_ERR && qp->state != RS_QPS_SQD)
        return rs_tp_fail(tp, RS_ERR_STATE,
                          "post_send on QP 0x%x in %s: the send queue accepts work only in RTS "
                          "(or ERR, where it is flushed)", qpn, rs_qp_state_name(qp->state));
    switch (wr->opcode) {
    case RS_WR_RDMA_WRITE:
    case RS_WR_RDMA_WRITE_WITH_IMM:
    case RS_WR_SEND:
    case RS_WR_SEND_WITH_IMM:
    case RS_WR_RDMA_READ:
        break;
    case RS_WR_SEND_WITH_INV:
    case RS_WR_LOCAL_INV:
    case RS_WR_BIND_MW:
        if (qp->is_ud)
            return rs_tp_fail(tp, RS_ERR_INVAL, "opcode %u is not supported on a UD QP (RC only)", wr->opcode);
        if (wr->opcode == RS_WR_BIND_MW && wr->num_sge)
            return rs_tp_fail(tp, RS_ERR_INVAL, "a BIND_MW work request takes no SGEs (got %u)", wr->num_sge);
        if (qp->recovery == RS_RECOVERY_IRN)
            return rs_tp_fail(tp, RS_ERR_INVAL, "opcode %u (memory windows, invalidation) is not supported "
                              "with IRN loss recovery", wr->opcode);
        break;
    case RS_WR_ATOMIC_WRITE:
    case RS_WR_FLUSH:
        /* RC only, as rxe (rxe_wr_opcode_info); the value (ATOMIC WRITE) or the range and FETH (FLUSH)
         * travel in the WR, not in SGEs */
        if (qp->is_ud)
            return rs_tp_fail(tp, RS_ERR_INVAL, "opcode %u is not supported on a UD QP (RC only)", wr->opcode);
        if (wr->num_sge)
            return rs_tp_fail(tp, RS_ERR_INVAL, "an %s work request takes no SGEs (got %u)",
                              wr->opcode == RS_WR_FLUSH ? "IBV_WR_FLUSH" : "IBV_WR_ATOMIC_WRITE", wr->num_sge);
        if (qp->recovery == RS_RECOVERY_IRN)
            return rs_tp_fail(tp, RS_ERR_INVAL, "opcode %u (ATOMIC WRITE, FLUSH) is not supported with IRN loss "
                              "recovery", wr->opcode);
        if (wr->opcode == RS_WR_FLUSH && ((wr->imm_data & 0xFu) == 0 || (wr->imm_data & ~0x33u) ||
                                          ((wr->imm_data >> 4) & 3u) > 1))
            return rs_tp_fail(tp, RS_ERR_INVAL, "IBV_WR_FLUSH: FETH 0x%x needs a placement type of "
                              "IBV_FLUSH_GLOBAL (1) and/or IBV_FLUSH_PERSISTENT (2) and a level of "
                              "IBV_FLUSH_RANGE (0) or IBV_FLUSH_MR (1)", wr->imm_data);
        if (wr->opcode == RS_WR_FLUSH && wr->compare_add > 0xFFFFFFFFull)
            return rs_tp_fail(tp, RS_ERR_INVAL, "IBV_WR_FLUSH: length %llu is out of range (0..4294967295)",
                              (unsigned long long)wr->compare_add);
        break;
    case RS_WR_ATOMIC_CMP_AND_SWP:
    case RS_WR_ATOMIC_FETCH_AND_ADD:
        if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
            return rs_tp_fail(tp, RS_ERR_INVAL,
                              "atomic work request needs exactly one 8-byte SGE for the original value "
                              "(got %u SGE(s)%s)", wr->num_sge, wr->num_sge == 1 ? " of another length" : "");
        break;
    default:
        return rs_tp_fail(tp, RS_ERR_INVAL, "opcode %u is not supported on an RC QP", wr->opcode);
    }
    if (qp->is_ud && (rc = check_ud_wr(tp, qp, wr)) != RS_OK)
        return rc;
    if (qp->is_uc && rs_wr_is_rd_atomic(wr->opcode)) /* rxe: no READ/atomic opcode for IB_QPT_UC */
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "opcode %u (RDMA READ/atomic) is not supported on a UC QP: UC carries SEND and "
                          "RDMA WRITE only", wr->opcode);
    if (rs_wr_is_rd_atomic(wr->opcode) && qp->state != RS_QPS_ERR && qp->attr.max_rd_atomic == 0)
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "RDMA READ/atomic/ATOMIC WRITE/FLUSH on QP 0x%x whose max_rd_atomic is 0: it could "
                          "never be sent (set max_rd_atomic >= 1 in the RTR->RTS modify)", qpn);
    if (qp->sq_count == qp->init.max_send_wr)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "send queue of QP 0x%x is full (max_send_wr=%u)", qpn,
                          qp->init.max_send_wr);
    uint64_t total = 0;
    if (validate_sges(tp, wr->sg_list, wr->num_sge, qp->init.max_send_sge, &total))
        return RS_ERR_INVAL;
    rs_swqe *w = rs_qp_swqe(qp, qp->sq_count);
    rs_sge *sge = w->sge;
    *w = (rs_swqe){.wr_id = wr->wr_id,
                   .remote_addr = wr->remote_addr,
                   .length = total,
                   .opcode = wr->opcode,
                   .send_flags = wr->send_flags,
                   .imm_data = wr->imm_data,
                   .rkey = wr->rkey,
                   .compare_add = wr->compare_add,
                   .swap = wr->swap,
                   .num_sge = wr->num_sge,
                   .sge = sge,
                   .ud_dest = wr->ud_dest_host,
                   .ud_tclass = wr->ud_traffic_class,
                   .ud_qpn = wr->ud_remote_qpn,
                   .ud_qkey = wr->ud_remote_qkey,
                   .bind_mw_rkey = wr->bind_mw_rkey,
                   .bind_lkey = wr->bind_lkey,
                   .bind_access = wr->bind_access,
                   .bind_len = wr->bind_len};
    memcpy(sge, wr->sg_list, wr->num_sge * sizeof(rs_sge));
    /* packets (SEND/WRITE) or response PSNs (READ) the message occupies; atomics take one */
    int multi = wr->opcode <= RS_WR_RDMA_READ || wr->opcode == RS_WR_SEND_WITH_INV;
    w->npkts = rs_wr_is_local(wr->opcode) ? 0 /* no PSN */
               : total && !qp->is_ud && multi ? (uint32_t)((total + qp->pmtu - 1) / qp->pmtu) : 1;
    w->stream_off = qp->sq_stream_end; /* where its bytes sit in the QP's request byte stream */
    qp->sq_stream_end += rs_swqe_req_bytes(w);
    rs_trace_post_send(tp, qp, w, qp->init.sq_sig_all || (w->send_flags & RS_SEND_SIGNALED));
    qp->sq_count++;
    if (qp->state == RS_QPS_ERR)
        rs_qp_to_error(tp, qp); /* flushed at once */
    else
        rs_nic_wake(tp, qp);
    return RS_OK;
}

int rs_tp_post_recv(rs_transport *tp, int host, uint32_t qpn, const rs_recv_wr *wr)
{
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no QP 0x%x on host %d", qpn, host);
    if (qp->srq)
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "post_recv on QP 0x%x, which takes its receive WQEs from an SRQ: post them to the SRQ", qpn);
    if (qp->state == RS_QPS_RESET)
        return rs_tp_fail(tp, RS_ERR_STATE,
                          "post_recv on QP 0x%x in RESET: receive work is accepted from INIT on", qpn);
    if (qp->rq_count == qp->init.max_recv_wr)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "receive queue of QP 0x%x is full (max_recv_wr=%u)", qpn,
                          qp->init.max_recv_wr);
    uint64_t total = 0;
    if (validate_sges(tp, wr->sg_list, wr->num_sge, qp->init.max_recv_sge, &total))
        return RS_ERR_INVAL;
    rs_rwqe *r = &qp->rq[(qp->rq_head + qp->rq_count) % qp->init.max_recv_wr];
    r->wr_id = wr->wr_id;
    r->length = total;
    r->num_sge = wr->num_sge;
    memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(rs_sge));
    rs_trace_post_recv(tp, qp, r);
    qp->rq_count++;
    if (qp->state == RS_QPS_ERR)
        rs_qp_to_error(tp, qp);
    return RS_OK;
}

int rs_tp_qp_query(const rs_transport *tp, int host, uint32_t qpn, rs_qp_attr *attr)
{
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return RS_ERR_INVAL;
    *attr = qp->attr;
    attr->qp_state = qp->state;
    attr->cur_qp_state = qp->state;
    return RS_OK;
}

int rs_tp_qp_get_stats(const rs_transport *tp, int host, uint32_t qpn, rs_qp_stats *out)
{
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return RS_ERR_INVAL;
    *out = qp->stats;
    return RS_OK;
}

int rs_tp_qp_modify(rs_transport *tp, int host, uint32_t qpn, const rs_qp_attr *attr, uint32_t mask)
{
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no QP 0x%x on host %d", qpn, host);
    return rs_qp_apply_modify(tp, qp, attr, mask);
}

int rs_tp_qp_get_inspect(const rs_transport *tp, int host, uint32_t qpn, rs_qp_inspect *out)
{
    rs_qp *qp = get_qp(tp, host, qpn);
    if (!qp)
        return RS_ERR_INVAL;
    uint32_t queued = 0;
    for (const rs_pkt *p = qp->respq_head; p; p = p->next)
        queued++;
    *out = (rs_qp_inspect){
        .state = qp->state,
        .req_psn = qp->req_psn,
        .comp_psn = qp->comp_psn,
        .resp_psn = qp->resp_psn,
        .msn = qp->msn,
        .sq_outstanding = qp->sq_count,
        .sq_started = qp->req_idx,
        .rq_posted = qp->rq_count,
        .retry_left = qp->retry_left,
        .rnr_left = qp->rnr_left,
        .rd_outstanding = qp->rd_outstanding,
        .nak_sent = qp->nak_sent,
        .in_msg = qp->in_msg,
        .rto_deadline_ps = qp->rto_deadline_ps,
        .rnr_until_ps = qp->rnr_until_ps,
        .next_tx_ps = qp->next_tx_ps,
        .rate_bps = rs_cc_rate_now(tp, qp),
        .resp_queued = queued,
        .recovery = qp->recovery,
        .irn_in_recovery = qp->irn ? qp->irn->in_recovery : 0,
        .irn_sacked = qp->irn ? qp->irn->sacked_count : 0,
        .irn_ooo_held = rs_irn_held(qp),
    };
    return RS_OK;
}
