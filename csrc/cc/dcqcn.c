/* DCQCN reaction point (Zhu et al., SIGCOMM 2015; protocol.md 8.2-8.4).
 *
 *   CNP ──▶ decrease: Rt <- Rc (clamp rule), Rc <- max(Rmin, Rc (1 - alpha/2)), alpha <- (1-g) alpha + g,
 *           i = j = 0, restart the rate timer                  [at most once per rate_reduce_period]
 *   alpha timer (K) ──▶ no CNP in the period: alpha <- (1-g) alpha
 *   rate timer (T): i++ ──┐
 *   every B bytes:  j++ ──┴▶ increase: max(i,j) < F          fast recovery   Rc <- (Rt + Rc)/2
 *                                      min(i,j) < F <= max   additive        Rt += R_AI, Rc <- (Rt + Rc)/2
 *                                      min(i,j) >= F         hyper           Rt += (min(i,j) - F + 1) R_HAI, ...
 *   no byte counter (B = 0), the timer alone: i <= F fast recovery, i = F + 1 additive, i > F + 1
 *   hyper by R_HAI (HPCC's ns-3 model of the firmware, rdma-hw.cc RateIncEventMlx).
 * Clamp rule: Rt <- Rc at a cut with clamp_tgt_rate, or when an increase happened since the previous
 * cut: any (j > 0 or i > 0) with clamp_tgt_rate_after_time_inc, a byte-counter one (j > 0) without
 * (DCQCN's ns-3 rpr_cnm_received; HPCC's CheckRateDecreaseMlx, timer only; NVIDIA's parameter
 * descriptions).  Sources and the choices: docs/congestion-control.md.
 * Rates are capped at the maximum (line) rate; at the maximum the reaction point goes idle. */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_dcqcn.h"

static double max_rate(const rs_dcqcn_rp *rp, const rs_dcqcn_params *p)
{
    return p->max_rate_bps > 0 && p->max_rate_bps < rp->line_bps ? p->max_rate_bps : rp->line_bps;
}

void rs_dcqcn_init(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, double line_bps)
{
    *rp = (rs_dcqcn_rp){0};
    rp->line_bps = line_bps;
    rp->rc_bps = rp->rt_bps = max_rate(rp, p);
    rp->alpha = p->initial_alpha;
}

