/* Trace hooks for the engine, network and transport (internal).
 *
 * Each hook is one line at its call site and one NULL test when tracing is off;
 * the record is filled out of line (trace.c) only when it is on. */
#ifndef RDMASIM_CORE_TRACE_H
#define RDMASIM_CORE_TRACE_H

#include "sim/sim_impl.h"
#include "rdmasim/trace.h"

#if defined(__GNUC__) || defined(__clang__)
#define RS_TRACE_ON(sim) __builtin_expect((sim)->trace != NULL, 0)
#else
#define RS_TRACE_ON(sim) ((sim)->trace != NULL)
#endif

typedef struct rs_trace {
    rs_trace_rec *recs; /* pending records, oldest first */
    size_t n;           /* pending */
    size_t cap;         /* allocated slots (grown by doubling, never above the record cap) */
    uint64_t max;       /* cap on records kept since enable; 0 = none */
    uint64_t recorded;  /* records kept since enable */
    uint64_t lost;      /* records not kept: cap reached or out of memory */
} rs_trace;

/* out of line: trace.c */
void rs_trace_rec_frame(rs_sim *sim, uint8_t kind, const rs_pkt *p, int link, int node, int peer,
                        uint8_t reason);
void rs_trace_rec_link(rs_sim *sim, uint8_t kind, const rs_pkt *p, const rs_link *l, uint8_t reason);
/* set psn and aux of the record just written (if one was kept) */
void rs_trace_patch_last(rs_sim *sim, uint32_t psn, uint32_t aux);
void rs_trace_rec_qp(rs_sim *sim, uint8_t kind, const rs_qp *qp, uint64_t wr_id, uint32_t len,
                     uint8_t status, uint8_t verb_op, uint8_t flags, uint8_t reason);

void rs_trace_rec_pfc(rs_sim *sim, int sw, uint32_t port, uint32_t prio, int xoff, uint64_t shared,
                      uint64_t hdrm, uint64_t threshold);

/* the responder accepted request PSN psn; next is the PSN it expects now */
static inline void rs_trace_accept(rs_sim *sim, const rs_qp *qp, uint32_t psn, uint32_t next)
{
    if (sim->trace) {
        rs_trace_rec_qp(sim, RS_TR_ACCEPT, qp, 0, 0, 0, 0, 0, 0);
        rs_trace_patch_last(sim, psn, next);
    }
}

/* a frame put on link l (TX), lost on it (DROP with a reason), or delivered by it (RX) */
static inline void rs_trace_tx(rs_sim *sim, const rs_link *l, const rs_pkt *p)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_link(sim, RS_TR_TX, p, l, RS_TR_DROP_NONE);
}

static inline void rs_trace_link_drop(rs_sim *sim, const rs_link *l, const rs_pkt *p, int reason)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_link(sim, RS_TR_DROP, p, l, (uint8_t)reason);
}

static inline void rs_trace_rx(rs_sim *sim, const rs_link *l, const rs_pkt *p)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_link(sim, RS_TR_RX, p, l, RS_TR_DROP_NONE);
}

/* a frame discarded inside host `host` after delivery (e.g. unknown QP) */
static inline void rs_trace_host_drop(rs_sim *sim, int host, const rs_pkt *p, int reason)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_frame(sim, RS_TR_DROP, p, -1, host, p->src_node, (uint8_t)reason);
}

static inline void rs_trace_post_send(rs_sim *sim, const rs_qp *qp, const rs_swqe *w, int signaled)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_qp(sim, RS_TR_POST_SEND, qp, w->wr_id, (uint32_t)w->length, 0, (uint8_t)w->opcode,
                        signaled ? RS_TRF_SIGNALED : 0, 0);
}

static inline void rs_trace_post_recv(rs_sim *sim, const rs_qp *qp, const rs_rwqe *r)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_qp(sim, RS_TR_POST_RECV, qp, r->wr_id, (uint32_t)r->length, 0, 0, 0, 0);
}

/* a WQE retired: flags RS_TRF_CQE when a completion entry was written, RS_TRF_RECV for the RQ */
static inline void rs_trace_complete(rs_sim *sim, const rs_qp *qp, uint64_t wr_id, uint32_t status,
                                     uint32_t wc_opcode, uint32_t byte_len, unsigned flags)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_qp(sim, RS_TR_COMPLETE, qp, wr_id, byte_len, (uint8_t)status, (uint8_t)wc_opcode,
                        (uint8_t)flags, 0);
}

static inline void rs_trace_timeout(rs_sim *sim, const rs_qp *qp)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_qp(sim, RS_TR_TIMEOUT, qp, 0, 0, 0, 0, 0, 0);
}

/* the requester goes back to comp_psn; cause is an rs_trace_retry_cause */
static inline void rs_trace_retry(rs_sim *sim, const rs_qp *qp, int cause)
{
    if (RS_TRACE_ON(sim))
        rs_trace_rec_qp(sim, RS_TR_RETRY, qp, 0, 0, 0, 0,
                        qp->recovery == RS_RECOVERY_IRN ? RS_TRF_SELECTIVE : 0, (uint8_t)cause);
}

#endif
