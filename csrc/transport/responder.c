/* Responder (rxe_resp.c, protocol.md 3.3): executes requests in PSN order.
 *
 *   psn == expected  -> check opcode sequence, resources, lengths, keys; execute; ACK if A bit
 *   psn >  expected  -> one NAK (PSN sequence error, carrying the expected PSN) per gap, drop
 *   psn <  expected  -> duplicate: re-ACK the last accepted PSN, drop
 * Errors that the spec sends to ERR (bad rkey, invalid request) NAK first. */
#include "transport/transport.h"
#include "transport/opcodes.h"

#include <string.h>

#include "transport/trace_qp.h"
#include "rdmasim/ib.h"


#ifdef RDMASIM_MUTANTS /* nak_sticky: an in-order packet leaves the NAK-sent flag as it was */
#define MUTANT_NAK_KEEP(tp, qp) (RS_MUTANT(&tp->net.eng, RS_MUT_NAK_STICKY) ? (qp)->nak_sent : 0)
#else
#define MUTANT_NAK_KEEP(tp, qp) 0
#endif

static void send_aeth(rs_transport *tp, rs_qp *qp, uint8_t syndrome, uint32_t psn)
{
    rs_pkt *a = rs_nic_new_packet(tp, qp, RS_OP_ACKNOWLEDGE, psn);
    if (!a)
        return;
    /* any ACK/NAK covers everything accepted before it: a coalesced ACK is no longer owed */
    qp->unacked_rx = 0;
    qp->ack_pending = 0;
    rs_timer_cancel(&qp->ack_timer);
    a->aeth_syndrome = syndrome;
    a->aeth_msn = qp->msn & 0xFFFFFF;
    if ((syndrome & RS_AETH_TYPE_MASK) == RS_AETH_ACK) {
        qp->stats.acks_sent++;
        rs_cc_resp_echo(qp, a);
    } else {
        qp->stats.naks_sent++;
    }
    rs_resp_send_ctrl(tp, qp, a);
}

/* A NAK that ends the connection: invalid request, remote access or remote operational error.
 * Queued responses are discarded with the QP, so the NAK goes straight to the port. */
static void fatal_nak(rs_transport *tp, rs_qp *qp, uint8_t syndrome, uint32_t psn)
{
    rs_qp_to_error(tp, qp);
    send_aeth(tp, qp, syndrome, psn);
}


/* Opcode sequence (C9-?): a message continues with MIDDLE/LAST of its own kind only.  (These two
 * checks run per packet: inlined into their callers, a call each less.) */
__attribute__((always_inline)) inline int rs_resp_sequence_ok(const rs_qp *qp, uint8_t op)
{
    if (qp->in_msg == MSG_NONE)
        return rs_op_starts(op) || rs_op_is_rd_atomic(op);
    if (rs_op_is_rd_atomic(op))
        return 0;
    if (rs_op_starts(op))
        return 0;
    return qp->in_msg == MSG_SEND ? rs_op_is_send(op) : rs_op_is_write(op);
}

/* rxe check_length: FIRST/MIDDLE carry exactly PMTU, LAST 1..PMTU, ONLY 0..PMTU. */
__attribute__((always_inline)) inline int rs_resp_length_ok(const rs_qp *qp, uint8_t op, uint32_t len)
{
    if (rs_op_is_atomic_write(op)) /* exactly the 8 bytes (rxe check_rkey: payload == resid) */
        return len == 8;
    if (rs_op_is_rd_atomic(op))
        return len == 0;
    if (len > qp->pmtu)
        return 0;
    if (rs_op_starts(op) && rs_op_ends(op))
        return 1;
    if (rs_op_ends(op))
        return len >= 1;
    return len == qp->pmtu;
}

/* Place `len` bytes at offset recv_off of the head receive WQE. 0, -1 too long, -2 bad lkey. */
static int scatter(rs_qp *qp, const uint8_t *data, uint32_t len)
{
    rs_rwqe *r = &qp->rq[qp->rq_head];
    if (qp->recv_off + len > r->length)
        return -1;
    return rs_scatter_sges(qp->host, qp->init.pd, r->sge, r->num_sge, qp->recv_off, data, len) ? -2 : 0;
}

/* An accepted AckReq SEND/WRITE packet (resp_psn already past it).  Without coalescing it is
 * acknowledged at once (rxe).  With it the ACK goes when it completes a group of
 * ack_coalesce_pkts packets, else within ack_timeout_ps (a later ACK covers it; a lost one is
 * recovered as any lost ACK: the requester's timeout resends, the duplicate is ACKed again). */
