/* Port transmit loop: one frame at a time, pulled from the owner when idle. */
#include <string.h>

#include "link/credit.h"
#include "link/frame.h"
#include "link/net.h"
#include "link/switch.h"
#include "rdmasim/codec.h"
#include "rdmasim/ib.h"

static void port_init(rs_port *port, int owner_kind, int32_t node, uint16_t index)
{
    port->owner_kind = (uint16_t)owner_kind;
    port->index = index;
    port->node = node;
    port->tx_done.owner = port;
    port->tx_done.kind = RS_EV_PORT_TX_DONE;
    port->pause_end.owner = port;
    port->pause_end.kind = RS_EV_PORT_PAUSE_END;
    port->pfc_respond.owner = port;
    port->pfc_respond.kind = RS_EV_PORT_PFC_RESPOND;
    port->tx_done.ent = port->pause_end.ent = port->pfc_respond.ent =
        owner_kind == RS_NODE_HOST ? rs_ent_host(node) : rs_ent_switch(node);
}

void rs_port_init_host(rs_port *port, int32_t node, const rs_port_client *client)
{
    port_init(port, RS_NODE_HOST, node, 0);
    port->client = *client; /* by value: one load per call, not two */
    uint32_t n = (uint32_t)node + 1;
    const uint8_t mac[6] = {0x02, 0x00, 0x00, (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
    memcpy(port->addr.mac, mac, 6);
    port->addr.ip = (10u << 24) | (n & 0xFFFFFF);
    for (int i = 0; i < 64; i++)
        port->addr.dscp_to_prio[i] = rs_dscp_default_prio((uint8_t)i);
    /* IB: LIDs 1..0xBFFF are unicast; the simulator's host count stays below that (16-bit nodes) */
    port->addr.lid = (uint16_t)n;
    /* GID: fe80::/64 + EUI-64 port GUID from the MAC (as RoCE's and IPoIB's link-local GIDs) */
    memset(port->addr.gid, 0, sizeof port->addr.gid);
    port->addr.gid[0] = 0xFE;
    port->addr.gid[1] = 0x80;
    const uint8_t guid[8] = {(uint8_t)(mac[0] ^ 0x02), mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]};
    memcpy(port->addr.gid + 8, guid, 8);
}

void rs_port_resolve_path(const rs_net *net, const rs_port *port, int dst_node, uint8_t traffic_class, uint32_t qpn,
                          rs_link_path *out)
{
    const rs_port_addr *dst = &net->host_ports[dst_node]->addr;
    memcpy(out->src_mac, port->addr.mac, 6);
    memcpy(out->dst_mac, dst->mac, 6);
    out->src_ip = port->addr.ip;
    out->dst_ip = dst->ip;
    /* rxe: one fixed UDP source port per QP in 0xC000..0xFFFF (ECMP entropy) */
    uint32_t hash = qpn * 2654435761u;
    out->udp_sport = (uint16_t)(RS_ROCE_SPORT_BASE + ((hash >> 16) & 0x3FFF));
    out->tos = (uint8_t)((traffic_class & 0xFC) | 0x02); /* ECT(0): ECN-capable transport */
    out->priority = port->addr.dscp_to_prio[out->tos >> 2];
    out->ttl = 64;
    out->link_layer = net->link_layer;
    /* IB: the service level is the class the QP's traffic class selects (what RoCE makes its PFC
     * priority), and SL-to-VL is the identity here; a credit module with its own SL2VL tables
     * rewrites ib_vl per hop */
    out->ib_sl = out->priority;
    out->ib_vl = out->priority;
    out->ib_dlid = dst->lid;
    out->ib_slid = port->addr.lid;
}

void rs_port_init_switch(rs_port *port, int32_t node, rs_switch *sw, uint16_t index)
{
    port_init(port, RS_NODE_SWITCH, node, index);
    port->sw = sw;
}

/* RoCE loopback: a frame a host port addresses to its own node never goes on the link (nic.c). */
static int is_loopback(const rs_port *port, const rs_pkt *pkt)
{
    return pkt->kind == RS_PKT_ROCE && pkt->dst_node == (uint16_t)port->node;
}

static int64_t loopback(rs_port *port, rs_pkt *pkt)
{
    size_t frame = pkt->frame_len ? pkt->frame_len : rs_frame_len(pkt);
    pkt->frame_len = (uint16_t)frame;
    int64_t ser_ps = rs_link_ser_ps(port->tx, (uint32_t)frame + rs_frame_wire_extra(pkt));
    port->client.loopback(port->client.ctx, pkt, ser_ps);
    return ser_ps;
}

/* The owner's next frame: the transport's (host) or an egress queue's (switch), or NULL. */
static inline rs_pkt *owner_next_frame(rs_net *net, rs_port *port)
{
    if (port->owner_kind == RS_NODE_HOST) {
        rs_pkt *pkt = port->client.next_frame(port->client.ctx);
        if (pkt)
            pkt->ip_id = port->next_ip_id++; /* a switch forwards the sender's IP ID unchanged */
        return pkt;
    }
    return rs_switch_next_frame(net, port->sw, port);
}

void rs_port_kick(rs_net *net, rs_port *port)
{
    if (port->pulling) {
        /* the owner queued something while we ask it for a frame: ask again if it had none */
        port->kick_again = 1;
        return;
    }
    /* A switch port is free from the picosecond its frame ends, for every event of its switch at
     * that picosecond: one whose frame arrives then sends it at once, whether the port's
     * transmit-done comes before or after it in the tie order (it is not waited for) */
    if (port->busy) {
        if (port->owner_kind != RS_NODE_SWITCH || port->busy_until != net->eng.now_ps)
            return;
        rs_timer_cancel(&port->tx_done);
        port->busy = 0;
    }
    if (!port->tx)
        return;
    if (port->tx_reserved) {
        /* a switch port that sent without arming tx_done: if its frame has not ended, arm the
         * event now with its own sequence number (same-time events keep their order) */
        port->tx_reserved = 0;
        if (net->eng.now_ps < port->busy_until) {
            port->busy = 1;
            rs_engine_arm_seq(&net->eng, &port->tx_done, port->busy_until, port->tx_seq);
            return;
        }
    } else if (net->eng.now_ps < port->busy_until) {
        /* still serialising a frame that went out without a transmit-done event: come back then */
        port->busy = 1;
        rs_engine_arm(&net->eng, &port->tx_done, port->busy_until);
        return;
    }
    rs_pkt *pkt;
    port->pulling = 1;
    if (!port->cr) {
        do {
            port->kick_again = 0;
            pkt = owner_next_frame(net, port);
        } while (!pkt && port->kick_again);
    } else {
        do {
            port->kick_again = 0;
            /* credit mode: flow-control packets, then a held packet whose credits came, go first */
            if ((pkt = rs_credit_next_frame(net, port)) != NULL)
                break;
            pkt = owner_next_frame(net, port);
            if (pkt && !(port->owner_kind == RS_NODE_HOST && is_loopback(port, pkt)) &&
                !rs_credit_take(net, port, pkt)) {
                pkt = NULL; /* held for credits: its VL is stalled now, ask the owner for another */
                port->kick_again = 1;
            }
        } while (!pkt && port->kick_again);
    }
    port->pulling = 0;
    if (!pkt)
        return;
    int64_t ser_ps = port->owner_kind == RS_NODE_HOST && is_loopback(port, pkt)
                         ? loopback(port, pkt)
                         : rs_link_transmit(net, port->tx, pkt);
    port->busy_until = net->eng.now_ps + ser_ps;
    /* A NIC whose remaining work is all held by its rate limiter until after this frame gets no
     * transmit-done event: its pace timer brings the port back (one event per paced packet, not
     * two); anything that turns up sooner kicks the port, which then waits for busy_until. */
    if (port->owner_kind == RS_NODE_HOST) {
        if (port->client.idle_after(port->client.ctx, port->busy_until))
            return;
    } else if (ser_ps > 0 && !port->cr && !net->switch_tx_eager && rs_switch_port_empty(port)) {
        /* A switch port with nothing queued behind this frame (toward a sender: its ACKs) gets
         * no transmit-done event either; it takes the event's sequence number now, so that a
         * kick before the end of the frame arms the event exactly as it would have been. */
        port->tx_seq = rs_engine_next_key(&net->eng, port->busy_until);
        port->tx_reserved = 1;
        return;
    }
    port->busy = 1;
    rs_engine_arm(&net->eng, &port->tx_done, port->busy_until);
}

void rs_port_send_ctrl(rs_net *net, rs_port *port, rs_pkt *pkt)
{
    pkt->next = NULL;
    if (port->ctrl_tail)
        port->ctrl_tail->next = pkt;
    else
        port->ctrl_head = pkt;
    port->ctrl_tail = pkt;
    rs_port_kick(net, port);
}

void rs_port_tx_done(rs_net *net, rs_port *port)
{
    port->busy = 0;
    rs_port_kick(net, port);
}
