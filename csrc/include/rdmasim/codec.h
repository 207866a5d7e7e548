/* RoCEv2 (and PFC) wire codec: rs_pkt <-> exact frame bytes, ICRC, pcap.
 *
 * Frames are Ethernet II without FCS (as pcap LINKTYPE_ETHERNET stores them).
 * Plain C so cffi can parse it. */
#ifndef RDMASIM_CODEC_H
#define RDMASIM_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rdmasim/packet.h"

enum rs_codec_status {
    RS_CODEC_OK = 0,
    RS_CODEC_ERR_SHORT = -1,      /* buffer too small / frame truncated */
    RS_CODEC_ERR_NOT_ROCE = -2,   /* not IPv4/UDP 4791 nor a PFC frame */
    RS_CODEC_ERR_BAD_OPCODE = -3, /* opcode the codec does not know */
    RS_CODEC_ERR_BAD_LENGTH = -4, /* IP/UDP lengths inconsistent with the frame */
    RS_CODEC_ERR_BAD_ICRC = -5,   /* decoded, but the ICRC does not match */
    RS_CODEC_ERR_BAD_FIELD = -6,  /* field out of range (e.g. payload > 4096) */
    /* decode only: frames a RoCE NIC or a PFC-capable MAC drops on receive */
    RS_CODEC_ERR_BAD_IP_CSUM = -7, /* IPv4 header checksum does not match the header */
    RS_CODEC_ERR_IP_FRAGMENT = -8, /* an IPv4 fragment (MF set or offset nonzero): RoCEv2 is never fragmented */
    RS_CODEC_ERR_PFC_DST = -9,     /* a PFC frame not sent to 01:80:C2:00:00:01 (802.1Qbb) */
    RS_CODEC_ERR_RUNT = -10,       /* a whole PFC frame shorter than the 60-byte Ethernet minimum */
    RS_CODEC_ERR_BAD_VCRC = -11,   /* InfiniBand: the VCRC does not match (fields filled) */
};

/* Field conventions (both directions):
 *  - se, mig, fecn, becn, ackreq: any nonzero value encodes as 1; decode gives 0/1.
 *  - dest_qpn, psn, aeth_msn are 24-bit: larger values are RS_CODEC_ERR_BAD_FIELD.
 *  - imm: ImmDt on the wire is the big-endian encoding of p->imm.  IETH (SEND_*_WITH_INVALIDATE)
 *    also travels in p->imm (the rkey to invalidate), as verbs shares imm_data/invalidate_rkey.
 *  - PadCnt is derived from payload_len; TVer is 0; the UDP checksum is sent as 0.
 *  - FETH (FLUSH) travels in p->imm as well: the one 32-bit word, before the RETH on the wire.
 *  - Opcodes known: RC 0x00-0x14, 0x16, 0x17, 0x1C (FLUSH), 0x1D (ATOMIC_WRITE); UC 0x20-0x2B;
 *    CNP 0x81.  payload_len > 0 on an opcode that carries no data (READ_REQUEST, ACK, atomics,
 *    FLUSH, CNP) is RS_CODEC_ERR_BAD_FIELD.
 *  - The 802.1p priority is not on the wire (no VLAN tag is emitted). */

/* Bytes of extension headers (RETH, AETH, ImmDt, ...) that `opcode` carries after BTH,
 * or -1 for an opcode the codec does not know. */
int rs_opcode_ext_bytes(uint8_t opcode);

/* Length in bytes of the frame `p` encodes to (no FCS, padded to 60 B minimum),
 * or 0 if `p` cannot be encoded (unknown kind/opcode, field out of range). */
size_t rs_frame_len(const rs_pkt *p);
/* The 20-byte IPv4 header the encoder writes for RoCE packet p (UD receive: the GRH area). */
int rs_encode_ipv4_header(const rs_pkt *p, uint8_t out[20]);

/* Encode `p` into `out` (capacity `cap`). Returns the frame length, or a negative
 * rs_codec_status. Computes the IPv4 header checksum, pad count and ICRC. */
int rs_encode(const rs_pkt *p, uint8_t *out, size_t cap);
/* The first `want` bytes of the frame rs_encode would write (all of it when `want` >= its length):
 * headers always, payload bytes up to `want`, the ICRC only when `want` reaches it (a capture of
 * headers skips the copy and the CRC).  Returns the bytes valid in `out` (>= min(want, frame),
 * headers may be more), or a negative rs_codec_status; *frame_len gets the full frame length. */
int rs_encode_prefix(const rs_pkt *p, uint8_t *out, size_t cap, size_t want, size_t *frame_len);

