/* UC responder (IBA 9.7.5, rxe_resp.c for IB_QPT_UC): RC's SEND and RDMA WRITE packets
 * (opcodes 0x20.. reduced to their RC values by the NIC), in PSN order, with no ACK, no NAK, no
 * RNR and no duplicates.  A message that cannot be taken is lost, never retried:
 *
 *   PSN other than expected, or dropping -> FIRST/ONLY: resynchronise there (expected PSN := its
 *                                           PSN, rxe check_psn); MIDDLE/LAST: dropped, and the
 *                                           rest of the message with it (rxe drop_msg)
 *   a new FIRST/ONLY inside a message     -> the unfinished message is abandoned: its receive WQE
 *                                           is reused from offset 0, nothing completes (class D1);
 *                                           the new message is taken (rxe drops this packet too)
 *   MIDDLE/LAST of no / another message   -> dropped with the rest of the message
 *   bad length, no receive WQE, message longer than the WQE, no remote write access, bad rkey
 *                                         -> the message is dropped (class D); the WQE stays
 *   receive WQE whose SGEs do not resolve -> LOC_QP_OP_ERR completion, the QP goes to ERR (class A)
 * Counted per QP: uc_msgs_dropped (messages lost), uc_pkts_dropped (packets discarded). */
#include "transport/transport.h"
#include "transport/opcodes.h"

#include "transport/trace_qp.h"
#include "rdmasim/ib.h"

/* Drop this packet and what remains of its message. */
static void drop_rest(rs_qp *qp)
{
    if (!qp->uc_drop)
        qp->stats.uc_msgs_dropped++;
    qp->uc_drop = 1;
    qp->in_msg = MSG_NONE;
    qp->stats.uc_pkts_dropped++;
}

static void take(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    if (rs_op_starts(op) && qp->in_msg != MSG_NONE) { /* the unfinished message is lost */
        qp->stats.uc_msgs_dropped++;
        qp->in_msg = MSG_NONE;
        qp->recv_off = 0;
    }
    if (!(rs_op_is_send(op) || rs_op_is_write(op)) || !rs_resp_sequence_ok(qp, op) ||
        !rs_resp_length_ok(qp, op, pkt->payload_len)) {
        drop_rest(qp);
        return;
    }
    int rc = rs_op_is_send(op) ? rs_resp_exec_send(tp, qp, pkt) : rs_resp_exec_write(tp, qp, pkt);
    if (rc == RS_EXEC_BAD_WQE) { /* malformed receive WQE: class A for every transport */
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_LOC_QP_OP_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
        rs_qp_to_error(tp, qp);
        return;
    }
    if (rc != RS_EXEC_OK) {
        drop_rest(qp);
        return;
    }
    rs_resp_advance(qp, pkt, op);
}

void rs_uc_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) {
        qp->host->rx_bad_state++;
        rs_pkt_release(&tp->pool, pkt);
        return;
    }
    uint32_t before = qp->resp_psn;
    if (qp->uc_drop || pkt->psn != qp->resp_psn) {
        if (!rs_op_starts(pkt->opcode)) {
            if (!qp->uc_drop && qp->in_msg != MSG_NONE)
                qp->recv_off = 0; /* the message in progress is lost; its WQE is reused */
            drop_rest(qp);
            rs_pkt_release(&tp->pool, pkt);
            return;
        }
        qp->uc_drop = 0; /* resynchronise at this FIRST/ONLY */
    }
    take(tp, qp, pkt);
    if (qp->resp_psn != before)
        rs_trace_accept(tp, qp, pkt->psn, qp->resp_psn);
    rs_pkt_release(&tp->pool, pkt);
}
