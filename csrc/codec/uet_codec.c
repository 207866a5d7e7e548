/* Ultra Ethernet transport frames: rs_pkt (kind RS_PKT_UET) <-> Ethernet II / IPv4 / UDP 4793 /
 * PDS header / SES standard request header / payload.
 *
 * Layouts (UE specification 1.0, packet delivery sublayer header formats and semantic sublayer
 * standard request header; cross-checked field by field against the Wireshark 4.6 UET dissector,
 * epan/dissectors/packet-uet.c, and tests/unit/test_uet_codec.py decodes them with Python struct):
 *
 *   PDS prologue (every PDS header, 2 bytes): type:5 | next_hdr:4 | flags:7        (big-endian)
 *   RUD/ROD request (12): prologue, clear_psn_offset:16 (signed), psn:32, spdcid:16,
 *                         dpdcid:16 (with SYN: pdc_mode:4 | psn_offset:12)
 *   ACK (12):             prologue, ack_psn_offset:16 (signed), cack_psn:32, spdcid:16, dpdcid:16
 *   ACK_CC (32):          ACK, then cc_type:4 | cc_flags:4, mpr:8, sack_psn_offset:16 (signed),
 *                         sack_bitmap:64, cc_state:64
 *   RUDI request / response (8): prologue, reserved:16, pkt_id:32
 *   UUD request (4):      prologue, reserved:16
 *   CTRL (16):            prologue (its next-header bits: ctl_type), probe_opaque:16, psn:32,
 *                         spdcid:16, dpdcid:16, payload:32
 *   NACK (16):            prologue, nack_code:8, vendor_code:8, nack_psn:32, spdcid:16, dpdcid:16,
 *                         payload:32 (highest PSN received + 1)
 *   RUD/ROD CC request (16): the request, then ccc_id:8, credit_target:24
 *   CTRL (16):            prologue (ctl_type in the next_hdr bits), probe_opaque:16, psn:32,
 *                         spdcid:16, dpdcid:16, payload:32
 *   SES response (12, after an ACK / ACK_CC / NACK with next_hdr 4): list:2 | opcode:6,
 *                         ver:2 | return_code:6, message_id:16, resource_index_generation:8,
 *                         job_id:24, modified_length:32
 *   SES standard request (44): rsvd:2 | opcode:6, ver:2 | dc | ie | rel | hd | eom | som,
 *                         message_id:16, index_generation:8, job_id:24, rsvd:4 | pid_on_fep:12,
 *                         rsvd:4 | resource_index:12, buffer_offset:64, initiator:32,
 *                         memory_key/match_bits:64, then SOM: header_data:64, else
 *                         rsvd:18 | payload_length:14, message_offset:32; request_length:32 */
#include <stdint.h>
#include <string.h>

#include "rdmasim/codec.h"
#include "bth.h"
#include "wire.h"

#define L2L3 (RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES)

static size_t pds_bytes(uint8_t type)
{
    switch (type) {
    case RS_UET_PDS_RUD_REQ:
    case RS_UET_PDS_ROD_REQ:
        return RS_UET_PDS_REQ_BYTES;
    case RS_UET_PDS_RUD_CC_REQ:
    case RS_UET_PDS_ROD_CC_REQ:
        return RS_UET_PDS_CC_REQ_BYTES;
    case RS_UET_PDS_ACK:
        return RS_UET_PDS_ACK_BYTES;
    case RS_UET_PDS_ACK_CC:
        return RS_UET_PDS_ACK_CC_BYTES;
    case RS_UET_PDS_NACK:
        return RS_UET_PDS_NACK_BYTES;
    case RS_UET_PDS_RUDI_REQ:
    case RS_UET_PDS_RUDI_RESP:
        return RS_UET_PDS_RUDI_BYTES;
    case RS_UET_PDS_UUD_REQ:
        return RS_UET_PDS_UUD_BYTES;
    case RS_UET_PDS_CTRL:
        return RS_UET_PDS_CTRL_BYTES;
    default:
        return 0;
    }
}

static int is_request(uint8_t type)
{
    return type == RS_UET_PDS_RUD_REQ || type == RS_UET_PDS_ROD_REQ || type == RS_UET_PDS_RUDI_REQ ||
           type == RS_UET_PDS_UUD_REQ || type == RS_UET_PDS_RUD_CC_REQ || type == RS_UET_PDS_ROD_CC_REQ;
}

