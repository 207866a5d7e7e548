/* The simulation object: owns the event queue, packet pool, hosts and links,
 * and runs the event loop. */
#include "sim/sim_impl.h"
#include "sim/par.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "link/credit.h"
#include "link/monitor.h"
#include "link/pause.h"
#include "link/pfc.h"
#include "link/rxpipe.h"
#include "rdmasim/fabric.h"
#include "rdmasim/ib.h"
#include "engine/trace.h"
#include "rdmasim/trace.h"
#include "transport/transport.h"
#include "workload/flows_impl.h"

rs_sim *rs_sim_new(uint64_t seed)
{
    rs_sim *sim = calloc(1, sizeof(*sim));
    if (!sim)
        return NULL;
    sim->tp.net.eng.seed = seed;
    if (rs_engine_init(&sim->tp.net.eng, 1024) != 0) {
        free(sim);
        return NULL;
    }
    rs_pool_init(&sim->tp.pool);
    sim->tp.net.pool = &sim->tp.pool;
    sim->uet.net = &sim->tp.net;
    sim->uet.pool = &sim->tp.pool;
    rs_slab_init(&sim->tp.qp_slab, sizeof(rs_qp), _Alignof(rs_qp), 16);
    rs_slab_init(&sim->tp.qp_cc_slab, sizeof(rs_qp) + RS_CC_STATE_BYTES, _Alignof(rs_qp), 16);
    rs_slab_init(&sim->tp.cc_slab, RS_CC_STATE_BYTES, 64, 16);
    return sim;
}

void rs_sim_free(rs_sim *sim)
{
    if (!sim)
        return;
    rs_sim_pcap_close(sim);
    rs_par_free(sim->par);
    rs_trace_stop(&sim->tp.net.eng);
    rs_fabric_free(&sim->tp.net);
    rs_flows_free(sim->flows);
    rs_uet_free(&sim->uet);
    rs_sim_mux_free(sim);
    for (uint32_t i = 0; i < sim->tp.n_hosts; i++) {
        rs_port *port = &sim->tp.hosts[i]->port;
        rs_rxpipe_free(&sim->tp.net, port->rx);
        rs_rxpipe_free(&sim->tp.net, port->rx_off);
        port->rx = port->rx_off = NULL;
        rs_credit_free(&sim->tp.net, port);
    }
    for (uint32_t i = 0; i < sim->tp.n_hosts; i++)
        rs_host_free(sim->tp.hosts[i]);
    for (uint32_t i = 0; i < sim->tp.net.n_links; i++) {
        free(sim->tp.net.links[i]->drops);
        free(sim->tp.net.links[i]->loss_changes);
        free(sim->tp.net.links[i]);
    }
    free(sim->tp.hosts);
    free(sim->tp.net.host_ports);
    free(sim->tp.net.links);
    rs_engine_free(&sim->tp.net.eng);
    rs_pool_free(&sim->tp.pool);
    rs_slab_destroy(&sim->tp.qp_slab);
    rs_slab_destroy(&sim->tp.qp_cc_slab);
    rs_slab_destroy(&sim->tp.cc_slab);
    free(sim);
}

const char *rs_sim_errmsg(const rs_sim *sim) { return sim->tp.net.eng.errmsg; }
int64_t rs_sim_now(const rs_sim *sim) { return sim->tp.net.eng.now_ps; }
uint64_t rs_sim_events(const rs_sim *sim) { return sim->events; }

void rs_sim_pool_stats(const rs_sim *sim, uint64_t out[4])
{
    out[0] = sim->tp.pool.pkts_in_use;
    out[1] = sim->tp.pool.pkts_peak;
    out[2] = sim->tp.pool.pkts_total;
    out[3] = sim->tp.pool.payloads_total;
}

int rs_sim_pool_trim(rs_sim *sim) { return rs_pool_trim(&sim->tp.pool); }

int rs_sim_fail(rs_sim *sim, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rs_engine_vfail(&sim->tp.net.eng, code, fmt, ap);
    va_end(ap);
    return code;
}

void rs_sim_stop_after_next_frame(rs_sim *sim) { sim->tp.net.stop_after_frame = 1; }

