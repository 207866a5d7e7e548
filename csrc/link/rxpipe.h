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
#include "rdmasim/fabric.h"
#include "rdmasim/packet.h"

struct rs_net;
struct rs_port;

/* A host port's pipeline (rs_port.rx): drained frames go up through the port's client. */
typedef struct rs_rxpipe {
    struct rs_port *port;
    uint8_t mac[6];        /* source address of the PFC frames it sends */
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

void rs_rxpipe_receive(struct rs_net *net, rs_rxpipe *rx, rs_pkt *pkt);
void rs_rxpipe_drain(struct rs_net *net, rs_rxpipe *rx);
void rs_rxpipe_refresh(struct rs_net *net, rs_rxpipe *rx);
void rs_rxpipe_free(struct rs_net *net, rs_rxpipe *rx);
/* Control path: turn the host port's pipeline on (with these settings) or off; `mac` is the
 * host's, the source of its PFC frames.  Errors name the host by the port's node index. */
int rs_rxpipe_set(struct rs_net *net, struct rs_port *port, const uint8_t mac[6], int enable, int64_t rate_bps,
                  uint64_t buf_bytes, uint64_t xoff_bytes, uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta);
void rs_rxpipe_stats(const struct rs_port *port, rs_host_rx_stats *out);

#endif
