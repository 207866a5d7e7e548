/* Packet pool: fixed-size rs_pkt slots and, separately, RS_MAX_PAYLOAD-byte
 * payload buffers (only packets that carry real bytes take one), each a slab
 * (rdmasim/slab.h): a steady run allocates nothing, memory follows the peak of
 * packets in flight. */
#ifndef RDMASIM_POOL_H
#define RDMASIM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/packet.h"
#include "rdmasim/slab.h"

typedef struct rs_pool {
    rs_slab pkts;          /* rs_pkt slots, 64-byte aligned */
    rs_slab payloads;      /* RS_MAX_PAYLOAD-byte buffers */
    size_t pkts_total;     /* slots created */
    size_t pkts_in_use;
    size_t pkts_peak;
    size_t payloads_total;
    size_t payloads_in_use;
    rs_slab ints;          /* rs_int_stack blocks (rdmasim/cc.h) for packets that carry INT */
    size_t ints_in_use;    /* 0: no packet carries INT (switches skip the INT test) */
} rs_pool;

void rs_pool_init(rs_pool *p);
void rs_pool_free(rs_pool *p);
/* When no packet, payload buffer or INT stack is in use (a finished run), give every slot back
 * to the system: 1, else 0 and nothing changes.  The pool grows again as packets are taken. */
int rs_pool_trim(rs_pool *p);

/* A zeroed packet, or NULL on out of memory. */
rs_pkt *rs_pkt_alloc(rs_pool *p);
/* Attach a payload buffer (RS_MAX_PAYLOAD bytes). Returns 0 or -1 on out of memory. */
int rs_pkt_attach_payload(rs_pool *p, rs_pkt *pkt);
/* Attach an empty INT stack (pkt->intel, no hops). Returns 0 or -1 on out of memory. */
int rs_pkt_attach_int(rs_pool *p, rs_pkt *pkt);
/* Return an INT stack taken off a packet. */
void rs_pool_put_int(rs_pool *p, rs_int_stack *st);
/* Return the packet (and its payload buffer and INT stack, if any) to the pool. */
void rs_pkt_release(rs_pool *p, rs_pkt *pkt);

#endif
