/* InfiniBand credit-based flow control per VL (see credit.h for the accounting and its sources). */
#include "link/credit.h"

#include <stdlib.h>

#include "link/net.h"
#include "link/switch.h"

#define VL_BIT(vl) ((uint8_t)(1u << (vl)))

/* ---- receiver side ---- */

/* The FCCL the receiving buffer of VL vl advertises now (IBA 7.9). */
static uint16_t fccl_now(const rs_credit_rx *rx)
{
    uint32_t free_blocks = rx->used_blocks < rx->cap_blocks ? rx->cap_blocks - rx->used_blocks : 0;
    if (free_blocks > RS_CREDIT_HALF)
        free_blocks = RS_CREDIT_HALF;
    return (uint16_t)((rx->abr + free_blocks) & (RS_CREDIT_MOD - 1));
}

static void arm_timer(rs_net *net, rs_credit_port *cr)
{
    if (!cr->fc_timer.armed)
        rs_engine_arm(&net->eng, &cr->fc_timer, net->eng.now_ps + cr->fc_period_ps);
}

void rs_credit_arrive(rs_net *net, rs_port *port, const rs_pkt *pkt)
{
    rs_credit_port *cr = port->cr;
    uint32_t vl = pkt->priority & 7u, blocks = rs_credit_blocks(pkt->frame_len);
    rs_credit_rx *rx = &cr->rx[vl];
    if (rx->used_blocks + blocks > rx->cap_blocks)
        cr->stats.overruns++; /* the sender's credit test makes this impossible: a bug if counted */
    rx->used_blocks += blocks;
    if (rx->used_blocks > cr->stats.peak_blocks[vl])
        cr->stats.peak_blocks[vl] = rx->used_blocks;
    rx->abr = (uint16_t)((rx->abr + blocks) & (RS_CREDIT_MOD - 1));
    arm_timer(net, cr);
}

void rs_credit_drained(rs_net *net, rs_port *port, uint32_t vl, uint32_t blocks)
{
    rs_credit_port *cr = port->cr;
    rs_credit_rx *rx = &cr->rx[vl];
    rx->used_blocks -= blocks < rx->used_blocks ? blocks : rx->used_blocks;
    cr->fc_due |= VL_BIT(vl);
    rs_port_kick(net, port);
}

/* ---- sender side ---- */

/* What the owner must not send now: the SLs (host: its priorities are SLs) or the VLs (switch:
 * its egress queues are VLs) whose VL is stalled. */
static void update_mask(rs_port *port)
{
    const rs_credit_port *cr = port->cr;
    if (port->owner_kind == RS_NODE_SWITCH) {
        port->paused_mask = cr->stalled;
        return;
    }
    uint8_t m = 0;
    for (uint32_t sl = 0; sl < RS_NPRIO; sl++)
        if (cr->stalled & VL_BIT(cr->sl2vl[sl]))
            m |= (uint8_t)(1u << sl);
    port->paused_mask = m;
}

static void stall(rs_net *net, rs_port *port, uint32_t vl, uint32_t blocks)
{
    rs_credit_port *cr = port->cr;
    if (cr->stalled & VL_BIT(vl))
        return;
    cr->stalled |= VL_BIT(vl);
    cr->waited |= VL_BIT(vl);
    cr->tx[vl].need = blocks;
    cr->tx[vl].stall_since_ps = net->eng.now_ps;
    cr->stats.stalls++;
    update_mask(port);
}

static void unstall(rs_net *net, rs_port *port, uint32_t vl)
{
    rs_credit_port *cr = port->cr;
    cr->stalled &= (uint8_t)~VL_BIT(vl);
    cr->stats.stall_ps[vl] += net->eng.now_ps - cr->tx[vl].stall_since_ps;
    update_mask(port);
}

static void spend(rs_net *net, rs_credit_port *cr, uint32_t vl, uint32_t blocks)
{
    cr->tx[vl].fctbs = (uint16_t)((cr->tx[vl].fctbs + blocks) & (RS_CREDIT_MOD - 1));
    arm_timer(net, cr);
}

static uint32_t frame_blocks(rs_pkt *pkt)
{
    if (!pkt->frame_len)
        pkt->frame_len = (uint16_t)rs_frame_len(pkt); /* as the link would measure it */
    return rs_credit_blocks(pkt->frame_len);
}

