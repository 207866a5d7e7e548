/* PFC watchdog (protocol.md 6.4), polled by the monitor timer.
 *
 * Per switch egress (port, priority), at every poll:
 *   queue paused, non-empty, nothing sent since the last poll -> stalled (since the previous poll)
 *   stalled for >= detect time -> STORMED: flush the queue (drops counted as "watchdog"), drop what
 *   arrives for it and ignore pause until now + restore time (switch.c checks q[prio].wd_storm_until)
 *   otherwise -> not stalled */
#include "link/net.h"
#include "link/monitor.h"
#include "link/switch.h"

void rs_watchdog_poll(rs_net *net, rs_monitor *m)
{
    for (uint32_t s = 0; s < net->n_switches; s++) {
        rs_switch *sw = net->switches[s];
        for (uint32_t p = 0; p < sw->n_used; p++) {
            rs_swport *sp = &sw->ports[p];
            for (uint32_t i = 0; i < RS_NPRIO; i++) {
                int stuck = (sp->port.paused_mask & (1u << i)) && sp->q[i].head &&
                            sp->q[i].tx_pkts == sp->wd_last_tx[i] && sp->q[i].wd_storm_until <= net->eng.now_ps;
                sp->wd_last_tx[i] = sp->q[i].tx_pkts;
                if (!stuck) {
                    sp->wd_stalled_since[i] = -1;
                    continue;
                }
                if (sp->wd_stalled_since[i] < 0) {
                    sp->wd_stalled_since[i] = net->eng.now_ps - m->wd_poll_ps; /* no progress over the last poll */
                }
                if (net->eng.now_ps - sp->wd_stalled_since[i] >= m->wd_detect_ps) {
                    sp->stats.wd_storms++;
                    sp->q[i].wd_storm_until = net->eng.now_ps + m->wd_restore_ps;
                    sp->wd_stalled_since[i] = -1;
                    rs_switch_flush_queue(net, sw, p, i, RS_SWDROP_WATCHDOG);
                }
            }
        }
    }
}
