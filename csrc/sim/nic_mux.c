/* One host port, two transports: the IB transport's NIC (transport/nic.c) and the Ultra Ethernet
 * endpoint (uet/endpoint.c) sit side by side behind the link-layer seam.  Once a simulation uses
 * UET, each host port's client table is this multiplexer: the wire goes to the two transports in
 * turn, frame by frame (either may send when the other has nothing), the port stays idle only when
 * both are, and a received frame goes to the transport its kind names.  Neither transport knows
 * the other; a simulation without UET keeps the NIC's own table (no extra call per frame). */
#include <stdlib.h>

#include "sim/sim_impl.h"

typedef struct rs_nic_mux {
    rs_port_client roce; /* the NIC's own table */
    rs_uet *uet;
    rs_uet_ep *ep;
    uint8_t uet_first;    /* whose turn it is to go first */
} rs_nic_mux;

static rs_pkt *mux_next_frame(void *ctx)
{
    rs_nic_mux *m = ctx;
    rs_pkt *p;
    if (m->uet_first) {
        if ((p = rs_uet_next_frame(m->ep)) != NULL) {
            m->uet_first = 0;
            return p;
        }
        return m->roce.next_frame(m->roce.ctx);
    }
    if ((p = m->roce.next_frame(m->roce.ctx)) != NULL) {
        m->uet_first = 1;
        return p;
    }
    return rs_uet_next_frame(m->ep);
}

static int mux_idle_after(void *ctx, int64_t free_ps)
{
    rs_nic_mux *m = ctx;
    return rs_uet_idle_after(m->ep, free_ps) && m->roce.idle_after(m->roce.ctx, free_ps);
}

static void mux_loopback(void *ctx, rs_pkt *pkt, int64_t ser_ps)
{
    rs_nic_mux *m = ctx;
    m->roce.loopback(m->roce.ctx, pkt, ser_ps); /* only RoCE frames loop back (link/port.c) */
}

static void mux_receive(void *ctx, rs_pkt *pkt)
{
    rs_nic_mux *m = ctx;
    if (pkt->kind == RS_PKT_UET)
        rs_uet_receive(m->uet, m->ep, pkt);
    else
        m->roce.receive(m->roce.ctx, pkt);
}

int rs_sim_uet_enable(rs_sim *sim)
{
    uint32_t n = sim->tp.n_hosts;
    if (n > sim->n_mux || !sim->mux) {
        rs_nic_mux **nm = realloc(sim->mux, (n ? n : 1) * sizeof(*nm));
        if (!nm)
            return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
        for (uint32_t i = sim->n_mux; i < n; i++)
            nm[i] = NULL;
        sim->mux = nm;
        sim->n_mux = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (sim->mux[i])
            continue;
        rs_host *h = sim->tp.hosts[i];
        rs_uet_ep *ep = rs_uet_ep_get(&sim->uet, (int)i);
        rs_nic_mux *m = calloc(1, sizeof(*m));
        if (!ep || !m) {
            free(m);
            return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
        }
        m->roce = h->port.client;
        m->roce.frame_coming = NULL;
        m->uet = &sim->uet;
        m->ep = ep;
        h->port.client = (rs_port_client){.ctx = m,
                                          .next_frame = mux_next_frame,
                                          .idle_after = mux_idle_after,
                                          .loopback = mux_loopback,
                                          .frame_coming = NULL,
                                          .receive = mux_receive};
        sim->mux[i] = m;
    }
    return RS_OK;
}

void rs_sim_mux_free(rs_sim *sim)
{
    for (uint32_t i = 0; i < sim->n_mux; i++)
        free(sim->mux[i]);
    free(sim->mux);
    sim->mux = NULL;
    sim->n_mux = 0;
}
