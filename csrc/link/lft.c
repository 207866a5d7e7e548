/* Linear forwarding tables (IBA 18.2.4): one egress port per destination LID, set by a subnet
 * manager (rdmasim/ib_fabric.py computes min-hop or up-down (up*-down*) tables).  A switch with a table
 * forwards by it alone (switch.c route_of); DLID = destination host index + 1 (LID 0 is
 * reserved).  Control path only. */
#include <stdlib.h>
#include <string.h>

#include "link/net.h"
#include "link/switch.h"

int rs_net_switch_set_lft(rs_net *net, int sw_id, const uint16_t *ports, uint32_t n)
{
    if (sw_id < 0 || (uint32_t)sw_id >= net->n_switches)
        return rs_net_fail(net, RS_ERR_INVAL, "lft: no switch %d", sw_id);
    rs_switch *sw = net->switches[sw_id];
    if (n > 0xFFFFu)
        return rs_net_fail(net, RS_ERR_INVAL, "lft: %u entries, at most 65535 (16-bit LIDs)", n);
    for (uint32_t d = 0; d < n; d++)
        if (ports[d] != RS_LFT_NONE && ports[d] >= sw->n_used)
            return rs_net_fail(net, RS_ERR_INVAL, "lft: switch %d DLID %u -> port %u outside 0..%u (connected ports)",
                               sw_id, d, ports[d], sw->n_used - 1);
    uint16_t *t = NULL;
    if (n) {
        t = malloc(n * sizeof(*t));
        if (!t)
            return rs_net_fail(net, RS_ERR_NOMEM, "out of memory");
        memcpy(t, ports, n * sizeof(*t));
    }
    free(sw->lft);
    sw->lft = t;
    sw->n_lft = n;
    return RS_OK;
}
