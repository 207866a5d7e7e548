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

typedef struct rs_engine {
    int64_t now_ps;
    uint64_t seed;          /* every RNG stream is seeded from (seed, component id) */
    rs_eventq evq;
    struct rs_trace *trace; /* NULL: tracing off (engine/trace.h) */
    int failed;             /* set on an internal failure (out of memory): the run stops */
    char errmsg[256];
#ifdef RDMASIM_MUTANTS
    int mutant; /* enum rs_mutant: testing only (rdmasim/mutants.h) */
#endif
} rs_engine;

/* Record a failure reason; returns `code` for tail calls. */
int rs_engine_fail(rs_engine *e, int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

int rs_engine_vfail(rs_engine *e, int code, const char *fmt, va_list ap);

/* Arm a timer on the queue; a time before now or out of memory marks the run failed. */
void rs_engine_arm(rs_engine *e, rs_timer *tm, int64_t t_ps);
/* The same with a sequence number reserved earlier (rs_eventq_reserve_seq, rs_timer_arm_seq). */
void rs_engine_arm_seq(rs_engine *e, rs_timer *tm, int64_t t_ps, uint64_t seq);

#endif