/* Decode a frame into `p`. p->payload points into `buf` (not copied; NULL when
 * payload_len is 0). `p` is zeroed first, including next and simulator metadata.
 * Returns RS_CODEC_OK, or a negative status; with RS_CODEC_ERR_BAD_ICRC the
 * fields are filled. Bytes after the IP datagram (Ethernet padding) are ignored.
 * The IPv4 header checksum is checked (RS_CODEC_ERR_BAD_IP_CSUM; the ICRC does not cover the
 * header's variant fields), fragments are refused (RS_CODEC_ERR_IP_FRAGMENT), and a PFC frame
 * must go to the 802.1Qbb multicast address (RS_CODEC_ERR_PFC_DST) and be at least 60 bytes
 * (RS_CODEC_ERR_RUNT).  Never reads outside buf[0..len). */
int rs_decode(const uint8_t *buf, size_t len, rs_pkt *p);
/* rs_decode of a captured frame: `buf` holds the first `len` bytes of a `wire_len`-byte frame
 * (a pcap record's incl_len and orig_len).  Cut short (wire_len > len), every header must be in
 * buf; the fields are filled, payload_len is the frame's, payload is NULL and the ICRC is not
 * checked.  Otherwise exactly rs_decode. */
int rs_decode_captured(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p);

/* ICRC of a RoCEv2 frame (Ethernet + IPv4 or IPv6 ... up to, not including, the ICRC):
 * `len` excludes the 4 ICRC bytes. Returns the CRC value; on the wire it is
 * stored least-significant byte first. Returns 0 if the frame is too short to hold
 * IP + UDP + BTH or the EtherType is not IP (callers validate frames first). */
uint32_t rs_icrc(const uint8_t *frame, size_t len);

/* CRC-32 (IEEE 802.3 / zlib) continuing from `crc` (start with 0). */
uint32_t rs_crc32(uint32_t crc, const uint8_t *data, size_t len);

/* ---- InfiniBand framing (ib_codec.c, vcrc.c): packets whose link_layer is RS_LL_IB ----
 * LRH (8) / BTH / ext headers / payload / pad / ICRC (4) / VCRC (2); LNH "IBA local", no GRH.
 * rs_frame_len, rs_encode and rs_encode_prefix frame such a packet this way; the LRH takes ib_vl,
 * ib_sl, ib_dlid, ib_slid; PktLen counts LRH .. ICRC in 4-byte words; FECN is set also when the
 * packet's tos carries ECN CE.  ICRC and VCRC are stored least-significant byte first. */
#define RS_IB_LRH_BYTES 8u
#define RS_IB_VCRC_BYTES 2u
#define RS_IB_LNH_LOCAL 2u /* LRH:LNH: BTH follows the LRH */
/* Per packet on the wire besides the packet: the SDP and EGP delimiter symbols (1 each, IBA vol. 2
 * 8b/10b framing); no preamble, no inter-packet gap, no FCS. */
#define RS_IB_DELIM_BYTES 2u

/* Wire bytes a frame of p occupies beyond rs_frame_len(p): Ethernet's FCS, preamble + SFD and
 * inter-frame gap, or IB's packet delimiters.  What links serialise and pacers meter. */
static inline uint32_t rs_frame_wire_extra(const rs_pkt *p)
{
    return p->link_layer == RS_LL_IB ? RS_IB_DELIM_BYTES : RS_FCS_BYTES + RS_WIRE_OVERHEAD_BYTES;
}

size_t rs_ib_frame_len(const rs_pkt *p);
int rs_ib_encode_prefix(const rs_pkt *p, uint8_t *out, size_t cap, size_t want, size_t *frame_len);
/* Decode an IB packet starting at its LRH, as rs_decode_captured does a RoCE frame; a mismatching
 * VCRC is RS_CODEC_ERR_BAD_VCRC, then the ICRC RS_CODEC_ERR_BAD_ICRC (fields filled in both).
 * LNH other than local (GRH, raw) is RS_CODEC_ERR_NOT_ROCE. */
int rs_ib_decode(const uint8_t *buf, size_t len, rs_pkt *p);
int rs_ib_decode_captured(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p);
/* The ICRC of an IB local packet from its LRH to (not including) the ICRC: `len` bytes. */
uint32_t rs_ib_icrc(const uint8_t *pkt, size_t len);
/* The VCRC over `len` bytes (LRH .. ICRC). */
uint16_t rs_ib_vcrc(const uint8_t *data, size_t len);

