/* The threaded partitioned loop (csrc/sim/par.c) without Python, for ThreadSanitizer
 * (tests/tsan/test_tsan_threads.py builds it with -fsanitize=thread over the csrc sources).
 *
 * Each scenario builds a fabric through the public C API, loads bulk flows and runs them to the
 * end as rdmasim.workload.run_flows does: once on one queue with the partition-independent keys
 * (the reference), then split into partitions on 1 to 4 threads.  Every split run must give the
 * reference's flow table, link counters, clock and event count; any difference is printed and the
 * driver exits 1 (2: a call failed).  The partition tables are computed here (rdmasim.partition
 * makes them in Python): a k = 4 fat tree by pod, a dumbbell by side.
 *
 * Usage: par_threads_driver [scale]   (scale 1 default: flow sizes are multiplied by it) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_dcqcn.h"
#include "rdmasim/cc_hpcc.h"
#include "rdmasim/fabric.h"
#include "rdmasim/flows.h"
#include "rdmasim/sim.h"

#define RATE_BPS 100000000000LL /* 100 Gb/s */
#define DELAY_PS 1000000LL      /* 1 us */
#define PRIO 3                  /* lossless (PFC) in the switches' default config */
#define MAX_NODES 64

typedef struct fabric {
    rs_sim *sim;
    uint32_t n_hosts, n_switches;
    uint16_t host_part[MAX_NODES], switch_part[MAX_NODES];
} fabric;

typedef struct outcome {
    uint64_t n_flows;
    rs_flow_result *flows;
    uint32_t n_links;
    rs_link_stats *links;
    int64_t now;
    uint64_t events;
    uint64_t par[64]; /* rs_sim_par_stats */
    uint32_t n_par;
} outcome;

static int check(rs_sim *sim, long rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "%s: %ld (%s)\n", what, rc, rs_sim_errmsg(sim));
        exit(2);
    }
    return (int)rc;
}

/* xoff_bytes 0: the default dynamic threshold; else a static one (PFC pauses sooner) */
static int add_switch(rs_sim *sim, uint64_t xoff_bytes)
{
    rs_switch_cfg cfg;
    rs_switch_cfg_default(&cfg);
    if (xoff_bytes) {
        cfg.dynamic = 0;
        cfg.xoff_bytes = xoff_bytes;
    }
    cfg.ecn_kmin[PRIO] = 5000; /* DCQCN's marks */
    cfg.ecn_kmax[PRIO] = 200000;
    cfg.ecn_pmax[PRIO] = 0.01;
    return check(sim, rs_switch_add(sim, &cfg), "rs_switch_add");
}

static void link_nodes(rs_sim *sim, int ka, int a, int kb, int b)
{
    check(sim, rs_fabric_connect(sim, ka, a, kb, b, RATE_BPS, DELAY_PS), "rs_fabric_connect");
}

/* The hosts' congestion control: DCQCN (DcqcnParams.paper() of rdmasim.cc, CNPs at most every
 * 50 us per QP, DSCP 48) or HPCC (HpccParams.paper(): INT stacks in the packets, no CNPs). */
static void set_cc(fabric *f, int kind)
{
    const rs_dcqcn_params d = {.g = 1.0 / 256, .initial_alpha = 1.0, .alpha_timer_ps = 55000000,
                               .rate_timer_ps = 55000000, .byte_counter_bytes = 10000000,
                               .fast_recovery_steps = 5, .ai_bps = 40e6, .hai_bps = 400e6, .min_rate_bps = 1e6,
                               .decrease_scale = 0.5, .clamp_tgt_rate = 1};
    const rs_hpcc_params h = {.eta = 0.95, .max_stage = 5, .fast_react = 1, .base_rtt_ps = 4000000,
                              .min_rate_bps = 1e9, .ack_every = 1};
    for (uint32_t i = 0; i < f->n_hosts; i++)
        check(f->sim,
              kind == RS_CC_HPCC ? rs_host_set_cc(f->sim, (int)i, kind, &h, sizeof(h), 0, 50000000, 48)
                                 : rs_host_set_cc(f->sim, (int)i, kind, &d, sizeof(d), 1, 50000000, 48),
              "rs_host_set_cc");
}

/* A k = 4 fat tree (rdmasim.topology.fat_tree's order: cores, then per pod its edges, aggregations
 * and hosts), split by pod: pod i in partition i % parts, core j in j % parts. */
