/* The engine's context: the clock, the event queue, the trace buffer and the run's failure
 * state.  Every layer above reaches time and events through it; the simulation (sim/) embeds
 * one and passes it down.  Nothing here knows a packet, a port or a QP. */
#ifndef RDMASIM_ENGINE_ENGINE_H
#define RDMASIM_ENGINE_ENGINE_H

#include <stdarg.h>
#include <stdint.h>

#include "rdmasim/base.h"
#include "rdmasim/eventq.h"
#include "rdmasim/mutants.h"

struct rs_trace;

/* The order of simultaneous events depends on the model alone.  An entry's `seq` is its key,
 * (rank << RS_ENT_SHIFT) | count: the entity is the one whose event is being handled when the
 * entry is armed (its timer's `ent`: a host or a switch) or RS_ENT_CONTROL (calls on the control
 * path, between runs), `count` how many arms that entity made before, and `rank` the entity's
 * place in the epoch of the entry's time (2^RS_ENT_EPOCH_SHIFT ps): a bijection of the entity id
 * drawn from (epoch, seed), so that no node wins every tie and every order of nodes is as likely (a fixed order of entities favoured
 * the lowest host in every incast).  Not per picosecond: within an epoch entries are mostly armed
 * in key order (the arming events ran in rank order too), which keeps the wheel's sort of a
 * bucket cheap; a new order every picosecond cost 22 % more instructions per packet.  Each
 * entity's events are handled in an order that depends only on the model (by induction over the
 * event order), so its arms take the same keys however the fabric is split into partitions and
 * whatever a partition's queue held besides.  Keys are unique: for one time, distinct entities
 * have distinct ranks.  An entity makes at most 2^40 arms in a run. */
#define RS_ENT_SHIFT 40
#define RS_ENT_CONTROL 0u
#define RS_ENT_MAX ((1u << (64 - RS_ENT_SHIFT)) - 1u)
#define RS_ENT_EPOCH_SHIFT 24 /* ranks change every 2^24 ps (16.8 us) */
/* Entity ids of hosts and switches (a port's, link's or QP's is its node's). */
static inline uint32_t rs_ent_host(int32_t host) { return 1u + 2u * (uint32_t)host; }
static inline uint32_t rs_ent_switch(int32_t sw) { return 2u + 2u * (uint32_t)sw; }

typedef struct rs_engine {
    int64_t now_ps;
    uint64_t *count;        /* arms so far of the entity whose event is being handled: &ent_count[ent] */
    uint64_t *ent_count;    /* by entity id (index 0: the control path) */
    uint32_t cur_ent;       /* that entity */
    uint32_t n_ent;         /* entries of ent_count */
    uint64_t seed;          /* every RNG stream is seeded from (seed, component id) */
    rs_eventq evq;
    struct rs_trace *trace; /* NULL: tracing off (engine/trace.h) */
    /* A partitioned run (sim/par.c; NULL/0 otherwise): the queues of the partitions and of the
     * global events (index n_q - 1: the control path's timers, the flow table's), the queue of
     * each entity's timers, and which queue is this engine's own (`evq`; qs[cur_q] points at it):
     * each partition has its engine, the global queue is the simulation's. */
    rs_eventq **qs;
    const uint16_t *ent_q;
    uint32_t n_q;
    uint32_t cur_q;
    int64_t win_end; /* the current window ends here: an arm for another partition before it breaks
                      * the lookahead */
    int failed;             /* set on an internal failure (out of memory): the run stops */
    char errmsg[256];
#ifdef RDMASIM_MUTANTS
    int mutant; /* enum rs_mutant: testing only (rdmasim/mutants.h) */
#endif
} rs_engine;

/* Set up the queue and the control path's key; 0, or -1 out of memory. */
int rs_engine_init(rs_engine *e, size_t queue_cap);
void rs_engine_free(rs_engine *e);
/* Make room for the keys of entities 0..n_ent-1 (before a run: never in the loop); the control
 * path becomes the current entity.  0, or -1 out of memory (or more than RS_ENT_MAX entities). */
int rs_engine_ents(rs_engine *e, uint32_t n_ent);
/* Events of `ent` are being handled now (ent < n_ent); RS_ENT_CONTROL between runs. */
static inline void rs_engine_enter(rs_engine *e, uint32_t ent)
{
    e->count = &e->ent_count[ent];
    e->cur_ent = ent;
}
/* The key of `ent`'s arm number `count` for time t_ps (see above). */
static inline uint64_t rs_engine_key(uint64_t seed, uint32_t ent, uint64_t count, int64_t t_ps)
{
    /* the seed spread over all bits first: epochs 0..n xor a small seed would be the same n
     * values for every seed, in another order (the same orders of nodes in every run) */
    uint64_t h = ((uint64_t)(t_ps >> RS_ENT_EPOCH_SHIFT) ^ (seed * 0xD6E8FEB86659FD93ull)) * 0x9E3779B97F4A7C15ull;
    /* a bijection of the 24-bit id (the epoch's xor, an odd factor, a xor-shift right, an odd
     * factor): the shift and the second factor carry the high bits back down, so that the ids of
     * a few nodes (1, 3, 5, ...) take every order about equally often over the epochs.  The xor
     * and one factor alone gave 8 of the 24 orders of four hosts, put a switch first among four
     * hosts in 15 % of the epochs instead of 20 %, and in a 4:1 DCTCP incast one sender's mean
     * rate over 60 seeds 7 % below the fair share; a multiply before the xor instead left the
     * even hosts ahead there */
    uint64_t x = ((ent ^ (h >> RS_ENT_SHIFT)) * 0x5BD1E995ull) & RS_ENT_MAX;
    x ^= x >> 12;
    x = (x * 0x9E3779B1ull) & RS_ENT_MAX;
    return x << RS_ENT_SHIFT | count;
}
/* The current entity's next key for time t_ps: for an arm now, or reserved for one later
 * (rs_engine_arm_seq). */
static inline uint64_t rs_engine_next_key(rs_engine *e, int64_t t_ps)
{
    return rs_engine_key(e->seed, e->cur_ent, (*e->count)++, t_ps);
}

/* Record a failure reason; returns `code` for tail calls. */
int rs_engine_fail(rs_engine *e, int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

int rs_engine_vfail(rs_engine *e, int code, const char *fmt, va_list ap);

/* The queue a timer armed now at t_ps goes to in a partitioned run (sim/par.c). */
rs_eventq *rs_engine_route(rs_engine *e, const rs_timer *tm, int64_t t_ps);

/* Arm a timer on the queue; a time before now or out of memory marks the run failed. */
void rs_engine_arm(rs_engine *e, rs_timer *tm, int64_t t_ps);
/* The same with a sequence number reserved earlier (rs_eventq_reserve_seq, rs_timer_arm_seq). */
void rs_engine_arm_seq(rs_engine *e, rs_timer *tm, int64_t t_ps, uint64_t seq);

#endif
