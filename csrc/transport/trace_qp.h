/* Trace hooks of the transport: records about a QP (engine/trace.h holds the buffer). */
#ifndef RDMASIM_TRANSPORT_TRACE_QP_H
#define RDMASIM_TRANSPORT_TRACE_QP_H

#include "engine/trace.h"
#include "transport/transport.h"

void rs_trace_rec_qp(rs_transport *tp, uint8_t kind, const rs_qp *qp, uint64_t wr_id, uint32_t len,
                     uint8_t status, uint8_t verb_op, uint8_t flags, uint8_t reason);

/* the responder accepted request PSN psn; next is the PSN it expects now */
static inline void rs_trace_accept(rs_transport *tp, const rs_qp *qp, uint32_t psn, uint32_t next)
{
    if (tp->net.eng.trace) {
        rs_trace_rec_qp(tp, RS_TR_ACCEPT, qp, 0, 0, 0, 0, 0, 0);
        rs_trace_patch_last(&tp->net.eng, psn, next);
    }
}

static inline void rs_trace_post_send(rs_transport *tp, const rs_qp *qp, const rs_swqe *w, int signaled)
{
    if (RS_TRACE_ON(&tp->net.eng))
        rs_trace_rec_qp(tp, RS_TR_POST_SEND, qp, w->wr_id, (uint32_t)w->length, 0, (uint8_t)w->opcode,
                        signaled ? RS_TRF_SIGNALED : 0, 0);
}

static inline void rs_trace_post_recv(rs_transport *tp, const rs_qp *qp, const rs_rwqe *r)
{
    if (RS_TRACE_ON(&tp->net.eng))
        rs_trace_rec_qp(tp, RS_TR_POST_RECV, qp, r->wr_id, (uint32_t)r->length, 0, 0, 0, 0);
}

/* a WQE retired: flags RS_TRF_CQE when a completion entry was written, RS_TRF_RECV for the RQ */
static inline void rs_trace_complete(rs_transport *tp, const rs_qp *qp, uint64_t wr_id, uint32_t status,
                                     uint32_t wc_opcode, uint32_t byte_len, unsigned flags)
{
    if (RS_TRACE_ON(&tp->net.eng))
        rs_trace_rec_qp(tp, RS_TR_COMPLETE, qp, wr_id, byte_len, (uint8_t)status, (uint8_t)wc_opcode,
                        (uint8_t)flags, 0);
}

static inline void rs_trace_timeout(rs_transport *tp, const rs_qp *qp)
{
    if (RS_TRACE_ON(&tp->net.eng))
        rs_trace_rec_qp(tp, RS_TR_TIMEOUT, qp, 0, 0, 0, 0, 0, 0);
}

/* the requester goes back to comp_psn; cause is an rs_trace_retry_cause */
static inline void rs_trace_retry(rs_transport *tp, const rs_qp *qp, int cause)
{
    if (RS_TRACE_ON(&tp->net.eng))
        rs_trace_rec_qp(tp, RS_TR_RETRY, qp, 0, 0, 0, 0,
                        qp->recovery == RS_RECOVERY_IRN ? RS_TRF_SELECTIVE : 0, (uint8_t)cause);
}

#endif
