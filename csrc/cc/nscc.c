/* NSCC: the UEC network-signal congestion control (SMaRTT), window-based, sender side.
 *
 * Sources: Bonato et al., "SMaRTT-REPS: Sender-based Marked Rapidly-adapting Trimmed & Timed
 * Transport with Recycled Entropies" (arXiv 2404.01630): the four delay x ECN quadrants,
 * QuickAdapt and the reaction to trims; and the UEC reference simulator, htsim in
 * github.com/ultraethernet/uet-htsim (htsim/sim/uec.cpp: initNsccParams, updateCwndOnAck_NSCC,
 * updateCwndOnNack_NSCC, quick_adapt, fulfill_adjustment, update_delay), for the constants and
 * the order of the steps.  Read for the rules; the code here is rdmasim's.
 *
 * Per ACK (acked = newly acknowledged bytes; delay = RTT - base RTT, base RTT the smallest RTT
 * seen, starting at the configured network RTT; no sample: the average delay):
 *   avg_delay  EWMA with gain delay_alpha; an unmarked ACK above target contributes base_rtt / 4
 *              instead of its delay (delay without ECN is not trusted as congestion);
 *   QuickAdapt at the end of each interval of base RTT + target: if a loss asked for it or the
 *              delay exceeds qa_threshold (4 x target), and the bytes delivered in the interval are
 *              below max window >> qa_gate (1/8), the window becomes what was delivered; the
 *              feedback of the bytes then in flight (stale) is ignored for ECN-marked ACKs;
 *   no ECN, delay >= target  fair increase:          inc += fi x acked
 *   no ECN, delay <  target  proportional increase:  inc += alpha x acked x (target - delay),
 *                            or fast increase when the delay stayed below 1 us for a window:
 *                            cwnd += acked x fi_scale
 *   ECN,    delay >= target  multiplicative decrease, at most once per base RTT, on the average
 *                            delay:  cwnd *= max(1 - gamma (avg - target) / avg, 1 - max_md)
 *   ECN,    delay <  target  nothing (the path, not the flow: REPS moves away from it)
 *   every adjust_bytes acked or base RTT: cwnd += inc / cwnd (inc is in bytes^2: fi x a window
 *   of ACKs adds fi bytes per RTT), and once per base RTT cwnd += eta;
 *   cwnd in [min_cwnd, max_cwnd = 1.5 x BDP].
 * Loss (a trimmed packet's NACK, or for RoCE a sequence-error NAK or a timeout): the delay average
 * takes one sample of the network RTT (htsim: the trimming threshold), QuickAdapt is triggered,
 * and unless it runs (or the loss is stale feedback) cwnd -= lost bytes.
 *
 * Gains (htsim initNsccParams, UEC 1.0 NSCC defaults): the network is compared with a reference of
 * 100 Gb/s and 12 us: a = BDP / reference BDP, b = target / 12 us; alpha = 4 MSS a b / target,
 * fi = 5 MSS a, eta = 0.15 MSS a, fi_scale = 0.25 a, gamma 0.8, max_md 0.5, delay_alpha
 * 0.0125, qa_gate 3, qa_threshold 4 target, target 0.75 RTT with trimming (1 RTT without),
 * adjustment every 8 MTU of ACKs or one network RTT, min window one MTU, max 1.5 BDP, first window
 * the max.  The BDP is the sender's line rate times the configured base RTT. */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_nscc.h"

void rs_nscc_params_default(rs_nscc_params *p, uint32_t mtu, int64_t base_rtt_ps, int trimming)
{
    memset(p, 0, sizeof *p);
    p->packet_bytes = mtu;
    p->base_rtt_ps = base_rtt_ps;
    p->trimming = trimming ? 1 : 0;
    p->qa_gate = 3;
    p->quick_adapt = 1;
    p->alpha_mss = 4.0;
    p->fi_mss = 5.0;
    p->fi_scale = 0.25;
    p->fast_increase_delay_ps = 1000000; /* 1 us */
    p->eta_mss = 0.15;
    p->gamma = 0.8;
    p->max_md = 0.5;
    p->delay_alpha = 0.0125;
    p->adjust_bytes = 8 * mtu;
    p->ref_rate_bps = 100e9;
    p->ref_rtt_ps = 12000000; /* 12 us */
}

int rs_nscc_params_check(const rs_nscc_params *p)
{
    if (p->packet_bytes == 0)
        return 1;
    if (p->base_rtt_ps <= 0)
        return 2;
    if (p->trimming != 0 && p->trimming != 1)
        return 3;
    if (p->target_qdelay_ps < 0)
        return 4;
    if (p->qa_threshold_ps < 0)
        return 5;
    if (p->qa_gate > 63)
        return 6;
    if (p->quick_adapt != 0 && p->quick_adapt != 1)
        return 7;
    if (!(p->alpha_mss >= 0))
        return 8;
    if (!(p->fi_mss >= 0))
        return 9;
    if (!(p->fi_scale >= 0))
        return 10;
    if (p->fast_increase_delay_ps < 0)
        return 11;
    if (!(p->eta_mss >= 0))
        return 12;
    if (!(p->gamma > 0 && p->gamma <= 1))
        return 13;
    if (!(p->max_md > 0 && p->max_md < 1))
        return 14;
    if (!(p->delay_alpha > 0 && p->delay_alpha <= 1))
        return 15;
    if (p->adjust_bytes == 0)
        return 16;
    if (!(p->ref_rate_bps > 0))
        return 17;
    if (p->ref_rtt_ps <= 0)
        return 18;
    if (p->max_cwnd_bytes && p->min_cwnd_bytes > p->max_cwnd_bytes)
        return 20;
    return 0;
}

