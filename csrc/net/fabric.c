/* Fabric control path: creating switches, connecting any two nodes, link
 * failure and recovery, and reading switch / port counters. */
#include <stdlib.h>
#include <string.h>

#include "core/sim_impl.h"
#include "net/monitor.h"
#include "net/pause.h"
#include "net/rxpipe.h"
#include "net/switch.h"

#define MAX_PORTS 4096u

static rs_switch *get_switch(const rs_sim *sim, int sw)
{
    return (sw >= 0 && (uint32_t)sw < sim->n_switches) ? sim->switches[sw] : NULL;
}

static int check_cfg(rs_sim *sim, const rs_switch_cfg *c)
{
    if (c->n_ports < 1 || c->n_ports > MAX_PORTS)
        return rs_sim_fail(sim, RS_ERR_INVAL, "n_ports %u outside 1..%u", c->n_ports, MAX_PORTS);
    if (c->alpha_shift > 16)
        return rs_sim_fail(sim, RS_ERR_INVAL, "alpha_shift %u outside 0..16", c->alpha_shift);
    if (c->pfc_quanta == 0)
        return rs_sim_fail(sim, RS_ERR_INVAL, "pfc_quanta 0 outside 1..65535 (0 would be XON)");
    for (int i = 0; i < 64; i++)
        if (c->dscp_to_prio[i] > 7)
            return rs_sim_fail(sim, RS_ERR_INVAL, "dscp_to_prio[%d] = %u outside 0..7", i, c->dscp_to_prio[i]);
    for (int i = 0; i < RS_NPRIO; i++) {
        if (c->wrr && c->wrr_weight[i] == 0)
            return rs_sim_fail(sim, RS_ERR_INVAL, "wrr_weight[%d] = 0 outside 1..255", i);
        if (c->ecn_kmax[i] && c->ecn_kmax[i] <= c->ecn_kmin[i])
            return rs_sim_fail(sim, RS_ERR_INVAL, "priority %d: ECN kmax %llu must be > kmin %llu", i,
                               (unsigned long long)c->ecn_kmax[i], (unsigned long long)c->ecn_kmin[i]);
        if (!(c->ecn_pmax[i] >= 0.0 && c->ecn_pmax[i] <= 1.0))
            return rs_sim_fail(sim, RS_ERR_INVAL, "priority %d: ECN pmax %g outside [0, 1]", i, c->ecn_pmax[i]);
    }
    return RS_OK;
}

int rs_switch_add(rs_sim *sim, const rs_switch_cfg *cfg)
{
    int rc = check_cfg(sim, cfg);
    if (rc != RS_OK)
        return rc;
    if (sim->n_switches >= 0xFFFF)
        return rs_sim_fail(sim, RS_ERR_INVAL, "too many switches (limit 65535)");
    rs_switch **ns = realloc(sim->switches, (sim->n_switches + 1) * sizeof(*ns));
    if (!ns)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->switches = ns;
    int err;
    rs_switch *sw = rs_switch_new(sim, (int)sim->n_switches, cfg, &err);
    if (!sw && err == -2)
        return rs_sim_fail(sim, RS_ERR_INVAL,
                           "buffer_bytes %llu is smaller than the reserve (%u B x %u ports x 8 priorities) "
                           "plus headroom (%u B x %u ports x %d lossless priorities)",
                           (unsigned long long)cfg->buffer_bytes, cfg->reserve_bytes, cfg->n_ports,
                           cfg->headroom_bytes, cfg->n_ports, __builtin_popcount(cfg->pfc_mask));
    if (!sw)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->switches[sim->n_switches] = sw;
    sim->routes_dirty = 1;
    return (int)sim->n_switches++;
}

void rs_fabric_free(rs_sim *sim)
{
    rs_monitor_free(sim->monitor);
    sim->monitor = NULL;
    for (uint32_t i = 0; i < sim->n_switches; i++)
        rs_switch_free(sim, sim->switches[i]);
    free(sim->switches);
    sim->switches = NULL;
    sim->n_switches = 0;
}

