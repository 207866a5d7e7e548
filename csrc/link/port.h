/* A port: the sending end of one link direction, owned by a host NIC or a
 * switch.  It transmits one frame at a time; when idle it pulls the next frame
 * from its owner (a host port through its rs_port_client, a switch port from
 * rs_switch_next_frame), so packets are built or dequeued only when the wire
 * can take them.
 *
 * The port is also where received PFC frames act (pause.c): `paused_mask`
 * lists the priorities the owner must not send now; control frames in the
 * owner's control queue of a paused priority wait too, PFC frames never do. */
#ifndef RDMASIM_NET_PORT_H
#define RDMASIM_NET_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/fabric.h"
#include "rdmasim/packet.h"

struct rs_link;
struct rs_switch;
struct rs_rxpipe;
struct rs_credit_port;

/* The link-layer seam: what a host port calls in the transport above it.  The transport fills
 * one in when it creates a host (rs_port_init_host) and passes its own object as `ctx`; the port
 * never sees what `ctx` is.  Going down, the transport calls the port (rs_port_kick,
 * rs_port_send_ctrl).  Everything between (framing on the wire, PFC pause and the slow-receiver
 * pipeline, ECN marking at switches, the link itself) stays on this side, so another link layer
 * can sit behind the same calls.  Every function is called in the hot loop: none allocates. */
typedef struct rs_port_client {
    void *ctx;
    /* The wire is free: the next frame to send (control first), or NULL when there is none now. */
    rs_pkt *(*next_frame)(void *ctx);
    /* After a frame that ends at free_ps: 1 if nothing can be sent before the client's own timer
     * (which it has armed) kicks the port again, so the port needs no transmit-done event. */
    int (*idle_after)(void *ctx, int64_t free_ps);
    /* A frame addressed to the port's own node (RoCE loopback): never put on the link; the client
     * takes it back after ser_ps, the time it occupies the transmit pipeline. */
    void (*loopback)(void *ctx, rs_pkt *pkt, int64_t ser_ps);
    /* A frame for this port was put on the link and arrives a link delay from now (a hint).
     * Optional: NULL while the client wants no hint (the link then makes no call). */
    void (*frame_coming)(void *ctx, const rs_pkt *pkt);
    /* A frame arrived (after the receive pipeline, if any).  Takes ownership of pkt. */
    void (*receive)(void *ctx, rs_pkt *pkt);
} rs_port_client;

/* A host port's own addresses and its DSCP -> PFC priority table (link/frame.h uses them). */
typedef struct rs_port_addr {
    uint8_t mac[6];
    uint32_t ip;
    uint8_t dscp_to_prio[64]; /* PFC priority of what the host sends, by DSCP (default: rs_dscp_default_prio) */
    uint16_t lid;             /* IB local identifier: host index + 1, as a subnet manager assigns (1-based) */
    uint8_t gid[16];          /* IB port GID: link-local prefix fe80::/64 and the port GUID (from the MAC) */
} rs_port_addr;

typedef struct rs_port {
    /* ---- line 0: what the transmit loop reads for every frame ---- */
    uint16_t owner_kind;      /* enum rs_node_kind: the tag that picks the owner's calls */
    uint16_t index;           /* port number on its switch (0 for a host) */
    int32_t node;             /* the owner's node index (host or switch index) */
    struct rs_link *tx;       /* link direction this port sends on (NULL: unconnected) */
    int busy;                 /* serialising a frame until tx_done fires */
    uint8_t pulling;          /* inside the owner's next-frame call (re-entrant kicks are deferred) */
    uint8_t kick_again;
    uint8_t tx_reserved;      /* switch port: busy_until's tx_done was not armed; its key is (busy_until, tx_seq) */
    /* receive side of PFC (pause.c): the priorities the owner must not send now */
    uint8_t paused_mask;
    int64_t busy_until;       /* end of the frame being serialised (a host port may send without tx_done) */
    uint64_t tx_seq;          /* the event sequence number reserved for that tx_done */
    /* control frames (ACK/NAK at a host, PFC at a switch) wait here; they go before data */
    rs_pkt *ctrl_head;
    struct rs_switch *sw;     /* owning switch (owner_kind RS_NODE_SWITCH) */
    /* InfiniBand credit mode (credit.c; NULL: PFC).  Then paused_mask lists what is stalled for
     * lack of credits, and no pause frame is sent or obeyed. */
    struct rs_credit_port *cr;
    /* ---- line 1: the transmit-done timer ---- */
    rs_timer tx_done;
    rs_pkt *ctrl_tail;
    struct rs_rxpipe *rx;     /* host port: slow-receiver pipeline (rxpipe.c); NULL: frames go up on arrival */
    /* PFC response time: received PFC frames wait (pfc_wait_head) until they act */
    int64_t pfc_response_ps;
    uint16_t next_ip_id;
    /* ---- line 2: a host port's transport (owner_kind RS_NODE_HOST), read for every frame ---- */
    rs_port_client client;
    /* ---- the rest: PFC pause state, set-up ---- */
    int64_t pause_until_ps[RS_NPRIO];
    int64_t pause_start_ps[RS_NPRIO];
    rs_timer pause_end;       /* fires at the earliest pause_until of a paused priority */
    /* received PFC frames waiting for the response time (t_arrive_ps = when each acts, in order) */
    rs_pkt *pfc_wait_head;
    rs_pkt *pfc_wait_tail;
    rs_timer pfc_respond;     /* fires when the first waiting frame acts */
    rs_pause_stats pause;
    struct rs_rxpipe *rx_off; /* a disabled pipeline, kept for reuse: its timers may have heap entries */
    rs_port_addr addr;        /* a host port's addresses (rs_port_init_host) */
} rs_port;

/* A frame reads line 0, its port's transmit-done line 1 and a host port's client line 2 (a switch
 * allocates its ports on 64-byte lines: switch.c; a host port's lines are as its owner places it) */
_Static_assert(offsetof(rs_port, cr) + sizeof(void *) <= 64, "rs_port: line 0 is what every frame reads");
_Static_assert(offsetof(rs_port, tx_done) == 64 && offsetof(rs_port, next_ip_id) + 2 <= 128,
               "rs_port: line 1 is the transmit-done timer");
_Static_assert(offsetof(rs_port, client) == 128 && sizeof(rs_port_client) <= 64,
               "rs_port: line 2 is a host port's client");

/* The default DSCP -> priority table (switch default too): CNP's DSCP 48 -> 6, all else -> 3.
 * Host NICs use it to pick the PFC priority of what they send. */
static inline uint8_t rs_dscp_default_prio(uint8_t dscp) { return dscp == 48 ? 6 : 3; }

/* A host port, driven by `client`; node: the host index.  Its addresses follow from the index:
 * locally administered MAC 02:00:00:00:hh:ll and IPv4 10.0.hh.ll, from the index + 1. */
void rs_port_init_host(rs_port *port, int32_t node, const rs_port_client *client);
/* Port `index` of switch `sw` (switch index `node`). */
void rs_port_init_switch(rs_port *port, int32_t node, struct rs_switch *sw, uint16_t index);

#endif
