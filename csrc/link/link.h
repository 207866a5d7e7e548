/* One direction of a full-duplex link: serialisation at the sender's rate,
 * then a fixed propagation delay.  Packets on the wire sit in a FIFO (they
 * arrive in the order sent), so a link needs one pending arrival event at a
 * time, not one per packet.  Impairments (i.i.d. loss, explicit drops) are
 * decided when a frame is put on the wire. */
#ifndef RDMASIM_NET_LINK_H
#define RDMASIM_NET_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/eventq.h"
#include "rdmasim/packet.h"
#include "rdmasim/rng.h"
#include "rdmasim/fabric.h"

struct rs_port;
struct rs_net;

/* A drop rule (rdmasim/fabric.h, rs_drop_spec): every field named in `fields` must match. */
typedef struct rs_drop_rule {
    uint32_t fields;        /* RS_DROPF_* bits */
    uint32_t skip;          /* matching frames still to let through before dropping */
    uint32_t remaining;     /* matching frames still to drop */
    uint32_t psn;
    uint32_t dest_qp;
    uint64_t nth;           /* index of the frame in this direction (0-based) */
    uint64_t opcodes[4];    /* RoCE BTH opcodes matched (bit set over 0..255) */
    uint8_t mark_trim_ok;   /* not a drop rule: marks RoCE frames trim_ok (rs_net_link_mark_trim_ok) */
} rs_drop_rule;

/* A loss probability that takes effect for frames put on the wire at or after t_ps. */
typedef struct rs_loss_change {
    int64_t t_ps;
    double loss_prob;
} rs_loss_change;

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
    /* ---- line 0: what every frame reads, on the wire and on arrival ---- */
    struct rs_port *to;
    int64_t rate_bps;
    int64_t delay_ps;
    rs_pkt *fifo_head;   /* frames in flight, oldest first */
    rs_pkt *fifo_tail;
    double loss_prob;
    uint32_t n_drops;
    uint32_t n_loss_changes;        /* scheduled loss changes not yet applied, ... */
    uint8_t down;        /* failed: frames put on it are dropped (counted in stats.dropped) */
    uint8_t capture;     /* frames put on this direction go to net->pcap (when open) */
    uint8_t cut;         /* a partitioned run: its ends run in different partitions (sim/par.c) */
    /* ---- line 1: the timer of the head's arrival, the counters of every frame ---- */
    rs_timer arrival;    /* fires when fifo_head reaches `to` */
    rs_link_stats stats; /* its last counter (dropped) on the next line */
    /* ---- the rest: loss models, drop rules, set-up ---- */
    rs_gilbert gilbert;  /* bursty loss: replaces loss_prob when enabled */
    rs_drop_rule *drops; /* small array, grown on the control path */
    rs_loss_change *loss_changes;   /* ... sorted by time (oldest first) */
    struct rs_port *from;
    int id;
    int pending_up;      /* state to apply when state_change fires */
    rs_rng rng;
    rs_timer state_change;
    /* a partitioned run (sim/par.c): the frames the sender of a cut link puts on it during a
     * window wait here (each with its own arrival time and key) and join the FIFO at the
     * window's end */
    rs_pkt *out_head;
    rs_pkt *out_tail;
} rs_link;

/* A frame reads line 0 and, with its arrival, line 1 (rs_link_new puts a link on a line of its own) */
_Static_assert(offsetof(rs_link, cut) + 1 <= 64, "rs_link: line 0 is what every frame reads");
_Static_assert(offsetof(rs_link, arrival) == 64 && offsetof(rs_link, stats.delivered) + 8 <= 128,
               "rs_link: line 1 is the arrival timer and the per-frame counters");

/* A partitioned run's window exchange (sim/par.c): the frames of a cut link's outbox join its
 * FIFO, the arrival armed for the first when nothing was ahead of it. */
void rs_link_take_outbox(struct rs_net *net, rs_link *l);
/* The same for a chain of frames taken off the outbox before (linked by next, in the order sent). */
void rs_link_take_frames(struct rs_net *net, rs_link *l, rs_pkt *pkt);

/* Picoseconds to serialise `wire_bytes` (frame + FCS + preamble + IFG) at rate_bps, rounded up. */
static inline int64_t rs_link_ser_ps(const rs_link *l, uint32_t wire_bytes)
{
    return ((int64_t)wire_bytes * 8 * 1000000000000LL + l->rate_bps - 1) / l->rate_bps;
}

#endif
