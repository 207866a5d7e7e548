/* One partitioned run over several MPI ranks (sim/par_rank.h). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "sim/par_rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link/link.h"
#include "sim/par.h"
#include "sim/par_xfer.h"
#include "sim/sim_impl.h"
#include "workload/flows_impl.h"

/* The layout of the messages and of the frames in them (one build on one architecture). */
#define RANK_MAGIC (0x52534d50u ^ (uint32_t)RS_PKT_COMMON_BYTES ^ ((uint32_t)sizeof(rs_flow_result) << 16))

/* The responder's share of a flow another rank requested, taken when its QP is released. */
typedef struct resp_share {
    uint64_t id, bytes, retx;
} resp_share;

struct rs_par_rank {
    uint32_t n, me, parts;
    uint16_t *owner;
    rs_par_allgather_fn fn;
    void *ctx;
    uint8_t *buf; /* the message being written */
    size_t len, cap;
    int oom;
    int64_t head;
    uint64_t agreements;
    uint64_t agree_ns, fn_ns; /* wall time in agreements, and in the caller's exchange within them */
    resp_share *shares;
    size_t n_shares, cap_shares;
};

/* ---- a growing message ---- */

/* Room for n more bytes: 0, or -1 (out of memory, remembered). */
static int reserve(rs_par_rank *k, size_t n)
{
    if (k->oom)
        return -1;
    if (k->len + n > k->cap) {
        size_t c = k->cap ? k->cap : 4096;
        while (c < k->len + n)
            c *= 2;
        uint8_t *nb = realloc(k->buf, c);
        if (!nb) {
            k->oom = 1;
            return -1;
        }
        k->buf = nb;
        k->cap = c;
    }
    return 0;
}

static void put(rs_par_rank *k, const void *p, size_t n)
{
    if (reserve(k, n) != 0)
        return;
    memcpy(k->buf + k->len, p, n);
    k->len += n;
}

static void put_u32(rs_par_rank *k, uint32_t v) { put(k, &v, 4); }
static void put_u64(rs_par_rank *k, uint64_t v) { put(k, &v, 8); }
static void put_i64(rs_par_rank *k, int64_t v) { put(k, &v, 8); }

/* Reading a message: a cursor that stops (bad = 1) at the end. */
typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static void get(rd *r, void *out, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}

static uint32_t get_u32(rd *r)
{
    uint32_t v;
    get(r, &v, 4);
    return v;
}

static uint64_t get_u64(rd *r)
{
    uint64_t v;
    get(r, &v, 8);
    return v;
}

static int64_t get_i64(rd *r)
{
    int64_t v;
    get(r, &v, 8);
    return v;
}

/* ---- set-up ---- */

void rs_par_rank_free(rs_par_rank *k)
{
    if (!k)
        return;
    free(k->owner);
    free(k->buf);
    free(k->shares);
    free(k);
}

int rs_sim_par_ranks(rs_sim *sim, uint32_t n_ranks, uint32_t me, const uint16_t *owner, uint32_t parts,
                     rs_par_allgather_fn fn, void *ctx)
{
    if (!sim->par)
        return n_ranks ? rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks: the simulation is not split into partitions")
                       : RS_OK;
    if (!n_ranks) {
        rs_par_set_rank(sim->par, NULL);
        return RS_OK;
    }
    if (parts != rs_par_parts(sim->par) || me >= n_ranks || !fn)
        return rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks: rank %u of %u for %u partitions: need rank < ranks and "
                           "one owner per partition (%u)", me, n_ranks, parts, rs_par_parts(sim->par));
    for (uint32_t i = 0; i < parts; i++)
        if (owner[i] >= n_ranks)
            return rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks: partition %u on rank %u: allowed 0..%u", i, owner[i],
                               n_ranks - 1);
    rs_par_rank *k = calloc(1, sizeof(*k));
    if (!k || !(k->owner = malloc(parts * sizeof(uint16_t)))) {
        free(k);
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    }
    memcpy(k->owner, owner, parts * sizeof(uint16_t));
    k->n = n_ranks;
    k->me = me;
    k->parts = parts;
    k->fn = fn;
    k->ctx = ctx;
    k->head = INT64_MAX;
    rs_par_set_rank(sim->par, k);
    return RS_OK;
}