/* ---- Ultra Ethernet transport over UDP (uet_codec.c): packets of kind RS_PKT_UET ----
 * Ethernet II / IPv4 / UDP (destination port 4793, source port = the entropy value) / PDS header /
 * SES header (requests: the 44-byte standard request header) / payload.  No ICRC and no
 * end-to-end CRC (the optional pds CRC is not modelled); the UDP checksum is sent as 0. */
#define RS_UET_UDP_PORT 4793u
/* pds.type */
enum rs_uet_pds_type {
    RS_UET_PDS_RUD_REQ = 2,
    RS_UET_PDS_ROD_REQ = 3,
    RS_UET_PDS_RUDI_REQ = 4,
    RS_UET_PDS_RUDI_RESP = 5,
    RS_UET_PDS_UUD_REQ = 6,
    RS_UET_PDS_ACK = 7,
    RS_UET_PDS_ACK_CC = 8,
    RS_UET_PDS_NACK = 10,
    RS_UET_PDS_CTRL = 11, /* control packet: the next-header bits hold the control type */
    RS_UET_PDS_RUD_CC_REQ = 13, /* RUD request with the 4-byte CC state (ccc_id, credit_target) */
    RS_UET_PDS_ROD_CC_REQ = 14,
};
/* control types of a CTRL packet (in its next-header bits) */
#define RS_UET_CTL_CLOSE 4u      /* the initiator closes the PDC (it gets an ACK for the packet's PSN) */
#define RS_UET_CTL_REQ_CLOSE 5u  /* the target asks the initiator to close */
#define RS_UET_CTL_CREDIT 7u     /* payload: credit allocation (RCCC grant) */
#define RS_UET_CTL_CREDIT_REQ 8u /* payload: credit request (RCCC) */
/* pds.next_hdr */
#define RS_UET_NH_NONE 0u
#define RS_UET_NH_REQ_STD 3u
#define RS_UET_NH_RSP 4u /* ACK / NACK: the 12-byte SES response header follows */
#define RS_UET_NH_RSP_DATA 5u /* request: the 20-byte SES response-with-data header follows (read data) */
/* ACK_CC cc_type */
#define RS_UET_CC_TYPE_NSCC 0u
#define RS_UET_CC_TYPE_CREDIT 1u
/* pds.flags of a RUD/ROD request, and of an ACK / NACK */
#define RS_UET_F_RETX 0x10u /* requests, ACKs, NACKs: retransmitted */
#define RS_UET_F_AR 0x08u   /* requests: ACK request */
#define RS_UET_F_SYN 0x04u  /* requests: first packets of a new PDC */
#define RS_UET_F_M 0x20u    /* ACK / NACK: the acknowledged request arrived ECN-marked */
/* SES opcodes and the standard header's flag bits */
#define RS_UET_SES_WRITE 0x01u
#define RS_UET_SES_SEND 0x05u
#define RS_UET_SES_EOM 0x02u
#define RS_UET_SES_SOM 0x01u
#define RS_UET_SES_READ 0x02u
/* SES response opcodes and return codes (the ones modelled) */
#define RS_UET_RSP_DEFAULT 0x00u
#define RS_UET_RSP_RESPONSE 0x01u
#define RS_UET_RSP_RESPONSE_W_DATA 0x02u
#define RS_UET_RC_OK 0x01u
#define RS_UET_RC_OP_VIOLATION 0x18u   /* a WRITE to a read-only buffer, a READ of a write-only one */
#define RS_UET_RC_BAD_MKEY 0x1Cu
#define RS_UET_RC_BAD_ADDR 0x1Du
#define RS_UET_RC_UNDELIVERABLE 0x1Fu  /* the message could not be delivered (its PDC is gone) */
#define RS_UET_RC_TOO_LONG 0x22u       /* a SEND longer than the receive buffer */
/* pds.nack_code */
#define RS_UET_NACK_TRIMMED 0x01u
#define RS_UET_NACK_NO_PDC_AVAIL 0x04u /* a SYN request found no PDC resource at the target */
#define RS_UET_NACK_ROD_OOO 0x0Du /* a PSN arrived out of order on a ROD PDC (dropped) */
#define RS_UET_NACK_INV_DPDCID 0x0Eu /* a request without SYN for a PDC id the target does not know */
#define RS_UET_NACK_CLOSING 0x10u    /* a request for a PDC that is closed or closing */
/* header bytes */
#define RS_UET_PDS_REQ_BYTES 12u
#define RS_UET_PDS_ACK_BYTES 12u
#define RS_UET_PDS_ACK_CC_BYTES 32u /* ACK + the 20-byte extension (cc type, MPR, SACK offset, bitmap, CC state) */
#define RS_UET_PDS_NACK_BYTES 16u
#define RS_UET_PDS_CC_REQ_BYTES 16u /* RUD/ROD request + ccc_id:8, credit_target:24 */
#define RS_UET_SES_RSP_BYTES 12u
#define RS_UET_SES_RSP_DATA_BYTES 20u
#define RS_UET_PDS_RUDI_BYTES 8u  /* RUDI request / response: prologue, reserved:16, pkt_id:32 */
#define RS_UET_PDS_UUD_BYTES 4u   /* UUD request: prologue, reserved:16 */
#define RS_UET_PDS_CTRL_BYTES 16u /* prologue, probe_opaque:16, psn:32, spdcid:16, dpdcid:16, payload:32 */
/* a RUD/ROD request with SYN carries pdc_mode:4 | psn_offset:12 (PSN - start PSN) where dpdcid goes */
#define RS_UET_SYN_PSN_OFF_MAX 0xFFFu
#define RS_UET_SES_STD_BYTES 44u
#define RS_UET_MAX_PAYLOAD 16383u /* the standard header's 14-bit payload length */
size_t rs_uet_frame_len(const rs_pkt *p);
int rs_uet_encode_prefix(const rs_pkt *p, uint8_t *out, size_t cap, size_t want, size_t *frame_len);
/* Decode the UDP payload of a frame to port 4793 (Ethernet and IPv4 were checked by the caller):
 * fills p (kind RS_PKT_UET) as rs_decode_captured does a RoCE frame. */
