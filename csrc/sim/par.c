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
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c11 */
#include "sim/par.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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
    if (p->threads > 1 && sim->tp.n_cc_plugins)
        return "congestion-control plug-ins need";
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
/* A barrier for the threads of a run: each window ends in two, so they spin (a futex sleep and
 * wake costs more than a short window) and yield the core after a while (a shared machine). */
typedef struct spin_bar {
    atomic_uint count;
    atomic_uint sense;
    unsigned n;
} spin_bar;

static void bar_init(spin_bar *b, unsigned n)
{
    atomic_init(&b->count, 0);
    atomic_init(&b->sense, 0);
    b->n = n;
}

/* *local: the caller's own sense of this barrier, flipped at each wait. */
static void bar_wait(spin_bar *b, unsigned *local)
{
    unsigned s = *local ^ 1u;
    *local = s;
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == b->n) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_store_explicit(&b->sense, s, memory_order_release);
        return;
    }
    for (unsigned spins = 0; atomic_load_explicit(&b->sense, memory_order_acquire) != s;)
        if (++spins > 4000)
            sched_yield();
}

/* What each thread does at the next barrier: run its partitions up to a limit. */
typedef struct par_job {
    int64_t t_lim;
    uint64_t seq_lim;
    int64_t win_end;
    int stop_at_done; /* stop each partition after the event that finishes its last flow */
    int only_left;    /* only the partitions with flows left */
    int quit;         /* the run is over: the threads return */
} par_job;

typedef struct par_run par_run;

typedef struct par_thread {
    par_run *r;
    uint32_t w; /* runs partitions w, w + T, w + 2T, ... */
    pthread_t th;
    unsigned sense[2]; /* its sense of each barrier (go, done) */
} par_thread;

struct par_run {
    rs_sim *sim;
    rs_engine *e;    /* the simulation's engine: the global queue's */
    uint32_t P;      /* partitions; queue P is the global one */
    rs_sim *ps;      /* per partition, the copy it runs on */
    uint32_t n_ps;   /* copies whose queue is set up */
    rs_eventq **qv;  /* every queue: qv[i] = &ps[i].tp.net.eng.evq, qv[P] = &e->evq */
    uint16_t *ent_q;
    uint64_t *left; /* flows not finished by partition (a run that stops when they are) */
    rs_link **cut; /* the links between two partitions */
    uint32_t n_cut;
    /* threads (T > 1): partition i runs on thread i % T (thread 0: the caller's); each partition
     * has its own packet pool and QP slabs (absorbed into the simulation's at the end) and its
     * own latest event (last[i]); two barriers around each job */
    uint32_t T;
    par_thread *th;
    uint32_t n_th; /* threads started */
    spin_bar go, done;
    unsigned sense[2]; /* the caller's sense of each barrier (go, done) */
    int barriers;
    pthread_mutex_t gate_lock; /* the threads wait here until all started */
    pthread_cond_t gate;
    int gate_open, have_gate;
    pthread_mutex_t flows_lock;
    int have_lock;
    par_job job;
    int *ret;       /* by partition: what its last run_part returned */
    int64_t *last_t; /* by partition, P: the global queue */
    uint64_t *last_seq;
};

/* The bias of a partition's INT-stack count on threads: never 0, so that its switches always
 * look at a frame's INT (the count of INT stacks in use is the whole run's, not a partition's) */
#define INT_BIAS ((size_t)1 << 62)

/* The shared allocators into partition i's copy (before it runs) and back (after). */
static void shared_in(par_run *r, uint32_t i)
{
    if (r->T > 1)
        return;
    rs_transport *t = &r->ps[i].tp, *m = &r->sim->tp;
    t->pool = m->pool;
    t->qp_slab = m->qp_slab;
    t->qp_cc_slab = m->qp_cc_slab;
    t->cc_slab = m->cc_slab;
}

static void shared_out(par_run *r, uint32_t i)
{
    if (r->T > 1)
        return;
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
    r->ret = calloc(P, sizeof(int));
    r->last_t = malloc((P + 1) * sizeof(int64_t));
    r->last_seq = calloc(P + 1, sizeof(uint64_t));
    if (!r->ent_q || !r->qv || !r->ps || !r->ret || !r->last_t || !r->last_seq)
        return -1;
    for (uint32_t i = 0; i <= P; i++)
        r->last_t[i] = e->now_ps;
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
        if (r->T > 1) { /* its own allocators, empty (absorbed into the simulation's at the end) */
            rs_pool_init(&s->tp.pool);
            s->tp.pool.ints_in_use = INT_BIAS;
            rs_slab *sl[3] = {&s->tp.qp_slab, &s->tp.qp_cc_slab, &s->tp.cc_slab};
            for (int k = 0; k < 3; k++) {
                sl[k]->free = NULL;
                sl[k]->chunks = NULL;
                sl[k]->total = 0;
            }
        }
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
    return rc;
}

/* Append list `from` (linked through each object's first word) to *into. */
static void list_absorb(void **into, void *from)
{
    if (!from)
        return;
    void *tail = from;
    while (*(void **)tail)
        tail = *(void **)tail;
    *(void **)tail = *into;
    *into = from;
}

