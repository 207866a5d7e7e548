/* Requester (rxe_req.c, protocol.md 3.2): turns send WQEs into request packets.
 *
 * The next packet is always (WQE req_idx, byte offset req_off, PSN req_psn).
 * Each packet carries one PSN; FIRST/MIDDLE/LAST/ONLY follows from the offset.
 * Go-Back-N rewinds those three to the oldest unacknowledged PSN.  Bytes are
 * gathered from the local memory regions when the packet is built. */
#include "transport/transport.h"

#include <string.h>

#include "rdmasim/ib.h"

int rs_req_may_start(const rs_qp *qp, const rs_swqe *w)
{
    if (qp->sq_draining && !w->started)
        return 0; /* SQD: only WQEs already started may (re)send */
    /* IBV_SEND_FENCE: wait for every earlier READ/atomic to complete */
    if ((w->send_flags & RS_SEND_FENCE) && qp->rd_outstanding)
        return 0;
    /* max_rd_atomic bounds READ/atomic requests in flight (rxe check_init_depth) */
    if (rs_wr_is_rd_atomic(w->opcode) && qp->rd_outstanding >= qp->attr.max_rd_atomic)
        return 0;
    return 1;
}

int rs_req_can_send(const rs_transport *tp, const rs_qp *qp)
{
    if (qp->recovery == RS_RECOVERY_IRN)
        return rs_irn_req_can_send(tp, qp);
    if (qp->is_ud) /* one packet per WQE, no PSN window (nothing is acknowledged); SQD starts none */
        return qp->state == RS_QPS_RTS && qp->req_idx < qp->sq_count;
    if (qp->is_uc) { /* nothing is acknowledged: no PSN window, no RNR wait */
        if ((qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD) || qp->req_idx >= qp->sq_count)
            return 0;
        return qp->req_off != 0 || rs_req_may_start(qp, &qp->sq[rs_qp_sq_slot(qp, qp->req_idx)]);
    }
    if (qp->state != RS_QPS_RTS && qp->state != RS_QPS_SQD)
        return 0;
    if (qp->req_idx >= qp->sq_count)
        return 0;
    if (qp->rnr_until_ps > tp->net.eng.now_ps)
        return 0;
    /* rxe_req.c: a request may start while req_psn - comp_psn <= max_unacked_psns
     * (`psn_compare(req.psn, comp.psn + RXE_MAX_UNACKED_PSNS) > 0` waits); per host (nic_params.h) */
    if (rs_psn_diff(qp->req_psn, qp->comp_psn) > (int32_t)qp->host->nic.max_unacked_psns)
        return 0;
    const rs_swqe *w = &qp->sq[rs_qp_sq_slot(qp, qp->req_idx)];
    if (qp->req_off == 0 && !rs_req_may_start(qp, w)) /* about to start a WQE */
        return 0;
    return rs_cc_window_open(tp, qp, w); /* the congestion window, when the algorithm has one */
}

/* The rate limiter lets the QP's next request go at `next_tx_ps` (0 = now). */
int rs_req_paced(const rs_transport *tp, const rs_qp *qp) { return qp->next_tx_ps > tp->net.eng.now_ps; }

static int is_send(uint32_t wr_op)
{
    return wr_op == RS_WR_SEND || wr_op == RS_WR_SEND_WITH_IMM || wr_op == RS_WR_SEND_WITH_INV;
}
static int has_imm(uint32_t wr_op) { return wr_op == RS_WR_SEND_WITH_IMM || wr_op == RS_WR_RDMA_WRITE_WITH_IMM; }

