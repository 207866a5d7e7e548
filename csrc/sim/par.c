/* A run split into partitions (rdmasim.partition decides where each node runs): one event queue
 * per partition plus one for the global events (the control path's timers, the flow table's
 * starts), conservative windows no longer than the lookahead (the shortest delay of a link between
 * two partitions), and results identical to the run on one queue (docs/design.md "Parallel runs").
 *
 * Keys (engine/engine.h) make the order of simultaneous events a property of the model, and every
 * frame's arrival takes its key from its sender (link/link.c), so a partition hands each of its
 * nodes the same events in the same order as one queue does, whatever the other partitions did in
 * the same window: a frame sent in a window arrives after it ends.  A timer armed for a node
 * goes to the queue of the node's partition (rs_engine_route); a global event is a barrier: every
 * partition first runs up to its key.  Each partition runs on its own copy of the simulation's
 * struct, whose engine holds its queue (par_run below); the global queue is the simulation's.
 *
 * The partitions of a window run one after the other on the caller's thread.  The window exchange
 * is the seam for other transports (threads, MPI ranks): a frame for another partition is put on
 * its link's FIFO by the sender and armed in the receiver's queue at a time after the window's
 * end; a transport that runs the partitions concurrently exchanges those per window instead. */
#include "sim/par.h"

#include <stdlib.h>
#include <string.h>

#include "link/link.h"
#include "link/switch.h"
#include "sim/sim_impl.h"
#include "workload/flows_impl.h"

struct rs_par {
    uint32_t parts;
    uint32_t threads;
    uint32_t n_hosts, n_switches, n_links; /* the fabric the table was made for */
    uint16_t *host_part;
    uint16_t *switch_part;
    int64_t lookahead_ps;
};

void rs_par_free(rs_par *p)
{
    if (!p)
        return;
    free(p->host_part);
    free(p->switch_part);
    free(p);
}

static uint32_t link_end_part(const rs_par *p, const rs_port *port)
{
    return port->owner_kind == RS_NODE_SWITCH ? p->switch_part[port->node] : p->host_part[port->node];
}

int rs_sim_set_partitions(rs_sim *sim, uint32_t parts, uint32_t threads, const uint16_t *host_part, uint32_t n_hosts,
                          const uint16_t *switch_part, uint32_t n_switches)
{
    rs_par_free(sim->par);
    sim->par = NULL;
    sim->tp.net.part_keys = 1; /* from now on, also on one queue (parts 1: the reference) */
    if (parts <= 1)
        return RS_OK;
    if (parts > 4096 || n_hosts != sim->tp.n_hosts || n_switches != sim->tp.net.n_switches)
        return rs_sim_fail(sim, RS_ERR_INVAL, "partitions: %u parts for %u hosts and %u switches: need 1..4096 parts "
                           "and one entry per host (%u) and switch (%u)", parts, n_hosts, n_switches,
                           sim->tp.n_hosts, sim->tp.net.n_switches);
    rs_par *p = calloc(1, sizeof(*p));
    if (!p)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    p->host_part = malloc((n_hosts + 1) * sizeof(uint16_t));
    p->switch_part = malloc((n_switches + 1) * sizeof(uint16_t));
    if (!p->host_part || !p->switch_part) {
        rs_par_free(p);
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < n_hosts; i++)
        if ((p->host_part[i] = host_part[i]) >= parts) {
            rs_par_free(p);
            return rs_sim_fail(sim, RS_ERR_INVAL, "partitions: host %u in partition %u: allowed 0..%u", i,
                               host_part[i], parts - 1);
        }
    for (uint32_t i = 0; i < n_switches; i++)
        if ((p->switch_part[i] = switch_part[i]) >= parts) {
            rs_par_free(p);
            return rs_sim_fail(sim, RS_ERR_INVAL, "partitions: switch %u in partition %u: allowed 0..%u", i,
                               switch_part[i], parts - 1);
        }
    p->parts = parts;
    p->threads = threads;
    p->n_hosts = n_hosts;
    p->n_switches = n_switches;
    p->n_links = sim->tp.net.n_links;
    p->lookahead_ps = INT64_MAX; /* no link cut: the partitions never meet */
    int short_link = -1;
    for (uint32_t i = 0; i < sim->tp.net.n_links; i++) {
        const rs_link *l = sim->tp.net.links[i];
        if (link_end_part(p, l->from) != link_end_part(p, l->to) && l->delay_ps < p->lookahead_ps) {
            p->lookahead_ps = l->delay_ps;
            short_link = l->id;
        }
    }
    if (p->lookahead_ps <= 0) {
        rs_par_free(p);
        return rs_sim_fail(sim, RS_ERR_INVAL, "%s = %u: link direction %d between two partitions has delay 0: "
                           "a partitioned run needs a delay > 0 on every link it cuts",
                           threads > 1 ? "[simulation] threads" : "partitions", threads > 1 ? threads : parts,
                           short_link);
    }
    sim->par = p;
    return RS_OK;
}

