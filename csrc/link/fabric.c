/* Fabric control path: creating switches, connecting any two nodes, link
 * failure and recovery, and reading switch / port counters. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "link/net.h"
#include "link/monitor.h"
#include "link/pause.h"
#include "link/rxpipe.h"
#include "link/switch.h"

#define MAX_PORTS 4096u

int rs_net_fail(rs_net *net, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rs_engine_vfail(&net->eng, code, fmt, ap);
    va_end(ap);
    return code;
}

static rs_switch *get_switch(const rs_net *net, int sw)
{
    return (sw >= 0 && (uint32_t)sw < net->n_switches) ? net->switches[sw] : NULL;
}

static int check_cfg(rs_net *net, const rs_switch_cfg *c)
{
    if (c->n_ports < 1 || c->n_ports > MAX_PORTS)
        return rs_net_fail(net, RS_ERR_INVAL, "n_ports %u outside 1..%u", c->n_ports, MAX_PORTS);
    if (c->alpha_shift > 16)
        return rs_net_fail(net, RS_ERR_INVAL, "alpha_shift %u outside 0..16", c->alpha_shift);
    if (c->path_select > RS_PATH_ADAPTIVE_PACKET)
        return rs_net_fail(net, RS_ERR_INVAL, "path_select %u outside 0..%d", c->path_select,
                           RS_PATH_ADAPTIVE_PACKET);
    if (c->routing > RS_ROUTE_UGAL)
        return rs_net_fail(net, RS_ERR_INVAL, "routing %u outside 0..%d", c->routing, RS_ROUTE_UGAL);
    if (c->hop_classes > 1)
        return rs_net_fail(net, RS_ERR_INVAL, "hop_classes %u outside 0..1", c->hop_classes);
    if (c->group >= RS_MAX_GROUPS)
        return rs_net_fail(net, RS_ERR_INVAL, "group %u outside 0..%u", c->group, RS_MAX_GROUPS - 1);
    if (c->trim > 1)
        return rs_net_fail(net, RS_ERR_INVAL, "trim %u outside 0..1", c->trim);
    if (c->trim_threshold_bytes < 1 || c->trim_threshold_bytes > (1ull << 40))
        return rs_net_fail(net, RS_ERR_INVAL, "trim_threshold %llu bytes outside 1..%llu",
                           (unsigned long long)c->trim_threshold_bytes, 1ull << 40);
    if (c->trim_prio > 7)
        return rs_net_fail(net, RS_ERR_INVAL, "trim_prio %u outside 0..7", c->trim_prio);
    if (c->pfc_quanta == 0)
        return rs_net_fail(net, RS_ERR_INVAL, "pfc_quanta 0 outside 1..65535 (0 would be XON)");
    if (c->latency_ps < 0 || c->latency_ps > RS_MAX_TIME_PS)
        return rs_net_fail(net, RS_ERR_INVAL, "latency %lld ps outside 0..%lld", (long long)c->latency_ps,
                           (long long)RS_MAX_TIME_PS);
    if (c->pfc_response_ps < 0 || c->pfc_response_ps > RS_MAX_TIME_PS)
        return rs_net_fail(net, RS_ERR_INVAL, "pfc_response %lld ps outside 0..%lld", (long long)c->pfc_response_ps,
                           (long long)RS_MAX_TIME_PS);
    for (int i = 0; i < 64; i++)
        if (c->dscp_to_prio[i] > 7)
            return rs_net_fail(net, RS_ERR_INVAL, "dscp_to_prio[%d] = %u outside 0..7", i, c->dscp_to_prio[i]);
    for (int i = 0; i < RS_NPRIO; i++) {
        if (c->wrr && c->wrr_weight[i] == 0)
            return rs_net_fail(net, RS_ERR_INVAL, "wrr_weight[%d] = 0 outside 1..255", i);
        if (c->ecn_kmax[i] && c->ecn_kmax[i] <= c->ecn_kmin[i])
            return rs_net_fail(net, RS_ERR_INVAL, "priority %d: ECN kmax %llu must be > kmin %llu", i,
                               (unsigned long long)c->ecn_kmax[i], (unsigned long long)c->ecn_kmin[i]);
        if (!(c->ecn_pmax[i] >= 0.0 && c->ecn_pmax[i] <= 1.0))
            return rs_net_fail(net, RS_ERR_INVAL, "priority %d: ECN pmax %g outside [0, 1]", i, c->ecn_pmax[i]);
    }
    return RS_OK;
}

int rs_net_switch_add(rs_net *net, const rs_switch_cfg *cfg)
{
    rs_switch_cfg no_pfc;
    if (!rs_net_pfc_allowed(net)) { /* InfiniBand has no PFC: no class pauses (credits instead, link/credit.h) */
        no_pfc = *cfg;
        no_pfc.pfc_mask = 0;
        cfg = &no_pfc;
    }
    int rc = check_cfg(net, cfg);
    if (rc != RS_OK)
        return rc;
    if (net->n_switches >= 0xFFFF)
        return rs_net_fail(net, RS_ERR_INVAL, "too many switches (limit 65535)");
    rs_switch **ns = realloc(net->switches, (net->n_switches + 1) * sizeof(*ns));
    if (!ns)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    net->switches = ns;
    int err;
    rs_switch *sw = rs_switch_new(net, (int)net->n_switches, cfg, &err);
    if (!sw && err == -2)
        return rs_net_fail(net, RS_ERR_INVAL,
                           "buffer_bytes %llu is smaller than the reserve (%u B x %u ports x 8 priorities) "
                           "plus headroom (%u B x %u ports x %d lossless priorities)",
                           (unsigned long long)cfg->buffer_bytes, cfg->reserve_bytes, cfg->n_ports,
                           cfg->headroom_bytes, cfg->n_ports, __builtin_popcount(cfg->pfc_mask));
    if (!sw)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    net->switches[net->n_switches] = sw;
    net->routes_dirty = 1;
    return (int)net->n_switches++;
}