static int is_cc_request(uint8_t type) { return type == RS_UET_PDS_RUD_CC_REQ || type == RS_UET_PDS_ROD_CC_REQ; }

/* ACK / NACK: no SES header, or the SES response header */
static size_t rsp_bytes(uint8_t next_hdr) { return next_hdr == RS_UET_NH_RSP ? RS_UET_SES_RSP_BYTES : 0; }

/* PDS + SES header bytes of p, or 0 when p cannot be encoded. */
static size_t uet_hdr_bytes(const rs_pkt *p)
{
    size_t pds = pds_bytes(p->uet.type);
    if (!pds || p->uet.flags > 0x7Fu || p->uet.next_hdr > 0xFu)
        return 0;
    if (is_request(p->uet.type) && p->uet.next_hdr == RS_UET_NH_RSP_DATA) { /* read data */
        if (p->payload_len > RS_UET_MAX_PAYLOAD || p->uet.ses_opcode > 0x3Fu || p->uet.ses_rc > 0x3Fu ||
            p->uet.job_id > 0xFFFFFFu)
            return 0;
        return pds + RS_UET_SES_RSP_DATA_BYTES;
    }
    if (is_request(p->uet.type)) {
        if (p->uet.next_hdr != RS_UET_NH_REQ_STD || p->payload_len > RS_UET_MAX_PAYLOAD ||
            p->uet.ses_opcode > 0x3Fu || p->uet.job_id > 0xFFFFFFu || p->uet.pid_on_fep > 0xFFFu ||
            p->uet.resource_index > 0xFFFu)
            return 0;
        return pds + RS_UET_SES_STD_BYTES;
    }
    /* ACK / NACK / RUDI response: no data here; CTRL: next_hdr is its control type; an ACK or NACK
     * may carry the SES response header */
    if (p->payload_len)
        return 0;
    if (p->uet.type == RS_UET_PDS_CTRL)
        return pds;
    if (p->uet.next_hdr != RS_UET_NH_NONE && (p->uet.next_hdr != RS_UET_NH_RSP || p->uet.type == RS_UET_PDS_RUDI_RESP))
        return 0;
    if (p->uet.next_hdr == RS_UET_NH_RSP && (p->uet.ses_opcode > 0x3Fu || p->uet.ses_rc > 0x3Fu ||
                                             p->uet.job_id > 0xFFFFFFu))
        return 0;
    return pds + rsp_bytes(p->uet.next_hdr);
}

size_t rs_uet_frame_len(const rs_pkt *p)
{
    size_t h = uet_hdr_bytes(p);
    if (!h)
        return 0;
    size_t f = L2L3 + h + p->payload_len;
    return f < RS_ETH_MIN_FRAME_NOFCS ? RS_ETH_MIN_FRAME_NOFCS : f;
}

