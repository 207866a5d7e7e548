/* The engine's context (engine.h): failure reasons and arming timers. */
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int rs_engine_init(rs_engine *e, size_t queue_cap)
{
    e->ent_count = calloc(1, sizeof(uint64_t));
    if (!e->ent_count || rs_eventq_init(&e->evq, queue_cap) != 0) {
        free(e->ent_count);
        e->ent_count = NULL;
        return -1;
    }
    e->n_ent = 1;
    rs_engine_enter(e, RS_ENT_CONTROL);
    return 0;
}

void rs_engine_free(rs_engine *e)
{
    rs_eventq_free(&e->evq);
    free(e->ent_count);
    e->ent_count = NULL;
    e->count = NULL;
    e->n_ent = 0;
}

int rs_engine_ents(rs_engine *e, uint32_t n_ent)
{
    if (n_ent > e->n_ent) {
        if (n_ent - 1 > RS_ENT_MAX)
            return -1;
        uint64_t *k = realloc(e->ent_count, (size_t)n_ent * sizeof(uint64_t));
        if (!k)
            return -1;
        for (uint32_t i = e->n_ent; i < n_ent; i++)
            k[i] = 0;
        e->ent_count = k;
        e->n_ent = n_ent;
    }
    rs_engine_enter(e, RS_ENT_CONTROL);
    return 0;
}

int rs_engine_vfail(rs_engine *e, int code, const char *fmt, va_list ap)
{
    vsnprintf(e->errmsg, sizeof(e->errmsg), fmt, ap);
    return code;
}

int rs_engine_fail(rs_engine *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rs_engine_vfail(e, code, fmt, ap);
    va_end(ap);
    return code;
}

void rs_engine_arm_seq(rs_engine *e, rs_timer *tm, int64_t t_ps, uint64_t seq)
{
    if (t_ps < e->now_ps) { /* a time sum wrapped (or a past time): the clock must never go back */
        e->failed = 1;
        rs_engine_fail(e, RS_ERR_INVAL, "timer armed at %lld ps, before now (%lld ps): a time overflowed",
                       (long long)t_ps, (long long)e->now_ps);
        return;
    }
    rs_eventq *q = e->qs ? rs_engine_route(e, tm, t_ps) : &e->evq;
    if (!q)
        return; /* the lookahead broken: failed */
    if (rs_timer_arm_seq(q, tm, t_ps, seq) != 0) {
        e->failed = 1;
        rs_engine_fail(e, RS_ERR_NOMEM, "out of memory growing the event queue");
    }
}

void rs_engine_arm(rs_engine *e, rs_timer *tm, int64_t t_ps)
{
    rs_engine_arm_seq(e, tm, t_ps, rs_engine_next_key(e, t_ps));
}

rs_eventq *rs_engine_route(rs_engine *e, const rs_timer *tm, int64_t t_ps)
{
    const uint32_t g = e->n_q - 1; /* the global queue */
    /* a control-path timer armed inside a window, for a time in it (the flow table freeing a
     * finished flow's QP pair now), stays with the partition that armed it; later, it is global */
    int inside = e->cur_q != g && t_ps < e->win_end;
    uint32_t to = tm->ent == RS_ENT_CONTROL ? (inside ? e->cur_q : g) : e->ent_q[tm->ent];
    if (inside && to != e->cur_q) {
        e->failed = 1;
        rs_engine_fail(e, RS_ERR_INVAL,
                       "a partitioned run armed an event of another partition at %lld ps, inside the window "
                       "ending at %lld ps: a link between partitions is shorter than the lookahead",
                       (long long)t_ps, (long long)e->win_end);
        return NULL;
    }
    return e->qs[to];
}