static void ack_accepted(rs_transport *tp, rs_qp *qp)
{
    const rs_nic_params *n = &qp->host->nic;
    if (++qp->unacked_rx >= n->ack_coalesce_pkts) {
        send_aeth(tp, qp, RS_AETH_ACK_UNLIMITED, (qp->resp_psn - 1) & RS_PSN_MASK);
        return;
    }
    if (!qp->ack_pending) {
        qp->ack_pending = 1;
        rs_engine_arm(&tp->net.eng, &qp->ack_timer, tp->net.eng.now_ps + n->ack_timeout_ps);
    }
}

void rs_resp_ack_due(rs_transport *tp, rs_qp *qp)
{
    if (qp->ack_pending && (qp->state == RS_QPS_RTS || qp->state == RS_QPS_RTR || qp->state == RS_QPS_SQD))
        send_aeth(tp, qp, RS_AETH_ACK_UNLIMITED, (qp->resp_psn - 1) & RS_PSN_MASK);
    qp->ack_pending = 0;
}

/* Execute a SEND packet: RS_EXEC_OK when accepted, else why it was refused (nothing done; the
 * transport's caller reacts: rc_refused here, uc.c for UC). */
/* A SEND/WRITE packet was executed: expect the next PSN, count its bytes, and track the message
 * (the MSN counts whole messages). One rule for RC and UC. */
void rs_resp_advance(rs_qp *qp, const rs_pkt *pkt, int op)
{
    qp->resp_psn = (pkt->psn + 1) & RS_PSN_MASK;
    qp->stats.bytes_rcvd += pkt->payload_len;
    if (rs_op_ends(op)) {
        qp->msn = (qp->msn + 1) & 0xFFFFFF;
        qp->in_msg = MSG_NONE;
    } else {
        qp->in_msg = rs_op_is_send(op) ? MSG_SEND : MSG_WRITE;
    }
}

int rs_resp_exec_send(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    if (rs_op_starts(op)) {
        if (qp->rq_count == 0 && qp->srq)
            rs_srq_pull(qp);
        if (qp->rq_count == 0) /* receiver not ready */
            return RS_EXEC_NO_WQE;
        qp->recv_off = 0;
    }
    int rc = scatter(qp, pkt->payload, pkt->payload_len);
    if (rc == -1) /* message longer than the receive buffer */
        return RS_EXEC_TOO_LONG;
    if (rc == -2) /* receive WQE with a bad lkey: malformed WQE */
        return RS_EXEC_BAD_WQE;
    if (rs_op_has_inv(op) && rs_mw_invalidate(qp->host, pkt->imm, qp->init.pd) != 0)
        return RS_EXEC_BAD_INV;
    qp->recv_off += pkt->payload_len;
    if (rs_op_ends(op))
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_SUCCESS, RS_WC_OPCODE_RECV, (uint32_t)qp->recv_off,
                            rs_op_has_inv(op) ? RS_RECV_WITH_INV : rs_op_has_imm(op), pkt->imm);
    return RS_EXEC_OK;
}

