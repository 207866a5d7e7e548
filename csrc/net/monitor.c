/* PFC watchdog and deadlock detector (see monitor.h).
 *
 * Watchdog, per switch egress (port, priority), at every poll:
 *   queue paused, non-empty, nothing sent since the last poll -> stalled (since the first such poll)
 *   stalled for >= detect time -> STORMED: flush the queue (drops counted as "watchdog"), drop what
 *   arrives for it and ignore pause until now + restore time
 *   otherwise -> not stalled
 * Deadlock: a wait-for graph over egress queues that are paused and non-empty; E = (S, p, prio) waits
 * on E' = (S', x, prio) when S' is the peer of port p, S' is pausing p's ingress queue (it sent XOFF)
 * and E' holds a packet that came in on that ingress port.  A cycle is a deadlock: it never clears. */
#include "net/monitor.h"

#include <stdlib.h>

#include "core/sim_impl.h"
#include "net/switch.h"

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

void rs_monitor_resume(rs_sim *sim)
{
    rs_monitor *m = sim->monitor;
    if (!m || m->tick.armed)
        return;
    if (m->wd_poll_ps > 0 && m->next_wd_ps < sim->now_ps)
        m->next_wd_ps = sim->now_ps + m->wd_poll_ps;
    if (m->dl_period_ps > 0 && m->next_dl_ps < sim->now_ps)
        m->next_dl_ps = sim->now_ps + m->dl_period_ps;
    if (m->sample_period_ps > 0 && m->next_sample_ps < sim->now_ps)
        m->next_sample_ps = sim->now_ps;
    int64_t t = next_due(m);
    if (t != INT64_MAX)
        rs_sim_arm(sim, &m->tick, t);
}

static void watchdog(rs_sim *sim, rs_monitor *m)
{
    for (uint32_t s = 0; s < sim->n_switches; s++) {
        rs_switch *sw = sim->switches[s];
        for (uint32_t p = 0; p < sw->n_used; p++) {
            rs_swport *sp = &sw->ports[p];
            for (uint32_t i = 0; i < RS_NPRIO; i++) {
                int stuck = (sp->port.paused_mask & (1u << i)) && sp->q_head[i] &&
                            sp->tx_prio[i] == sp->wd_last_tx[i] && sp->wd_storm_until[i] <= sim->now_ps;
                sp->wd_last_tx[i] = sp->tx_prio[i];
                if (!stuck) {
                    sp->wd_stalled_since[i] = -1;
                    continue;
                }
                if (sp->wd_stalled_since[i] < 0) {
                    sp->wd_stalled_since[i] = sim->now_ps - m->wd_poll_ps; /* no progress over the last poll */
                }
                if (sim->now_ps - sp->wd_stalled_since[i] >= m->wd_detect_ps) {
                    sp->stats.wd_storms++;
                    sp->wd_storm_until[i] = sim->now_ps + m->wd_restore_ps;
                    sp->wd_stalled_since[i] = -1;
                    rs_switch_flush_queue(sim, sw, p, i, RS_SWDROP_WATCHDOG);
                }
            }
        }
    }
}

/* ---- deadlock detector ---- */

static int scratch(rs_sim *sim, rs_monitor *m)
{
    uint32_t n = 0;
    uint32_t *base = realloc(m->node_base, (sim->n_switches + 1) * sizeof(uint32_t));
    if (!base)
        return -1;
    m->node_base = base;
    for (uint32_t s = 0; s < sim->n_switches; s++) {
        base[s] = n;
        n += sim->switches[s]->cfg.n_ports * RS_NPRIO;
    }
    base[sim->n_switches] = n;
    if (n == m->n_nodes && m->color)
        return 0;
    free(m->color);
    free(m->parent);
    free(m->stack_node);
    free(m->stack_next);
    m->color = malloc(n + 1);
    m->parent = malloc((n + 1) * sizeof(int32_t));
    m->stack_node = malloc((n + 1) * sizeof(uint32_t));
    m->stack_next = malloc((n + 1) * sizeof(uint32_t));
    m->n_nodes = n;
    return (m->color && m->parent && m->stack_node && m->stack_next) ? 0 : -1;
}

static void node_ref(const rs_sim *sim, const rs_monitor *m, uint32_t v, uint32_t *s, uint32_t *p, uint32_t *i)
{
    uint32_t k = 0;
    while (k + 1 < sim->n_switches && m->node_base[k + 1] <= v)
        k++;
    *s = k;
    *p = (v - m->node_base[k]) / RS_NPRIO;
    *i = (v - m->node_base[k]) % RS_NPRIO;
}

/* A node of the wait-for graph: egress queue paused (by a pause it obeys) and holding packets. */
static int blocked(const rs_switch *sw, uint32_t p, uint32_t i)
{
    const rs_swport *sp = &sw->ports[p];
    return (sp->port.paused_mask & (1u << i)) && sp->q_head[i] != NULL;
}

static int holds_from(const rs_swport *sp, uint32_t prio, uint16_t in_port)
{
    for (const rs_pkt *q = sp->q_head[prio]; q; q = q->next)
        if (q->sw_in_port == in_port)
            return 1;
    return 0;
}

