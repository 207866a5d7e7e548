/* HPCC in-band-telemetry window control (csrc/cc/hpcc.c): its parameters and its per-QP state.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_CC_HPCC_H
#define RDMASIM_CC_HPCC_H

#include <stdint.h>

#include "rdmasim/telemetry.h"

typedef struct rs_hpcc_params {
    double eta;              /* target utilisation (0.95, ns-3 TargetUtil) */
    uint32_t max_stage;      /* additive-only updates before a multiplicative one (5, ns-3 MiThresh) */
    int fast_react;          /* react to every ACK between reference updates (1, ns-3 FastReact) */
    int64_t base_rtt_ps;     /* T: the base RTT (window = rate x T) */
    double ai_bps;           /* W_AI = ai x T; 0 = line rate / 2500 (ns-3 run.py: 10 Mb/s per 25 Gb/s) */
    double min_rate_bps;     /* W >= min_rate x T */
    double max_rate_bps;     /* W <= max_rate x T; 0 = line rate */
    uint32_t ack_every;      /* ask for an ACK on every n-th request packet (1: each, ns-3's
                                L2_ACK_INTERVAL 1); a packet that fills the window always asks */
} rs_hpcc_params;

/* One switch egress's previous INT record, as the QP last saw it. */
typedef struct rs_hpcc_hop {
    int64_t ts_ps;
    uint64_t tx_bytes;
    uint32_t qlen_bytes;
} rs_hpcc_hop;

typedef struct rs_hpcc_state {
    double w_bytes;          /* W: the window now (bytes); the QP is paced at W / T */
    double w_ref_bytes;      /* W_ref (Algorithm 1's W^c): updated once per RTT */
    double u;                /* EWMA of the path's normalised inflight bytes U (starts at 1, ns-3) */
    double u_last;           /* U of the last ACK's INT (statistics) */
    double w_ai_bytes;       /* W_AI */
    double w_min_bytes;
    double w_max_bytes;
    uint64_t acked_pos;      /* request payload bytes acknowledged so far */
    uint64_t last_update_pos; /* a reference update waits for the ACKs to pass this (ns-3 lastUpdateSeq) */
    uint32_t inc_stage;      /* additive-only reference updates in a row */
    uint32_t unasked;        /* request packets sent without asking since the last that asked */
    uint8_t n_hops;          /* records in hop[] */
    uint8_t started;         /* the first ACK with INT stored its records */
    uint8_t probe;           /* ack_every > 1: no packet in flight asked for an ACK; one more may
                                go past the window, and it asks (the sender never stalls) */
    rs_hpcc_hop hop[RS_INT_MAX_HOPS];
    uint64_t acks;           /* statistics */
    uint64_t updates;        /* reference updates (once per RTT) */
    uint64_t fast_reacts;    /* window changes between them */
    uint64_t mi_updates;     /* of the reference updates: multiplicative (U >= eta or stage) */
    uint64_t no_int;         /* ACKs without INT records */
    uint64_t ask_pos;        /* where the last packet that asked for an ACK ends (byte position) */
} rs_hpcc_state;

void rs_hpcc_init(rs_hpcc_state *s, const rs_hpcc_params *p, double line_bps);
/* One ACK: acked (newly acknowledged bytes), inflight (bytes still outstanding after it), intel
 * (its INT records, or NULL). */
void rs_hpcc_on_ack(rs_hpcc_state *s, const rs_hpcc_params *p, uint64_t acked, uint64_t inflight,
                    const rs_int_stack *intel);
/* Whether the next request packet (payload bytes, inflight bytes out including it) asks for an
 * ACK: every one at ack_every 1; otherwise every ack_every-th, any that fills the window, and the
 * one that probe lets go. */
int rs_hpcc_ack_request(rs_hpcc_state *s, const rs_hpcc_params *p, uint32_t payload, uint64_t inflight);
/* Window in bytes (at least 1; UINT64_MAX while probe is set) and pacing rate W / T (bits/s). */
uint64_t rs_hpcc_window(const rs_hpcc_state *s, const rs_hpcc_params *p);
double rs_hpcc_rate(const rs_hpcc_state *s, const rs_hpcc_params *p);

#endif
