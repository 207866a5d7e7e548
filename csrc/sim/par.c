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
 * The partitions of a job run one after the other on the caller's thread, or on threads (each
 * takes partitions off the job until none is left).  The window exchange is the seam for other
 * transports (MPI ranks): a frame for another partition waits in its link's outbox and joins the
 * link's FIFO and the receiver's queue, at a time after the window's end, at the receiving
 * partition's next turn. */
#define _POSIX_C_SOURCE 200809L /* pthreads under -std=c11 */
#include "sim/par.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link/link.h"
#include "link/switch.h"
#include "sim/par_rank.h"
#include "sim/sim_impl.h"
#include "workload/flows_impl.h"

/* What the partitioned runs did, summed over the runs since the table was set (rs_sim_par_stats):
 * it depends on the model and the split only, not on the machine's load. */
typedef struct par_stats {
    uint64_t runs;
    uint64_t jobs;          /* steps every partition ran (with threads: handed out, then waited for) */
    uint64_t barriers;      /* synchronisations of the threads (2 per job with threads: its start and end) */
    uint64_t windows;       /* lookahead windows */
    uint64_t global_events; /* handled on the caller's thread alone, between jobs */
    uint64_t events;        /* handled by the partitions in jobs */
    uint64_t crit_threads;  /* over jobs, the most events of a partition or 1/T of all, whichever is more */
    uint64_t crit_parts;    /* over jobs, the most events a partition handled in it */
    /* CPU time (ns, each thread's own clock: time the machine gave another process is not in it) */
    uint64_t cpu_jobs;      /* of the partitions in jobs, summed */
    uint64_t cpu_crit;      /* over jobs, the most a thread spent in it */
    uint64_t cpu_serial;    /* of the caller's thread between jobs (exchange, global events, windows) */
} par_stats;

enum { PAR_STATS_N = 11 };

struct rs_par {
    uint32_t parts;
    uint32_t threads;
    uint32_t n_hosts, n_switches, n_links; /* the fabric the table was made for */
    uint16_t *host_part;
    uint16_t *switch_part;
    int64_t lookahead_ps;
    par_stats st;
    uint64_t *part_events; /* by partition, over the runs */
    rs_par_rank *rank; /* NULL: one process; else this MPI rank's share (sim/par_rank.c) */
};

void rs_par_free(rs_par *p)
{
    if (!p)
        return;
    free(p->host_part);
    free(p->switch_part);
    free(p->part_events);
    rs_par_rank_free(p->rank);
    free(p);
}

