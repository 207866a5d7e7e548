/* NSCC, the UEC network-signal congestion control (SMaRTT), as an rs_cc_algo (csrc/cc/nscc.c) and as
 * plain functions the UET packet delivery sublayer calls directly.  Window-based: delay and ECN
 * per ACK pick one of four reactions (fair increase, proportional/fast increase, multiplicative
 * decrease, none), trims/NACKs cut the window, QuickAdapt resets it to what was delivered in the
 * last RTT.  Sources and parameter values: csrc/cc/nscc.c.  Plain C (cffi-clean). */
#ifndef RDMASIM_CC_NSCC_H
#define RDMASIM_CC_NSCC_H

#include <stdint.h>

typedef struct rs_nscc_params {
    uint32_t packet_bytes;      /* payload bytes of a full packet (MSS; the unit of the increases) */
    int64_t base_rtt_ps;        /* the network's base RTT (htsim _network_rtt): adjustment period, the
                                   starting base RTT (lowered by smaller samples), target default */
    int trimming;               /* the network trims: the default target is 0.75 x base RTT (else 1 x) */
    int64_t target_qdelay_ps;   /* target queueing delay; 0 = from base_rtt_ps and trimming */
    int64_t qa_threshold_ps;    /* QuickAdapt when the delay exceeds it; 0 = 4 x target */
    uint32_t qa_gate;           /* QuickAdapt only if the bytes delivered < max window >> qa_gate (3) */
    int quick_adapt;            /* QuickAdapt on (1) */
    double alpha_mss;           /* proportional increase: alpha = alpha_mss x MSS x a x b / target (4) */
    double fi_mss;              /* fair increase: fi = fi_mss x MSS x a (5) */
    double fi_scale;            /* fast increase: window += acked x fi_scale x a (0.25) */
    int64_t fast_increase_delay_ps; /* fast increase only below this delay (1 us) */
    double eta_mss;             /* eta = eta_mss x MSS x a, added once per base RTT (0.15) */
    double gamma;               /* multiplicative decrease gain (0.8) */
    double max_md;              /* a decrease keeps at least 1 - max_md of the window (0.5) */
    double delay_alpha;         /* EWMA gain of the average delay (0.0125) */
    uint32_t adjust_bytes;      /* apply accumulated increases after this many acked bytes (8 MTU) */
    double ref_rate_bps;        /* the reference network the gains are tuned for: 100 Gb/s ... */
    int64_t ref_rtt_ps;         /* ... and 12 us (a = BDP / reference BDP, b = target / ref RTT) */
    uint64_t min_cwnd_bytes;    /* 0 = one packet */
    uint64_t max_cwnd_bytes;    /* 0 = 1.5 x line rate x base RTT (follows the base RTT down) */
    uint64_t init_cwnd_bytes;   /* 0 = the max window */
} rs_nscc_params;

typedef struct rs_nscc_state {
    double cwnd;                /* window, bytes */
    double inc_bytes;           /* increases accumulated since the last adjustment (bytes^2) */
    double avg_delay_ps;        /* EWMA of the queueing delay */
    double max_cwnd;            /* bytes */
    double line_bps;
    double alpha;               /* derived gains (rs_nscc_init): bytes per ps */
    double fi;                  /* bytes */
    double fi_scale;
    double eta;                 /* bytes */
    int64_t target_ps;          /* target queueing delay */
    int64_t qa_threshold_ps;
    int64_t base_rtt_ps;        /* smallest RTT seen (starts at the parameter) */
    int64_t last_delay_ps;      /* the last ACK's queueing delay sample */
    int64_t last_dec_ps;        /* last multiplicative decrease */
    int64_t last_adjust_ps;     /* last eta increase */
    int64_t qa_end_ps;          /* end of the current QuickAdapt measuring interval (0 = not started) */
    uint64_t achieved_bytes;    /* bytes acked in the current QuickAdapt interval */
    uint64_t received_bytes;    /* bytes acked since the last adjustment */
    uint64_t bytes_to_ignore;   /* after a QuickAdapt: the bytes in flight then, whose feedback is stale */
    uint64_t bytes_ignored;
    uint64_t fi_count;          /* bytes acked in a row at near-zero delay (fast increase) */
    uint8_t increasing;         /* fast increase engaged */
    uint8_t trigger_qa;         /* a loss asked for QuickAdapt at the next interval end */
    uint32_t min_cwnd;          /* bytes */
    /* statistics */
    uint32_t acks;
    uint32_t fair_increases;
    uint32_t prop_increases;
    uint32_t fast_increases;
    uint32_t md_decreases;
    uint32_t noops;             /* ECN with low delay: no window change */
    uint32_t losses;
    uint32_t trims;
    uint32_t quick_adapts;
    uint32_t ignored;           /* ACKs/losses whose feedback a QuickAdapt made stale */
} rs_nscc_state;

/* The defaults (sources in nscc.c) for packets of `mtu` payload bytes on a network of base RTT
 * `base_rtt_ps`, with or without trimming. */
void rs_nscc_params_default(rs_nscc_params *p, uint32_t mtu, int64_t base_rtt_ps, int trimming);
/* 0 when p is valid, else the 1-based index of the first bad field in the struct's order. */
int rs_nscc_params_check(const rs_nscc_params *p);
void rs_nscc_init(rs_nscc_state *s, const rs_nscc_params *p, double line_bps, int64_t now_ps);
/* One ACK: acked = newly acknowledged bytes, rtt_ps its sample (-1 = none: only the byte counts
 * advance), ecn = the acknowledged packet arrived CE-marked, inflight = bytes in flight after it. */
void rs_nscc_on_ack(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t acked, int64_t rtt_ps,
                    int ecn, uint64_t inflight);
/* A loss: lost bytes from a NACK or a trimmed packet (trimmed nonzero), or a timeout. */
void rs_nscc_on_loss(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t lost_bytes, int trimmed);
/* The window in bytes (at least one packet's worth: min_cwnd_bytes). */
uint64_t rs_nscc_window(const rs_nscc_state *s, const rs_nscc_params *p);

#endif
