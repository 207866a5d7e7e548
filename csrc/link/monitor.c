/* The fabric monitor's timer (see monitor.h): one periodic event that runs, when each is due, the
 * PFC watchdog (watchdog.c), the deadlock detector (deadlock.c) and the queue sampler (sampler.c),
 * and the control-path calls that configure them. */
#include "link/monitor.h"

#include <stdlib.h>

#include "link/net.h"
#include "link/switch.h"

void rs_monitor_free(rs_monitor *m)
{
    if (!m)
        return;
    free(m->node_base);
    free(m->color);
    free(m->parent);
    free(m->stack_node);
    free(m->stack_next);
    free(m->probes);
    free(m->s_t);
    free(m->s_egress);
    free(m->s_ingress);
    free(m->s_paused);
    free(m);
}

static int64_t next_due(const rs_monitor *m)
{
    int64_t t = INT64_MAX;
    if (m->wd_poll_ps > 0 && m->next_wd_ps < t)
        t = m->next_wd_ps;
    if (m->dl_period_ps > 0 && m->dl_time_ps < 0 && m->next_dl_ps < t)
        t = m->next_dl_ps;
    if (m->sample_period_ps > 0 && m->next_sample_ps < t)
        t = m->next_sample_ps;
    return t;
}

void rs_monitor_resume(rs_net *net)
{
    rs_monitor *m = net->monitor;
    if (!m || m->tick.armed)
        return;
    if (m->wd_poll_ps > 0 && m->next_wd_ps < net->eng.now_ps)
        m->next_wd_ps = net->eng.now_ps + m->wd_poll_ps;
    if (m->dl_period_ps > 0 && m->next_dl_ps < net->eng.now_ps)
        m->next_dl_ps = net->eng.now_ps + m->dl_period_ps;
    if (m->sample_period_ps > 0 && m->next_sample_ps < net->eng.now_ps)
        m->next_sample_ps = net->eng.now_ps;
    int64_t t = next_due(m);
    if (t != INT64_MAX)
        rs_engine_arm(&net->eng, &m->tick, t);
}

void rs_monitor_tick(rs_net *net, rs_monitor *m)
{
    if (m->sample_period_ps > 0 && net->eng.now_ps >= m->next_sample_ps) {
        rs_sampler_take(net, m);
        m->next_sample_ps = net->eng.now_ps + m->sample_period_ps;
    }
    if (m->wd_poll_ps > 0 && net->eng.now_ps >= m->next_wd_ps) {
        rs_watchdog_poll(net, m);
        m->next_wd_ps = net->eng.now_ps + m->wd_poll_ps;
    }
    if (m->dl_period_ps > 0 && m->dl_time_ps < 0 && net->eng.now_ps >= m->next_dl_ps) {
        rs_deadlock_check(net, m);
        m->next_dl_ps = net->eng.now_ps + m->dl_period_ps;
    }
    int64_t t = next_due(m);
    /* only while something else is going on: a quiet network must still go idle */
    if (t != INT64_MAX && rs_eventq_peek_time(&net->eng.evq) != INT64_MAX)
        rs_engine_arm(&net->eng, &m->tick, t);
}

/* ---- control path ---- */

rs_monitor *rs_monitor_get(rs_net *net)
{
    if (!net->monitor) {
        rs_monitor *m = calloc(1, sizeof(*m));
        if (!m)
            return NULL;
        m->tick.owner = m;
        m->tick.kind = RS_EV_MONITOR;
        m->dl_time_ps = -1;
        net->monitor = m;
    }
    return net->monitor;
}

int rs_net_pfc_watchdog(rs_net *net, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps)
{
    if (poll_ps < 0 || (poll_ps > 0 && (detect_ps < poll_ps || restore_ps <= 0)))
        return rs_net_fail(net, RS_ERR_INVAL,
                           "watchdog: poll %lld ps must be >= 0; detect (%lld ps) >= poll; restore (%lld ps) > 0",
                           (long long)poll_ps, (long long)detect_ps, (long long)restore_ps);
    rs_monitor *m = rs_monitor_get(net);
    if (!m)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    m->wd_poll_ps = poll_ps;
    m->wd_detect_ps = detect_ps;
    m->wd_restore_ps = restore_ps;
    m->next_wd_ps = net->eng.now_ps + poll_ps;
    rs_timer_cancel(&m->tick);
    rs_monitor_resume(net);
    return net->eng.failed ? RS_ERR_NOMEM : RS_OK;
}

int rs_net_deadlock_check_now(rs_net *net)
{
    rs_monitor *m = rs_monitor_get(net);
    if (!m)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    if (m->dl_time_ps < 0)
        rs_deadlock_check(net, m);
    return net->eng.failed ? RS_ERR_NOMEM : RS_OK;
}

int rs_net_deadlock_detector(rs_net *net, int64_t period_ps)
{
    if (period_ps < 0)
        return rs_net_fail(net, RS_ERR_INVAL, "deadlock check period %lld ps must be >= 0", (long long)period_ps);
    rs_monitor *m = rs_monitor_get(net);
    if (!m)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    m->dl_period_ps = period_ps;
    m->next_dl_ps = net->eng.now_ps + period_ps;
    rs_timer_cancel(&m->tick);
    rs_monitor_resume(net);
    return net->eng.failed ? RS_ERR_NOMEM : RS_OK;
}
