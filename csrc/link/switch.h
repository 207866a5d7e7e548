/* A switch: N ports, each with 8 priority egress FIFOs and a control queue
 * (PFC frames, sent first and never paused), a shared-buffer MMU (mmu.h), the
 * PFC ingress machines (pfc.h), ECN marking (ecn.h) and a forwarding table
 * by destination host with equal-cost next hops (route.c).
 *
 * Packet path: link arrival -> rs_switch_receive (classify DSCP -> priority,
 * route + ECMP hash, MMU admission or counted drop, ECN on enqueue, PFC XOFF
 * check, enqueue, kick egress) ... egress port idle -> rs_switch_next_frame
 * (control queue, then strict priority or WRR over unpaused priorities;
 * MMU release, ECN on dequeue, PFC XON check). */
#ifndef RDMASIM_NET_SWITCH_H
#define RDMASIM_NET_SWITCH_H

#include <stddef.h>
#include <stdint.h>

#include "link/mmu.h"
#include "link/pfc.h"
#include "link/port.h"
#include "rdmasim/fabric.h"
#include "rdmasim/rng.h"

struct rs_net;

/* One egress queue (port, priority): what a frame of that priority touches on enqueue and dequeue
 * (the queue, the watchdog's storm time, the queue's counters), in one cache line. */
typedef struct rs_swqueue {
    rs_pkt *head;
    rs_pkt *tail;
    int64_t wd_storm_until;     /* PFC watchdog: drop this queue's packets and ignore pause until then */
    uint64_t tx_pkts, tx_bytes; /* rs_swport_stats.q_tx_pkts, q_tx_bytes */
    uint64_t bytes_peak;        /* rs_swport_stats.q_bytes_peak */
    uint64_t ecn_marked;        /* rs_swport_stats.q_ecn_marked */
    uint64_t reserved;          /* (keeps an entry at one line) */
} rs_swqueue;

/* One ingress (port, priority): its PFC machine and occupancy peaks, in one cache line. */
typedef struct rs_swingress {
    rs_pfc_queue pfc;
    uint64_t in_bytes_peak;     /* rs_swport_stats.in_bytes_peak */
    uint64_t hdrm_bytes_peak;   /* rs_swport_stats.hdrm_bytes_peak */
} rs_swingress;

typedef struct rs_swport {
    rs_port port;
    /* ---- the port's own line: the scheduler's mask and the counters of every frame ---- */
    _Alignas(64) uint8_t q_mask; /* bit i: q[i].head holds a packet (the scheduler's first test) */
    uint8_t wrr_prio;           /* WRR: priority whose turn it is */
    uint8_t wrr_left;           /* WRR: packets left in that turn */
    uint8_t cc_victim_mask;     /* IB CC Victim_Mask: mark here also when starved of credits */
    uint64_t rx_pkts, rx_bytes; /* rs_swport_stats.rx_pkts, rx_bytes */
    uint64_t tx_pkts, tx_bytes; /* rs_swport_stats.tx_pkts, tx_bytes */
    uint64_t ecn_marked;        /* rs_swport_stats.ecn_marked */
    /* the egress queues and the ingress priorities, a line each: a frame reads its own only */
    _Alignas(64) rs_swqueue q[RS_NPRIO];
    rs_swingress in[RS_NPRIO];
    /* PFC watchdog (monitor.c) per egress priority */
    uint64_t wd_last_tx[RS_NPRIO];
    int64_t wd_stalled_since[RS_NPRIO]; /* -1: not stalled */
    /* the rarer counters; the fields kept above are left at 0 here (rs_swport_stats_of) */
    rs_swport_stats stats;
} rs_swport;
_Static_assert(offsetof(rs_swport, port) == 0, "rs_switch_port_empty casts a port to its rs_swport");
_Static_assert(offsetof(rs_swport, q_mask) % 64 == 0 && offsetof(rs_swport, ecn_marked) + 8 <= offsetof(rs_swport, q_mask) + 64,
               "rs_swport: the port's per-frame fields on one line (switch.c allocates ports on lines)");
_Static_assert(sizeof(rs_swqueue) == 64 && offsetof(rs_swport, q) % 64 == 0 && sizeof(rs_swingress) == 64 &&
                   offsetof(rs_swport, in) % 64 == 0,
               "rs_swport: each egress queue's and each ingress priority's fields on a line of their own");

/* The port's counters as rs_switch_port_stats reports them. */
void rs_swport_stats_of(const rs_swport *sp, rs_swport_stats *out);

#define RS_LFT_NONE 0xFFFFu /* an LFT entry without a port: no route */

