/* Event trace buffer: records appended by the hooks in engine/trace.h, drained in bulk.
 *
 * The buffer grows by doubling (amortised; nothing is allocated while tracing is off)
 * and never beyond the record cap.  A record that cannot be kept (cap reached, or
 * out of memory growing the buffer) is counted in `lost`; the run goes on. */
#include "engine/trace.h"
#include "link/switch.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(rs_trace_rec) == 64, "rs_trace_rec must stay 64 bytes (numpy dtype in _trace.pxi)");

#define RS_TRACE_INITIAL_SLOTS 1024u

int rs_trace_enable(rs_sim *sim, uint64_t max_records)
{
    rs_trace_disable(sim);
    rs_trace *tr = calloc(1, sizeof(*tr));
    if (!tr)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory starting a trace");
    tr->max = max_records;
    sim->trace = tr;
    return RS_OK;
}

void rs_trace_disable(rs_sim *sim)
{
    if (!sim->trace)
        return;
    free(sim->trace->recs);
    free(sim->trace);
    sim->trace = NULL;
}

int rs_trace_enabled(const rs_sim *sim) { return sim->trace != NULL; }

size_t rs_trace_pending(const rs_sim *sim) { return sim->trace ? sim->trace->n : 0; }

size_t rs_trace_drain(rs_sim *sim, rs_trace_rec *out, size_t n)
{
    rs_trace *tr = sim->trace;
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

void rs_trace_counts(const rs_sim *sim, uint64_t out[3])
{
    const rs_trace *tr = sim->trace;
    out[0] = tr ? tr->recorded : 0;
    out[1] = tr ? tr->lost : 0;
    out[2] = tr ? tr->max : 0;
}

/* A zeroed slot for one more record, or NULL (counted as lost). */
static rs_trace_rec *slot(rs_sim *sim)
{
    rs_trace *tr = sim->trace;
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
    r->t_ps = sim->now_ps;
    return r;
}

void rs_trace_rec_frame(rs_sim *sim, uint8_t kind, const rs_pkt *p, int link, int node, int peer,
                        uint8_t reason)
{
    rs_trace_rec *r = slot(sim);
    if (!r)
        return;
    r->kind = kind;
    r->link = link;
    r->node = (uint16_t)(node < 0 ? 0xFFFF : node);
    r->peer = (uint16_t)(peer < 0 ? 0xFFFF : peer);
    r->node_kind = node < 0 ? RS_TR_NODE_NONE : RS_TR_NODE_HOST;
    r->peer_kind = peer < 0 ? RS_TR_NODE_NONE : RS_TR_NODE_HOST;
    r->reason = reason;

    r->pkt_kind = (uint8_t)p->kind;
    r->priority = p->priority;
    if (p->kind == RS_PKT_PFC) {
        r->aux = p->pfc_class_enable;
        return;
    }
    r->qpn = p->src_qpn;
    r->dest_qpn = p->dest_qpn;
    r->psn = p->psn;
    r->msn = p->aeth_msn;
    r->len = p->payload_len;
    r->aux = p->reth_len; /* RETH DMA length (first packet of a WRITE, READ request); else 0 */
    r->opcode = p->opcode;
    r->syndrome = p->aeth_syndrome;
    r->ecn = p->tos & 3u;
    r->flags = (uint8_t)((p->ackreq ? RS_TRF_ACKREQ : 0) | (p->se ? RS_TRF_SE : 0));
}

/* The node at each end of a link direction.  Only host ports exist today; a switch port
 * (no host) would report its own node id and RS_TR_NODE_SWITCH here. */
/* The one place a link end becomes a (node kind, node index). */
static int port_node(const rs_port *port, uint8_t *node_kind)
{
    if (port && port->owner_kind == RS_NODE_SWITCH && port->sw) {
        *node_kind = RS_TR_NODE_SWITCH;
        return RS_TR_SWITCH_NODE_BASE | port->sw->id; /* switches have their own index space */
    }
    int host = port && port->owner_kind == RS_NODE_HOST;
    *node_kind = host ? RS_TR_NODE_HOST : RS_TR_NODE_NONE;
    return host ? port->node : -1;
}

void rs_trace_rec_link(rs_sim *sim, uint8_t kind, const rs_pkt *p, const rs_link *l, uint8_t reason)
{
    uint8_t from_kind, to_kind;
    int from = port_node(l->from, &from_kind), to = port_node(l->to, &to_kind);
    size_t before = sim->trace ? sim->trace->n : 0;
    int rx = kind == RS_TR_RX;
    rs_trace_rec_frame(sim, kind, p, l->id, rx ? to : from, rx ? from : to, reason);
    if (sim->trace && sim->trace->n > before) { /* recorded: set the real node kinds */
        rs_trace_rec *r = &sim->trace->recs[sim->trace->n - 1];
        r->node_kind = rx ? to_kind : from_kind;
        r->peer_kind = rx ? from_kind : to_kind;
    }
}

void rs_trace_rec_qp(rs_sim *sim, uint8_t kind, const rs_qp *qp, uint64_t wr_id, uint32_t len,
                     uint8_t status, uint8_t verb_op, uint8_t flags, uint8_t reason)
{
    rs_trace_rec *r = slot(sim);
    if (!r)
        return;
    r->kind = kind;
    r->link = -1;
    r->node = (uint16_t)qp->host->id;
    r->node_kind = RS_TR_NODE_HOST;
    r->peer = (uint16_t)(qp->attr.dest_host < 0 ? 0xFFFF : qp->attr.dest_host);
    r->peer_kind = qp->attr.dest_host < 0 ? RS_TR_NODE_NONE : RS_TR_NODE_HOST;
    r->qpn = qp->qpn;
    r->dest_qpn = qp->attr.dest_qp_num;
    r->wr_id = wr_id;
    r->len = len;
    r->status = status;
    r->verb_op = verb_op;
    r->flags = flags;
    r->reason = reason;
    if (kind == RS_TR_TIMEOUT || kind == RS_TR_RETRY) {
        r->psn = qp->comp_psn;
        /* an RNR retry counts rnr_retry down (never when it is 7: forever), the others retry_cnt */
        r->aux = (kind == RS_TR_RETRY && reason == RS_TR_RETRY_RNR) ? qp->rnr_left : qp->retry_left;
    }
}

void rs_trace_patch_last(rs_sim *sim, uint32_t psn, uint32_t aux)
{
    rs_trace *tr = sim->trace;
    if (!tr || !tr->n || tr->recs[tr->n - 1].t_ps != sim->now_ps)
        return;
    tr->recs[tr->n - 1].psn = psn;
    tr->recs[tr->n - 1].aux = aux;
}

static uint32_t clamp32(uint64_t v)
{
    return v > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)v;
}

void rs_trace_rec_pfc(rs_sim *sim, int sw, uint32_t port, uint32_t prio, int xoff, uint64_t shared,
                      uint64_t hdrm, uint64_t threshold)
{
    rs_trace_rec *r = slot(sim);
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
