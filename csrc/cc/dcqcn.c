/* DCQCN reaction point (Zhu et al., SIGCOMM 2015; protocol.md 8.2-8.4).
 *
 *   CNP ──▶ decrease: Rt <- Rc (clamp rule), Rc <- max(Rmin, Rc (1 - alpha/2)), alpha <- (1-g) alpha + g,
 *           i = j = 0, restart the rate timer                  [at most once per rate_reduce_period]
 *   alpha timer (K) ──▶ no CNP in the period: alpha <- (1-g) alpha
 *   rate timer (T): i++ ──┐
 *   every B bytes:  j++ ──┴▶ increase: max(i,j) < F          fast recovery   Rc <- (Rt + Rc)/2
 *                                      min(i,j) < F <= max   additive        Rt += R_AI, Rc <- (Rt + Rc)/2
 *                                      min(i,j) >= F         hyper           Rt += (min(i,j) - F + 1) R_HAI, ...
 * Rates are capped at the maximum (line) rate; at the maximum the reaction point goes idle. */
#include "rdmasim/cc.h"

#include <math.h>

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

static void decrease(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now)
{
    if (!rp->ever_cut && p->rate_on_first_cnp > 0)
        rp->rc_bps = rp->rt_bps = rp->rc_bps * p->rate_on_first_cnp;
    int clamp = p->clamp_tgt_rate || (p->clamp_tgt_rate_after_time_inc && rp->last_inc_timer);
    if (clamp || !rp->ever_cut)
        rp->rt_bps = rp->rc_bps;
    double old = rp->rc_bps;
    double next = old * (1.0 - rp->alpha * p->decrease_scale);
    if (next < old * p->min_dec_factor)
        next = old * p->min_dec_factor;
    rp->rc_bps = next > p->min_rate_bps ? next : p->min_rate_bps;
    if (!p->alpha_update_on_timer)
        rp->alpha = (1.0 - p->g) * rp->alpha + p->g;
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
    rp->alpha *= pow(1.0 - p->g, (double)periods);
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

static void increase(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int from_timer)
{
    uint32_t i = rp->timer_events, j = rp->byte_events, f = p->fast_recovery_steps;
    /* literal stages: with the byte counter off (j stays 0) hyper increase never starts */
    uint32_t lo = i < j ? i : j, hi = i < j ? j : i;
    if (hi >= f) {
        if (lo >= f)
            rp->rt_bps += (double)(lo - f + 1) * p->hai_bps;
        else
            rp->rt_bps += p->ai_bps;
    }
    double cap = max_rate(rp, p);
    if (rp->rt_bps > cap)
        rp->rt_bps = cap;
    rp->rc_bps = (rp->rt_bps + rp->rc_bps) / 2.0;
    if (rp->rc_bps > cap)
        rp->rc_bps = cap;
    rp->last_inc_timer = from_timer;
    rp->increases++;
    if (rp->rc_bps >= cap && rp->rt_bps >= cap) { /* recovered: stop reacting until the next CNP */
        rp->rc_bps = rp->rt_bps = cap;
        rp->reacting = 0;
        rp->next_rate_ps = rp->next_alpha_ps = 0;
    }
}

void rs_dcqcn_on_sent(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, uint64_t bytes)
{
    if (!rp->reacting || p->byte_counter_bytes == 0)
        return;
    rp->bytes_since += bytes;
    while (rp->reacting && rp->bytes_since >= p->byte_counter_bytes) {
        rp->bytes_since -= p->byte_counter_bytes;
        rp->byte_events++;
        increase(rp, p, 0);
    }
}

void rs_dcqcn_on_timer(rs_dcqcn_rp *rp, const rs_dcqcn_params *p, int64_t now)
{
    /* deadlines are handled in time order; ties: decrease, alpha, rate */
    for (;;) {
        int64_t t = rs_dcqcn_next_timer(rp);
        if (t == 0 || t > now) {
            catch_up_alpha(rp, p, now);
            return;
        }
        if (rp->next_decrease_ps == t) {
            decrease(rp, p, t);
        } else if (rp->next_alpha_ps == t) {
            if (p->alpha_update_on_timer)
                rp->alpha = (1.0 - p->g) * rp->alpha + (rp->cnp_seen ? p->g : 0.0);
            else /* paper: each CNP restarts this period, so reaching its end means "no CNP for K" */
                rp->alpha = (1.0 - p->g) * rp->alpha;
            rp->cnp_seen = 0;
            rp->last_alpha_ps = t;
            rp->next_alpha_ps = rp->reacting ? t + p->alpha_timer_ps : 0;
        } else {
            rp->timer_events++;
            rp->next_rate_ps = t + p->rate_timer_ps;
            increase(rp, p, 1);
        }
    }
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