int rs_credit_ready(rs_net *net, rs_port *port, uint32_t vl, const rs_pkt *head)
{
    rs_credit_port *cr = port->cr;
    uint32_t blocks = rs_credit_blocks(head->frame_len); /* a switch's packets carry their length */
    if (rs_credit_fits(cr->tx[vl].fccl, cr->tx[vl].fctbs, blocks))
        return 1;
    stall(net, port, vl, blocks);
    return 0;
}

int rs_credit_take(rs_net *net, rs_port *port, rs_pkt *pkt)
{
    rs_credit_port *cr = port->cr;
    uint32_t blocks = frame_blocks(pkt);
    uint32_t vl;
    if (port->owner_kind == RS_NODE_HOST) {
        vl = rs_credit_vl(cr, pkt->priority); /* a host's frames carry their SL until here */
        pkt->priority = (uint8_t)vl;
        if (!rs_credit_fits(cr->tx[vl].fccl, cr->tx[vl].fctbs, blocks)) {
            cr->held[vl] = pkt; /* the owner offers no more of this VL while it is stalled */
            stall(net, port, vl, blocks);
            return 0;
        }
    } else {
        vl = pkt->priority & 7u; /* the switch queued it on its egress VL and checked credits */
        cr->starved = (uint8_t)((cr->starved & ~VL_BIT(vl)) | (cr->waited & VL_BIT(vl)));
        cr->waited &= (uint8_t)~VL_BIT(vl);
        if (cr->arb.on)
            rs_vlarb_charge(&cr->arb, vl, pkt->frame_len);
    }
    spend(net, cr, vl, blocks);
    return 1;
}

/* ---- flow-control packets ---- */

static rs_pkt *fc_packet(rs_net *net, rs_credit_port *cr, uint32_t vl)
{
    rs_pkt *p = rs_pkt_alloc(net->pool);
    if (!p) {
        net->eng.failed = 1;
        rs_net_fail(net, RS_ERR_NOMEM, "out of memory allocating a flow-control packet");
        return NULL;
    }
    p->kind = RS_PKT_IB_FC;
    p->priority = (uint8_t)vl;
    p->frame_len = RS_CREDIT_FC_BYTES;
    p->pfc_class_enable = (uint16_t)vl;
    p->pfc_quanta[0] = cr->tx[vl].fctbs;
    p->pfc_quanta[1] = fccl_now(&cr->rx[vl]);
    cr->last_fctbs[vl] = p->pfc_quanta[0];
    cr->last_fccl[vl] = p->pfc_quanta[1];
    cr->stats.fc_sent++;
    return p;
}

rs_pkt *rs_credit_next_frame(rs_net *net, rs_port *port)
{
    rs_credit_port *cr = port->cr;
    if (cr->fc_due) { /* round robin over the VLs due: none waits behind a busy one */
        for (uint32_t k = 0; k < RS_NPRIO; k++) {
            uint32_t vl = (cr->fc_next_vl + k) & 7u;
            if (cr->fc_due & VL_BIT(vl)) {
                cr->fc_due &= (uint8_t)~VL_BIT(vl);
                cr->fc_next_vl = (uint8_t)((vl + 1) & 7u);
                return fc_packet(net, cr, vl);
            }
        }
    }
    if (port->owner_kind != RS_NODE_HOST)
        return NULL;
    for (uint32_t vl = 0; vl < cr->n_vls; vl++) {
        rs_pkt *p = cr->held[vl];
        if (p && !(cr->stalled & VL_BIT(vl))) {
            cr->held[vl] = NULL;
            spend(net, cr, vl, rs_credit_blocks(p->frame_len));
            return p;
        }
    }
    return NULL;
}

void rs_credit_fc_receive(rs_net *net, rs_port *port, rs_pkt *pkt)
{
    rs_credit_port *cr = port->cr;
    uint32_t vl = pkt->pfc_class_enable & 7u;
    uint16_t fctbs = pkt->pfc_quanta[0], fccl = pkt->pfc_quanta[1];
    rs_pkt_release(net->pool, pkt);
    if (!cr || vl >= cr->n_vls)
        return; /* a port without credits (or that VL) ignores it */
    cr->stats.fc_rx++;
    /* the peer has sent fctbs blocks on our receive VL, all ahead of this packet: resynchronise */
    if (cr->rx[vl].abr != fctbs) {
        cr->rx[vl].abr = fctbs;
        arm_timer(net, cr);
    }
    cr->tx[vl].fccl = fccl;
    if ((cr->stalled & VL_BIT(vl)) && rs_credit_fits(fccl, cr->tx[vl].fctbs, cr->tx[vl].need)) {
        unstall(net, port, vl);
        rs_port_kick(net, port);
    }
}

