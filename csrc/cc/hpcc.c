/* HPCC: window control from in-band network telemetry.
 *
 * Source: Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019 (sec. 3.3,
 * Algorithm 1), as the authors' ns-3 simulator runs it (alibaba-edu/High-Precision-Congestion-
 * Control, rdma-hw.cc: HandleAckHp, UpdateRateHp, FastReactHp; single-rate mode, MULTI_RATE 0 as
 * its run.py configures HPCC).  Every request collects one INT record per switch egress (timestamp,
 * bytes transmitted, queue length, line rate: link/switch.c) and every ACK echoes them.  Per ACK,
 * for each hop j against the same hop's record of the previous ACK:
 *
 *   tau_j  = ts_j - ts_j'                  txRate_j = (tx_j - tx_j') x 8 / tau_j
 *   u_j    = min(qlen_j, qlen_j') / (B_j T / 8) + txRate_j / B_j
 *   U      = max_j u_j, tau = the tau of that hop, clipped to T
 *   u      <- (u (T - tau) + U tau) / T       (EWMA over one base RTT; u starts at 1)
 *   u / eta >= 1 or inc_stage >= max_stage  ─▶ W = W_ref / (u / eta) + W_AI, stage 0
 *   otherwise                               ─▶ W = W_ref + W_AI, stage + 1
 *   W in [min_rate T, max_rate T]; the window is W bytes and the QP is paced at W / T.
 *
 * The reference window W_ref and the stage take the new values only on the first ACK that passes
 * what had been sent at the previous reference update (ns-3 lastUpdateSeq: once per RTT); the ACKs
 * in between set W from the unchanged W_ref (fast reaction) and keep the EWMA and the records
 * current.  The first ACK with INT only stores its records.  A hop without a previous record (the
 * path grew) or with no time between its two records only stores the new one.  ACKs without INT
 * (no switch on the path, or the INT pool ran dry) change nothing.
 *
 * ACK coalescing (ack_every n > 1; ns-3's L2_ACK_INTERVAL in packets): a request asks for an ACK
 * when it is the n-th since the last that asked, or when the next packet of its size would not fit
 * the window.  Nothing else changes: an ACK echoes the INT of the packet that asked (the last the
 * responder accepted, as ns-3's receiver copies the triggering packet's INT header), so tau and
 * txRate span the n packets it covers and the EWMA weighs U by that longer tau; its acked bytes
 * are the cumulative advance, so acked_pos passes last_update_pos exactly where the per-packet
 * ACKs would have (up to n - 1 packets later: ns-3's ack_seq > lastUpdateSeq the same way).  An
 * ACK can shrink the window below the packets in flight that did not ask; when the ACK of the
 * last packet that asked leaves only those, no ACK is coming, so the window lets one more packet
 * go (probe) and that packet asks.
 *
 * Parameters (rs_hpcc_params), defaults in rdmasim/cc_hpcc.py:
 *   eta         0.95          paper sec. 3.3; ns-3 TargetUtil
 *   max_stage   5             paper sec. 3.3; ns-3 MiThresh attribute (its run.py passes 0)
 *   fast_react  on            ns-3 FastReact (run.py: FAST_REACT 1)
 *   T           base RTT      a parameter (ns-3 GLOBAL_T 1: the fabric's largest base RTT)
 *   ai          line / 2500   ns-3 run.py: RATE_AI = 10 Mb/s x bw / 25 Gb/s; W_AI = ai x T
 *   min_rate    1 Gb/s        ns-3 run.py MIN_RATE
 *   max_rate    0 (line)      a QP starts at W = line rate x T (ns-3 starts at line rate)
 *   ack_every   1             ns-3 run.py L2_ACK_INTERVAL 1: an ACK per packet */
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_hpcc.h"

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