/* Successor of node v number `k` onwards: returns the node, or -1; *k advances. */
static int64_t next_succ(rs_sim *sim, rs_monitor *m, uint32_t v, uint32_t *k)
{
    uint32_t s, p, i;
    node_ref(sim, m, v, &s, &p, &i);
    const rs_port *port = &sim->switches[s]->ports[p].port;
    if (!port->tx || port->tx->to->owner_kind != RS_NODE_SWITCH)
        return -1;
    const rs_port *peer = port->tx->to;
    rs_switch *ds = peer->sw;
    if (!ds->ports[peer->index].pfc[i].pausing)
        return -1;
    for (; *k < ds->n_used; (*k)++) {
        uint32_t x = *k;
        if (blocked(ds, x, i) && holds_from(&ds->ports[x], i, peer->index)) {
            (*k)++;
            return (int64_t)m->node_base[ds->id] + x * RS_NPRIO + i;
        }
    }
    return -1;
}

static void record(rs_sim *sim, rs_monitor *m, uint32_t from, uint32_t to)
{
    /* back edge from -> to: the cycle is to ... from along the parent chain */
    uint32_t chain[RS_DEADLOCK_MAX_CYCLE];
    int n = 0;
    for (int64_t v = from; n < RS_DEADLOCK_MAX_CYCLE; v = m->parent[v]) {
        chain[n++] = (uint32_t)v;
        if ((uint32_t)v == to || m->parent[v] < 0)
            break;
    }
    m->dl_time_ps = sim->now_ps;
    m->dl_len = n;
    for (int j = 0; j < n; j++) {
        uint32_t s, p, i;
        node_ref(sim, m, chain[n - 1 - j], &s, &p, &i);
        m->dl_cycle[j] = (rs_queue_ref){(int32_t)s, (int32_t)p, (int32_t)i};
    }
}

static void detect(rs_sim *sim, rs_monitor *m)
{
    if (!sim->n_switches)
        return;
    if (scratch(sim, m) != 0) {
        sim->failed = 1;
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory in the deadlock detector");
        return;
    }
    for (uint32_t v = 0; v < m->n_nodes; v++) {
        m->color[v] = 0;
        m->parent[v] = -1;
    }
    for (uint32_t s = 0; s < sim->n_switches; s++) {
        rs_switch *sw = sim->switches[s];
        for (uint32_t p = 0; p < sw->n_used; p++) {
            for (uint32_t i = 0; i < RS_NPRIO; i++) {
                uint32_t root = m->node_base[s] + p * RS_NPRIO + i;
                if (m->color[root] || !blocked(sw, p, i))
                    continue;
                uint32_t top = 0;
                m->stack_node[0] = root;
                m->stack_next[0] = 0;
                m->color[root] = 1;
                while (1) {
                    uint32_t v = m->stack_node[top];
                    int64_t w = next_succ(sim, m, v, &m->stack_next[top]);
                    if (w < 0) {
                        m->color[v] = 2;
                        if (top == 0)
                            break;
                        top--;
                        continue;
                    }
                    if (m->color[w] == 1) {
                        record(sim, m, v, (uint32_t)w);
                        return;
                    }
                    if (m->color[w] == 0) {
                        m->color[w] = 1;
                        m->parent[w] = (int32_t)v;
                        m->stack_node[++top] = (uint32_t)w;
                        m->stack_next[top] = 0;
                    }
                }
            }
        }
    }
}

static void sample(rs_sim *sim, rs_monitor *m)
{
    if (m->n_samples >= m->max_samples) {
        m->samples_missed++;
        return;
    }
    size_t row = (size_t)m->n_samples * m->n_probes;
    m->s_t[m->n_samples] = sim->now_ps;
    for (uint32_t k = 0; k < m->n_probes; k++) {
        const rs_queue_ref *q = &m->probes[k];
        const rs_switch *sw = sim->switches[q->sw];
        size_t i = (size_t)q->port * RS_NPRIO + (size_t)q->prio;
        m->s_egress[row + k] = sw->mmu.eg_bytes[i];
        m->s_ingress[row + k] = sw->mmu.in_bytes[i] + sw->mmu.hdrm_bytes[i];
        m->s_paused[row + k] = (uint8_t)((sw->ports[q->port].port.paused_mask >> q->prio) & 1u);
    }
    m->n_samples++;
}

void rs_monitor_tick(rs_sim *sim, rs_monitor *m)
{
    if (m->sample_period_ps > 0 && sim->now_ps >= m->next_sample_ps) {
        sample(sim, m);
        m->next_sample_ps = sim->now_ps + m->sample_period_ps;
    }
    if (m->wd_poll_ps > 0 && sim->now_ps >= m->next_wd_ps) {
        watchdog(sim, m);
        m->next_wd_ps = sim->now_ps + m->wd_poll_ps;
    }
    if (m->dl_period_ps > 0 && m->dl_time_ps < 0 && sim->now_ps >= m->next_dl_ps) {
        detect(sim, m);
        m->next_dl_ps = sim->now_ps + m->dl_period_ps;
    }
    int64_t t = next_due(m);
    /* only while something else is going on: a quiet network must still go idle */
    if (t != INT64_MAX && rs_eventq_peek_time(&sim->evq) != INT64_MAX)
        rs_sim_arm(sim, &m->tick, t);
}