void rs_credit_fc_timer(rs_net *net, rs_credit_port *cr)
{
    const rs_port *peer = cr->port->tx ? cr->port->tx->to : NULL;
    uint8_t peer_stalled = peer && peer->cr ? peer->cr->stalled : 0;
    uint8_t due = 0;
    for (uint32_t vl = 0; vl < cr->n_vls; vl++)
        if (cr->last_fctbs[vl] != cr->tx[vl].fctbs || cr->last_fccl[vl] != fccl_now(&cr->rx[vl]) ||
            (peer_stalled & VL_BIT(vl)))
            due |= VL_BIT(vl);
    if (!due)
        return; /* nothing new to say: quiet until the state changes (arm_timer) */
    cr->fc_due |= due;
    arm_timer(net, cr);
    rs_port_kick(net, cr->port);
}

/* ---- control path ---- */

void rs_credit_free(rs_net *net, rs_port *port)
{
    rs_credit_port *cr = port->cr;
    if (!cr)
        return;
    for (int i = 0; i < RS_NPRIO; i++)
        if (cr->held[i])
            rs_pkt_release(net->pool, cr->held[i]);
    rs_timer_cancel(&cr->fc_timer);
    free(cr);
    port->cr = NULL;
}

/* The peer's sender starts with the credit our empty buffer advertises (link-up: the first FC
 * packets), and we with the peer's. */
static void link_up(rs_credit_port *a, rs_credit_port *b)
{
    for (uint32_t vl = 0; vl < RS_NPRIO; vl++) {
        b->tx[vl].fccl = vl < a->n_vls ? fccl_now(&a->rx[vl]) : 0;
        a->tx[vl].fccl = vl < b->n_vls ? fccl_now(&b->rx[vl]) : 0;
        a->last_fccl[vl] = b->tx[vl].fccl;
        b->last_fccl[vl] = a->tx[vl].fccl;
    }
}

static int port_busy(const rs_net *net, const rs_port *p)
{
    if (p->ctrl_head || (p->tx && p->tx->fifo_head) || p->busy)
        return 1;
    if (p->tx_reserved && !rs_eventq_passed(&net->eng.evq, net->eng.now_ps, p->busy_until, p->tx_seq))
        return 1; /* serialising a frame without a transmit-done event (port.c) */
    if (p->owner_kind != RS_NODE_SWITCH)
        return 0;
    for (int i = 0; i < RS_NPRIO; i++)
        if (p->sw->ports[p->index].q[i].head || p->sw->mmu.in_bytes[(size_t)p->index * RS_NPRIO + i] ||
            p->sw->mmu.hdrm_bytes[(size_t)p->index * RS_NPRIO + i])
            return 1;
    (void)net;
    return 0;
}

