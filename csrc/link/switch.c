/* Switch data path: classify, route, admit, enqueue; schedule and dequeue (see switch.h). */
#include "link/switch.h"

#include <stdlib.h>
#include <string.h>

#include "link/credit.h"
#include "link/link.h"
#include "link/net.h"
#include "link/ecn.h"
#include "link/trim.h"

void rs_switch_cfg_default(rs_switch_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->n_ports = 32;
    c->buffer_bytes = 12u * 1024 * 1024;
    c->reserve_bytes = 4096;
    c->headroom_bytes = 64 * 1024;
    c->dynamic = 1;
    c->alpha_shift = 3;
    c->xoff_bytes = 256 * 1024;
    c->resume_offset_bytes = 3 * 1024;
    c->lossy_limit_bytes = 0;
    c->pfc_mask = 1u << 3;
    c->pfc_quanta = 0xFFFF;
    for (int i = 0; i < 64; i++)
        c->dscp_to_prio[i] = 3;
    c->dscp_to_prio[48] = 6; /* CNP */
    c->wrr = 0;
    for (int i = 0; i < RS_NPRIO; i++)
        c->wrr_weight[i] = 1;
    c->ecn_on_dequeue = 0;
    c->ecmp_seed = 0x5eed;
    c->trim = 0;
    c->trim_threshold_bytes = 64u * 1024;
    c->trim_prio = 7;
}

