/* 802.1Qbb priority flow control frame (protocol.md 6.1): a MAC Control frame to the
 * reserved multicast 01:80:C2:00:00:01 with opcode 0x0101, a class-enable vector and
 * eight pause times in quanta; zero padded to the 60-byte Ethernet minimum. */
#include <string.h>

#include "rdmasim/codec.h"
#include "pfc.h"
#include "wire.h"

static const uint8_t pfc_dst_mac[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

int rs_pfc_encode(const rs_pkt *p, uint8_t *out, size_t cap)
{
    if (p->pfc_class_enable > 0xFFu) /* high octet is reserved, must be zero */
        return RS_CODEC_ERR_BAD_FIELD;
    if (cap < RS_ETH_MIN_FRAME_NOFCS)
        return RS_CODEC_ERR_SHORT;

    memset(out, 0, RS_ETH_MIN_FRAME_NOFCS);
    memcpy(out, pfc_dst_mac, 6);
    memcpy(out + 6, p->src_mac, 6);
    rs_put16(out + 12, RS_ETHERTYPE_MAC_CONTROL);
    rs_put16(out + 14, RS_MAC_CONTROL_PFC);
    rs_put16(out + 16, p->pfc_class_enable);
    for (int i = 0; i < 8; i++)
        rs_put16(out + 18 + 2 * i, p->pfc_quanta[i]);
    return (int)RS_ETH_MIN_FRAME_NOFCS;
}

int rs_pfc_decode(const uint8_t *buf, size_t len, rs_pkt *p)
{
    if (len < RS_ETH_HDR_BYTES + 2u)
        return RS_CODEC_ERR_SHORT;
    /* Legacy 802.3x PAUSE (0x0001) and other MAC Control opcodes are not ours. */
    if (rs_get16(buf + 14) != RS_MAC_CONTROL_PFC)
        return RS_CODEC_ERR_NOT_ROCE;
    if (len < RS_ETH_MIN_FRAME_NOFCS) /* a MAC discards runts before looking at them */
        return RS_CODEC_ERR_RUNT;
    if (memcmp(buf, pfc_dst_mac, sizeof pfc_dst_mac) != 0) /* 802.1Qbb: only this address */
        return RS_CODEC_ERR_PFC_DST;

    p->kind = RS_PKT_PFC;
    memcpy(p->dst_mac, buf, 6);
    memcpy(p->src_mac, buf + 6, 6);
    p->pfc_class_enable = rs_get16(buf + 16);
    for (int i = 0; i < 8; i++)
        p->pfc_quanta[i] = rs_get16(buf + 18 + 2 * i);
    if (p->pfc_class_enable > 0xFFu)
        return RS_CODEC_ERR_BAD_FIELD;
    return RS_CODEC_OK;
}
