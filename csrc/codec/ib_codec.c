/* Native InfiniBand framing (link_layer RS_LL_IB): LRH / BTH / ext headers / payload / pad / ICRC /
 * VCRC (IBA vol. 1 ch. 7; docs/infiniband.md).  One subnet: LNH "IBA local", no GRH.  The BTH and
 * the extension headers are the RoCEv2 codec's own (bth.h); only what is around them differs. */
#include <string.h>

#include "rdmasim/codec.h"
#include "bth.h"
#include "wire.h"

/* Bytes from the LRH to the ICRC, inclusive: what LRH:PktLen counts, in 4-byte words. */
static int ib_layout(const rs_pkt *p, uint16_t *flags, size_t *ext, size_t *pad, size_t *words_bytes)
{
    if (p->kind != RS_PKT_ROCE) /* PFC and raw bytes are Ethernet's: there is no IB form */
        return RS_CODEC_ERR_BAD_FIELD;
    if (p->ib_sl > 15 || p->ib_vl > 15)
        return RS_CODEC_ERR_BAD_FIELD;
    int st = rs_bth_check(p, flags, ext, pad);
    if (st != RS_CODEC_OK)
        return st;
    *words_bytes = RS_IB_LRH_BYTES + RS_BTH_BYTES + *ext + p->payload_len + *pad + RS_ICRC_BYTES;
    return RS_CODEC_OK;
}

size_t rs_ib_frame_len(const rs_pkt *p)
{
    uint16_t f;
    size_t ext, pad, n;
    if (ib_layout(p, &f, &ext, &pad, &n) != RS_CODEC_OK)
        return 0;
    return n + RS_IB_VCRC_BYTES;
}

/* The ICRC of an IB local packet (IBA 7.8.1): CRC-32 as the Ethernet FCS over LRH .. pad, with the
 * fields a switch may change replaced by ones: LRH:VL (the high nibble of byte 0) and BTH:Resv8a
 * (byte 4: FECN, BECN and reserved bits).  LRH:SL and a GRH's fields change only at routers. */
uint32_t rs_ib_icrc(const uint8_t *pkt, size_t len)
{
    uint8_t hdr[RS_IB_LRH_BYTES + RS_BTH_BYTES];
    if (len < sizeof hdr)
        return 0;
    memcpy(hdr, pkt, sizeof hdr);
    hdr[0] |= 0xF0u;
    hdr[RS_IB_LRH_BYTES + 4] = 0xFFu;
    uint32_t crc = rs_crc32(0, hdr, sizeof hdr);
    return rs_crc32(crc, pkt + sizeof hdr, len - sizeof hdr);
}

static void put_lrh(const rs_pkt *p, size_t words_bytes, uint8_t *b)
{
    b[0] = (uint8_t)(p->ib_vl << 4);                   /* VL, LVer 0 */
    b[1] = (uint8_t)((p->ib_sl << 4) | RS_IB_LNH_LOCAL); /* SL, 2 reserved bits, LNH */
    rs_put16(b + 2, p->ib_dlid);
    rs_put16(b + 4, (uint16_t)(words_bytes / 4));       /* 5 reserved bits, PktLen (11 bits) */
    rs_put16(b + 6, p->ib_slid);
}

int rs_ib_encode_prefix(const rs_pkt *p, uint8_t *out, size_t cap, size_t want, size_t *frame_len)
{
    uint16_t f;
    size_t ext, pad, words_bytes;
    int st = ib_layout(p, &f, &ext, &pad, &words_bytes);
    if (st != RS_CODEC_OK)
        return st;
    size_t total = words_bytes + RS_IB_VCRC_BYTES;
    if (frame_len)
        *frame_len = total;
    if (cap < total)
        return RS_CODEC_ERR_SHORT;

    put_lrh(p, words_bytes, out);
    uint8_t *bth = out + RS_IB_LRH_BYTES;
    rs_bth_put(p, pad, bth);
    if ((p->tos & 3u) == 3u) /* a switch's congestion mark (ECN CE) is the BTH FECN bit on IB */
        bth[4] |= 0x80u;
    uint8_t *b = bth + RS_BTH_BYTES;
    b += rs_bth_put_ext(p, f, b);
    size_t cut = rs_put_payload(p, b, (size_t)(b - out), want, pad, &b);
    if (cut) /* the prefix ends in the payload: no pad, no CRCs */
        return (int)cut;
    rs_put_icrc(b, rs_wire_icrc(p, rs_ib_icrc(out, (size_t)(b - out))));
    b += RS_ICRC_BYTES;
    uint16_t vcrc = rs_ib_vcrc(out, (size_t)(b - out)); /* recomputed by every hop: always right */
    b[0] = (uint8_t)vcrc; /* least-significant byte first, as the ICRC */
    b[1] = (uint8_t)(vcrc >> 8);
    return (int)total;
}

