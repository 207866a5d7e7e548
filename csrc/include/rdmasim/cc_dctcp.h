/* DCTCP-style ECN rate and window control for RDMA (csrc/cc/dctcp.c): its parameters and its
 * per-QP state.  Plain C (cffi-clean). */
#ifndef RDMASIM_CC_DCTCP_H
#define RDMASIM_CC_DCTCP_H

#include <stdint.h>

typedef struct rs_dctcp_params {
    double g;                /* alpha gain (1/16) */
    double initial_alpha;    /* alpha before the first update (1) */
    double ai_bps;           /* additive increase per window of data without a cut (one MTU per RTT) */
    double min_rate_bps;     /* a cut never goes below it */
    double max_rate_bps;     /* 0 = line rate */
    uint64_t window_bytes;   /* window at the maximum rate (a BDP); 0 = no window */
    int var_win;             /* 1: the window follows the rate: window_bytes x rate / max rate */
    int pace;                /* 1: pace request packets at the rate; 0: the window alone limits */
    uint32_t ack_every;      /* ask for an ACK on every n-th request packet (1: each; DCTCP's delayed
                                ACK m); a filling window always asks */
} rs_dctcp_params;

typedef struct rs_dctcp_state {
    double rate_bps;         /* current rate */
    double max_bps;          /* the cap: max_rate_bps or the line rate */
    double alpha;            /* estimated fraction of CE-marked bytes */
    uint64_t acked_pos;      /* request payload bytes acknowledged so far (this QP's ACK stream) */
    uint64_t batch_end;      /* the byte position that ends the current alpha window (0: none yet) */
    uint64_t cwr_end;        /* in CWR (no further cut) until the ACKs pass this position */
    uint64_t batch_acked;    /* bytes acknowledged in the current alpha window */
    uint64_t batch_ce;       /* of which CE-marked */
    int in_cwr;
    int started;             /* the first ACK opened the first alpha window */
    uint64_t acks;           /* statistics */
    uint64_t ce_acks;
    uint64_t cuts;
    uint64_t increases;
    uint64_t alpha_updates;
    int64_t rtt_last_ps;     /* RTT samples of the ACKs (statistics only: DCTCP does not use them) */
    int64_t rtt_min_ps;      /* 0 until the first sample */
    uint64_t rtt_samples;
    uint32_t unasked;        /* request packets sent without the A bit since the last that had it */
} rs_dctcp_state;

void rs_dctcp_init(rs_dctcp_state *s, const rs_dctcp_params *p, double line_bps);
/* One ACK: acked (newly acknowledged bytes), inflight (bytes still outstanding after it), ce_bytes
 * (CE-marked bytes it covers), ce_echo (its PSN's packet was CE-marked). */
void rs_dctcp_on_ack(rs_dctcp_state *s, const rs_dctcp_params *p, uint64_t acked, uint64_t inflight,
                     uint64_t ce_bytes, int ce_echo);
/* Whether the next request packet (payload bytes, with inflight bytes out before it) asks for an
 * ACK: every ack_every-th, and any that fills the window. */
int rs_dctcp_ack_request(rs_dctcp_state *s, const rs_dctcp_params *p, uint32_t payload, uint64_t inflight);
/* The window now (bytes; 0 = none). */
uint64_t rs_dctcp_window(const rs_dctcp_state *s, const rs_dctcp_params *p);

#endif
