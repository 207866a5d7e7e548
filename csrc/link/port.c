/* Port transmit loop: one frame at a time, pulled from the owner when idle. */
#include "sim/sim_impl.h"
#include "link/switch.h"

void rs_port_init(rs_port *port, int owner_kind, rs_host *host, rs_switch *sw, uint16_t index)
{
    port->owner_kind = (uint16_t)owner_kind;
    port->index = index;
    port->host = host;
    port->sw = sw;
    port->tx_done.owner = port;
    port->tx_done.kind = RS_EV_PORT_TX_DONE;
    port->pause_end.owner = port;
    port->pause_end.kind = RS_EV_PORT_PAUSE_END;
}

void rs_port_kick(rs_sim *sim, rs_port *port)
{
    if (port->pulling) {
        /* the owner queued something while we ask it for a frame: ask again if it had none */
        port->kick_again = 1;
        return;
    }
    if (port->busy || !port->tx)
        return;
    if (sim->now_ps < port->busy_until) {
        /* still serialising a frame that went out without a transmit-done event: come back then */
        port->busy = 1;
        rs_sim_arm(sim, &port->tx_done, port->busy_until);
        return;
    }
    rs_pkt *pkt;
    port->pulling = 1;
    do {
        port->kick_again = 0;
        if (port->owner_kind == RS_NODE_HOST) {
            pkt = rs_nic_next_frame(sim, port->host);
            if (pkt)
                pkt->ip_id = port->next_ip_id++; /* a switch forwards the sender's IP ID unchanged */
        } else {
            pkt = rs_switch_next_frame(sim, port->sw, port);
        }
    } while (!pkt && port->kick_again);
    port->pulling = 0;
    if (!pkt)
        return;
    /* a frame to the NIC's own host is looped inside the NIC, never put on the link (nic.c) */
    int64_t ser_ps = port->owner_kind == RS_NODE_HOST && rs_nic_is_loopback(port->host, pkt)
                         ? rs_nic_loopback(sim, port->host, port->tx, pkt)
                         : rs_link_transmit(sim, port->tx, pkt);
    port->busy_until = sim->now_ps + ser_ps;
    /* A NIC whose remaining work is all held by its rate limiter until after this frame gets no
     * transmit-done event: its pace timer brings the port back (one event per paced packet, not
     * two); anything that turns up sooner kicks the port, which then waits for busy_until. */
    if (port->owner_kind == RS_NODE_HOST && rs_nic_idle_after(sim, port->host, port->busy_until))
        return;
    port->busy = 1;
    rs_sim_arm(sim, &port->tx_done, port->busy_until);
}

void rs_port_send_ctrl(rs_sim *sim, rs_port *port, rs_pkt *pkt)
{
    pkt->next = NULL;
    if (port->ctrl_tail)
        port->ctrl_tail->next = pkt;
    else
        port->ctrl_head = pkt;
    port->ctrl_tail = pkt;
    rs_port_kick(sim, port);
}

void rs_port_tx_done(rs_sim *sim, rs_port *port)
{
    port->busy = 0;
    rs_port_kick(sim, port);
}