static void fat_tree(fabric *f, uint32_t parts)
{
    const int k = 4, half = k / 2;
    rs_sim *sim = f->sim;
    int cores[4];
    for (int i = 0; i < half * half; i++) {
        cores[i] = add_switch(sim, 0);
        f->switch_part[cores[i]] = (uint16_t)(i % parts);
    }
    for (int pod = 0; pod < k; pod++) {
        int edge[2], agg[2];
        for (int i = 0; i < half; i++) {
            edge[i] = add_switch(sim, 0);
            f->switch_part[edge[i]] = (uint16_t)(pod % parts);
        }
        for (int i = 0; i < half; i++) {
            agg[i] = add_switch(sim, 0);
            f->switch_part[agg[i]] = (uint16_t)(pod % parts);
        }
        for (int i = 0; i < half; i++)
            for (int j = 0; j < half; j++) {
                int h = check(sim, rs_host_add(sim), "rs_host_add");
                f->host_part[h] = (uint16_t)(pod % parts);
                link_nodes(sim, RS_NODE_HOST, h, RS_NODE_SWITCH, edge[i]);
            }
        for (int i = 0; i < half; i++)
            for (int j = 0; j < half; j++)
                link_nodes(sim, RS_NODE_SWITCH, edge[i], RS_NODE_SWITCH, agg[j]);
        for (int i = 0; i < half; i++)
            for (int j = 0; j < half; j++)
                link_nodes(sim, RS_NODE_SWITCH, agg[i], RS_NODE_SWITCH, cores[i * half + j]);
    }
    f->n_hosts = (uint32_t)(k * k * k / 4);
    f->n_switches = (uint32_t)(half * half + k * k);
}

/* A dumbbell: 8 hosts on each of two switches joined by one link, split by side (side s in
 * partition s; with 4 partitions every other host of a side in partition s + 2: host links cut too). */
static void dumbbell(fabric *f, uint32_t parts)
{
    rs_sim *sim = f->sim;
    int sw[2];
    for (int s = 0; s < 2; s++) {
        sw[s] = add_switch(sim, 16384); /* the incast pauses its senders */
        f->switch_part[sw[s]] = (uint16_t)(s % parts);
    }
    link_nodes(sim, RS_NODE_SWITCH, sw[0], RS_NODE_SWITCH, sw[1]);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 8; i++) {
            int h = check(sim, rs_host_add(sim), "rs_host_add");
            f->host_part[h] = (uint16_t)((s + (parts >= 4 && i % 2 ? 2 : 0)) % parts);
            link_nodes(sim, RS_NODE_HOST, h, RS_NODE_SWITCH, sw[s]);
        }
    f->n_hosts = 16;
    f->n_switches = 2;
}

static void add_flows(fabric *f, uint32_t n, const int32_t *src, const int32_t *dst, const uint64_t *size,
                      const int64_t *start)
{
    uint8_t verb[64], prio[64];
    int64_t hold[64];
    for (uint32_t i = 0; i < n; i++) {
        verb[i] = RS_FLOW_WRITE;
        prio[i] = PRIO;
        hold[i] = 0;
    }
    /* add_flows' defaults: MTU 1024, timeout 14, 7 retries, RNR timer 12, one READ credit, go-back-N */
    rs_flow_cfg cfg = {.path_mtu = 3, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 12,
                       .max_rd_atomic = 1};
    check(f->sim, rs_flows_add(f->sim, n, src, dst, size, start, hold, verb, prio, NULL, NULL, 0, NULL, NULL, NULL,
                               &cfg),
          "rs_flows_add");
}

/* Fat tree: a permutation (host i to a host of another pod), starts spread over 0..6 us so that
 * flow starts (global events) fall between windows mid-run. */
static void fat_tree_flows(fabric *f, uint64_t scale)
{
    int32_t src[16], dst[16];
    uint64_t size[16];
    int64_t start[16];
    for (int i = 0; i < 16; i++) {
        src[i] = i;
        dst[i] = (i + 5) % 16; /* other pod: 4 hosts a pod */
        size[i] = (48 * 1024 + 4096 * (uint64_t)(i % 3)) * scale;
        start[i] = (int64_t)(i % 4) * 2000000;
    }
    add_flows(f, 16, src, dst, size, start);
}

