/* Receive side of PFC: per-priority pause timers of one port.
 *
 * A frame acts pfc_response_ps after it arrived (the MAC's response time; 802.3 Annex 31D bounds
 * it, e.g. 394 pause quanta at 100 Gb/s, and headroom must cover it): until then it waits in the
 * port's FIFO, in arrival order, and the port goes on sending.  Then, per priority i, the port is
 * RUNNING or PAUSED:
 *   RUNNING --frame, time[i] > 0--> PAUSED until now + time[i] x 512 / rate
 *   PAUSED  --frame, time[i] > 0--> PAUSED, deadline restarted from now
 *   PAUSED  --frame, time[i] = 0--> RUNNING (kick the owner's transmit loop)
 *   PAUSED  --deadline reached---> RUNNING (kick)
 * One timer per port fires at the earliest deadline of the paused priorities. */
#include "link/pause.h"

#include "link/net.h"

rs_pkt *rs_pfc_frame_new(rs_net *net, const uint8_t src_mac[6], uint8_t class_mask, uint16_t quanta)
{
    static const uint8_t dst[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}; /* MAC control multicast */
    rs_pkt *p = rs_pkt_alloc(net->pool);
    if (!p) {
        net->eng.failed = 1;
        rs_net_fail(net, RS_ERR_NOMEM, "out of memory allocating a PFC frame");
        return NULL;
    }
    p->kind = RS_PKT_PFC;
    for (int i = 0; i < 6; i++) {
        p->dst_mac[i] = dst[i];
        p->src_mac[i] = src_mac[i];
    }
    p->pfc_class_enable = class_mask;
    for (int i = 0; i < RS_NPRIO; i++)
        if (class_mask & (1u << i))
            p->pfc_quanta[i] = quanta;
    p->priority = 7;
    return p;
}

int64_t rs_pause_quanta_ps(uint32_t quanta, int64_t rate_bps)
{
    /* ceil(bits * 10^12 / rate) without overflowing 64 bits (bits * 10^12 does for 65535 quanta):
     * a = bits * 10^6, then a * 10^6 / rate by long division (exact for rates up to 9 Tb/s) */
    int64_t a = (int64_t)quanta * 512 * 1000000;
    int64_t q1 = a / rate_bps, r1 = a % rate_bps;
    int64_t num = r1 * 1000000;
    return q1 * 1000000 + num / rate_bps + (num % rate_bps != 0);
}

static void resume(rs_port *port, int prio, int64_t now_ps)
{
    port->paused_mask &= (uint8_t)~(1u << prio);
    port->pause.paused_ps[prio] += now_ps - port->pause_start_ps[prio];
}

static void rearm(rs_net *net, rs_port *port)
{
    int64_t next = INT64_MAX;
    for (int i = 0; i < RS_NPRIO; i++)
        if ((port->paused_mask & (1u << i)) && port->pause_until_ps[i] < next)
            next = port->pause_until_ps[i];
    if (next == INT64_MAX)
        rs_timer_cancel(&port->pause_end);
    else if (!port->pause_end.armed || port->pause_end.when_ps != next)
        rs_engine_arm(&net->eng, &port->pause_end, next);
}

/* The frame acts now. */
static void pause_apply(rs_net *net, rs_port *port, rs_pkt *pkt)
{
    int64_t rate = port->tx ? port->tx->rate_bps : 0;
    uint8_t was = port->paused_mask;
    port->pause.pfc_rx_frames++;
    for (int i = 0; i < RS_NPRIO; i++) {
        if (!(pkt->pfc_class_enable & (1u << i)))
            continue;
        if (pkt->pfc_quanta[i] == 0 || rate <= 0) {
            port->pause.pfc_rx_xon++;
            if (port->paused_mask & (1u << i))
                resume(port, i, net->eng.now_ps);
            continue;
        }
        port->pause.pfc_rx_xoff++;
        if (!(port->paused_mask & (1u << i))) {
            port->paused_mask |= (uint8_t)(1u << i);
            port->pause_start_ps[i] = net->eng.now_ps;
        }
        port->pause_until_ps[i] = net->eng.now_ps + rs_pause_quanta_ps(pkt->pfc_quanta[i], rate);
    }
    rs_pkt_release(net->pool, pkt);
    rearm(net, port);
    if (port->paused_mask != was)
        rs_port_kick(net, port);
}

void rs_pause_receive(rs_net *net, rs_port *port, rs_pkt *pkt)
{
    if (port->cr) { /* credit mode replaces PFC: pause frames are not obeyed */
        rs_pkt_release(net->pool, pkt);
        return;
    }
    if (port->pfc_response_ps == 0 && !port->pfc_wait_head) {
        pause_apply(net, port, pkt);
        return;
    }
    /* in arrival order: a response time lowered while frames wait does not overtake them */
    int64_t at = net->eng.now_ps + port->pfc_response_ps;
    if (port->pfc_wait_tail && port->pfc_wait_tail->t_arrive_ps > at)
        at = port->pfc_wait_tail->t_arrive_ps;
    pkt->t_arrive_ps = at;
    pkt->next = NULL;
    if (port->pfc_wait_tail) {
        port->pfc_wait_tail->next = pkt;
    } else {
        port->pfc_wait_head = pkt;
        rs_engine_arm(&net->eng, &port->pfc_respond, at);
    }
    port->pfc_wait_tail = pkt;
}

void rs_pause_respond(rs_net *net, rs_port *port)
{
    rs_pkt *p;
    while ((p = port->pfc_wait_head) && p->t_arrive_ps <= net->eng.now_ps) {
        port->pfc_wait_head = p->next;
        if (!port->pfc_wait_head)
            port->pfc_wait_tail = NULL;
        pause_apply(net, port, p);
    }
    if (port->pfc_wait_head)
        rs_engine_arm(&net->eng, &port->pfc_respond, port->pfc_wait_head->t_arrive_ps);
}

void rs_pause_expire(rs_net *net, rs_port *port)
{
    for (int i = 0; i < RS_NPRIO; i++)
        if ((port->paused_mask & (1u << i)) && port->pause_until_ps[i] <= net->eng.now_ps)
            resume(port, i, net->eng.now_ps);
    rearm(net, port);
    rs_port_kick(net, port);
}

void rs_pause_stats_now(const rs_port *port, int64_t now_ps, rs_pause_stats *out)
{
    *out = port->pause;
    uint8_t mask = port->cr ? 0 : port->paused_mask; /* credit mode: paused_mask is credit stall (credit.c) */
    out->paused_mask = mask;
    for (int i = 0; i < RS_NPRIO; i++)
        if (mask & (1u << i))
            out->paused_ps[i] += now_ps - port->pause_start_ps[i];
}