int64_t rs_sim_partition_lookahead(const rs_sim *sim) { return sim->par ? sim->par->lookahead_ps : -1; }

/* What a partitioned run cannot hold yet: the reason, or NULL. */
static const char *refused(const rs_sim *sim, const rs_run_args *a)
{
    const rs_par *p = sim->par;
    const rs_net *net = &sim->tp.net;
    if (p->n_hosts != sim->tp.n_hosts || p->n_switches != net->n_switches || p->n_links != net->n_links)
        return "a fabric changed after it was partitioned";
    if (net->link_layer != RS_LL_ROCE)
        return "an InfiniBand fabric needs";
    if (sim->mux)
        return "the Ultra Ethernet transport needs";
    if (net->eng.trace)
        return "tracing needs";
    if (net->pcap)
        return "a packet capture needs";
    if (net->monitor)
        return "the PFC watchdog, deadlock detector and queue sampler need";
    if (net->stop_after_frame || net->frame_stop)
        return "stepping frame by frame needs";
    if (a->max_events)
        return "stopping after a number of events (step, progress reports) needs";
    if (a->watch_host >= 0)
        return "waiting for completions on a CQ needs";
    for (uint32_t i = 0; i < net->n_links; i++) {
        const rs_link *l = net->links[i];
        if (l->down || l->state_change.armed)
            return "link failures need";
        if (l->loss_prob > 0.0 || l->gilbert.enabled || l->n_drops || l->n_loss_changes)
            return "lossy links (loss, drop rules) need";
    }
    for (uint32_t i = 0; i < sim->tp.n_hosts; i++)
        if (sim->tp.hosts[i]->scripted)
            return "scripted peers need";
    const rs_flows *fs = sim->flows;
    for (uint64_t i = 0; fs && i < fs->n; i++) {
        const rs_flow *f = &fs->f[i];
        if (f->rdep_n || f->dep_left || f->chain_next || f->chain_len > 1)
            return "flow dependencies (after, needs) need";
        if (f->verb == RS_FLOW_READ) /* its result reads the pause time of the port at the far end */
            return "READ flows need";
    }
    return NULL;
}

int rs_sim_par_check(rs_sim *sim, const rs_run_args *a)
{
    if (!sim->par)
        return RS_OK;
    const char *why = refused(sim, a);
    if (why && sim->par->threads > 1)
        return rs_sim_fail(sim, RS_ERR_INVAL, "[simulation] threads = %u: %s threads = 1", sim->par->threads, why);
    if (why)
        return rs_sim_fail(sim, RS_ERR_INVAL, "partitions = %u: %s one partition", sim->par->parts, why);
    return RS_OK;
}

/* ---- the queues ---- */

/* Every live entry of q, appended to *v (grown); 0 or -1 out of memory. */
static int drain(rs_eventq *q, rs_event **v, size_t *n, size_t *cap)
{
    rs_event ev;
    while (rs_eventq_pop(q, &ev)) {
        if (*n == *cap) {
            size_t c = *cap ? *cap * 2 : 1024;
            rs_event *nv = realloc(*v, c * sizeof(rs_event));
            if (!nv)
                return -1;
            *v = nv;
            *cap = c;
        }
        (*v)[(*n)++] = ev;
    }
    return 0;
}

/* The state of a partitioned run.  Each partition runs on its own copy of the simulation's struct
 * (`ps[i]`): its engine (clock, current entity, failure, its queue in place), its event count; its
 * hosts' `tp` and its switches' `net` point at that copy while the run lasts, so every layer
 * reaches the partition's engine through the pointers it already follows.  The global queue is the
 * simulation's own (`sim->tp.net.eng`).  Still shared, one partition at a time: the packet pool
 * and the QP slabs (copied into the running partition's struct and back), the flow table. */
