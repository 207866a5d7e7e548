/* UD receive (IBA 9.7 / 10.2.5; rxe_recv.c check_keys, rxe_resp.c for UD): one datagram is one
 * message.  No PSN check, no ACK, no RNR: what cannot be taken is dropped and counted.
 *
 *   Q_Key other than the QP's          -> dropped, stats.ud_qkey_dropped
 *   no receive WQE posted              -> dropped, stats.ud_no_recv_dropped
 *   40 + payload longer than the WQE   -> own receive queue: dropped, stats.ud_len_dropped, the WQE stays
 *                                         (class D, rxe drop_msg); from an SRQ: the WQE completes
 *                                         IBV_WC_REM_INV_REQ_ERR (class E); the QP stays up either way
 *   a receive SGE that does not resolve -> completes IBV_WC_LOC_QP_OP_ERR, the QP goes to ERR
 * Accepted: 40 bytes of GRH area (RoCEv2 over IPv4: 20 zero bytes, then the IPv4 header as
 * received, as rxe's build_rdma_network_hdr), then the payload; the WC carries IBV_WC_GRH, the
 * source QPN from DETH and byte_len = 40 + payload. */
#include "transport/transport.h"

#include <string.h>

#include "transport/trace_qp.h"
#include "rdmasim/codec.h"
#include "rdmasim/ib.h"

static void complete_ud_recv(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt, uint32_t status)
{
    rs_rwqe *r = &qp->rq[qp->rq_head];
    int imm = pkt->opcode == RS_OP_UD_SEND_ONLY_IMM;
    int ok = status == RS_WC_STATUS_SUCCESS;
    rs_wc wc = {.wr_id = r->wr_id,
                .status = status,
                .opcode = RS_WC_OPCODE_RECV,
                .byte_len = ok ? RS_UD_GRH_BYTES + pkt->payload_len : 0,
                .imm_data = ok && imm ? pkt->imm : 0,
                .wc_flags = ok ? (RS_WC_FLAG_GRH | (imm ? RS_WC_FLAG_WITH_IMM : 0u)) : 0u,
                .qp_num = qp->qpn,
                .src_qp = pkt->src_qpn,
                .pkey_index = qp->attr.pkey_index,
                .sl = 0};
    rs_trace_complete(tp, qp, r->wr_id, status, RS_WC_OPCODE_RECV, wc.byte_len, RS_TRF_CQE | RS_TRF_RECV);
    rs_cq_push(&qp->host->cqs[qp->init.recv_cq], &wc);
    qp->rq_head = (qp->rq_head + 1) % qp->init.max_recv_wr;
    qp->rq_count--;
    qp->rq_done++;
}

void rs_ud_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) {
        qp->host->rx_bad_state++;
    } else if (pkt->deth_qkey != qp->attr.qkey) {
        qp->stats.ud_qkey_dropped++;
    } else if (qp->rq_count == 0 && !rs_srq_pull(qp)) {
        qp->stats.ud_no_recv_dropped++;
    } else {
        rs_rwqe *r = &qp->rq[qp->rq_head];
        if ((uint64_t)RS_UD_GRH_BYTES + pkt->payload_len > r->length) {
            if (qp->srq)
                complete_ud_recv(tp, qp, pkt, RS_WC_STATUS_REM_INV_REQ_ERR);
            else
                qp->stats.ud_len_dropped++;
        } else {
            uint8_t grh[RS_UD_GRH_BYTES] = {0};
            int rc = rs_encode_ipv4_header(pkt, grh + RS_UD_GRH_BYTES - RS_IPV4_HDR_BYTES) != 0;
            if (!rc)
                rc = rs_scatter_sges(qp->host, qp->init.pd, r->sge, r->num_sge, 0, grh, RS_UD_GRH_BYTES);
            if (!rc && pkt->payload_len)
                rc = rs_scatter_sges(qp->host, qp->init.pd, r->sge, r->num_sge, RS_UD_GRH_BYTES, pkt->payload,
                                     pkt->payload_len);
            if (rc) { /* malformed receive WQE (rxe class A for UD too): error completion, QP to ERR */
                complete_ud_recv(tp, qp, pkt, RS_WC_STATUS_LOC_QP_OP_ERR);
                rs_qp_to_error(tp, qp);
            } else {
                qp->stats.bytes_rcvd += pkt->payload_len;
                complete_ud_recv(tp, qp, pkt, RS_WC_STATUS_SUCCESS);
            }
        }
    }
    rs_pkt_release(&tp->pool, pkt);
}