void rs_fabric_free(rs_net *net)
{
    rs_monitor_free(net->monitor);
    net->monitor = NULL;
    rs_group_routes_free(net);
    for (uint32_t i = 0; i < net->n_switches; i++)
        rs_switch_free(net, net->switches[i]);
    free(net->switches);
    net->switches = NULL;
    net->n_switches = 0;
}

/* The free port of a node, or NULL with the failure recorded. */
static rs_port *free_port(rs_net *net, int kind, int node, int *rc)
{
    *rc = RS_OK;
    if (kind == RS_NODE_HOST) {
        if (node < 0 || (uint32_t)node >= net->n_hosts) {
            *rc = rs_net_fail(net, RS_ERR_INVAL, "no host %d (hosts 0..%d)", node, (int)net->n_hosts - 1);
            return NULL;
        }
        rs_port *p = net->host_ports[node];
        if (p->tx) {
            *rc = rs_net_fail(net, RS_ERR_STATE, "host %d already has a link (one port per host)", node);
            return NULL;
        }
        return p;
    }
    if (kind != RS_NODE_SWITCH) {
        *rc = rs_net_fail(net, RS_ERR_INVAL, "node kind %d outside 0 (host), 1 (switch)", kind);
        return NULL;
    }
    rs_switch *sw = get_switch(net, node);
    if (!sw) {
        *rc = rs_net_fail(net, RS_ERR_INVAL, "no switch %d (switches 0..%d)", node, (int)net->n_switches - 1);
        return NULL;
    }
    if (sw->n_used >= sw->cfg.n_ports) {
        *rc = rs_net_fail(net, RS_ERR_STATE, "switch %d has all %u ports connected", node, sw->cfg.n_ports);
        return NULL;
    }
    return &sw->ports[sw->n_used].port;
}