static void put_pds(const rs_pkt *p, uint8_t *b)
{
    const rs_uet_hdr *u = &p->uet;
    rs_put16(b, (uint16_t)((u->type << 11) | (u->next_hdr << 7) | u->flags));
    switch (u->type) {
    case RS_UET_PDS_RUD_REQ:
    case RS_UET_PDS_ROD_REQ:
    case RS_UET_PDS_RUD_CC_REQ:
    case RS_UET_PDS_ROD_CC_REQ:
        rs_put16(b + 2, (uint16_t)u->psn_off);
        rs_put32(b + 4, p->psn);
        rs_put16(b + 8, u->spdcid);
        rs_put16(b + 10, u->dpdcid);
        if (is_cc_request(u->type)) {
            b[12] = u->ccc_id;
            rs_put24(b + 13, u->credit_target & 0xFFFFFFu);
        }
        break;
    case RS_UET_PDS_ACK:
    case RS_UET_PDS_ACK_CC:
        rs_put16(b + 2, (uint16_t)u->psn_off);
        rs_put32(b + 4, u->cack_psn);
        rs_put16(b + 8, u->spdcid);
        rs_put16(b + 10, u->dpdcid);
        if (u->type == RS_UET_PDS_ACK_CC) {
            b[12] = (uint8_t)((u->cc_type << 4) | (u->cc_flags & 0xFu));
            b[13] = u->mpr;
            rs_put16(b + 14, (uint16_t)u->sack_off);
            rs_put64(b + 16, u->sack_bitmap);
            rs_put64(b + 24, u->cc_state);
        }
        break;
    case RS_UET_PDS_NACK:
        b[2] = u->nack_code;
        b[3] = 0; /* vendor code */
        rs_put32(b + 4, p->psn);
        rs_put16(b + 8, u->spdcid);
        rs_put16(b + 10, u->dpdcid);
        rs_put32(b + 12, u->nack_payload);
        break;
    case RS_UET_PDS_RUDI_REQ:
    case RS_UET_PDS_RUDI_RESP:
        rs_put16(b + 2, 0);
        rs_put32(b + 4, p->psn); /* pkt_id */
        break;
    case RS_UET_PDS_UUD_REQ:
        rs_put16(b + 2, 0);
        break;
    case RS_UET_PDS_CTRL:
        rs_put16(b + 2, (uint16_t)u->psn_off); /* probe_opaque */
        rs_put32(b + 4, p->psn);
        rs_put16(b + 8, u->spdcid);
        rs_put16(b + 10, u->dpdcid);
        rs_put32(b + 12, u->nack_payload);
        break;
    default:
        break;
    }
}

static void put_ses_rsp(const rs_uet_hdr *u, uint8_t *b)
{
    b[0] = u->ses_opcode & 0x3Fu; /* list 0 */
    b[1] = u->ses_rc & 0x3Fu;     /* version 0 */
    rs_put16(b + 2, u->msg_id);
    b[4] = u->index_gen;
    rs_put24(b + 5, u->job_id);
    rs_put32(b + 8, u->mod_length);
}

/* The SES response with data (UE 1.0; Wireshark's dissect_ses_resp_data): list:2 | opcode:6,
 * ver:2 | return_code:6, message_id:16, reserved:8, job_id:24, read_req_message_id:16,
 * reserved:2 | payload_length:14, modified_length:32, message_offset:32. */
static void put_ses_rsp_data(const rs_pkt *p, uint8_t *b)
{
    const rs_uet_hdr *u = &p->uet;
    b[0] = u->ses_opcode & 0x3Fu;
    b[1] = u->ses_rc & 0x3Fu;
    rs_put16(b + 2, u->msg_id);
    b[4] = 0;
    rs_put24(b + 5, u->job_id);
    rs_put16(b + 8, u->read_msg_id);
    rs_put16(b + 10, (uint16_t)(p->payload_len & 0x3FFFu));
    rs_put32(b + 12, u->mod_length);
    rs_put32(b + 16, u->message_offset);
}

static void put_ses_std(const rs_pkt *p, uint8_t *b)
{
    const rs_uet_hdr *u = &p->uet;
    b[0] = u->ses_opcode & 0x3Fu;
    b[1] = u->ses_flags;
    rs_put16(b + 2, u->msg_id);
    b[4] = u->index_gen;
    rs_put24(b + 5, u->job_id);
    rs_put16(b + 8, u->pid_on_fep & 0xFFFu);
    rs_put16(b + 10, u->resource_index & 0xFFFu);
    rs_put64(b + 12, u->buffer_offset);
    rs_put32(b + 20, u->initiator);
    rs_put64(b + 24, u->mem_key);
    if (u->ses_flags & RS_UET_SES_SOM) {
        rs_put64(b + 32, u->header_data);
    } else {
        rs_put32(b + 32, p->payload_len & 0x3FFFu);
        rs_put32(b + 36, u->message_offset);
    }
    rs_put32(b + 40, u->request_length);
}

