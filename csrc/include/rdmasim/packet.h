/* A packet in flight: parsed header fields plus a payload reference.
 *
 * Packets live in a pool (pool.h) and move between queues by the intrusive
 * `next` link, so memory follows packets in flight.  The codec (codec.h)
 * turns one into exact RoCEv2 / PFC bytes and back; nothing else needs the
 * wire layout.  Fields are host byte order. */
#ifndef RDMASIM_PACKET_H
#define RDMASIM_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/telemetry.h"

enum rs_pkt_kind {
    RS_PKT_ROCE = 0, /* Ethernet / IPv4 / UDP 4791 / BTH ... / ICRC */
    RS_PKT_PFC = 1,  /* 802.1Qbb MAC control frame (issue 4) */
    RS_PKT_JOB = 2,  /* never on the wire: a queued RDMA READ response job (responder) */
    RS_PKT_RAW = 3,  /* bytes that do not decode (sent unchecked by a scripted peer): the whole frame
                      * is the payload, no field is valid but the routing metadata; NICs drop it */
    RS_PKT_IB_FC = 4, /* InfiniBand link flow-control packet (link/credit.h): VL in pfc_class_enable,
                       * FCTBS in pfc_quanta[0], FCCL in pfc_quanta[1]; link-local, never forwarded */
    RS_PKT_UET = 5,   /* Ultra Ethernet: Ethernet / IPv4 / UDP 4793 / PDS [/ SES] / payload (csrc/uet,
                       * codec/uet_codec.c); the UDP source port is the entropy value, psn the PDS PSN */
};

/* Ultra Ethernet transport headers of a RS_PKT_UET packet (UE specification 1.0; field names as
 * the specification's; docs/uet.md has the layout).  The PDS PSN is rs_pkt.psn, the entropy value
 * rs_pkt.udp_sport. */
typedef struct rs_uet_hdr {
    /* PDS prologue: type (5 bits), next header or control type (4), flags (7, as on the wire) */
    uint8_t type;
    uint8_t next_hdr;
    uint8_t flags;
    uint8_t nack_code;      /* NACK: pds.nack_code */
    uint16_t spdcid;        /* source / destination PDC identifiers */
    uint16_t dpdcid;        /* a RUD/ROD request with SYN: pdc_mode:4 | psn_offset:12 instead */
    int16_t psn_off;        /* request: clear_psn - psn; ACK: ack_psn - cack_psn (signed on the wire);
                             * CTRL: probe_opaque */
    int16_t sack_off;       /* ACK_CC: SACK bitmap base PSN - cack_psn */
    uint32_t cack_psn;      /* ACK: cumulative ACK PSN (every PSN up to it received) */
    uint32_t nack_payload;  /* NACK: the highest PSN received + 1; CTRL: its payload */
    uint8_t cc_type;        /* ACK_CC: pds.cc_type (0 NSCC, 1 credit) and its flags (low 4 bits) */
    uint8_t cc_flags;
    uint8_t mpr;            /* ACK_CC: maximum PSN range */
    uint8_t ses_opcode;     /* SES standard request: opcode (6 bits), flags byte (ver, DC, IE, rel, HD, EOM, SOM) */
    uint64_t sack_bitmap;   /* ACK_CC: bit i (value 1 << i) = PSN base + i received */
    uint64_t cc_state;      /* ACK_CC: the 8-byte CC state, as on the wire */
    uint8_t ses_flags;
    uint8_t index_gen;
    uint16_t msg_id;        /* SES: message id */
    uint32_t job_id;        /* 24 bits */
    uint16_t pid_on_fep;    /* 12 bits */
    uint16_t resource_index; /* 12 bits */
    uint32_t initiator;
    uint32_t message_offset; /* non-SOM packets: byte offset in the message (SOM: 0, header data instead) */
    uint32_t request_length; /* the message's length in bytes */
    uint64_t buffer_offset;  /* target buffer offset of the message's first byte */
    uint64_t mem_key;        /* memory key / match bits (the rkey-like field) */
    uint64_t header_data;    /* SOM packets */
    /* RUD/ROD CC request: the CC state (ccc_id:8, credit_target:24) */
    uint32_t credit_target;  /* RCCC: the cumulative credit asked for, in bytes modulo 2^24 */
    uint8_t ccc_id;
    uint8_t spec;            /* metadata, not on the wire: sent on RCCC's speculative credit */
    /* SES response header (next_hdr RSP on an ACK): list:2 | opcode:6 (ses_opcode), ver:2 |
     * return_code:6, message_id:16 (msg_id), resource index generation:8 (index_gen), job_id:24,
     * modified_length:32 */
    uint8_t ses_rc;
    uint32_t mod_length;
    /* SES response with data (next_hdr RSP_DATA on a request, 20 bytes): the response fields above
     * (index_gen reserved), read_req_message_id:16, reserved:2 | payload_length:14, modified_length:32,
     * message_offset:32 (the read data's offset) */
    uint16_t read_msg_id;
} rs_uet_hdr;

