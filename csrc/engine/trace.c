/* Event trace buffer: records appended by the hooks in engine/trace.h, drained in bulk.
 *
 * The buffer grows by doubling (amortised; nothing is allocated while tracing is off)
 * and never beyond the record cap.  A record that cannot be kept (cap reached, or
 * out of memory growing the buffer) is counted in `lost`; the run goes on. */
#include "engine/trace.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(rs_trace_rec) == 64, "rs_trace_rec must stay 64 bytes (numpy dtype in _trace.pxi)");

#define RS_TRACE_INITIAL_SLOTS 1024u

int rs_trace_start(rs_engine *e, uint64_t max_records)
{
    rs_trace_stop(e);
    rs_trace *tr = calloc(1, sizeof(*tr));
    if (!tr)
        return rs_engine_fail(e, RS_ERR_NOMEM, "out of memory starting a trace");
    tr->max = max_records;
    e->trace = tr;
    return RS_OK;
}

void rs_trace_stop(rs_engine *e)
{
    if (!e->trace)
        return;
    free(e->trace->recs);
    free(e->trace);
    e->trace = NULL;
}

size_t rs_trace_take(rs_engine *e, rs_trace_rec *out, size_t n)
{
    rs_trace *tr = e->trace;
    if (!tr)
        return 0;
    if (n > tr->n)
        n = tr->n;
    memcpy(out, tr->recs, n * sizeof(*out));
    if (n < tr->n)
        memmove(tr->recs, tr->recs + n, (tr->n - n) * sizeof(*out));
    tr->n -= n;
    return n;
}

void rs_trace_get_counts(const rs_engine *e, uint64_t out[3])
{
    const rs_trace *tr = e->trace;
    out[0] = tr ? tr->recorded : 0;
    out[1] = tr ? tr->lost : 0;
    out[2] = tr ? tr->max : 0;
}

rs_trace_rec *rs_trace_slot(rs_engine *e)
{
    rs_trace *tr = e->trace;
    if (tr->max && tr->recorded >= tr->max) {
        tr->lost++;
        return NULL;
    }
    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? tr->cap * 2 : RS_TRACE_INITIAL_SLOTS;
        if (tr->max && cap > tr->max)
            cap = (size_t)tr->max;
        if (cap <= tr->n)
            cap = tr->n + 1;
        rs_trace_rec *nr = realloc(tr->recs, cap * sizeof(*nr));
        if (!nr) {
            tr->lost++;
            return NULL;
        }
        tr->recs = nr;
        tr->cap = cap;
    }
    tr->recorded++;
    rs_trace_rec *r = &tr->recs[tr->n++];
    memset(r, 0, sizeof(*r));
    r->t_ps = e->now_ps;
    return r;
}

void rs_trace_patch_last(rs_engine *e, uint32_t psn, uint32_t aux)
{
    rs_trace *tr = e->trace;
    if (!tr || !tr->n || tr->recs[tr->n - 1].t_ps != e->now_ps)
        return;
    tr->recs[tr->n - 1].psn = psn;
    tr->recs[tr->n - 1].aux = aux;
}

static uint32_t clamp32(uint64_t v)
{
    return v > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)v;
}

void rs_trace_rec_pfc(rs_engine *e, int sw, uint32_t port, uint32_t prio, int xoff, uint64_t shared,
                      uint64_t hdrm, uint64_t threshold)
{
    rs_trace_rec *r = rs_trace_slot(e);
    if (!r)
        return;
    r->kind = RS_TR_PFC;
    r->link = -1;
    r->node = (uint16_t)(RS_TR_SWITCH_NODE_BASE | sw);
    r->node_kind = RS_TR_NODE_SWITCH;
    r->peer = 0xFFFF;
    r->peer_kind = RS_TR_NODE_NONE;
    r->msn = port;
    r->priority = (uint8_t)prio;
    r->flags = (uint8_t)(xoff ? 1 : 0);
    r->len = clamp32(shared);
    r->psn = clamp32(hdrm);
    r->aux = clamp32(threshold);
}