/* FIRST/MIDDLE/LAST/ONLY opcode for packet `index` of `npkts` (protocol.md 1.5). */
static uint8_t pick_opcode(uint32_t wr_op, uint32_t index, uint32_t npkts)
{
    int first = index == 0, last = index + 1 == npkts;
    if (is_send(wr_op)) {
        int inv = wr_op == RS_WR_SEND_WITH_INV;
        if (first && last)
            return inv ? RS_OP_SEND_ONLY_INV : has_imm(wr_op) ? RS_OP_SEND_ONLY_IMM : RS_OP_SEND_ONLY;
        if (first)
            return RS_OP_SEND_FIRST;
        if (last)
            return inv ? RS_OP_SEND_LAST_INV : has_imm(wr_op) ? RS_OP_SEND_LAST_IMM : RS_OP_SEND_LAST;
        return RS_OP_SEND_MIDDLE;
    }
    if (first && last)
        return has_imm(wr_op) ? RS_OP_WRITE_ONLY_IMM : RS_OP_WRITE_ONLY;
    if (first)
        return RS_OP_WRITE_FIRST;
    if (last)
        return has_imm(wr_op) ? RS_OP_WRITE_LAST_IMM : RS_OP_WRITE_LAST;
    return RS_OP_WRITE_MIDDLE;
}

/* Copy `len` bytes at message offset `off` out of the WQE's SGEs (dst NULL: only check that they
 * resolve, for size-only regions); 0 or -1 on a bad lkey/range. */
static int gather(rs_qp *qp, const rs_swqe *w, uint64_t off, uint32_t len, uint8_t *dst)
{
    for (uint32_t i = 0; i < w->num_sge && len > 0; i++) {
        const rs_sge *s = &w->sge[i];
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        uint32_t n = (uint32_t)(s->length - off) < len ? (uint32_t)(s->length - off) : len;
        const uint8_t *src = rs_mr_resolve(qp->host, s->lkey, 0, qp->init.pd, 0, s->addr + off, n);
        if (!src)
            return -1;
        if (dst) {
            if (src == RS_MR_NO_BYTES)
                memset(dst, 0, n); /* mixed with real regions: the size-only part reads as zeros */
            else
                memcpy(dst, src, n);
            dst += n;
        }
        len -= n;
        off = 0;
    }
    return 0;
}

/* Every SGE of the WQE must resolve before anything is sent (IBV_WC_LOC_PROT_ERR otherwise).
 * READ and atomic results are written into them, so those need LOCAL_WRITE.  *whole: for a
 * SEND/WRITE of one SGE sent in one packet, where its bytes are (the packet's gather would resolve
 * the same key, range and access again: a one-packet message resolves once); else NULL. */
static int check_sges(rs_transport *tp, rs_qp *qp, rs_swqe *w, const uint8_t **whole)
{
    uint32_t need = rs_wr_is_rd_atomic(w->opcode) ? RS_ACCESS_LOCAL_WRITE : 0;
    w->no_bytes = w->num_sge > 0;
    *whole = NULL;
    for (uint32_t i = 0; i < w->num_sge; i++) {
        const rs_sge *s = &w->sge[i];
        const uint8_t *p = s->length ? rs_mr_resolve(qp->host, s->lkey, 0, qp->init.pd, need, s->addr, s->length)
                                     : RS_MR_NO_BYTES;
        if (!p)
            return -1;
        w->no_bytes &= p == RS_MR_NO_BYTES;
        *whole = p;
    }
    if (w->num_sge != 1 || w->length > qp->pmtu || need || tp->key_recheck)
        *whole = NULL;
    w->res_gen = w->no_bytes && !tp->key_recheck ? qp->host->mr_gen + 1u : 0;
    return 0;
}

static void local_fail(rs_transport *tp, rs_qp *qp, uint32_t status)
{
    /* Completions stay in SQ order: WQEs before the failed one are flushed, it gets `status`. */
    uint32_t failed = qp->req_idx;
    qp->state = RS_QPS_ERR;
    for (uint32_t i = 0; i < failed; i++)
        rs_qp_complete_head(tp, qp, RS_WC_STATUS_WR_FLUSH_ERR);
    rs_qp_complete_head(tp, qp, status);
    rs_qp_to_error(tp, qp);
}

static void local_error(rs_transport *tp, rs_qp *qp) { local_fail(tp, qp, RS_WC_STATUS_LOC_PROT_ERR); }