/* The link layer a frame travels on (one per fabric, rs_net.link_layer; stamped by link/frame.h):
 * RoCEv2 over Ethernet, or native InfiniBand (LRH / BTH ... / ICRC / VCRC, docs/infiniband.md). */
enum rs_link_layer {
    RS_LL_ROCE = 0,
    RS_LL_IB = 1,
};

/* Header bytes of the frame up to and including BTH: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12. */
#define RS_ETH_HDR_BYTES 14u
#define RS_IPV4_HDR_BYTES 20u
#define RS_UDP_HDR_BYTES 8u
#define RS_BTH_BYTES 12u
#define RS_RETH_BYTES 16u
#define RS_AETH_BYTES 4u
#define RS_IMMDT_BYTES 4u
#define RS_DETH_BYTES 8u /* Q_Key, reserved byte, source QPN (UD) */
#define RS_UD_GRH_BYTES 40u /* GRH area before a UD receive's payload */
#define RS_ATOMICETH_BYTES 28u
#define RS_ATOMICACKETH_BYTES 8u
#define RS_CNP_PAD_BYTES 16u
#define RS_ICRC_BYTES 4u
#define RS_FCS_BYTES 4u
/* Preamble + SFD (8) and inter-frame gap (12): occupy the wire, not in pcap. */
#define RS_WIRE_OVERHEAD_BYTES 20u
#define RS_ETH_MIN_FRAME_NOFCS 60u
#define RS_MAX_PAYLOAD 4096u

/* The first cache line holds what links, switches (ECMP hash, ECN, PFC class, buffer
 * accounting) and the receiving NIC's dispatch read per frame; the rest of the headers are read
 * where a packet is built, by the codec and by the transport on the packet kinds that carry
 * them.  With many QPs a frame waits in a deep switch queue long enough for its other lines to
 * leave the caches.  Pool packets are 64-byte aligned (pool.c). */
