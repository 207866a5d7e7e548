/* DCQCN reaction point (Zhu et al., SIGCOMM 2015; protocol.md 8): its parameters, its per-QP
 * state and the functions the rs_cc_algo adapter (csrc/cc/dcqcn.c) and the test harness call.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_CC_DCQCN_H
#define RDMASIM_CC_DCQCN_H

#include <stdint.h>

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
    int clamp_tgt_rate;              /* 1: Rt <- Rc on every decrease; 0: only when an increase came since
                                        the previous decrease: a byte-counter one, or with */
    int clamp_tgt_rate_after_time_inc; /* 1: any one, the rate timer's included */
} rs_dcqcn_params;

/* DCQCN reaction point state (one per QP). */
typedef struct rs_dcqcn_rp {
    double rc_bps;          /* current rate */
    double rt_bps;          /* target rate */
    double alpha;           /* with alpha_decays: alpha (1 - g)^alpha_decays is the value (rs_dcqcn_alpha) */
    double line_bps;
    uint32_t timer_events;  /* i: rate-timer expiries since the last decrease (the timer stage) */
    uint32_t byte_events;   /* j: byte-counter expiries since the last decrease */
    uint64_t bytes_since;   /* bytes toward the next byte-counter event */
    int64_t next_alpha_ps;  /* 0 = timer off */
    int64_t next_rate_ps;
    int64_t next_decrease_ps;
    int64_t last_decrease_ps;
    int64_t last_alpha_ps;  /* last alpha-period boundary (alpha decays lazily while idle) */
    int cnp_seen;           /* a CNP arrived in the current alpha period */
    int cnp_pending;        /* waiting for the rate-reduce period to allow a decrease */
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

#endif
