/* Congestion control: what an algorithm sees and what it sets (interface v3).
 *
 * An algorithm is a params struct, a per-QP state struct and the callbacks of rs_cc_algo.  The
 * NIC calls them on the events below and reads back the QP's sending rate (bits/s), its window
 * (bytes in flight) and the earliest time it wants a timer callback; the NIC owns the timer, the
 * per-QP rate limiter and the window test (transport/cc_qp.c).  Adding an algorithm = its header
 * rdmasim/cc_<name>.h, one file csrc/cc/<name>.c with its rs_cc_algo, and one row in
 * csrc/cc/registry.c (docs/congestion-control.md).  Callbacks never allocate and never fail.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_CC_H
#define RDMASIM_CC_H

#include <stddef.h>
#include <stdint.h>

enum rs_cc_kind {
    RS_CC_NONE = 0,   /* line rate, no reaction */
    RS_CC_DCQCN = 1,  /* DCQCN reaction point (protocol.md 8) */
    RS_CC_DCTCP = 2,  /* DCTCP-style ECN rate/window control (csrc/cc/dctcp.c) */
    RS_CC_TIMELY = 3, /* TIMELY RTT-gradient rate control (csrc/cc/timely.c) */
    RS_CC_SWIFT = 4,  /* Swift delay-based window control (csrc/cc/swift.c) */
    RS_CC_HPCC = 5,   /* HPCC INT-based window control (csrc/cc/hpcc.c) */
    RS_CC_IBCC = 6,   /* InfiniBand CC (annex A10): CCT index per QP (csrc/cc/ibcc.c) */
    RS_CC_NSCC = 7,   /* UEC NSCC (SMaRTT): delay + ECN window control (csrc/cc/nscc.c) */
    RS_CC_COUNT
};

/* In-band network telemetry per hop (HPCC): rs_int_stack in rdmasim/telemetry.h. */
#include "rdmasim/telemetry.h"

/* One acknowledgement (an ACK-syndrome AETH for a PSN this QP sent; duplicates included, with
 * acked_bytes 0), as the requester's NIC sees it. */
typedef struct rs_cc_ack {
    int64_t now_ps;
    /* now - the NIC send time of the request packet this ACK acknowledges: the requester stamps
     * each request with its send time and the responder echoes the stamp of the last packet it
     * accepted in the ACK (simulator metadata, not on the wire).  -1 when there is no sample: the
     * packet was a retransmission (Karn), the ACK repeats an earlier one, or the algorithm lacks
     * RS_CC_WANTS_RTT. */
    int64_t rtt_ps;
    uint64_t acked_bytes;    /* request payload bytes newly acknowledged (cumulative advance) */
    uint64_t inflight_bytes; /* request payload bytes still unacknowledged after this ACK */
    uint32_t ack_psn;        /* PSN acknowledged */
    uint32_t snd_nxt_psn;    /* the requester's next PSN at ACK time */
    uint32_t ce_bytes;       /* payload bytes of the request packets this ACK covers (accepted since
                                the responder's previous ACK) that arrived CE-marked */
    uint8_t ce_echo;         /* the acknowledged request (the ACK's PSN) arrived CE-marked */
    const rs_int_stack *intel; /* INT echoed in the ACK, or NULL */
} rs_cc_ack;

/* ---- the algorithm interface ----
 * `state` is RS_CC_STATE_BYTES of per-QP storage (8-byte aligned); `params` points to the host's
 * parameters for this algorithm (its own struct, params_size bytes).
 * Timers run lazily (transport/cc_qp.c): on_timer(now) is called before any other callback or
 * query once next_timer_ps has passed, with `now` at or after it, and must apply every deadline up
 * to `now` in time order.  So a timer may change only the algorithm's own state.
 * Rate: rate_bps() paces the QP's request packets (each delays the next by its wire time at that
 * rate); 0 or >= the line rate is unpaced.  Window: window_bytes() bounds the request payload bytes
 * in flight (sent and not acknowledged); 0 or UINT64_MAX = no window; a window below one packet
 * still lets one packet go when nothing is in flight.  When an ACK callback may open the window
 * the NIC looks at the QP again by itself. */
#define RS_CC_STATE_BYTES 256
#define RS_CC_PARAMS_BYTES 512 /* IB CC: a 128-entry congestion control table */