/* The free port of a node, or NULL with the failure recorded. */
static rs_port *free_port(rs_sim *sim, int kind, int node, int *rc)
{
    *rc = RS_OK;
    if (kind == RS_NODE_HOST) {
        if (node < 0 || (uint32_t)node >= sim->n_hosts) {
            *rc = rs_sim_fail(sim, RS_ERR_INVAL, "no host %d (hosts 0..%d)", node, (int)sim->n_hosts - 1);
            return NULL;
        }
        rs_port *p = &sim->hosts[node]->port;
        if (p->tx) {
            *rc = rs_sim_fail(sim, RS_ERR_STATE, "host %d already has a link (one port per host)", node);
            return NULL;
        }
        return p;
    }
    if (kind != RS_NODE_SWITCH) {
        *rc = rs_sim_fail(sim, RS_ERR_INVAL, "node kind %d outside 0 (host), 1 (switch)", kind);
        return NULL;
    }
    rs_switch *sw = get_switch(sim, node);
    if (!sw) {
        *rc = rs_sim_fail(sim, RS_ERR_INVAL, "no switch %d (switches 0..%d)", node, (int)sim->n_switches - 1);
        return NULL;
    }
    if (sw->n_used >= sw->cfg.n_ports) {
        *rc = rs_sim_fail(sim, RS_ERR_STATE, "switch %d has all %u ports connected", node, sw->cfg.n_ports);
        return NULL;
    }
    return &sw->ports[sw->n_used].port;
}

int rs_fabric_connect(rs_sim *sim, int kind_a, int a, int kind_b, int b, int64_t rate_bps, int64_t delay_ps)
{
    if (kind_a == kind_b && a == b)
        return rs_sim_fail(sim, RS_ERR_INVAL, "cannot connect a node to itself");
    if (rate_bps <= 0 || delay_ps < 0)
        return rs_sim_fail(sim, RS_ERR_INVAL, "link rate must be > 0 and delay >= 0");
    int rc;
    rs_port *pa = free_port(sim, kind_a, a, &rc);
    if (!pa)
        return rc;
    rs_port *pb = free_port(sim, kind_b, b, &rc);
    if (!pb)
        return rc;
    rs_link **nl = realloc(sim->links, (sim->n_links + 2) * sizeof(*nl));
    if (!nl)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->links = nl;
    rs_link *ab = rs_link_new(sim, pa, pb, rate_bps, delay_ps);
    rs_link *ba = ab ? rs_link_new(sim, pb, pa, rate_bps, delay_ps) : NULL;
    if (!ab || !ba)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    if (kind_a == RS_NODE_SWITCH)
        sim->switches[a]->n_used++;
    if (kind_b == RS_NODE_SWITCH)
        sim->switches[b]->n_used++;
    sim->routes_dirty = 1;
    return ab->id;
}

static rs_link *get_link(const rs_sim *sim, int link)
{
    return (link >= 0 && (uint32_t)link < sim->n_links) ? sim->links[link] : NULL;
}

static void port_end(const rs_port *p, int *kind, int *node, int *port)
{
    *kind = p->owner_kind;
    *node = p->owner_kind == RS_NODE_HOST ? p->host->id : p->sw->id;
    *port = p->index;
}

int rs_link_ends(const rs_sim *sim, int link, int *fk, int *fn, int *fp, int *tk, int *tn, int *tp)
{
    const rs_link *l = get_link(sim, link);
    if (!l)
        return RS_ERR_INVAL;
    port_end(l->from, fk, fn, fp);
    port_end(l->to, tk, tn, tp);
    return RS_OK;
}

/* Both directions of a link: ids are allocated in pairs (even = a->b). */
static void set_state(rs_sim *sim, int link, int up)
{
    int first = link & ~1;
    for (int i = first; i < first + 2 && (uint32_t)i < sim->n_links; i++)
        sim->links[i]->down = !up;
    sim->routes_dirty = 1;
    if (up)
        for (int i = first; i < first + 2 && (uint32_t)i < sim->n_links; i++)
            rs_port_kick(sim, sim->links[i]->from);
}

