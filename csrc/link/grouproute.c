/* Group routing (rs_routing in rdmasim/fabric.h): the dragonfly's minimal, Valiant and UGAL-L
 * routes over switches labelled with a group.
 *
 * Tables (control path, after the host tables of route.c): per grouped switch and group g, the
 * ports of its links into g ("global" links), or when it has none, the ports of its links to
 * switches of its own group that have one: at most one hop inside the group, then one global hop.
 * Hop-count shortest paths would not do: in a dragonfly a path global-global-local is as short as
 * local-global-local, and taking it doubles the global load.
 *
 * Per packet: heading for its intermediate group (pkt->via_group, set at the source switch) or
 * else its destination's group; inside the destination group (or when no table entry exists) the
 * host table of route.c, whose one-hop local paths are the minimal ones.  No allocation here. */
#include <stdlib.h>
#include <string.h>

#include "link/net.h"
#include "link/switch.h"

#define NO_GROUP 0xFFFFu

/* The switch at the far end of port p, or NULL (a host, unconnected or down). */
static rs_switch *peer_switch(const rs_port *p)
{
    if (!p->tx || p->tx->down || p->tx->to->owner_kind != RS_NODE_SWITCH)
        return NULL;
    return p->tx->to->sw;
}

void rs_group_routes_free(rs_net *net)
{
    free(net->host_group);
    free(net->host_switch);
    net->host_group = net->host_switch = NULL;
    net->n_groups = 0;
}

/* Host -> (group, switch) of its switch; n_groups = 1 + the largest group of a grouped switch. */
static int host_tables(rs_net *net)
{
    rs_group_routes_free(net);
    uint32_t n_groups = 0;
    for (uint32_t s = 0; s < net->n_switches; s++) {
        const rs_switch *sw = net->switches[s];
        if (sw->cfg.routing != RS_ROUTE_SHORTEST && sw->cfg.group + 1 > n_groups)
            n_groups = sw->cfg.group + 1;
    }
    if (n_groups == 0)
        return RS_OK;
    net->host_group = malloc((net->n_hosts + 1) * sizeof(uint16_t));
    net->host_switch = malloc((net->n_hosts + 1) * sizeof(uint16_t));
    if (!net->host_group || !net->host_switch)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building group routing tables");
    net->n_groups = n_groups;
    for (uint32_t h = 0; h < net->n_hosts; h++) {
        const rs_port *hp = net->host_ports[h];
        const rs_switch *sw = hp->tx ? (hp->tx->to->owner_kind == RS_NODE_SWITCH ? hp->tx->to->sw : NULL) : NULL;
        int grouped = sw && sw->cfg.routing != RS_ROUTE_SHORTEST;
        net->host_group[h] = grouped ? (uint16_t)sw->cfg.group : NO_GROUP;
        net->host_switch[h] = grouped ? (uint16_t)sw->id : NO_GROUP;
    }
    return RS_OK;
}

static int has_global_to(const rs_switch *sw, uint32_t g)
{
    for (uint32_t p = 0; p < sw->n_used; p++) {
        const rs_switch *q = peer_switch(&sw->ports[p].port);
        if (q && q->cfg.routing != RS_ROUTE_SHORTEST && q->cfg.group == g && g != sw->cfg.group)
            return 1;
    }
    return 0;
}

static int switch_tables(rs_net *net, rs_switch *sw)
{
    uint32_t G = net->n_groups, P = sw->cfg.n_ports;
    free(sw->gnh);
    free(sw->gnh_cnt);
    free(sw->gport);
    sw->gnh = calloc((size_t)G * P + 1, sizeof(uint16_t));
    sw->gnh_cnt = calloc((size_t)G + 1, sizeof(uint16_t));
    sw->gport = calloc(P, 1);
    if (!sw->gnh || !sw->gnh_cnt || !sw->gport)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory building group routing tables");
    for (uint32_t p = 0; p < sw->n_used; p++) { /* direct global links */
        const rs_switch *q = peer_switch(&sw->ports[p].port);
        if (q && q->cfg.routing != RS_ROUTE_SHORTEST && q->cfg.group != sw->cfg.group) {
            uint32_t g = q->cfg.group;
            sw->gnh[(size_t)g * P + sw->gnh_cnt[g]++] = (uint16_t)p;
            sw->gport[p] = 1;
        }
    }
    for (uint32_t g = 0; g < G; g++) { /* else one local hop to a switch with a global link */
        if (g == sw->cfg.group || sw->gnh_cnt[g])
            continue;
        for (uint32_t p = 0; p < sw->n_used; p++) {
            const rs_switch *q = peer_switch(&sw->ports[p].port);
            if (q && q->cfg.routing != RS_ROUTE_SHORTEST && q->cfg.group == sw->cfg.group && has_global_to(q, g))
                sw->gnh[(size_t)g * P + sw->gnh_cnt[g]++] = (uint16_t)p;
        }
    }
    return RS_OK;
}

