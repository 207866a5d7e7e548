/* UET load balancing by entropy value (EV): which entropy the next data packet of a PDC carries.
 *
 * The switches hash the entropy into their ECMP choice, so a sender that changes entropy per packet
 * sprays one connection over the equal-cost paths.  Two policies:
 *   RS_UET_LB_OBLIVIOUS  a fresh uniformly random entropy per packet (oblivious packet spraying);
 *   RS_UET_LB_REPS       Recycled Entropy Packet Spraying (Bonato et al., "REPS: Recycled Entropy
 *                        Packet Spraying for Adaptive Load Balancing and Failure Mitigation", arXiv
 *                        2407.21625): entropies whose ACK came back without ECN are kept in a small
 *                        circular buffer and reused; when none is waiting a random one explores;
 *                        on a timeout (a failed path) freezing mode stops exploring and cycles
 *                        through the entropies last known good.
 * The caller (the PDS) echoes each ACK's entropy and ECN bit (on_ack), NACKs/trims (on_loss) and
 * retransmission timeouts (on_timeout).  Fixed-size state, no allocation, no globals; the random
 * draws come from an rs_rng seeded by the caller, so a run is a function of its seed.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_UET_LB_H
#define RDMASIM_UET_LB_H

#include <stdint.h>

#include "rdmasim/rng.h"

enum rs_uet_lb_kind {
    RS_UET_LB_OBLIVIOUS = 0,
    RS_UET_LB_REPS = 1,
};

#define RS_UET_LB_BUF_MAX 64 /* the largest REPS buffer (htsim's default is 8) */

typedef struct rs_uet_lb_cfg {
    int kind;                /* enum rs_uet_lb_kind */
    uint32_t ev_count;       /* entropy values 0 .. ev_count-1 are used (1 .. 65536; htsim: 256) */
    uint32_t buffer_size;    /* REPS: recycled entropies kept (1 .. RS_UET_LB_BUF_MAX; htsim: 8) */
    uint32_t reuse;          /* REPS: times one good ACK's entropy may be sent again (>= 1; htsim's
                                usable lifetime, 1; more suits coalesced ACKs) */
    int freezing;            /* REPS: a timeout enters freezing mode (htsim: on) */
    uint32_t freeze_packets; /* REPS: data packets sent in freezing mode before it ends (>= 1) */
    uint32_t explore_after_freeze; /* REPS: random entropies sent after freezing ends (htsim: 16) */
} rs_uet_lb_cfg;

/* Defaults of a kind (the sources are in lb.c). */
void rs_uet_lb_cfg_default(rs_uet_lb_cfg *cfg, int kind);
/* 0 when cfg is valid, else the index of the first bad field in the order of the struct (1-based). */
int rs_uet_lb_cfg_check(const rs_uet_lb_cfg *cfg);

typedef struct rs_uet_lb_stats {
    uint64_t sent;            /* entropies handed out */
    uint64_t recycled;        /* of which taken from the REPS buffer */
    uint64_t explored;        /* of which random (oblivious: all) */
    uint64_t acks_good;       /* ACKs echoing an entropy without ECN */
    uint64_t acks_marked;     /* ACKs echoing an entropy with ECN */
    uint64_t losses;          /* NACKs/trims */
    uint64_t timeouts;
    uint64_t freezes;         /* times freezing mode was entered */
} rs_uet_lb_stats;

typedef struct rs_uet_lb {
    rs_uet_lb_cfg cfg;
    rs_rng rng;
    uint16_t buf[RS_UET_LB_BUF_MAX];    /* REPS circular buffer of entropies */
    uint8_t uses[RS_UET_LB_BUF_MAX];    /* sends left for each slot (0 = not fresh) */
    uint32_t head;           /* next slot to write */
    uint32_t filled;         /* slots ever written (<= buffer_size) */
    uint32_t fresh;          /* slots with uses left */
    uint32_t frozen_pos;     /* freezing mode: next slot to cycle through */
    int frozen;              /* in freezing mode */
    uint32_t frozen_left;    /* packets left to send in freezing mode */
    uint32_t explore_left;   /* random entropies still to send after freezing */
    rs_uet_lb_stats stats;
} rs_uet_lb;

/* Reset `lb` with the configuration (copied) and its random stream seeded by `seed`. */
void rs_uet_lb_init(rs_uet_lb *lb, const rs_uet_lb_cfg *cfg, uint64_t seed);
/* The entropy for the next data packet (retransmissions included). */
uint16_t rs_uet_lb_next(rs_uet_lb *lb);
/* An ACK echoed the entropy of a packet it acknowledges; ecn nonzero: that packet was CE-marked. */
void rs_uet_lb_on_ack(rs_uet_lb *lb, uint16_t entropy, int ecn);
/* A NACK or a trimmed packet's notice for a packet sent with `entropy`. */
void rs_uet_lb_on_loss(rs_uet_lb *lb, uint16_t entropy);
/* A retransmission timeout (a path may have failed): REPS enters freezing mode (cfg.freezing). */
void rs_uet_lb_on_timeout(rs_uet_lb *lb);

#endif
