/* The engine's context (engine.h): failure reasons and arming timers. */
#include "engine/engine.h"

#include <stdarg.h>
#include <stdio.h>

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
    if (rs_timer_arm_seq(&e->evq, tm, t_ps, seq) != 0) {
        e->failed = 1;
        rs_engine_fail(e, RS_ERR_NOMEM, "out of memory growing the event queue");
    }
}

void rs_engine_arm(rs_engine *e, rs_timer *tm, int64_t t_ps)
{
    rs_engine_arm_seq(e, tm, t_ps, e->evq.next_seq++);
}
