/* Routing: shortest paths (hop count) from every switch to every host over
 * links that are up, keeping all equal-cost next hops for ECMP.  One BFS per
 * destination host; hosts are never transit nodes.  Control path only: runs
 * when the graph changed (a link added, failed or recovered), before the next event. */
#include <stdlib.h>
#include <string.h>

#include "link/net.h"
#include "link/switch.h"

/* Node numbering for the BFS: hosts 0..H-1, then switches H..H+S-1. */
static int node_of(const rs_net *net, const rs_port *p)
{
    return p->owner_kind == RS_NODE_HOST ? p->node : (int)net->n_hosts + p->sw->id;
}

static int peer(const rs_net *net, const rs_port *p)
{
    if (!p->tx || p->tx->down)
        return -1;
    return node_of(net, p->tx->to);
}

static int alloc_tables(rs_net *net)
{
    for (uint32_t s = 0; s < net->n_switches; s++) {
        rs_switch *sw = net->switches[s];
        if (sw->n_dst == net->n_hosts && sw->nh)
            continue;
        free(sw->nh);
        free(sw->nh_cnt);
        sw->n_dst = net->n_hosts;
        sw->nh = calloc((size_t)net->n_hosts * sw->cfg.n_ports + 1, sizeof(uint16_t));
        sw->nh_cnt = calloc((size_t)net->n_hosts + 1, sizeof(uint16_t));
        if (!sw->nh || !sw->nh_cnt)
            return -1;
    }
    return 0;
}

int rs_routes_compute(rs_net *net)
{
    uint32_t H = net->n_hosts, N = net->n_hosts + net->n_switches;
    if (alloc_tables(net) != 0)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building routing tables");
    int *dist = malloc((N + 1) * sizeof(int));
    uint32_t *queue = malloc((N + 1) * sizeof(uint32_t));
    if (!dist || !queue) {
        free(dist);
        free(queue);
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building routing tables");
    }
    for (uint32_t d = 0; d < H; d++) {
        for (uint32_t i = 0; i < N; i++)
            dist[i] = -1;
        dist[d] = 0;
        uint32_t qh = 0, qt = 0;
        int first = peer(net, net->host_ports[d]);
        if (first >= (int)H) {
            dist[first] = 1;
            queue[qt++] = (uint32_t)first;
        }
        while (qh < qt) {
            rs_switch *sw = net->switches[queue[qh] - H];
            int ds = dist[queue[qh++]];
            for (uint32_t p = 0; p < sw->n_used; p++) {
                int v = peer(net, &sw->ports[p].port);
                if (v >= (int)H && dist[v] < 0) {
                    dist[v] = ds + 1;
                    queue[qt++] = (uint32_t)v;
                }
            }
        }
        for (uint32_t s = 0; s < net->n_switches; s++) {
            rs_switch *sw = net->switches[s];
            uint16_t *hops = &sw->nh[(size_t)d * sw->cfg.n_ports];
            uint16_t n = 0;
            int ds = dist[H + s];
            for (uint32_t p = 0; ds > 0 && p < sw->n_used; p++) {
                int v = peer(net, &sw->ports[p].port);
                if (v >= 0 && (v == (int)d || v >= (int)H) && dist[v] == ds - 1)
                    hops[n++] = (uint16_t)p;
            }
            sw->nh_cnt[d] = n;
        }
    }
    /* static routes override the computed next hops */
    for (uint32_t s = 0; s < net->n_switches; s++) {
        rs_switch *sw = net->switches[s];
        for (uint32_t i = 0; i < sw->n_pins; i++) {
            const rs_route_pin *pin = &sw->pins[i];
            if (pin->dst >= H)
                continue;
            for (uint16_t k = 0; k < pin->n; k++)
                sw->nh[(size_t)pin->dst * sw->cfg.n_ports + k] = pin->ports[k];
            sw->nh_cnt[pin->dst] = pin->n;
        }
    }
    free(dist);
    free(queue);
    int rc = rs_group_routes_compute(net);
    if (rc != RS_OK)
        return rc;
    net->routes_dirty = 0;
    return RS_OK;
}