int rs_sim_set_link_layer(rs_sim *sim, int link_layer)
{
    rs_net *net = &sim->tp.net;
    if (link_layer != RS_LL_ROCE && link_layer != RS_LL_IB)
        return rs_sim_fail(sim, RS_ERR_INVAL, "link_layer %d: allowed %d (RoCEv2) or %d (InfiniBand)", link_layer,
                           RS_LL_ROCE, RS_LL_IB);
    if (link_layer != net->link_layer && (net->n_hosts || net->n_switches || net->pcap))
        return rs_sim_fail(sim, RS_ERR_INVAL, "link_layer must be set before any host, switch or capture");
    net->link_layer = (uint8_t)link_layer;
    return RS_OK;
}

int rs_sim_pcap_open(rs_sim *sim, const char *path, uint32_t snaplen)
{
    return rs_sim_pcap_open_as(sim, path, snaplen, 0);
}

int rs_sim_pcap_open_as(rs_sim *sim, const char *path, uint32_t snaplen, uint32_t linktype)
{
    int ib = sim->tp.net.link_layer == RS_LL_IB;
    if (!linktype)
        linktype = ib ? RS_LINKTYPE_INFINIBAND : RS_LINKTYPE_ETHERNET;
    if (ib ? linktype != RS_LINKTYPE_INFINIBAND && linktype != RS_LINKTYPE_ERF : linktype != RS_LINKTYPE_ETHERNET)
        return rs_sim_fail(sim, RS_ERR_INVAL, "pcap link type %u: allowed %s", linktype,
                           ib ? "247 (InfiniBand) or 197 (ERF) on an InfiniBand fabric" : "1 (Ethernet) on RoCE");
    if (snaplen > RS_PCAP_SNAPLEN_MAX)
        return rs_sim_fail(sim, RS_ERR_INVAL, "pcap snaplen %u: allowed 1..%u bytes, or 0 for whole frames",
                           snaplen, RS_PCAP_SNAPLEN_MAX);
    rs_sim_pcap_close(sim);
    rs_pcap *pc = malloc(sizeof(*pc));
    if (!pc)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    if (rs_pcap_open_linktype(pc, path, snaplen, linktype) != 0) {
        int e = errno;
        free(pc);
        rs_sim_fail(sim, RS_ERR_IO, "cannot open pcap file '%s' for writing: %s", path, strerror(e));
        errno = e; /* for the caller's OSError */
        return RS_ERR_IO;
    }
    sim->tp.net.pcap = pc;
    return rs_sim_pcap_links(sim, NULL, 0); /* every link until told otherwise */
}

void rs_sim_pcap_flush(rs_sim *sim)
{
    if (sim->tp.net.pcap)
        rs_pcap_flush(sim->tp.net.pcap);
}

int rs_sim_pcap_close(rs_sim *sim)
{
    if (!sim->tp.net.pcap)
        return RS_OK;
    int rc = rs_pcap_close(sim->tp.net.pcap);
    int err = sim->tp.net.pcap->err;
    free(sim->tp.net.pcap);
    sim->tp.net.pcap = NULL;
    if (rc == 0)
        return RS_OK;
    rs_sim_fail(sim, RS_ERR_IO, "error writing pcap file: %s", strerror(err));
    errno = err; /* for the caller's OSError */
    return RS_ERR_IO;
}

void rs_sim_dispatch(rs_sim *sim, const rs_event *ev)
{
    rs_timer *tm = ev->timer;
    switch (tm->kind) {
    case RS_EV_PORT_TX_DONE:
        rs_port_tx_done(&sim->tp.net, tm->owner);
        break;
    case RS_EV_LINK_ARRIVAL:
        rs_link_arrival(&sim->tp.net, tm->owner);
        break;
    case RS_EV_QP_RTO:
        rs_comp_rto(&sim->tp, tm->owner);
        break;
    case RS_EV_QP_RNR:
        rs_req_rnr_done(&sim->tp, tm->owner);
        break;
    case RS_EV_QP_ACK:
        rs_resp_ack_due(&sim->tp, tm->owner);
        break;
    case RS_EV_QP_REORDER:
        rs_irn_reorder_due(&sim->tp, tm->owner);
        break;
    case RS_EV_QP_RESP_DRAIN:
        rs_resp_drain_held(&sim->tp, tm->owner);
        break;
    case RS_EV_NIC_PACE:
        rs_port_kick(&sim->tp.net, &((rs_host *)tm->owner)->port);
        break;
    case RS_EV_PORT_PAUSE_END:
        rs_pause_expire(&sim->tp.net, tm->owner);
        break;
    case RS_EV_PORT_PFC_RESPOND:
        rs_pause_respond(&sim->tp.net, tm->owner);
        break;
    case RS_EV_PFC_REFRESH:
        rs_pfc_refresh(&sim->tp.net, tm->owner);
        break;
    case RS_EV_LINK_STATE:
        rs_link_state_event(&sim->tp.net, tm->owner);
        break;
    case RS_EV_MONITOR:
        rs_monitor_tick(&sim->tp.net, tm->owner);
        break;
    case RS_EV_RX_DRAIN:
        rs_rxpipe_drain(&sim->tp.net, tm->owner);
        break;
    case RS_EV_CREDIT_FC:
        rs_credit_fc_timer(&sim->tp.net, tm->owner);
        break;
    case RS_EV_RX_REFRESH:
        rs_rxpipe_refresh(&sim->tp.net, tm->owner);
        break;
    case RS_EV_FLOWS:
        rs_flows_event(tm->owner);
        break;
    case RS_EV_FLOWS_REAP:
        rs_flows_reap_event(tm->owner);
        break;
    case RS_EV_NIC_LOOPBACK:
        rs_nic_loopback_arrival(&sim->tp, tm->owner);
        break;
    case RS_EV_UET_RTO:
        rs_uet_rto(&sim->uet, tm->owner);
        break;
    case RS_EV_UET_PACER:
        rs_uet_pacer(&sim->uet, tm->owner);
        break;
    case RS_EV_UET_IDLE:
        rs_uet_idle(&sim->uet, tm->owner);
        break;
    default:
        break;
    }
}