typedef struct par_run {
    rs_sim *sim;
    rs_engine *e;    /* the simulation's engine: the global queue's */
    uint32_t P;      /* partitions; queue P is the global one */
    rs_sim *ps;      /* per partition, the copy it runs on */
    uint32_t n_ps;   /* copies whose queue is set up */
    rs_eventq **qv;  /* every queue: qv[i] = &ps[i].tp.net.eng.evq, qv[P] = &e->evq */
    uint16_t *ent_q;
    uint64_t *left; /* flows not finished by partition (a run that stops when they are) */
    int64_t last_t; /* the latest event handled */
    uint64_t last_seq;
    rs_link **cut; /* the links between two partitions */
    uint32_t n_cut;
} par_run;

/* The shared allocators into partition i's copy (before it runs) and back (after). */
static void shared_in(par_run *r, uint32_t i)
{
    rs_transport *t = &r->ps[i].tp, *m = &r->sim->tp;
    t->pool = m->pool;
    t->qp_slab = m->qp_slab;
    t->qp_cc_slab = m->qp_cc_slab;
    t->cc_slab = m->cc_slab;
}

static void shared_out(par_run *r, uint32_t i)
{
    rs_transport *t = &r->ps[i].tp, *m = &r->sim->tp;
    m->pool = t->pool;
    m->qp_slab = t->qp_slab;
    m->qp_cc_slab = t->qp_cc_slab;
    m->cc_slab = t->cc_slab;
}

/* A partition's failure becomes the run's (the first one's reason): 1 when the run failed. */
static int run_failed(par_run *r)
{
    rs_engine *e = r->e;
    for (uint32_t i = 0; i < r->n_ps; i++) {
        rs_engine *pe = &r->ps[i].tp.net.eng;
        if (pe->failed && !e->failed) {
            e->failed = 1;
            memcpy(e->errmsg, pe->errmsg, sizeof(e->errmsg));
        }
    }
    return e->failed;
}

/* The window exchange: the frames sent on cut links since the last one join their links' FIFOs
 * and the receivers' queues (each arrives after the window it was sent in).  The one seam between
 * partitions: a transport that runs them apart (threads, MPI ranks) carries these outboxes. */
static void exchange(par_run *r)
{
    for (uint32_t i = 0; i < r->n_cut; i++)
        if (r->cut[i]->out_head)
            rs_link_take_outbox(&r->sim->tp.net, r->cut[i]); /* armed by the run's control */
}

/* Point every host and switch at the transport / network it runs on. */
static void point_nodes(par_run *r, int to_parts)
{
    rs_sim *sim = r->sim;
    const rs_par *p = sim->par;
    for (uint32_t h = 0; h < sim->tp.n_hosts; h++)
        sim->tp.hosts[h]->tp = to_parts ? &r->ps[p->host_part[h]].tp : &sim->tp;
    for (uint32_t w = 0; w < sim->tp.net.n_switches; w++)
        sim->tp.net.switches[w]->net = to_parts ? &r->ps[p->switch_part[w]].tp.net : &sim->tp.net;
}

