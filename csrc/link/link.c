/* Link direction: impairments on transmit, FIFO of frames in flight, arrivals. */
#include "link/net.h"
#include "codec/trace_frame.h"

#include "link/credit.h"
#include "link/pause.h"
#include "rdmasim/fabric.h"
#include "link/rxpipe.h"
#include "link/switch.h"
#include "rdmasim/ib.h"

#include <stdlib.h>
#include <string.h>

/* ---- trace records of a link direction (engine/trace.h holds the buffer) ---- */

/* The one place a link end becomes a (node kind, node index). */
static int port_node(const rs_port *port, uint8_t *node_kind)
{
    if (port && port->owner_kind == RS_NODE_SWITCH) {
        *node_kind = RS_TR_NODE_SWITCH;
        return RS_TR_SWITCH_NODE_BASE | port->node; /* switches have their own index space */
    }
    int host = port && port->owner_kind == RS_NODE_HOST;
    *node_kind = host ? RS_TR_NODE_HOST : RS_TR_NODE_NONE;
    return host ? port->node : -1;
}

/* a frame put on link l (TX), lost on it (DROP with a reason), or delivered by it (RX) */
static void trace_link(rs_engine *e, uint8_t kind, const rs_pkt *p, const rs_link *l, uint8_t reason)
{
    uint8_t from_kind, to_kind;
    int from = port_node(l->from, &from_kind), to = port_node(l->to, &to_kind);
    size_t before = e->trace->n;
    int rx = kind == RS_TR_RX;
    rs_trace_rec_frame(e, kind, p, l->id, rx ? to : from, rx ? from : to, reason);
    if (e->trace->n > before) { /* recorded: set the real node kinds */
        rs_trace_rec *r = &e->trace->recs[e->trace->n - 1];
        r->node_kind = rx ? to_kind : from_kind;
        r->peer_kind = rx ? from_kind : to_kind;
    }
}

static inline void trace_tx(rs_engine *e, const rs_link *l, const rs_pkt *p)
{
    if (RS_TRACE_ON(e))
        trace_link(e, RS_TR_TX, p, l, RS_TR_DROP_NONE);
}

static inline void trace_drop(rs_engine *e, const rs_link *l, const rs_pkt *p, int reason)
{
    if (RS_TRACE_ON(e))
        trace_link(e, RS_TR_DROP, p, l, (uint8_t)reason);
}

static inline void trace_rx(rs_engine *e, const rs_link *l, const rs_pkt *p)
{
    if (RS_TRACE_ON(e))
        trace_link(e, RS_TR_RX, p, l, RS_TR_DROP_NONE);
}

static int rule_hits(const rs_drop_rule *r, const rs_pkt *pkt, uint64_t frame_index)
{
    if ((r->fields & RS_DROPF_NTH) && r->nth != frame_index)
        return 0;
    if (r->fields & (RS_DROPF_PSN | RS_DROPF_OPCODE | RS_DROPF_DEST_QP)) {
        if (pkt->kind == RS_PKT_UET) /* an Ultra Ethernet request matches by its PDS PSN only */
            return !(r->fields & (RS_DROPF_OPCODE | RS_DROPF_DEST_QP)) &&
                   (pkt->uet.type == RS_UET_PDS_RUD_REQ || pkt->uet.type == RS_UET_PDS_ROD_REQ ||
                    pkt->uet.type == RS_UET_PDS_UUD_REQ || pkt->uet.type == RS_UET_PDS_RUD_CC_REQ) &&
                   r->psn == pkt->psn;
        if (pkt->kind != RS_PKT_ROCE)
            return 0;
        if ((r->fields & RS_DROPF_PSN) && r->psn != pkt->psn)
            return 0;
        if ((r->fields & RS_DROPF_DEST_QP) && r->dest_qp != pkt->dest_qpn)
            return 0;
        if ((r->fields & RS_DROPF_OPCODE) && !(r->opcodes[pkt->opcode >> 6] >> (pkt->opcode & 63) & 1))
            return 0;
    }
    return 1;
}

