/* PDC establishment and close (UE 1.0 PDS), sans-I/O: the rules; endpoint.c sends the frames.
 *
 * Establishment: the initiator sends its first requests with the SYN flag; a request with SYN
 * carries, where the target's PDC id goes, pdc_mode:4 (0: the default pool) | psn_offset:12 (the
 * PSN minus the PDC's start PSN), so that any of them tells the target the start PSN.  The target
 * creates its half of the PDC (allocates its PDC id) from the first SYN request it gets, finds it
 * again for later ones by the initiator's address and spdcid, and answers with ACKs whose spdcid is
 * its new id.  The initiator's first ACK ends SYN: from then on its requests carry the target's id.
 * Only RUD and ROD have PDCs; RUDI and UUD have neither SYN nor close.
 *
 * Close: when the initiator has nothing more to send and every PSN is acknowledged, it sends a
 * control packet of type CLOSE with the next PSN and the ACK request flag.  The target, once every
 * PSN below it arrived, acknowledges that PSN with an ACK and releases its half (its PDC id); the
 * initiator releases its half on that ACK.  A CLOSE lost, or its ACK, goes again at the retransmit
 * timeout; a target that has closed acknowledges a CLOSE again from the packet alone. */
#include "uet/uet.h"

static inline int32_t pdiff(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

int rs_pdc_has_setup(const rs_pdc *c) { return c->prm.mode == RS_UET_RUD || c->prm.mode == RS_UET_ROD; }

void rs_pdc_setup_init(rs_pdc *c)
{
    c->syn = (uint8_t)rs_pdc_has_setup(c);
    c->closing = 0;
    c->close_req_sent = 0;
    c->close_sends = 0;
    c->close_psn = 0;
}

uint16_t rs_pdc_syn_field(const rs_pdc *c, uint32_t psn)
{
    return (uint16_t)((uint32_t)(psn - c->start_psn) & RS_UET_SYN_PSN_OFF_MAX); /* pdc_mode 0 */
}

int rs_pdc_syn_accept(const rs_pdc *c, uint32_t psn, uint16_t field)
{
    return ((field >> 12) & 0xFu) == 0 && psn - (uint32_t)(field & RS_UET_SYN_PSN_OFF_MAX) == c->start_psn;
}

int rs_pdc_on_ack(rs_pdc *c, uint16_t target_id)
{
    if (!c->syn)
        return 0;
    c->syn = 0;
    c->dst_id = target_id;
    return 1;
}

int rs_pdc_close_begin(rs_pdc *c)
{
    if (!rs_pdc_has_setup(c) || !c->tgt_live)
        return 0;
    c->closing = 1;
    c->close_psn = c->next_psn; /* the next PSN: every one below is acknowledged */
    return 1;
}

int rs_pdc_close_acked(const rs_pdc *c, uint32_t cack_psn)
{
    return c->closing && pdiff(cack_psn, c->close_psn) >= 0;
}

int rs_pdc_close_ok(const rs_pdc *c, uint32_t psn) { return c->rx_cack + 1u == psn; }