int rs_ib_decode_captured(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p)
{
    memset(p, 0, sizeof *p);
    if (wire_len < len)
        wire_len = len;
    if (len < RS_IB_LRH_BYTES + RS_BTH_BYTES)
        return RS_CODEC_ERR_SHORT;
    if ((buf[0] & 0x0Fu) != 0) /* LVer */
        return RS_CODEC_ERR_BAD_FIELD;
    if ((buf[1] & 0x03u) != RS_IB_LNH_LOCAL) /* raw packets and GRH (LNH 3): not modelled */
        return RS_CODEC_ERR_NOT_ROCE;
    size_t words_bytes = (size_t)(rs_get16(buf + 4) & 0x07FFu) * 4;
    if (words_bytes + RS_IB_VCRC_BYTES > wire_len)
        return RS_CODEC_ERR_SHORT;
    const uint8_t *bth = buf + RS_IB_LRH_BYTES;
    uint16_t f;
    size_t ext, pad;
    int st = rs_bth_parse(bth, &f, &ext, &pad);
    if (st != RS_CODEC_OK)
        return st;
    if (RS_IB_LRH_BYTES + RS_BTH_BYTES + ext > len)
        return RS_CODEC_ERR_SHORT;
    size_t fixed = RS_IB_LRH_BYTES + RS_BTH_BYTES + ext + RS_ICRC_BYTES;
    if (words_bytes < fixed || words_bytes - fixed < pad)
        return RS_CODEC_ERR_BAD_LENGTH;
    size_t payload_len = words_bytes - fixed - pad;
    st = rs_bth_payload_ok(f, payload_len);
    if (st != RS_CODEC_OK)
        return st;

    p->kind = RS_PKT_ROCE;
    p->link_layer = RS_LL_IB;
    p->ib_vl = buf[0] >> 4;
    p->ib_sl = buf[1] >> 4;
    p->ib_dlid = rs_get16(buf + 2);
    p->ib_slid = rs_get16(buf + 6);
    rs_bth_get(bth, f, p);
    p->tos = p->fecn ? 0x03u : 0x02u; /* ECT(0), or CE where FECN says a switch marked it */
    p->ttl = 64;
    p->payload_len = (uint32_t)payload_len;
    if (words_bytes + RS_IB_VCRC_BYTES > len) /* cut short by a snaplen: no payload, no CRCs */
        return RS_CODEC_OK;
    p->payload = payload_len ? (uint8_t *)(uintptr_t)(bth + RS_BTH_BYTES + ext) : NULL;
    const uint8_t *icrc = buf + words_bytes - RS_ICRC_BYTES;
    uint32_t wire_icrc = (uint32_t)icrc[0] | ((uint32_t)icrc[1] << 8) | ((uint32_t)icrc[2] << 16) |
                         ((uint32_t)icrc[3] << 24);
    uint16_t wire_vcrc = (uint16_t)(buf[words_bytes] | (buf[words_bytes + 1] << 8));
    if (rs_ib_vcrc(buf, words_bytes) != wire_vcrc)
        return RS_CODEC_ERR_BAD_VCRC;
    if (rs_ib_icrc(buf, words_bytes - RS_ICRC_BYTES) != wire_icrc)
        return RS_CODEC_ERR_BAD_ICRC;
    return RS_CODEC_OK;
}

int rs_ib_decode(const uint8_t *buf, size_t len, rs_pkt *p)
{
    return rs_ib_decode_captured(buf, len, len, p);
}
