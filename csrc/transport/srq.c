/* Shared receive queues.  A QP attached to one has a receive ring of a single WQE: when a message
 * needs a receive WQE and the ring is empty, the SRQ's oldest is moved there (rs_srq_pull), so the
 * responder's paths (scatter, completion, flush on ERR) are the same as for a QP's own queue.  A
 * WQE still in the SRQ is never flushed by a QP going to ERR (IBA 10.2.9.5). */
#include "transport/transport.h"

#include <stdlib.h>
#include <string.h>

#include "engine/trace.h"
#include "rdmasim/ib.h"

#define RS_SRQ_MAX_WR (1u << 16)
#define RS_SRQ_MAX_SGE 32u

static rs_host *get_host(const rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

rs_srq *rs_host_srq(rs_host *h, uint32_t handle)
{
    return (handle >= 1 && handle <= h->n_srqs) ? h->srqs[handle - 1] : NULL;
}

static int alloc_rings(uint32_t max_wr, uint32_t max_sge, rs_rwqe **rq_out, rs_sge **sge_out)
{
    rs_rwqe *rq = calloc(max_wr, sizeof(*rq));
    rs_sge *sge = calloc((size_t)max_wr * max_sge, sizeof(*sge));
    if (!rq || !sge) {
        free(rq);
        free(sge);
        return 0;
    }
    for (uint32_t i = 0; i < max_wr; i++)
        rq[i].sge = &sge[(size_t)i * max_sge];
    *rq_out = rq;
    *sge_out = sge;
    return 1;
}

int rs_tp_srq_create(rs_transport *tp, int host, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (max_wr < 1 || max_wr > RS_SRQ_MAX_WR)
        return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ max_wr=%u is out of range (1..%u)", max_wr, RS_SRQ_MAX_WR);
    if (max_sge < 1 || max_sge > RS_SRQ_MAX_SGE)
        return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ max_sge=%u is out of range (1..%u)", max_sge, RS_SRQ_MAX_SGE);
    if (limit > max_wr)
        return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ srq_limit=%u exceeds max_wr=%u", limit, max_wr);
    uint32_t slot = 0;
    while (slot < h->n_srqs && h->srqs[slot])
        slot++;
    if (slot == h->n_srqs) {
        rs_srq **n = realloc(h->srqs, (h->n_srqs + 1) * sizeof(*n));
        if (!n)
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
        h->srqs = n;
        h->srqs[h->n_srqs++] = NULL;
    }
    rs_srq *s = calloc(1, sizeof(*s));
    rs_rwqe *rq = NULL;
    rs_sge *sge = NULL;
    if (!s || !alloc_rings(max_wr, max_sge, &rq, &sge)) {
        free(s);
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for an SRQ of %u WQEs", max_wr);
    }
    *s = (rs_srq){.handle = slot + 1, .pd = pd, .max_wr = max_wr, .max_sge = max_sge, .limit = limit,
                  .rq = rq, .sge = sge};
    h->srqs[slot] = s;
    return (int)s->handle;
}

static void srq_free(rs_srq *s)
{
    free(s->rq);
    free(s->sge);
    free(s);
}

int rs_tp_srq_destroy(rs_transport *tp, int host, uint32_t handle)
{
    rs_host *h = get_host(tp, host);
    rs_srq *s = h ? rs_host_srq(h, handle) : NULL;
    if (!s)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no SRQ %u on host %d", handle, host);
    if (s->users)
        return rs_tp_fail(tp, RS_ERR_BUSY, "SRQ %u is still used by %u QP(s): destroy them first", handle,
                          s->users);
    h->srqs[handle - 1] = NULL;
    srq_free(s);
    return RS_OK;
}

int rs_tp_srq_modify(rs_transport *tp, int host, uint32_t handle, uint32_t mask, uint32_t max_wr, uint32_t limit)
{
    rs_host *h = get_host(tp, host);
    rs_srq *s = h ? rs_host_srq(h, handle) : NULL;
    if (!s)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no SRQ %u on host %d", handle, host);
    if (mask & ~(RS_SRQ_MAX_WR_MASK | RS_SRQ_LIMIT_MASK))
        return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ modify mask 0x%x: only IBV_SRQ_MAX_WR (1) and IBV_SRQ_LIMIT (2)",
                          mask);
    uint32_t new_wr = (mask & RS_SRQ_MAX_WR_MASK) ? max_wr : s->max_wr;
    if (mask & RS_SRQ_MAX_WR_MASK) {
        if (max_wr < 1 || max_wr > RS_SRQ_MAX_WR)
            return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ max_wr=%u is out of range (1..%u)", max_wr, RS_SRQ_MAX_WR);
        if (max_wr < s->count)
            return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ max_wr=%u is fewer than the %u WQEs posted in it", max_wr,
                              s->count);
        if (s->limit && max_wr < s->limit)
            return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ max_wr=%u is below its armed srq_limit=%u", max_wr,
                              s->limit);
    }
    if ((mask & RS_SRQ_LIMIT_MASK) && limit > new_wr)
        return rs_tp_fail(tp, RS_ERR_INVAL, "SRQ srq_limit=%u exceeds max_wr=%u", limit, new_wr);
    if (mask & RS_SRQ_MAX_WR_MASK) {
        rs_rwqe *rq = NULL;
        rs_sge *sge = NULL;
        if (!alloc_rings(max_wr, s->max_sge, &rq, &sge))
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for an SRQ of %u WQEs", max_wr);
        for (uint32_t i = 0; i < s->count; i++) {
            const rs_rwqe *from = &s->rq[(s->head + i) % s->max_wr];
            rq[i].wr_id = from->wr_id;
            rq[i].length = from->length;
            rq[i].num_sge = from->num_sge;
            memcpy(rq[i].sge, from->sge, from->num_sge * sizeof(rs_sge));
        }
        free(s->rq);
        free(s->sge);
        s->rq = rq;
        s->sge = sge;
        s->head = 0;
        s->max_wr = max_wr;
    }
    if (mask & RS_SRQ_LIMIT_MASK)
        s->limit = limit;
    return RS_OK;
}