static double maxd(double a, double b) { return a > b ? a : b; }

static void bounds(rs_nscc_state *s)
{
    if (s->cwnd < s->min_cwnd)
        s->cwnd = s->min_cwnd;
    if (s->cwnd > s->max_cwnd)
        s->cwnd = s->max_cwnd;
}

static double bdp(double line_bps, int64_t rtt_ps) { return line_bps * (double)rtt_ps * 1e-12 / 8.0; }

void rs_nscc_init(rs_nscc_state *s, const rs_nscc_params *p, double line_bps, int64_t now_ps)
{
    memset(s, 0, sizeof *s);
    s->line_bps = line_bps;
    s->base_rtt_ps = p->base_rtt_ps;
    s->target_ps = p->target_qdelay_ps ? p->target_qdelay_ps
                                       : (p->trimming ? p->base_rtt_ps * 3 / 4 : p->base_rtt_ps);
    s->qa_threshold_ps = p->qa_threshold_ps ? p->qa_threshold_ps : 4 * s->target_ps;
    const double mss = (double)p->packet_bytes;
    const double a = bdp(line_bps, p->base_rtt_ps) / bdp(p->ref_rate_bps, p->ref_rtt_ps);
    const double b = (double)s->target_ps / (double)p->ref_rtt_ps;
    s->alpha = s->target_ps > 0 ? p->alpha_mss * mss * a * b / (double)s->target_ps : 0.0;
    s->fi = p->fi_mss * mss * a;
    s->eta = p->eta_mss * mss * a;
    s->fi_scale = p->fi_scale * a;
    s->min_cwnd = p->min_cwnd_bytes ? (uint32_t)p->min_cwnd_bytes : p->packet_bytes;
    s->max_cwnd = p->max_cwnd_bytes ? (double)p->max_cwnd_bytes : 1.5 * bdp(line_bps, p->base_rtt_ps);
    if (s->max_cwnd < s->min_cwnd)
        s->max_cwnd = s->min_cwnd;
    s->cwnd = p->init_cwnd_bytes ? (double)p->init_cwnd_bytes : s->max_cwnd;
    bounds(s);
    s->last_adjust_ps = now_ps;
}

/* The delay average: one sample (skip = the ACK was ECN-marked, or a loss). */
static void update_delay(rs_nscc_state *s, const rs_nscc_params *p, int64_t delay, int skip)
{
    double sample = !skip && delay > s->target_ps ? 0.25 * (double)s->base_rtt_ps : (double)delay;
    s->avg_delay_ps = p->delay_alpha * sample + (1.0 - p->delay_alpha) * s->avg_delay_ps;
}

/* QuickAdapt (see the file comment); nonzero when it ran or the feedback was stale: the caller
 * then skips the window update and the accumulated increases are dropped. */
static int quick_adapt(rs_nscc_state *s, const rs_nscc_params *p, int64_t now, int loss, int skip, int64_t delay,
                       uint64_t inflight)
{
    if (!p->quick_adapt)
        return 0;
    int done = 0;
    if (skip && s->bytes_ignored < s->bytes_to_ignore) {
        done = 1;
        s->ignored++;
    } else if (now > s->qa_end_ps) {
        if (s->qa_end_ps && (s->trigger_qa || loss || delay > s->qa_threshold_ps) &&
            (double)s->achieved_bytes < s->max_cwnd / (double)(1ull << p->qa_gate)) {
            s->cwnd = maxd((double)s->achieved_bytes, s->min_cwnd);
            s->bytes_to_ignore = inflight;
            s->bytes_ignored = 0;
            s->trigger_qa = 0;
            s->quick_adapts++;
            done = 1;
        }
        s->achieved_bytes = 0;
        s->qa_end_ps = now + s->base_rtt_ps + s->target_ps;
    }
    if (done) {
        s->inc_bytes = 0;
        s->received_bytes = 0;
    }
    return done;
}

static void multiplicative_decrease(rs_nscc_state *s, const rs_nscc_params *p, int64_t now)
{
    s->increasing = 0;
    s->fi_count = 0;
    const double avg = s->avg_delay_ps;
    if (avg > (double)s->target_ps && now - s->last_dec_ps > s->base_rtt_ps) {
        s->cwnd *= maxd(1.0 - p->gamma * (avg - (double)s->target_ps) / avg, 1.0 - p->max_md);
        s->last_dec_ps = now;
        s->md_decreases++;
    }
}