int rs_group_routes_compute(rs_net *net)
{
    int rc = host_tables(net);
    for (uint32_t s = 0; rc == RS_OK && net->n_groups && s < net->n_switches; s++)
        if (net->switches[s]->cfg.routing != RS_ROUTE_SHORTEST)
            rc = switch_tables(net, net->switches[s]);
    return rc;
}

/* The next hops towards host d by the host table (n = 0: none). */
static const uint16_t *host_hops(const rs_switch *sw, uint32_t d, uint32_t *n)
{
    return rs_switch_hops(sw, d, n);
}

/* Intermediate group for a packet leaving group a (G >= 3): uniform over the other G - 1 groups
 * (the destination's included: then the route is minimal, as in Kim et al.'s Valiant), from a hash
 * of the flow (ECMP) or of the flow and a packet counter. */
static uint32_t valiant_group(rs_switch *sw, const rs_pkt *pkt, uint32_t a, uint32_t G)
{
    uint32_t salt = sw->cfg.path_select == RS_PATH_ECMP ? 0x9E3779B9u : (uint32_t)sw->spray_ctr++ * 0x85EBCA6Bu;
    /* the source IP word differs from the next-hop hash's so the two choices are independent */
    uint32_t r = rs_switch_ecmp_hash(sw, pkt->src_ip ^ salt, pkt->dst_ip, pkt->udp_sport);
    uint32_t g = r % (G - 1);
    return g + (g >= a);
}

static uint64_t queued(const rs_switch *sw, uint32_t port, uint32_t prio)
{
    return sw->mmu.eg_bytes[(size_t)port * RS_NPRIO + prio];
}

int rs_group_route(const rs_net *net, rs_switch *sw, rs_pkt *pkt, uint32_t prio)
{
    uint32_t n, own = sw->cfg.group, d = pkt->dst_node;
    const uint16_t *hops;
    if (!net->host_group || d >= net->n_hosts || net->host_group[d] == NO_GROUP) {
        hops = host_hops(sw, d, &n);
        return n ? (int)rs_switch_pick_hop(sw, pkt, hops, n, prio) : -1;
    }
    uint32_t dg = net->host_group[d], P = sw->cfg.n_ports;
    if (pkt->via_group == own + 1) /* reached the intermediate group: from here minimal */
        pkt->via_group = 0;
    if (sw->cfg.routing >= RS_ROUTE_VALIANT && dg != own && net->n_groups >= 3 &&
        pkt->src_node < net->n_hosts && net->host_switch[pkt->src_node] == (uint16_t)sw->id) {
        uint32_t ig = valiant_group(sw, pkt, own, net->n_groups);
        uint32_t nm = sw->gnh_cnt[dg], nv = ig == dg ? 0 : sw->gnh_cnt[ig];
        if (nv && (sw->cfg.routing == RS_ROUTE_VALIANT || !nm)) {
            pkt->via_group = (uint16_t)(ig + 1);
        } else if (nv) { /* UGAL-L: a Valiant path crosses about twice the links of the minimal one */
            uint32_t pm = rs_switch_pick_hop(sw, pkt, &sw->gnh[(size_t)dg * P], nm, prio);
            uint32_t pv = rs_switch_pick_hop(sw, pkt, &sw->gnh[(size_t)ig * P], nv, prio);
            if (queued(sw, pm, prio) > 2 * queued(sw, pv, prio)) {
                pkt->via_group = (uint16_t)(ig + 1);
                return (int)pv;
            }
            return (int)pm;
        }
    }
    uint32_t tg = pkt->via_group ? pkt->via_group - 1u : dg;
    n = 0;
    if (tg != own && tg < net->n_groups) {
        n = sw->gnh_cnt[tg];
        hops = &sw->gnh[(size_t)tg * P];
    }
    if (n == 0) /* in the target group, or no group link towards it */
        hops = host_hops(sw, d, &n);
    return n ? (int)rs_switch_pick_hop(sw, pkt, hops, n, prio) : -1;
}

uint32_t rs_group_egress_class(const rs_switch *sw, rs_pkt *pkt, uint32_t out, uint32_t base)
{
    if (sw->gport && sw->gport[out] && pkt->global_hops < 0xFF)
        pkt->global_hops++;
    return rs_group_class(base, pkt->global_hops);
}