static int cq_reached(rs_sim *sim, const rs_run_args *a)
{
    if (a->watch_host < 0)
        return 0;
    return rs_cq_count(sim, a->watch_host, a->watch_cq) >= (int)a->watch_count;
}

/* The watched CQ's completion count, read once per event without a lookup: CQs are created
 * and destroyed only on the control path, never while the loop runs. */
static const uint32_t *watched_count(const rs_sim *sim, const rs_run_args *a)
{
    if (a->watch_host < 0 || (uint32_t)a->watch_host >= sim->tp.n_hosts)
        return NULL;
    const rs_host *h = sim->tp.hosts[a->watch_host];
    if (a->watch_cq < 0 || (uint32_t)a->watch_cq >= h->n_cqs || !h->cqs[a->watch_cq].ring)
        return NULL;
    return &h->cqs[a->watch_cq].count;
}

static int run_loop(rs_sim *sim, const rs_run_args *a);

int rs_sim_run(rs_sim *sim, const rs_run_args *a)
{
    /* every node's key counter exists before the loop (entity ids: engine.h) */
    rs_engine *e = &sim->tp.net.eng;
    uint32_t n = sim->tp.n_hosts > sim->tp.net.n_switches ? sim->tp.n_hosts : sim->tp.net.n_switches;
    if (rs_engine_ents(e, 2u * n + 1u) != 0) {
        rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory for %u nodes' event keys", n);
        return RS_RUN_ERROR;
    }
    int rc = sim->par ? rs_par_run(sim, a) : run_loop(sim, a);
    rs_engine_enter(e, RS_ENT_CONTROL); /* calls between runs arm with the control path's keys */
    return rc;
}