typedef struct rs_route_pin {
    uint32_t dst;
    uint16_t n;
    uint16_t *ports;
} rs_route_pin;

typedef struct rs_switch {
    int id;
    struct rs_net *net;
    rs_switch_cfg cfg;
    uint32_t n_used;           /* ports connected so far (0..cfg.n_ports) */
    rs_swport *ports;
    rs_mmu mmu;
    rs_rng rng;                /* ECN draws: stream (2 << 32) | id */
    uint64_t hash_seed;
    uint64_t spray_ctr;        /* packets sprayed so far: the per-packet entropy */
    /* routes (route.c): destination host d's row starts at nh[nh_row[d]]: its count of next
     * hops, then the hops.  The hosts behind one leaf (the switch their link reaches) share a row,
     * so the rows are one per leaf, one per host of this switch's own and one per static route
     * (row 0: no next hop), not one per host: n_dst x 4 bytes plus leaves x ports */
    uint32_t n_dst;
    uint32_t *nh_row;
    uint16_t *nh;
    size_t nh_len;             /* uint16 entries of nh in use */
    size_t nh_cap;
    rs_route_pin *pins;        /* static routes, applied over the computed table */
    uint32_t n_pins;
    /* group routing (cfg.routing != RS_ROUTE_SHORTEST): next hops towards group g are
     * gnh[g * n_ports .. + gnh_cnt[g]) (count 0: shortest paths; always 0 for the own group) */
    uint16_t *gnh;
    uint16_t *gnh_cnt;
    uint8_t *gport;            /* per port: 1 = a global link (to another group) */
    /* linear forwarding table (lft.c; NULL: the computed routes): egress port by DLID */
    uint16_t *lft;
    uint32_t n_lft;
} rs_switch;

/* The next hops of switch sw towards host d by its computed routes (*n = 0: none). */
static inline const uint16_t *rs_switch_hops(const rs_switch *sw, uint32_t d, uint32_t *n)
{
    if (!sw->nh || d >= sw->n_dst) {
        *n = 0;
        return NULL;
    }
    const uint16_t *row = sw->nh + sw->nh_row[d];
    *n = row[0];
    return row + 1;
}

rs_switch *rs_switch_new(struct rs_net *net, int id, const rs_switch_cfg *cfg, int *err);
void rs_switch_free(struct rs_net *net, rs_switch *sw);
/* A frame (not PFC) arrived on `port`; takes ownership. */
void rs_switch_receive(struct rs_net *net, rs_switch *sw, rs_port *port, rs_pkt *pkt);
/* Nothing waits on switch port `port`: no control frame and no packet in any egress queue. */
static inline int rs_switch_port_empty(const rs_port *port)
{
    const rs_swport *sp = (const rs_swport *)port; /* the port is the first member */
    return !port->ctrl_head && !sp->q_mask;
}
/* The egress port is idle: the next frame to send, or NULL. */
rs_pkt *rs_switch_next_frame(struct rs_net *net, rs_switch *sw, rs_port *port);
/* Drop every packet queued at egress (port, prio), counting `reason` on each packet's ingress port. */
void rs_switch_flush_queue(struct rs_net *net, rs_switch *sw, uint32_t port, uint32_t prio, int reason);
/* One of n >= 1 next hops for pkt by the switch's path selection (ECMP / spray / adaptive). */
uint32_t rs_switch_pick_hop(rs_switch *sw, const rs_pkt *pkt, const uint16_t *hops, uint32_t n, uint32_t prio);
/* grouproute.c: the egress port under group routing, or -1 (no route); may set pkt->via_group. */
int rs_group_route(const struct rs_net *net, rs_switch *sw, rs_pkt *pkt, uint32_t prio);
/* Hop classes (cfg.hop_classes): the priority of a packet of class `base` that has crossed
 * `global_hops` global links (capped at 7) ... */
static inline uint32_t rs_group_class(uint32_t base, uint32_t global_hops)
{
    return base + global_hops < 7u ? base + global_hops : 7u;
}
/* ... and the egress priority when it leaves on port `out` (counts the global link it takes). */
uint32_t rs_group_egress_class(const rs_switch *sw, rs_pkt *pkt, uint32_t out, uint32_t base);
/* ECMP choice among n next hops for the packet's 5-tuple. */
uint32_t rs_switch_ecmp_hash(const rs_switch *sw, uint32_t sip, uint32_t dip, uint16_t sport);

/* route.c: recompute every switch's table over links that are up. */
int rs_routes_compute(struct rs_net *net);

#endif