/* flags: what the NIC does for the algorithm (skipped when not asked for: DCQCN asks for none) */
enum {
    RS_CC_WANTS_ACKS = 1, /* call on_ack for every acknowledgement; every request sets the A bit
                             (an ACK per packet, as ns-3 HPCC's L2_ACK_INTERVAL 1; ack_request
                             may ask for fewer) and asks for the echo */
    RS_CC_WANTS_INT = 2,  /* requests collect INT at each switch egress; rs_cc_ack.intel echoes it */
    RS_CC_WANTS_RTT = 4,  /* stamp requests with their send time: rs_cc_ack.rtt_ps */
    RS_CC_ASKS_BLIND = 8, /* ack_request ignores inflight_bytes: the NIC passes 0 and spares the two
                             WQE reads that compute it (TIMELY asks by bytes sent) */
};

typedef struct rs_cc_algo {
    const char *name;
    int kind;            /* enum rs_cc_kind */
    unsigned flags;      /* RS_CC_WANTS_* */
    size_t params_size;  /* <= RS_CC_PARAMS_BYTES: what rs_tp_host_set_cc takes */
    size_t state_size;   /* <= RS_CC_STATE_BYTES */
    void (*init)(void *state, const void *params, double line_bps, int64_t now_ps);
    void (*on_cnp)(void *state, const void *params, int64_t now_ps);              /* nullable */
    void (*on_ack)(void *state, const void *params, const rs_cc_ack *ack);         /* nullable */
    void (*on_sent)(void *state, const void *params, uint64_t wire_bytes, int64_t now_ps); /* nullable */
    void (*on_timer)(void *state, const void *params, int64_t now_ps);             /* nullable */
    double (*rate_bps)(const void *state, const void *params);
    uint64_t (*window_bytes)(const void *state, const void *params); /* nullable: no window */
    int64_t (*next_timer_ps)(const void *state);  /* nullable; returns 0 = none */
    /* nullable (RS_CC_WANTS_ACKS): called as each request packet leaves with its payload bytes
     * and the payload bytes in flight including it; nonzero sets its A bit.  NULL: every packet
     * asks (an ACK per packet).  Packets the requester marks itself (the last of a message, every
     * 66th) still ask; an algorithm with a window must ask at least when the window fills. */
    int (*ack_request)(void *state, const void *params, uint32_t payload_bytes, uint64_t inflight_bytes);
    /* nullable: nonzero when with these parameters every request asks, so that ack_request (and
     * the bytes in flight it takes, two WQE reads) is skipped on each packet */
    int (*ack_all)(const void *params);
    /* nullable (v3): packets were lost: lost_bytes of payload, trimmed nonzero when the sender
     * learnt it from a trimmed packet (UET) rather than a NAK or a retransmission timeout (RoCE:
     * transport/cc_qp.c calls it on a sequence-error NAK and on a timeout, trimmed 0). */
    void (*on_loss)(void *state, const void *params, int64_t now_ps, uint64_t lost_bytes, int trimmed);
} rs_cc_algo;

/* The registry (csrc/cc/registry.c): the algorithm of an rs_cc_kind, or NULL (RS_CC_NONE, an
 * unknown kind, or a named kind not built in). */
const rs_cc_algo *rs_cc_algo_get(int kind);
/* "none", "dcqcn", "dctcp", "timely", "swift", "hpcc", "ibcc", "nscc"; NULL outside the enum. */
const char *rs_cc_kind_name(int kind);

/* Per-host congestion-control configuration (a NIC setting, as in firmware).  Each kind keeps its
 * own parameters, so a QP of one kind never reads another kind's struct when the host's
 * setting changes while it lives. */
typedef struct rs_cc_config {
    int kind;                  /* enum rs_cc_kind for QPs created afterwards */
    int np_enabled;            /* notification point: send CNPs for CE-marked packets */
    int64_t cnp_interval_ps;   /* at most one CNP per QP per interval */
    uint8_t cnp_dscp;          /* DSCP of CNPs (NVIDIA default 48) */
    _Alignas(8) uint8_t params[RS_CC_COUNT][RS_CC_PARAMS_BYTES]; /* params[kind]: that kind's struct */
} rs_cc_config;

#endif
