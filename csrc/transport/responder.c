/* Responder (rxe_resp.c, protocol.md 3.3): executes requests in PSN order.
 *
 *   psn == expected  -> check opcode sequence, resources, lengths, keys; execute; ACK if A bit
 *   psn >  expected  -> one NAK (PSN sequence error, carrying the expected PSN) per gap, drop
 *   psn <  expected  -> duplicate: re-ACK the last accepted PSN, drop
 * Errors that the spec sends to ERR (bad rkey, invalid request) NAK first. */
#include "transport/transport.h"

#include <string.h>

#include "rdmasim/ib.h"

enum { MSG_NONE = 0, MSG_SEND = 1, MSG_WRITE = 2 };

static void send_aeth(rs_sim *sim, rs_qp *qp, uint8_t syndrome, uint32_t psn)
{
    rs_pkt *a = rs_nic_new_packet(sim, qp, RS_OP_ACKNOWLEDGE, psn);
    if (!a)
        return;
    a->aeth_syndrome = syndrome;
    a->aeth_msn = qp->msn & 0xFFFFFF;
    if ((syndrome & RS_AETH_TYPE_MASK) == RS_AETH_ACK)
        qp->stats.acks_sent++;
    else
        qp->stats.naks_sent++;
    rs_nic_send_ctrl(sim, qp->host, a);
}

/* A NAK that ends the connection: invalid request, remote access or remote operational error. */
static void fatal_nak(rs_sim *sim, rs_qp *qp, uint8_t syndrome, uint32_t psn)
{
    send_aeth(sim, qp, syndrome, psn);
    rs_qp_to_error(sim, qp);
}

static int op_is_send(uint8_t op) { return op <= RS_OP_SEND_ONLY_IMM; }
static int op_is_write(uint8_t op) { return op >= RS_OP_WRITE_FIRST && op <= RS_OP_WRITE_ONLY_IMM; }
static int op_starts(uint8_t op)
{
    return op == RS_OP_SEND_FIRST || op == RS_OP_SEND_ONLY || op == RS_OP_SEND_ONLY_IMM ||
           op == RS_OP_WRITE_FIRST || op == RS_OP_WRITE_ONLY || op == RS_OP_WRITE_ONLY_IMM;
}
static int op_ends(uint8_t op)
{
    return op == RS_OP_SEND_LAST || op == RS_OP_SEND_LAST_IMM || op == RS_OP_SEND_ONLY ||
           op == RS_OP_SEND_ONLY_IMM || op == RS_OP_WRITE_LAST || op == RS_OP_WRITE_LAST_IMM ||
           op == RS_OP_WRITE_ONLY || op == RS_OP_WRITE_ONLY_IMM;
}
static int op_has_imm(uint8_t op)
{
    return op == RS_OP_SEND_LAST_IMM || op == RS_OP_SEND_ONLY_IMM || op == RS_OP_WRITE_LAST_IMM ||
           op == RS_OP_WRITE_ONLY_IMM;
}

/* Opcode sequence (C9-?): a message continues with MIDDLE/LAST of its own kind only. */
static int sequence_ok(const rs_qp *qp, uint8_t op)
{
    if (qp->in_msg == MSG_NONE)
        return op_starts(op);
    if (op_starts(op))
        return 0;
    return qp->in_msg == MSG_SEND ? op_is_send(op) : op_is_write(op);
}

/* rxe check_length: FIRST/MIDDLE carry exactly PMTU, LAST 1..PMTU, ONLY 0..PMTU. */
static int length_ok(const rs_qp *qp, uint8_t op, uint32_t len)
{
    if (len > qp->pmtu)
        return 0;
    if (op_starts(op) && op_ends(op))
        return 1;
    if (op_ends(op))
        return len >= 1;
    return len == qp->pmtu;
}

/* Place `len` bytes at offset recv_off of the head receive WQE. 0, -1 too long, -2 bad lkey. */
static int scatter(rs_qp *qp, const uint8_t *data, uint32_t len)
{
    rs_rwqe *r = &qp->rq[qp->rq_head];
    if (qp->recv_off + len > r->length)
        return -1;
    uint64_t off = qp->recv_off;
    for (uint32_t i = 0; i < r->num_sge && len > 0; i++) {
        const rs_sge *s = &r->sge[i];
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        uint32_t n = (uint32_t)(s->length - off) < len ? (uint32_t)(s->length - off) : len;
        uint8_t *dst = rs_mr_resolve(qp->host, s->lkey, 0, qp->init.pd, RS_ACCESS_LOCAL_WRITE, s->addr + off, n);
        if (!dst)
            return -2;
        if (data) {
            memcpy(dst, data, n);
            data += n;
        } else {
            memset(dst, 0, n);
        }
        len -= n;
        off = 0;
    }
    return 0;
}

