/* Congestion control: what an algorithm sees and what it sets.
 *
 * An algorithm is a state struct plus the callbacks of rs_cc_algo.  The NIC calls them
 * on the events below and reads back the QP's sending rate (bits/s) and the earliest
 * time it wants a timer callback; the NIC owns the timer and the per-QP rate limiter.
 * Adding an algorithm = one new file in csrc/cc/ with its rs_cc_algo and one line in
 * cc_registry.c.  Callbacks never allocate and never fail.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_CC_H
#define RDMASIM_CC_H

#include <stdint.h>

enum rs_cc_kind {
    RS_CC_NONE = 0,   /* line rate, no reaction */
    RS_CC_DCQCN = 1,  /* DCQCN reaction point (protocol.md 8) */
    RS_CC_COUNT
};

/* DCQCN reaction-point parameters (names in rdmasim.cc map to the paper's and to mlxconfig's). */
typedef struct rs_dcqcn_params {
    double g;                        /* alpha gain */
    double initial_alpha;            /* alpha when a QP first reacts */
    int64_t alpha_timer_ps;          /* K: alpha period */
    int alpha_update_on_timer;       /* 0: alpha += g at each decrease, decays on timer without CNP (paper);
                                        1: alpha updated only at timer ticks from "CNP seen" (NVIDIA model) */
    int64_t rate_timer_ps;           /* T: rate-increase timer period */
    uint64_t byte_counter_bytes;     /* B: an increase event every B bytes sent (0 = no byte counter) */
    uint32_t fast_recovery_steps;    /* F */
    double ai_bps;                   /* R_AI */
    double hai_bps;                  /* R_HAI */
    double min_rate_bps;             /* R_min */
    double max_rate_bps;             /* 0 = line rate */
    double decrease_scale;           /* Rc <- Rc (1 - alpha * scale); the paper's 1/2 (rpg_gd = 11) */
    double min_dec_factor;           /* a decrease leaves at least this fraction of Rc (0 = no floor) */
    int64_t rate_reduce_period_ps;   /* 0: decrease on every CNP; else at most once per period */
    double rate_on_first_cnp;        /* 0: keep; else Rc = Rt = this fraction of Rc at the first CNP */
    int clamp_tgt_rate;              /* 1: Rt <- Rc on every decrease */
    int clamp_tgt_rate_after_time_inc; /* 1: Rt <- Rc if the last increase came from the timer */
} rs_dcqcn_params;

/* DCQCN reaction point state (one per QP). */
typedef struct rs_dcqcn_rp {
    double rc_bps;          /* current rate */
    double rt_bps;          /* target rate */
    double alpha;           /* with alpha_decays: alpha (1 - g)^alpha_decays is the value (rs_dcqcn_alpha) */
    double line_bps;
    uint32_t timer_events;  /* i: rate-timer expiries since the last decrease */
    uint32_t byte_events;   /* j: byte-counter expiries since the last decrease */
    uint64_t bytes_since;   /* bytes toward the next byte-counter event */
    int64_t next_alpha_ps;  /* 0 = timer off */
    int64_t next_rate_ps;
    int64_t next_decrease_ps;
    int64_t last_decrease_ps;
    int64_t last_alpha_ps;  /* last alpha-period boundary (alpha decays lazily while idle) */
    int cnp_seen;           /* a CNP arrived in the current alpha period */
    int cnp_pending;        /* waiting for the rate-reduce period to allow a decrease */
    int last_inc_timer;     /* the last increase came from the rate timer */
    int reacting;           /* below line rate: timers run */
    int ever_cut;
    uint64_t cnps;          /* statistics */
    uint64_t decreases;
    uint64_t increases;
    /* alpha periods that ended without a CNP since alpha was last set: kept as a count, so a QP
     * visited after n periods pays one power, not n multiplies (with a 1 us alpha timer and 10 k
     * QPs the multiplies were half of a run), and its state is the same whether it was visited
     * at every period or once */
    uint64_t alpha_decays;
} rs_dcqcn_rp;

void rs_dcqcn_init(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, double line_bps);
void rs_dcqcn_on_cnp(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now_ps);
void rs_dcqcn_on_sent(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, uint64_t bytes);
/* Run every timer due at or before now_ps. */
void rs_dcqcn_on_timer(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now_ps);
/* Earliest pending timer deadline, or 0 when none. */
int64_t rs_dcqcn_next_timer(const rs_dcqcn_rp *rp);
/* Current alpha: rp->alpha decayed by the periods counted in rp->alpha_decays. */
double rs_dcqcn_alpha(const rs_dcqcn_rp *rp, const rs_dcqcn_params *p);

/* ---- the algorithm interface ----
 * What an algorithm sees: CNPs for its QP, ACKs (with an RTT sample and whether the acknowledged
 * packet was CE-marked), bytes sent, and its own timer.  What it sets: the QP's rate (bits/s; the
 * NIC paces the QP's packets at it) and when it next wants on_timer.  `state` is RS_CC_STATE_BYTES
 * of per-QP storage; `params` points to the host's parameters for this algorithm.
 * Timers run lazily (transport/cc_qp.c): on_timer(now) is called before any other callback or
 * query once next_timer_ps has passed, with `now` at or after it, and must apply every deadline up
 * to `now` in time order.  So a timer may change only the algorithm's own state. */
#define RS_CC_STATE_BYTES 192

typedef struct rs_cc_algo {
    const char *name;
    void (*init)(void *state, const void *params, double line_bps);
    void (*on_cnp)(void *state, const void *params, int64_t now_ps);
    void (*on_ack)(void *state, const void *params, int64_t now_ps, int64_t rtt_ps, int ce_echo);
    void (*on_sent)(void *state, const void *params, uint64_t bytes, int64_t now_ps);
    void (*on_timer)(void *state, const void *params, int64_t now_ps);
    double (*rate_bps)(const void *state);
    int64_t (*next_timer_ps)(const void *state); /* 0 = none */
} rs_cc_algo;

/* The registry: algorithm for an rs_cc_kind, or NULL. */
const rs_cc_algo *rs_cc_algo_get(int kind);

/* Per-host congestion-control configuration (a NIC setting, as in firmware). */
typedef struct rs_cc_config {
    int kind;                  /* enum rs_cc_kind for QPs created afterwards */
    rs_dcqcn_params dcqcn;
    int np_enabled;            /* notification point: send CNPs for CE-marked packets */
    int64_t cnp_interval_ps;   /* at most one CNP per QP per interval */
    uint8_t cnp_dscp;          /* DSCP of CNPs (NVIDIA default 48) */
} rs_cc_config;

#endif
