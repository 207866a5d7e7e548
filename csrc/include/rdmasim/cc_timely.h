/* TIMELY RTT-gradient rate control (csrc/cc/timely.c): its parameters and its per-QP state.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_CC_TIMELY_H
#define RDMASIM_CC_TIMELY_H

#include <stdint.h>

typedef struct rs_timely_params {
    double alpha;            /* EWMA weight of a new RTT difference (0.875) */
    double beta;             /* multiplicative decrease factor (0.8) */
    int64_t t_low_ps;        /* below it: additive increase whatever the gradient (50 us) */
    int64_t t_high_ps;       /* above it: R (1 - beta (1 - T_high / rtt)) (500 us) */
    int64_t min_rtt_ps;      /* normalises the gradient (20 us) */
    double ai_bps;           /* additive step delta (10 Mb/s) */
    uint32_t hai_after;      /* HAI after this many consecutive gradient <= 0 updates (5) */
    double hai_factor;       /* HAI step = hai_factor x delta (5) */
    double min_rate_bps;     /* a decrease never goes below it */
    double max_rate_bps;     /* 0 = line rate */
    double initial_rate_bps; /* 0 = the maximum rate */
    uint64_t segment_bytes;  /* one update per this many acknowledged bytes; 0: one per window of data */
} rs_timely_params;

typedef struct rs_timely_state {
    double rate_bps;         /* current rate */
    double max_bps;          /* the cap: max_rate_bps or the line rate */
    double rtt_diff_ps;      /* EWMA of RTT differences between updates */
    double gradient;         /* the last normalised gradient rtt_diff / min_rtt */
    int64_t prev_rtt_ps;     /* the RTT of the last update (0 = none yet) */
    uint64_t acked_pos;      /* request payload bytes acknowledged so far */
    uint64_t next_update_pos; /* the next update waits for the ACKs to reach this position */
    uint32_t neg_count;      /* consecutive gradient <= 0 updates (HAI after hai_after) */
    int started;             /* the first sample opened the first segment */
    int want_sample;         /* segment 0: the next packet asks for an ACK (one per update) */
    uint64_t sent_bytes;     /* request payload bytes sent (retransmissions included) */
    uint64_t next_ask;       /* segment > 0: the packet that takes sent_bytes here asks for an ACK */
    uint64_t updates;        /* statistics */
    uint64_t low_increases;  /* rtt < T_low */
    uint64_t high_decreases; /* rtt > T_high */
    uint64_t gradient_increases;
    uint64_t hai_increases;  /* of which at the HAI step */
    uint64_t gradient_decreases;
    int64_t rtt_last_ps;     /* every RTT sample (statistics) */
    int64_t rtt_min_ps;      /* 0 until the first sample */
    uint64_t rtt_samples;
} rs_timely_state;

void rs_timely_init(rs_timely_state *s, const rs_timely_params *p, double line_bps);
/* One ACK: acked (newly acknowledged bytes), inflight (bytes still outstanding after it), rtt_ps
 * (its sample, -1 = none). */
/* A request packet of `payload` bytes leaves: nonzero = it asks for an ACK (the one ending a
 * segment, or with segment 0 the first after an update), so the NIC sends one ACK per update
 * instead of one per packet. */
int rs_timely_ack_request(rs_timely_state *s, const rs_timely_params *p, uint32_t payload);
void rs_timely_on_ack(rs_timely_state *s, const rs_timely_params *p, uint64_t acked, uint64_t inflight,
                      int64_t rtt_ps);

#endif