int rs_par_rank_owns(const rs_par_rank *k, uint32_t i) { return k->owner[i] == k->me; }
int64_t rs_par_rank_head(const rs_par_rank *k) { return k->head; }
uint64_t rs_par_rank_agreements(const rs_par_rank *k) { return k->agreements; }

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int rs_sim_par_rank_times(const rs_sim *sim, uint64_t *agreements, uint64_t *agree_ns, uint64_t *fn_ns)
{
    const rs_par_rank *k = sim->par ? rs_par_get_rank(sim->par) : NULL;
    *agreements = k ? k->agreements : 0;
    *agree_ns = k ? k->agree_ns : 0;
    *fn_ns = k ? k->fn_ns : 0;
    return k ? RS_OK : RS_ERR_INVAL;
}

static uint32_t port_part(const uint16_t *hp, const uint16_t *sp, const rs_port *port)
{
    return port->owner_kind == RS_NODE_SWITCH ? sp[port->node] : hp[port->node];
}

const char *rs_par_rank_refused(const rs_par_rank *k, const rs_sim *sim, const uint16_t *host_part,
                                const uint16_t *switch_part, uint32_t threads)
{
    (void)k;
    if (threads > 1)
        return "[simulation] threads > 1: each rank runs its partitions on one thread (threads = 1)";
    const rs_net *net = &sim->tp.net;
    for (uint32_t i = 0; i < net->n_links; i++) {
        const rs_link *l = net->links[i];
        /* a global event (a flow start) may put a host's first frame on its link: it must stay in
         * the host's partition, whose rank alone runs it */
        if ((l->from->owner_kind == RS_NODE_HOST || l->to->owner_kind == RS_NODE_HOST) &&
            port_part(host_part, switch_part, l->from) != port_part(host_part, switch_part, l->to))
            return "a host in another partition than its switch (a fabric of one switch): each host must "
                   "share its rank with the switch it is connected to (use one process)";
    }
    return NULL;
}

/* ---- the agreement ---- */

static void fail(rs_sim *sim, const char *fmt, const char *a, uint32_t r)
{
    rs_engine *e = &sim->tp.net.eng;
    if (e->failed)
        return;
    e->failed = 1;
    snprintf(e->errmsg, sizeof(e->errmsg), fmt, a, r);
}

/* The QP pair of finished flow `id`, released on every rank (the requester's already by its own
 * rank, in the reap event): the copies of other ranks' hosts keep the QP numbers the hosts have,
 * which the next flow starts on them read.  The responder's share of the flow's counters (see
 * live_counters in workload/flows.c) is kept when this rank runs the responder and not the requester. */
static void release_pair(rs_par_rank *k, const rs_par_view *v, uint64_t id)
{
    rs_sim *sim = v->sim;
    rs_flows *fs = sim->flows;
    if (!fs || id >= fs->n)
        return;
    rs_flow *f = &fs->f[id];
    rs_transport *tp = &sim->tp;
    int req = (int)f->r.req_host, resp = req == f->src ? f->dst : f->src;
    if (f->r.req_qpn) {
        rs_qp *qa = rs_host_qp(tp->hosts[req], f->r.req_qpn);
        if (qa)
            rs_qp_release(tp, qa);
        f->r.req_qpn = 0;
    }
    if (f->r.resp_qpn) {
        rs_qp *qb = rs_host_qp(tp->hosts[resp], f->r.resp_qpn);
        if (qb && rs_par_rank_owns(k, v->host_part[resp]) && !rs_par_rank_owns(k, v->host_part[req])) {
            if (k->n_shares == k->cap_shares) {
                size_t c = k->cap_shares ? k->cap_shares * 2 : 64;
                resp_share *ns = realloc(k->shares, c * sizeof(*ns));
                if (!ns) {
                    fail(sim, "%sout of memory (rank %u)", "", k->me);
                    return;
                }
                k->shares = ns;
                k->cap_shares = c;
            }
            uint64_t got = qb->stats.bytes_rcvd > f->byte_off ? qb->stats.bytes_rcvd - f->byte_off : 0;
            k->shares[k->n_shares++] = (resp_share){id, got < f->size ? got : f->size, qb->stats.pkts_retx};
        }
        if (qb)
            rs_qp_release(tp, qb);
        f->r.resp_qpn = 0;
    }
}