int rs_link_set_up(rs_sim *sim, int link, int up)
{
    if (!get_link(sim, link))
        return rs_sim_fail(sim, RS_ERR_INVAL, "no link %d", link);
    set_state(sim, link, up);
    return RS_OK;
}

int rs_link_schedule_up(rs_sim *sim, int link, int up, int64_t t_ps)
{
    rs_link *l = get_link(sim, link);
    if (!l)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no link %d", link);
    if (t_ps < sim->now_ps)
        return rs_sim_fail(sim, RS_ERR_INVAL, "time %lld ps is before now (%lld ps)", (long long)t_ps,
                           (long long)sim->now_ps);
    /* each direction holds one pending change: a link can have two (e.g. fail, then recover) */
    rs_link *pair = sim->links[link ^ 1];
    if (l->state_change.armed)
        l = pair;
    if (l->state_change.armed)
        return rs_sim_fail(sim, RS_ERR_STATE, "link %d already has 2 state changes pending (the limit)", link);
    l->pending_up = up;
    rs_sim_arm(sim, &l->state_change, t_ps);
    return sim->failed ? RS_ERR_NOMEM : RS_OK;
}

void rs_link_state_event(rs_sim *sim, rs_link *l)
{
    set_state(sim, l->id, l->pending_up);
}

int rs_switch_port_stats(const rs_sim *sim, int sw, int port, rs_swport_stats *out)
{
    const rs_switch *s = get_switch(sim, sw);
    if (!s || port < 0 || (uint32_t)port >= s->cfg.n_ports)
        return RS_ERR_INVAL;
    *out = s->ports[port].stats;
    return RS_OK;
}

int rs_switch_queue_bytes(const rs_sim *sim, int sw, int port, int prio, uint64_t *egress, uint64_t *ingress)
{
    const rs_switch *s = get_switch(sim, sw);
    if (!s || port < 0 || (uint32_t)port >= s->cfg.n_ports || prio < 0 || prio >= RS_NPRIO)
        return RS_ERR_INVAL;
    size_t i = (size_t)port * RS_NPRIO + (size_t)prio;
    *egress = s->mmu.eg_bytes[i];
    *ingress = s->mmu.in_bytes[i] + s->mmu.hdrm_bytes[i];
    return RS_OK;
}

static rs_port *find_port(const rs_sim *sim, int kind, int node, int port)
{
    rs_port *p = NULL;
    if (kind == RS_NODE_HOST && node >= 0 && (uint32_t)node < sim->n_hosts)
        p = &sim->hosts[node]->port;
    const rs_switch *s = kind == RS_NODE_SWITCH ? get_switch(sim, node) : NULL;
    if (s && port >= 0 && (uint32_t)port < s->cfg.n_ports)
        p = &s->ports[port].port;
    return p;
}

int rs_port_pause_stats(const rs_sim *sim, int kind, int node, int port, rs_pause_stats *out)
{
    const rs_port *p = find_port(sim, kind, node, port);
    if (!p)
        return RS_ERR_INVAL;
    rs_pause_stats_now(p, sim->now_ps, out);
    return RS_OK;
}

int rs_port_inject_pfc(rs_sim *sim, int kind, int node, int port, uint16_t class_enable, const uint16_t quanta[8])
{
    rs_port *p = find_port(sim, kind, node, port);
    if (!p)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no port %d on %s %d", port, kind ? "switch" : "host", node);
    if (class_enable > 0xFF)
        return rs_sim_fail(sim, RS_ERR_INVAL, "class-enable vector 0x%x outside 0..0xff", class_enable);
    rs_pkt *pkt = rs_pkt_alloc(&sim->pool);
    if (!pkt)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    pkt->kind = RS_PKT_PFC;
    pkt->pfc_class_enable = class_enable;
    for (int i = 0; i < RS_NPRIO; i++)
        pkt->pfc_quanta[i] = quanta[i];
    rs_pause_receive(sim, p, pkt);
    return sim->failed ? RS_ERR_NOMEM : RS_OK;
}