static int run_loop(rs_sim *sim, const rs_run_args *a)
{
    /* until: no limit (INT64_MAX), a checked time, or now (the clock may have run past the limit) */
    const int64_t u = a->until_ps;
    if (u != INT64_MAX && (u < 0 || (u > RS_MAX_TIME_PS && u > sim->tp.net.eng.now_ps))) {
        rs_sim_fail(sim, RS_ERR_INVAL, "run until %lld ps: allowed 0..%lld, or no limit", (long long)a->until_ps,
                    (long long)RS_MAX_TIME_PS);
        return RS_RUN_ERROR;
    }
    if (cq_reached(sim, a))
        return RS_RUN_CQ;
    if (sim->tp.net.frame_stop) { /* the awaited frame already went out (posting kicked an idle port) */
        sim->tp.net.frame_stop = 0;
        return RS_RUN_STEP;
    }
    rs_monitor_resume(&sim->tp.net);
    const uint32_t *watch = watched_count(sim, a);
    const uint32_t watch_n = a->watch_count;
    const int64_t until = a->until_ps;
    /* stop after this many more events (max_events 0: never) */
    uint64_t left = a->max_events ? a->max_events : UINT64_MAX;
    rs_eventq *q = &sim->tp.net.eng.evq;
    for (;;) {
        if (sim->tp.net.routes_dirty && rs_routes_compute(&sim->tp.net) != RS_OK)
            sim->tp.net.eng.failed = 1;
        if (sim->tp.net.eng.failed)
            return RS_RUN_ERROR;
        const rs_event *head = rs_eventq_head(q);
        if (!head) {
            /* run(until=T) ends at T even when the network went quiet earlier; a run
             * waiting for completions reports idle instead (they can never come) */
            if (a->watch_host < 0 && until != INT64_MAX && until > sim->tp.net.eng.now_ps) {
                sim->tp.net.eng.now_ps = until;
                return RS_RUN_UNTIL;
            }
            return RS_RUN_IDLE;
        }
        if (head->t_ps > until) {
            if (until > sim->tp.net.eng.now_ps)
                sim->tp.net.eng.now_ps = until;
            return RS_RUN_UNTIL;
        }
        if (!left)
            return RS_RUN_MAX_EVENTS;
        rs_event ev = *head;
        rs_eventq_consume_head(q); /* the first timer the handler arms takes its slot */
        ev.timer->armed = 0;
        sim->tp.net.eng.now_ps = ev.t_ps;
        rs_engine_enter(&sim->tp.net.eng, ev.timer->ent);
        rs_sim_dispatch(sim, &ev);
        left--;
        sim->events++;
        if (sim->tp.peer_stop | sim->tp.net.frame_stop | sim->flows_stop) {
            if (sim->tp.peer_stop) {
                sim->tp.peer_stop = 0;
                return RS_RUN_PEER;
            }
            if (sim->tp.net.frame_stop) {
                sim->tp.net.frame_stop = 0;
                return RS_RUN_STEP;
            }
            sim->flows_stop = 0;
            return RS_RUN_FLOWS_DONE;
        }
        if (watch && (int)*watch >= (int)watch_n) /* as cq_reached */
            return RS_RUN_CQ;
    }
}

/* ---- topology ---- */

int rs_host_add(rs_sim *sim)
{
    rs_host **nh = realloc(sim->tp.hosts, (sim->tp.n_hosts + 1) * sizeof(*nh));
    if (!nh)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->tp.hosts = nh;
    rs_port **np = realloc(sim->tp.net.host_ports, (sim->tp.n_hosts + 1) * sizeof(*np));
    if (!np)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->tp.net.host_ports = np;
    rs_host *h = rs_host_new(&sim->tp, (int)sim->tp.n_hosts);
    if (!h)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->tp.hosts[sim->tp.n_hosts] = h;
    sim->tp.net.host_ports[sim->tp.n_hosts] = &h->port; /* the link layer knows a host by its port */
    sim->tp.net.n_hosts = sim->tp.n_hosts + 1;
    sim->tp.n_hosts++;
    if (sim->mux && rs_sim_uet_enable(sim) != RS_OK) /* UET is on: the new host's port serves it too */
        return RS_ERR_NOMEM;
    return (int)sim->tp.n_hosts - 1;
}

int rs_link_connect(rs_sim *sim, int a, int b, int64_t rate_bps, int64_t delay_ps)
{
    if (a < 0 || b < 0 || (uint32_t)a >= sim->tp.n_hosts || (uint32_t)b >= sim->tp.n_hosts || a == b)
        return rs_sim_fail(sim, RS_ERR_INVAL, "hosts %d and %d: need two different existing hosts", a, b);
    if (rate_bps <= 0 || delay_ps < 0)
        return rs_sim_fail(sim, RS_ERR_INVAL, "link rate must be > 0 and delay >= 0");
    rs_port *pa = &sim->tp.hosts[a]->port, *pb = &sim->tp.hosts[b]->port;
    if (pa->tx || pb->tx)
        return rs_sim_fail(sim, RS_ERR_STATE, "host %d already has a link (one port per host)",
                           pa->tx ? a : b);
    rs_link **nl = realloc(sim->tp.net.links, (sim->tp.net.n_links + 2) * sizeof(*nl));
    if (!nl)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    sim->tp.net.links = nl;
    rs_link *ab = rs_link_new(&sim->tp.net, pa, pb, rate_bps, delay_ps);
    rs_link *ba = ab ? rs_link_new(&sim->tp.net, pb, pa, rate_bps, delay_ps) : NULL;
    if (!ab || !ba)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    return ab->id;
}

static rs_link *get_link(const rs_sim *sim, int link)
{
    return (link >= 0 && (uint32_t)link < sim->tp.net.n_links) ? sim->tp.net.links[link] : NULL;
}