/* This rank's message: its frames for other ranks (the rest of its outboxes join their links'
 * FIFOs here), its partitions' state, its finished flows' pairs, its next events. */
static void write_msg(rs_par_rank *k, const rs_par_view *v)
{
    rs_sim *sim = v->sim;
    rs_net *net = &sim->tp.net;
    rs_engine *e = &net->eng;
    k->len = 0;
    k->oom = 0;
    int64_t head = INT64_MAX;
    put_u32(k, RANK_MAGIC);
    put_u32(k, k->me);
    /* frames: sent by this rank's partitions; to one of its own, they join the FIFO now */
    size_t n_at = k->len;
    put_u64(k, 0);
    uint64_t n_frames = 0;
    for (uint32_t c = 0; c < v->n_cut; c++) {
        rs_link *l = v->cut[c];
        if (!l->out_head)
            continue;
        uint32_t from = port_part(v->host_part, v->switch_part, l->from);
        uint32_t to = port_part(v->host_part, v->switch_part, l->to);
        if (rs_par_rank_owns(k, from) && rs_par_rank_owns(k, to)) {
            rs_link_take_outbox(net, l);
            continue;
        }
        rs_pkt *pkt = l->out_head;
        l->out_head = l->out_tail = NULL;
        while (pkt) {
            rs_pkt *next = pkt->next;
            if (rs_par_rank_owns(k, from) && reserve(k, rs_xfer_frame_size(pkt)) == 0) {
                /* (another rank's copy of a host never sends on a cut link: refused) */
                k->len += rs_xfer_put_frame(k->buf + k->len, l->id, pkt);
                n_frames++;
                if (pkt->t_arrive_ps < head)
                    head = pkt->t_arrive_ps;
            }
            rs_pkt_release(net->pool, pkt);
            pkt = next;
        }
    }
    if (!k->oom)
        memcpy(k->buf + n_at, &n_frames, 8);
    /* its partitions: state, then the earliest event of all (after the frames joined) */
    uint32_t n_own = 0;
    for (uint32_t i = 0; i < v->P; i++)
        n_own += (uint32_t)rs_par_rank_owns(k, i);
    put_u32(k, n_own);
    for (uint32_t i = 0; i < v->P; i++) {
        if (!rs_par_rank_owns(k, i))
            continue;
        const rs_event *h = rs_eventq_head(v->qv[i]);
        if (h && h->t_ps < head)
            head = h->t_ps;
        put_u32(k, i);
        put_u64(k, v->left ? v->left[i] : 0);
        put_i64(k, v->last_t[i]);
        put_u64(k, v->last_seq[i]);
        put_u32(k, (uint32_t)v->ret[i]);
        put_i64(k, v->ps[i].tp.net.eng.now_ps);
        put_u64(k, v->ps[i].events);
        const rs_engine *pe = &v->ps[i].tp.net.eng;
        put_u32(k, (uint32_t)pe->failed);
        if (pe->failed)
            put(k, pe->errmsg, sizeof(pe->errmsg));
    }
    if (v->pending_t < head)
        head = v->pending_t;
    put_i64(k, head);
    /* the global queue's head: the same on every rank */
    const rs_event *g = rs_eventq_head(v->qv[v->P]);
    put_i64(k, g ? g->t_ps : INT64_MAX);
    put_u64(k, g ? g->seq : 0);
    put_u32(k, (uint32_t)e->failed);
    if (e->failed)
        put(k, e->errmsg, sizeof(e->errmsg));
    /* finished flows whose QP pairs wait (by partition, in the order they finished) */
    rs_flows *fs = sim->flows;
    for (uint32_t i = 0; i < v->P; i++) {
        if (!rs_par_rank_owns(k, i) || !fs || !fs->part_defer)
            continue;
        for (uint64_t id = rs_flows_take_deferred(fs, i); id; id = fs->f[id - 1].reap_next)
            put_u64(k, id);
    }
    put_u64(k, 0);
}