uint32_t rs_par_parts(const rs_par *p) { return p->parts; }
const uint16_t *rs_par_host_part(const rs_par *p) { return p->host_part; }
rs_par_rank *rs_par_get_rank(const rs_par *p) { return p->rank; }
void rs_par_set_rank(rs_par *p, rs_par_rank *k)
{
    rs_par_rank_free(p->rank);
    p->rank = k;
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
    p->part_events = calloc(parts, sizeof(uint64_t));
    if (!p->host_part || !p->switch_part || !p->part_events) {
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

uint32_t rs_sim_par_stats(const rs_sim *sim, uint64_t *out, uint32_t n)
{
    const rs_par *p = sim->par;
    if (!p)
        return 0;
    const par_stats *st = &p->st;
    const uint64_t v[PAR_STATS_N] = {st->runs,       st->jobs,         st->barriers,   st->windows,
                                     st->global_events, st->events,    st->crit_threads, st->crit_parts,
                                     st->cpu_jobs,   st->cpu_crit,     st->cpu_serial};
    for (uint32_t i = 0; i < n && i < PAR_STATS_N + p->parts; i++)
        out[i] = i < PAR_STATS_N ? v[i] : p->part_events[i - PAR_STATS_N];
    return PAR_STATS_N + p->parts;
}

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
    const rs_par *p = sim->par;
    if (!why && p->rank && (why = rs_par_rank_refused(p->rank, sim, p->host_part, p->switch_part, p->threads)))
        return rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks: %s", why);
    if (why && p->rank)
        return rs_sim_fail(sim, RS_ERR_INVAL, "MPI ranks (partitions = %u): %s one process", p->parts, why);
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
/* Threads (T > 1) share each job's partitions: a job is published as a new generation in one word
 * (generation << 32 | the next partition to take), every thread (the caller's too) takes
 * partitions off it until none is left, and the caller waits until all P are done.  A partition
 * goes to whichever thread is free (the results do not depend on which): a thread the machine
 * has descheduled holds up only the partition it is running, not the job.  Threads waiting for
 * the next job spin a while (a job is short), then sleep on a condition variable. */
#define GEN_SHIFT 32
#define SPIN_NS 50000 /* how long a thread waiting for a job spins before it sleeps */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What each thread does at the next barrier: run its partitions up to a limit. */
typedef struct par_job {
    int64_t t_lim;
    uint64_t seq_lim;
    int64_t win_end;
    int stop_at_done; /* stop each partition after the event that finishes its last flow */
    int only_left;    /* only the partitions with flows left */
} par_job;

typedef struct par_run par_run;

typedef struct par_thread {
    par_run *r;
    uint32_t w; /* 1..T-1 (the caller's thread is 0) */
    pthread_t th;
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
    /* the cut links by partition, as indices into cut: in_cut[in_at[i] .. in_at[i + 1]) end in
     * partition i, out_cut[out_at[i] ..] start in it.  After a partition's turn in a job, its
     * thread moves the outboxes of its outgoing links into pend (slot: the job's parity) and notes
     * their earliest arrival (out_min[i]); before its turn in the next, its thread takes its
     * incoming links' frames from pend into their FIFOs (two slots: one partition's turn may end
     * before another's began) */
    uint32_t *in_cut, *out_cut;
    uint32_t *in_at, *out_at;
    int64_t *out_min;
    rs_pkt **pend; /* [2 * n_cut] */
    uint64_t job_no;
    /* threads (T > 1): each job's partitions are taken by the threads (above); each partition
     * has its own packet pool and QP slabs (absorbed into the simulation's at the end) and its
     * own latest event (last[i]) */
    uint32_t T;
    par_thread *th;
    uint32_t n_th; /* threads started */
    _Atomic uint64_t claim; /* generation << 32 | the next partition to take */
    atomic_uint n_done;     /* partitions done in this job */
    atomic_int quit;        /* the run is over: the threads return */
    atomic_uint sleepers;   /* threads asleep on `wake` */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake;
    int have_wake;
    uint64_t gen;
    int barriers; /* the threads run (every one started) */
    pthread_mutex_t gate_lock; /* the threads wait here until all started */
    pthread_cond_t gate;
    int gate_open, have_gate;
    pthread_mutex_t flows_lock;
    int have_lock;
    par_job job;
    int *ret;       /* by partition: what its last run_part returned */
    int64_t *last_t; /* by partition, P: the global queue */
    uint64_t *last_seq;
    uint64_t *ev_prev; /* by partition, its event count before the job (the stats) */
    uint64_t *cpu_part; /* by partition, the CPU ns of its turn in the job (the stats) */
    uint64_t *cpu_thr;  /* by thread, the CPU ns of its turns in the job (the stats) */
    uint32_t *owner;    /* by partition, the thread that ran its turn in the job */
    uint64_t cpu_mark;  /* the caller's CPU clock at the end of the last job */
    rs_par_rank *rank; /* NULL: one process; else this MPI rank runs only its partitions */
    int agreed;        /* MPI ranks: nothing ran since the last agreement (another would repeat it) */
};

/* The calling thread's CPU clock in ns. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

/* The window exchange, all at once (at the end of a run): the frames sent on cut links and not
 * taken yet (in pend, or still in an outbox) join their links' FIFOs and the receivers' queues
 * (each arrives after the window it was sent in).  During the run each partition's turn takes its
 * own (take_incoming, note_outgoing below).  The one seam between partitions: a transport that runs
 * them apart (MPI ranks) carries these outboxes. */
static void exchange(par_run *r)
{
    for (uint32_t i = 0; i < r->n_cut; i++) {
        for (uint64_t j = r->job_no + 1; r->pend && j <= r->job_no + 2; j++) { /* the older slot first */
            rs_pkt **slot = r->pend + (j & 1) * r->n_cut;
            if (slot[i])
                rs_link_take_frames(&r->sim->tp.net, r->cut[i], slot[i]); /* armed by the run's control */
            slot[i] = NULL;
        }
        if (r->cut[i]->out_head)
            rs_link_take_outbox(&r->sim->tp.net, r->cut[i]);
    }
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

/* The cut links by the partition of their receiving end (in_cut) and of their sending end
 * (out_cut), each in the order of r->cut. */
static int cut_by_part(par_run *r)
{
    const rs_par *p = r->sim->par;
    const uint32_t P = p->parts, n = r->n_cut;
    r->in_cut = malloc((n + 1) * sizeof(uint32_t));
    r->out_cut = malloc((n + 1) * sizeof(uint32_t));
    r->in_at = calloc(P + 1, sizeof(uint32_t));
    r->out_at = calloc(P + 1, sizeof(uint32_t));
    r->out_min = malloc(P * sizeof(int64_t));
    r->pend = calloc(2 * (size_t)n + 1, sizeof(rs_pkt *));
    if (!r->in_cut || !r->out_cut || !r->in_at || !r->out_at || !r->out_min || !r->pend)
        return -1;
    for (uint32_t i = 0; i < n; i++) { /* counts, then starts, then the lists */
        r->in_at[link_end_part(p, r->cut[i]->to) + 1]++;
        r->out_at[link_end_part(p, r->cut[i]->from) + 1]++;
    }
    for (uint32_t i = 0; i < P; i++) {
        r->in_at[i + 1] += r->in_at[i];
        r->out_at[i + 1] += r->out_at[i];
        r->out_min[i] = INT64_MAX;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t to = link_end_part(p, r->cut[i]->to), from = link_end_part(p, r->cut[i]->from);
        uint32_t ki = r->in_at[to]++, ko = r->out_at[from]++;
        r->in_cut[ki] = i;
        r->out_cut[ko] = i;
    }
    for (uint32_t i = P; i > 0; i--) { /* each start moved to the next partition's: back */
        r->in_at[i] = r->in_at[i - 1];
        r->out_at[i] = r->out_at[i - 1];
    }
    r->in_at[0] = r->out_at[0] = 0;
    return 0;
}

/* Before partition i's turn in a job: the frames sent to it in the last job join their links'
 * FIFOs and its queue, armed through its engine (each arrives after the window it was sent in,
 * so at or after this one's start). */
static void take_incoming(par_run *r, uint32_t i)
{
    rs_pkt **slot = r->pend + ((r->job_no - 1) & 1) * r->n_cut;
    for (uint32_t k = r->in_at[i]; k < r->in_at[i + 1]; k++) {
        uint32_t c = r->in_cut[k];
        if (slot[c]) {
            rs_link_take_frames(&r->ps[i].tp.net, r->cut[c], slot[c]);
            slot[c] = NULL;
        }
    }
}

/* After partition i's turn: its outboxes into pend, and their earliest arrival. */
static void note_outgoing(par_run *r, uint32_t i)
{
    int64_t t = INT64_MAX;
    rs_pkt **slot = r->pend + (r->job_no & 1) * r->n_cut;
    for (uint32_t k = r->out_at[i]; k < r->out_at[i + 1]; k++) {
        uint32_t c = r->out_cut[k];
        rs_link *l = r->cut[c];
        rs_pkt *pkt = l->out_head;
        if (!pkt)
            continue;
        if (pkt->t_arrive_ps < t) /* a link's frames arrive in the order sent */
            t = pkt->t_arrive_ps;
        slot[c] = pkt;
        l->out_head = l->out_tail = NULL;
    }
    r->out_min[i] = t;
}

/* The earliest arrival of a frame still in an outbox (between jobs): INT64_MAX when none. */
static int64_t pending_arrival(const par_run *r)
{
    int64_t t = INT64_MAX;
    for (uint32_t i = 0; r->out_min && i < r->P; i++)
        if (r->out_min[i] < t)
            t = r->out_min[i];
    return t;
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
    r->ev_prev = calloc(P, sizeof(uint64_t));
    r->cpu_part = calloc(P, sizeof(uint64_t));
    r->cpu_thr = calloc(r->T, sizeof(uint64_t));
    r->owner = calloc(P, sizeof(uint32_t));
    if (!r->ent_q || !r->qv || !r->ps || !r->ret || !r->last_t || !r->last_seq || !r->ev_prev || !r->cpu_part ||
        !r->cpu_thr || !r->owner)
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
    if (cut_by_part(r) != 0)
        return -1;
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
    free(r->in_cut);
    free(r->out_cut);
    free(r->in_at);
    free(r->out_at);
    free(r->out_min);
    free(r->pend);
    r->pend = NULL;
    r->in_cut = r->out_cut = NULL;
    r->in_at = r->out_at = NULL;
    r->out_min = NULL;
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
    free(r->ev_prev);
    r->ev_prev = NULL;
    free(r->cpu_part);
    r->cpu_part = NULL;
    free(r->cpu_thr);
    r->cpu_thr = NULL;
    free(r->owner);
    r->owner = NULL;
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

/* Handle the head of s's queue (the caller checked it is there); *lt, *ls: the latest event
 * handled (a partition's own copy while it runs: the arrays by partition share cache lines). */
static void handle_head(rs_sim *s, int64_t *lt, uint64_t *ls)
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
    if (ev.t_ps > *lt || (ev.t_ps == *lt && ev.seq > *ls)) {
        *lt = ev.t_ps;
        *ls = ev.seq;
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
    int64_t lt = r->last_t[i];
    uint64_t ls = r->last_seq[i];
    e->win_end = win_end;
    shared_in(r, i);
    for (;;) {
        if (e->failed)
            break;
        const rs_event *h = rs_eventq_head(&e->evq);
        if (!h || h->t_ps > t_lim || (h->t_ps == t_lim && h->seq >= seq_lim))
            break;
        handle_head(s, &lt, &ls);
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
    r->last_t[i] = lt;
    r->last_seq[i] = ls;
    return stopped && !e->failed ? RUN_FLOWS_STOPPED : RUN_TO_END;
}

/* Partition i's turn in the job, on thread w. */
static void run_turn(par_run *r, uint32_t i, uint32_t w)
{
    const par_job *j = &r->job;
    if (r->rank && !rs_par_rank_owns(r->rank, i)) { /* another MPI rank's */
        r->ret[i] = RUN_TO_END;
        return;
    }
    uint64_t c0 = thread_cpu_ns();
    take_incoming(r, i);
    if (j->only_left && !r->left[i])
        r->ret[i] = RUN_TO_END;
    else
        r->ret[i] = run_part(r, i, j->t_lim, j->seq_lim, j->win_end, j->stop_at_done);
    note_outgoing(r, i);
    r->owner[i] = w;
    r->cpu_part[i] = thread_cpu_ns() - c0;
}

/* Thread w takes partitions of job generation `gen` until none is left. */
static void take_turns(par_run *r, uint32_t w, uint64_t gen)
{
    uint64_t v = atomic_load_explicit(&r->claim, memory_order_acquire);
    for (;;) {
        if (v >> GEN_SHIFT != gen || (uint32_t)v >= r->P)
            return;
        if (!atomic_compare_exchange_weak_explicit(&r->claim, &v, v + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* v now holds the word another thread left */
        run_turn(r, (uint32_t)v, w);
        atomic_fetch_add_explicit(&r->n_done, 1, memory_order_release);
        v = atomic_load_explicit(&r->claim, memory_order_acquire);
    }
}

/* A thread waits for a job after generation `gen` (or the end of the run): its generation. */
static uint64_t wait_job(par_run *r, uint64_t gen)
{
    uint64_t t0 = 0;
    for (unsigned spins = 0;; spins++) {
        uint64_t v = atomic_load_explicit(&r->claim, memory_order_acquire);
        if (v >> GEN_SHIFT != gen || atomic_load_explicit(&r->quit, memory_order_acquire))
            return v >> GEN_SHIFT;
        if (spins % 64 != 63)
            continue;
        uint64_t now = mono_ns();
        if (!t0) {
            t0 = now;
        } else if (now - t0 > SPIN_NS) {
            /* asleep until the caller publishes a job: it wakes the sleepers it counts (both
             * sides store, then load the other's word, sequentially consistent) */
            pthread_mutex_lock(&r->wake_lock);
            atomic_fetch_add(&r->sleepers, 1);
            while (atomic_load(&r->claim) >> GEN_SHIFT == gen && !atomic_load(&r->quit))
                pthread_cond_wait(&r->wake, &r->wake_lock);
            atomic_fetch_sub(&r->sleepers, 1);
            pthread_mutex_unlock(&r->wake_lock);
            t0 = 0;
        }
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
    for (uint64_t gen = 0;;) {
        gen = wait_job(r, gen);
        if (atomic_load_explicit(&r->quit, memory_order_acquire))
            return NULL;
        take_turns(r, t->w, gen);
    }
}

/* Publish a new generation of the claim word (a job, or the end of the run) and wake sleepers. */
static void publish(par_run *r, uint64_t word)
{
    atomic_store(&r->claim, word);
    if (atomic_load(&r->sleepers)) {
        pthread_mutex_lock(&r->wake_lock);
        pthread_cond_broadcast(&r->wake);
        pthread_mutex_unlock(&r->wake_lock);
    }
}

/* The job's events and CPU time into the stats (between jobs, on the caller's thread): by
 * partition; the critical path in events with T threads (per job the most of one partition's or
 * an equal share of all, whichever is more: what any assignment to T threads takes at least) and
 * with one thread per partition; in CPU time by the threads that ran the partitions. */
static void job_stats(par_run *r)
{
    rs_par *p = r->sim->par;
    uint64_t most = 0, all = 0;
    for (uint32_t w = 0; w < r->T; w++)
        r->cpu_thr[w] = 0;
    for (uint32_t i = 0; i < r->P; i++) {
        r->cpu_thr[r->owner[i]] += r->cpu_part[i];
        p->st.cpu_jobs += r->cpu_part[i];
        uint64_t n = r->ps[i].events - r->ev_prev[i];
        r->ev_prev[i] = r->ps[i].events;
        p->part_events[i] += n;
        all += n;
        if (n > most)
            most = n;
    }
    p->st.events += all;
    p->st.crit_parts += most;
    uint64_t share = (all + r->T - 1) / r->T;
    p->st.crit_threads += share > most ? share : most;
    most = 0;
    for (uint32_t w = 0; w < r->T; w++)
        if (r->cpu_thr[w] > most)
            most = r->cpu_thr[w];
    p->st.cpu_crit += most;
    p->st.jobs++;
}

/* Every partition runs the job, on the threads; then, on the caller's thread alone, the releases
 * of responder QPs that waited for the window's end. */
static void run_job(par_run *r, int64_t t_lim, uint64_t seq_lim, int64_t win_end, int stop_at_done, int only_left)
{
    r->job = (par_job){.t_lim = t_lim, .seq_lim = seq_lim, .win_end = win_end, .stop_at_done = stop_at_done,
                       .only_left = only_left};
    r->job_no++;
    r->agreed = 0;
    r->sim->par->st.cpu_serial += thread_cpu_ns() - r->cpu_mark;
    if (r->barriers) {
        atomic_store_explicit(&r->n_done, 0, memory_order_relaxed);
        r->gen++;
        publish(r, r->gen << GEN_SHIFT);
        take_turns(r, 0, r->gen);
        for (unsigned spins = 0; atomic_load_explicit(&r->n_done, memory_order_acquire) != r->P;)
            if (++spins > 4000)
                sched_yield();
        r->sim->par->st.barriers += 2;
    } else {
        for (uint32_t i = 0; i < r->P; i++)
            run_turn(r, i, 0);
    }
    job_stats(r);
    r->cpu_mark = thread_cpu_ns();
    if (r->sim->flows && r->sim->flows->part_defer && !r->rank) /* (ranks: rs_par_rank_agree) */
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
    if (pthread_mutex_init(&r->wake_lock, NULL) != 0)
        return -1;
    if (pthread_cond_init(&r->wake, NULL) != 0) {
        pthread_mutex_destroy(&r->wake_lock);
        return -1;
    }
    r->have_wake = 1;
    r->th = calloc(r->T, sizeof(par_thread));
    if (!r->th)
        return -1;
    int ok = 1;
    atomic_init(&r->claim, 0);
    atomic_init(&r->n_done, 0);
    atomic_init(&r->quit, 0);
    atomic_init(&r->sleepers, 0);
    r->gen = 0;
    for (uint32_t w = 1; w < r->T && ok; w++) {
        r->th[w] = (par_thread){.r = r, .w = w};
        if (pthread_create(&r->th[w].th, NULL, thread_main, &r->th[w]) != 0)
            ok = 0;
        else
            r->n_th = w;
    }
    r->barriers = ok;
    gate_open(r); /* if one could not start, the threads that did return at once */
    return r->barriers ? 0 : -1;
}

static void threads_stop(par_run *r)
{
    if (r->barriers) {
        atomic_store(&r->quit, 1);
        publish(r, (r->gen + 1) << GEN_SHIFT);
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
    if (r->have_wake) {
        pthread_cond_destroy(&r->wake);
        pthread_mutex_destroy(&r->wake_lock);
        r->have_wake = 0;
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

/* MPI ranks: what the others did in the last step (sim/par_rank.c). */
static void agree(par_run *r)
{
    if (!r->rank)
        return;
    const rs_par *p = r->sim->par;
    /* what the owned partitions sent to another rank's, back from pend to the link's outbox; and
     * the earliest arrival of all they sent (the rest waits in pend for the receiver's turn) */
    rs_pkt **slot = r->pend + (r->job_no & 1) * r->n_cut;
    int64_t pending = INT64_MAX;
    for (uint32_t i = 0; i < r->P; i++)
        if (rs_par_rank_owns(r->rank, i) && r->out_min[i] < pending)
            pending = r->out_min[i];
    for (uint32_t c = 0; c < r->n_cut; c++) {
        rs_link *l = r->cut[c];
        if (!slot[c] || rs_par_rank_owns(r->rank, link_end_part(p, l->to)))
            continue;
        rs_pkt *tail = slot[c];
        while (tail->next)
            tail = tail->next;
        l->out_head = slot[c];
        l->out_tail = tail;
        slot[c] = NULL;
    }
    rs_par_view v = {.sim = r->sim, .P = r->P, .qv = r->qv, .ps = r->ps, .left = r->left, .last_t = r->last_t,
                     .last_seq = r->last_seq, .ret = r->ret, .cut = r->cut, .n_cut = r->n_cut,
                     .host_part = p->host_part, .switch_part = p->switch_part, .pending_t = pending};
    rs_par_rank_agree(r->rank, &v);
    r->agreed = 1;
}

/* The earliest event time of the partitions, frames waiting in pend included (INT64_MAX: none). */
static int64_t parts_head(par_run *r)
{
    if (r->rank)
        return rs_par_rank_head(r->rank); /* as of the agreement just made */
    int64_t t0 = pending_arrival(r), t;
    uint64_t k;
    for (uint32_t i = 0; i < r->P; i++)
        if (head_of(r, i, &t, &k) && t < t0)
            t0 = t;
    return t0;
}

/* The jobs of a window [.., end).  While flows are left, a partition stops after the event that
 * finishes its last (and the rest of that instant); if that was the last anywhere, every partition
 * runs to that instant only (u and *flows_done say so), else all run on to the window's end.  When
 * every partition has flows left, that is one job with stops, and a second only in the window
 * where a partition's last flow finished (at most one per partition and run); when some partition
 * has none left, it cannot know where the window ends for it: first the partitions with flows
 * left, then all. */
static void run_window(par_run *r, int64_t end, int64_t *u, int *flows_done)
{
    const uint32_t P = r->P;
    if (r->left && !*flows_done && flows_left(r)) {
        int every = 1;
        for (uint32_t i = 0; i < P && every; i++)
            every = r->left[i] != 0;
        int64_t t_done = INT64_MIN;
        int stops = 0;
        run_job(r, end, 0, end, 1, !every);
        agree(r);
        for (uint32_t i = 0; i < P; i++)
            if (r->ret[i] == RUN_FLOWS_STOPPED) {
                stops = 1;
                if (r->ps[i].tp.net.eng.now_ps > t_done)
                    t_done = r->ps[i].tp.net.eng.now_ps;
            }
        if (flows_left(r) == 0 && t_done != INT64_MIN) {
            *flows_done = 1;
            *u = t_done;
            end = t_done + 1;
        } else if (every && !stops) {
            return; /* every partition ran to the window's end */
        }
    }
    run_job(r, end, 0, end, 0, 0);
    if (r->left && !*flows_done && flows_left(r) == 0) { /* finished without a stop (cannot happen) */
        *flows_done = 1;
        *u = last_of(r);
    }
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
        if (!r->agreed) /* (after a window whose job ended in an agreement, that one holds) */
            agree(r); /* MPI ranks: what the others did in the last job */
        if (run_failed(r))
            return RS_RUN_ERROR;
        /* the next event of all: the window starts there (what the last job sent to other
         * partitions is still in the outboxes: each thread takes its own at its next job) */
        int64_t tg = INT64_MAX, t0 = parts_head(r);
        uint64_t kg = 0;
        int have_g = head_of(r, P, &tg, &kg);
        if (have_g && tg < t0)
            t0 = tg;
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
            agree(r); /* (the QP pairs of flows that finished go before the event may start others) */
            if (run_failed(r))
                continue;
            const rs_event *h = rs_eventq_head(&e->evq);
            if (h && h->t_ps == tg && h->seq == kg) {
                /* on the simulation's own struct, every node pointed back at it: the event may
                 * reach any host or switch (a flow start), and runs as on one queue */
                point_nodes(r, 0);
                handle_head(sim, &r->last_t[P], &r->last_seq[P]);
                point_nodes(r, 1);
                r->agreed = 0;
                sim->par->st.global_events++;
            }
            sim->flows_stop = 0;
            if (r->left && !flows_done && flows_left(r) == 0) { /* the last flow finished by now */
                flows_done = 1;
                u = tg;
            }
            continue;
        }
        /* a window [t0, end): no frame sent in it arrives before its end */
        sim->par->st.windows++;
        int64_t end = t0 > INT64_MAX - L ? INT64_MAX : t0 + L;
        if (have_g && tg < end)
            end = tg;
        if (u != INT64_MAX && u < end)
            end = u + 1;
        run_window(r, end, &u, &flows_done);
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
    par_run r = {.sim = sim, .e = &sim->tp.net.eng, .rank = sim->par->rank};
    sim->par->st.runs++;
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
    if ((r.T > 1 || r.rank) && fs) {
        defer = calloc(sim->par->parts, sizeof(uint64_t));
        fs->part_of_host = sim->par->host_part;
    }
    if (r.rank && fs && !defer) {
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
        rc = RS_RUN_ERROR;
    } else if (r.T > 1 && (!defer || threads_start(&r) != 0)) {
        threads_stop(&r);
        rs_sim_fail(sim, RS_ERR_NOMEM, "[simulation] threads = %u: could not start the threads", r.T);
        rc = RS_RUN_ERROR;
    } else {
        if (r.T > 1 && fs) {
            fs->lock = &r.flows_lock;
            fs->part_defer = defer;
        }
        r.cpu_mark = thread_cpu_ns();
        if (r.rank && fs) { /* every responder's release waits for the ranks' agreement */
            fs->part_defer = defer;
            fs->defer_all = 1;
        }
        rc = loop(&r, a);
        sim->par->st.cpu_serial += thread_cpu_ns() - r.cpu_mark;
        threads_stop(&r);
    }
    if (fs) {
        fs->lock = NULL;
        fs->part_defer = NULL;
        fs->defer_all = 0;
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
