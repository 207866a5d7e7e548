/* Fabric monitor: one periodic timer per simulation that runs the PFC
 * watchdog, the deadlock detector (protocol.md 6.4) and the queue sampler.  It re-arms only
 * while other events are pending, so a quiet network still goes idle, and
 * resumes at the next rs_sim_run. */
#ifndef RDMASIM_NET_MONITOR_H
#define RDMASIM_NET_MONITOR_H

#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/fabric.h"

struct rs_net;

#define RS_DEADLOCK_MAX_CYCLE 64

typedef struct rs_monitor {
    rs_timer tick;
    int64_t wd_poll_ps, wd_detect_ps, wd_restore_ps; /* watchdog, poll 0 = off */
    int64_t dl_period_ps;                            /* deadlock detector, 0 = off */
    int64_t next_wd_ps, next_dl_ps;
    /* first deadlock found */
    int64_t dl_time_ps;
    int dl_len;
    rs_queue_ref dl_cycle[RS_DEADLOCK_MAX_CYCLE];
    /* sampler: every sample_period_ps, for each probe (switch, port, priority): egress bytes,
     * ingress bytes (incl. headroom), paused (1 if the egress obeys a pause for that priority) */
    int64_t sample_period_ps, next_sample_ps;
    uint32_t n_probes, max_samples, n_samples;
    uint64_t samples_missed;  /* due after the arrays were full */
    rs_queue_ref *probes;
    int64_t *s_t;
    uint64_t *s_egress, *s_ingress;
    uint8_t *s_paused;
    /* detector scratch, sized to the fabric on the control path of a check */
    uint32_t n_nodes;
    uint32_t *node_base;   /* per switch: first node index */
    uint8_t *color;
    int32_t *parent;
    uint32_t *stack_node;
    uint32_t *stack_next;
} rs_monitor;

/* The simulation's monitor, created on first use (NULL on out of memory). */
rs_monitor *rs_monitor_get(struct rs_net *net);
void rs_monitor_free(rs_monitor *m);
/* Arm the tick if the monitor is on and not armed (start of rs_sim_run, after configuration). */
void rs_monitor_resume(struct rs_net *net);
void rs_monitor_tick(struct rs_net *net, rs_monitor *m);
/* The three jobs (watchdog.c, deadlock.c, sampler.c), called by the tick when due. */
void rs_watchdog_poll(struct rs_net *net, rs_monitor *m);
void rs_deadlock_check(struct rs_net *net, rs_monitor *m);
void rs_sampler_take(struct rs_net *net, rs_monitor *m);

#endif
