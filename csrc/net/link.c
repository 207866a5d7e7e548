/* Link direction: impairments on transmit, FIFO of frames in flight, arrivals. */
#include "core/sim_impl.h"
#include "core/trace.h"

#include "net/pause.h"
#include "net/rxpipe.h"
#include "net/switch.h"
#include "rdmasim/ib.h"
#include "transport/transport.h"

/* Explicit drop list first (teaching and tests), then i.i.d. loss.
 * Returns 0 (keep) or the rs_trace_drop_reason. */
static int should_drop(rs_link *l, const rs_pkt *pkt, uint64_t frame_index)
{
    for (uint32_t i = 0; i < l->n_drops; i++) {
        rs_drop_rule *r = &l->drops[i];
        if (!r->remaining)
            continue;
        int hit = (r->match == RS_DROP_NTH && r->value == frame_index) ||
                  (r->match == RS_DROP_PSN && pkt->kind == RS_PKT_ROCE && r->value == pkt->psn);
        if (hit) {
            r->remaining--;
            return RS_TR_DROP_LIST;
        }
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

int64_t rs_link_transmit(rs_sim *sim, rs_link *l, rs_pkt *pkt)
{
    /* a frame a switch forwards kept the length its ingress link computed (switches change
     * neither header sizes nor payload); anything else is measured here */
    /* cached by the requester that built it or by the link that carried it into a switch (0: not) */
    size_t frame = pkt->frame_len ? pkt->frame_len : rs_frame_len(pkt);
    pkt->frame_len = (uint16_t)frame;
    int64_t ser_ps = rs_link_ser_ps(l, (uint32_t)frame + RS_FCS_BYTES + RS_WIRE_OVERHEAD_BYTES);
    uint64_t index = l->stats.frames++;
    if (sim->stop_after_frame) { /* step-through: hand control back once this event is done */
        sim->stop_after_frame = 0;
        sim->frame_stop = 1;
    }
    l->stats.bytes += frame;
    l->stats.busy_ps += ser_ps;
    if (sim->pcap && rs_pcap_write(sim->pcap, pkt, sim->now_ps) != 0) {
        sim->failed = 1;
        rs_sim_fail(sim, RS_ERR_IO, "error writing pcap file");
    }
    rs_trace_tx(sim, l, pkt);
    int drop = l->down ? RS_TR_DROP_LINK_DOWN : should_drop(l, pkt, index);
    if (drop) {
        l->stats.dropped++;
        rs_trace_link_drop(sim, l, pkt, drop);
        rs_pkt_release(&sim->pool, pkt);
        return ser_ps;
    }
    /* the last bit reaches the far end after serialisation plus propagation.  While on the link a
     * frame's t_arrive_ps holds the arrival of the frame behind it (0: none yet), written now,
     * when the one ahead was put on the wire a frame time ago and is still in the cache: its
     * arrival then arms the next without loading a frame that waited a link delay (rs_link_arrival) */
    int64_t t_arrive = sim->now_ps + ser_ps + l->delay_ps;
    pkt->t_arrive_ps = 0;
    pkt->next = NULL;
    if (l->fifo_tail) {
        l->fifo_tail->t_arrive_ps = t_arrive;
        l->fifo_tail->next = pkt;
    } else {
        l->fifo_head = pkt;
        rs_sim_arm(sim, &l->arrival, t_arrive);
    }
    l->fifo_tail = pkt;
    if (l->to->owner_kind == RS_NODE_HOST) /* it arrives a link delay from now: time to load its QP */
        rs_nic_frame_coming(l->to->host, pkt);
    return ser_ps;
}

void rs_link_arrival(rs_sim *sim, rs_link *l)
{
    rs_pkt *pkt = l->fifo_head;
    if (!pkt)
        return;
    l->fifo_head = pkt->next;
    if (!l->fifo_head)
        l->fifo_tail = NULL;
    else
        rs_sim_arm(sim, &l->arrival, pkt->t_arrive_ps); /* the next frame's (rs_link_transmit) */
    pkt->t_arrive_ps = sim->now_ps;
    pkt->next = NULL;
    l->stats.delivered++;
    rs_trace_rx(sim, l, pkt);
    rs_port *to = l->to;
    if (pkt->kind == RS_PKT_PFC)
        rs_pause_receive(sim, to, pkt); /* acts on this port; never forwarded */
    else if (to->owner_kind == RS_NODE_HOST && to->host->rx)
        rs_rxpipe_receive(sim, to->host->rx, pkt); /* slow receiver: buffer, drain, maybe pause */
    else if (to->owner_kind == RS_NODE_HOST)
        rs_nic_receive(sim, to->host, pkt);
    else
        rs_switch_receive(sim, to->sw, to, pkt);
}