typedef struct rs_pkt {
    /* ---- line 0 ---- */
    struct rs_pkt *next;  /* intrusive list link (pool, queues, link FIFO) */
    int64_t t_arrive_ps;  /* when it reached the far end of its last link (on a link: see link.c) */
    uint8_t *payload;     /* pool-owned bytes, or NULL: payload_len zero bytes */
    uint32_t payload_len; /* payload bytes, without pad */
    uint16_t kind;        /* enum rs_pkt_kind (simulator metadata, as the fields up to dst_node) */
    uint8_t link_layer;   /* enum rs_link_layer: which framing the codec writes (0: RoCEv2) */
    uint8_t ib_vl;        /* IB: the LRH virtual lane on the current link (SL-to-VL of its port) */
    uint32_t dest_qpn;    /* BTH */
    uint32_t psn;         /* BTH */
    uint32_t src_ip;      /* IPv4 */
    uint32_t dst_ip;
    uint16_t src_node;    /* host index of the sender, for routing and traces */
    uint16_t dst_node;    /* host index of the destination */
    uint16_t frame_len;   /* rs_frame_len, cached by the requester or a link into a switch (0: unset) */
    uint16_t sw_in_port;  /* switch port it arrived on, while queued in a switch */
    uint16_t udp_sport;   /* UDP (dst port is always 4791) */
    uint16_t ip_id;       /* IPv4 */
    uint8_t priority;     /* traffic class 0..7 */
    uint8_t tos;          /* IPv4 DSCP << 2 | ECN */
    uint8_t opcode;       /* BTH */
    uint8_t ackreq;       /* BTH A bit */

    /* ---- the rest of the headers ---- */
    uint32_t src_qpn;     /* sending QP (BTH carries only the destination QP) */
    /* Ethernet */
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    /* IPv4 */
    uint8_t ttl;
    /* BTH */
    uint8_t se;     /* solicited event */
    uint8_t mig;    /* MigReq */
    uint8_t fecn;
    uint8_t becn;
    uint8_t icrc_bad; /* the frame's ICRC is wrong (by icrc_xor): the receiving NIC drops it */
    uint16_t pkey;
    /* IB LRH (link_layer RS_LL_IB): local identifiers and service level */
    uint16_t ib_dlid;
    uint16_t ib_slid;
    uint8_t ib_sl;

    /* RETH */
    uint64_t reth_va;
    uint32_t reth_rkey;
    uint32_t reth_len;
    /* AETH */
    uint8_t aeth_syndrome;
    uint32_t aeth_msn;
    /* ImmDt: the 32-bit field as it reads on the wire (big-endian).  verbs' imm_data is __be32:
     * rdmasim.verbs converts between the two (a value filled with htonl(x) is x here). */
    uint32_t imm;
    /* DETH (UD): Q_Key; its source QP is src_qpn above */
    uint32_t deth_qkey;
    /* icrc_bad: the encoder writes the correct ICRC xor this (nonzero), so a capture shows the
     * wrong ICRC that was sent */
    uint32_t icrc_xor;
    /* AtomicETH / AtomicAckETH */
    uint64_t atomic_va;
    uint32_t atomic_rkey;
    uint64_t atomic_swap_add;
    uint64_t atomic_compare;
    uint64_t atomic_orig;

    /* IRN extension headers (loss recovery RS_RECOVERY_IRN; metadata here, not encoded by the
     * codec -- docs/design.md "Loss recovery: IRN" lists what IRN puts on the wire):
     * SEND/WRITE: x_off = byte offset of this packet in its message; WRITE: x_va/x_rkey/x_len =
     * RETH on every packet (this packet's VA, total length); SEND and WRITE_WITH_IMM:
     * x_seq = receive WQE sequence number; NAK: x_sack_psn = the out-of-order PSN that caused it,
     * or with x_lost (RS_RECOVERY_OOO) the PSN the responder reports lost. */
    uint8_t x_valid;
    uint8_t x_lost;
    uint32_t x_rkey;
    uint32_t x_len;
    uint32_t x_seq;
    uint32_t x_sack_psn;
    uint64_t x_va;
    uint64_t x_off;

    /* on a link, with t_arrive_ps: the key of the arrival of the frame behind it, taken by the
     * sender when it put that frame on the wire (link.c) */
    uint64_t arrive_key_next;

    /* group routing (link/grouproute.c): intermediate group + 1 the packet is still heading for
     * (Valiant / UGAL), 0 = none.  Simulator metadata set at the source switch, never on the wire. */
    uint16_t via_group;
    uint8_t global_hops; /* global links crossed so far (hop classes: its priority offset) */
    uint8_t sw_in_prio;  /* the priority it arrived in, while queued in a switch (its ingress accounting) */

    /* congestion-control echo (metadata, not encoded; transport/cc_qp.c): a request of a QP whose
     * algorithm wants ACK events carries cc_want and, with RS_CC_WANTS_RTT, its NIC send time
     * (cc_stamped: a first transmission, so a sample); the responder's ACK carries back the
     * stamp of the last request it accepted, whether that arrived CE-marked, and the CE-marked
     * payload bytes since its previous ACK */
    int64_t cc_tx_ps;
    uint32_t cc_ce_bytes;
    uint8_t cc_want;
    uint8_t cc_stamped;
    uint8_t cc_ce_echo;
    /* in-band network telemetry (HPCC; metadata, not encoded: docs/cc-hpcc.md): NULL unless the
     * sending QP's algorithm wants INT.  A request (cc_want) collects one record per switch egress
     * (link/switch.c); the responder moves the stack of the last accepted request into its next ACK,
     * which carries it back unchanged.  The stack is a pool block (rs_pkt_attach_int), returned
     * with the packet. */
    rs_int_stack *intel;

    /* responder job (kind == RS_PKT_JOB): index of the responder resource it replays */
    uint32_t job_res;

    /* PFC (kind == RS_PKT_PFC) */
    uint16_t pfc_class_enable;
    uint16_t pfc_quanta[8];

    /* packet trimming (link/trim.c; NDP, UEC's optional trimming; metadata, not encoded):
     * trim_ok: the transport that built the packet lets a switch cut it to its headers (a
     * transport sets it on the packets it can recover from a header; RoCE never does);
     * trimmed: a switch did (payload_len 0, frame_len recomputed: the frame is its headers). */
    uint8_t trim_ok;
    uint8_t trimmed;

    /* ---- from here on: a transport's own block, not cleared by rs_pkt_alloc ----
     * Ultra Ethernet (kind == RS_PKT_UET): the UET frame builder (uet/endpoint.c) clears it; the
     * decoders clear the whole packet.  Nothing reads it on another kind. */
    rs_uet_hdr uet;
} rs_pkt;

/* Bytes rs_pkt_alloc clears: every field before the transport extension blocks. */
#define RS_PKT_COMMON_BYTES offsetof(rs_pkt, uet)

#endif