int rs_net_fabric_connect(rs_net *net, int kind_a, int a, int kind_b, int b, int64_t rate_bps, int64_t delay_ps)
{
    if (kind_a == kind_b && a == b)
        return rs_net_fail(net, RS_ERR_INVAL, "cannot connect a node to itself");
    if (rate_bps <= 0 || delay_ps < 0)
        return rs_net_fail(net, RS_ERR_INVAL, "link rate must be > 0 and delay >= 0");
    int rc;
    rs_port *pa = free_port(net, kind_a, a, &rc);
    if (!pa)
        return rc;
    rs_port *pb = free_port(net, kind_b, b, &rc);
    if (!pb)
        return rc;
    rs_link **nl = realloc(net->links, (net->n_links + 2) * sizeof(*nl));
    if (!nl)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    net->links = nl;
    /* a switch's forwarding latency: frames into it arrive that much later (FIFO order kept) */
    int64_t lat_b = kind_b == RS_NODE_SWITCH ? net->switches[b]->cfg.latency_ps : 0;
    int64_t lat_a = kind_a == RS_NODE_SWITCH ? net->switches[a]->cfg.latency_ps : 0;
    rs_link *ab = rs_link_new(net, pa, pb, rate_bps, delay_ps + lat_b);
    rs_link *ba = ab ? rs_link_new(net, pb, pa, rate_bps, delay_ps + lat_a) : NULL;
    if (!ab || !ba)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    if (kind_a == RS_NODE_SWITCH)
        net->switches[a]->n_used++;
    if (kind_b == RS_NODE_SWITCH)
        net->switches[b]->n_used++;
    net->routes_dirty = 1;
    return ab->id;
}

static rs_link *get_link(const rs_net *net, int link)
{
    return (link >= 0 && (uint32_t)link < net->n_links) ? net->links[link] : NULL;
}

static void port_end(const rs_port *p, int *kind, int *node, int *port)
{
    *kind = p->owner_kind;
    *node = p->node;
    *port = p->index;
}

int rs_net_link_ends(const rs_net *net, int link, int *fk, int *fn, int *fp, int *tk, int *tn, int *tp)
{
    const rs_link *l = get_link(net, link);
    if (!l)
        return RS_ERR_INVAL;
    port_end(l->from, fk, fn, fp);
    port_end(l->to, tk, tn, tp);
    return RS_OK;
}

/* Both directions of a link: ids are allocated in pairs (even = a->b). */
static void set_state(rs_net *net, int link, int up)
{
    int first = link & ~1;
    for (int i = first; i < first + 2 && (uint32_t)i < net->n_links; i++)
        net->links[i]->down = !up;
    net->routes_dirty = 1;
    if (up)
        for (int i = first; i < first + 2 && (uint32_t)i < net->n_links; i++)
            rs_port_kick(net, net->links[i]->from);
}

int rs_net_link_set_up(rs_net *net, int link, int up)
{
    if (!get_link(net, link))
        return rs_net_fail(net, RS_ERR_INVAL, "no link %d", link);
    set_state(net, link, up);
    return RS_OK;
}

/* The rate is read per frame (serialisation, pause quanta) and by the NIC's rate limiter, so a
 * change needs no other bookkeeping; DCQCN takes a QP's line rate when the QP is created. */
int rs_net_link_set_rate(rs_net *net, int link, int64_t rate_bps)
{
    rs_link *l = get_link(net, link);
    if (!l)
        return rs_net_fail(net, RS_ERR_INVAL, "no link %d", link);
    if (rate_bps <= 0)
        return rs_net_fail(net, RS_ERR_INVAL, "link %d: rate %lld b/s must be positive", link, (long long)rate_bps);
    l->rate_bps = rate_bps;
    return RS_OK;
}

