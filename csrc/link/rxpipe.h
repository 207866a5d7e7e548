/* A slow (or stuck) receiving NIC: frames that reach the host wait in a
 * bounded receive buffer drained at a finite rate (0 = never: a stuck
 * receiver).  Above `xoff_bytes` the NIC sends PFC XOFF upstream for the
 * configured priorities (refreshed every half pause time), at or below
 * `xon_bytes` an XON.  Frames that do not fit are dropped and counted.
 * Hosts without one handle frames the instant they arrive (the default).
 *
 *   RUNNING --enqueue, bytes >= xoff--> PAUSING (XOFF sent, refresh armed)
 *   PAUSING --refresh----------------> PAUSING (XOFF again)
 *   PAUSING --drain, bytes <= xon----> RUNNING (XON sent) */
#ifndef RDMASIM_NET_RXPIPE_H
#define RDMASIM_NET_RXPIPE_H

#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/packet.h"

struct rs_sim;
struct rs_host;

typedef struct rs_rxpipe {
    struct rs_host *host;
    int64_t rate_bps;      /* drain rate; 0 = stuck */
    uint64_t buf_bytes, xoff_bytes, xon_bytes;
    uint8_t prio_mask;     /* priorities paused by XOFF */
    uint8_t pausing;
    uint16_t quanta;
    rs_pkt *head, *tail;
    uint64_t bytes;
    rs_timer drain;
    rs_timer refresh;
    /* counters */
    uint64_t pfc_xoff_sent, pfc_xon_sent, dropped, peak_bytes;
} rs_rxpipe;

void rs_rxpipe_receive(struct rs_sim *sim, rs_rxpipe *rx, rs_pkt *pkt);
void rs_rxpipe_drain(struct rs_sim *sim, rs_rxpipe *rx);
void rs_rxpipe_refresh(struct rs_sim *sim, rs_rxpipe *rx);
void rs_rxpipe_free(struct rs_sim *sim, rs_rxpipe *rx);

#endif