int rs_tp_srq_query(rs_transport *tp, int host, uint32_t handle, rs_srq_attr *out)
{
    rs_host *h = get_host(tp, host);
    rs_srq *s = h ? rs_host_srq(h, handle) : NULL;
    if (!s)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no SRQ %u on host %d", handle, host);
    *out = (rs_srq_attr){.max_wr = s->max_wr, .max_sge = s->max_sge, .limit = s->limit, .count = s->count,
                         .limit_events = s->limit_events};
    return RS_OK;
}

int rs_tp_srq_take_limit_event(rs_transport *tp, int host, uint32_t handle)
{
    rs_host *h = get_host(tp, host);
    rs_srq *s = h ? rs_host_srq(h, handle) : NULL;
    if (!s)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no SRQ %u on host %d", handle, host);
    if (!s->limit_events)
        return 0;
    s->limit_events--;
    return 1;
}

void rs_host_free_srqs(rs_host *h)
{
    for (uint32_t i = 0; i < h->n_srqs; i++)
        if (h->srqs[i])
            srq_free(h->srqs[i]);
    free(h->srqs);
    h->srqs = NULL;
    h->n_srqs = 0;
}

int rs_tp_post_srq_recv(rs_transport *tp, int host, uint32_t handle, const rs_recv_wr *wr)
{
    rs_host *h = get_host(tp, host);
    rs_srq *s = h ? rs_host_srq(h, handle) : NULL;
    if (!s)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no SRQ %u on host %d", handle, host);
    if (s->count == s->max_wr)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "SRQ %u is full (max_wr=%u)", handle, s->max_wr);
    if (wr->num_sge > s->max_sge)
        return rs_tp_fail(tp, RS_ERR_INVAL, "num_sge=%u exceeds the SRQ's max_sge (%u)", wr->num_sge,
                          s->max_sge);
    uint64_t total = 0;
    for (uint32_t i = 0; i < wr->num_sge; i++)
        total += wr->sg_list[i].length;
    if (total > 0x80000000ull)
        return rs_tp_fail(tp, RS_ERR_INVAL, "message length %llu exceeds 2^31 bytes", (unsigned long long)total);
    rs_rwqe *r = &s->rq[(s->head + s->count) % s->max_wr];
    r->wr_id = wr->wr_id;
    r->length = total;
    r->num_sge = wr->num_sge;
    memcpy(r->sge, wr->sg_list, wr->num_sge * sizeof(rs_sge));
    s->count++;
    return RS_OK;
}

int rs_srq_pull(rs_qp *qp)
{
    rs_srq *s = qp->srq;
    if (!s || s->count == 0 || qp->rq_count != 0)
        return 0;
    const rs_rwqe *from = &s->rq[s->head];
    rs_rwqe *to = &qp->rq[qp->rq_head];
    to->wr_id = from->wr_id;
    to->length = from->length;
    to->num_sge = from->num_sge;
    memcpy(to->sge, from->sge, from->num_sge * sizeof(rs_sge));
    s->head = (s->head + 1) % s->max_wr;
    s->count--;
    if (s->limit && s->count < s->limit) {
        s->limit = 0;
        s->limit_events++;
    }
    qp->rq_count = 1;
    return 1;
}
