/* TIMELY: RTT-gradient rate control.
 *
 * Source: Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter", SIGCOMM 2015
 * (sec. 4, Algorithm 1).  The paper updates the rate once per completion event of a segment
 * (16-64 KB) with that segment's RTT; here an update happens when the ACKs pass the end of the
 * segment (segment_bytes), using the RTT sample of the ACK that completes it.  With
 * segment_bytes = 0 an update happens once per window of data (the ACKs pass what was sent at the
 * previous update), as the HPCC authors' ns-3 simulator runs TIMELY (rdma-hw.cc
 * RdmaHw::UpdateRateTimely).  Per update, with the sample rtt:
 *
 *   new_diff = rtt - prev_rtt;  prev_rtt = rtt
 *   rtt_diff <- (1 - alpha) rtt_diff + alpha new_diff;   g = rtt_diff / min_rtt
 *   rtt < T_low            ─▶ R <- R + delta
 *   rtt > T_high           ─▶ R <- R (1 - beta (1 - T_high / rtt))
 *   g <= 0                 ─▶ R <- R + delta, or + hai_factor delta once hai_after such updates
 *                             came in a row (HAI)
 *   g > 0                  ─▶ R <- R max(0, 1 - beta g)
 *   then R in [R_min, R_max]; the QP is paced at R.
 *
 * ACKs: the paper's NIC timestamps each segment's completion; here the packet that ends a segment
 * (segment 0: the first packet after an update) asks for an ACK and the others do not, so the
 * responder sends about one ACK per update (plus the requester's own: the last packet of a
 * message, every 65th), and the update uses that ACK's sample.
 *
 * The HAI count counts consecutive updates in the gradient <= 0 branch (Algorithm 1: "N = 5 if
 * gradient < 0 for five completion events"); any other update resets it.  The first update only
 * records prev_rtt.  TIMELY has no window.
 *
 * Parameters (rs_timely_params), defaults in rdmasim/cc_timely.py:
 *   alpha          0.875       ns-3 TimelyAlpha (the paper's EWMA weight)
 *   beta           0.8         paper sec. 5; ns-3 TimelyBeta
 *   t_low          50 us       paper; ns-3 TimelyTLow
 *   t_high         500 us      paper; ns-3 TimelyTHigh
 *   min_rtt        20 us       paper; ns-3 TimelyMinRtt
 *   ai (delta)     10 Mb/s     paper (10 Gb/s NICs); ns-3 run.py scales it: RATE_AI = bw/10 x 10 Mb/s
 *   hai_after      5           paper: N = 5 completion events
 *   hai_factor     5           paper: step N delta
 *   min_rate       1 Gb/s      ns-3 run.py MIN_RATE (the paper names none)
 *   max_rate       0 (line)
 *   initial_rate   0 (= max)   ns-3: a QP starts at its maximum rate
 *   segment        16 KB       paper: 16-64 KB segments */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_timely.h"

void rs_timely_init(rs_timely_state *s, const rs_timely_params *p, double line_bps)
{
    memset(s, 0, sizeof *s);
    s->max_bps = p->max_rate_bps > 0 && p->max_rate_bps < line_bps ? p->max_rate_bps : line_bps;
    s->rate_bps = p->initial_rate_bps > 0 && p->initial_rate_bps < s->max_bps ? p->initial_rate_bps : s->max_bps;
    s->want_sample = 1; /* the first packet asks: its ACK is the first completion */
}

int rs_timely_ack_request(rs_timely_state *s, const rs_timely_params *p, uint32_t payload)
{
    s->sent_bytes += payload;
    if (p->segment_bytes ? s->sent_bytes < s->next_ask : !s->want_sample)
        return 0;
    s->next_ask = s->sent_bytes + p->segment_bytes;
    s->want_sample = 0;
    return 1;
}

static void update(rs_timely_state *s, const rs_timely_params *p, int64_t rtt)
{
    s->updates++;
    if (!s->prev_rtt_ps) { /* first completion: nothing to differentiate yet */
        s->prev_rtt_ps = rtt;
        return;
    }
    double new_diff = (double)(rtt - s->prev_rtt_ps);
    s->prev_rtt_ps = rtt;
    s->rtt_diff_ps = (1.0 - p->alpha) * s->rtt_diff_ps + p->alpha * new_diff;
    s->gradient = s->rtt_diff_ps / (double)p->min_rtt_ps;
    double r = s->rate_bps;
    if (rtt < p->t_low_ps) {
        r += p->ai_bps;
        s->neg_count = 0;
        s->low_increases++;
    } else if (rtt > p->t_high_ps) {
        r *= 1.0 - p->beta * (1.0 - (double)p->t_high_ps / (double)rtt);
        s->neg_count = 0;
        s->high_decreases++;
    } else if (s->gradient <= 0) {
        s->neg_count++;
        int hai = s->neg_count >= p->hai_after;
        r += hai ? p->hai_factor * p->ai_bps : p->ai_bps;
        s->gradient_increases++;
        s->hai_increases += (uint64_t)hai;
    } else {
        double c = 1.0 - p->beta * s->gradient;
        r *= c > 0 ? c : 0.0;
        s->neg_count = 0;
        s->gradient_decreases++;
    }
    if (r < p->min_rate_bps)
        r = p->min_rate_bps;
    s->rate_bps = r < s->max_bps ? r : s->max_bps;
}

void rs_timely_on_ack(rs_timely_state *s, const rs_timely_params *p, uint64_t acked, uint64_t inflight,
                      int64_t rtt_ps)
{
    s->acked_pos += acked;
    if (rtt_ps < 0) {
        /* no sample (Karn, a repeated ACK): the segment completes on a later ACK; ask again */
        if (s->started && s->acked_pos >= s->next_update_pos) {
            s->want_sample = 1;
            s->next_ask = s->sent_bytes;
        }
        return;
    }
    s->rtt_last_ps = rtt_ps;
    if (!s->rtt_samples || rtt_ps < s->rtt_min_ps)
        s->rtt_min_ps = rtt_ps;
    s->rtt_samples++;
    if (s->started && s->acked_pos < s->next_update_pos)
        return;
    s->started = 1;
    update(s, p, rtt_ps);
    /* the next completion: one segment on, or (0) everything sent by now acknowledged */
    s->next_update_pos = s->acked_pos + (p->segment_bytes ? p->segment_bytes : inflight + 1);
    s->want_sample = 1;
}

/* ---- rs_cc_algo adapter ---- */
_Static_assert(sizeof(rs_timely_state) <= RS_CC_STATE_BYTES, "TIMELY state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_timely_params) <= RS_CC_PARAMS_BYTES, "TIMELY parameters must fit the host's CC blob");

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_timely_init(st, p, line); }
static void algo_ack(void *st, const void *p, const rs_cc_ack *a)
{
    rs_timely_on_ack(st, p, a->acked_bytes, a->inflight_bytes, a->rtt_ps);
}
static double algo_rate(const void *st, const void *p) { return ((const rs_timely_state *)st)->rate_bps; }
static int algo_ack_request(void *st, const void *p, uint32_t payload, uint64_t inflight)
{
    return rs_timely_ack_request(st, p, payload);
}

const rs_cc_algo rs_cc_timely = {
    .name = "timely",
    .kind = RS_CC_TIMELY,
    .flags = RS_CC_WANTS_ACKS | RS_CC_WANTS_RTT | RS_CC_ASKS_BLIND,
    .params_size = sizeof(rs_timely_params),
    .state_size = sizeof(rs_timely_state),
    .init = algo_init,
    .on_ack = algo_ack,
    .rate_bps = algo_rate,
    .ack_request = algo_ack_request,
};