rs_switch *rs_switch_new(rs_net *net, int id, const rs_switch_cfg *cfg, int *err)
{
    *err = 0;
    rs_switch *sw = calloc(1, sizeof(*sw));
    if (!sw)
        return NULL;
    sw->id = id;
    sw->net = net;
    sw->cfg = *cfg;
    /* on 64-byte lines, so that each port's per-frame fields (port.h, switch.h) share as few as they can */
    sw->ports = aligned_alloc(64, (size_t)cfg->n_ports * sizeof(*sw->ports));
    if (sw->ports)
        memset(sw->ports, 0, (size_t)cfg->n_ports * sizeof(*sw->ports));
    int mrc = sw->ports ? rs_mmu_init(&sw->mmu, &sw->cfg) : -1;
    if (mrc != 0) {
        *err = mrc;
        free(sw->ports);
        free(sw);
        return NULL;
    }
    for (uint32_t p = 0; p < cfg->n_ports; p++) {
        rs_swport *sp = &sw->ports[p];
        rs_port_init_switch(&sp->port, (int32_t)sw->id, sw, (uint16_t)p);
        sp->port.pfc_response_ps = cfg->pfc_response_ps;
        for (int i = 0; i < RS_NPRIO; i++)
            sp->wd_stalled_since[i] = -1;
        for (int i = 0; i < RS_NPRIO; i++)
            rs_pfc_init(&sp->in[i].pfc, sw, (uint16_t)p, (uint8_t)i);
        sp->wrr_left = cfg->wrr_weight[0];
    }
    rs_rng_seed(&sw->rng, net->eng.seed, (2ull << 32) | (uint64_t)id);
    /* splitmix-style scramble so neighbouring ids get unrelated hash seeds */
    uint64_t z = cfg->ecmp_seed ^ ((uint64_t)id * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    sw->hash_seed = z ^ (z >> 27);
    return sw;
}

static void free_list(rs_net *net, rs_pkt *p)
{
    while (p) {
        rs_pkt *n = p->next;
        rs_pkt_release(net->pool, p);
        p = n;
    }
}

void rs_switch_free(rs_net *net, rs_switch *sw)
{
    if (!sw)
        return;
    for (uint32_t p = 0; p < sw->cfg.n_ports; p++) {
        free_list(net, sw->ports[p].port.ctrl_head);
        free_list(net, sw->ports[p].port.pfc_wait_head);
        rs_credit_free(net, &sw->ports[p].port);
        for (int i = 0; i < RS_NPRIO; i++)
            free_list(net, sw->ports[p].q[i].head);
    }
    rs_mmu_free(&sw->mmu);
    for (uint32_t i = 0; i < sw->n_pins; i++)
        free(sw->pins[i].ports);
    free(sw->pins);
    free(sw->lft);
    free(sw->nh);
    free(sw->nh_row);
    free(sw->gnh);
    free(sw->gnh_cnt);
    free(sw->gport);
    free(sw->ports);
    free(sw);
}

/* MurmurHash3 fmix64-style mixing of (sip, dip, sport | dport << 16) with the switch seed. */
uint32_t rs_switch_ecmp_hash(const rs_switch *sw, uint32_t sip, uint32_t dip, uint16_t sport)
{
    uint64_t h = sw->hash_seed;
    uint64_t words[3] = {sip, dip, (uint64_t)sport | (4791ull << 16)};
    for (int i = 0; i < 3; i++) {
        h ^= words[i];
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        h *= 0xC4CEB9FE1A85EC53ull;
        h ^= h >> 33;
    }
    return (uint32_t)(h >> 32);
}

/* One of n >= 1 equal-cost next hops, by the switch's path selection mode (fabric.h). */
uint32_t rs_switch_pick_hop(rs_switch *sw, const rs_pkt *pkt, const uint16_t *hops, uint32_t n, uint32_t prio)
{
    if (n == 1)
        return hops[0];
    if (sw->cfg.path_select == RS_PATH_SPRAY)
        return hops[rs_switch_ecmp_hash(sw, pkt->src_ip, pkt->dst_ip ^ (uint32_t)sw->spray_ctr++, pkt->udp_sport) % n];
    uint32_t start;
    if (sw->cfg.path_select == RS_PATH_ADAPTIVE_PACKET) /* equal queues: a per-packet choice */
        start = rs_switch_ecmp_hash(sw, pkt->src_ip, pkt->dst_ip ^ (uint32_t)sw->spray_ctr++, pkt->udp_sport) % n;
    else
        start = rs_switch_ecmp_hash(sw, pkt->src_ip, pkt->dst_ip, pkt->udp_sport) % n;
    if (sw->cfg.path_select == RS_PATH_ECMP)
        return hops[start];
    /* quality bands (ar_band_bytes): queues in the same band are equal, and equal queues are
     * broken as the mode says (Broadcom DLB's quantised port quality; docs/multipath.md) */
    uint64_t band = sw->cfg.ar_band_bytes > 1 ? sw->cfg.ar_band_bytes : 1;
    uint32_t best = hops[start];
    uint64_t best_b = sw->mmu.eg_bytes[(size_t)best * RS_NPRIO + prio] / band;
    for (uint32_t k = 1; k < n && best_b > 0; k++) {
        uint32_t c = hops[(start + k) % n];
        uint64_t b = sw->mmu.eg_bytes[(size_t)c * RS_NPRIO + prio] / band;
        if (b < best_b) {
            best = c;
            best_b = b;
        }
    }
    return best;
}

/* The egress port of pkt, or -1 when there is no route. */
static int route_of(const rs_net *net, rs_switch *sw, rs_pkt *pkt, uint32_t prio)
{
    if (sw->lft) { /* linear forwarding table by DLID = host index + 1 (lft.c) */
        uint32_t dlid = (uint32_t)pkt->dst_node + 1;
        uint16_t out = dlid < sw->n_lft ? sw->lft[dlid] : RS_LFT_NONE;
        return out == RS_LFT_NONE ? -1 : (int)out;
    }
    if (sw->cfg.routing != RS_ROUTE_SHORTEST)
        return rs_group_route(net, sw, pkt, prio);
    uint32_t n;
    const uint16_t *hops = rs_switch_hops(sw, pkt->dst_node, &n);
    if (n == 0)
        return -1;
    return (int)(n == 1 ? hops[0] : rs_switch_pick_hop(sw, pkt, hops, n, prio));
}

static void drop(rs_net *net, rs_swport *in, rs_pkt *pkt, int reason)
{
#ifdef RDMASIM_MUTANTS /* drop_uncounted: lossy-threshold drops vanish from the counters */
    if (!(RS_MUTANT(&net->eng, RS_MUT_DROP_UNCOUNTED) && reason == RS_SWDROP_LOSSY_THRESHOLD))
#endif
    in->stats.drops[reason]++;
    in->stats.q_drops[pkt->priority & 7u]++;
    if (in->port.cr) /* it leaves the credit buffer it arrived in */
        rs_credit_drained(net, &in->port, pkt->priority & 7u, rs_credit_blocks(pkt->frame_len));
    rs_pkt_release(net->pool, pkt);
}

/* May egress (sp, vl) ECN-mark now?  IB CC (annex A10): a credit port that lacks credits is a victim
 * of congestion downstream, not its root, and marks only when its Victim_Mask bit is set. */
static int may_mark(const rs_swport *sp, uint32_t vl)
{
    return !sp->port.cr || sp->cc_victim_mask || !rs_credit_starved(sp->port.cr, vl);
}

static void peak(uint64_t *slot, uint64_t v)
{
    if (v > *slot)
        *slot = v;
}

void rs_switch_receive(rs_net *net, rs_switch *sw, rs_port *port, rs_pkt *pkt)
{
    rs_swport *in = &sw->ports[port->index];
    uint32_t bytes = pkt->frame_len; /* rs_frame_len, set by the link that brought it */
    in->rx_pkts++;
    in->rx_bytes += bytes;
    uint32_t base = sw->cfg.dscp_to_prio[pkt->tos >> 2] & 7u;
    /* ip: the priority it arrived in (ingress accounting, PFC); prio: the egress queue's.  They
     * differ only under hop classes, on the way out to a global link. */
    uint32_t ip = sw->cfg.hop_classes ? rs_group_class(base, pkt->global_hops) : base, prio = ip;
    if (port->cr) /* credit mode: base is the packet's SL; it came in on the VL its sender stamped */
        ip = prio = pkt->priority & 7u;
    pkt->priority = (uint8_t)ip;
    int route = route_of(net, sw, pkt, ip);
    if (route < 0) {
        drop(net, in, pkt, RS_SWDROP_NO_ROUTE);
        return;
    }
    uint32_t out_idx = (uint32_t)route;
    rs_swport *out = &sw->ports[out_idx];
    /* hop classes: the class rises by one per global link taken (grouproute.c); on a credit port
     * the class is the SL its SL -> VL table looks up: one VL per class keeps credit loops open */
    if (sw->cfg.hop_classes)
        prio = rs_group_egress_class(sw, pkt, out_idx, base);
    if (out->port.cr)
        prio = rs_credit_vl(out->port.cr, sw->cfg.hop_classes ? prio : base);
    if (out->q[prio].wd_storm_until > net->eng.now_ps) {
        drop(net, in, pkt, RS_SWDROP_WATCHDOG);
        return;
    }
    /* trimming (link/trim.c): a trim_ok packet behind a long queue goes on as its header */
    int trim = sw->cfg.trim && pkt->trim_ok && !port->cr && !out->port.cr;
    if (trim)
        prio = rs_trim_on_enqueue(sw, pkt, out_idx, prio, &bytes);
    /* a credit port's buffer was checked by its sender's credits: always room.  A trim_ok packet
     * the buffer refuses is trimmed and tried once more, as its header (one admission call site,
     * so the compiler keeps it inline) */
    int why;
    do {
        why = port->cr ? rs_mmu_admit_credit(&sw->mmu, port->index, ip, out_idx, prio, bytes)
                       : rs_mmu_admit(&sw->mmu, port->index, ip, out_idx, prio, bytes);
#ifdef RDMASIM_MUTANTS /* lossless_drop: a lossless class over XOFF is dropped like a lossy one */
        if (why < 0 && RS_MUTANT(&net->eng, RS_MUT_LOSSLESS_DROP) && (sw->cfg.pfc_mask >> ip & 1u) &&
            rs_mmu_should_pause(&sw->mmu, port->index, ip)) {
            rs_mmu_release(&sw->mmu, port->index, ip, out_idx, prio, bytes);
            why = RS_SWDROP_LOSSY_THRESHOLD;
        }
#endif
    } while (why >= 0 && trim && rs_trim_instead_of_drop(sw, pkt, out_idx, &prio, &bytes));
    if (why >= 0) {
        drop(net, in, pkt, why);
        return;
    }
    pkt->priority = (uint8_t)prio;
    pkt->sw_in_prio = (uint8_t)ip;
    size_t qi = (size_t)out_idx * RS_NPRIO + prio, ii = (size_t)port->index * RS_NPRIO + ip;
    peak(&out->q[prio].bytes_peak, sw->mmu.eg_bytes[qi]);
    peak(&in->in[ip].in_bytes_peak, sw->mmu.in_bytes[ii] + sw->mmu.hdrm_bytes[ii]);
    peak(&in->in[ip].hdrm_bytes_peak, sw->mmu.hdrm_bytes[ii]);
    if (!sw->cfg.ecn_on_dequeue && may_mark(out, prio) &&
        rs_ecn_maybe_mark(pkt, sw->mmu.eg_bytes[qi] - bytes, sw->cfg.ecn_kmin[prio], sw->cfg.ecn_kmax[prio],
                          sw->cfg.ecn_pmax[prio], &sw->rng)) {
        out->ecn_marked++;
        out->q[prio].ecn_marked++;
    }
    pkt->sw_in_port = port->index;
    pkt->next = NULL;
    if (out->q[prio].tail) {
        out->q[prio].tail->next = pkt;
    } else {
        out->q[prio].head = pkt;
        out->q_mask |= (uint8_t)(1u << prio);
    }
    out->q[prio].tail = pkt;
    if (!port->cr)
        rs_pfc_on_enqueue(net, &in->in[ip].pfc);
    rs_port_kick(net, &out->port);
}

static rs_pkt *pop_ctrl(rs_port *port)
{
    rs_pkt *p = port->ctrl_head;
    if (p) {
        port->ctrl_head = p->next;
        if (!port->ctrl_head)
            port->ctrl_tail = NULL;
        p->next = NULL;
    }
    return p;
}

/* The priority to serve next, or -1. */
static int pick(rs_switch *sw, rs_swport *sp)
{
    uint32_t ready = sp->q_mask & ~(uint32_t)sp->port.paused_mask;
    uint32_t held = sp->q_mask & sp->port.paused_mask;
    if (held) { /* a paused queue under a PFC storm sends anyway (the watchdog ignores its pause) */
        const int64_t now = sw->net->eng.now_ps;
        for (int i = 0; i < RS_NPRIO; i++)
            if ((held & (1u << i)) && sp->q[i].wd_storm_until > now)
                ready |= 1u << i;
    }
    if (sp->port.cr) { /* credit mode: only VLs with credit for their head packet; IB VL arbitration */
        for (int i = 0; i < RS_NPRIO; i++)
            if ((ready & (1u << i)) && !rs_credit_ready(sw->net, &sp->port, (uint32_t)i, sp->q[i].head))
                ready &= ~(1u << i);
        if (ready && sp->port.cr->arb.on) /* (vlarb.h) */
            return rs_vlarb_pick(&sp->port.cr->arb, (uint8_t)ready);
    }
    if (!ready)
        return -1;
    if (!sw->cfg.wrr) /* strict priority: the highest ready */
        return 31 - __builtin_clz(ready);
    for (int k = 0; k <= RS_NPRIO; k++) {
        if ((ready & (1u << sp->wrr_prio)) && sp->wrr_left > 0) {
            sp->wrr_left--;
            return sp->wrr_prio;
        }
        sp->wrr_prio = (uint8_t)((sp->wrr_prio + 1) % RS_NPRIO);
        sp->wrr_left = sw->cfg.wrr_weight[sp->wrr_prio];
    }
    return -1;
}

/* HPCC's INT: a request that collects telemetry gets this egress's record as it leaves (the
 * queue it leaves behind, the port's bytes sent with it included).  A longer path than
 * RS_INT_MAX_HOPS records its first switches only. */
static void int_push(const rs_net *net, const rs_swport *sp, const rs_port *port, rs_pkt *p, uint32_t qlen)
{
    rs_int_stack *st = p->intel;
    if (!p->cc_want || st->n_hops >= RS_INT_MAX_HOPS)
        return;
    rs_int_hop *h = &st->hop[st->n_hops++];
    h->ts_ps = net->eng.now_ps;
    h->tx_bytes = sp->tx_bytes;
    h->qlen_bytes = qlen;
    h->rate_bps = port->tx ? (uint64_t)port->tx->rate_bps : 0;
}

/* Packet p has left the switch: its ingress queue may resume (PFC) or return credits. */
static void rs_switch_left(rs_net *net, rs_switch *sw, const rs_pkt *p)
{
    rs_swport *in = &sw->ports[p->sw_in_port];
    if (in->port.cr)
        rs_credit_drained(net, &in->port, p->sw_in_prio, rs_credit_blocks(p->frame_len));
    else
        rs_pfc_on_dequeue(net, &in->in[p->sw_in_prio].pfc);
}

rs_pkt *rs_switch_next_frame(rs_net *net, rs_switch *sw, rs_port *port)
{
    rs_swport *sp = &sw->ports[port->index];
    rs_pkt *p = pop_ctrl(port);
    if (p) {
        sp->tx_pkts++;
        sp->tx_bytes += RS_ETH_MIN_FRAME_NOFCS;
        return p;
    }
    int prio = pick(sw, sp);
    if (prio < 0)
        return NULL;
    p = sp->q[prio].head;
    sp->q[prio].head = p->next;
    if (!sp->q[prio].head) {
        sp->q[prio].tail = NULL;
        sp->q_mask &= (uint8_t)~(1u << prio);
    } else /* it leaves next, one frame time from now; behind a deep queue it is no longer cached */
        __builtin_prefetch(sp->q[prio].head);
    p->next = NULL;
    uint32_t bytes = p->frame_len;
    rs_mmu_release(&sw->mmu, p->sw_in_port, p->sw_in_prio, port->index, (uint32_t)prio, bytes);
    if (sw->cfg.ecn_on_dequeue && may_mark(sp, (uint32_t)prio) &&
        rs_ecn_maybe_mark(p, sw->mmu.eg_bytes[(size_t)port->index * RS_NPRIO + prio], sw->cfg.ecn_kmin[prio],
                          sw->cfg.ecn_kmax[prio], sw->cfg.ecn_pmax[prio], &sw->rng)) {
        sp->ecn_marked++;
        sp->q[prio].ecn_marked++;
    }
    sp->tx_pkts++;
    sp->tx_bytes += bytes;
    sp->q[prio].tx_pkts++;
    sp->q[prio].tx_bytes += bytes;
    if (net->pool->ints_in_use && p->intel) /* no packet reads past its first line without INT */
        int_push(net, sp, port, p, (uint32_t)sw->mmu.eg_bytes[(size_t)port->index * RS_NPRIO + prio]);
    rs_switch_left(net, sw, p);
    return p;
}

void rs_switch_flush_queue(rs_net *net, rs_switch *sw, uint32_t port, uint32_t prio, int reason)
{
    rs_swport *sp = &sw->ports[port];
    rs_pkt *p = sp->q[prio].head;
    sp->q[prio].head = sp->q[prio].tail = NULL;
    sp->q_mask &= (uint8_t)~(1u << prio);
    while (p) {
        rs_pkt *next = p->next;
        uint16_t in = p->sw_in_port;
        uint8_t ip = p->sw_in_prio;
        rs_mmu_release(&sw->mmu, in, ip, port, prio, p->frame_len);
        sw->ports[in].stats.drops[reason]++;
        sw->ports[in].stats.q_drops[ip]++;
        rs_switch_left(net, sw, p);
        rs_pkt_release(net->pool, p);
        p = next;
    }
}

void rs_swport_stats_of(const rs_swport *sp, rs_swport_stats *out)
{
    *out = sp->stats;
    out->rx_pkts = sp->rx_pkts;
    out->rx_bytes = sp->rx_bytes;
    out->tx_pkts = sp->tx_pkts;
    out->tx_bytes = sp->tx_bytes;
    out->ecn_marked = sp->ecn_marked;
    for (int i = 0; i < RS_NPRIO; i++) {
        out->q_tx_pkts[i] = sp->q[i].tx_pkts;
        out->q_tx_bytes[i] = sp->q[i].tx_bytes;
        out->q_bytes_peak[i] = sp->q[i].bytes_peak;
        out->q_ecn_marked[i] = sp->q[i].ecn_marked;
        out->in_bytes_peak[i] = sp->in[i].in_bytes_peak;
        out->hdrm_bytes_peak[i] = sp->in[i].hdrm_bytes_peak;
    }
}