int rs_uet_encode_prefix(const rs_pkt *p, uint8_t *out, size_t cap, size_t want, size_t *frame_len)
{
    size_t h = uet_hdr_bytes(p);
    if (!h)
        return RS_CODEC_ERR_BAD_FIELD;
    size_t frame = L2L3 + h + p->payload_len;
    size_t total = frame < RS_ETH_MIN_FRAME_NOFCS ? RS_ETH_MIN_FRAME_NOFCS : frame;
    if (frame_len)
        *frame_len = total;
    if (cap < total)
        return RS_CODEC_ERR_SHORT;
    memcpy(out, p->dst_mac, 6);
    memcpy(out + 6, p->src_mac, 6);
    rs_put16(out + 12, RS_ETHERTYPE_IPV4);
    rs_put_ipv4_udp(p, out + RS_ETH_HDR_BYTES, frame - RS_ETH_HDR_BYTES, RS_UET_UDP_PORT);
    uint8_t *b = out + L2L3;
    put_pds(p, b);
    size_t pds = pds_bytes(p->uet.type);
    if (is_request(p->uet.type) && p->uet.next_hdr == RS_UET_NH_RSP_DATA)
        put_ses_rsp_data(p, b + pds);
    else if (is_request(p->uet.type))
        put_ses_std(p, b + pds);
    else if (p->uet.type != RS_UET_PDS_CTRL && p->uet.next_hdr == RS_UET_NH_RSP)
        put_ses_rsp(&p->uet, b + pds);
    b += h;
    uint8_t *end = b;
    size_t cut = rs_put_payload(p, b, L2L3 + h, want, 0, &end);
    if (cut)
        return (int)cut;
    memset(end, 0, total - frame); /* Ethernet minimum-size padding */
    return (int)total;
}

