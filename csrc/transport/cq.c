/* Completion queues. */
#include "transport/transport.h"

#include <stdlib.h>

void rs_cq_push(rs_cq *cq, const rs_wc *wc)
{
    if (cq->count == cq->cap) {
        cq->overrun++;
        return;
    }
    cq->ring[(cq->head + cq->count) % cq->cap] = *wc;
    cq->count++;
}

static rs_cq *get_cq(const rs_transport *tp, int host, int cq)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return NULL;
    rs_host *h = tp->hosts[host];
    return (cq >= 0 && (uint32_t)cq < h->n_cqs && h->cqs[cq].ring) ? &h->cqs[cq] : NULL;
}

int rs_tp_cq_create(rs_transport *tp, int host, uint32_t cqe)
{
    if (host < 0 || (uint32_t)host >= tp->n_hosts)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (cqe < 1 || cqe > (1u << 22))
        return rs_tp_fail(tp, RS_ERR_INVAL, "cqe %u outside 1..4194304", cqe);
    rs_host *h = tp->hosts[host];
    rs_cq *n = realloc(h->cqs, (h->n_cqs + 1) * sizeof(*n));
    if (!n)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    h->cqs = n;
    rs_cq *cq = &h->cqs[h->n_cqs];
    *cq = (rs_cq){0};
    cq->ring = calloc(cqe, sizeof(rs_wc));
    if (!cq->ring)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for %u CQ entries", cqe);
    cq->cap = cqe;
    return (int)h->n_cqs++;
}

int rs_tp_cq_destroy(rs_transport *tp, int host, int idx)
{
    rs_cq *cq = get_cq(tp, host, idx);
    if (!cq)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no CQ %d on host %d", idx, host);
    if (cq->users)
        return rs_tp_fail(tp, RS_ERR_BUSY, "CQ %d is still used by %u QP(s): destroy them first", idx,
                          cq->users);
    free(cq->ring);
    cq->ring = NULL;
    return RS_OK;
}

int rs_tp_cq_resize(rs_transport *tp, int host, int idx, uint32_t cqe)
{
    rs_cq *cq = get_cq(tp, host, idx);
    if (!cq)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no CQ %d on host %d", idx, host);
    if (cqe < 1 || cqe > (1u << 22))
        return rs_tp_fail(tp, RS_ERR_INVAL, "cqe %u outside 1..4194304", cqe);
    if (cqe < cq->count)
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "cqe %u is fewer than the %u completion(s) the CQ holds: poll them first", cqe,
                          cq->count);
    rs_wc *ring = calloc(cqe, sizeof(rs_wc));
    if (!ring)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for %u CQ entries", cqe);
    for (uint32_t i = 0; i < cq->count; i++)
        ring[i] = cq->ring[(cq->head + i) % cq->cap];
    free(cq->ring);
    cq->ring = ring;
    cq->cap = cqe;
    cq->head = 0;
    return RS_OK;
}

int rs_tp_cq_poll(rs_transport *tp, int host, int idx, rs_wc *out, int n)
{
    rs_cq *cq = get_cq(tp, host, idx);
    if (!cq)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no CQ %d on host %d", idx, host);
    if (cq->overrun)
        return rs_tp_fail(tp, RS_ERR_STATE,
                          "CQ overrun: %llu completion(s) found the CQ full (cqe=%u) and were lost; "
                          "create the CQ with more entries or poll it more often",
                          (unsigned long long)cq->overrun, cq->cap);
    int got = 0;
    while (got < n && cq->count) {
        out[got++] = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
    }
    return got;
}

int rs_tp_cq_count(const rs_transport *tp, int host, int idx)
{
    rs_cq *cq = get_cq(tp, host, idx);
    return cq ? (int)cq->count : 0;
}