int rs_uet_decode(const uint8_t *buf, size_t len, size_t wire_len, rs_pkt *p);

/* pcap writer: nanosecond-resolution pcap (magic 0xa1b23c4d), LINKTYPE_ETHERNET.  Records are
 * gathered in `wbuf` and written in blocks; the first write error stops the writer (`err`) and cuts
 * the file back to its last whole record, so the file always holds exactly `frames` records. */
typedef struct rs_pcap {
    FILE *fp;
    uint64_t frames;     /* records accepted: in the file or in wbuf (after an error: in the file) */
    uint64_t pending;    /* of which still in wbuf */
    uint64_t file_bytes; /* bytes written to the file */
    size_t wlen;         /* bytes in wbuf */
    int err;             /* errno of the first write error; 0: none */
    uint32_t snaplen;    /* bytes kept per frame (RS_PCAP_SNAPLEN_MAX: whole frames) */
    uint32_t linktype;   /* RS_LINKTYPE_ETHERNET, or RS_LINKTYPE_INFINIBAND (frames from the LRH) */
    uint8_t buf[RS_MAX_PAYLOAD + 256]; /* encode scratch */
    uint8_t wbuf[1u << 16];            /* records not yet written */
} rs_pcap;

#define RS_PCAP_SNAPLEN_MAX 65535u
#define RS_LINKTYPE_ETHERNET 1u
#define RS_LINKTYPE_INFINIBAND 247u
#define RS_LINKTYPE_ERF 197u /* IB packets in ERF InfiniBand records (type 21): what Wireshark opens */

/* Open `path` for writing and write the file header. `snaplen` 1..RS_PCAP_SNAPLEN_MAX keeps the
 * first `snaplen` bytes of each frame (tcpdump -s; the record keeps the frame's real length), 0
 * keeps whole frames. Returns 0 or -1 (errno set; EINVAL for a snaplen out of range). */
int rs_pcap_open(rs_pcap *pc, const char *path, uint32_t snaplen);
/* rs_pcap_open with the file's link type (an IB fabric's capture: RS_LINKTYPE_INFINIBAND or
 * RS_LINKTYPE_ERF); a packet of the other link layer is refused by rs_pcap_write (EINVAL). */
int rs_pcap_open_linktype(rs_pcap *pc, const char *path, uint32_t snaplen, uint32_t linktype);
/* Encode `p` and append it with timestamp `t_ps` (picoseconds, truncated to ns).
 * Returns 0, or -1 (not open, stopped by an earlier error, negative time, encode error, write
 * error: then `err` holds the errno). */
int rs_pcap_write(rs_pcap *pc, const rs_pkt *p, int64_t t_ps);
/* Write the buffered records to the file, so that a reader sees every frame so far (the capture
 * stays open). Returns 0, or -1 when the writer stopped on an error (`err`). */
int rs_pcap_flush(rs_pcap *pc);
/* Flush and close; safe to call twice. Returns -1 when the writer stopped on an error (`err`). */
int rs_pcap_close(rs_pcap *pc);

#endif