int rs_uet_decode(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p)
{
    const uint8_t *ip = buf + RS_ETH_HDR_BYTES;
    const uint8_t *udp = ip + RS_IPV4_HDR_BYTES;
    size_t ip_len = rs_get16(ip + 2);
    if (ip_len < RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES + 2u)
        return RS_CODEC_ERR_BAD_LENGTH;
    if (RS_ETH_HDR_BYTES + ip_len > wire_len)
        return RS_CODEC_ERR_SHORT;
    if (rs_get16(udp + 4) != ip_len - RS_IPV4_HDR_BYTES)
        return RS_CODEC_ERR_BAD_LENGTH;
    if (L2L3 + 2u > len)
        return RS_CODEC_ERR_SHORT;
    const uint8_t *b = buf + L2L3;
    rs_uet_hdr *u = &p->uet;
    uint16_t pro = rs_get16(b);
    u->type = (uint8_t)(pro >> 11);
    u->next_hdr = (uint8_t)((pro >> 7) & 0xFu);
    u->flags = (uint8_t)(pro & 0x7Fu);
    size_t pds = pds_bytes(u->type);
    if (!pds)
        return RS_CODEC_ERR_BAD_OPCODE;
    int ctrl = u->type == RS_UET_PDS_CTRL;
    int rsp_data = is_request(u->type) && u->next_hdr == RS_UET_NH_RSP_DATA;
    size_t h = pds + (rsp_data ? RS_UET_SES_RSP_DATA_BYTES
                      : is_request(u->type) ? RS_UET_SES_STD_BYTES : ctrl ? 0 : rsp_bytes(u->next_hdr));
    if (rsp_data ? 0
        : is_request(u->type) ? u->next_hdr != RS_UET_NH_REQ_STD
        : ctrl              ? 0
                            : u->next_hdr != RS_UET_NH_NONE &&
                                  (u->next_hdr != RS_UET_NH_RSP || u->type == RS_UET_PDS_RUDI_RESP))
        return RS_CODEC_ERR_BAD_FIELD;
    if (L2L3 + h > len)
        return RS_CODEC_ERR_SHORT;
    if (ip_len < RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES + h)
        return RS_CODEC_ERR_BAD_LENGTH;
    size_t payload_len = ip_len - RS_IPV4_HDR_BYTES - RS_UDP_HDR_BYTES - h;
    if (payload_len > RS_UET_MAX_PAYLOAD || (payload_len && !is_request(u->type)))
        return RS_CODEC_ERR_BAD_LENGTH;
    rs_get_eth_ipv4_udp(buf, p);
    p->kind = RS_PKT_UET;
    switch (u->type) {
    case RS_UET_PDS_RUD_REQ:
    case RS_UET_PDS_ROD_REQ:
    case RS_UET_PDS_RUD_CC_REQ:
    case RS_UET_PDS_ROD_CC_REQ:
        u->psn_off = (int16_t)rs_get16(b + 2);
        p->psn = rs_get32(b + 4);
        u->spdcid = rs_get16(b + 8);
        u->dpdcid = rs_get16(b + 10);
        if (is_cc_request(u->type)) {
            u->ccc_id = b[12];
            u->credit_target = rs_get24(b + 13);
        }
        break;
    case RS_UET_PDS_ACK:
    case RS_UET_PDS_ACK_CC:
        u->psn_off = (int16_t)rs_get16(b + 2);
        u->cack_psn = rs_get32(b + 4);
        u->spdcid = rs_get16(b + 8);
        u->dpdcid = rs_get16(b + 10);
        if (u->type == RS_UET_PDS_ACK_CC) {
            u->cc_type = b[12] >> 4;
            u->cc_flags = b[12] & 0xFu;
            u->mpr = b[13];
            u->sack_off = (int16_t)rs_get16(b + 14);
            u->sack_bitmap = rs_get64(b + 16);
            u->cc_state = rs_get64(b + 24);
        }
        break;
    case RS_UET_PDS_RUDI_REQ:
    case RS_UET_PDS_RUDI_RESP:
        p->psn = rs_get32(b + 4); /* pkt_id */
        break;
    case RS_UET_PDS_UUD_REQ:
        break;
    case RS_UET_PDS_CTRL:
        u->psn_off = (int16_t)rs_get16(b + 2);
        p->psn = rs_get32(b + 4);
        u->spdcid = rs_get16(b + 8);
        u->dpdcid = rs_get16(b + 10);
        u->nack_payload = rs_get32(b + 12);
        break;
    default: /* NACK */
        u->nack_code = b[2];
        p->psn = rs_get32(b + 4);
        u->spdcid = rs_get16(b + 8);
        u->dpdcid = rs_get16(b + 10);
        u->nack_payload = rs_get32(b + 12);
        break;
    }
    if (rsp_data) {
        const uint8_t *s = b + pds;
        u->ses_opcode = s[0] & 0x3Fu;
        u->ses_rc = s[1] & 0x3Fu;
        u->msg_id = rs_get16(s + 2);
        u->job_id = rs_get24(s + 5);
        u->read_msg_id = rs_get16(s + 8);
        if ((rs_get16(s + 10) & 0x3FFFu) != payload_len)
            return RS_CODEC_ERR_BAD_LENGTH;
        u->mod_length = rs_get32(s + 12);
        u->message_offset = rs_get32(s + 16);
    } else if (is_request(u->type)) {
        const uint8_t *s = b + pds;
        u->ses_opcode = s[0] & 0x3Fu;
        u->ses_flags = s[1];
        u->msg_id = rs_get16(s + 2);
        u->index_gen = s[4];
        u->job_id = rs_get24(s + 5);
        u->pid_on_fep = rs_get16(s + 8) & 0xFFFu;
        u->resource_index = rs_get16(s + 10) & 0xFFFu;
        u->buffer_offset = rs_get64(s + 12);
        u->initiator = rs_get32(s + 20);
        u->mem_key = rs_get64(s + 24);
        if (u->ses_flags & RS_UET_SES_SOM) {
            u->header_data = rs_get64(s + 32);
        } else {
            if ((rs_get32(s + 32) & 0x3FFFu) != payload_len)
                return RS_CODEC_ERR_BAD_LENGTH;
            u->message_offset = rs_get32(s + 36);
        }
        u->request_length = rs_get32(s + 40);
    } else if (!ctrl && u->next_hdr == RS_UET_NH_RSP) {
        const uint8_t *s = b + pds;
        u->ses_opcode = s[0] & 0x3Fu;
        u->ses_rc = s[1] & 0x3Fu;
        u->msg_id = rs_get16(s + 2);
        u->index_gen = s[4];
        u->job_id = rs_get24(s + 5);
        u->mod_length = rs_get32(s + 8);
    }
    p->payload_len = (uint32_t)payload_len;
    if (RS_ETH_HDR_BYTES + ip_len > len) /* a capture cut short: no payload pointer */
        return RS_CODEC_OK;
    p->payload = payload_len ? (uint8_t *)(uintptr_t)(b + h) : NULL;
    return RS_CODEC_OK;
}