static void slab_absorb(rs_slab *into, rs_slab *from)
{
    list_absorb(&into->free, from->free);
    list_absorb(&into->chunks, from->chunks);
    into->total += from->total;
    from->free = from->chunks = NULL;
    from->total = 0;
}

/* A partition's allocators into the simulation's (threads): every object stays where it is. */
static void alloc_absorb(rs_transport *m, rs_transport *t)
{
    rs_pool *mp = &m->pool, *tp = &t->pool;
    slab_absorb(&mp->pkts, &tp->pkts);
    slab_absorb(&mp->payloads, &tp->payloads);
    slab_absorb(&mp->ints, &tp->ints);
    mp->pkts_total += tp->pkts_total;
    mp->pkts_in_use += tp->pkts_in_use; /* counts of frames taken here and freed there: the sum holds */
    if (mp->pkts_in_use > mp->pkts_peak)
        mp->pkts_peak = mp->pkts_in_use;
    mp->payloads_total += tp->payloads_total;
    mp->payloads_in_use += tp->payloads_in_use;
    mp->ints_in_use += tp->ints_in_use - INT_BIAS;
    slab_absorb(&m->qp_slab, &t->qp_slab);
    slab_absorb(&m->qp_cc_slab, &t->qp_cc_slab);
    slab_absorb(&m->cc_slab, &t->cc_slab);
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
        if (r->T > 1) {
            alloc_absorb(&r->sim->tp, &r->ps[i].tp);
            rs_pool_free(&r->ps[i].tp.pool); /* empty now */
        }
    }
    free(r->ps);
    r->ps = NULL;
    r->n_ps = 0;
    free(r->qv);
    r->qv = NULL;
    free(r->ent_q);
    r->ent_q = NULL;
    free(r->ret);
    r->ret = NULL;
    free(r->last_t);
    r->last_t = NULL;
    free(r->last_seq);
    r->last_seq = NULL;
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
static void handle_head(par_run *r, rs_sim *s, uint32_t idx)
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
    if (ev.t_ps > r->last_t[idx] || (ev.t_ps == r->last_t[idx] && ev.seq > r->last_seq[idx])) {
        r->last_t[idx] = ev.t_ps;
        r->last_seq[idx] = ev.seq;
    }
}

/* The latest event handled anywhere (between jobs). */
static int64_t last_of(const par_run *r)
{
    int64_t t = r->last_t[r->P];
    for (uint32_t i = 0; i < r->P; i++)
        if (r->last_t[i] > t)
            t = r->last_t[i];
    return t;
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
        handle_head(r, s, i);
        if (stop_at_done && !stopped && r->left[i] == 0) {
            /* its last flow finished: the rest of this instant too (its pair's release among
             * it), as a run on one queue would whether this was the last flow anywhere or not */
            t_lim = e->now_ps;
            seq_lim = UINT64_MAX;
            stopped = 1;
        }
    }
    shared_out(r, i);
    e->win_end = INT64_MIN;
    return stopped && !e->failed ? RUN_FLOWS_STOPPED : RUN_TO_END;
}

/* Thread w's share of the job. */
static void run_slice(par_run *r, uint32_t w)
{
    const par_job *j = &r->job;
    for (uint32_t i = w; i < r->P; i += r->T) {
        if (j->only_left && !r->left[i]) {
            r->ret[i] = RUN_TO_END;
            continue;
        }
        r->ret[i] = run_part(r, i, j->t_lim, j->seq_lim, j->win_end, j->stop_at_done);
    }
}

static void *thread_main(void *arg)
{
    par_thread *t = arg;
    par_run *r = t->r;
    pthread_mutex_lock(&r->gate_lock); /* until every thread started (or one could not) */
    while (!r->gate_open)
        pthread_cond_wait(&r->gate, &r->gate_lock);
    pthread_mutex_unlock(&r->gate_lock);
    if (!r->barriers)
        return NULL; /* not every thread could start: the run fails */
    for (;;) {
        bar_wait(&r->go, &t->sense[0]);
        if (r->job.quit)
            return NULL;
        run_slice(r, t->w);
        bar_wait(&r->done, &t->sense[1]);
    }
}

/* Every partition runs the job, on the threads; then, on the caller's thread alone, the releases
 * of responder QPs that waited for the window's end. */
static void run_job(par_run *r, int64_t t_lim, uint64_t seq_lim, int64_t win_end, int stop_at_done, int only_left)
{
    r->job = (par_job){.t_lim = t_lim, .seq_lim = seq_lim, .win_end = win_end, .stop_at_done = stop_at_done,
                       .only_left = only_left};
    if (r->barriers)
        bar_wait(&r->go, &r->sense[0]);
    run_slice(r, 0);
    if (r->barriers)
        bar_wait(&r->done, &r->sense[1]);
    if (r->sim->flows && r->sim->flows->part_defer)
        rs_flows_reap_deferred(r->sim->flows, r->P);
}

