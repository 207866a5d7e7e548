/* One direction of a full-duplex link: serialisation at the sender's rate,
 * then a fixed propagation delay.  Packets on the wire sit in a FIFO (they
 * arrive in the order sent), so a link needs one pending arrival event at a
 * time, not one per packet.  Impairments (i.i.d. loss, explicit drops) are
 * decided when a frame is put on the wire. */
#ifndef RDMASIM_NET_LINK_H
#define RDMASIM_NET_LINK_H

#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/packet.h"
#include "rdmasim/rng.h"
#include "rdmasim/sim.h"

struct rs_port;

typedef struct rs_drop_rule {
    uint32_t match;     /* enum rs_drop_match */
    uint32_t remaining; /* frames still to drop */
    uint64_t value;     /* frame index or PSN */
} rs_drop_rule;

/* Gilbert-Elliott loss: a two-state Markov chain stepped once per frame; each state has its
 * own loss probability (bursts of loss in the bad state). */
typedef struct rs_gilbert {
    int enabled;
    int bad;             /* current state */
    double p_good_bad;   /* per-frame transition probabilities */
    double p_bad_good;
    double loss_good;
    double loss_bad;
} rs_gilbert;

typedef struct rs_link {
    int id;
    struct rs_port *from;
    struct rs_port *to;
    int64_t rate_bps;
    int64_t delay_ps;
    double loss_prob;
    rs_gilbert gilbert;  /* bursty loss: replaces loss_prob when enabled */
    rs_rng rng;
    rs_drop_rule *drops; /* small array, grown on the control path */
    uint32_t n_drops;
    rs_pkt *fifo_head;   /* frames in flight, oldest first */
    rs_pkt *fifo_tail;
    rs_timer arrival;    /* fires when fifo_head reaches `to` */
    int down;            /* failed: frames put on it are dropped (counted in stats.dropped) */
    int pending_up;      /* state to apply when state_change fires */
    rs_timer state_change;
    rs_link_stats stats;
} rs_link;

/* Picoseconds to serialise `wire_bytes` (frame + FCS + preamble + IFG) at rate_bps, rounded up. */
static inline int64_t rs_link_ser_ps(const rs_link *l, uint32_t wire_bytes)
{
    return ((int64_t)wire_bytes * 8 * 1000000000000LL + l->rate_bps - 1) / l->rate_bps;
}

#endif