/* Execute an RDMA WRITE packet: RS_EXEC_OK when accepted, else why it was refused. */
int rs_resp_exec_write(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    uint32_t len = pkt->payload_len;
    uint8_t *first = NULL; /* the first packet's place: the RETH's range starts with it */
    if (rs_op_starts(op)) {
        if (!(qp->attr.qp_access_flags & RS_ACCESS_REMOTE_WRITE))
            return RS_EXEC_NO_ACCESS;
        qp->write_va = pkt->reth_va;
        qp->write_rkey = pkt->reth_rkey;
        qp->write_left = pkt->reth_len;
        qp->write_len = pkt->reth_len;
        qp->write_gen = 0;
        if (pkt->reth_len && !(first = rs_mr_resolve(qp->host, pkt->reth_rkey, qp->qpn, qp->init.pd,
                                                     RS_ACCESS_REMOTE_WRITE, pkt->reth_va, pkt->reth_len)))
            return RS_EXEC_BAD_RKEY;
        if (first && !tp->key_recheck)
            qp->write_gen = qp->host->mr_gen + 1u;
    }
    if (len > qp->write_left || (rs_op_ends(op) && len != qp->write_left))
        return RS_EXEC_BAD_LENGTH;
    if (rs_op_has_imm(op) && qp->rq_count == 0 && qp->srq)
        rs_srq_pull(qp);
    if (rs_op_has_imm(op) && qp->rq_count == 0)
        return RS_EXEC_NO_WQE;
    if (len) {
        /* the RETH's range resolved whole with the first packet: while no key of the host changed
         * since (rs_host.mr_gen), every later packet's place is the one after the last; else it is
         * resolved again (the region may have been deregistered, or its window invalidated) */
        uint8_t *dst = first && !tp->key_recheck         ? first
                       : qp->write_gen == qp->host->mr_gen + 1u ? qp->write_place
                       : rs_mr_resolve(qp->host, qp->write_rkey, qp->qpn, qp->init.pd, RS_ACCESS_REMOTE_WRITE,
                                       qp->write_va, len);
        if (!dst)
            return RS_EXEC_BAD_RKEY;
        qp->write_place = dst == RS_MR_NO_BYTES ? dst : dst + len;
        if (dst == RS_MR_NO_BYTES)
            ; /* size-only region: nothing to place */
        else if (pkt->payload)
            memcpy(dst, pkt->payload, len);
        else
            memset(dst, 0, len);
        qp->write_va += len;
        qp->write_left -= len;
    }
    if (rs_op_has_imm(op))
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_SUCCESS, RS_WC_OPCODE_RECV_RDMA_WITH_IMM, qp->write_len, 1,
                            pkt->imm);
    return RS_EXEC_OK;
}

/* RC: what a refused SEND/WRITE packet gets (rxe classes A-C): an RNR NAK, or a fatal NAK with,
 * for a receive WQE in use, its error completion. */