/* Dumbbell: a 6-to-1 incast across the middle (queues, ECN marks, CNPs and PFC pauses), and a
 * reverse flow and a local pair started later. */
static void dumbbell_flows(fabric *f, uint64_t scale)
{
    int32_t src[9] = {0, 1, 2, 3, 4, 5, 9, 10, 12};
    int32_t dst[9] = {8, 8, 8, 8, 8, 8, 1, 11, 3};
    uint64_t size[9];
    int64_t start[9];
    for (int i = 0; i < 9; i++) {
        size[i] = (32 * 1024 + 8192 * (uint64_t)(i % 2)) * scale;
        start[i] = i < 6 ? (int64_t)i * 500000 : 3000000 + (int64_t)i * 1500000;
    }
    add_flows(f, 9, src, dst, size, start);
}

typedef struct scenario {
    const char *name;
    void (*build)(fabric *, uint32_t);
    void (*flows)(fabric *, uint64_t);
    int cc; /* enum rs_cc_kind */
} scenario;

/* Build, partition (parts 1: one queue, the split-independent keys), run the flows to the end. */
static outcome run(const scenario *sc, uint32_t parts, uint32_t threads, uint64_t scale)
{
    fabric f = {.sim = rs_sim_new(7)};
    if (!f.sim) {
        fprintf(stderr, "rs_sim_new failed\n");
        exit(2);
    }
    check(f.sim, rs_sim_set_partitions(f.sim, 1, threads, NULL, 0, NULL, 0), "rs_sim_set_partitions(1)");
    sc->build(&f, parts);
    set_cc(&f, sc->cc);
    sc->flows(&f, scale);
    if (parts > 1)
        check(f.sim,
              rs_sim_set_partitions(f.sim, parts, threads, f.host_part, f.n_hosts, f.switch_part, f.n_switches),
              "rs_sim_set_partitions");
    rs_flows_stop_when_done(f.sim, 1);
    rs_run_args a = {.until_ps = INT64_MAX, .watch_host = -1};
    int reason = rs_sim_run(f.sim, &a);
    if (reason == RS_RUN_FLOWS_DONE) { /* the rest of that instant, as run_flows does */
        a.until_ps = rs_sim_now(f.sim);
        reason = rs_sim_run(f.sim, &a);
    }
    if (reason == RS_RUN_ERROR) {
        fprintf(stderr, "%s parts %u threads %u: run failed: %s\n", sc->name, parts, threads, rs_sim_errmsg(f.sim));
        exit(2);
    }
    outcome o = {0};
    rs_flows_counts c;
    rs_flows_get_counts(f.sim, &c);
    o.n_flows = c.total;
    o.flows = calloc(c.total, sizeof(rs_flow_result));
    check(f.sim, rs_flows_results(f.sim, 0, (uint32_t)c.total, o.flows), "rs_flows_results");
    for (o.n_links = 0;; o.n_links++) {
        rs_link_stats st;
        if (rs_link_get_stats(f.sim, (int)o.n_links, &st) != 0)
            break;
    }
    o.links = calloc(o.n_links + 1, sizeof(rs_link_stats));
    for (uint32_t i = 0; i < o.n_links; i++)
        check(f.sim, rs_link_get_stats(f.sim, (int)i, &o.links[i]), "rs_link_get_stats");
    o.now = rs_sim_now(f.sim);
    o.events = rs_sim_events(f.sim);
    o.n_par = rs_sim_par_stats(f.sim, o.par, 64);
    if (c.finished != c.total || c.failed) {
        fprintf(stderr, "%s parts %u threads %u: %" PRIu64 " of %" PRIu64 " flows finished, %" PRIu64 " failed\n",
                sc->name, parts, threads, c.finished, c.total, c.failed);
        exit(2);
    }
    rs_sim_free(f.sim);
    return o;
}

static void outcome_free(outcome *o)
{
    free(o->flows);
    free(o->links);
}

