/* The semantic sublayer's READ (UE specification 1.0): the reader sends one READ request, a PDS
 * request with no payload whose standard SES header carries the read length (request_length);
 * the host holding the data executes it once the PDS took it, and returns the bytes as SES
 * responses with data: PDS requests of the data holder's own, each with the 20-byte response-
 * with-data header (next header 5: opcode UET_RESPONSE_W_DATA, return code, the READ's message id
 * as read_req_message_id, payload length, modified length = the read length, message offset;
 * offsets as Wireshark's packet-uet.c reads them, codec/uet_codec.c writes them).  The reader
 * places them like any data and acknowledges them on the PDS; neither the request nor the data
 * gets an SES response of its own: each completes on its PDS acknowledgement.  A READ the data
 * holder refuses (beyond its buffer: BAD_ADDR; a write-only buffer: OP_VIOLATION; ses.c) moves no
 * data: the request's ACKs carry the SES response with that return code, and the READ ends on it.
 *
 * The responses travel on the READ request's PDC, in its target-to-initiator direction (as the
 * specification returns them): a PDC is one context with a PSN space per direction, so the
 * responses have PSNs of their own from 0 and the data holder's PDC id as spdcid, the reader's as
 * dpdcid; they need no SYN (the PDC exists: the request created the data holder's half) and end
 * with the PDC's one close, which the reader sends once its request is acknowledged and the data
 * holder has the ACKs of every response (endpoint.c defers it till then).  The simulator keeps the
 * reverse direction's PDS state in a record of its own (read_req names the request's) that holds
 * no PDC id. */
#include "uet/uet.h"

void rs_ses_read_fill(const rs_pdc *c, const rs_pds_tx *tx, rs_pkt *p)
{
    rs_uet_hdr *h = &p->uet;
    if (c->read_role == RS_UET_READ_REQ) {
        h->request_length = c->read_len; /* the read length (the request itself carries no bytes) */
        return;
    }
    h->next_hdr = RS_UET_NH_RSP_DATA;
    h->ses_opcode = RS_UET_RSP_RESPONSE_W_DATA;
    h->ses_rc = RS_UET_RC_OK;
    h->ses_flags = 0; /* not on the wire: placement reads message_offset */
    h->read_msg_id = c->read_msg_id;
    h->mod_length = (uint32_t)c->msg_len;
    h->message_offset = tx->off;
    h->request_length = 0;
    h->initiator = 0;
    h->mem_key = 0;
    h->buffer_offset = 0;
    h->header_data = 0;
}

rs_pdc *rs_ses_read_execute(rs_uet *u, rs_pdc *c)
{
    if (c->read_resp || c->tgt_rc != RS_UET_RC_OK)
        return c->read_resp;
    u->next_src = c->src_buf; /* the bytes at the data holder, the reader's buffer */
    u->next_dst = c->dst_buf;
    u->next_dst_len = c->dst_len;
    u->next_read_role = RS_UET_READ_RESP;
    u->next_read_msg_id = c->msg_id;
    u->next_read_req = c; /* on c's PDC, data holder -> reader */
    c->read_resp = rs_uet_start(u, c->dst, c->src, c->read_len, c->read_prio, RS_UET_RSP_RESPONSE_W_DATA, &c->prm,
                                c->flow_ref);
    u->next_src = u->next_dst = NULL;
    u->next_dst_len = 0;
    u->next_read_role = 0;
    u->next_read_req = NULL;
    return c->read_resp;
}

int rs_ses_read_acked(rs_pdc *c, int pds_done)
{
    if (!c->read_role || !pds_done || c->ses_done)
        return 0;
    c->ses_done = 1;
    c->ses_rc = RS_UET_RC_OK;
    c->ses_mod_len = (uint32_t)c->msg_len;
    return 1;
}

int rs_ses_read_answered(const rs_pdc *c)
{
    /* a READ the data holder refused (rs_ses_target_check): its error in the request's ACKs */
    return c->read_role == 0 || (c->read_role == RS_UET_READ_REQ && c->tgt_rc != RS_UET_RC_OK);
}
