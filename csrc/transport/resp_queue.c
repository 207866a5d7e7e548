/* Responder output queue: keeps a QP's responses in PSN order.
 *
 * RDMA READ responses can be many packets; they are built one at a time when the
 * port asks for a frame (so memory follows the wire), from a job descriptor queued
 * here.  An ACK/NAK generated while a READ response is still queued must not
 * overtake it (the requester would take it as an implied NAK), so it waits in the
 * same FIFO.  With nothing queued, ACKs go straight to the port's control queue.
 *
 * A job is an rs_pkt of kind RS_PKT_JOB that never reaches the wire; its fields mean:
 * reth_va / reth_rkey / reth_len = the range still to send, psn = next response PSN,
 * job_res = the responder resource it answers, se = 1 until its first packet is built. */
#include "transport/transport.h"

#include <string.h>

#include "rdmasim/ib.h"

static void push(rs_qp *qp, rs_pkt *p)
{
    p->next = NULL;
    if (qp->respq_tail)
        qp->respq_tail->next = p;
    else
        qp->respq_head = p;
    qp->respq_tail = p;
}

static rs_pkt *pop(rs_qp *qp)
{
    rs_pkt *p = qp->respq_head;
    qp->respq_head = p->next;
    if (!qp->respq_head)
        qp->respq_tail = NULL;
    p->next = NULL;
    return p;
}

void rs_resp_send_ctrl(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (!qp->respq_head) {
        rs_nic_send_ctrl(tp, qp->host, pkt);
        return;
    }
    push(qp, pkt);
    rs_nic_wake(tp, qp);
}

int rs_respq_add_read(rs_transport *tp, rs_qp *qp, uint32_t res, uint64_t va, uint32_t rkey, uint32_t len,
                      uint32_t psn)
{
    rs_pkt *job = rs_pkt_alloc(&tp->pool);
    if (!job) {
        tp->net.eng.failed = 1;
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory queueing a READ response");
    }
    job->kind = RS_PKT_JOB;
    job->reth_va = va;
    job->reth_rkey = rkey;
    job->reth_len = len;
    job->psn = psn & RS_PSN_MASK;
    job->job_res = res;
    job->se = 1;
    push(qp, job);
    qp->respq_jobs++;
    rs_nic_wake(tp, qp);
    return RS_OK;
}

/* Replace any queued job for resource `res` (a duplicate READ restarts it, as rxe does). */
void rs_respq_drop_jobs_for(rs_transport *tp, rs_qp *qp, uint32_t res)
{
    rs_pkt **link = &qp->respq_head;
    rs_pkt *prev = NULL;
    while (*link) {
        rs_pkt *p = *link;
        if (p->kind == RS_PKT_JOB && p->job_res == res) {
            *link = p->next;
            if (qp->respq_tail == p)
                qp->respq_tail = prev;
            rs_pkt_release(&tp->pool, p);
            qp->respq_jobs--;
        } else {
            prev = p;
            link = &p->next;
        }
    }
}

void rs_respq_clear(rs_transport *tp, rs_qp *qp)
{
    while (qp->respq_head)
        rs_pkt_release(&tp->pool, pop(qp));
    qp->respq_jobs = 0;
}

/* Next READ response packet of `job`; NULL if the region became unreadable (QP then in ERR). */
static rs_pkt *build_read_response(rs_transport *tp, rs_qp *qp, rs_pkt *job)
{
    const rs_rdres *r = &qp->res[job->job_res];
    uint32_t len = job->reth_len < qp->pmtu ? job->reth_len : qp->pmtu;
    int fresh = job->se, last = len == job->reth_len;
    uint8_t op;
    if (fresh && job->psn == r->first_psn)
        op = last ? RS_OP_READ_RESP_ONLY : RS_OP_READ_RESP_FIRST;
    else
        op = last ? RS_OP_READ_RESP_LAST : RS_OP_READ_RESP_MIDDLE;
    const uint8_t *src = NULL;
    if (len) {
        src = rs_mr_resolve(qp->host, job->reth_rkey, qp->qpn, qp->init.pd, RS_ACCESS_REMOTE_READ, job->reth_va, len);
        if (!src) { /* deregistered while the response was being sent */
            rs_pkt *nak = rs_nic_new_packet(tp, qp, RS_OP_ACKNOWLEDGE, job->psn);
            if (nak) {
                nak->aeth_syndrome = RS_AETH_NAK_REM_ACCESS;
                nak->aeth_msn = qp->msn;
                qp->stats.naks_sent++;
            }
            rs_qp_to_error(tp, qp);
            if (nak)
                rs_nic_send_ctrl(tp, qp->host, nak);
            return NULL;
        }
    }
    rs_pkt *p = rs_nic_new_packet(tp, qp, op, job->psn);
    if (!p)
        return NULL;
    if (len && src != RS_MR_NO_BYTES) {
        if (rs_pkt_attach_payload(&tp->pool, p) != 0) {
            rs_pkt_release(&tp->pool, p);
            tp->net.eng.failed = 1;
            rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory allocating a payload buffer");
            return NULL;
        }
        memcpy(p->payload, src, len);
    }
    p->payload_len = len;
    if (op != RS_OP_READ_RESP_MIDDLE) { /* AETH on FIRST, LAST and ONLY */
        p->aeth_syndrome = RS_AETH_ACK_UNLIMITED;
        p->aeth_msn = qp->msn;
    }
    job->se = 0;
    job->reth_va += len;
    job->reth_len -= len;
    job->psn = (job->psn + 1) & RS_PSN_MASK;
    qp->stats.read_resp_sent++;
    if (last) {
        rs_pkt_release(&tp->pool, pop(qp));
        /* requests held behind this READ run next; from an event, not from inside the port's pull */
        if (--qp->respq_jobs == 0 && qp->held_head)
            rs_engine_arm(&tp->net.eng, &qp->drain_timer, tp->net.eng.now_ps);
    }
    return p;
}

rs_pkt *rs_respq_next(rs_transport *tp, rs_qp *qp)
{
    rs_pkt *head = qp->respq_head;
    if (!head)
        return NULL;
    if (head->kind != RS_PKT_JOB)
        return pop(qp);
    return build_read_response(tp, qp, head);
}