static uint64_t double_bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static double bits_double(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

/* x^n by squaring: at most 2 log2(n) multiplies (a decrease usually finds n of 0 to a few; libm's
 * pow at every decrease made 1 k DCQCN QP pairs 6 % slower) and the same value on every machine.
 * A bit of n that is 0 multiplies by 1 (exact) instead of branching: with NVIDIA's 1 us alpha
 * timer n is in the thousands and its bits are as good as random, so the branch mispredicted
 * about every other bit (perf at 100 k QP pairs: algo_cnp 5.2 -> 3.6 % of samples). */
static double pow_n(double x, uint64_t n)
{
    const uint64_t one = double_bits(1.0);
    double r = 1.0;
    for (; n; n >>= 1) {
        const uint64_t take = (uint64_t)0 - (n & 1); /* all ones or zero: a select the compiler
                                                       cannot turn back into a branch */
        r *= bits_double((double_bits(x) & take) | (one & ~take));
        x *= x;
    }
    return r;
}

double rs_dcqcn_alpha(const rs_dcqcn_rp *rp, const rs_dcqcn_params *p)
{
    return rp->alpha_decays ? rp->alpha * pow_n(1.0 - p->g, rp->alpha_decays) : rp->alpha;
}

/* alpha <- (1 - g) alpha + g: the decays counted so far are applied first */
static void alpha_raise(rs_dcqcn_rp *rp, const rs_dcqcn_params *p)
{
    rp->alpha = (1.0 - p->g) * rs_dcqcn_alpha(rp, p) + p->g;
    rp->alpha_decays = 0;
}

static void decrease(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now)
{
    if (!rp->ever_cut && p->rate_on_first_cnp > 0)
        rp->rc_bps = rp->rt_bps = rp->rc_bps * p->rate_on_first_cnp;
    /* i and j count the increases since the previous cut (both reset below) */
    const int clamp = p->clamp_tgt_rate || rp->byte_events > 0 ||
                      (p->clamp_tgt_rate_after_time_inc && rp->timer_events > 0);
    if (clamp || !rp->ever_cut)
        rp->rt_bps = rp->rc_bps;
    double old = rp->rc_bps;
    double next = old * (1.0 - rs_dcqcn_alpha(rp, p) * p->decrease_scale);
    if (next < old * p->min_dec_factor)
        next = old * p->min_dec_factor;
    rp->rc_bps = next > p->min_rate_bps ? next : p->min_rate_bps;
    if (!p->alpha_update_on_timer)
        alpha_raise(rp, p);
    rp->ever_cut = 1;
    rp->timer_events = rp->byte_events = 0;
    rp->bytes_since = 0;
    rp->last_decrease_ps = now;
    rp->cnp_pending = 0;
    rp->next_decrease_ps = 0;
    rp->next_rate_ps = now + p->rate_timer_ps;
    rp->decreases++;
}

/* Idle at line rate, no alpha timer runs: apply the periods that passed without a CNP at once. */
static void catch_up_alpha(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now)
{
    if (rp->reacting || !rp->last_alpha_ps || now < rp->last_alpha_ps)
        return;
    int64_t periods = (now - rp->last_alpha_ps) / p->alpha_timer_ps;
    rp->alpha_decays += (uint64_t)periods;
    rp->last_alpha_ps += periods * p->alpha_timer_ps;
}

void rs_dcqcn_on_cnp(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now)
{
    rp->cnps++;
    rp->cnp_seen = 1;
    catch_up_alpha(rp, p, now);
    /* paper: alpha decays after K without a CNP, so its period restarts at each CNP;
     * timer mode: a free-running period that samples "a CNP was seen" */
    if (!rp->reacting || !p->alpha_update_on_timer) {
        rp->next_alpha_ps = (rp->reacting || !p->alpha_update_on_timer || !rp->last_alpha_ps)
                                ? now + p->alpha_timer_ps
                                : rp->last_alpha_ps + p->alpha_timer_ps;
        if (!p->alpha_update_on_timer)
            rp->last_alpha_ps = now;
    }
    rp->reacting = 1;
    if (p->rate_reduce_period_ps == 0 || !rp->decreases || now >= rp->last_decrease_ps + p->rate_reduce_period_ps) {
        decrease(rp, p, now);
    } else if (!rp->cnp_pending) {
        rp->cnp_pending = 1;
        rp->next_decrease_ps = rp->last_decrease_ps + p->rate_reduce_period_ps;
    }
}

/* What an increase event adds to Rt, i and j the timer and byte stages counted with it. */
static inline double target_step(uint32_t i, uint32_t j, const rs_dcqcn_params *p)
{
    const uint32_t f = p->fast_recovery_steps;
    if (p->byte_counter_bytes == 0)
        return i <= f ? 0.0 : i == f + 1 ? p->ai_bps : p->hai_bps;
    const uint32_t lo = i < j ? i : j, hi = i < j ? j : i;
    if (hi < f)
        return 0.0;
    return lo < f ? p->ai_bps : (double)(lo - f + 1) * p->hai_bps;
}

/* Whether every increase event from timer stage i on (j fixed) adds the same *d to Rt: the
 * additive stage, or hyper with the byte stage j at or below the timer stage, or with the byte
 * counter off hyper's constant R_HAI. */
static inline int steady_step(uint32_t i, uint32_t j, const rs_dcqcn_params *p, double *d)
{
    const uint32_t f = p->fast_recovery_steps;
    if (p->byte_counter_bytes == 0) {
        *d = p->hai_bps;
        return i > f + 1;
    }
    *d = j < f ? p->ai_bps : (double)(j - f + 1) * p->hai_bps;
    return i >= f && (j < f || j <= i);
}

/* The increase rule on (Rt, Rc) for stage counters i (timer) and j (bytes); returns 1 when both
 * rates reached `cap` (max_rate(rp, p)): the reaction point has recovered.  On values, not on the
 * state, so that the timer catch-up keeps Rt and Rc in registers across hundreds of periods. */
static inline int rate_step(double *rt, double *rc, uint32_t i, uint32_t j, const rs_dcqcn_params *p, double cap)
{
    *rt += target_step(i, j, p);
    if (*rt > cap)
        *rt = cap;
    *rc = (*rt + *rc) / 2.0;
    if (*rc > cap)
        *rc = cap;
    return *rc >= cap && *rt >= cap;
}

/* How many halvings Rc <- (cap + Rc)/2 take Rc to the cap, found without doing them; 0 when Rc is
 * outside the cap's binade.  Inside it the gap in units of the cap's last place is
 * G = bits(cap) - bits(Rc); a halving rounds the sum 2 cap - G to a multiple of two units, ties to
 * even, so with the cap's significand even an odd G becomes its even neighbour of G/2, and G
 * reaches 0 after n + (G >= ceil(2^(n+1) / 3)) halvings, n the bit length of G (checked against the
 * floating-point loop in tests/unit/test_dcqcn_rp.py).  With an odd significand G goes to its odd
 * neighbour instead and stops at 1 (Rc never reaches the cap), within n halvings: after the count
 * returned here Rc is one unit below the cap either way, which is all the caller relies on. */
static uint64_t halvings_to_cap(double cap, double rc)
{
    const uint64_t cb = double_bits(cap), rb = double_bits(rc), exp = cb >> 52;
    if (exp == 0 || exp >= 0x7ff || rb >> 52 != exp || rb >= cb)
        return 0;
    const uint64_t g = cb - rb;
    const int n = 64 - __builtin_clzll(g);
    return (uint64_t)n + (g >= ((UINT64_C(1) << (n + 1)) + 2) / 3);
}

/* The rate periods from next_rate_ps up to `until`, with Rt, Rc and the timer stage in registers.
 * Returns 1 when a period recovered (its time in *recovered_at; the periods stop there).
 * Two runs of periods skip rate_step's branches, doing its arithmetic in the same order (bit for
 * bit), because a QP visited after a long gap spends them here (at 100 k paper-preset QP pairs the
 * loop was 19 % of a run):
 *   - Rt at the cap: every stage's increase is clamped back to it, so only Rc <- (cap + Rc)/2 moves,
 *     up to the period that reaches the cap (that one goes through rate_step: it recovers); when
 *     that period is before `until` the halvings before it are counted, not done (halvings_to_cap);
 *   - the same increase d every period (steady_step) while Rt + d stays below the cap:
 *     Rt += d, Rc <- (Rt + Rc)/2. */
static int rate_periods(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, double cap, int64_t until,
                        int64_t *recovered_at)
{
    const uint32_t j = rp->byte_events, i0 = rp->timer_events;
    const int64_t step = p->rate_timer_ps;
    const int rt_stays_at_cap = p->ai_bps >= 0 && p->hai_bps >= 0;
    double rt = rp->rt_bps, rc = rp->rc_bps;
    uint32_t i = i0;
    int64_t tr = rp->next_rate_ps;
    int recovered = 0;
    while (tr <= until) {
        const uint32_t stage = i + 1;
        double d;
        if (tr + step > until) {
            /* one period left (a QP visited often): straight to rate_step */
        } else if (rt == cap && rt_stays_at_cap) {
            /* below the cap's binade a few halvings one by one; then the k - 1 halvings before
             * the one that recovers at once when they all fall before `until` (Rc is then one
             * unit below the cap; rate_step does the last) */
            const double binade = bits_double(double_bits(cap) & ~((UINT64_C(1) << 52) - 1));
            double next;
            while (tr <= until && rc < binade && (next = (cap + rc) / 2.0) < cap) {
                rc = next;
                i++;
                tr += step;
            }
            const uint64_t k = tr <= until ? halvings_to_cap(cap, rc) : 0;
            if (k > 1 && (uint64_t)((until - tr) / step) >= k - 2) {
                rc = bits_double(double_bits(cap) - 1);
                i += (uint32_t)(k - 1);
                tr += (int64_t)(k - 1) * step;
            } else {
                while (tr <= until && (next = (cap + rc) / 2.0) < cap) {
                    rc = next;
                    i++;
                    tr += step;
                }
            }
        } else if (steady_step(stage, j, p, &d) && rc <= cap) {
            while (tr <= until && rt + d < cap) {
                rt += d;
                rc = (rt + rc) / 2.0;
                i++;
                tr += step;
            }
        }
        if (tr > until)
            break;
        if (rate_step(&rt, &rc, ++i, j, p, cap)) {
            recovered = 1;
            *recovered_at = tr;
            tr += step;
            break;
        }
        tr += step;
    }
    rp->rt_bps = rt;
    rp->rc_bps = rc;
    rp->timer_events = i;
    rp->increases += i - i0;
    rp->next_rate_ps = tr;
    return recovered;
}

/* Recovered: rates at the maximum, no timers until the next CNP. */
static void recover(rs_dcqcn_rp *rp, double cap)
{
    rp->rc_bps = rp->rt_bps = cap;
    rp->reacting = 0;
    rp->next_rate_ps = rp->next_alpha_ps = 0;
}

void rs_dcqcn_on_sent(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, uint64_t bytes)
{
    if (!rp->reacting || p->byte_counter_bytes == 0)
        return;
    rp->bytes_since += bytes;
    while (rp->reacting && rp->bytes_since >= p->byte_counter_bytes) {
        rp->bytes_since -= p->byte_counter_bytes;
        rp->byte_events++;
        double cap = max_rate(rp, p);
        rp->increases++;
        if (rate_step(&rp->rt_bps, &rp->rc_bps, rp->timer_events, rp->byte_events, p, cap))
            recover(rp, cap);
    }
}

/* Alpha periods ending at or before `until` (the first one at next_alpha_ps). */
static void alpha_periods(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t until)
{
    int64_t t = rp->next_alpha_ps;
    if (!t || t > until)
        return;
    uint64_t n = (uint64_t)((until - t) / p->alpha_timer_ps) + 1;
    int64_t last = t + (int64_t)(n - 1) * p->alpha_timer_ps;
    /* timer mode samples "a CNP was seen" in the first period only (cnp_seen is cleared after it);
     * the paper's mode reaches a period's end only without a CNP */
    if (p->alpha_update_on_timer && rp->cnp_seen) {
        alpha_raise(rp, p);
        n--;
    }
    rp->alpha_decays += n;
    rp->cnp_seen = 0;
    rp->last_alpha_ps = last;
    rp->next_alpha_ps = rp->reacting ? last + p->alpha_timer_ps : 0;
}

void rs_dcqcn_on_timer(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now)
{
    /* Deadlines take effect in time order; ties: decrease, alpha, rate.  Between two decreases
     * the alpha and rate periods do not read each other's state, so the rate periods run in a
     * loop of their own with the state in registers (a QP visited after a long gap catches up
     * hundreds of periods; one loop picking the earliest deadline each time, state in memory, was
     * 40 % of a 100k-QP DCQCN run) and the alpha periods are counted at once (alpha_decays), with
     * one coupling: recovery to the maximum rate stops the alpha timer, so alpha periods end with
     * the rate period that recovered (inclusive: alpha goes first at a tie). */
    const double cap = max_rate(rp, p);
    for (;;) {
        int64_t t = rs_dcqcn_next_timer(rp);
        if (t == 0 || t > now)
            break;
        if (rp->next_decrease_ps == t) {
            decrease(rp, p, t);
            continue;
        }
        /* up to the next decrease (exclusive) or now */
        int64_t until = rp->next_decrease_ps && rp->next_decrease_ps <= now ? rp->next_decrease_ps - 1 : now;
        int64_t alpha_until = until;
        int recovered = 0;
        int64_t tr = rp->next_rate_ps;
        if (tr && tr <= until)
            recovered = rate_periods(rp, p, cap, until, &alpha_until);
        alpha_periods(rp, p, alpha_until);
        if (recovered)
            recover(rp, cap);
    }
    catch_up_alpha(rp, p, now);
}

int64_t rs_dcqcn_next_timer(const rs_dcqcn_rp *rp)
{
    int64_t best = 0;
    const int64_t c[3] = {rp->next_decrease_ps, rp->next_alpha_ps, rp->next_rate_ps};
    for (int k = 0; k < 3; k++)
        if (c[k] && (!best || c[k] < best))
            best = c[k];
    return best;
}

/* ---- rs_cc_algo adapter ----
 * No flags: DCQCN reacts to CNPs and bytes sent only, so the NIC does no per-ACK work for it. */
_Static_assert(sizeof(rs_dcqcn_rp) <= RS_CC_STATE_BYTES, "DCQCN state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_dcqcn_params) <= RS_CC_PARAMS_BYTES, "DCQCN parameters must fit the host's CC blob");

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_dcqcn_init(st, p, line); }
static void algo_cnp(void *st, const void *p, int64_t now) { rs_dcqcn_on_cnp(st, p, now); }
static void algo_sent(void *st, const void *p, uint64_t bytes, int64_t now) { rs_dcqcn_on_sent(st, p, bytes); }
static void algo_timer(void *st, const void *p, int64_t now) { rs_dcqcn_on_timer(st, p, now); }
static double algo_rate(const void *st, const void *p) { return ((const rs_dcqcn_rp *)st)->rc_bps; }
static int64_t algo_next(const void *st) { return rs_dcqcn_next_timer(st); }

const rs_cc_algo rs_cc_dcqcn = {
    .name = "dcqcn",
    .kind = RS_CC_DCQCN,
    .flags = 0,
    .params_size = sizeof(rs_dcqcn_params),
    .state_size = sizeof(rs_dcqcn_rp),
    .init = algo_init,
    .on_cnp = algo_cnp,
    .on_sent = algo_sent,
    .on_timer = algo_timer,
    .rate_bps = algo_rate,
    .next_timer_ps = algo_next,
};
