/* Swift: delay-based window control.
 *
 * Source: Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
 * Datacenter", SIGCOMM 2020 (sec. 3, Algorithm 1; sec. 3.5 target scaling).  Per ACK with a delay
 * sample (the NIC-to-NIC RTT: rdmasim has no host stack, so Swift's fabric delay is the whole RTT
 * and its endpoint-delay loop is not modelled), num_acked = acked bytes / packet_bytes:
 *
 *   target = base_target + hops x h + clamp(fs_alpha / sqrt(cwnd) + fs_beta, 0, fs_range)
 *            fs_alpha = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd)),
 *            fs_beta  = -fs_alpha / sqrt(fs_max_cwnd)
 *   delay < target ─▶ cwnd += ai x num_acked / cwnd   (cwnd >= 1: ai packets per RTT)
 *                     cwnd += ai x num_acked          (cwnd < 1)
 *   delay >= target and at least one RTT since the last decrease
 *                  ─▶ cwnd *= max(1 - beta (delay - target) / delay, 1 - max_mdf)
 *   cwnd in [min_cwnd, max_cwnd]; window = cwnd packets; below one packet the QP sends one at a
 *   time, paced one RTT / cwnd apart (rate_bps).
 *
 * ACKs: a packet asks for one every cwnd / acks_per_window packets and when it fills the window
 * (so the window never waits for the requester's 65-packet cadence); num_acked counts what each
 * covers, so coalesced ACKs grow the window as single ones would.  acks_per_window 0 asks on every
 * packet.
 *
 * The hop count is a parameter (the paper reads it from the IP TTL; rdmasim's ACKs carry no TTL
 * back): set it from the topology (rdmasim.cc_swift.SwiftParams.for_path).  Loss and
 * retransmission timeouts do not reach the algorithm (Swift's RTO/fast-recovery decrease is
 * not modelled).
 *
 * Parameters (rs_swift_params), defaults in rdmasim/cc_swift.py:
 *   ai 1 packet/RTT, beta 0.8, max_mdf 0.5, fs_min_cwnd 0.1, fs_max_cwnd 100 packets,
 *   min_cwnd 0.001 packets, acks_per_window 8 (rdmasim's); base_target, h, hops and fs_range
 *   depend on the fabric (the paper sets them per deployment): SwiftParams.for_path derives
 *   them from the base RTT. */
#include <math.h>
#include <string.h>

#include "rdmasim/cc.h"
#include "rdmasim/cc_swift.h"

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static double cwnd_cap(const rs_swift_params *p) { return p->max_cwnd > 0 ? p->max_cwnd : INFINITY; }

void rs_swift_init(rs_swift_state *s, const rs_swift_params *p, double line_bps)
{
    memset(s, 0, sizeof *s);
    double span = 1.0 / sqrt(p->fs_min_cwnd) - 1.0 / sqrt(p->fs_max_cwnd);
    s->fs_alpha_ps = span > 0 ? (double)p->fs_range_ps / span : 0.0;
    s->fs_beta_ps = -s->fs_alpha_ps / sqrt(p->fs_max_cwnd);
    double w = p->init_cwnd;
    if (w <= 0) /* one bandwidth x target product at the line rate */
        w = line_bps * (double)p->base_target_ps * 1e-12 / 8.0 / (double)p->packet_bytes;
    s->cwnd = clampd(w < 1.0 && p->init_cwnd <= 0 ? 1.0 : w, p->min_cwnd, cwnd_cap(p));
    s->target_ps = rs_swift_target(s, p);
}

int64_t rs_swift_target(const rs_swift_state *s, const rs_swift_params *p)
{
    double fs = clampd(s->fs_alpha_ps / sqrt(s->cwnd) + s->fs_beta_ps, 0.0, (double)p->fs_range_ps);
    return p->base_target_ps + (int64_t)p->hops * p->hop_scale_ps + (int64_t)(fs + 0.5) /* fs >= 0 */;
}