int rs_net_link_schedule_up(rs_net *net, int link, int up, int64_t t_ps)
{
    rs_link *l = get_link(net, link);
    if (!l)
        return rs_net_fail(net, RS_ERR_INVAL, "no link %d", link);
    if (t_ps < net->eng.now_ps)
        return rs_net_fail(net, RS_ERR_INVAL, "time %lld ps is before now (%lld ps)", (long long)t_ps,
                           (long long)net->eng.now_ps);
    /* each direction holds one pending change: a link can have two (e.g. fail, then recover) */
    rs_link *pair = net->links[link ^ 1];
    if (l->state_change.armed)
        l = pair;
    if (l->state_change.armed)
        return rs_net_fail(net, RS_ERR_STATE, "link %d already has 2 state changes pending (the limit)", link);
    l->pending_up = up;
    rs_engine_arm(&net->eng, &l->state_change, t_ps);
    return net->eng.failed ? RS_ERR_NOMEM : RS_OK;
}

void rs_link_state_event(rs_net *net, rs_link *l)
{
    set_state(net, l->id, l->pending_up);
}

int rs_net_switch_port_stats(const rs_net *net, int sw, int port, rs_swport_stats *out)
{
    const rs_switch *s = get_switch(net, sw);
    if (!s || port < 0 || (uint32_t)port >= s->cfg.n_ports)
        return RS_ERR_INVAL;
    rs_swport_stats_of(&s->ports[port], out);
    return RS_OK;
}

int rs_net_switch_queue_bytes(const rs_net *net, int sw, int port, int prio, uint64_t *egress, uint64_t *ingress)
{
    const rs_switch *s = get_switch(net, sw);
    if (!s || port < 0 || (uint32_t)port >= s->cfg.n_ports || prio < 0 || prio >= RS_NPRIO)
        return RS_ERR_INVAL;
    size_t i = (size_t)port * RS_NPRIO + (size_t)prio;
    *egress = s->mmu.eg_bytes[i];
    *ingress = s->mmu.in_bytes[i] + s->mmu.hdrm_bytes[i];
    return RS_OK;
}

rs_port *rs_net_find_port(const rs_net *net, int kind, int node, int port)
{
    rs_port *p = NULL;
    if (kind == RS_NODE_HOST && node >= 0 && (uint32_t)node < net->n_hosts)
        p = net->host_ports[node];
    const rs_switch *s = kind == RS_NODE_SWITCH ? get_switch(net, node) : NULL;
    if (s && port >= 0 && (uint32_t)port < s->cfg.n_ports)
        p = &s->ports[port].port;
    return p;
}

int rs_net_port_pause_stats(const rs_net *net, int kind, int node, int port, rs_pause_stats *out)
{
    const rs_port *p = rs_net_find_port(net, kind, node, port);
    if (!p)
        return RS_ERR_INVAL;
    rs_pause_stats_now(p, net->eng.now_ps, out);
    return RS_OK;
}

int rs_net_port_set_pfc_response(rs_net *net, int kind, int node, int port, int64_t response_ps)
{
    rs_port *p = rs_net_find_port(net, kind, node, port);
    if (!p)
        return rs_net_fail(net, RS_ERR_INVAL, "no port %d on %s %d", port, kind ? "switch" : "host", node);
    if (response_ps < 0 || response_ps > RS_MAX_TIME_PS)
        return rs_net_fail(net, RS_ERR_INVAL, "pfc_response %lld ps outside 0..%lld", (long long)response_ps,
                           (long long)RS_MAX_TIME_PS);
    p->pfc_response_ps = response_ps;
    return RS_OK;
}

int rs_net_port_inject_pfc(rs_net *net, int kind, int node, int port, uint16_t class_enable, const uint16_t quanta[8])
{
    rs_port *p = rs_net_find_port(net, kind, node, port);
    if (!p)
        return rs_net_fail(net, RS_ERR_INVAL, "no port %d on %s %d", port, kind ? "switch" : "host", node);
    if (class_enable > 0xFF)
        return rs_net_fail(net, RS_ERR_INVAL, "class-enable vector 0x%x outside 0..0xff", class_enable);
    rs_pkt *pkt = rs_pkt_alloc(net->pool);
    if (!pkt)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    pkt->kind = RS_PKT_PFC;
    pkt->pfc_class_enable = class_enable;
    for (int i = 0; i < RS_NPRIO; i++)
        pkt->pfc_quanta[i] = quanta[i];
    rs_pause_receive(net, p, pkt);
    return net->eng.failed ? RS_ERR_NOMEM : RS_OK;
}

