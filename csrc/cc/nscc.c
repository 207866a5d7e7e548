/* NSCC (placeholder: full window rules follow). */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_nscc.h"

void rs_nscc_init(rs_nscc_state *s, const rs_nscc_params *p, double line_bps, int64_t now_ps)
{
    memset(s, 0, sizeof *s);
    s->max_cwnd = p->max_cwnd_bytes ? (double)p->max_cwnd_bytes
                                    : 1.5 * line_bps * (double)p->base_rtt_ps * 1e-12 / 8.0;
    s->cwnd = p->init_cwnd_bytes ? (double)p->init_cwnd_bytes : s->max_cwnd;
    s->base_rtt_ps = p->base_rtt_ps;
    s->last_adjust_ps = now_ps;
}

void rs_nscc_on_ack(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t acked, int64_t rtt_ps,
                    int ecn, uint64_t inflight)
{
    s->acks++;
}

void rs_nscc_on_loss(rs_nscc_state *s, const rs_nscc_params *p, int64_t now_ps, uint64_t lost_bytes, int trimmed)
{
    s->losses++;
}

uint64_t rs_nscc_window(const rs_nscc_state *s, const rs_nscc_params *p)
{
    uint64_t w = (uint64_t)s->cwnd;
    return w > p->min_cwnd_bytes ? w : (p->min_cwnd_bytes ? p->min_cwnd_bytes : 1);
}

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
static double algo_rate(const void *st, const void *p) { return 0.0; }
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
