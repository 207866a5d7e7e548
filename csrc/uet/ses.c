/* The semantic sublayer's target checks and responses (UE specification 1.0, SES response
 * header; offsets as Wireshark's packet-uet.c reads them, codec/uet_codec.c writes them).
 *
 * Target: each new data packet of a PDC's message is checked against the target buffer the
 * flow names (`target_bytes` long when the flow gives a length, else unbounded; `target_access`
 * what it grants): a WRITE's bytes beyond the buffer's end are BAD_ADDR, a SEND's are TOO_LONG (the
 * message is longer than its receive buffer), a WRITE to a read-only buffer is OP_VIOLATION; a
 * READ request is checked at the data holder the same way (its read length against the buffer; a
 * write-only buffer is OP_VIOLATION).  The first error sticks.  Once every byte of the message arrived, every ACK
 * carries the SES response header (next header 4): opcode UET_RESPONSE, the return code (OK or
 * the error), the message id, the job id and the modified length (the bytes placed: the whole
 * message, or 0 after an error).
 * Initiator: the message completes when a response for its message id arrives, with the return
 * code it carries; the PDS acknowledgement of every byte alone does not complete it. */
#include <string.h>

#include "rdmasim/ib.h"
#include "rdmasim/pool.h"
#include "uet/uet.h"

uint32_t rs_ses_wc_status(uint8_t rc)
{
    switch (rc) {
    case RS_UET_RC_OK:
        return RS_WC_STATUS_SUCCESS;
    case RS_UET_RC_BAD_MKEY: /* a bad rkey, an address beyond the region, access it does not grant */
    case RS_UET_RC_BAD_ADDR:
    case RS_UET_RC_OP_VIOLATION:
        return RS_WC_STATUS_REM_ACCESS_ERR;
    case RS_UET_RC_TOO_LONG:      /* a SEND longer than the receive buffer */
    case RS_UET_RC_UNDELIVERABLE: /* the target does not know the PDC (NACK INV_DPDCID) */
        return RS_WC_STATUS_REM_INV_REQ_ERR;
    default:
        return RS_WC_STATUS_REM_OP_ERR;
    }
}

void rs_ses_fill(rs_uet *u, const rs_pdc *c, rs_pkt *p, uint64_t off)
{
    if (!c->src_buf || !p->payload_len)
        return;
    if (rs_pkt_attach_payload(u->pool, p) != 0) {
        u->net->eng.failed = 1;
        rs_engine_fail(&u->net->eng, RS_ERR_NOMEM, "out of memory for a UET payload");
        return;
    }
    memcpy(p->payload, c->src_buf + off, p->payload_len);
}

void rs_ses_place(rs_pdc *c, const rs_pkt *pkt)
{
    if (!c->dst_buf || !pkt->payload || c->tgt_rc != RS_UET_RC_OK)
        return;
    const rs_uet_hdr *h = &pkt->uet;
    uint64_t at = h->buffer_offset + ((h->ses_flags & RS_UET_SES_SOM) ? 0 : h->message_offset);
    if (at + pkt->payload_len <= c->dst_len) /* rs_ses_target_check refused anything beyond */
        memcpy(c->dst_buf + at, pkt->payload, pkt->payload_len);
}

void rs_ses_target_check(rs_pdc *c, const rs_pkt *pkt)
{
    if (c->tgt_rc != RS_UET_RC_OK || c->read_role == RS_UET_READ_RESP) /* read data: checked at its source */
        return;
    const rs_uet_hdr *h = &pkt->uet;
    uint64_t off = (h->ses_flags & RS_UET_SES_SOM) ? 0 : h->message_offset;
    if (c->read_role == RS_UET_READ_REQ) { /* the data holder: the bytes the READ asks of its buffer */
        if (c->prm.target_access == RS_UET_ACCESS_WRITE)
            c->tgt_rc = RS_UET_RC_OP_VIOLATION;
        else if (c->prm.target_bytes && h->buffer_offset + h->request_length > c->prm.target_bytes)
            c->tgt_rc = RS_UET_RC_BAD_ADDR;
        return;
    }
    if (c->ses_opcode == RS_UET_SES_WRITE && c->prm.target_access == RS_UET_ACCESS_READ)
        c->tgt_rc = RS_UET_RC_OP_VIOLATION;
    else if (c->prm.target_bytes && h->buffer_offset + off + pkt->payload_len > c->prm.target_bytes)
        /* a WRITE addresses memory beyond the buffer; a SEND is longer than its receive buffer */
        c->tgt_rc = c->ses_opcode == RS_UET_SES_SEND ? RS_UET_RC_TOO_LONG : RS_UET_RC_BAD_ADDR;
}

void rs_ses_response(const rs_pdc *c, rs_uet_hdr *h)
{
    h->next_hdr = RS_UET_NH_RSP;
    h->ses_opcode = RS_UET_RSP_RESPONSE;
    h->ses_rc = c->tgt_rc;
    h->msg_id = c->msg_id;
    h->index_gen = 0;
    h->job_id = 0;
    h->mod_length = c->tgt_rc == RS_UET_RC_OK ? (uint32_t)c->msg_len : 0;
}

int rs_ses_unanswered(rs_pdc *c)
{
    c->ses_done = 1;
    c->ses_rc = RS_UET_RC_OK;
    c->ses_mod_len = (uint32_t)c->msg_len;
    return 1;
}

int rs_ses_on_response(rs_pdc *c, const rs_pkt *pkt)
{
    const rs_uet_hdr *h = &pkt->uet;
    if (h->next_hdr != RS_UET_NH_RSP || h->msg_id != c->msg_id || c->ses_done)
        return 0;
    c->ses_done = 1;
    c->ses_rc = h->ses_rc;
    c->ses_mod_len = h->mod_length;
    return 1;
}
