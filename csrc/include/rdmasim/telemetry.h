/* In-band network telemetry (INT) records, as HPCC's switches write them: one per switch egress
 * a packet passes (link/switch.c), carried in the packet as simulator metadata (rdmasim/packet.h)
 * and echoed back to the sender in the ACK (docs/cc-hpcc.md).  Plain C (cffi-clean). */
#ifndef RDMASIM_TELEMETRY_H
#define RDMASIM_TELEMETRY_H

#include <stdint.h>

#define RS_INT_MAX_HOPS 5 /* records kept; a longer path records its first RS_INT_MAX_HOPS switches */
typedef struct rs_int_hop {
    int64_t ts_ps;       /* when the hop's egress sent the packet */
    uint64_t tx_bytes;   /* the egress port's transmitted bytes so far, this packet included */
    uint32_t qlen_bytes; /* its queue (the packet's priority) when the packet left */
    uint64_t rate_bps;   /* its line rate */
} rs_int_hop;
typedef struct rs_int_stack {
    uint8_t n_hops;
    rs_int_hop hop[RS_INT_MAX_HOPS];
} rs_int_stack;

#endif
