/* Send side of PFC: the per-(ingress port, priority) XOFF/XON machine (see pfc.h). */
#include "link/pfc.h"

#include "link/net.h"
#include "engine/trace.h"
#include "link/pause.h"
#include "link/switch.h"

void rs_pfc_init(rs_pfc_queue *q, rs_switch *sw, uint16_t port, uint8_t prio)
{
    q->sw = sw;
    q->port = port;
    q->prio = prio;
    q->pausing = 0;
    q->refresh.owner = q;
    q->refresh.kind = RS_EV_PFC_REFRESH;
    q->refresh.ent = rs_ent_switch(sw->id);
}

static void send_frame(rs_net *net, rs_pfc_queue *q, uint16_t quanta)
{
    rs_swport *sp = &q->sw->ports[q->port];
    rs_port *port = &sp->port;
    if (!port->tx)
        return;
    uint8_t src[6] = {0x02, 0x10, (uint8_t)(q->sw->id >> 8), (uint8_t)q->sw->id,
                      (uint8_t)(q->port >> 8), (uint8_t)q->port};
    rs_pkt *p = rs_pfc_frame_new(net, src, (uint8_t)(1u << q->prio), quanta);
    if (!p)
        return;
    if (quanta)
        sp->stats.pfc_xoff_sent++;
    else
        sp->stats.pfc_xon_sent++;
    rs_port_send_ctrl(net, port, p);
}

static void send_xoff(rs_net *net, rs_pfc_queue *q)
{
    rs_port *port = &q->sw->ports[q->port].port;
    uint16_t quanta = q->sw->cfg.pfc_quanta;
    send_frame(net, q, quanta);
    if (port->tx) {
        int64_t half = rs_pause_quanta_ps(quanta, port->tx->rate_bps) / 2;
        rs_engine_arm(&net->eng, &q->refresh, net->eng.now_ps + (half > 0 ? half : 1));
    }
}

static void trace_decision(rs_net *net, const rs_pfc_queue *q, int xoff)
{
    if (net->eng.trace) {
        const rs_mmu *m = &q->sw->mmu;
        rs_trace_rec_pfc(&net->eng, (int)q->sw->id, q->port, q->prio, xoff, rs_mmu_shared_of(m, q->port, q->prio),
                         m->hdrm_bytes[q->port * RS_NPRIO + q->prio], rs_mmu_threshold(m));
    }
}

void rs_pfc_on_enqueue(rs_net *net, rs_pfc_queue *q)
{
    rs_switch *sw = q->sw;
    if (q->pausing || !(sw->cfg.pfc_mask & (1u << q->prio)))
        return;
    if (!rs_mmu_should_pause(&sw->mmu, q->port, q->prio))
        return;
    rs_swport_stats *st = &sw->ports[q->port].stats;
    if (!st->in_bytes_at_first_xoff[q->prio])
        st->in_bytes_at_first_xoff[q->prio] = sw->mmu.in_bytes[q->port * RS_NPRIO + q->prio] +
                                              sw->mmu.hdrm_bytes[q->port * RS_NPRIO + q->prio];
    trace_decision(net, q, 1);
    q->pausing = 1;
    send_xoff(net, q);
}

void rs_pfc_on_dequeue(rs_net *net, rs_pfc_queue *q)
{
    if (!q->pausing)
        return;
    int resume = rs_mmu_should_resume(&q->sw->mmu, q->port, q->prio);
#ifdef RDMASIM_MUTANTS /* pfc_early_xon: resume at the first dequeue */
    resume = resume || RS_MUTANT(&net->eng, RS_MUT_PFC_EARLY_XON);
#endif
    if (!resume)
        return;
    trace_decision(net, q, 0);
    q->pausing = 0;
    rs_timer_cancel(&q->refresh);
    send_frame(net, q, 0);
}

void rs_pfc_refresh(rs_net *net, rs_pfc_queue *q)
{
    if (q->pausing)
        send_xoff(net, q);
}
