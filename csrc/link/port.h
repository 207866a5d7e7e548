/* A port: the sending end of one link direction, owned by a host NIC or a
 * switch.  It transmits one frame at a time; when idle it pulls the next frame
 * from its owner (rs_nic_next_frame / rs_switch_next_frame), so packets are
 * built or dequeued only when the wire can take them.
 *
 * The port is also where received PFC frames act (pause.c): `paused_mask`
 * lists the priorities the owner must not send now; control frames in the
 * owner's control queue of a paused priority wait too, PFC frames never do. */
#ifndef RDMASIM_NET_PORT_H
#define RDMASIM_NET_PORT_H

#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/fabric.h"
#include "rdmasim/packet.h"

struct rs_link;
struct rs_host;
struct rs_switch;

typedef struct rs_port {
    uint16_t owner_kind;      /* enum rs_node_kind */
    uint16_t index;           /* port number on its switch (0 for a host) */
    struct rs_host *host;     /* owning NIC (owner_kind RS_NODE_HOST) */
    struct rs_switch *sw;     /* owning switch (owner_kind RS_NODE_SWITCH) */
    struct rs_link *tx;       /* link direction this port sends on (NULL: unconnected) */
    int busy;                 /* serialising a frame until tx_done fires */
    int64_t busy_until;       /* end of the frame being serialised (a host port may send without tx_done) */
    uint8_t pulling;          /* inside the owner's next-frame call (re-entrant kicks are deferred) */
    uint8_t kick_again;
    rs_timer tx_done;
    uint16_t next_ip_id;
    /* control frames (ACK/NAK at a host, PFC at a switch) wait here; they go before data */
    rs_pkt *ctrl_head;
    rs_pkt *ctrl_tail;
    /* receive side of PFC (pause.c) */
    uint8_t paused_mask;
    int64_t pause_until_ps[RS_NPRIO];
    int64_t pause_start_ps[RS_NPRIO];
    rs_timer pause_end;       /* fires at the earliest pause_until of a paused priority */
    rs_pause_stats pause;
} rs_port;

/* The default DSCP -> priority table (switch default too): CNP's DSCP 48 -> 6, all else -> 3.
 * Host NICs use it to pick the PFC priority of what they send. */
static inline uint8_t rs_dscp_default_prio(uint8_t dscp) { return dscp == 48 ? 6 : 3; }

void rs_port_init(rs_port *port, int owner_kind, struct rs_host *host, struct rs_switch *sw, uint16_t index);

#endif
