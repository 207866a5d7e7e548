/* Event trace: a fixed-layout record per packet or verbs event, recorded by the
 * C core when tracing is on and drained in bulk by the caller.
 *
 * Recording is off by default; when off each hook costs one predictable branch
 * (a NULL test).  When on, records go into a growable buffer on the simulation,
 * bounded by an optional cap on the records kept since rs_trace_enable; records
 * beyond the cap are counted, never silently lost.  The record is a plain struct
 * of fixed-width fields (cffi-clean, 64 bytes, no padding holes) so a drain is
 * one memcpy into a numpy structured array. */
#ifndef RDMASIM_TRACE_H
#define RDMASIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

typedef struct rs_sim rs_sim;

enum rs_trace_kind {
    RS_TR_TX = 1,        /* frame put on the wire (transmit start; what pcap shows) */
    RS_TR_DROP = 2,      /* frame lost; `reason` says why, `node` where */
    RS_TR_RX = 3,        /* frame delivered to a node (last bit arrived) */
    RS_TR_POST_SEND = 4, /* send WR accepted: wr_id, len = message bytes, verb_op = ibv_wr_opcode */
    RS_TR_POST_RECV = 5, /* receive WR accepted: wr_id, len = buffer bytes */
    RS_TR_COMPLETE = 6,  /* WQE retired: wr_id, status, verb_op = ibv_wc_opcode, flags CQE/RECV */
    RS_TR_TIMEOUT = 7,   /* retransmit timer fired with PSNs outstanding: psn = oldest unacked */
    RS_TR_RETRY = 8,     /* requester rewound (Go-Back-N): psn = restart PSN, aux = retries left
                            (of rnr_retry after an RNR NAK: 7 = forever; else of retry_cnt) */
    RS_TR_ACCEPT = 9,    /* responder accepted a request packet: psn, aux = next expected PSN */
    RS_TR_PFC = 10,      /* switch PFC decision: node = switch, msn = ingress port, priority, flags 1 = XOFF
                          * 0 = XON, len = shared bytes, psn = headroom bytes, aux = XOFF threshold */
};

enum rs_trace_drop_reason {
    RS_TR_DROP_NONE = 0,
    RS_TR_DROP_LOSS = 1,       /* i.i.d. loss on a link */
    RS_TR_DROP_LIST = 2,       /* explicit drop rule on a link (nth frame / PSN) */
    RS_TR_DROP_UNKNOWN_QP = 3, /* arrived at a NIC for a QPN that does not exist */
    RS_TR_DROP_BUFFER = 4,     /* reserved: switch buffer full (lossy class) */
    RS_TR_DROP_NO_ROUTE = 5,   /* reserved: switch has no route */
    RS_TR_DROP_LINK_DOWN = 6,  /* sent on a failed link */
};

/* cause of a RETRY record (stored in `reason`) */
enum rs_trace_retry_cause {
    RS_TR_RETRY_TIMEOUT = 1,
    RS_TR_RETRY_NAK = 2, /* NAK PSN sequence error */
    RS_TR_RETRY_RNR = 3, /* RNR NAK: resend after the RNR wait */
    RS_TR_RETRY_IMPLIED_NAK = 4, /* a READ/atomic response skipped PSNs: the missing ones were lost */
};

enum rs_trace_node_kind {
    RS_TR_NODE_HOST = 0,
    RS_TR_NODE_SWITCH = 1,
    RS_TR_NODE_NONE = 255, /* no node (e.g. the peer of a verbs event) */
};

/* `node`/`peer` of a switch: this base | the switch index (hosts use their index as is). */
enum {
    RS_TR_SWITCH_NODE_BASE = 0x8000,
};

/* flags */
#define RS_TRF_ACKREQ 0x01u   /* BTH A bit */
#define RS_TRF_SE 0x02u       /* BTH solicited event */
#define RS_TRF_CQE 0x04u      /* COMPLETE: a CQE was written (unsignaled successes write none) */
#define RS_TRF_RECV 0x08u     /* COMPLETE: receive queue (else send queue) */
#define RS_TRF_SIGNALED 0x10u /* POST_SEND: IBV_SEND_SIGNALED or sq_sig_all */
#define RS_TRF_SELECTIVE 0x20u /* RETRY: an IRN QP, which resends only the lost PSNs */

typedef struct rs_trace_rec {
    int64_t t_ps;       /* simulated time */
    uint64_t wr_id;     /* verbs events */
    uint32_t qpn;       /* source QP of a frame; the local QP of a verbs event */
    uint32_t dest_qpn;  /* BTH destination QP; the remote QP of a verbs event */
    uint32_t psn;       /* BTH PSN */
    uint32_t msn;       /* AETH MSN (ACK/NAK) */
    uint32_t len;       /* payload bytes of a frame; message/buffer bytes of a verbs event */
    uint32_t aux;       /* frame: RETH DMA length; RETRY/TIMEOUT: retries left; PFC: class-enable vector */
    int32_t link;       /* link direction id, -1 for events not on a link */
    uint16_t node;      /* where it happened: sender (TX, DROP on a link), receiver (RX), host */
    uint16_t peer;      /* the other end: receiver of TX/DROP, sender of RX; 0xFFFF none */
    uint8_t kind;       /* enum rs_trace_kind */
    uint8_t node_kind;  /* enum rs_trace_node_kind of `node` */
    uint8_t peer_kind;  /* enum rs_trace_node_kind of `peer` */
    uint8_t pkt_kind;   /* enum rs_pkt_kind (RoCE, PFC) */
    uint8_t opcode;     /* BTH opcode */
    uint8_t syndrome;   /* AETH syndrome */
    uint8_t ecn;        /* IPv4 ECN bits (tos & 3): 3 = CE */
    uint8_t flags;      /* RS_TRF_* */
    uint8_t reason;     /* DROP: rs_trace_drop_reason; RETRY: rs_trace_retry_cause */
    uint8_t status;     /* COMPLETE: ibv_wc_status */
    uint8_t verb_op;    /* POST_SEND: ibv_wr_opcode; COMPLETE: ibv_wc_opcode (low 8 bits) */
    uint8_t priority;   /* traffic class of a frame */
    uint32_t reserved;  /* zero; keeps the record 64 bytes with no implicit padding */
} rs_trace_rec;

/* Start recording (clears the buffer and counters). max_records = 0: no cap. */
int rs_trace_enable(rs_sim *sim, uint64_t max_records);
/* Stop recording and free the buffer (undrained records are discarded). */
void rs_trace_disable(rs_sim *sim);
int rs_trace_enabled(const rs_sim *sim);
/* Records waiting to be drained. */
size_t rs_trace_pending(const rs_sim *sim);
/* Move up to n of the oldest pending records into out; returns how many. */
size_t rs_trace_drain(rs_sim *sim, rs_trace_rec *out, size_t n);
/* Counters since rs_trace_enable: out[0] recorded, out[1] not recorded (cap reached or
 * out of memory), out[2] the cap (0 = none). */
void rs_trace_counts(const rs_sim *sim, uint64_t out[3]);

#endif