static int ensure_routes(rs_sim *sim)
{
    return sim->routes_dirty ? rs_routes_compute(sim) : RS_OK;
}

int rs_switch_next_hops(rs_sim *sim, int sw, int dst, uint16_t *out, int cap)
{
    rs_switch *s = get_switch(sim, sw);
    if (!s)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no switch %d", sw);
    if (dst < 0 || (uint32_t)dst >= sim->n_hosts)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d", dst);
    int rc = ensure_routes(sim);
    if (rc != RS_OK)
        return rc;
    int n = s->nh_cnt[dst];
    for (int i = 0; i < n && i < cap; i++)
        out[i] = s->nh[(size_t)dst * s->cfg.n_ports + (size_t)i];
    return n;
}

int rs_switch_ecmp_port(rs_sim *sim, int sw, int dst, uint32_t sip, uint32_t dip, uint16_t sport)
{
    uint16_t hops[MAX_PORTS];
    int n = rs_switch_next_hops(sim, sw, dst, hops, (int)MAX_PORTS);
    if (n <= 0)
        return n < 0 ? n : -1;
    return n == 1 ? hops[0] : hops[rs_switch_ecmp_hash(sim->switches[sw], sip, dip, sport) % (uint32_t)n];
}

int rs_switch_set_route(rs_sim *sim, int sw, int dst, const uint16_t *ports, int n)
{
    rs_switch *s = get_switch(sim, sw);
    if (!s)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no switch %d", sw);
    if (dst < 0 || (uint32_t)dst >= sim->n_hosts)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d (hosts 0..%d)", dst, (int)sim->n_hosts - 1);
    if (n < 0 || (uint32_t)n > s->n_used)
        return rs_sim_fail(sim, RS_ERR_INVAL, "%d next hops: must be 0..%u (connected ports)", n, s->n_used);
    for (int i = 0; i < n; i++)
        if (ports[i] >= s->n_used)
            return rs_sim_fail(sim, RS_ERR_INVAL, "switch %d: port %u is not connected (ports 0..%u)", sw,
                               ports[i], s->n_used - 1);
    uint32_t i = 0;
    while (i < s->n_pins && s->pins[i].dst != (uint32_t)dst)
        i++;
    if (i == s->n_pins) {
        if (n == 0)
            return RS_OK;
        rs_route_pin *np = realloc(s->pins, (s->n_pins + 1) * sizeof(*np));
        if (!np)
            return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
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
            return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
        memcpy(pp, ports, (size_t)n * sizeof(uint16_t));
        s->pins[i].ports = pp;
        s->pins[i].n = (uint16_t)n;
    }
    sim->routes_dirty = 1;
    return RS_OK;
}

static rs_monitor *monitor(rs_sim *sim)
{
    if (!sim->monitor) {
        rs_monitor *m = calloc(1, sizeof(*m));
        if (!m)
            return NULL;
        m->tick.owner = m;
        m->tick.kind = RS_EV_MONITOR;
        m->dl_time_ps = -1;
        sim->monitor = m;
    }
    return sim->monitor;
}

int rs_pfc_watchdog(rs_sim *sim, int64_t poll_ps, int64_t detect_ps, int64_t restore_ps)
{
    if (poll_ps < 0 || (poll_ps > 0 && (detect_ps < poll_ps || restore_ps <= 0)))
        return rs_sim_fail(sim, RS_ERR_INVAL,
                           "watchdog: poll %lld ps must be >= 0; detect (%lld ps) >= poll; restore (%lld ps) > 0",
                           (long long)poll_ps, (long long)detect_ps, (long long)restore_ps);
    rs_monitor *m = monitor(sim);
    if (!m)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    m->wd_poll_ps = poll_ps;
    m->wd_detect_ps = detect_ps;
    m->wd_restore_ps = restore_ps;
    m->next_wd_ps = sim->now_ps + poll_ps;
    rs_timer_cancel(&m->tick);
    rs_monitor_resume(sim);
    return sim->failed ? RS_ERR_NOMEM : RS_OK;
}

