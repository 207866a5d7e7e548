/* VL arbitration at a credit port's transmitter, after the IBA's VLArbitration tables (vol. 1,
 * section 7.6): a high-priority and a low-priority table, each a weighted round robin over VLs
 * with a weight in 64-byte units per turn, and LimitOfHighPriority, the bytes (x 4096) the high
 * table may send before the low table gets a turn (255: unlimited, 0: one packet).
 *
 * Simplified to one entry per VL per table (the IBA allows up to 64 entries in any order).  A
 * VL's turn lasts while its remaining weight is above zero: a packet may start with any weight
 * left, so the last one of a turn may overshoot (deficit-style).  A VL whose turn comes while it
 * is not ready (empty, or stalled for credits) loses the turn.  When the high table is over its
 * limit but the low table has nothing ready, the high table goes on (work conserving). */
#ifndef RDMASIM_LINK_VLARB_H
#define RDMASIM_LINK_VLARB_H

#include <stdint.h>

#include "rdmasim/fabric.h"

enum { RS_VLARB_HIGH = 0, RS_VLARB_LOW = 1 };

typedef struct rs_vlarb {
    uint8_t on;
    uint8_t weight[2][RS_NPRIO];  /* per table and VL; 0: not in that table */
    uint8_t high_limit;           /* LimitOfHighPriority */
    uint8_t cur[2];               /* the VL whose turn it is, per table */
    uint8_t from;                 /* the table of the last pick */
    int32_t left[2];              /* bytes left in the current turn */
    uint32_t high_sent;           /* bytes the high table sent since the low table's last turn */
} rs_vlarb;

/* The VL to serve among `ready` (bit per VL), or -1. */
int rs_vlarb_pick(rs_vlarb *a, uint8_t ready);
/* The picked packet of `bytes` went out on VL vl. */
void rs_vlarb_charge(rs_vlarb *a, uint32_t vl, uint32_t bytes);

#endif