/* BIND_MW / LOCAL_INV (rxe_do_local_ops): done when the requester reaches it, no packet; it
 * completes as soon as every WQE before it has (at once when it is the oldest). It takes no PSN:
 * a Go-Back-N rewind passes it without running it again. */
static void run_local(rs_transport *tp, rs_qp *qp, rs_swqe *w)
{
    if (!w->started) {
        uint32_t st = w->opcode == RS_WR_BIND_MW ? rs_mw_bind(qp->host, qp, w)
                                                 : rs_mw_local_inv(qp->host, w->imm_data);
        if (st != RS_WC_STATUS_SUCCESS) {
            local_fail(tp, qp, st);
            return;
        }
        w->started = 1;
    }
    w->first_psn = qp->req_psn; /* last PSN = first - 1: acknowledged with everything before it */
    qp->req_idx++;
    if (qp->req_idx == 1) /* the oldest WQE: nothing before it to wait for */
        rs_qp_complete_head(tp, qp, RS_WC_STATUS_SUCCESS);
}

/* Bytes the packet occupies on the wire (frame and the link layer's extra: FCS, preamble and gap on
 * Ethernet): what the pacer meters.
 * The packet is complete here, so its frame length is kept for the link (rs_pkt.frame_len). */
static uint32_t wire_bytes(rs_pkt *p)
{
    p->frame_len = (uint16_t)rs_frame_len(p);
    return (uint32_t)p->frame_len + rs_frame_wire_extra(p);
}

/* wire_bytes of a request packet of an RC/UC QP: its frame length is the last request's when the
 * opcode and payload length are the same (all else in it is the QP's path and attributes, which
 * reset the cache when they change), so a message's packets measure their frame once. */
static uint32_t req_wire_bytes(rs_qp *qp, rs_pkt *p)
{
    uint32_t key = ((uint32_t)p->opcode << 24 | p->payload_len) + 1u; /* payload_len <= path MTU */
    if (key != qp->req_flen_key) {
        qp->req_flen = (uint32_t)rs_frame_len(p);
        qp->req_flen_key = key;
    }
    p->frame_len = (uint16_t)qp->req_flen;
    return (uint32_t)p->frame_len + rs_frame_wire_extra(p);
}

/* Returns 1 when the packet is a retransmission (its PSN was sent before). */
static int count_sent(rs_qp *qp, uint32_t len)
{
    qp->stats.pkts_sent++;
    qp->stats.bytes_sent += len;
    if (rs_psn_diff(qp->req_psn, qp->max_sent_psn_next) < 0) {
        qp->stats.pkts_retx++;
        qp->stats.bytes_retx += len;
        return 1;
    }
    return 0;
}

static uint8_t rd_atomic_opcode(uint32_t wr_op)
{
    switch (wr_op) {
    case RS_WR_RDMA_READ:
        return RS_OP_READ_REQUEST;
    case RS_WR_ATOMIC_CMP_AND_SWP:
        return RS_OP_COMPARE_SWAP;
    case RS_WR_ATOMIC_WRITE:
        return RS_OP_ATOMIC_WRITE;
    case RS_WR_FLUSH:
        return RS_OP_FLUSH;
    default:
        return RS_OP_FETCH_ADD;
    }
}

/* READ request (one packet, occupying one PSN per expected response packet), atomic, ATOMIC WRITE
 * (RETH + the WR's 8 bytes) or FLUSH (FETH + RETH). A READ resumed after a partial answer asks for
 * the missing tail only (rxe req_retry). */
