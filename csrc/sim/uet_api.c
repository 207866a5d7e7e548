/* The public UET endpoint counters (rdmasim/uet.h): a host's PDC establishment and close. */
#include "sim/sim_impl.h"

int rs_uet_host_stats(const rs_sim *sim, int host, rs_uet_ep_stats *out)
{
    if (!sim || !out || host < 0 || (uint32_t)host >= sim->tp.net.n_hosts)
        return RS_ERR_INVAL;
    memset(out, 0, sizeof(*out));
    const rs_uet_ep *ep = (uint32_t)host < sim->uet.n_eps ? sim->uet.eps[host] : NULL;
    if (!ep)
        return RS_OK; /* no UET traffic here yet */
    *out = ep->st;
    out->pdcs_live = ep->ids.live;
    out->rx_unknown = ep->rx_unknown;
    return RS_OK;
}
