/* Out-of-order placement of READs (RS_RECOVERY_OOO, docs/multipath.md "READ").
 *
 * Requester: a READ response packet ahead of the expected PSN (comp_psn) is placed where its
 * PSN says -- offset (PSN - first PSN) x PMTU in the READ's local buffer, the position a READ
 * response implies (IBA 9.7.5.1.2: responses come one per PMTU in PSN order) -- and marked;
 * the completer passes the marked PSNs once comp_psn reaches them and completes READs in send
 * queue order (completer.c on_response).  It is no sequence error.  A gap counts as lost once
 * a response after it has been held for the reorder time (RACK's rule, as the responder's for
 * SEND/WRITE, irn.c): then the READ is re-issued from comp_psn (Go-Back-N's implied NAK); a
 * lost last response is left to the retransmit timer.
 *
 * Atomics follow the same rules: an ATOMIC_ACKNOWLEDGE ahead of comp_psn is placed (its original
 * value into the WQE's 8-byte buffer) and the atomic completes in order.
 *
 * Responder: a READ or atomic request ahead of the expected PSN (resp_psn) is kept, up to
 * RS_OOO_RD_REQS, and executed when resp_psn reaches it, so the READs and atomics of one QP are
 * answered in order however the fabric reordered their requests: each atomic is executed once,
 * in PSN order, and a duplicate is answered from the atomic response cache (IBA 9.4.5, as
 * Go-Back-N's rs_resp_duplicate). */
#include "transport/transport.h"
#include "transport/opcodes.h"

#include <string.h>

#include "rdmasim/ib.h"

static inline uint32_t bidx(const rs_irn *x, uint32_t psn) { return psn & (x->cap - 1); }
static inline int bget(const uint8_t *m, uint32_t i) { return (m[i >> 3] >> (i & 7)) & 1; }
static inline void bset(uint8_t *m, uint32_t i) { m[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void bclr(uint8_t *m, uint32_t i) { m[i >> 3] &= (uint8_t)~(1u << (i & 7)); }

/* An ATOMIC_ACKNOWLEDGE (an ACK) for compare-and-swap / fetch-and-add WQE w? */
static int atomic_fits(const rs_swqe *w, const rs_pkt *pkt)
{
    return (w->opcode == RS_WR_ATOMIC_CMP_AND_SWP || w->opcode == RS_WR_ATOMIC_FETCH_AND_ADD) &&
           (pkt->aeth_syndrome & RS_AETH_TYPE_MASK) == RS_AETH_ACK;
}

/* The original value into the atomic's 8-byte buffer (as the completer writes it in order). */
static int place_atomic(rs_qp *qp, const rs_swqe *w, const rs_pkt *pkt)
{
    uint8_t *dst = rs_mr_resolve(qp->host, w->sge[0].lkey, 0, qp->init.pd, RS_ACCESS_LOCAL_WRITE,
                                 w->sge[0].addr, 8);
    if (!dst)
        return -1;
    if (dst != RS_MR_NO_BYTES)
        memcpy(dst, &pkt->atomic_orig, 8);
    return 0;
}

int rs_ooo_read_hold(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt)
{
    rs_irn *x = qp->irn;
    int atomic = pkt->opcode == RS_OP_ATOMIC_ACK;
    if (!x || !x->reorder_ps || (!atomic && (pkt->opcode < RS_OP_READ_RESP_FIRST || pkt->opcode > RS_OP_READ_RESP_ONLY)))
        return 0;
    int32_t d = rs_psn_diff(pkt->psn, qp->comp_psn);
    if (d <= 0 || (uint32_t)d >= x->cap)
        return 0;
    uint32_t b = bidx(x, pkt->psn);
    int64_t now = tp->net.eng.now_ps;
    int old = x->rd_gap_ps && now - x->rd_gap_ps >= x->reorder_ps;
    if (bget(x->rd_held, b))
        return old ? 2 : 1; /* placed already (an answer to a re-issued READ) */
    for (uint32_t i = 0; i < qp->sq_count && i <= qp->req_idx; i++) {
        const rs_swqe *w = rs_qp_swqe(qp, i);
        if (!w->started)
            break;
        int32_t k = rs_psn_diff(pkt->psn, w->first_psn);
        if (k < 0 || (uint32_t)k >= w->npkts)
            continue;
        if (atomic) {
            if (!atomic_fits(w, pkt) || place_atomic(qp, w, pkt) != 0)
                return 0; /* not an atomic's, or refused: Go-Back-N's rules when it is expected */
        } else {
            if (w->opcode != RS_WR_RDMA_READ || !rs_comp_read_response_fits(qp, w, pkt))
                return 0; /* not a READ's, or malformed: Go-Back-N's rules when it is expected */
            if (pkt->payload_len && rs_scatter_sges(qp->host, qp->init.pd, w->sge, w->num_sge,
                                                    (uint64_t)(uint32_t)k * qp->pmtu, pkt->payload,
                                                    pkt->payload_len) != 0)
                return 0;
        }
        bset(x->rd_held, b);
        x->rd_nheld++;
        qp->stats.ooo_placed++;
        if (!x->rd_gap_ps)
            x->rd_gap_ps = now;
        return old ? 2 : 1;
    }
    return 0;
}

int rs_ooo_read_take(rs_qp *qp, uint32_t psn)
{
    rs_irn *x = qp->irn;
    uint32_t b = bidx(x, psn);
    if (!x->rd_nheld || !bget(x->rd_held, b))
        return 0;
    bclr(x->rd_held, b);
    x->rd_nheld--;
    return 1;
}

void rs_ooo_read_progress(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    /* the age of a gap runs from the first response held behind it (after in-order progress,
     * every response still held is behind the next gap) */
    x->rd_gap_ps = x->rd_nheld ? tp->net.eng.now_ps : 0;
}

int rs_ooo_rdreq_hold(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    rs_irn *x = qp->irn;
    for (uint32_t i = 0; i < x->n_rd_req; i++)
        if (x->rd_req[i]->psn == pkt->psn) { /* kept already: a resent request */
            qp->stats.dup_rcvd++;
            rs_pkt_release(&tp->pool, pkt);
            return 1;
        }
    if (x->n_rd_req == RS_OOO_RD_REQS)
        return 0;
    x->rd_req[x->n_rd_req++] = pkt;
    return 1;
}

rs_pkt *rs_ooo_rdreq_take(rs_transport *tp, rs_qp *qp)
{
    rs_irn *x = qp->irn;
    for (uint32_t i = 0; i < x->n_rd_req;) {
        rs_pkt *p = x->rd_req[i];
        int32_t d = rs_psn_diff(p->psn, qp->resp_psn);
        if (d > 0) {
            i++;
            continue;
        }
        x->rd_req[i] = x->rd_req[--x->n_rd_req];
        if (d == 0)
            return p;
        rs_pkt_release(&tp->pool, p); /* passed by other means: a duplicate now */
    }
    return NULL;
}

void rs_ooo_read_clear(rs_qp *qp)
{
    rs_irn *x = qp->irn;
    memset(x->rd_held, 0, x->cap / 8);
    x->rd_nheld = 0;
    x->rd_gap_ps = 0;
    for (uint32_t i = 0; i < x->n_rd_req; i++)
        if (qp->host)
            rs_pkt_release(&qp->host->tp->pool, x->rd_req[i]);
    x->n_rd_req = 0;
}