static rs_pkt *build_rd_atomic(rs_transport *tp, rs_qp *qp, rs_swqe *w)
{
    int read = w->opcode == RS_WR_RDMA_READ;
    uint8_t op = rd_atomic_opcode(w->opcode);
    rs_pkt *p = rs_nic_new_packet(tp, qp, op, qp->req_psn);
    if (!p)
        return NULL;
    uint32_t npsn = 1;
    if (op == RS_OP_ATOMIC_WRITE || op == RS_OP_FLUSH) {
        p->reth_va = w->remote_addr;
        p->reth_rkey = w->rkey;
        if (op == RS_OP_FLUSH) { /* the FETH word (placement type, selectivity) and the range length */
            p->imm = w->imm_data;
            p->reth_len = (uint32_t)w->compare_add;
        } else { /* the 8 bytes as the WR gave them (rxe copies wqe->dma.atomic_wr) */
            if (rs_pkt_attach_payload(&tp->pool, p) != 0) {
                rs_pkt_release(&tp->pool, p);
                tp->net.eng.failed = 1;
                rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory allocating a payload buffer");
                return NULL;
            }
            memcpy(p->payload, &w->compare_add, 8);
            p->payload_len = 8;
            p->reth_len = 8;
        }
    } else if (read) {
        p->reth_va = w->remote_addr + qp->req_off;
        p->reth_rkey = w->rkey;
        p->reth_len = (uint32_t)(w->length - qp->req_off);
        npsn = w->npkts - (uint32_t)(qp->req_off / qp->pmtu);
        w->read_psn = qp->req_psn;
    } else {
        p->atomic_va = w->remote_addr;
        p->atomic_rkey = w->rkey;
        if (w->opcode == RS_WR_ATOMIC_CMP_AND_SWP) {
            p->atomic_compare = w->compare_add;
            p->atomic_swap_add = w->swap;
        } else {
            p->atomic_swap_add = w->compare_add;
        }
    }
    p->ackreq = 1;
    qp->since_ackreq = 0;
    int retx = count_sent(qp, p->payload_len);
    uint32_t next = (qp->req_psn + npsn) & RS_PSN_MASK;
    if (rs_psn_diff(next, qp->max_sent_psn_next) > 0)
        qp->max_sent_psn_next = next;
    qp->req_psn = next;
    qp->req_idx++;
    qp->req_off = 0;
    qp->rd_outstanding++;
    rs_comp_arm_rto(tp, qp);
    rs_cc_on_request_sent(tp, qp, p, wire_bytes(p), retx);
    return p;
}

/* The packet's payload: `len` bytes of the WQE from `off`, gathered from its SGEs. A size-only
 * source (bulk flows) carries its length, not bytes; its SGEs, resolved whole as the WQE started,
 * are resolved again per packet only if a region of the host changed since (rs_host.mr_gen: a
 * region re-registered into another PD fails the next packet as it would have). On failure the
 * packet is released and the error taken (local protection error, or out of memory); returns -1. */
static int fill_payload(rs_transport *tp, rs_qp *qp, rs_swqe *w, uint64_t off, uint32_t len, rs_pkt *p,
                        const uint8_t *whole)
{
    if (len && !w->no_bytes && rs_pkt_attach_payload(&tp->pool, p) != 0) {
        rs_pkt_release(&tp->pool, p);
        tp->net.eng.failed = 1;
        rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory allocating a payload buffer");
        return -1;
    }
    if (len && whole) { /* the whole message, resolved by check_sges just before */
        if (!w->no_bytes)
            memcpy(p->payload, whole, len);
    } else if (len && w->no_bytes && w->res_gen == qp->host->mr_gen + 1u) {
        /* size-only, every SGE resolved whole and no region changed since: so does any part */
    } else if (len && gather(qp, w, off, len, w->no_bytes ? NULL : p->payload) != 0) {
        rs_pkt_release(&tp->pool, p);
        local_error(tp, qp);
        return -1;
    }
    p->payload_len = len;
    return 0;
}

/* UD: the WQE's one datagram (at most one MTU) to the address handle's host and
 * QPN, with a DETH.  No ACK comes: the send completes as the datagram is handed to the port, as in
 * rxe (its completer retires UD WQEs once sent). */