/* Drop rules first (teaching and conformance tests), then i.i.d. or bursty loss.
 * Returns 0 (keep) or the rs_trace_drop_reason. */
static int should_drop(rs_net *net, rs_link *l, rs_pkt *pkt, uint64_t frame_index)
{
    for (uint32_t i = 0; i < l->n_drops; i++) {
        rs_drop_rule *r = &l->drops[i];
        if (r->mark_trim_ok) { /* not a drop: the test hook of rs_net_link_mark_trim_ok */
            pkt->trim_ok |= pkt->kind == RS_PKT_ROCE;
            continue;
        }
        if (!r->remaining || !rule_hits(r, pkt, frame_index))
            continue;
        if (r->skip) {
            r->skip--;
            continue;
        }
        r->remaining--;
        return RS_TR_DROP_LIST;
    }
    /* scheduled loss changes due by now (a frame's fate is decided when it goes on the wire) */
    while (l->n_loss_changes && l->loss_changes[0].t_ps <= net->eng.now_ps) {
        l->loss_prob = l->loss_changes[0].loss_prob;
        l->n_loss_changes--;
        memmove(l->loss_changes, l->loss_changes + 1, l->n_loss_changes * sizeof(*l->loss_changes));
    }
    if (l->gilbert.enabled) {
        rs_gilbert *g = &l->gilbert;
        double u = rs_rng_uniform(&l->rng);
        g->bad = g->bad ? !(u < g->p_bad_good) : (u < g->p_good_bad);
        return rs_rng_uniform(&l->rng) < (g->bad ? g->loss_bad : g->loss_good) ? RS_TR_DROP_LOSS : 0;
    }
    /* Draw only when loss is configured, so the RNG stream is untouched otherwise. */
    return (l->loss_prob > 0.0 && rs_rng_uniform(&l->rng) < l->loss_prob) ? RS_TR_DROP_LOSS : 0;
}

static rs_link *link_get(const rs_net *net, int link)
{
    return (link >= 0 && (uint32_t)link < net->n_links) ? net->links[link] : NULL;
}

int rs_net_link_add_drop_rule(rs_net *net, int link, const rs_drop_spec *spec)
{
    rs_link *l = link_get(net, link);
    if (!l)
        return rs_net_fail(net, RS_ERR_INVAL, "no link %d", link);
    const uint32_t known = RS_DROPF_NTH | RS_DROPF_PSN | RS_DROPF_OPCODE | RS_DROPF_DEST_QP;
    if (!spec->fields || (spec->fields & ~known))
        return rs_net_fail(net, RS_ERR_INVAL, "drop rule fields 0x%x: allowed a non-empty set of 0x%x",
                           spec->fields, known);
    if (spec->count == 0)
        return rs_net_fail(net, RS_ERR_INVAL, "drop count must be >= 1");
    if ((spec->fields & RS_DROPF_PSN) && spec->psn > RS_PSN_MASK)
        return rs_net_fail(net, RS_ERR_INVAL, "drop psn %u outside 0..16777215", spec->psn);
    if ((spec->fields & RS_DROPF_DEST_QP) && spec->dest_qp > RS_PSN_MASK)
        return rs_net_fail(net, RS_ERR_INVAL, "drop dest_qp %u outside 0..16777215", spec->dest_qp);
    if ((spec->fields & RS_DROPF_OPCODE) &&
        !(spec->opcodes[0] | spec->opcodes[1] | spec->opcodes[2] | spec->opcodes[3]))
        return rs_net_fail(net, RS_ERR_INVAL, "drop rule on opcode with an empty opcode set");
    rs_drop_rule *nd = realloc(l->drops, (l->n_drops + 1) * sizeof(*nd));
    if (!nd)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    l->drops = nd;
    rs_drop_rule r = {.fields = spec->fields, .skip = spec->skip, .remaining = spec->count,
                      .psn = spec->psn, .dest_qp = spec->dest_qp, .nth = spec->nth};
    memcpy(r.opcodes, spec->opcodes, sizeof r.opcodes);
    nd[l->n_drops++] = r;
    return RS_OK;
}