static void rc_refused(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt, int why)
{
    switch (why) {
    case RS_EXEC_NO_WQE: /* receiver not ready: RNR NAK, the requester retries later */
        send_aeth(tp, qp, (uint8_t)(RS_AETH_RNR_NAK | (qp->attr.min_rnr_timer & 0x1F)), pkt->psn);
        break;
    case RS_EXEC_TOO_LONG:
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_LOC_LEN_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        break;
    case RS_EXEC_BAD_WQE: /* rxe class A, LOC_QP_OP_ERR */
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_LOC_QP_OP_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
        fatal_nak(tp, qp, RS_AETH_NAK_REM_OP, pkt->psn);
        break;
    case RS_EXEC_BAD_RKEY:
        fatal_nak(tp, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
        break;
    case RS_EXEC_BAD_INV:
        /* rxe RESPST_ERR_INVALIDATE_RKEY (class J): the receive fails with REM_INV_REQ_ERR and the
         * QP goes to ERR; the requester is told by an Invalid Request NAK */
        rs_qp_complete_recv(tp, qp, RS_WC_STATUS_REM_INV_REQ_ERR, RS_WC_OPCODE_RECV, 0, 0, 0);
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        break;
    default: /* RS_EXEC_NO_ACCESS, RS_EXEC_BAD_LENGTH */
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        break;
    }
}

/* Number of response packets (= PSNs) a READ of `len` bytes occupies (protocol.md 9.5). */
static uint32_t read_npkts(const rs_qp *qp, uint32_t len)
{
    return len ? (len + qp->pmtu - 1) / qp->pmtu : 1;
}

/* Take the next responder resource (the oldest is overwritten: the requester's
 * max_rd_atomic keeps it from being needed again). */
static uint32_t take_resource(rs_transport *tp, rs_qp *qp)
{
    uint32_t i = qp->res_next;
    qp->res_next = (qp->res_next + 1) % qp->res_cap;
    rs_respq_drop_jobs_for(tp, qp, i);
    return i;
}

/* RDMA READ request at the expected PSN. Returns 0 if accepted. */
static int exec_read(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    if (!(qp->attr.qp_access_flags & RS_ACCESS_REMOTE_READ) || qp->attr.max_dest_rd_atomic == 0 ||
        pkt->reth_len > 0x80000000u) {
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    if (pkt->reth_len && !rs_mr_resolve(qp->host, pkt->reth_rkey, qp->qpn, qp->init.pd, RS_ACCESS_REMOTE_READ,
                                        pkt->reth_va, pkt->reth_len)) {
        fatal_nak(tp, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
        return -1;
    }
    uint32_t n = read_npkts(qp, pkt->reth_len);
    uint32_t i = take_resource(tp, qp);
    qp->res[i] = (rs_rdres){.valid = 1,
                            .first_psn = pkt->psn,
                            .last_psn = (pkt->psn + n - 1) & RS_PSN_MASK,
                            .va = pkt->reth_va,
                            .rkey = pkt->reth_rkey,
                            .length = pkt->reth_len};
    /* IBA C9-148: the MSN counts the READ when its request is received */
    qp->msn = (qp->msn + 1) & 0xFFFFFF;
    if (rs_respq_add_read(tp, qp, i, pkt->reth_va, pkt->reth_rkey, pkt->reth_len, pkt->psn) != 0)
        return -1;
    qp->resp_psn = (pkt->psn + n) & RS_PSN_MASK;
    return 0;
}

static void send_atomic_ack(rs_transport *tp, rs_qp *qp, uint32_t psn, uint64_t orig)
{
    rs_pkt *a = rs_nic_new_packet(tp, qp, RS_OP_ATOMIC_ACK, psn);
    if (!a)
        return;
    a->aeth_syndrome = RS_AETH_ACK_UNLIMITED;
    a->aeth_msn = qp->msn;
    a->atomic_orig = orig;
    qp->stats.acks_sent++;
    rs_resp_send_ctrl(tp, qp, a);
}

/* COMPARE_SWAP / FETCH_ADD at the expected PSN: executed once, result kept for duplicates. */
static int exec_atomic(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    if (!(qp->attr.qp_access_flags & RS_ACCESS_REMOTE_ATOMIC) || qp->attr.max_dest_rd_atomic == 0) {
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    /* rxe order: the rkey/range check first, then alignment (misaligned = invalid request) */
    uint8_t *mem = rs_mr_resolve(qp->host, pkt->atomic_rkey, qp->qpn, qp->init.pd, RS_ACCESS_REMOTE_ATOMIC,
                                 pkt->atomic_va, 8);
    if (!mem) {
        fatal_nak(tp, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
        return -1;
    }
    if (pkt->atomic_va & 7u) {
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    uint64_t orig, next;
    memcpy(&orig, mem, 8); /* the target is a host-order 64-bit word of the responder */
    if (pkt->opcode == RS_OP_COMPARE_SWAP)
        next = orig == pkt->atomic_compare ? pkt->atomic_swap_add : orig;
    else
        next = orig + pkt->atomic_swap_add;
    memcpy(mem, &next, 8);
    uint32_t i = take_resource(tp, qp);
    qp->res[i] = (rs_rdres){.valid = 1, .is_atomic = 1, .first_psn = pkt->psn, .last_psn = pkt->psn,
                            .atomic_orig = orig};
    qp->msn = (qp->msn + 1) & 0xFFFFFF;
    qp->resp_psn = (pkt->psn + 1) & RS_PSN_MASK;
    qp->stats.atomics_executed++;
    send_atomic_ack(tp, qp, pkt->psn, orig);
    return 0;
}

/* ATOMIC WRITE / FLUSH done (or replayed): an RDMA READ response ONLY with no payload and an ACK
 * AETH (IBA 1.5 annex A19; rxe send_read_response_ack) */
static void send_read_response_ack(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    rs_pkt *a = rs_nic_new_packet(tp, qp, RS_OP_READ_RESP_ONLY, psn);
    if (!a)
        return;
    a->aeth_syndrome = RS_AETH_ACK_UNLIMITED;
    a->aeth_msn = qp->msn & 0xFFFFFF;
    qp->stats.acks_sent++;
    rs_resp_send_ctrl(tp, qp, a);
}

/* Accepted ATOMIC WRITE / FLUSH: a responder resource for duplicates, MSN and PSN, the answer. */
static void finish_ack_only(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    uint32_t i = take_resource(tp, qp);
    qp->res[i] = (rs_rdres){.valid = 1, .ack_only = 1, .first_psn = pkt->psn, .last_psn = pkt->psn};
    qp->msn = (qp->msn + 1) & 0xFFFFFF;
    qp->resp_psn = (pkt->psn + 1) & RS_PSN_MASK;
    send_read_response_ack(tp, qp, pkt->psn);
}

/* ATOMIC WRITE (rxe atomic_write_reply): the QP must allow remote writes and hold responder
 * resources, the rkey must grant REMOTE_WRITE over the 8 bytes, which must be 8-byte aligned; the
 * 8 bytes are placed at once, as sent. */
static int exec_atomic_write(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    if (!(qp->attr.qp_access_flags & RS_ACCESS_REMOTE_WRITE) || qp->attr.max_dest_rd_atomic == 0 ||
        pkt->reth_len != 8) {
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    uint8_t *dst = rs_mr_resolve(qp->host, pkt->reth_rkey, qp->qpn, qp->init.pd, RS_ACCESS_REMOTE_WRITE,
                                 pkt->reth_va, 8);
    if (!dst) {
        fatal_nak(tp, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
        return -1;
    }
    if (pkt->reth_va & 7u) { /* rxe: RESPST_ERR_MISALIGNED_ATOMIC, an invalid request */
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    if (dst != RS_MR_NO_BYTES) {
        if (pkt->payload)
            memcpy(dst, pkt->payload, 8);
        else
            memset(dst, 0, 8);
    }
    qp->stats.bytes_rcvd += 8;
    finish_ack_only(tp, qp, pkt);
    return 0;
}

/* FLUSH (rxe check_op_valid / check_rkey / process_flush): the FETH's placement type needs the
 * matching IBV_ACCESS_FLUSH_* bit on the QP and on the rkey; selectivity level RANGE checks
 * [va, va+len) against the region, level MR the whole region (only the key, its access and that
 * va lies in it are checked). Memory is always visible and persistent here, so nothing more is done. */
static int exec_flush(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    uint32_t type = pkt->imm & 0xFu, level = (pkt->imm >> 4) & 3u;
    uint32_t need = ((type & 1u) ? RS_ACCESS_FLUSH_GLOBAL : 0u) | ((type & 2u) ? RS_ACCESS_FLUSH_PERSISTENT : 0u);
    if (need == 0 || (type & ~3u) || level > 1 || (qp->attr.qp_access_flags & need) != need ||
        qp->attr.max_dest_rd_atomic == 0) {
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
        return -1;
    }
    uint64_t len = level == 1 ? 0 : pkt->reth_len;
    if (!rs_mr_resolve(qp->host, pkt->reth_rkey, qp->qpn, qp->init.pd, need, pkt->reth_va, len)) {
        fatal_nak(tp, qp, RS_AETH_NAK_REM_ACCESS, pkt->psn);
        return -1;
    }
    finish_ack_only(tp, qp, pkt);
    return 0;
}

static rs_rdres *find_resource(rs_qp *qp, uint32_t psn)
{
    for (uint32_t i = 0; i < qp->res_cap; i++) {
        rs_rdres *r = &qp->res[i];
        if (r->valid && rs_psn_diff(psn, r->first_psn) >= 0 && rs_psn_diff(r->last_psn, psn) >= 0)
            return r;
    }
    return NULL;
}

/* A request with a PSN already accepted (protocol.md 3.3 "Duplicates"). */
void rs_resp_duplicate(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    qp->stats.dup_rcvd++;
    uint8_t op = pkt->opcode;
    if (!rs_op_is_rd_atomic(op)) { /* SEND/WRITE: ACK the last accepted PSN again (C9-105) */
        send_aeth(tp, qp, RS_AETH_ACK_UNLIMITED, (qp->resp_psn - 1) & RS_PSN_MASK);
        return;
    }
    rs_rdres *r = find_resource(qp, pkt->psn);
    int ack_only = rs_op_is_atomic_write(op) || rs_op_is_flush(op);
    if (r && (uint32_t)ack_only != r->ack_only)
        return; /* a resource of another kind at that PSN: dropped */
    if (r && r->ack_only) { /* rxe: replayed, never executed twice */
        send_read_response_ack(tp, qp, pkt->psn);
        return;
    }
    if (!r || (uint32_t)(r->is_atomic) != (uint32_t)rs_op_is_atomic(op))
        return; /* unknown: dropped */
    if (r->is_atomic) { /* replay the saved result, never execute twice */
        if (pkt->psn == r->first_psn)
            send_atomic_ack(tp, qp, pkt->psn, r->atomic_orig);
        return;
    }
    /* READ: re-execute from the duplicate's PSN if it asks for (a tail of) the same range */
    uint64_t skip = (uint64_t)(uint32_t)rs_psn_diff(pkt->psn, r->first_psn) * qp->pmtu;
    if (pkt->reth_rkey != r->rkey || pkt->reth_va != r->va + skip || skip + pkt->reth_len != r->length)
        return;
    uint32_t idx = (uint32_t)(r - qp->res);
    rs_respq_drop_jobs_for(tp, qp, idx);
    rs_respq_add_read(tp, qp, idx, pkt->reth_va, pkt->reth_rkey, pkt->reth_len, pkt->psn);
}

void rs_resp_execute(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    uint8_t op = pkt->opcode;
    if (!(rs_op_is_send(op) || rs_op_is_write(op) || rs_op_is_rd_atomic(op)) || !rs_resp_sequence_ok(qp, op) ||
        !rs_resp_length_ok(qp, op, pkt->payload_len)) {
        fatal_nak(tp, qp, RS_AETH_NAK_INV_REQ, pkt->psn);
    } else if (rs_op_is_rd_atomic(op)) {
        qp->nak_sent = MUTANT_NAK_KEEP(tp, qp);
        if (rs_op_is_read(op))
            exec_read(tp, qp, pkt);
        else if (rs_op_is_atomic_write(op))
            exec_atomic_write(tp, qp, pkt);
        else if (rs_op_is_flush(op))
            exec_flush(tp, qp, pkt);
        else
            exec_atomic(tp, qp, pkt);
    } else {
        qp->nak_sent = MUTANT_NAK_KEEP(tp, qp);
        int rc = rs_op_is_send(op) ? rs_resp_exec_send(tp, qp, pkt) : rs_resp_exec_write(tp, qp, pkt);
        if (rc != RS_EXEC_OK)
            rc_refused(tp, qp, pkt, rc);
        if (rc == RS_EXEC_OK) {
            rs_resp_advance(qp, pkt, op);
            if (rs_op_ends(op))
                rs_qp_msg_received(tp, qp);
            rs_cc_resp_accepted(qp, pkt);
            if (pkt->intel)
                rs_cc_resp_keep_int(tp, qp, pkt);
            if (pkt->ackreq)
                ack_accepted(tp, qp);
#ifdef RDMASIM_MUTANTS /* ack_ahead: the ACK covers one PSN not yet received */
            else if (RS_MUTANT(&tp->net.eng, RS_MUT_ACK_AHEAD) && !rs_op_ends(op))
                send_aeth(tp, qp, RS_AETH_ACK_UNLIMITED, (pkt->psn + 1) & RS_PSN_MASK);
#endif
            else
                qp->unacked_rx++;
        }
    }
}

static void process(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);

static void hold(rs_qp *qp, rs_pkt *pkt)
{
    pkt->next = NULL;
    if (qp->held_tail)
        qp->held_tail->next = pkt;
    else
        qp->held_head = pkt;
    qp->held_tail = pkt;
}

void rs_resp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) {
        qp->host->rx_bad_state++;
        rs_pkt_release(&tp->pool, pkt);
        return;
    }
    /* rxe finishes a READ's responses before it looks at the next request */
    if (qp->respq_jobs || qp->held_head) {
        hold(qp, pkt);
        return;
    }
    process(tp, qp, pkt);
}

void rs_resp_drain_held(rs_transport *tp, rs_qp *qp)
{
    while (qp->held_head && !qp->respq_jobs) {
        rs_pkt *pkt = qp->held_head;
        qp->held_head = pkt->next;
        if (!qp->held_head)
            qp->held_tail = NULL;
        pkt->next = NULL;
        if (qp->state != RS_QPS_RTR && qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) {
            qp->host->rx_bad_state++;
            rs_pkt_release(&tp->pool, pkt);
            continue;
        }
        process(tp, qp, pkt);
    }
}

void rs_resp_release_held(rs_transport *tp, rs_qp *qp)
{
    while (qp->held_head) {
        rs_pkt *pkt = qp->held_head;
        qp->held_head = pkt->next;
        rs_pkt_release(&tp->pool, pkt);
    }
    qp->held_tail = NULL;
    rs_timer_cancel(&qp->drain_timer);
}

static void process(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    if (qp->recovery == RS_RECOVERY_IRN)
        return rs_irn_resp_receive(tp, qp, pkt);
    uint32_t before = qp->resp_psn;
    int32_t d = rs_psn_diff(pkt->psn, qp->resp_psn);
    if (d > 0) {
        qp->stats.ooo_dropped++;
        if (!qp->nak_sent) {
            qp->nak_sent = 1;
            send_aeth(tp, qp, RS_AETH_NAK_PSN_SEQ, qp->resp_psn);
        }
    } else if (d < 0) {
        rs_resp_duplicate(tp, qp, pkt);
    } else {
        rs_resp_execute(tp, qp, pkt);
    }
    if (qp->resp_psn != before)
        rs_trace_accept(tp, qp, pkt->psn, qp->resp_psn);
    rs_pkt_release(&tp->pool, pkt);
}