/* Split the engine's queue into P + 1 queues, each partition's in its own copy of the simulation. */
static int setup(par_run *r)
{
    rs_sim *sim = r->sim;
    rs_engine *e = r->e;
    const rs_par *p = sim->par;
    uint32_t P = p->parts;
    r->P = P;
    r->ent_q = malloc((size_t)e->n_ent * sizeof(uint16_t));
    r->qv = calloc(P + 1, sizeof(rs_eventq *));
    r->ps = calloc(P, sizeof(rs_sim));
    if (!r->ent_q || !r->qv || !r->ps)
        return -1;
    for (uint32_t ent = 0; ent < e->n_ent; ent++) {
        uint32_t node = (ent - 1) / 2;
        uint16_t q = (uint16_t)P;
        if (ent && ent % 2 == 1 && node < p->n_hosts)
            q = p->host_part[node];
        else if (ent && ent % 2 == 0 && node < p->n_switches)
            q = p->switch_part[node];
        r->ent_q[ent] = q;
    }
    rs_net *net = &sim->tp.net;
    r->cut = malloc((net->n_links + 1) * sizeof(rs_link *));
    if (!r->cut)
        return -1;
    for (uint32_t i = 0; i < net->n_links; i++) {
        rs_link *l = net->links[i];
        if (link_end_part(p, l->from) != link_end_part(p, l->to)) {
            l->cut = 1;
            r->cut[r->n_cut++] = l;
        }
    }
    int64_t cur_t = e->evq.cur_t_ps;
    uint64_t cur_seq = e->evq.cur_seq;
    for (uint32_t i = 0; i < P; i++) {
        rs_sim *s = &r->ps[i];
        *s = *sim;
        rs_engine *pe = &s->tp.net.eng;
        if (rs_eventq_init(&pe->evq, 1024) != 0)
            return -1;
        r->n_ps = i + 1;
        pe->evq.cur_t_ps = cur_t; /* every queue stands where the one queue stood */
        pe->evq.cur_seq = cur_seq;
        pe->qs = r->qv;
        pe->ent_q = r->ent_q;
        pe->n_q = P + 1;
        pe->cur_q = i;
        pe->win_end = INT64_MIN;
        pe->failed = 0;
        pe->errmsg[0] = 0;
        s->tp.net.pool = &s->tp.pool;
        s->events = 0;
        s->flows_stop = 0;
        r->qv[i] = &pe->evq;
    }
    rs_event *v = NULL;
    size_t n = 0, cap = 0;
    if (drain(&e->evq, &v, &n, &cap) != 0) {
        free(v);
        return -1;
    }
    /* the simulation's queue (now empty) becomes the global one */
    r->qv[P] = &e->evq;
    e->qs = r->qv;
    e->ent_q = r->ent_q;
    e->n_q = P + 1;
    e->cur_q = P;
    e->win_end = INT64_MIN;
    point_nodes(r, 1);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rs_timer *tm = v[i].timer;
        uint32_t q = tm->ent < e->n_ent ? r->ent_q[tm->ent] : P;
        rc = rs_timer_arm_seq(r->qv[q], tm, v[i].t_ps, v[i].seq);
    }
    free(v);
    r->last_t = e->now_ps;
    r->last_seq = 0;
    return rc;
}

/* Back to one queue: every live entry of every queue into the simulation's. */
static int teardown(par_run *r)
{
    rs_engine *e = r->e;
    if (e->qs)
        exchange(r);
    for (uint32_t i = 0; i < r->n_cut; i++)
        r->cut[i]->cut = 0;
    free(r->cut);
    r->cut = NULL;
    r->n_cut = 0;
    int rc = 0;
    if (r->ps && e->qs)
        point_nodes(r, 0);
    if (e->qs) {
        rs_event *v = NULL;
        size_t n = 0, cap = 0;
        int64_t cur_t = INT64_MIN;
        uint64_t cur_seq = 0;
        for (uint32_t i = 0; i <= r->P; i++) {
            rs_eventq *q = r->qv[i];
            if (q->cur_t_ps > cur_t || (q->cur_t_ps == cur_t && q->cur_seq > cur_seq)) {
                cur_t = q->cur_t_ps;
                cur_seq = q->cur_seq;
            }
            if (drain(q, &v, &n, &cap) != 0)
                rc = -1;
        }
        e->qs = NULL;
        e->ent_q = NULL;
        e->n_q = 0;
        e->cur_q = 0;
        for (size_t i = 0; i < n; i++)
            if (rs_timer_arm_seq(&e->evq, v[i].timer, v[i].t_ps, v[i].seq) != 0)
                rc = -1;
        e->evq.cur_t_ps = cur_t;
        e->evq.cur_seq = cur_seq;
        free(v);
    }
    for (uint32_t i = 0; i < r->n_ps; i++) {
        r->sim->events += r->ps[i].events;
        rs_eventq_free(&r->ps[i].tp.net.eng.evq);
    }
    free(r->ps);
    r->ps = NULL;
    r->n_ps = 0;
    free(r->qv);
    r->qv = NULL;
    free(r->ent_q);
    r->ent_q = NULL;
    return rc;
}

