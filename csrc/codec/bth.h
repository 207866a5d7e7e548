/* The transport headers (BTH and the extension headers after it) are the same on every link layer:
 * roce_codec.c owns the opcode table and their layout, and ib_codec.c puts them behind an LRH
 * instead of Ethernet / IPv4 / UDP.  Private to csrc/codec. */
#ifndef RDMASIM_CODEC_BTH_H
#define RDMASIM_CODEC_BTH_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/packet.h"

/* Check p's transport fields; *flags: its opcode's row, *ext: extension header bytes, *pad: the
 * BTH pad count (payload to a 4-byte multiple).  Returns RS_CODEC_OK or a negative status. */
int rs_bth_check(const rs_pkt *p, uint16_t *flags, size_t *ext, size_t *pad);
/* Write the 12-byte BTH with pad count `pad`; then the extension headers (returns their bytes). */
void rs_bth_put(const rs_pkt *p, size_t pad, uint8_t *bth);
size_t rs_bth_put_ext(const rs_pkt *p, uint16_t flags, uint8_t *b);
/* Receive: the opcode's row, extension bytes and pad count of the BTH at `bth` (opcode known, TVer 0);
 * whether `payload_len` bytes of payload suit that opcode; the BTH and extension fields into p. */
int rs_bth_parse(const uint8_t *bth, uint16_t *flags, size_t *ext, size_t *pad);
int rs_bth_payload_ok(uint16_t flags, size_t payload_len);
void rs_bth_get(const uint8_t *bth, uint16_t flags, rs_pkt *p);
/* An ICRC on the wire: least-significant byte first (IBA and RoCEv2 alike). */
void rs_put_icrc(uint8_t *b, uint32_t crc);
/* The ICRC value a packet carries: `crc`, or kept wrong for a packet known to carry a bad one
 * (rs_pkt.icrc_bad / icrc_xor). */
uint32_t rs_wire_icrc(const rs_pkt *p, uint32_t crc);
/* Put p's payload at b, `hdrs` bytes into a frame of which the caller wants `want` bytes.  When the
 * wanted prefix ends in the payload, copy that much and return the prefix's length (no pad, no
 * CRCs follow); else copy all of it and `pad` zero bytes, set *end after them and return 0. */
size_t rs_put_payload(const rs_pkt *p, uint8_t *b, size_t hdrs, size_t want, size_t pad, uint8_t **end);

/* RFC 1071 checksum of a 20-byte IPv4 header as it stands (0 over a header with a good checksum). */
uint16_t rs_ipv4_checksum(const uint8_t *ip);
/* The IPv4 and UDP headers of a frame over UDP port `dport` (RoCEv2 4791, UET 4793) at ip, for an
 * IP datagram of ip_len bytes; the UDP source port is p's (its entropy). */
void rs_put_ipv4_udp(const rs_pkt *p, uint8_t *ip, size_t ip_len, uint16_t dport);
/* p's Ethernet addresses and its IPv4/UDP fields (TOS, id, TTL, addresses, UDP source port) from a
 * frame already checked to be IPv4/UDP. */
void rs_get_eth_ipv4_udp(const uint8_t *frame, rs_pkt *p);

#endif
