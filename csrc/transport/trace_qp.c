/* Trace records about a QP (trace_qp.h). */
#include "transport/trace_qp.h"

void rs_trace_rec_qp(rs_transport *tp, uint8_t kind, const rs_qp *qp, uint64_t wr_id, uint32_t len,
                     uint8_t status, uint8_t verb_op, uint8_t flags, uint8_t reason)
{
    rs_trace_rec *r = rs_trace_slot(&tp->net.eng);
    if (!r)
        return;
    r->kind = kind;
    r->link = -1;
    r->node = (uint16_t)qp->host->id;
    r->node_kind = RS_TR_NODE_HOST;
    r->peer = (uint16_t)(qp->attr.dest_host < 0 ? 0xFFFF : qp->attr.dest_host);
    r->peer_kind = qp->attr.dest_host < 0 ? RS_TR_NODE_NONE : RS_TR_NODE_HOST;
    r->qpn = qp->qpn;
    r->dest_qpn = qp->attr.dest_qp_num;
    r->wr_id = wr_id;
    r->len = len;
    r->status = status;
    r->verb_op = verb_op;
    r->flags = flags;
    r->reason = reason;
    if (kind == RS_TR_TIMEOUT || kind == RS_TR_RETRY) {
        r->psn = qp->comp_psn;
        /* an RNR retry counts rnr_retry down (never when it is 7: forever), the others retry_cnt */
        r->aux = (kind == RS_TR_RETRY && reason == RS_TR_RETRY_RNR) ? qp->rnr_left : qp->retry_left;
    }
}