void rs_hpcc_init(rs_hpcc_state *s, const rs_hpcc_params *p, double line_bps)
{
    memset(s, 0, sizeof *s);
    const double t_ps = (double)p->base_rtt_ps;
    double max_bps = p->max_rate_bps > 0 && p->max_rate_bps < line_bps ? p->max_rate_bps : line_bps;
    double ai = p->ai_bps > 0 ? p->ai_bps : line_bps / 2500.0;
    s->w_max_bytes = max_bps * t_ps / 8e12;
    s->w_min_bytes = p->min_rate_bps < max_bps ? p->min_rate_bps * t_ps / 8e12 : s->w_max_bytes;
    s->w_ai_bytes = ai * t_ps / 8e12;
    s->w_bytes = s->w_ref_bytes = s->w_max_bytes;
    s->u = 1.0;
}

static void store(rs_hpcc_state *s, const rs_int_stack *in)
{
    for (uint32_t i = 0; i < in->n_hops; i++) {
        s->hop[i].ts_ps = in->hop[i].ts_ps;
        s->hop[i].tx_bytes = in->hop[i].tx_bytes;
        s->hop[i].qlen_bytes = in->hop[i].qlen_bytes;
    }
    s->n_hops = in->n_hops;
}

/* max_j u_j of the new records against the stored ones; *tau_ps gets that hop's interval.
 * Returns 0 when no hop had a previous record to compare with. */
static int measure(const rs_hpcc_state *s, const rs_hpcc_params *p, const rs_int_stack *in, double *U,
                   int64_t *tau_ps)
{
    int any = 0;
    const double t_s = (double)p->base_rtt_ps * 1e-12;
    for (uint32_t i = 0; i < in->n_hops && i < s->n_hops; i++) {
        const rs_int_hop *h = &in->hop[i];
        int64_t tau = h->ts_ps - s->hop[i].ts_ps;
        if (tau <= 0 || h->rate_bps == 0)
            continue;
        double B = (double)h->rate_bps;
        uint32_t q = h->qlen_bytes < s->hop[i].qlen_bytes ? h->qlen_bytes : s->hop[i].qlen_bytes;
        double tx_rate = (double)(h->tx_bytes - s->hop[i].tx_bytes) * 8.0 / ((double)tau * 1e-12);
        double u = (double)q * 8.0 / (B * t_s) + tx_rate / B;
        if (!any || u > *U) {
            *U = u;
            *tau_ps = tau;
        }
        any = 1;
    }
    return any;
}

void rs_hpcc_on_ack(rs_hpcc_state *s, const rs_hpcc_params *p, uint64_t acked, uint64_t inflight,
                    const rs_int_stack *intel)
{
    s->acks++;
    s->acked_pos += acked;
    const uint64_t next_pos = s->acked_pos + inflight; /* what has been sent so far */
    if (p->ack_every > 1) /* every packet that asked is acknowledged, some that did not are out */
        s->probe = inflight > 0 && s->acked_pos >= s->ask_pos;
    if (!intel || intel->n_hops == 0) {
        s->no_int++;
        return;
    }
    if (!s->started) { /* first feedback: a baseline for the deltas */
        s->started = 1;
        s->last_update_pos = next_pos;
        store(s, intel);
        return;
    }
    const int full = s->acked_pos > s->last_update_pos; /* a full RTT of feedback since the last */
    if (!full && !p->fast_react)
        return;
    double U = 0.0;
    int64_t tau = 0;
    int measured = measure(s, p, intel, &U, &tau);
    store(s, intel);
    if (measured) {
        if (tau > p->base_rtt_ps)
            tau = p->base_rtt_ps;
        const double T = (double)p->base_rtt_ps;
        s->u = (s->u * (T - (double)tau) + U * (double)tau) / T;
        s->u_last = U;
        const double c = s->u / p->eta;
        double w;
        uint32_t stage;
        int mi = c >= 1.0 || s->inc_stage >= p->max_stage;
        if (mi) {
            w = c > 0 ? s->w_ref_bytes / c + s->w_ai_bytes : s->w_max_bytes;
            stage = 0;
        } else {
            w = s->w_ref_bytes + s->w_ai_bytes;
            stage = s->inc_stage + 1;
        }
        s->w_bytes = clampd(w, s->w_min_bytes, s->w_max_bytes);
        if (full) {
            s->w_ref_bytes = s->w_bytes;
            s->inc_stage = stage;
            s->updates++;
            s->mi_updates += (uint64_t)mi;
        } else {
            s->fast_reacts++;
        }
    }
    if (full && next_pos > s->last_update_pos)
        s->last_update_pos = next_pos;
}

