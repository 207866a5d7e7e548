/* Routing: shortest paths (hop count) from every switch to every host over
 * links that are up, keeping all equal-cost next hops for ECMP.  Hosts are never
 * transit nodes, so one BFS per switch that hosts hang off serves all of them, and the hosts behind
 * one such leaf share one row of next hops at every other switch (switch.h: nh_row, nh): the
 * tables take hosts x 4 bytes plus leaves x ports per switch, not hosts x ports.  Control path
 * only: runs when the graph changed (a link added, failed or recovered), before the next event. */
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
        sw->nh_len = 1; /* row 0: no next hop (every destination's until it gets a row) */
        if (sw->n_dst == net->n_hosts && sw->nh_row && sw->nh) {
            memset(sw->nh_row, 0, ((size_t)net->n_hosts + 1) * sizeof(uint32_t));
            continue;
        }
        free(sw->nh_row);
        sw->n_dst = net->n_hosts;
        sw->nh_row = calloc((size_t)net->n_hosts + 1, sizeof(uint32_t));
        if (!sw->nh_row)
            return -1;
        if (!sw->nh) {
            sw->nh = calloc(1 + sw->cfg.n_ports, sizeof(uint16_t));
            if (!sw->nh)
                return -1;
            sw->nh_cap = 1 + sw->cfg.n_ports;
        }
    }
    return 0;
}

/* Append a row of n next hops to sw's rows: its offset, or -1 when out of memory. */
static int64_t add_row(rs_switch *sw, const uint16_t *hops, uint16_t n)
{
    if (n == 0)
        return 0; /* the shared empty row */
    if (sw->nh_len + 1 + n > sw->nh_cap) {
        size_t cap = sw->nh_cap * 2 > sw->nh_len + 1 + n ? sw->nh_cap * 2 : sw->nh_len + 1 + n;
        uint16_t *nh = realloc(sw->nh, cap * sizeof(uint16_t));
        if (!nh)
            return -1;
        sw->nh = nh;
        sw->nh_cap = cap;
    }
    size_t off = sw->nh_len;
    sw->nh[off] = n;
    memcpy(&sw->nh[off + 1], hops, n * sizeof(uint16_t));
    sw->nh_len += 1 + (size_t)n;
    return (int64_t)off;
}

/* The next hops of every switch towards the hosts behind `leaf` (the switch a host's link
 * reaches), from one BFS over switches: port p of switch s is a next hop when its peer is a switch
 * one hop nearer the leaf.  Written to rows[off[s] ..], counts to cnt[s]; the leaf's own row (its
 * ports to the destination host itself) is per host, filled by the caller. */
static void leaf_rows(const rs_net *net, uint32_t leaf, int *dist, uint32_t *queue, const uint32_t *off,
                      uint16_t *rows, uint16_t *cnt)
{
    uint32_t H = net->n_hosts, N = net->n_hosts + net->n_switches;
    for (uint32_t i = 0; i < N; i++)
        dist[i] = -1;
    uint32_t qh = 0, qt = 0;
    dist[leaf] = 1;
    queue[qt++] = leaf;
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
        uint16_t n = 0;
        int ds = dist[H + s];
        for (uint32_t p = 0; ds > 1 && p < sw->n_used; p++) {
            int v = peer(net, &sw->ports[p].port);
            if (v >= (int)H && dist[v] == ds - 1)
                rows[off[s] + n++] = (uint16_t)p;
        }
        cnt[s] = n;
    }
}

/* Shortest paths over switches depend on the destination only through the switch its link
 * reaches (hosts are never transit nodes): one BFS per such switch, its rows copied to each host
 * behind it, so the cost is O(leaves x links + hosts x switches), not O(hosts x links). */