/* Every rank's message into this rank's state. */
static void read_msgs(rs_par_rank *k, const rs_par_view *v, const uint8_t *all, const uint64_t *lens)
{
    rs_sim *sim = v->sim;
    rs_net *net = &sim->tp.net;
    rs_engine *e = &net->eng;
    const rs_event *g = rs_eventq_head(v->qv[v->P]);
    int64_t my_gt = g ? g->t_ps : INT64_MAX;
    uint64_t my_gs = g ? g->seq : 0;
    int64_t head = INT64_MAX;
    const uint8_t *at = all;
    char msg[256];
    for (uint32_t r = 0; r < k->n; r++) {
        rd c = {at, at + lens[r], 0};
        at += lens[r];
        if (get_u32(&c) != RANK_MAGIC || get_u32(&c) != r) {
            fail(sim, "%sMPI rank %u sent a message this build cannot read (every rank must run the same "
                 "rdmasim build on the same architecture)", "", r);
            return;
        }
        uint64_t n_frames = get_u64(&c);
        for (uint64_t j = 0; j < n_frames && !c.bad; j++) {
            uint32_t id;
            rs_pkt *pkt;
            long n = rs_xfer_get_frame(c.p, c.end, NULL, &id, &pkt);
            if (n <= 0 || id >= net->n_links) {
                c.bad = 1;
                break;
            }
            rs_link *l = net->links[id];
            if (rs_xfer_frame_arrival(c.p) < head)
                head = rs_xfer_frame_arrival(c.p);
            if (r != k->me && rs_par_rank_owns(k, port_part(v->host_part, v->switch_part, l->to))) {
                if (rs_xfer_get_frame(c.p, c.end, net->pool, &id, &pkt) < 0) {
                    fail(sim, "%sout of memory taking frames from rank %u", "", r);
                    return;
                }
                l->out_head = l->out_tail = pkt; /* as its sender would have left it */
                rs_link_take_outbox(net, l);
            }
            c.p += n;
        }
        uint32_t n_own = get_u32(&c);
        for (uint32_t j = 0; j < n_own && !c.bad; j++) {
            uint32_t i = get_u32(&c);
            uint64_t left = get_u64(&c);
            int64_t lt = get_i64(&c);
            uint64_t ls = get_u64(&c);
            int ret = (int)get_u32(&c);
            int64_t now = get_i64(&c);
            uint64_t ev = get_u64(&c);
            uint32_t failed = get_u32(&c);
            if (failed)
                get(&c, msg, sizeof(msg));
            if (c.bad || i >= v->P || k->owner[i] != r) {
                c.bad = 1;
                break;
            }
            if (failed && !e->failed) {
                msg[sizeof(msg) - 1] = 0;
                fail(sim, "%s (on MPI rank %u)", msg, r);
            }
            if (r == k->me)
                continue;
            if (v->left)
                v->left[i] = left;
            v->last_t[i] = lt;
            v->last_seq[i] = ls;
            v->ret[i] = ret;
            v->ps[i].tp.net.eng.now_ps = now;
            v->ps[i].events = ev;
        }
        int64_t h = get_i64(&c);
        if (h < head)
            head = h;
        int64_t gt = get_i64(&c);
        uint64_t gs = get_u64(&c);
        uint32_t failed = get_u32(&c);
        if (failed) {
            get(&c, msg, sizeof(msg));
            msg[sizeof(msg) - 1] = 0;
            if (!c.bad && r != k->me)
                fail(sim, "%s (on MPI rank %u)", msg, r);
        }
        if (!c.bad && !failed && !e->failed && (gt != my_gt || gs != my_gs)) {
            snprintf(msg, sizeof(msg), "MPI ranks disagree on the next global event (rank %u: %lld ps key %llu, "
                     "rank %u: %lld ps key %llu): ", r, (long long)gt, (unsigned long long)gs, k->me,
                     (long long)my_gt, (unsigned long long)my_gs);
            fail(sim, "%sthe ranks did not build the same simulation (rank %u)", msg, r);
        }
        for (;;) {
            uint64_t id = get_u64(&c);
            if (!id || c.bad)
                break;
            release_pair(k, v, id - 1);
        }
        if (c.bad) {
            fail(sim, "%sMPI rank %u sent a message cut short", "", r);
            return;
        }
    }
    k->head = head;
}