/* The earliest live entry's key of queue i: 1, or 0 when it is empty. */
static int head_of(par_run *r, uint32_t i, int64_t *t, uint64_t *seq)
{
    const rs_event *h = rs_eventq_head(r->qv[i]);
    if (!h)
        return 0;
    *t = h->t_ps;
    *seq = h->seq;
    return 1;
}

/* Handle the head of s's queue (the caller checked it is there). */
static void handle_head(par_run *r, rs_sim *s)
{
    rs_engine *e = &s->tp.net.eng;
    rs_eventq *q = &e->evq;
    rs_event ev = *rs_eventq_head(q);
    rs_eventq_consume_head(q);
    ev.timer->armed = 0;
    e->now_ps = ev.t_ps;
    rs_engine_enter(e, ev.timer->ent);
    rs_sim_dispatch(s, &ev);
    s->events++;
    if (ev.t_ps > r->last_t || (ev.t_ps == r->last_t && ev.seq > r->last_seq)) {
        r->last_t = ev.t_ps;
        r->last_seq = ev.seq;
    }
}

enum { RUN_TO_END, RUN_FLOWS_STOPPED };

/* Run partition i's events before (t_lim, seq_lim), in a window ending at win_end; with
 * stop_at_done, stop after the event that finished the partition's last flow. */
static int run_part(par_run *r, uint32_t i, int64_t t_lim, uint64_t seq_lim, int64_t win_end, int stop_at_done)
{
    rs_sim *s = &r->ps[i];
    rs_engine *e = &s->tp.net.eng;
    int stopped = 0;
    e->win_end = win_end;
    shared_in(r, i);
    for (;;) {
        if (e->failed)
            break;
        const rs_event *h = rs_eventq_head(&e->evq);
        if (!h || h->t_ps > t_lim || (h->t_ps == t_lim && h->seq >= seq_lim))
            break;
        handle_head(r, s);
        if (r->sim->flows_stop) { /* the flow table's flag (rs_flows.done) is the simulation's */
            r->sim->flows_stop = 0;
            if (stop_at_done) {
                /* the rest of this instant too (its pair's release among it), as a run on one
                 * queue would whether this was the last flow anywhere or not */
                t_lim = e->now_ps;
                seq_lim = UINT64_MAX;
                stopped = 1;
            }
        }
    }
    shared_out(r, i);
    e->win_end = INT64_MIN;
    return stopped && !e->failed ? RUN_FLOWS_STOPPED : RUN_TO_END;
}

static uint64_t flows_left(const par_run *r)
{
    uint64_t left = 0;
    for (uint32_t i = 0; r->left && i < r->P; i++)
        left += r->left[i];
    return left;
}