int rs_link_set_loss(rs_sim *sim, int link, double p)
{
    rs_link *l = get_link(sim, link);
    if (!l)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no link %d", link);
    if (!(p >= 0.0 && p <= 1.0))
        return rs_sim_fail(sim, RS_ERR_INVAL, "loss probability %g outside [0, 1]", p);
    l->loss_prob = p;
    return RS_OK;
}

int rs_link_set_gilbert(rs_sim *sim, int link, double p_good_bad, double p_bad_good, double loss_good,
                        double loss_bad)
{
    rs_link *l = get_link(sim, link);
    if (!l)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no link %d", link);
    const double v[4] = {p_good_bad, p_bad_good, loss_good, loss_bad};
    for (int i = 0; i < 4; i++)
        if (!(v[i] >= 0.0 && v[i] <= 1.0))
            return rs_sim_fail(sim, RS_ERR_INVAL, "Gilbert-Elliott probability %g outside [0, 1]", v[i]);
    l->gilbert = (rs_gilbert){.enabled = 1, .p_good_bad = p_good_bad, .p_bad_good = p_bad_good,
                              .loss_good = loss_good, .loss_bad = loss_bad};
    return RS_OK;
}

int rs_link_add_drop(rs_sim *sim, int link, int match, uint64_t value, uint32_t count)
{
    if (match != RS_DROP_NTH && match != RS_DROP_PSN)
        return rs_sim_fail(sim, RS_ERR_INVAL, "unknown drop match %d", match);
    if (match == RS_DROP_PSN && value > RS_PSN_MASK)
        return rs_sim_fail(sim, RS_ERR_INVAL, "PSN %llu outside 0..16777215", (unsigned long long)value);
    rs_drop_spec spec = {.fields = match == RS_DROP_NTH ? RS_DROPF_NTH : RS_DROPF_PSN, .count = count,
                         .nth = value, .psn = (uint32_t)(match == RS_DROP_PSN ? value : 0)};
    return rs_link_add_drop_rule(sim, link, &spec); /* link/link.c */
}

int rs_link_get_stats(const rs_sim *sim, int link, rs_link_stats *out)
{
    const rs_link *l = get_link(sim, link);
    if (!l)
        return RS_ERR_INVAL;
    *out = l->stats;
    return RS_OK;
}

int rs_host_info(const rs_sim *sim, int host, uint8_t mac[6], uint32_t *ip)
{
    if (host < 0 || (uint32_t)host >= sim->tp.n_hosts)
        return RS_ERR_INVAL;
    const rs_port_addr *a = &sim->tp.hosts[host]->port.addr;
    memcpy(mac, a->mac, 6);
    *ip = a->ip;
    return RS_OK;
}

int rs_host_ib_addr(const rs_sim *sim, int host, uint16_t *lid, uint8_t gid[16])
{
    if (host < 0 || (uint32_t)host >= sim->tp.n_hosts)
        return RS_ERR_INVAL;
    const rs_port_addr *a = &sim->tp.hosts[host]->port.addr;
    *lid = a->lid;
    memcpy(gid, a->gid, 16);
    return RS_OK;
}

#ifdef RDMASIM_MUTANTS
int rs_sim_set_mutant(rs_sim *sim, int mutant)
{
    if (mutant < 0 || mutant >= RS_MUT__COUNT)
        return rs_sim_fail(sim, RS_ERR_INVAL, "unknown mutant %d", mutant);
    sim->tp.net.eng.mutant = mutant;
    return RS_OK;
}
#endif

/* ---- trace (rdmasim/trace.h): the buffer is the engine's (engine/trace.c) ---- */

int rs_trace_enable(rs_sim *sim, uint64_t max_records) { return rs_trace_start(&sim->tp.net.eng, max_records); }
void rs_trace_disable(rs_sim *sim) { rs_trace_stop(&sim->tp.net.eng); }
int rs_trace_enabled(const rs_sim *sim) { return sim->tp.net.eng.trace != NULL; }
size_t rs_trace_pending(const rs_sim *sim) { return sim->tp.net.eng.trace ? sim->tp.net.eng.trace->n : 0; }
size_t rs_trace_drain(rs_sim *sim, rs_trace_rec *out, size_t n) { return rs_trace_take(&sim->tp.net.eng, out, n); }
void rs_trace_counts(const rs_sim *sim, uint64_t out[3]) { rs_trace_get_counts(&sim->tp.net.eng, out); }
