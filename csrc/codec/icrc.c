/* RoCEv2 invariant CRC (protocol.md 1.4).
 *
 * The ICRC covers IP header .. pad with the fields routers may rewrite (TOS/ECN, TTL,
 * IP checksum, UDP checksum, BTH FECN/BECN byte) forced to all-ones, preceded by
 * 8 bytes of 0xFF standing in for the IB LRH.  Only the 40..60 header bytes that
 * need masking are copied to the stack; the rest is CRC'd in place. */
#include <string.h>

#include "rdmasim/codec.h"
#include "wire.h"

/* Masked copy of IP + UDP + BTH: at most IPv6 40 + 8 + 12. */
#define MASKED_MAX (RS_IPV6_HDR_BYTES + RS_UDP_HDR_BYTES + RS_BTH_BYTES)

/* Copy the network header starting at `ip` into `hdr` with the variant fields set to
 * all-ones. Returns the IP header length, or 0 if the EtherType is neither IPv4 nor IPv6. */
static size_t mask_ip(const uint8_t *ip, uint16_t ethertype, uint8_t *hdr)
{
    if (ethertype == RS_ETHERTYPE_IPV4) {
        memcpy(hdr, ip, RS_IPV4_HDR_BYTES);
        hdr[1] = 0xFF;              /* TOS: DSCP + ECN */
        hdr[8] = 0xFF;              /* TTL */
        hdr[10] = hdr[11] = 0xFF;   /* header checksum */
        return RS_IPV4_HDR_BYTES;
    }
    if (ethertype == RS_ETHERTYPE_IPV6) {
        memcpy(hdr, ip, RS_IPV6_HDR_BYTES);
        hdr[0] |= 0x0F;             /* traffic class, high nibble (version stays) */
        hdr[1] = hdr[2] = hdr[3] = 0xFF; /* traffic class low nibble + flow label */
        hdr[7] = 0xFF;              /* hop limit */
        return RS_IPV6_HDR_BYTES;
    }
    return 0;
}

uint32_t rs_icrc(const uint8_t *frame, size_t len)
{
    static const uint8_t lrh_ones[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    uint8_t hdr[MASKED_MAX];

    /* Too short to hold the headers: CRC of nothing meaningful; callers validate lengths. */
    if (len < RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES + RS_BTH_BYTES)
        return 0;
    uint16_t ethertype = rs_get16(frame + 12);
    size_t ip_len = (ethertype == RS_ETHERTYPE_IPV6) ? RS_IPV6_HDR_BYTES : RS_IPV4_HDR_BYTES;
    size_t hdr_len = ip_len + RS_UDP_HDR_BYTES + RS_BTH_BYTES;
    if (len < RS_ETH_HDR_BYTES + hdr_len || mask_ip(frame + RS_ETH_HDR_BYTES, ethertype, hdr) == 0)
        return 0;

    memcpy(hdr + ip_len, frame + RS_ETH_HDR_BYTES + ip_len, RS_UDP_HDR_BYTES + RS_BTH_BYTES);
    hdr[ip_len + 6] = hdr[ip_len + 7] = 0xFF;            /* UDP checksum */
    hdr[ip_len + RS_UDP_HDR_BYTES + 4] = 0xFF;           /* BTH FECN, BECN, resv6 */

    uint32_t crc = rs_crc32(0, lrh_ones, sizeof lrh_ones);
    crc = rs_crc32(crc, hdr, hdr_len);
    return rs_crc32(crc, frame + RS_ETH_HDR_BYTES + hdr_len, len - RS_ETH_HDR_BYTES - hdr_len);
}