int rs_deadlock_detector(rs_sim *sim, int64_t period_ps)
{
    if (period_ps < 0)
        return rs_sim_fail(sim, RS_ERR_INVAL, "deadlock check period %lld ps must be >= 0", (long long)period_ps);
    rs_monitor *m = monitor(sim);
    if (!m)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    m->dl_period_ps = period_ps;
    m->next_dl_ps = sim->now_ps + period_ps;
    rs_timer_cancel(&m->tick);
    rs_monitor_resume(sim);
    return sim->failed ? RS_ERR_NOMEM : RS_OK;
}

int rs_deadlock_result(const rs_sim *sim, int64_t *t_ps, rs_queue_ref *cycle, int cap)
{
    const rs_monitor *m = sim->monitor;
    if (!m || m->dl_time_ps < 0)
        return 0;
    *t_ps = m->dl_time_ps;
    for (int i = 0; i < m->dl_len && i < cap; i++)
        cycle[i] = m->dl_cycle[i];
    return m->dl_len;
}

int rs_host_set_rx(rs_sim *sim, int host, int enable, int64_t rate_bps, uint64_t buf_bytes, uint64_t xoff_bytes,
                   uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta)
{
    if (host < 0 || (uint32_t)host >= sim->n_hosts)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d (hosts 0..%d)", host, (int)sim->n_hosts - 1);
    rs_host *h = sim->hosts[host];
    if (!enable) {
        if (h->rx && h->rx->head)
            return rs_sim_fail(sim, RS_ERR_BUSY, "host %d: receive buffer still holds %llu bytes", host,
                               (unsigned long long)h->rx->bytes);
        rs_rxpipe_free(sim, h->rx);
        h->rx = NULL;
        return RS_OK;
    }
    if (rate_bps < 0 || xon_bytes > xoff_bytes || xoff_bytes > buf_bytes || quanta == 0)
        return rs_sim_fail(sim, RS_ERR_INVAL,
                           "receiver: need rate >= 0 (0 = stuck), xon (%llu) <= xoff (%llu) <= buffer (%llu), "
                           "quanta 1..65535", (unsigned long long)xon_bytes, (unsigned long long)xoff_bytes,
                           (unsigned long long)buf_bytes);
    if (!h->rx) {
        h->rx = calloc(1, sizeof(*h->rx));
        if (!h->rx)
            return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
        h->rx->host = h;
        h->rx->drain.owner = h->rx;
        h->rx->drain.kind = RS_EV_RX_DRAIN;
        h->rx->refresh.owner = h->rx;
        h->rx->refresh.kind = RS_EV_RX_REFRESH;
    }
    rs_rxpipe *rx = h->rx;
    rx->rate_bps = rate_bps;
    rx->buf_bytes = buf_bytes;
    rx->xoff_bytes = xoff_bytes;
    rx->xon_bytes = xon_bytes;
    rx->prio_mask = prio_mask;
    rx->quanta = quanta;
    rs_timer_cancel(&rx->drain); /* the new rate applies from the next frame */
    if (rx->head && rate_bps > 0) {
        uint64_t bits = (uint64_t)rs_frame_len(rx->head) * 8;
        rs_sim_arm(sim, &rx->drain, sim->now_ps + (int64_t)((bits * 1000000000000ull + (uint64_t)rate_bps - 1) /
                                                            (uint64_t)rate_bps));
    }
    return RS_OK;
}

