/* A port: the sending end of one link direction.  It transmits one frame at
 * a time; when idle it pulls the next frame from its owner (a host NIC now, a
 * switch egress later) so packets are built only when the wire can take them. */
#ifndef RDMASIM_NET_PORT_H
#define RDMASIM_NET_PORT_H

#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/packet.h"

struct rs_link;
struct rs_host;

typedef struct rs_port {
    struct rs_host *host;   /* owning NIC */
    struct rs_link *tx;     /* link direction this port sends on (NULL: unconnected) */
    int busy;               /* serialising a frame until tx_done fires */
    rs_timer tx_done;
    uint16_t next_ip_id;
    /* control frames (ACK/NAK) wait here; they go before data */
    rs_pkt *ctrl_head;
    rs_pkt *ctrl_tail;
} rs_port;

#endif
