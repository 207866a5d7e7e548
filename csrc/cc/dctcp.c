/* DCTCP-style ECN control for RDMA, as the HPCC authors' ns-3 simulator runs it.
 *
 * Sources: Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010 (sec. 3.1: the sender keeps
 * alpha, the fraction of marked bytes per window of data, alpha <- (1 - g) alpha + g F with
 * g = 1/16, and cuts cwnd <- cwnd (1 - alpha/2) at most once per window); its RDMA form in the ns-3
 * simulator of Li et al., "HPCC", SIGCOMM 2019 (github.com/alibaba-edu/High-Precision-Congestion-
 * Control, simulation/src/point-to-point/model/rdma-hw.cc RdmaHw::HandleAckDctcp, rdma-queue-pair.cc
 * GetWin, simulation/run.py for its "dctcp" settings), which acts on a rate and derives the window
 * from it.  Per ACK, in this order:
 *
 *   ACK (acked bytes, CE-marked bytes) ─▶ batch += acked, marked += CE bytes
 *     ACKs passed the end of the alpha window? ─▶ F = marked / batch, alpha <- (1-g) alpha + g F,
 *                                                  next window ends at what is sent now
 *     in CWR and ACKs passed cwr_end?          ─▶ leave CWR
 *     ACK carries CE and not in CWR            ─▶ R <- max(R_min, R (1 - alpha/2)), enter CWR
 *                                                  until what is sent now is acknowledged
 *     not in CWR and an alpha window ended     ─▶ R <- min(R_max, R + R_AI)
 *   window = W_max x R / R_max (var_win; at least 1 byte), or W_max; pacing at R (pace)
 *
 * One difference from ns-3: F counts CE-marked payload bytes over acknowledged bytes, exactly
 * (the responder echoes the marked bytes each ACK covers); ns-3 divides marked ACKs by packets
 * in the window, the same with its one ACK per packet, which the NIC gives DCTCP too
 * (RS_CC_WANTS_ACKS).  The first ACK only opens the first alpha window, as in ns-3.
 *
 * Parameters (rs_dctcp_params), defaults in rdmasim/cc_dctcp.py:
 *   g             1/16          DCTCP paper sec. 3.4; run.py EWMA_GAIN 0.0625
 *   initial_alpha 1             rdma-queue-pair.cc: dctcp.m_alpha = 1
 *   ai_bps        615 Mb/s      run.py DCTCP_RATE_AI: one 1 KB MTU per 13 us RTT
 *   min_rate_bps  1 Gb/s        run.py MIN_RATE 1000Mb/s
 *   max_rate_bps  0 (line)
 *   window_bytes  0 (none)      run.py HAS_WIN 1: the BDP (the caller knows it: rdmasim.cc_dctcp)
 *   var_win       1             run.py VAR_WIN 1
 *   pace          1             run.py RATE_BOUND 1
 *   ack_every     1             run.py L2_ACK_INTERVAL 1 (an ACK per packet); the DCTCP paper's
 *                               delayed ACKs use 2.  The responder sums the CE-marked bytes over
 *                               the packets an ACK covers, so F is exact whatever the value. */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_dctcp.h"

void rs_dctcp_init(rs_dctcp_state *s, const rs_dctcp_params *p, double line_bps)
{
    memset(s, 0, sizeof *s);
    s->max_bps = p->max_rate_bps > 0 && p->max_rate_bps < line_bps ? p->max_rate_bps : line_bps;
    s->rate_bps = s->max_bps;
    s->alpha = p->initial_alpha;
}