int64_t rs_net_link_drops_pending(const rs_net *net, int link)
{
    const rs_link *l = link_get(net, link);
    if (!l)
        return RS_ERR_INVAL;
    int64_t n = 0;
    for (uint32_t i = 0; i < l->n_drops; i++)
        n += l->drops[i].remaining;
    return n;
}

int rs_net_link_mark_trim_ok(rs_net *net, int link, int on)
{
    rs_link *l = link_get(net, link);
    if (!l)
        return rs_net_fail(net, RS_ERR_INVAL, "no link %d", link);
    if (on != 0 && on != 1)
        return rs_net_fail(net, RS_ERR_INVAL, "mark_trim_ok %d outside 0..1", on);
    /* kept as a rule among the drop rules, so a link without any costs nothing per frame */
    uint32_t i = 0;
    while (i < l->n_drops && !l->drops[i].mark_trim_ok)
        i++;
    if (!on && i < l->n_drops) {
        memmove(&l->drops[i], &l->drops[i + 1], (l->n_drops - i - 1) * sizeof(*l->drops));
        l->n_drops--;
    } else if (on && i == l->n_drops) {
        rs_drop_rule *nd = realloc(l->drops, (l->n_drops + 1) * sizeof(*nd));
        if (!nd)
            return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
        l->drops = nd;
        nd[l->n_drops++] = (rs_drop_rule){.mark_trim_ok = 1};
    }
    return RS_OK;
}

int rs_net_link_schedule_loss(rs_net *net, int link, double loss_prob, int64_t t_ps)
{
    rs_link *l = link_get(net, link);
    if (!l)
        return rs_net_fail(net, RS_ERR_INVAL, "no link %d", link);
    if (!(loss_prob >= 0.0 && loss_prob <= 1.0))
        return rs_net_fail(net, RS_ERR_INVAL, "loss probability %g outside [0, 1]", loss_prob);
    if (t_ps < net->eng.now_ps)
        return rs_net_fail(net, RS_ERR_INVAL, "loss change at %lld ps is before now (%lld ps)",
                           (long long)t_ps, (long long)net->eng.now_ps);
    rs_loss_change *nc = realloc(l->loss_changes, (l->n_loss_changes + 1) * sizeof(*nc));
    if (!nc)
        return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    l->loss_changes = nc;
    uint32_t i = l->n_loss_changes; /* keep sorted by time; equal times in the order scheduled */
    while (i > 0 && nc[i - 1].t_ps > t_ps) {
        nc[i] = nc[i - 1];
        i--;
    }
    nc[i] = (rs_loss_change){.t_ps = t_ps, .loss_prob = loss_prob};
    l->n_loss_changes++;
    return RS_OK;
}

int rs_net_pcap_status(const rs_net *net, uint64_t *frames, int *err)
{
    *frames = net->pcap ? net->pcap->frames : 0;
    *err = net->pcap ? net->pcap->err : 0;
    return net->pcap ? 0 : 1;
}

int rs_net_pcap_links(rs_net *net, const int *links, uint32_t n)
{
    for (uint32_t i = 0; links && i < n; i++)
        if (!link_get(net, links[i]))
            return rs_net_fail(net, RS_ERR_INVAL, "capture: no link direction %d", links[i]);
    net->pcap_all = links == NULL;
    for (uint32_t i = 0; i < net->n_links; i++)
        net->links[i]->capture = links == NULL;
    for (uint32_t i = 0; links && i < n; i++)
        net->links[links[i]]->capture = 1;
    return RS_OK;
}

