/* Port transmit loop: one frame at a time, pulled from the owner when idle. */
#include "core/sim_impl.h"

void rs_port_kick(rs_sim *sim, rs_port *port)
{
    if (port->busy || !port->tx)
        return;
    rs_pkt *pkt = rs_nic_next_frame(sim, port->host);
    if (!pkt)
        return;
    pkt->ip_id = port->next_ip_id++;
    int64_t ser_ps = rs_link_transmit(sim, port->tx, pkt);
    port->busy = 1;
    rs_sim_arm(sim, &port->tx_done, sim->now_ps + ser_ps);
}

void rs_port_tx_done(rs_sim *sim, rs_port *port)
{
    port->busy = 0;
    rs_port_kick(sim, port);
}