/* The differences of b from the reference a, printed: how many. */
static int compare(const char *what, const outcome *a, const outcome *b)
{
    int bad = 0;
    if (a->n_flows != b->n_flows || a->n_links != b->n_links) {
        printf("%s: %" PRIu64 " flows, %u links; reference %" PRIu64 ", %u\n", what, b->n_flows, b->n_links,
               a->n_flows, a->n_links);
        return 1;
    }
    for (uint64_t i = 0; i < a->n_flows; i++) {
        const rs_flow_result *x = &a->flows[i], *y = &b->flows[i];
        if (memcmp(x, y, sizeof(*x)) != 0) {
            printf("%s: flow %" PRIu64 ": start %" PRId64 " finish %" PRId64 " bytes %" PRIu64 " retx %" PRIu64
                   " cnps %" PRIu64 " pause %" PRId64 " status %u; reference %" PRId64 " %" PRId64 " %" PRIu64
                   " %" PRIu64 " %" PRIu64 " %" PRId64 " %u\n",
                   what, i, y->start_ps, y->finish_ps, y->bytes_delivered, y->retx_pkts, y->cnps, y->pause_ps,
                   y->status, x->start_ps, x->finish_ps, x->bytes_delivered, x->retx_pkts, x->cnps, x->pause_ps,
                   x->status);
            bad++;
        }
    }
    for (uint32_t i = 0; i < a->n_links; i++) {
        const rs_link_stats *x = &a->links[i], *y = &b->links[i];
        if (memcmp(x, y, sizeof(*x)) != 0) {
            printf("%s: link %u: frames %" PRIu64 " bytes %" PRIu64 " busy %" PRId64 " delivered %" PRIu64
                   "; reference %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRIu64 "\n",
                   what, i, y->frames, y->bytes, y->busy_ps, y->delivered, x->frames, x->bytes, x->busy_ps,
                   x->delivered);
            bad++;
        }
    }
    if (a->now != b->now || a->events != b->events) {
        printf("%s: now %" PRId64 " events %" PRIu64 "; reference %" PRId64 " %" PRIu64 "\n", what, b->now, b->events,
               a->now, a->events);
        bad++;
    }
    return bad;
}

int main(int argc, char **argv)
{
    uint64_t scale = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    if (scale < 1 || scale > 1000) {
        fprintf(stderr, "scale %s: allowed 1..1000\n", argv[1]);
        return 2;
    }
    const scenario scs[] = {{"fat-tree k=4 permutation, DCQCN", fat_tree, fat_tree_flows, RS_CC_DCQCN},
                            {"dumbbell incast, DCQCN", dumbbell, dumbbell_flows, RS_CC_DCQCN},
                            {"fat-tree k=4 permutation, HPCC", fat_tree, fat_tree_flows, RS_CC_HPCC}};
    const uint32_t splits[][2] = {{2, 1}, {2, 2}, {4, 2}, {4, 3}, {4, 4}}; /* partitions, threads */
    int bad = 0;
    for (size_t s = 0; s < sizeof(scs) / sizeof(scs[0]); s++) {
        outcome ref = run(&scs[s], 1, 1, scale);
        uint64_t cnps = 0;
        int64_t pause = 0;
        for (uint64_t i = 0; i < ref.n_flows; i++) {
            cnps += ref.flows[i].cnps;
            pause += ref.flows[i].pause_ps;
        }
        printf("%s: %" PRIu64 " flows, %" PRIu64 " events, finished at %" PRId64 " ps, %" PRIu64
               " CNPs, senders paused %" PRId64 " ps\n",
               scs[s].name, ref.n_flows, ref.events, ref.now, cnps, pause);
        for (size_t k = 0; k < sizeof(splits) / sizeof(splits[0]); k++) {
            outcome o = run(&scs[s], splits[k][0], splits[k][1], scale);
            char what[128];
            snprintf(what, sizeof(what), "%s, partitions %u threads %u", scs[s].name, splits[k][0], splits[k][1]);
            int d = compare(what, &ref, &o);
            /* rs_sim_par_stats: runs, jobs, barriers, windows, global events, ..., the CPU of the
             * partitions in jobs (8) and, per job, of its busiest thread (9): below the sum when
             * more than one thread ran partitions */
            int shared = splits[k][1] > 1 && o.n_par > 9 && o.par[9] < o.par[8];
            printf("%s: %s (jobs %" PRIu64 ", windows %" PRIu64 ", global events %" PRIu64 ")%s\n", what,
                   d ? "DIFFERENT" : "identical", o.n_par > 1 ? o.par[1] : 0, o.n_par > 3 ? o.par[3] : 0,
                   o.n_par > 4 ? o.par[4] : 0, shared ? " threads shared jobs" : "");
            bad += d;
            outcome_free(&o);
        }
        outcome_free(&ref);
    }
    return bad ? 1 : 0;
}