int rs_routes_compute(rs_net *net)
{
    uint32_t H = net->n_hosts, S = net->n_switches, N = net->n_hosts + net->n_switches;
    if (alloc_tables(net) != 0)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building routing tables");
    int *dist = malloc((N + 1) * sizeof(int));
    uint32_t *queue = malloc((N + 1) * sizeof(uint32_t));
    uint32_t *off = malloc((S + 1) * sizeof(uint32_t));
    uint32_t *first = malloc((H + 1) * sizeof(uint32_t)); /* hosts, grouped by the switch their link reaches */
    uint32_t *start = calloc(S + 2, sizeof(uint32_t));
    uint16_t *cnt = malloc((S + 1) * sizeof(uint16_t));
    uint16_t *rows = NULL;
    size_t total = 0;
    for (uint32_t s = 0; off && s < S; s++) {
        off[s] = (uint32_t)total;
        total += net->switches[s]->n_used;
    }
    rows = malloc((total + 1) * sizeof(uint16_t));
    if (!dist || !queue || !off || !first || !start || !cnt || !rows) {
        free(dist);
        free(queue);
        free(off);
        free(first);
        free(start);
        free(cnt);
        free(rows);
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building routing tables");
    }
    /* counting sort of the hosts by leaf (slot S: hosts whose link reaches no switch) */
    for (uint32_t d = 0; d < H; d++) {
        int f = peer(net, net->host_ports[d]);
        start[(f >= (int)H ? (uint32_t)f - H : S) + 1]++;
    }
    for (uint32_t s = 0; s <= S; s++)
        start[s + 1] += start[s];
    for (uint32_t d = 0; d < H; d++) {
        int f = peer(net, net->host_ports[d]);
        first[start[f >= (int)H ? (uint32_t)f - H : S]++] = d;
    }
    for (uint32_t s = S + 1; s > 0; s--) /* back to the starts */
        start[s] = start[s - 1];
    start[0] = 0;
    /* hosts no switch reaches keep row 0 (no next hop) */
    uint32_t most = 1; /* ports of the largest switch: a leaf's row for one of its hosts */
    for (uint32_t s = 0; s < S; s++)
        most = net->switches[s]->n_used > most ? net->switches[s]->n_used : most;
    uint16_t *own = malloc((size_t)most * sizeof(uint16_t));
    int oom = !own;
    for (uint32_t leaf = 0; !oom && leaf < S; leaf++) {
        if (start[leaf] == start[leaf + 1])
            continue;
        leaf_rows(net, H + leaf, dist, queue, off, rows, cnt);
        for (uint32_t s = 0; !oom && s < S; s++) {
            rs_switch *sw = net->switches[s];
            if (s == leaf) { /* the leaf: a row per host behind it, its ports to that host */
                for (uint32_t i = start[leaf]; !oom && i < start[leaf + 1]; i++) {
                    uint32_t d = first[i];
                    uint16_t n = 0;
                    for (uint32_t p = 0; p < sw->n_used; p++)
                        if (peer(net, &sw->ports[p].port) == (int)d)
                            own[n++] = (uint16_t)p;
                    int64_t r = add_row(sw, own, n);
                    oom = r < 0;
                    sw->nh_row[d] = (uint32_t)r;
                }
                continue;
            }
            int64_t r = add_row(sw, &rows[off[s]], cnt[s]); /* one row for all the leaf's hosts */
            oom = r < 0;
            for (uint32_t i = start[leaf]; !oom && i < start[leaf + 1]; i++)
                sw->nh_row[first[i]] = (uint32_t)r;
        }
    }
    free(own);
    free(off);
    free(first);
    free(start);
    free(cnt);
    free(rows);
    /* static routes override the computed next hops: a row each */
    for (uint32_t s = 0; !oom && s < net->n_switches; s++) {
        rs_switch *sw = net->switches[s];
        for (uint32_t i = 0; !oom && i < sw->n_pins; i++) {
            const rs_route_pin *pin = &sw->pins[i];
            if (pin->dst >= H)
                continue;
            int64_t r = add_row(sw, pin->ports, pin->n);
            oom = r < 0;
            sw->nh_row[pin->dst] = (uint32_t)r;
        }
    }
    for (uint32_t s = 0; !oom && s < net->n_switches; s++) { /* rows grow by doubling: fit them */
        rs_switch *sw = net->switches[s];
        uint16_t *nh = sw->nh_len < sw->nh_cap ? realloc(sw->nh, sw->nh_len * sizeof(uint16_t)) : NULL;
        if (nh) {
            sw->nh = nh;
            sw->nh_cap = sw->nh_len;
        }
    }
    if (oom) {
        free(dist);
        free(queue);
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building routing tables");
    }
    free(dist);
    free(queue);
    int rc = rs_group_routes_compute(net);
    if (rc != RS_OK)
        return rc;
    net->routes_dirty = 0;
    return RS_OK;
}