int rs_host_rx_stats_get(const rs_sim *sim, int host, rs_host_rx_stats *out)
{
    if (host < 0 || (uint32_t)host >= sim->n_hosts)
        return RS_ERR_INVAL;
    const rs_rxpipe *rx = sim->hosts[host]->rx;
    *out = (rs_host_rx_stats){0};
    if (rx)
        *out = (rs_host_rx_stats){rx->pfc_xoff_sent, rx->pfc_xon_sent, rx->dropped, rx->peak_bytes, rx->bytes};
    return RS_OK;
}

int rs_sampler_config(rs_sim *sim, int64_t period_ps, const rs_queue_ref *probes, uint32_t n_probes,
                      uint32_t max_samples)
{
    if (period_ps <= 0 || n_probes == 0 || max_samples == 0)
        return rs_sim_fail(sim, RS_ERR_INVAL, "sampler: need period > 0, at least one probe and max_samples > 0");
    for (uint32_t k = 0; k < n_probes; k++) {
        const rs_switch *s = get_switch(sim, probes[k].sw);
        if (!s || probes[k].port < 0 || (uint32_t)probes[k].port >= s->cfg.n_ports || probes[k].prio < 0 ||
            probes[k].prio >= RS_NPRIO)
            return rs_sim_fail(sim, RS_ERR_INVAL, "probe %u: (switch %d, port %d, priority %d) does not exist", k,
                               probes[k].sw, probes[k].port, probes[k].prio);
    }
    if ((uint64_t)n_probes * max_samples > (1ull << 31))
        return rs_sim_fail(sim, RS_ERR_INVAL, "sampler: probes x max_samples above 2^31");
    rs_monitor *m = monitor(sim);
    if (!m)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    size_t cells = (size_t)n_probes * max_samples;
    free(m->probes);
    free(m->s_t);
    free(m->s_egress);
    free(m->s_ingress);
    free(m->s_paused);
    m->probes = malloc(n_probes * sizeof(*m->probes));
    m->s_t = malloc(max_samples * sizeof(int64_t));
    m->s_egress = malloc(cells * sizeof(uint64_t));
    m->s_ingress = malloc(cells * sizeof(uint64_t));
    m->s_paused = malloc(cells);
    if (!m->probes || !m->s_t || !m->s_egress || !m->s_ingress || !m->s_paused) {
        m->sample_period_ps = 0;
        m->n_probes = m->max_samples = 0;
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory for %u samples of %u probes", max_samples, n_probes);
    }
    memcpy(m->probes, probes, n_probes * sizeof(*probes));
    m->n_probes = n_probes;
    m->max_samples = max_samples;
    m->n_samples = 0;
    m->samples_missed = 0;
    m->sample_period_ps = period_ps;
    m->next_sample_ps = sim->now_ps;
    rs_timer_cancel(&m->tick);
    rs_monitor_resume(sim);
    return sim->failed ? RS_ERR_NOMEM : RS_OK;
}

int rs_sampler_read(const rs_sim *sim, int64_t *t, uint64_t *egress, uint64_t *ingress, uint8_t *paused,
                    uint64_t *missed)
{
    const rs_monitor *m = sim->monitor;
    if (!m || !m->sample_period_ps)
        return 0;
    size_t cells = (size_t)m->n_samples * m->n_probes;
    memcpy(t, m->s_t, m->n_samples * sizeof(int64_t));
    memcpy(egress, m->s_egress, cells * sizeof(uint64_t));
    memcpy(ingress, m->s_ingress, cells * sizeof(uint64_t));
    memcpy(paused, m->s_paused, cells);
    *missed = m->samples_missed;
    return (int)m->n_samples;
}

int rs_host_set_dscp_map(rs_sim *sim, int host, const uint8_t *map)
{
    if (host < 0 || (uint32_t)host >= sim->n_hosts)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d (hosts 0..%d)", host, (int)sim->n_hosts - 1);
    for (int i = 0; i < 64; i++)
        if (map[i] > 7)
            return rs_sim_fail(sim, RS_ERR_INVAL, "dscp_map[%d] = %u outside 0..7", i, map[i]);
    memcpy(sim->hosts[host]->dscp_to_prio, map, 64);
    return RS_OK;
}
