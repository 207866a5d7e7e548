/* Slow-receiver NIC pipeline (see rxpipe.h). */
#include "link/rxpipe.h"

#include <stdlib.h>
#include <string.h>

#include "link/net.h"
#include "link/pause.h"
#include "rdmasim/fabric.h"
#include "link/port.h"

static int64_t drain_ps(const rs_rxpipe *rx, const rs_pkt *p)
{
    uint64_t bits = (uint64_t)rs_frame_len(p) * 8;
    return (int64_t)((bits * 1000000000000ull + (uint64_t)rx->rate_bps - 1) / (uint64_t)rx->rate_bps);
}

static void send_pfc(rs_net *net, rs_rxpipe *rx, uint16_t quanta)
{
    rs_port *port = rx->port;
    if (!port->tx || !rs_net_pfc_allowed(net)) /* InfiniBand: no pause frames */
        return;
    rs_pkt *p = rs_pfc_frame_new(net, rx->mac, rx->prio_mask, quanta);
    if (!p)
        return;
    if (quanta) {
        rx->pfc_xoff_sent++;
        int64_t half = rs_pause_quanta_ps(quanta, port->tx->rate_bps) / 2;
        rs_engine_arm(&net->eng, &rx->refresh, net->eng.now_ps + (half > 0 ? half : 1));
    } else {
        rx->pfc_xon_sent++;
        rs_timer_cancel(&rx->refresh);
    }
    rs_port_send_ctrl(net, port, p);
}

static void arm_drain(rs_net *net, rs_rxpipe *rx)
{
    if (rx->head && rx->rate_bps > 0 && !rx->drain.armed)
        rs_engine_arm(&net->eng, &rx->drain, net->eng.now_ps + drain_ps(rx, rx->head));
}

void rs_rxpipe_receive(rs_net *net, rs_rxpipe *rx, rs_pkt *pkt)
{
    uint32_t len = (uint32_t)rs_frame_len(pkt);
    if (rx->bytes + len > rx->buf_bytes) {
        rx->dropped++;
        rs_pkt_release(net->pool, pkt);
        return;
    }
    pkt->next = NULL;
    if (rx->tail)
        rx->tail->next = pkt;
    else
        rx->head = pkt;
    rx->tail = pkt;
    rx->bytes += len;
    if (rx->bytes > rx->peak_bytes)
        rx->peak_bytes = rx->bytes;
    if (!rx->pausing && rx->prio_mask && rx->bytes >= rx->xoff_bytes) {
        rx->pausing = 1;
        send_pfc(net, rx, rx->quanta);
    }
    arm_drain(net, rx);
}

void rs_rxpipe_drain(rs_net *net, rs_rxpipe *rx)
{
    rs_pkt *p = rx->head;
    if (!p)
        return;
    rx->head = p->next;
    if (!rx->head)
        rx->tail = NULL;
    p->next = NULL;
    rx->bytes -= rs_frame_len(p);
    if (rx->pausing && rx->bytes <= rx->xon_bytes) {
        rx->pausing = 0;
        send_pfc(net, rx, 0);
    }
    arm_drain(net, rx);
    rs_port *port = rx->port;
    port->client.receive(port->client.ctx, p);
}

void rs_rxpipe_refresh(rs_net *net, rs_rxpipe *rx)
{
    if (rx->pausing)
        send_pfc(net, rx, rx->quanta);
}

void rs_rxpipe_free(rs_net *net, rs_rxpipe *rx)
{
    if (!rx)
        return;
    rs_pkt *p = rx->head;
    while (p) {
        rs_pkt *n = p->next;
        rs_pkt_release(net->pool, p);
        p = n;
    }
    free(rx);
}

/* ---- control path ---- */

int rs_rxpipe_set(rs_net *net, rs_port *port, const uint8_t mac[6], int enable, int64_t rate_bps,
                  uint64_t buf_bytes, uint64_t xoff_bytes, uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta)
{
    if (enable && port->cr) /* its PFC frames would meet a peer that obeys credits only */
        return rs_net_fail(net, RS_ERR_STATE, "host %d: a slow receiver (PFC) on a port in credit mode is not "
                           "supported", (int)port->node);
    if (!enable) {
        if (port->rx && port->rx->head)
            return rs_net_fail(net, RS_ERR_BUSY, "host %d: receive buffer still holds %llu bytes", (int)port->node,
                               (unsigned long long)port->rx->bytes);
        if (port->rx) { /* kept, not freed: stale heap entries of its timers may still point at it */
            rs_timer_cancel(&port->rx->drain);
            rs_timer_cancel(&port->rx->refresh);
            port->rx_off = port->rx;
            port->rx = NULL;
        }
        return RS_OK;
    }
    if (rate_bps < 0 || xon_bytes > xoff_bytes || xoff_bytes > buf_bytes || quanta == 0)
        return rs_net_fail(net, RS_ERR_INVAL,
                           "receiver: need rate >= 0 (0 = stuck), xon (%llu) <= xoff (%llu) <= buffer (%llu), "
                           "quanta 1..65535", (unsigned long long)xon_bytes, (unsigned long long)xoff_bytes,
                           (unsigned long long)buf_bytes);
    if (!port->rx && port->rx_off) { /* re-enable: the same memory, reset */
        port->rx = port->rx_off;
        port->rx_off = NULL;
        memset(port->rx, 0, sizeof(*port->rx));
    }
    if (!port->rx) {
        port->rx = calloc(1, sizeof(*port->rx));
        if (!port->rx)
            return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
    }
    rs_rxpipe *rx = port->rx;
    if (!rx->port) {
        rx->port = port;
        rx->drain.owner = rx;
        rx->drain.kind = RS_EV_RX_DRAIN;
        rx->refresh.owner = rx;
        rx->refresh.kind = RS_EV_RX_REFRESH;
        rx->drain.ent = rx->refresh.ent = port->tx_done.ent;
    }
    memcpy(rx->mac, mac, sizeof rx->mac);
    rx->rate_bps = rate_bps;
    rx->buf_bytes = buf_bytes;
    rx->xoff_bytes = xoff_bytes;
    rx->xon_bytes = xon_bytes;
    rx->prio_mask = prio_mask;
    rx->quanta = quanta;
    rs_timer_cancel(&rx->drain); /* the new rate applies from the next frame */
    if (rx->head && rate_bps > 0)
        rs_engine_arm(&net->eng, &rx->drain, net->eng.now_ps + drain_ps(rx, rx->head));
    return RS_OK;
}

void rs_rxpipe_stats(const rs_port *port, rs_host_rx_stats *out)
{
    const rs_rxpipe *rx = port->rx;
    *out = (rs_host_rx_stats){0};
    if (rx)
        *out = (rs_host_rx_stats){rx->pfc_xoff_sent, rx->pfc_xon_sent, rx->dropped, rx->peak_bytes, rx->bytes};
}