static rs_pkt *build_ud(rs_transport *tp, rs_qp *qp)
{
    rs_swqe *w = rs_qp_swqe(qp, qp->req_idx);
    if (w->length > qp->pmtu) {
        /* IBA C10-93.1.1: a UD message longer than the MTU emits no packet and raises no error; rxe
         * completes it as sent and consumes its PSN.  Counted, so a user can see where it went. */
        qp->stats.ud_too_long_dropped++;
        qp->req_psn = (qp->req_psn + 1) & RS_PSN_MASK;
        qp->max_sent_psn_next = qp->comp_psn = qp->req_psn;
        qp->req_idx++;
        rs_qp_complete_head(tp, qp, RS_WC_STATUS_SUCCESS);
        return NULL;
    }
    if (w->ud_dest == RS_UD_DEST_NO_AV) { /* rxe_get_av: no address vector for this QP */
        local_fail(tp, qp, RS_WC_STATUS_LOC_QP_OP_ERR);
        return NULL;
    }
    const uint8_t *whole;
    if (check_sges(tp, qp, w, &whole) != 0) {
        local_error(tp, qp);
        return NULL;
    }
    uint32_t len = (uint32_t)w->length;
    int imm = w->opcode == RS_WR_SEND_WITH_IMM;
    rs_pkt *p = rs_nic_new_packet(tp, qp, imm ? RS_OP_UD_SEND_ONLY_IMM : RS_OP_UD_SEND_ONLY, qp->req_psn);
    if (!p)
        return NULL;
    if (fill_payload(tp, qp, w, 0, len, p, whole) != 0)
        return NULL;
    /* the address handle's path, resolved per work request by the port */
    rs_link_path path;
    rs_port_resolve_path(&tp->net, &qp->host->port, (int)w->ud_dest, (uint8_t)w->ud_tclass, qp->qpn, &path);
    rs_link_frame(p, &path);
    p->dst_node = (uint16_t)w->ud_dest;
    p->dest_qpn = w->ud_qpn;
    p->deth_qkey = (w->ud_qkey & RS_QKEY_USE_QP) ? qp->attr.qkey : w->ud_qkey;
    if (imm)
        p->imm = w->imm_data;
    p->se = (w->send_flags & RS_SEND_SOLICITED) != 0;
    w->first_psn = qp->req_psn;
    w->started = 1;
    count_sent(qp, len);
    qp->req_psn = (qp->req_psn + 1) & RS_PSN_MASK;
    qp->max_sent_psn_next = qp->req_psn;
    qp->comp_psn = qp->req_psn;
    qp->req_idx++;
    rs_cc_on_request_sent(tp, qp, p, wire_bytes(p), 0);
    rs_qp_complete_head(tp, qp, RS_WC_STATUS_SUCCESS);
    return p;
}

/* UC: RC's packet with the UC opcode (RC's | 0x20, IBA 9.2.1).  No ACK comes and nothing is
 * retransmitted: the WQE completes once its last packet is handed to the port (rxe: the
 * requester marks a UC WQE done at its last packet, and the completer retires it). */
static rs_pkt *build_uc(rs_transport *tp, rs_qp *qp)
{
    int completes = qp->req_off + qp->pmtu >= rs_qp_swqe(qp, qp->req_idx)->length;
    rs_pkt *p = rs_req_build_packet(tp, qp);
    if (!p)
        return NULL;
    p->opcode |= 0x20u;
    if (completes) {
        qp->comp_psn = qp->req_psn;
        rs_qp_complete_head(tp, qp, RS_WC_STATUS_SUCCESS);
    }
    return p;
}

rs_pkt *rs_req_build(rs_transport *tp, rs_qp *qp)
{
    if (qp->req_off == 0 && rs_wr_is_local(rs_qp_swqe(qp, qp->req_idx)->opcode)) {
        run_local(tp, qp, rs_qp_swqe(qp, qp->req_idx));
        return NULL;
    }
    if (qp->is_ud)
        return build_ud(tp, qp);
    if (qp->is_uc)
        return build_uc(tp, qp);
    if (qp->recovery == RS_RECOVERY_IRN)
        return rs_irn_req_build(tp, qp);
    return rs_req_build_packet(tp, qp);
}