static uint64_t own_window(const rs_hpcc_state *s)
{
    uint64_t w = (uint64_t)(s->w_bytes + 0.5);
    return w ? w : 1; /* below one byte: one packet at a time (the NIC lets one go when none is in flight) */
}

uint64_t rs_hpcc_window(const rs_hpcc_state *s, const rs_hpcc_params *p)
{
    return s->probe ? UINT64_MAX : own_window(s);
}

/* ack_every 1 (or 0): every packet asks, whatever the state (the NIC asks algo_ack_all first) */
static int asks_every_packet(const rs_hpcc_params *p) { return p->ack_every <= 1; }

int rs_hpcc_ack_request(rs_hpcc_state *s, const rs_hpcc_params *p, uint32_t payload, uint64_t inflight)
{
    if (asks_every_packet(p))
        return 1;
    const uint64_t end = s->acked_pos + inflight; /* where this packet ends */
    /* end <= ask_pos: sent again after a rewind, the packet that asked may be gone: ask */
    /* the first packet after a reference update: its ACK makes the next one, so W_ref moves once
     * per RTT as with an ACK per packet (not n - 1 packets later, which would slow the additive
     * steps of small windows more than of large ones: unfair) */
    const int ref = end > s->last_update_pos && end - payload <= s->last_update_pos;
    if (++s->unasked >= p->ack_every || inflight + payload > own_window(s) || s->probe || ref ||
        end <= s->ask_pos) {
        s->unasked = 0;
        s->probe = 0;
        s->ask_pos = end;
        return 1;
    }
    return 0;
}

double rs_hpcc_rate(const rs_hpcc_state *s, const rs_hpcc_params *p)
{
    return s->w_bytes * 8.0 * 1e12 / (double)p->base_rtt_ps;
}

/* ---- rs_cc_algo adapter ---- */
_Static_assert(sizeof(rs_hpcc_state) <= RS_CC_STATE_BYTES, "HPCC state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_hpcc_params) <= RS_CC_PARAMS_BYTES, "HPCC parameters must fit the host's CC blob");

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_hpcc_init(st, p, line); }
static void algo_ack(void *st, const void *p, const rs_cc_ack *a)
{
    rs_hpcc_on_ack(st, p, a->acked_bytes, a->inflight_bytes, a->intel);
}
static int algo_ack_request(void *st, const void *p, uint32_t payload, uint64_t inflight)
{
    return rs_hpcc_ack_request(st, p, payload, inflight);
}
static int algo_ack_all(const void *p) { return asks_every_packet(p); }
static double algo_rate(const void *st, const void *p) { return rs_hpcc_rate(st, p); }
static uint64_t algo_window(const void *st, const void *p) { return rs_hpcc_window(st, p); }

const rs_cc_algo rs_cc_hpcc = {
    .name = "hpcc",
    .kind = RS_CC_HPCC,
    .flags = RS_CC_WANTS_ACKS | RS_CC_WANTS_INT,
    .params_size = sizeof(rs_hpcc_params),
    .state_size = sizeof(rs_hpcc_state),
    .init = algo_init,
    .on_ack = algo_ack,
    .rate_bps = algo_rate,
    .window_bytes = algo_window,
    .ack_request = algo_ack_request,
    .ack_all = algo_ack_all,
};
