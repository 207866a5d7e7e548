/* UET load balancing by entropy: oblivious spraying and REPS (lb.h).
 *
 * REPS, from Bonato et al., "REPS: Recycled Entropy Packet Spraying for Adaptive Load Balancing and
 * Failure Mitigation" (arXiv 2407.21625), and the reference implementation in UEC htsim
 * (github.com/ultraethernet/uet-htsim, htsim/sim/uec_mp.cpp UecMpReps and buffer_reps.cpp):
 *   - an ACK echoing an entropy without ECN puts it into a circular buffer of buffer_size slots
 *     (htsim repsBufferSize 8), overwriting the oldest; each slot may be sent `reuse` times
 *     (htsim usable lifetime, 1);
 *   - the next packet takes the earliest fresh (unused) entropy of the buffer; when none is fresh
 *     it explores with a uniformly random entropy among the ev_count values (htsim: 256 paths);
 *   - ECN-marked ACKs and NACKs/trims recycle nothing: that entropy is not reused;
 *   - a timeout (no trimming notice: the packet vanished, a failed path) enters freezing mode
 *     (when not frozen and not exploring after a freeze): new good entropies still enter the buffer,
 *     but the sender stops exploring and cycles through the buffered entropies, used or not, in
 *     order; random entropies only while the buffer is empty.  htsim leaves freezing mode a fixed
 *     time later (exit_freeze_after, 10 ms) and then clears the buffer and explores with 16 random
 *     entropies; here the length of freezing is counted in data packets (freeze_packets), since
 *     the calls carry no time.
 * Oblivious: every packet a random entropy. */
#include "uet/lb.h"

#include <string.h>

void rs_uet_lb_cfg_default(rs_uet_lb_cfg *cfg, int kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->ev_count = 256;           /* htsim UecSrc::_path_entropy_size */
    cfg->buffer_size = 8;          /* htsim repsBufferSize */
    cfg->reuse = 1;                /* htsim repsMaxLifetimeEntropy */
    cfg->freezing = 1;             /* htsim repsUseFreezing */
    cfg->freeze_packets = 1000;    /* rdmasim's: ~ 12 us at 800 Gb/s with 4 KB packets */
    cfg->explore_after_freeze = 16; /* htsim: explore_counter = 16 after leaving freezing mode */
}

int rs_uet_lb_cfg_check(const rs_uet_lb_cfg *cfg)
{
    if (cfg->kind != RS_UET_LB_OBLIVIOUS && cfg->kind != RS_UET_LB_REPS)
        return 1;
    if (cfg->ev_count < 1 || cfg->ev_count > 65536)
        return 2;
    if (cfg->buffer_size < 1 || cfg->buffer_size > RS_UET_LB_BUF_MAX)
        return 3;
    if (cfg->reuse < 1 || cfg->reuse > 255)
        return 4;
    if (cfg->freezing != 0 && cfg->freezing != 1)
        return 5;
    if (cfg->freeze_packets < 1)
        return 6;
    return 0;
}

void rs_uet_lb_init(rs_uet_lb *lb, const rs_uet_lb_cfg *cfg, uint64_t seed)
{
    memset(lb, 0, sizeof *lb);
    lb->cfg = *cfg;
    rs_rng_seed(&lb->rng, seed, 0x4c42u /* "LB" */);
}

static uint16_t random_ev(rs_uet_lb *lb)
{
    lb->stats.explored++;
    return (uint16_t)(rs_rng_next(&lb->rng) % lb->cfg.ev_count);
}

static void buffer_clear(rs_uet_lb *lb)
{
    memset(lb->buf, 0, sizeof lb->buf);
    memset(lb->uses, 0, sizeof lb->uses);
    lb->head = lb->filled = lb->fresh = lb->frozen_pos = 0;
}

/* The earliest fresh slot: the fresh ones are the `fresh` slots written last, oldest first. */
static uint16_t take_fresh(rs_uet_lb *lb)
{
    const uint32_t n = lb->cfg.buffer_size;
    uint32_t i = (lb->head + n - lb->fresh) % n;
    for (uint32_t k = 0; k < n && !lb->uses[i]; k++) /* skip slots emptied out of order */
        i = (i + 1) % n;
    uint16_t ev = lb->buf[i];
    if (--lb->uses[i] == 0)
        lb->fresh--;
    lb->stats.recycled++;
    return ev;
}

/* Freezing mode: cycle through the written slots in order, fresh or not. */
static uint16_t take_frozen(rs_uet_lb *lb)
{
    uint32_t i = lb->frozen_pos % lb->filled;
    uint16_t ev = lb->buf[i];
    if (lb->uses[i] && --lb->uses[i] == 0)
        lb->fresh--;
    lb->frozen_pos = (i + 1) % lb->filled;
    lb->stats.recycled++;
    return ev;
}

uint16_t rs_uet_lb_next(rs_uet_lb *lb)
{
    lb->stats.sent++;
    if (lb->cfg.kind != RS_UET_LB_REPS)
        return random_ev(lb);
    if (lb->explore_left) {
        lb->explore_left--;
        return random_ev(lb);
    }
    if (lb->frozen) {
        if (--lb->frozen_left == 0) { /* the last packet of the freeze; then clear and explore */
            uint16_t ev = lb->filled ? take_frozen(lb) : random_ev(lb);
            lb->frozen = 0;
            buffer_clear(lb);
            lb->explore_left = lb->cfg.explore_after_freeze;
            return ev;
        }
        return lb->filled ? take_frozen(lb) : random_ev(lb);
    }
    return lb->fresh ? take_fresh(lb) : random_ev(lb);
}

void rs_uet_lb_on_ack(rs_uet_lb *lb, uint16_t entropy, int ecn)
{
    if (ecn) {
        lb->stats.acks_marked++;
        return;
    }
    lb->stats.acks_good++;
    if (lb->cfg.kind != RS_UET_LB_REPS)
        return;
    const uint32_t n = lb->cfg.buffer_size;
    if (!lb->uses[lb->head])
        lb->fresh++;
    lb->buf[lb->head] = entropy;
    lb->uses[lb->head] = (uint8_t)lb->cfg.reuse;
    lb->head = (lb->head + 1) % n;
    if (lb->filled < n)
        lb->filled++;
}

void rs_uet_lb_on_loss(rs_uet_lb *lb, uint16_t entropy)
{
    (void)entropy; /* a lost/trimmed packet's entropy is simply not recycled */
    lb->stats.losses++;
}

void rs_uet_lb_on_timeout(rs_uet_lb *lb)
{
    lb->stats.timeouts++;
    if (lb->cfg.kind != RS_UET_LB_REPS || !lb->cfg.freezing || lb->frozen || lb->explore_left)
        return;
    lb->frozen = 1;
    lb->frozen_left = lb->cfg.freeze_packets;
    lb->frozen_pos = 0;
    lb->stats.freezes++;
}