void rs_dctcp_on_ack(rs_dctcp_state *s, const rs_dctcp_params *p, uint64_t acked, uint64_t inflight,
                     uint64_t ce_bytes, int ce_echo)
{
    s->acked_pos += acked;
    const uint64_t sent_pos = s->acked_pos + inflight; /* ns-3's snd_nxt */
    const int ce = ce_bytes > 0 || ce_echo;
    s->acks++;
    s->ce_acks += (uint64_t)ce;
    s->batch_acked += acked;
    s->batch_ce += ce_bytes;
    int new_batch = 0;
    if (!s->started) { /* first ACK: the first alpha window runs to what is sent now */
        s->started = 1;
        s->batch_end = sent_pos;
        s->batch_acked = s->batch_ce = 0;
        new_batch = 1;
    } else if (s->acked_pos > s->batch_end) {
        double f = s->batch_acked ? (double)s->batch_ce / (double)s->batch_acked : 0.0;
        if (f > 1.0)
            f = 1.0;
        s->alpha = (1.0 - p->g) * s->alpha + p->g * f;
        s->alpha_updates++;
        s->batch_end = sent_pos;
        s->batch_acked = s->batch_ce = 0;
        new_batch = 1;
    }
    if (s->in_cwr && s->acked_pos > s->cwr_end)
        s->in_cwr = 0;
    if (ce && !s->in_cwr) {
        double r = s->rate_bps * (1.0 - s->alpha / 2.0);
        s->rate_bps = r > p->min_rate_bps ? r : p->min_rate_bps;
        s->in_cwr = 1;
        s->cwr_end = sent_pos;
        s->cuts++;
    }
    if (!s->in_cwr && new_batch) {
        double r = s->rate_bps + p->ai_bps;
        s->rate_bps = r < s->max_bps ? r : s->max_bps;
        s->increases++;
    }
}

int rs_dctcp_ack_request(rs_dctcp_state *s, const rs_dctcp_params *p, uint32_t payload, uint64_t inflight)
{
    const uint64_t w = rs_dctcp_window(s, p);
    if (++s->unasked >= p->ack_every || (w && inflight + payload >= w)) {
        s->unasked = 0;
        return 1;
    }
    return 0;
}

uint64_t rs_dctcp_window(const rs_dctcp_state *s, const rs_dctcp_params *p)
{
    if (!p->window_bytes)
        return 0;
    if (!p->var_win)
        return p->window_bytes;
    uint64_t w = (uint64_t)((double)p->window_bytes * s->rate_bps / s->max_bps);
    return w ? w : 1; /* ns-3 GetWin: must be > 0 (the NIC still lets one packet go) */
}

/* ---- rs_cc_algo adapter ---- */
_Static_assert(sizeof(rs_dctcp_state) <= RS_CC_STATE_BYTES, "DCTCP state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_dctcp_params) <= RS_CC_PARAMS_BYTES, "DCTCP parameters must fit the host's CC blob");

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_dctcp_init(st, p, line); }
static void algo_ack(void *st, const void *p, const rs_cc_ack *a)
{
    rs_dctcp_state *s = st;
    if (a->rtt_ps >= 0) { /* kept for users (qp.cc_state()); the rules above ignore them */
        s->rtt_last_ps = a->rtt_ps;
        if (!s->rtt_samples || a->rtt_ps < s->rtt_min_ps)
            s->rtt_min_ps = a->rtt_ps;
        s->rtt_samples++;
    }
    rs_dctcp_on_ack(s, p, a->acked_bytes, a->inflight_bytes, a->ce_bytes, a->ce_echo);
}
static double algo_rate(const void *st, const void *p)
{
    return ((const rs_dctcp_params *)p)->pace ? ((const rs_dctcp_state *)st)->rate_bps : 0.0;
}
static uint64_t algo_window(const void *st, const void *p) { return rs_dctcp_window(st, p); }
static int algo_ack_request(void *st, const void *p, uint32_t payload, uint64_t inflight)
{
    return rs_dctcp_ack_request(st, p, payload, inflight);
}
static int algo_ack_all(const void *p) { return ((const rs_dctcp_params *)p)->ack_every <= 1; }

const rs_cc_algo rs_cc_dctcp = {
    .name = "dctcp",
    .kind = RS_CC_DCTCP,
    .flags = RS_CC_WANTS_ACKS | RS_CC_WANTS_RTT, /* RTT: statistics for users */
    .params_size = sizeof(rs_dctcp_params),
    .state_size = sizeof(rs_dctcp_state),
    .init = algo_init,
    .on_ack = algo_ack,
    .rate_bps = algo_rate,
    .window_bytes = algo_window,
    .ack_request = algo_ack_request,
    .ack_all = algo_ack_all,
};