int64_t rs_link_transmit(rs_net *net, rs_link *l, rs_pkt *pkt)
{
    /* a frame a switch forwards kept the length its ingress link computed (switches change
     * neither header sizes nor payload); anything else is measured here */
    /* cached by the requester that built it or by the link that carried it into a switch (0: not) */
    size_t frame = pkt->frame_len ? pkt->frame_len : rs_frame_len(pkt);
    pkt->frame_len = (uint16_t)frame;
    /* an IB flow-control packet is its 6 bytes on the wire (no Ethernet FCS, preamble or gap) */
    uint32_t wire = pkt->kind == RS_PKT_IB_FC ? RS_CREDIT_FC_BYTES : (uint32_t)frame + rs_frame_wire_extra(pkt);
    int64_t ser_ps = rs_link_ser_ps(l, wire);
    uint64_t index = l->stats.frames++;
    if (net->stop_after_frame) { /* step-through: hand control back once this event is done */
        net->stop_after_frame = 0;
        net->frame_stop = 1;
    }
    l->stats.bytes += frame;
    l->stats.busy_ps += ser_ps;
    if (net->pcap && l->capture && pkt->kind != RS_PKT_IB_FC) /* the codec writes Ethernet frames */
        rs_pcap_write(net->pcap, pkt, net->eng.now_ps); /* a write error stops the capture, not the run */
    trace_tx(&net->eng, l, pkt);
    int drop = l->down ? RS_TR_DROP_LINK_DOWN : should_drop(net, l, pkt, index);
    if (drop) {
        l->stats.dropped++;
        trace_drop(&net->eng, l, pkt, drop);
        rs_pkt_release(net->pool, pkt);
        return ser_ps;
    }
    /* the last bit reaches the far end after serialisation plus propagation.  While on the link a
     * frame's t_arrive_ps holds the arrival of the frame behind it (0: none yet), written now,
     * when the one ahead was put on the wire a frame time ago and is still in the cache: its
     * arrival then arms the next without loading a frame that waited a link delay (rs_link_arrival) */
    int64_t t_arrive = net->eng.now_ps + ser_ps + l->delay_ps;
    /* every frame's arrival takes its key from the sender, now, whether the arrival event is armed
     * now (nothing ahead on the wire) or by the arrival of the frame ahead: the key then does not
     * depend on how far the receiver got, which a partition does not know (sim/par.c) */
    uint64_t key = rs_engine_next_key(&net->eng, t_arrive);
    pkt->next = NULL;
    if (l->cut) { /* to another partition: it arrives after this window, through the outbox */
        pkt->t_arrive_ps = t_arrive;
        pkt->arrive_key_next = key;
        if (l->out_tail)
            l->out_tail->next = pkt;
        else
            l->out_head = pkt;
        l->out_tail = pkt;
        return ser_ps;
    }
    pkt->t_arrive_ps = 0;
    if (l->fifo_tail) {
        l->fifo_tail->t_arrive_ps = t_arrive;
        l->fifo_tail->arrive_key_next = key;
        l->fifo_tail->next = pkt;
    } else {
        l->fifo_head = pkt;
        rs_engine_arm_seq(&net->eng, &l->arrival, t_arrive, key);
    }
    l->fifo_tail = pkt;
    /* it arrives a link delay from now: time to load its QP (a NIC with few QPs wants no hint) */
    if (l->to->owner_kind == RS_NODE_HOST && l->to->client.frame_coming)
        l->to->client.frame_coming(l->to->client.ctx, pkt);
    return ser_ps;
}

void rs_link_take_outbox(rs_net *net, rs_link *l)
{
    rs_pkt *pkt = l->out_head;
    l->out_head = l->out_tail = NULL;
    rs_link_take_frames(net, l, pkt);
}