static void gate_open(par_run *r)
{
    pthread_mutex_lock(&r->gate_lock);
    r->gate_open = 1;
    pthread_cond_broadcast(&r->gate);
    pthread_mutex_unlock(&r->gate_lock);
}

/* Start the threads (T > 1): 0, or -1 (none left running). */
static int threads_start(par_run *r)
{
    if (r->T <= 1)
        return 0;
    if (pthread_mutex_init(&r->flows_lock, NULL) != 0)
        return -1;
    r->have_lock = 1;
    if (pthread_mutex_init(&r->gate_lock, NULL) != 0)
        return -1;
    if (pthread_cond_init(&r->gate, NULL) != 0) {
        pthread_mutex_destroy(&r->gate_lock);
        return -1;
    }
    r->have_gate = 1;
    r->th = calloc(r->T, sizeof(par_thread));
    if (!r->th)
        return -1;
    int ok = 1;
    bar_init(&r->go, r->T);
    bar_init(&r->done, r->T);
    for (uint32_t w = 1; w < r->T && ok; w++) {
        r->th[w] = (par_thread){.r = r, .w = w};
        if (pthread_create(&r->th[w].th, NULL, thread_main, &r->th[w]) != 0)
            ok = 0;
        else
            r->n_th = w;
    }
    r->barriers = ok;
    gate_open(r); /* without barriers, the threads that started return at once */
    return r->barriers ? 0 : -1;
}

static void threads_stop(par_run *r)
{
    if (r->barriers) {
        r->job.quit = 1;
        bar_wait(&r->go, &r->sense[0]);
    }
    for (uint32_t w = 1; w <= r->n_th; w++)
        pthread_join(r->th[w].th, NULL);
    free(r->th);
    r->th = NULL;
    r->n_th = 0;
    r->barriers = 0;
    if (r->have_gate) {
        pthread_cond_destroy(&r->gate);
        pthread_mutex_destroy(&r->gate_lock);
        r->have_gate = 0;
    }
    if (r->have_lock) {
        pthread_mutex_destroy(&r->flows_lock);
        r->have_lock = 0;
    }
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
            if (a->watch_host < 0 && u != INT64_MAX && u > last_of(r)) {
                r->last_t[P] = u;
                return RS_RUN_UNTIL;
            }
            return RS_RUN_IDLE;
        }
        if (t0 > u) {
            if (u > last_of(r))
                r->last_t[P] = u;
            return RS_RUN_UNTIL;
        }
        if (have_g && tg == t0) {
            /* a global event next: every partition first handles what comes before it */
            run_job(r, tg, kg, tg + 1, 0, 0);
            if (run_failed(r))
                continue;
            const rs_event *h = rs_eventq_head(&e->evq);
            if (h && h->t_ps == tg && h->seq == kg) {
                /* on the simulation's own struct, every node pointed back at it: the event may
                 * reach any host or switch (a flow start), and runs as on one queue */
                point_nodes(r, 0);
                handle_head(r, sim, P);
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
            run_job(r, end, 0, end, 1, 1);
            for (uint32_t i = 0; i < P; i++)
                if (r->ret[i] == RUN_FLOWS_STOPPED && r->ps[i].tp.net.eng.now_ps > t_done)
                    t_done = r->ps[i].tp.net.eng.now_ps;
            if (flows_left(r) == 0 && t_done != INT64_MIN) {
                flows_done = 1;
                u = t_done;
                end = t_done + 1;
            }
        }
        run_job(r, end, 0, end, 0, 0);
        if (r->left && !flows_done && flows_left(r) == 0) { /* finished without a stop (cannot happen) */
            flows_done = 1;
            u = last_of(r);
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
    r.T = sim->par->threads < sim->par->parts ? sim->par->threads : sim->par->parts;
    if (r.T < 1)
        r.T = 1;
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
    uint64_t *defer = NULL;
    if (r.T > 1 && fs) {
        defer = calloc(sim->par->parts, sizeof(uint64_t));
        fs->part_of_host = sim->par->host_part;
    }
    if (r.T > 1 && (!defer || threads_start(&r) != 0)) {
        threads_stop(&r);
        rs_sim_fail(sim, RS_ERR_NOMEM, "[simulation] threads = %u: could not start the threads", r.T);
        rc = RS_RUN_ERROR;
    } else {
        if (r.T > 1 && fs) {
            fs->lock = &r.flows_lock;
            fs->part_defer = defer;
        }
        rc = loop(&r, a);
        threads_stop(&r);
    }
    if (fs) {
        fs->lock = NULL;
        fs->part_defer = NULL;
    }
    free(defer);
    int64_t lt = last_of(&r);
    if (teardown(&r) != 0 && rc != RS_RUN_ERROR) {
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory joining the event queues");
        rc = RS_RUN_ERROR;
    }
    if (rc != RS_RUN_ERROR && lt > sim->tp.net.eng.now_ps)
        sim->tp.net.eng.now_ps = lt;
    if (fs)
        fs->part_left = NULL;
    free(r.left);
    return rc;
}
