/* Big-endian field access for the codec (private to csrc/codec).
 * Byte-wise so it works at any alignment and on any host byte order. */
#ifndef RDMASIM_CODEC_WIRE_H
#define RDMASIM_CODEC_WIRE_H

#include <stdint.h>

#define RS_ETHERTYPE_IPV4 0x0800u
#define RS_ETHERTYPE_IPV6 0x86DDu
#define RS_ETHERTYPE_MAC_CONTROL 0x8808u
#define RS_MAC_CONTROL_PFC 0x0101u
#define RS_IP_PROTO_UDP 17u
#define RS_IPV4_FLAG_DF 0x4000u
#define RS_IPV4_FLAG_MF 0x2000u
#define RS_IPV4_FRAG_OFFSET_MASK 0x1FFFu
#define RS_IPV6_HDR_BYTES 40u
#define RS_IETH_BYTES 4u
#define RS_FETH_BYTES 4u

static inline void rs_put16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

static inline void rs_put24(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)(v >> 16);
    b[1] = (uint8_t)(v >> 8);
    b[2] = (uint8_t)v;
}

static inline void rs_put32(uint8_t *b, uint32_t v)
{
    rs_put16(b, (uint16_t)(v >> 16));
    rs_put16(b + 2, (uint16_t)v);
}

static inline void rs_put64(uint8_t *b, uint64_t v)
{
    rs_put32(b, (uint32_t)(v >> 32));
    rs_put32(b + 4, (uint32_t)v);
}

static inline uint16_t rs_get16(const uint8_t *b)
{
    return (uint16_t)((b[0] << 8) | b[1]);
}

static inline uint32_t rs_get24(const uint8_t *b)
{
    return ((uint32_t)b[0] << 16) | ((uint32_t)b[1] << 8) | b[2];
}

static inline uint32_t rs_get32(const uint8_t *b)
{
    return ((uint32_t)rs_get16(b) << 16) | rs_get16(b + 2);
}

static inline uint64_t rs_get64(const uint8_t *b)
{
    return ((uint64_t)rs_get32(b) << 32) | rs_get32(b + 4);
}

#endif