void rs_link_take_frames(rs_net *net, rs_link *l, rs_pkt *pkt)
{
    while (pkt) {
        rs_pkt *next = pkt->next;
        int64_t t = pkt->t_arrive_ps;
        uint64_t key = pkt->arrive_key_next;
        pkt->t_arrive_ps = 0;
        pkt->next = NULL;
        if (l->fifo_tail) {
            l->fifo_tail->t_arrive_ps = t;
            l->fifo_tail->arrive_key_next = key;
            l->fifo_tail->next = pkt;
        } else {
            l->fifo_head = pkt;
            rs_engine_arm_seq(&net->eng, &l->arrival, t, key);
        }
        l->fifo_tail = pkt;
        pkt = next;
    }
}

/* A data packet reaches a port in credit mode: it takes blocks of the VL's buffer; a host NIC
 * takes it at once, which frees them again, while a switch holds them until the packet leaves. */
static void credit_deliver(rs_net *net, rs_port *to, rs_pkt *pkt)
{
    rs_credit_arrive(net, to, pkt);
    if (to->owner_kind == RS_NODE_SWITCH) {
        rs_switch_receive(net, to->sw, to, pkt);
        return;
    }
    uint32_t vl = pkt->priority & 7u, blocks = rs_credit_blocks(pkt->frame_len);
    to->client.receive(to->client.ctx, pkt);
    rs_credit_drained(net, to, vl, blocks);
}

void rs_link_arrival(rs_net *net, rs_link *l)
{
    rs_pkt *pkt = l->fifo_head;
    if (!pkt)
        return;
    l->fifo_head = pkt->next;
    if (!l->fifo_head)
        l->fifo_tail = NULL;
    else /* the next frame's time and key (rs_link_transmit) */
        rs_engine_arm_seq(&net->eng, &l->arrival, pkt->t_arrive_ps, pkt->arrive_key_next);
    pkt->t_arrive_ps = net->eng.now_ps;
    pkt->next = NULL;
    l->stats.delivered++;
    trace_rx(&net->eng, l, pkt);
    rs_port *to = l->to;
    if (pkt->kind == RS_PKT_ROCE && !to->cr && !to->rx) { /* most frames: data to a PFC port */
        if (to->owner_kind == RS_NODE_HOST)
            to->client.receive(to->client.ctx, pkt);
        else
            rs_switch_receive(net, to->sw, to, pkt);
        return;
    }
    if (pkt->kind == RS_PKT_PFC)
        rs_pause_receive(net, to, pkt); /* acts on this port; never forwarded */
    else if (pkt->kind == RS_PKT_IB_FC)
        rs_credit_fc_receive(net, to, pkt); /* likewise */
    else if (to->cr)
        credit_deliver(net, to, pkt);
    else if (to->owner_kind == RS_NODE_HOST && to->rx)
        rs_rxpipe_receive(net, to->rx, pkt); /* slow receiver: buffer, drain, maybe pause */
    else if (to->owner_kind == RS_NODE_HOST)
        to->client.receive(to->client.ctx, pkt);
    else
        rs_switch_receive(net, to->sw, to, pkt);
}

rs_link *rs_link_new(rs_net *net, rs_port *from, rs_port *to, int64_t rate_bps, int64_t delay_ps)
{
    /* on a line of its own: the first two lines are what a frame touches (link.h) */
    size_t bytes = (sizeof(rs_link) + 63) & ~(size_t)63;
    rs_link *l = aligned_alloc(64, bytes);
    if (!l)
        return NULL;
    memset(l, 0, bytes);
    l->id = (int)net->n_links;
    l->from = from;
    l->to = to;
    l->rate_bps = rate_bps;
    l->delay_ps = delay_ps;
    l->capture = net->pcap_all;
    l->arrival.owner = l;
    l->arrival.kind = RS_EV_LINK_ARRIVAL;
    l->state_change.owner = l;
    l->state_change.kind = RS_EV_LINK_STATE;
    l->arrival.ent = l->state_change.ent = to->tx_done.ent; /* the receiving node's */
    /* stream id: 1<<32 | link id, disjoint from the host streams */
    rs_rng_seed(&l->rng, net->eng.seed, (1ull << 32) | (uint64_t)l->id);
    from->tx = l;
    net->links[net->n_links++] = l;
    return l;
}