/* Execute a SEND packet. Returns 0 when accepted, -1 when it was refused (NAK sent). */
static int exec_send(rs_sim *sim, rs_qp *qp, const rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    if (op_starts(op)) {
        if (qp->rq_count == 0) { /* receiver not ready: RNR NAK, the requester retries later */
            send_aeth(sim, qp, (uint8_t)(RS_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1F)), pkt->psn);
            return -1;
        }
        qp->recv_off = 0;
    }
    int rc = scatter(qp, pkt->payload, pkt->payload_len);
    if (rc == -1) { /* message longer than the receive buffer */
        rs_qp_complete_recv(sim, qp, RS_WC_STATUS_LOC_LEN_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
        fatal_nak(sim, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    if (rc == -2) { /* receive WQE with a bad lkey */
        rs_qp_complete_recv(sim, qp, RS_WC_STATUS_LOC_PROT_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
        fatal_nak(sim, qp, RS_AETH_NAK_REM_OP, pkt->psn);
        return -1;
    }
    qp->recv_off += pkt->payload_len;
    if (op_ends(op))
        rs_qp_complete_recv(sim, qp, RS_WC_STATUS_SUCCESS, RS_WC_OPCODE_RECV, (uint32_t)qp->recv_off,
                            op_has_imm(op), pkt->imm);
    return 0;
}

/* Execute an RDMA WRITE packet. Returns 0 when accepted, -1 when refused (NAK sent). */
static int exec_write(rs_sim *sim, rs_qp *qp, const rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    uint32_t len = pkt->payload_len;
    if (op_starts(op)) {
        if (!(qp->attr.qp_access_flags & RS_ACCESS_REMOTE_WRITE)) {
            fatal_nak(sim, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
            return -1;
        }
        qp->write_va = pkt->reth_va;
        qp->write_rkey = pkt->reth_rkey;
        qp->write_left = pkt->reth_len;
        qp->write_len = pkt->reth_len;
        if (pkt->reth_len && !rs_mr_resolve(qp->host, pkt->reth_rkey, 1, qp->init.pd, RS_ACCESS_REMOTE_WRITE,
                                            pkt->reth_va, pkt->reth_len)) {
            fatal_nak(sim, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
            return -1;
        }
    }
    if (len > qp->write_left || (op_ends(op) && len != qp->write_left)) {
        fatal_nak(sim, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    if (op_has_imm(op) && qp->rq_count == 0) {
        send_aeth(sim, qp, (uint8_t)(RS_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1F)), pkt->psn);
        return -1;
    }
    if (len) {
        /* resolved per packet: the region may have been deregistered since the first packet */
        uint8_t *dst = rs_mr_resolve(qp->host, qp->write_rkey, 1, qp->init.pd, RS_ACCESS_REMOTE_WRITE,
                                     qp->write_va, len);
        if (!dst) {
            fatal_nak(sim, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
            return -1;
        }
        if (pkt->payload)
            memcpy(dst, pkt->payload, len);
        else
            memset(dst, 0, len);
        qp->write_va += len;
        qp->write_left -= len;
    }
    if (op_has_imm(op))
        rs_qp_complete_recv(sim, qp, RS_WC_STATUS_SUCCESS, RS_WC_OPCODE_RECV_RDMA_WITH_IMM, qp->write_len, 1,
                            pkt->imm);
    return 0;
}

void rs_resp_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) {
        qp->host->rx_bad_state++;
        rs_pkt_release(&sim->pool, pkt);
        return;
    }
    uint8_t op = pkt->opcode;
    int32_t d = rs_psn_diff(pkt->psn, qp->resp_psn);
    if (d > 0) {
        qp->stats.ooo_dropped++;
        if (!qp->nak_sent) {
            qp->nak_sent = 1;
            send_aeth(sim, qp, RS_AETH_NAK_PSN_SEQ, qp->resp_psn);
        }
    } else if (d < 0) {
        qp->stats.dup_rcvd++;
        send_aeth(sim, qp, RS_AETH_ACK_UNLIMITED, (qp->resp_psn - 1) & RS_PSN_MASK);
    } else if (!(op_is_send(op) || op_is_write(op)) || !sequence_ok(qp, op) ||
               !length_ok(qp, op, pkt->payload_len)) {
        /* READ and atomics are not emulated yet: answered as an invalid request */
        fatal_nak(sim, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
    } else {
        qp->nak_sent = 0;
        int rc = op_is_send(op) ? exec_send(sim, qp, pkt) : exec_write(sim, qp, pkt);
        if (rc == 0) {
            qp->resp_psn = (pkt->psn + 1) & RS_PSN_MASK;
            qp->stats.bytes_rcvd += pkt->payload_len;
            if (op_ends(op)) {
                qp->msn = (qp->msn + 1) & 0xFFFFFF;
                qp->in_msg = MSG_NONE;
            } else {
                qp->in_msg = op_is_send(op) ? MSG_SEND : MSG_WRITE;
            }
            if (pkt->ackreq)
                send_aeth(sim, qp, RS_AETH_ACK_UNLIMITED, pkt->psn);
        }
    }
    rs_pkt_release(&sim->pool, pkt);
}