static int loop(par_run *r, const rs_run_args *a)
{
    rs_sim *sim = r->sim;
    rs_engine *e = r->e;
    const uint32_t P = r->P;
    const int64_t L = sim->par->lookahead_ps;
    /* events up to u are handled; once every flow finished (at T), u becomes T: the rest of that
     * instant, as run_flows does on one queue after the stop, then RS_RUN_FLOWS_DONE */
    int64_t u = a->until_ps;
    int flows_done = 0;
    for (;;) {
        exchange(r); /* what the last step sent to other partitions */
        if (run_failed(r))
            return RS_RUN_ERROR;
        /* the next event of all: the window starts there */
        int64_t tg = INT64_MAX, t0 = INT64_MAX, t;
        uint64_t kg = 0, k;
        int have_g = head_of(r, P, &tg, &kg);
        if (have_g)
            t0 = tg;
        for (uint32_t i = 0; i < P; i++)
            if (head_of(r, i, &t, &k) && t < t0)
                t0 = t;
        if (flows_done && t0 > u)
            return RS_RUN_FLOWS_DONE;
        if (t0 == INT64_MAX) { /* nothing left (run(until) ends at until, as on one queue) */
            if (a->watch_host < 0 && u != INT64_MAX && u > r->last_t) {
                r->last_t = u;
                return RS_RUN_UNTIL;
            }
            return RS_RUN_IDLE;
        }
        if (t0 > u) {
            if (u > r->last_t)
                r->last_t = u;
            return RS_RUN_UNTIL;
        }
        if (have_g && tg == t0) {
            /* a global event next: every partition first handles what comes before it */
            for (uint32_t i = 0; i < P; i++)
                run_part(r, i, tg, kg, tg + 1, 0);
            if (run_failed(r))
                continue;
            const rs_event *h = rs_eventq_head(&e->evq);
            if (h && h->t_ps == tg && h->seq == kg) {
                /* on the simulation's own struct, every node pointed back at it: the event may
                 * reach any host or switch (a flow start), and runs as on one queue */
                point_nodes(r, 0);
                handle_head(r, sim);
                point_nodes(r, 1);
            }
            sim->flows_stop = 0;
            if (r->left && !flows_done && flows_left(r) == 0) { /* the last flow finished by now */
                flows_done = 1;
                u = tg;
            }
            continue;
        }
        /* a window [t0, end): no frame sent in it arrives before its end */
        int64_t end = t0 > INT64_MAX - L ? INT64_MAX : t0 + L;
        if (have_g && tg < end)
            end = tg;
        if (u != INT64_MAX && u < end)
            end = u + 1;
        if (r->left && !flows_done && flows_left(r)) {
            /* first the partitions with flows to finish, each up to the event that finishes its
             * last (and the rest of that instant): if that was the last anywhere, every partition
             * runs to that instant only */
            int64_t t_done = INT64_MIN;
            for (uint32_t i = 0; i < P; i++)
                if (r->left[i] && run_part(r, i, end, 0, end, 1) == RUN_FLOWS_STOPPED &&
                    r->ps[i].tp.net.eng.now_ps > t_done)
                    t_done = r->ps[i].tp.net.eng.now_ps;
            if (flows_left(r) == 0 && t_done != INT64_MIN) {
                flows_done = 1;
                u = t_done;
                end = t_done + 1;
            }
        }
        for (uint32_t i = 0; i < P; i++)
            run_part(r, i, end, 0, end, 0);
        if (r->left && !flows_done && flows_left(r) == 0) { /* finished without a stop (cannot happen) */
            flows_done = 1;
            u = r->last_t;
        }
    }
}

int rs_par_run(rs_sim *sim, const rs_run_args *a)
{
    if (rs_sim_par_check(sim, a) != RS_OK)
        return RS_RUN_ERROR;
    const int64_t u = a->until_ps;
    if (u != INT64_MAX && (u < 0 || (u > RS_MAX_TIME_PS && u > sim->tp.net.eng.now_ps))) {
        rs_sim_fail(sim, RS_ERR_INVAL, "run until %lld ps: allowed 0..%lld, or no limit", (long long)a->until_ps,
                    (long long)RS_MAX_TIME_PS);
        return RS_RUN_ERROR;
    }
    if (sim->tp.net.routes_dirty && rs_routes_compute(&sim->tp.net) != RS_OK)
        return RS_RUN_ERROR;
    par_run r = {.sim = sim, .e = &sim->tp.net.eng};
    rs_flows *fs = sim->flows;
    int rc;
    if (fs && fs->stop_when_done && fs->finished < fs->n) {
        /* flows left by the partition of their requester host */
        r.left = calloc(sim->par->parts, sizeof(uint64_t));
        if (!r.left) {
            rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
            return RS_RUN_ERROR;
        }
        for (uint64_t i = 0; i < fs->n; i++) {
            const rs_flow *f = &fs->f[i];
            if (f->r.status == RS_FLOW_RUNNING || f->r.status == RS_FLOW_WAITING) {
                int req = f->r.status == RS_FLOW_RUNNING ? (int)f->r.req_host
                          : f->verb == RS_FLOW_READ      ? f->dst
                                                         : f->src;
                r.left[sim->par->host_part[req]]++;
            }
        }
        fs->part_left = r.left;
        fs->part_of_host = sim->par->host_part;
    }
    if (setup(&r) != 0) {
        teardown(&r);
        if (fs)
            fs->part_left = NULL;
        free(r.left);
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory splitting the event queue");
        return RS_RUN_ERROR;
    }
    rc = loop(&r, a);
    if (teardown(&r) != 0 && rc != RS_RUN_ERROR) {
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory joining the event queues");
        rc = RS_RUN_ERROR;
    }
    if (rc != RS_RUN_ERROR && r.last_t > sim->tp.net.eng.now_ps)
        sim->tp.net.eng.now_ps = r.last_t;
    if (fs)
        fs->part_left = NULL;
    free(r.left);
    return rc;
}