void rs_par_rank_agree(rs_par_rank *k, const rs_par_view *v)
{
    rs_sim *sim = v->sim;
    uint64_t t0 = mono_ns();
    k->agreements++;
    write_msg(k, v);
    if (k->oom) {
        fail(sim, "%sout of memory writing the message of MPI rank %u", "", k->me);
        k->len = 0;
    }
    const uint8_t *all = NULL;
    const uint64_t *lens = NULL;
    uint64_t t1 = mono_ns();
    int rc = k->fn(k->ctx, k->buf, k->len, &all, &lens);
    k->fn_ns += mono_ns() - t1;
    if (rc != 0)
        fail(sim, "%sthe MPI exchange failed on rank %u", "", k->me);
    else
        read_msgs(k, v, all, lens);
    k->agree_ns += mono_ns() - t0;
}

/* ---- the flow table after a run ---- */

int rs_par_rank_flows_out(rs_sim *sim, uint8_t **out, size_t *len)
{
    rs_par_rank *k = sim->par ? rs_par_get_rank(sim->par) : NULL;
    *out = NULL;
    *len = 0;
    if (!k)
        return rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks: not set");
    const uint16_t *hp = rs_par_host_part(sim->par);
    rs_flows *fs = sim->flows;
    k->len = 0;
    k->oom = 0;
    put_u32(k, RANK_MAGIC);
    put_u32(k, k->me);
    uint64_t n = 0;
    size_t n_at = k->len;
    put_u64(k, 0);
    for (uint64_t id = 0; fs && id < fs->n; id++) {
        const rs_flow *f = &fs->f[id];
        if (f->r.status == RS_FLOW_WAITING || !rs_par_rank_owns(k, hp[f->r.req_host]))
            continue;
        put_u64(k, id);
        put(k, &f->r, sizeof(f->r));
        n++;
    }
    if (!k->oom)
        memcpy(k->buf + n_at, &n, 8);
    put_u64(k, k->n_shares);
    for (size_t i = 0; i < k->n_shares; i++) {
        put_u64(k, k->shares[i].id);
        put_u64(k, k->shares[i].bytes);
        put_u64(k, k->shares[i].retx);
    }
    k->n_shares = 0;
    if (k->oom)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    *out = malloc(k->len ? k->len : 1);
    if (!*out)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    memcpy(*out, k->buf, k->len);
    *len = k->len;
    return RS_OK;
}

int rs_par_rank_flows_in(rs_sim *sim, const uint8_t *all, const uint64_t *lens, uint32_t n_ranks)
{
    rs_par_rank *k = sim->par ? rs_par_get_rank(sim->par) : NULL;
    if (!k || n_ranks != k->n)
        return rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks: %u messages for %u ranks", n_ranks, k ? k->n : 0);
    rs_flows *fs = sim->flows;
    /* first every result as its requester's rank has it, then the responders' shares */
    for (int pass = 0; pass < 2; pass++) {
        const uint8_t *at = all;
        for (uint32_t r = 0; r < n_ranks; r++) {
            rd c = {at, at + lens[r], 0};
            at += lens[r];
            if (get_u32(&c) != RANK_MAGIC || get_u32(&c) != r)
                return rs_sim_fail(sim, RS_ERR_INVAL, "MPI rank %u sent a flow table this build cannot read", r);
            uint64_t n = get_u64(&c);
            for (uint64_t j = 0; j < n && !c.bad; j++) {
                uint64_t id = get_u64(&c);
                rs_flow_result res;
                get(&c, &res, sizeof(res));
                if (c.bad || !fs || id >= fs->n)
                    return rs_sim_fail(sim, RS_ERR_INVAL, "MPI rank %u sent a bad flow table", r);
                if (pass == 0 && r != k->me)
                    rs_flows_install_result(fs, id, &res);
            }
            uint64_t ns = get_u64(&c);
            for (uint64_t j = 0; j < ns && !c.bad; j++) {
                uint64_t id = get_u64(&c), bytes = get_u64(&c), retx = get_u64(&c);
                if (c.bad || !fs || id >= fs->n)
                    return rs_sim_fail(sim, RS_ERR_INVAL, "MPI rank %u sent a bad flow table", r);
                if (pass == 1 && fs->f[id].verb != RS_FLOW_READ) {
                    fs->f[id].r.bytes_delivered = bytes;
                    fs->f[id].r.retx_pkts += retx;
                }
            }
            if (c.bad)
                return rs_sim_fail(sim, RS_ERR_INVAL, "MPI rank %u sent a flow table cut short", r);
        }
    }
    return RS_OK;
}
