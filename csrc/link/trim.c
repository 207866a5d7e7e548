/* Packet trimming in switches (see trim.h). */
#include "link/trim.h"

#include "rdmasim/codec.h"

/* Cut pkt to its headers and count it on egress port out_idx; returns the header's frame length. */
static uint32_t cut(rs_switch *sw, rs_pkt *pkt, uint32_t out_idx)
{
    pkt->payload_len = 0; /* the payload block stays attached; it goes back to the pool with pkt */
    pkt->trimmed = 1;
    /* a RoCE frame's ICRC covers the payload cut off: its receiver finds it wrong and drops it
     * (a transport that trims carries no such end-to-end check over its payload) */
    if (pkt->kind == RS_PKT_ROCE)
        pkt->icrc_bad = 1;
    pkt->frame_len = (uint16_t)rs_frame_len(pkt);
    sw->ports[out_idx].stats.trims++;
    return pkt->frame_len;
}

uint32_t rs_trim_on_enqueue(rs_switch *sw, rs_pkt *pkt, uint32_t out_idx, uint32_t prio, uint32_t *bytes)
{
    if (pkt->trimmed)
        return sw->cfg.trim_prio;
    uint64_t queued = sw->mmu.eg_bytes[(size_t)out_idx * RS_NPRIO + prio];
    if (queued + *bytes <= sw->cfg.trim_threshold_bytes)
        return prio;
    *bytes = cut(sw, pkt, out_idx);
    return sw->cfg.trim_prio;
}

int rs_trim_instead_of_drop(rs_switch *sw, rs_pkt *pkt, uint32_t out_idx, uint32_t *prio, uint32_t *bytes)
{
    if (!sw->cfg.trim || !pkt->trim_ok || pkt->trimmed)
        return 0;
    *bytes = cut(sw, pkt, out_idx);
    *prio = sw->cfg.trim_prio;
    return 1;
}