int rs_net_port_credit_config(rs_net *net, int kind, int node, int port, const rs_credit_cfg *cfg)
{
    rs_port *p = rs_net_find_port(net, kind, node, port);
    const char *what = kind == RS_NODE_SWITCH ? "switch" : "host";
    if (!p)
        return rs_net_fail(net, RS_ERR_INVAL, "credits: no port %d on %s %d", port, what, node);
    if (!p->tx)
        return rs_net_fail(net, RS_ERR_STATE, "credits: port %d of %s %d is not connected", port, what, node);
    if (cfg->n_vls < 1 || cfg->n_vls > RS_NPRIO)
        return rs_net_fail(net, RS_ERR_INVAL, "credits: n_vls %u outside 1..8", cfg->n_vls);
    for (uint32_t vl = 0; vl < cfg->n_vls; vl++)
        if (cfg->buffer_blocks[vl] < 1 || cfg->buffer_blocks[vl] > 0xFFFF)
            return rs_net_fail(net, RS_ERR_INVAL, "credits: buffer_blocks[%u] = %u outside 1..65535", vl,
                               cfg->buffer_blocks[vl]);
    for (uint32_t sl = 0; sl < RS_CREDIT_NSL; sl++)
        if (cfg->sl2vl[sl] >= cfg->n_vls)
            return rs_net_fail(net, RS_ERR_INVAL, "credits: sl2vl[%u] = %u outside 0..%u", sl, cfg->sl2vl[sl],
                               cfg->n_vls - 1);
    for (uint32_t vl = 0; cfg->vlarb && vl < cfg->n_vls; vl++)
        if (!cfg->vlarb_high[vl] && !cfg->vlarb_low[vl])
            return rs_net_fail(net, RS_ERR_INVAL, "credits: VL %u is in neither VL arbitration table (it would "
                               "never be sent)", vl);
    if (cfg->fc_period_ps <= 0 || cfg->fc_period_ps > RS_MAX_TIME_PS)
        return rs_net_fail(net, RS_ERR_INVAL, "credits: fc_period %lld ps outside 1..%lld",
                           (long long)cfg->fc_period_ps, (long long)RS_MAX_TIME_PS);
    if (p->owner_kind == RS_NODE_HOST && p->rx)
        return rs_net_fail(net, RS_ERR_STATE, "credits: host %d has a slow receiver (PFC); remove it first", node);
    if (port_busy(net, p) || (p->cr && p->cr->stalled))
        return rs_net_fail(net, RS_ERR_STATE, "credits: port %d of %s %d has packets queued or in flight", port,
                           what, node);
    rs_credit_port *cr = p->cr ? p->cr : calloc(1, sizeof(*cr));
    if (!cr)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    cr->port = p;
    cr->n_vls = (uint8_t)cfg->n_vls;
    for (uint32_t sl = 0; sl < RS_CREDIT_NSL; sl++)
        cr->sl2vl[sl] = cfg->sl2vl[sl];
    for (uint32_t vl = 0; vl < RS_NPRIO; vl++) {
        cr->rx[vl].cap_blocks = vl < cfg->n_vls ? cfg->buffer_blocks[vl] : 0;
        cr->stats.cap_blocks[vl] = cr->rx[vl].cap_blocks;
    }
    cr->fc_period_ps = cfg->fc_period_ps;
    cr->arb = (rs_vlarb){.on = (uint8_t)(cfg->vlarb && p->owner_kind == RS_NODE_SWITCH),
                         .high_limit = (uint8_t)cfg->vlarb_high_limit};
    for (uint32_t vl = 0; vl < RS_NPRIO; vl++) {
        cr->arb.weight[RS_VLARB_HIGH][vl] = vl < cfg->n_vls ? cfg->vlarb_high[vl] : 0;
        cr->arb.weight[RS_VLARB_LOW][vl] = vl < cfg->n_vls ? cfg->vlarb_low[vl] : 0;
    }
    cr->fc_timer.owner = cr;
    cr->fc_timer.kind = RS_EV_CREDIT_FC;
    cr->fc_timer.ent = p->tx_done.ent;
    p->cr = cr;
    p->paused_mask = 0;
    rs_port *peer = p->tx->to;
    if (peer->cr)
        link_up(cr, peer->cr);
    return RS_OK;
}

int rs_net_switch_victim_mask(rs_net *net, int sw_id, int port, int on)
{
    if (sw_id < 0 || (uint32_t)sw_id >= net->n_switches)
        return rs_net_fail(net, RS_ERR_INVAL, "victim_mask: no switch %d", sw_id);
    rs_switch *sw = net->switches[sw_id];
    if (port < 0 || (uint32_t)port >= sw->cfg.n_ports)
        return rs_net_fail(net, RS_ERR_INVAL, "victim_mask: port %d of switch %d outside 0..%u", port, sw_id,
                           sw->cfg.n_ports - 1);
    sw->ports[port].cc_victim_mask = on ? 1 : 0;
    return RS_OK;
}

int rs_net_port_credit_stats(const rs_net *net, int kind, int node, int port, rs_credit_stats *out)
{
    const rs_port *p = rs_net_find_port(net, kind, node, port);
    if (!p)
        return RS_ERR_INVAL;
    if (!p->cr)
        return 1;
    const rs_credit_port *cr = p->cr;
    *out = cr->stats;
    out->stalled_mask = cr->stalled;
    for (uint32_t vl = 0; vl < RS_NPRIO; vl++) {
        out->used_blocks[vl] = cr->rx[vl].used_blocks;
        if (cr->stalled & VL_BIT(vl))
            out->stall_ps[vl] += net->eng.now_ps - cr->tx[vl].stall_since_ps;
    }
    return RS_OK;
}