rs_pkt *rs_req_build_packet(rs_transport *tp, rs_qp *qp)
{
    rs_swqe *w = rs_qp_swqe(qp, qp->req_idx);
    const uint8_t *whole = NULL;
    if (qp->req_off == 0) {
        if (check_sges(tp, qp, w, &whole) != 0) {
            local_error(tp, qp);
            return NULL;
        }
        w->first_psn = qp->req_psn;
        w->started = 1;
    }
    if (rs_wr_is_rd_atomic(w->opcode))
        return build_rd_atomic(tp, qp, w);
    uint32_t index = (uint32_t)(qp->req_off / qp->pmtu);
    uint64_t left = w->length - qp->req_off;
    uint32_t len = left < qp->pmtu ? (uint32_t)left : qp->pmtu;
    int last = index + 1 == w->npkts;

    rs_pkt *p = rs_nic_new_packet(tp, qp, pick_opcode(w->opcode, index, w->npkts), qp->req_psn);
    if (!p)
        return NULL;
    if (fill_payload(tp, qp, w, qp->req_off, len, p, whole) != 0)
        return NULL;
    if (index == 0 && !is_send(w->opcode)) {
        p->reth_va = w->remote_addr;
        p->reth_rkey = w->rkey;
        p->reth_len = (uint32_t)w->length;
    }
    if (last && (has_imm(w->opcode) || w->opcode == RS_WR_SEND_WITH_INV))
        p->imm = w->imm_data; /* ImmDt, or the IETH's rkey */
    p->se = last && (w->send_flags & RS_SEND_SOLICITED) && (is_send(w->opcode) || has_imm(w->opcode));
    /* the host's AckReq cadence (nic_params.h; rxe: every 66th); the count runs across retries */
    if (last || ++qp->since_ackreq >= qp->host->nic.ack_req_interval) {
        p->ackreq = 1;
        qp->since_ackreq = 0;
    }

    int retx = count_sent(qp, len);
    if (!retx)
        qp->max_sent_psn_next = (qp->req_psn + 1) & RS_PSN_MASK;
    qp->req_psn = (qp->req_psn + 1) & RS_PSN_MASK;
    if (last) {
        qp->req_idx++;
        qp->req_off = 0;
    } else {
        qp->req_off += len;
    }
    if (!qp->is_uc) /* UC: no acknowledgement to wait for */
        rs_comp_arm_rto(tp, qp);
    rs_cc_on_request_sent(tp, qp, p, req_wire_bytes(qp, p), retx);
    return p;
}

void rs_req_rewind(rs_transport *tp, rs_qp *qp, uint32_t psn)
{
    if (qp->recovery == RS_RECOVERY_IRN && rs_irn_rewind(tp, qp, psn))
        return;
    qp->req_idx = 0;
    qp->rd_outstanding = 0; /* every READ/atomic from the head on is sent again */
    qp->req_off = 0;
#ifdef RDMASIM_MUTANTS /* rewind_psn: go back to the PSN after the one asked for */
    if (RS_MUTANT(&tp->net.eng, RS_MUT_REWIND_PSN))
        psn = (psn + 1) & RS_PSN_MASK;
#endif
    qp->req_psn = psn; /* since_ackreq runs on across the retry, as rxe's noack_pkts */
    if (qp->sq_count) {
        rs_swqe *w = rs_qp_swqe(qp, 0);
        int32_t npsn = rs_psn_diff(psn, w->first_psn);
        /* a partially acknowledged message resumes at its first unacknowledged packet */
        if (w->started && npsn > 0 && (uint32_t)npsn < w->npkts)
            qp->req_off = (uint64_t)npsn * qp->pmtu;
    }
    rs_nic_wake(tp, qp);
}

void rs_req_rnr_done(rs_transport *tp, rs_qp *qp)
{
    qp->rnr_until_ps = 0;
    rs_nic_wake(tp, qp);
}
