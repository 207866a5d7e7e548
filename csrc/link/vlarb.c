/* VL arbitration tables (see vlarb.h). */
#include "link/vlarb.h"

/* The next VL of table t among `ready`: the current one while its turn lasts, else the next
 * one in the table that is ready, which starts a new turn. */
static int scan(rs_vlarb *a, int t, uint8_t ready)
{
    const uint8_t *w = a->weight[t];
    uint32_t c = a->cur[t];
    if (a->left[t] > 0 && w[c] && (ready >> c & 1u))
        return (int)c;
    for (uint32_t k = 1; k <= RS_NPRIO; k++) {
        uint32_t vl = (c + k) & 7u;
        if (w[vl] && (ready >> vl & 1u)) {
            a->cur[t] = (uint8_t)vl;
            a->left[t] = (int32_t)w[vl] * 64;
            return (int)vl;
        }
    }
    return -1;
}

int rs_vlarb_pick(rs_vlarb *a, uint8_t ready)
{
    uint32_t limit = a->high_limit ? (uint32_t)a->high_limit * 4096u : 1u;
    int vl = -1;
    if (a->high_limit == 255 || a->high_sent < limit)
        vl = scan(a, RS_VLARB_HIGH, ready);
    if (vl >= 0) {
        a->from = RS_VLARB_HIGH;
        return vl;
    }
    vl = scan(a, RS_VLARB_LOW, ready);
    if (vl >= 0) {
        a->from = RS_VLARB_LOW;
        return vl;
    }
    a->high_sent = 0; /* nothing low is waiting: the high table may go on */
    vl = scan(a, RS_VLARB_HIGH, ready);
    a->from = RS_VLARB_HIGH;
    return vl;
}

void rs_vlarb_charge(rs_vlarb *a, uint32_t vl, uint32_t bytes)
{
    (void)vl;
    a->left[a->from] -= (int32_t)bytes;
    if (a->from == RS_VLARB_HIGH)
        a->high_sent += bytes;
    else
        a->high_sent = 0;
}