static int ensure_routes(rs_net *net)
{
    return net->routes_dirty ? rs_routes_compute(net) : RS_OK;
}

int rs_net_switch_next_hops(rs_net *net, int sw, int dst, uint16_t *out, int cap)
{
    rs_switch *s = get_switch(net, sw);
    if (!s)
        return rs_net_fail(net, RS_ERR_INVAL, "no switch %d", sw);
    if (dst < 0 || (uint32_t)dst >= net->n_hosts)
        return rs_net_fail(net, RS_ERR_INVAL, "no host %d", dst);
    int rc = ensure_routes(net);
    if (rc != RS_OK)
        return rc;
    uint32_t n;
    const uint16_t *hops = rs_switch_hops(s, (uint32_t)dst, &n);
    for (uint32_t i = 0; i < n && (int)i < cap; i++)
        out[i] = hops[i];
    return (int)n;
}

int64_t rs_net_switch_route_bytes(rs_net *net, int sw)
{
    rs_switch *s = get_switch(net, sw);
    if (!s)
        return rs_net_fail(net, RS_ERR_INVAL, "no switch %d", sw);
    int rc = ensure_routes(net);
    if (rc != RS_OK)
        return rc;
    return (int64_t)((s->nh_row ? ((size_t)s->n_dst + 1) * sizeof(uint32_t) : 0) + s->nh_cap * sizeof(uint16_t));
}

int rs_net_switch_ecmp_port(rs_net *net, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport)
{
    uint16_t hops[MAX_PORTS];
    int n = rs_net_switch_next_hops(net, sw, dst, hops, (int)MAX_PORTS);
    if (n <= 0)
        return n < 0 ? n : -1;
    return n == 1 ? hops[0] : hops[rs_switch_ecmp_hash(net->switches[sw], sip, dip, sport) % (uint32_t)n];
}

int rs_net_switch_set_route(rs_net *net, int sw, int dst, const uint16_t *ports, int n)
{
    rs_switch *s = get_switch(net, sw);
    if (!s)
        return rs_net_fail(net, RS_ERR_INVAL, "no switch %d", sw);
    if (dst < 0 || (uint32_t)dst >= net->n_hosts)
        return rs_net_fail(net, RS_ERR_INVAL, "no host %d (hosts 0..%d)", dst, (int)net->n_hosts - 1);
    if (n < 0 || (uint32_t)n > s->n_used)
        return rs_net_fail(net, RS_ERR_INVAL, "%d next hops: must be 0..%u (connected ports)", n, s->n_used);
    for (int i = 0; i < n; i++)
        if (ports[i] >= s->n_used)
            return rs_net_fail(net, RS_ERR_INVAL, "switch %d: port %u is not connected (ports 0..%u)", sw,
                               ports[i], s->n_used - 1);
    uint32_t i = 0;
    while (i < s->n_pins && s->pins[i].dst != (uint32_t)dst)
        i++;
    if (i == s->n_pins) {
        if (n == 0)
            return RS_OK;
        rs_route_pin *np = realloc(s->pins, (s->n_pins + 1) * sizeof(*np));
        if (!np)
            return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
        s->pins = np;
        np[i] = (rs_route_pin){.dst = (uint32_t)dst, .n = 0, .ports = NULL};
        s->n_pins++;
    }
    if (n == 0) {
        free(s->pins[i].ports);
        s->pins[i] = s->pins[--s->n_pins];
    } else {
        uint16_t *pp = realloc(s->pins[i].ports, (size_t)n * sizeof(uint16_t));
        if (!pp)
            return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
        memcpy(pp, ports, (size_t)n * sizeof(uint16_t));
        s->pins[i].ports = pp;
        s->pins[i].n = (uint16_t)n;
    }
    net->routes_dirty = 1;
    return RS_OK;
}
