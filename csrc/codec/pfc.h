/* 802.1Qbb PFC frame encode/decode (private to csrc/codec; rs_encode/rs_decode dispatch here). */
#ifndef RDMASIM_CODEC_PFC_H
#define RDMASIM_CODEC_PFC_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/packet.h"

/* MAC header 14 + opcode 2 + class-enable vector 2 + 8 quanta x 2. */
#define RS_PFC_BODY_BYTES (RS_ETH_HDR_BYTES + 2u + 2u + 16u)

int rs_pfc_encode(const rs_pkt *p, uint8_t *out, size_t cap);
/* Called once buf[12..14) is EtherType 0x8808; the caller zeroed `p`.  A whole frame: shorter
 * than 60 bytes is RS_CODEC_ERR_RUNT; any destination but 01:80:C2:00:00:01 RS_CODEC_ERR_PFC_DST. */
int rs_pfc_decode(const uint8_t *buf, size_t len, rs_pkt *p);

#endif
