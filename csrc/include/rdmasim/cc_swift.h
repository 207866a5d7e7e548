/* Swift delay-based window control (csrc/cc/swift.c): its parameters and its per-QP state.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_CC_SWIFT_H
#define RDMASIM_CC_SWIFT_H

#include <stdint.h>

typedef struct rs_swift_params {
    double ai;               /* additive increase, packets per RTT (1) */
    double beta;             /* multiplicative decrease scale (0.8) */
    double max_mdf;          /* a decrease keeps at least 1 - max_mdf of the window (0.5) */
    int64_t base_target_ps;  /* target delay of a one-hop path with few flows */
    int64_t hop_scale_ps;    /* h: target added per hop */
    uint32_t hops;           /* switches on the forward path (a parameter: no INT or TTL here) */
    int64_t fs_range_ps;     /* flow scaling: the most target added at small windows */
    double fs_min_cwnd;      /* packets: at or below it flow scaling adds all of fs_range (0.1) */
    double fs_max_cwnd;      /* packets: at or above it flow scaling adds nothing (100) */
    double min_cwnd;         /* packets (0.001): below 1 the QP is paced, gap = RTT / cwnd */
    double max_cwnd;         /* packets; 0 = no cap */
    double init_cwnd;        /* packets; 0 = line rate x base target (one packet at least) */
    uint32_t packet_bytes;   /* payload bytes of a packet (the path MTU): cwnd <-> bytes */
    uint32_t acks_per_window; /* ask for about this many ACKs per window (and when it fills); 0: every packet */
} rs_swift_params;

typedef struct rs_swift_state {
    double cwnd;             /* window, packets (fractional) */
    double fs_alpha_ps;      /* flow scaling: fs(cwnd) = alpha / sqrt(cwnd) + beta, in [0, fs_range] */
    double fs_beta_ps;
    int64_t target_ps;       /* the target of the last ACK */
    int64_t last_decrease_ps;
    int decreased;           /* last_decrease_ps is set */
    uint32_t last_wire_bytes; /* the last request packet's wire size (pacing gap = RTT / cwnd) */
    uint32_t since_ask;      /* request packets since the last that asked for an ACK */
    uint64_t acks;           /* statistics */
    uint64_t increases;
    uint64_t decreases;
    uint64_t capped_decreases; /* of which limited by max_mdf */
    uint64_t held;           /* over target but within an RTT of the last decrease */
    int64_t rtt_last_ps;     /* the last RTT sample (the delay Swift compares with its target) */
    int64_t rtt_min_ps;      /* 0 until the first sample */
    uint64_t rtt_samples;
} rs_swift_state;

void rs_swift_init(rs_swift_state *s, const rs_swift_params *p, double line_bps);
/* The target delay for the window now. */
int64_t rs_swift_target(const rs_swift_state *s, const rs_swift_params *p);
/* One ACK at now_ps: acked (newly acknowledged bytes), rtt_ps (its sample, -1 = none). */
void rs_swift_on_ack(rs_swift_state *s, const rs_swift_params *p, int64_t now_ps, uint64_t acked, int64_t rtt_ps);
/* A request packet leaves with inflight bytes (it included) outstanding: nonzero = it asks for an
 * ACK (one every cwnd / acks_per_window packets, and the one that fills the window). */
int rs_swift_ack_request(rs_swift_state *s, const rs_swift_params *p, uint64_t inflight);
/* Window in bytes (at least 1) and pacing rate (0 = unpaced: cwnd >= 1 packet). */
uint64_t rs_swift_window(const rs_swift_state *s, const rs_swift_params *p);
double rs_swift_rate(const rs_swift_state *s, const rs_swift_params *p);

#endif
