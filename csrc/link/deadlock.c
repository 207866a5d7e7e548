/* Deadlock detector for lossless fabrics (PFC pauses and InfiniBand credit loops), run by the
 * monitor timer, or once on request (rs_net_deadlock_check_now).
 *
 * A wait-for graph over egress queues that are held back and hold packets:
 * E = (S, p, q) waits on E' = (S', x, q') when S' is the switch at the far end of port p and
 *   - PFC: S' is pausing its ingress queue (port, q) (its PFC machine sent XOFF), E obeys that pause;
 *   - credits (credit.h): E's VL q is stalled for credits of the ingress buffer (port, VL q) of S';
 * and E' holds a packet that came in on that ingress queue (q' differs from q under hop classes and
 * when a credit port's SL -> VL table moves a packet to another VL).
 * A cycle is a deadlock: nothing in it can move again.  Depth-first search with an explicit stack;
 * the first cycle found is kept with its time. */
#include <stdlib.h>

#include "link/net.h"
#include "link/monitor.h"
#include "link/switch.h"

static int scratch(rs_net *net, rs_monitor *m)
{
    uint32_t n = 0;
    uint32_t *base = realloc(m->node_base, (net->n_switches + 1) * sizeof(uint32_t));
    if (!base)
        return -1;
    m->node_base = base;
    for (uint32_t s = 0; s < net->n_switches; s++) {
        base[s] = n;
        n += net->switches[s]->cfg.n_ports * RS_NPRIO;
    }
    base[net->n_switches] = n;
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

static void node_ref(const rs_net *net, const rs_monitor *m, uint32_t v, uint32_t *s, uint32_t *p, uint32_t *i)
{
    uint32_t k = 0;
    while (k + 1 < net->n_switches && m->node_base[k + 1] <= v)
        k++;
    *s = k;
    *p = (v - m->node_base[k]) / RS_NPRIO;
    *i = (v - m->node_base[k]) % RS_NPRIO;
}

/* A node of the wait-for graph: egress queue paused (by a pause it obeys) and holding packets. */
static int blocked(const rs_switch *sw, uint32_t p, uint32_t i)
{
    const rs_swport *sp = &sw->ports[p];
    return (sp->port.paused_mask & (1u << i)) && sp->q[i].head != NULL;
}

/* Egress queue (sp, prio) holds a packet that arrived on (in_port, in_prio) (the two priorities
 * differ under hop classes). */
static int holds_from(const rs_swport *sp, uint32_t prio, uint16_t in_port, uint32_t in_prio)
{
    for (const rs_pkt *q = sp->q[prio].head; q; q = q->next)
        if (q->sw_in_port == in_port && q->sw_in_prio == in_prio)
            return 1;
    return 0;
}

/* Successor of node v number `k` onwards: returns the node, or -1; *k advances. */
static int64_t next_succ(rs_net *net, rs_monitor *m, uint32_t v, uint32_t *k)
{
    uint32_t s, p, i;
    node_ref(net, m, v, &s, &p, &i);
    const rs_port *port = &net->switches[s]->ports[p].port;
    if (!port->tx || port->tx->to->owner_kind != RS_NODE_SWITCH)
        return -1;
    const rs_port *peer = port->tx->to;
    rs_switch *ds = peer->sw;
    /* credit mode: the egress is stalled for credits of exactly that downstream buffer */
    if (!peer->cr && !ds->ports[peer->index].in[i].pfc.pausing)
        return -1;
    for (; *k < ds->n_used * RS_NPRIO; (*k)++) { /* egress queue x, priority j */
        uint32_t x = *k / RS_NPRIO, j = *k % RS_NPRIO;
        if (blocked(ds, x, j) && holds_from(&ds->ports[x], j, peer->index, i)) {
            (*k)++;
            return (int64_t)m->node_base[ds->id] + x * RS_NPRIO + j;
        }
    }
    return -1;
}

static void record(rs_net *net, rs_monitor *m, uint32_t from, uint32_t to)
{
    /* back edge from -> to: the cycle is to ... from along the parent chain */
    uint32_t chain[RS_DEADLOCK_MAX_CYCLE];
    int n = 0;
    for (int64_t v = from; n < RS_DEADLOCK_MAX_CYCLE; v = m->parent[v]) {
        chain[n++] = (uint32_t)v;
        if ((uint32_t)v == to || m->parent[v] < 0)
            break;
    }
    m->dl_time_ps = net->eng.now_ps;
    m->dl_len = n;
    for (int j = 0; j < n; j++) {
        uint32_t s, p, i;
        node_ref(net, m, chain[n - 1 - j], &s, &p, &i);
        m->dl_cycle[j] = (rs_queue_ref){(int32_t)s, (int32_t)p, (int32_t)i};
    }
}

void rs_deadlock_check(rs_net *net, rs_monitor *m)
{
    if (!net->n_switches)
        return;
    if (scratch(net, m) != 0) {
        net->eng.failed = 1;
        rs_net_fail(net, RS_ERR_NOMEM, "out of memory in the deadlock detector");
        return;
    }
    for (uint32_t v = 0; v < m->n_nodes; v++) {
        m->color[v] = 0;
        m->parent[v] = -1;
    }
    for (uint32_t s = 0; s < net->n_switches; s++) {
        rs_switch *sw = net->switches[s];
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
                    int64_t w = next_succ(net, m, v, &m->stack_next[top]);
                    if (w < 0) {
                        m->color[v] = 2;
                        if (top == 0)
                            break;
                        top--;
                        continue;
                    }
                    if (m->color[w] == 1) {
                        record(net, m, v, (uint32_t)w);
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

int rs_net_deadlock_result(const rs_net *net, int64_t *t_ps, rs_queue_ref *cycle, int cap)
{
    const rs_monitor *m = net->monitor;
    if (!m || m->dl_time_ps < 0)
        return 0;
    *t_ps = m->dl_time_ps;
    for (int i = 0; i < m->dl_len && i < cap; i++)
        cycle[i] = m->dl_cycle[i];
    return m->dl_len;
}