static void proportional_increase(rs_nscc_state *s, const rs_nscc_params *p, uint64_t acked, int64_t delay)
{
    if (delay < p->fast_increase_delay_ps) { /* fast increase: a whole window at ~zero delay */
        s->fi_count += acked;
        if ((double)s->fi_count > s->cwnd || s->increasing) {
            s->cwnd += (double)acked * s->fi_scale;
            s->increasing = 1;
            s->fast_increases++;
            return;
        }
    } else {
        s->fi_count = 0;
    }
    s->increasing = 0;
    s->inc_bytes += s->alpha * (double)acked * (double)(s->target_ps - delay);
    s->prop_increases++;
}

static void fulfill(rs_nscc_state *s, const rs_nscc_params *p, int64_t now)
{
    s->cwnd += s->inc_bytes / s->cwnd;
    if (now - s->last_adjust_ps >= p->base_rtt_ps) {
        s->cwnd += s->eta;
        s->last_adjust_ps = now;
    }
    s->inc_bytes = 0;
    s->received_bytes = 0;
}

void rs_nscc_on_ack(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t acked, int64_t rtt_ps,
                    int ecn, uint64_t inflight)
{
    s->acks++;
    s->achieved_bytes += acked;
    s->received_bytes += acked;
    s->bytes_ignored += acked;
    ecn = ecn != 0;
    int64_t delay;
    if (rtt_ps >= 0) {
        if (rtt_ps < s->base_rtt_ps) { /* a smaller base RTT: the BDP and the max window follow */
            s->base_rtt_ps = rtt_ps;
            if (!p->max_cwnd_bytes)
                s->max_cwnd = maxd(1.5 * bdp(s->line_bps, rtt_ps), s->min_cwnd);
        }
        delay = rtt_ps - s->base_rtt_ps;
        update_delay(s, p, delay, ecn);
    } else {
        delay = (int64_t)s->avg_delay_ps;
    }
    s->last_delay_ps = delay;
    if (quick_adapt(s, p, now_ps, 0, ecn, delay, inflight))
        return;
    if (!ecn && delay >= s->target_ps) {
        s->inc_bytes += s->fi * (double)acked;
        s->fair_increases++;
    } else if (!ecn) {
        proportional_increase(s, p, acked, delay);
    } else if (delay >= s->target_ps) {
        multiplicative_decrease(s, p, now_ps);
    } else {
        s->noops++;
    }
    bounds(s);
    if (s->received_bytes > p->adjust_bytes || now_ps - s->last_adjust_ps > p->base_rtt_ps)
        fulfill(s, p, now_ps);
    bounds(s);
}

void rs_nscc_on_loss(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t lost_bytes, int trimmed)
{
    s->losses++;
    s->trims += trimmed != 0;
    s->bytes_ignored += lost_bytes;
    update_delay(s, p, p->base_rtt_ps, 1); /* the network RTT stands for the trimming threshold */
    s->trigger_qa = 1;
    /* the bytes in flight now are unknown here: what was sent before the loss is stale anyway, so
     * QuickAdapt ignores marked feedback for one window */
    if (quick_adapt(s, p, now_ps, 1, 1, 0, (uint64_t)s->cwnd))
        return;
    s->cwnd -= (double)lost_bytes;
    bounds(s);
}

uint64_t rs_nscc_window(const rs_nscc_state *s, const rs_nscc_params *p)
{
    uint64_t w = (uint64_t)s->cwnd;
    return w ? w : 1;
}

/* ---- rs_cc_algo adapter (RoCE QPs: an ACK per packet, RTT stamps, the CE echo) ---- */
_Static_assert(sizeof(rs_nscc_state) <= RS_CC_STATE_BYTES, "NSCC state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_nscc_params) <= RS_CC_PARAMS_BYTES, "NSCC parameters must fit the host's CC blob");

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_nscc_init(st, p, line, now); }
static void algo_ack(void *st, const void *p, const rs_cc_ack *a)
{
    rs_nscc_on_ack(st, p, a->now_ps, a->acked_bytes, a->rtt_ps, a->ce_echo, a->inflight_bytes);
}
static void algo_loss(void *st, const void *p, int64_t now, uint64_t lost, int trimmed)
{
    rs_nscc_on_loss(st, p, now, lost, trimmed);
}
static double algo_rate(const void *st, const void *p) { return 0.0; } /* window only, unpaced */
static uint64_t algo_window(const void *st, const void *p) { return rs_nscc_window(st, p); }

const rs_cc_algo rs_cc_nscc = {
    .name = "nscc",
    .kind = RS_CC_NSCC,
    .flags = RS_CC_WANTS_ACKS | RS_CC_WANTS_RTT,
    .params_size = sizeof(rs_nscc_params),
    .state_size = sizeof(rs_nscc_state),
    .init = algo_init,
    .on_ack = algo_ack,
    .rate_bps = algo_rate,
    .window_bytes = algo_window,
    .on_loss = algo_loss,
};