void rs_swift_on_ack(rs_swift_state *s, const rs_swift_params *p, int64_t now_ps, uint64_t acked, int64_t rtt_ps)
{
    s->acks++;
    if (rtt_ps < 0)
        return; /* no delay sample (Karn, a repeated ACK): nothing to compare */
    s->rtt_last_ps = rtt_ps;
    if (!s->rtt_samples || rtt_ps < s->rtt_min_ps)
        s->rtt_min_ps = rtt_ps;
    s->rtt_samples++;
    const double num_acked = (double)acked / (double)p->packet_bytes;
    s->target_ps = rs_swift_target(s, p);
    double w = s->cwnd;
    if (rtt_ps < s->target_ps) {
        w += w >= 1.0 ? p->ai * num_acked / w : p->ai * num_acked;
        s->increases += acked > 0;
    } else if (!s->decreased || now_ps - s->last_decrease_ps >= rtt_ps) {
        double f = 1.0 - p->beta * (double)(rtt_ps - s->target_ps) / (double)rtt_ps;
        if (f < 1.0 - p->max_mdf) {
            f = 1.0 - p->max_mdf;
            s->capped_decreases++;
        }
        w *= f;
        s->decreased = 1;
        s->last_decrease_ps = now_ps;
        s->decreases++;
    } else {
        s->held++;
    }
    s->cwnd = clampd(w, p->min_cwnd, cwnd_cap(p));
}

int rs_swift_ack_request(rs_swift_state *s, const rs_swift_params *p, uint64_t inflight)
{
    if (!p->acks_per_window)
        return 1;
    s->since_ask++;
    int fills = inflight + p->packet_bytes > rs_swift_window(s, p); /* the next packet would wait */
    if (!fills && (double)s->since_ask < s->cwnd / (double)p->acks_per_window)
        return 0;
    s->since_ask = 0;
    return 1;
}

uint64_t rs_swift_window(const rs_swift_state *s, const rs_swift_params *p)
{
    uint64_t w = (uint64_t)(s->cwnd * (double)p->packet_bytes);
    return w ? w : 1; /* below one packet: one at a time (the NIC lets one go when none is in flight) */
}

double rs_swift_rate(const rs_swift_state *s, const rs_swift_params *p)
{
    if (s->cwnd >= 1.0)
        return 0.0;
    /* one packet per RTT / cwnd: the pacer spaces packets by wire bits / rate */
    int64_t rtt = s->rtt_samples ? s->rtt_last_ps : s->target_ps;
    uint32_t wire = s->last_wire_bytes ? s->last_wire_bytes : p->packet_bytes;
    return (double)wire * 8.0 * s->cwnd * 1e12 / (double)rtt;
}

/* ---- rs_cc_algo adapter ---- */
_Static_assert(sizeof(rs_swift_state) <= RS_CC_STATE_BYTES, "Swift state must fit the per-QP CC storage");
_Static_assert(sizeof(rs_swift_params) <= RS_CC_PARAMS_BYTES, "Swift parameters must fit the host's CC blob");

static void algo_init(void *st, const void *p, double line, int64_t now) { rs_swift_init(st, p, line); }
static void algo_ack(void *st, const void *p, const rs_cc_ack *a)
{
    rs_swift_on_ack(st, p, a->now_ps, a->acked_bytes, a->rtt_ps);
}
static void algo_sent(void *st, const void *p, uint64_t wire_bytes, int64_t now)
{
    ((rs_swift_state *)st)->last_wire_bytes = (uint32_t)wire_bytes;
}
static double algo_rate(const void *st, const void *p) { return rs_swift_rate(st, p); }
static int algo_ack_request(void *st, const void *p, uint32_t payload, uint64_t inflight)
{
    return rs_swift_ack_request(st, p, inflight);
}
static uint64_t algo_window(const void *st, const void *p) { return rs_swift_window(st, p); }

const rs_cc_algo rs_cc_swift = {
    .name = "swift",
    .kind = RS_CC_SWIFT,
    .flags = RS_CC_WANTS_ACKS | RS_CC_WANTS_RTT,
    .params_size = sizeof(rs_swift_params),
    .state_size = sizeof(rs_swift_state),
    .init = algo_init,
    .on_ack = algo_ack,
    .on_sent = algo_sent,
    .rate_bps = algo_rate,
    .window_bytes = algo_window,
    .ack_request = algo_ack_request,
};
