/* RC queue pair: the send queue (requester + completer state) and the
 * receive queue (responder state).  The three roles live in requester.c,
 * responder.c and completer.c; the QP state machine in qp_state.c. */
#ifndef RDMASIM_TRANSPORT_QP_H
#define RDMASIM_TRANSPORT_QP_H

#include <stddef.h>
#include <stdint.h>

#include "link/frame.h"
#include "rdmasim/cc.h"
#include "rdmasim/cc_dcqcn.h"
#include "rdmasim/eventq.h"
#include "rdmasim/verbs.h"
#include "transport/irn.h"

struct rs_host;
struct rs_cq;

/* Responder resource (rxe "res"): one per READ/atomic request accepted, kept in a ring of
 * max_dest_rd_atomic entries so duplicates can be answered. */
typedef struct rs_rdres {
    uint32_t valid;
    uint32_t is_atomic;
    uint32_t ack_only;  /* ATOMIC WRITE / FLUSH: a duplicate gets the zero-length READ response again */
    uint32_t first_psn;
    uint32_t last_psn;
    uint64_t va;        /* READ: the original request */
    uint32_t rkey;
    uint32_t length;
    uint64_t atomic_orig; /* atomic: the value returned (replayed for duplicates, never re-executed) */
} rs_rdres;

/* A posted send work request and its progress. */
typedef struct rs_swqe {
    uint64_t wr_id;
    uint64_t remote_addr;
    uint64_t length;      /* sum of SGE lengths */
    uint32_t opcode;      /* ibv_wr_opcode */
    uint32_t send_flags;
    uint32_t imm_data;
    uint32_t rkey;
    uint32_t num_sge;
    uint32_t read_psn;    /* READ: the PSN its latest request was sent at (first_psn, or where a
                           * retry re-issued it for the tail); a new FIRST/ONLY may start there */
    uint64_t compare_add; /* atomics */
    uint64_t swap;
    uint32_t first_psn;   /* valid once started */
    uint32_t npkts;       /* max(1, ceil(length / pmtu)) */
    uint32_t started;
    uint32_t irn_recv_seq; /* IRN: receive WQE sequence number (SEND / WRITE_WITH_IMM) */
    uint32_t no_bytes;    /* every SGE is on a size-only region: packets carry no payload bytes */
    int32_t ud_dest;      /* UD: destination host (address handle), its traffic class, QPN, Q_Key */
    uint32_t ud_tclass;
    uint32_t ud_qpn;
    uint32_t ud_qkey;
    uint32_t res_gen;     /* no_bytes: host's mr_gen + 1 when its SGEs were resolved whole (0: not) */
    uint64_t stream_off;  /* request payload bytes of the WQEs posted before it (the window's byte count) */
    uint32_t bind_mw_rkey; /* IBV_WR_BIND_MW: the window's current rkey (rkey: its new one), the */
    uint32_t bind_lkey;    /* region's lkey, the access granted, the length (remote_addr: start) */
    uint32_t bind_access;
    uint64_t bind_len;
    rs_sge *sge;          /* points into the QP's SGE array */
} rs_swqe;

typedef struct rs_rwqe {
    uint64_t wr_id;
    uint64_t length;
    uint32_t num_sge;
    rs_sge *sge;
} rs_rwqe;

/* Rings of a QP with one send and one receive WQE of one SGE each (every bulk flow's pair) fit
 * inside the QP: no allocation per flow, and the WQE sits next to the QP's other hot lines. */
#define RS_QP_INLINE_RING (sizeof(rs_swqe) + sizeof(rs_rwqe) + 2 * sizeof(rs_sge))

/* Field order is for the cache: with 100k QPs each packet's QP is a cache miss per line touched,
 * so everything the scheduler, requester, completer and responder read or write per packet sits
 * in the first lines (`hot`), per-packet counters next, and what is used per message, per
 * connection or on errors only after them (`cold`).  Allocated 64-byte aligned (qp.c). */
typedef struct rs_qp {
    /* ---- hot: every packet sent or received ---- */
    struct rs_host *host;
    uint32_t qpn;
    uint32_t state;       /* ibv_qp_state */
    uint32_t recovery;    /* RS_RECOVERY_GBN (requester/responder/completer.c) or RS_RECOVERY_IRN (irn.c) */
    uint32_t pmtu;        /* path MTU in bytes */

    /* NIC scheduling (nic.c): where the QP waits to send. RS_SCHED_RING: in the round-robin ring
     * of its PFC priority (ring_prio; act_next/act_prev link it); RS_SCHED_PACED: in the host's
     * pace heap until next_tx_ps. */
    struct rs_qp *act_next;
    struct rs_qp *act_prev;
    int active;             /* enum rs_sched; 0 = idle (nothing to send, or not yet looked at) */
    uint32_t pace_pos;      /* RS_SCHED_PACED: index in the pace heap + 1 */
    uint8_t ring_prio;      /* RS_SCHED_RING: which ring */
    uint8_t is_ud;          /* IBV_QPT_UD: datagrams (ud.c), no ACKs, no retries */
    uint8_t is_uc;          /* IBV_QPT_UC: RC's packets with UC opcodes, no ACKs, no retries (uc.c) */
    uint8_t uc_drop;        /* UC responder: dropping the rest of a message (rxe resp.drop_msg) */
    /* the link-layer header of what the QP sends, resolved by its port when it gets an address
     * vector (rs_qp_resolve_path; UD: per work request instead) */
    rs_link_path path;
    /* congestion control (cc_qp.c): the rate limiter lets the next request packet go at next_tx_ps */
    const rs_cc_algo *cc;   /* NULL: line rate */
    int64_t next_tx_ps;
    /* responses that must leave in PSN order behind a READ response still being sent:
     * RS_PKT_JOB entries (READ responses, built packet by packet) and ready ACK frames */
    struct rs_pkt *respq_head; /* (respq_tail is with the cold fields: used only to append) */
    uint8_t *cc_state;      /* the algorithm's state while cc is set: cc_room, or a block of tp->cc_slab */

    /* send queue ring: [sq_head, sq_head + sq_count) are posted and not completed */
    rs_swqe *sq;
    rs_sge *sq_sge;
    uint32_t sq_head;
    uint32_t sq_count;
    /* requester: the next packet to send is WQE sq[req_idx] at byte offset req_off, PSN req_psn */
    uint32_t req_idx;     /* ring offset from sq_head (0 .. sq_count) */
    uint32_t req_psn;
    uint64_t req_off;
    uint32_t max_sent_psn_next; /* one past the highest PSN ever sent: below it = retransmission */
    uint32_t since_ackreq;      /* packets since the last one with the A bit */
    /* the frame length of its last request packet (req_flen) and that packet's opcode << 24 |
     * payload length, + 1 (req_flen_key; 0: none): the rest of a request's frame is the QP's path
     * and attributes, so a new path or a modify forgets it (rs_qp_resolve_path, rs_qp_apply_modify) */
    uint32_t req_flen_key;
    uint32_t req_flen;
    int64_t rnr_until_ps;       /* requester paused by an RNR NAK until then */
    uint32_t rd_outstanding;    /* READ/atomic WQEs sent and not completed (<= max_rd_atomic) */
    int sq_draining;            /* SQD: no new WQE starts */

    /* completer */
    uint32_t comp_psn;    /* oldest PSN not yet acknowledged */
    uint32_t retry_left;
    uint32_t rnr_left;
    int retry_started;    /* an implied-NAK retry is under way: ignore later out-of-order responses */
    int64_t rto_ps;       /* 4.096 us * 2^timeout; 0 = no timer */
    int64_t rto_deadline_ps; /* 0 = not armed; the rto timer fires at or before it (re-armed lazily) */

    rs_qp_init init;
    rs_qp_attr attr;

    /* responder */
    uint32_t resp_psn;      /* expected PSN */
    uint32_t msn;
    int nak_sent;           /* one NAK per PSN gap */
    uint32_t unacked_rx;    /* accepted SEND/WRITE packets since the last ACK (ACK coalescing) */
    int ack_pending;        /* an AckReq packet waits for a coalesced ACK (ack_timer) */
    int in_msg;             /* 0 none, 1 inside a SEND, 2 inside a WRITE */
    uint32_t respq_jobs;    /* READ jobs in respq: read per request received (responder.c), so here */
    uint64_t write_va;      /* WRITE: where the next payload byte goes (resolved per packet) */
    uint64_t write_left;
    uint32_t write_rkey;
    uint32_t write_len;     /* RETH length of the current WRITE (WC byte_len for WRITE_WITH_IMM) */
    uint8_t *write_place;   /* WRITE: write_va's bytes (or RS_MR_NO_BYTES), valid while write_gen is */
    uint32_t write_gen;     /* host's mr_gen + 1 when the RETH's range resolved whole (0: not) */
    uint64_t recv_off;      /* SEND: bytes placed in the current receive WQE */
    int recv_active;        /* SEND: the head receive WQE is in use by a multi-packet message */
    /* requests that arrived while a READ response was still being generated: executed in PSN
     * order after it, as rxe does (a later WRITE must not change the data an earlier READ returns) */
    struct rs_pkt *held_head;
    struct rs_pkt *held_tail;

    /* receive queue ring */
    rs_rwqe *rq;
    rs_sge *rq_sge;
    uint32_t rq_head;
    uint32_t rq_count;
    uint32_t rq_done;     /* receive WQEs completed since RESET (IRN numbers them) */

    uint64_t flow_ref;    /* bulk flow (workload/flows.c) this QP carries: id + 1; 0 = a verbs QP */

    /* the send/receive rings and SGE arrays when they fit (qp->sq points here), else malloc'd */
    _Alignas(64) uint8_t ring_inline[RS_QP_INLINE_RING];

    /* ---- per-packet counters (sent, acknowledged, received first) ---- */
    _Alignas(64) rs_qp_stats stats;

    int64_t last_cnp_ps;    /* notification point: last CNP sent for this QP (-1: none) */
    /* congestion-control echo (responder side, cc_qp.c): the last accepted request that asked
     * for it (rs_pkt.cc_want), copied into the next ACK */
    int64_t rx_cc_tx_ps;
    uint32_t rx_cc_ce_bytes;   /* CE-marked payload bytes accepted since the last ACK */
    uint8_t rx_cc_want;
    uint8_t rx_cc_stamped;
    uint8_t rx_cc_ce;
    rs_int_stack *rx_int;      /* INT of the last accepted request (HPCC), moved into the next ACK */

    /* ---- cold: per message, per connection, on loss ---- */
    rs_timer rto;
    rs_timer rnr_timer;
    rs_timer drain_timer;
    rs_timer ack_timer;   /* flushes a coalesced ACK (nic_params.h ack_timeout_ps) */
    rs_timer reorder_timer; /* RS_RECOVERY_OOO responder: the checkpoint's reorder time is over (irn.c) */
    rs_rdres *res;          /* ring of max(1, max_dest_rd_atomic) entries: &res_inline when 1 */
    uint32_t res_cap;
    uint32_t res_next;
    rs_rdres res_inline;
    rs_irn *irn;            /* IRN state (irn.c): set by rs_qp_set_recovery, NULL under Go-Back-N */
    struct rs_pkt *respq_tail;
    struct rs_srq *srq;     /* shared receive queue (srq.c); its WQEs come into rq one at a time */
    uint8_t has_cc_room;    /* allocated from tp->qp_cc_slab: cc_room below is usable */
    uint64_t sq_stream_end; /* request payload bytes of every WQE posted so far (rs_swqe.stream_off) */

    /* ---- RS_CC_STATE_BYTES of congestion control state, only in QPs created on a host that runs
     * CC (tp->qp_cc_slab; the others, from tp->qp_slab, end here): right after the QP, so its
     * address is known without a load (rs_qp_prefetch_cc).  A block of its own measured 20 %
     * slower at 100k DCQCN QPs (one more dependent load per packet). ---- */
    _Alignas(64) uint8_t cc_room[];
} rs_qp;

/* The prefetch helpers below must be inlined: GCC's pure-const analysis takes a function that
 * only prefetches for one without effects and deletes the calls (GCC 12 -O2: a helper it did not
 * inline left 8 prefetch instructions in the extension instead of 25). */
#define RS_PREFETCH_HELPER static inline __attribute__((always_inline)) void

/* Start loading the lines the send side of a QP touches for its next request packet, or for an
 * ACK or CNP it receives (scheduler, requester and completer cursors, ring size and destination,
 * the WQE when the ring is inline, the per-packet counters, the congestion control state).  With
 * thousands of QPs served round robin each visit otherwise waits for memory line by line; the
 * NIC knows its next QP one frame ahead (nic.c), a link the QP of an arriving frame one link
 * delay ahead (link.c). */
RS_PREFETCH_HELPER rs_qp_prefetch_requester(const rs_qp *qp)
{
    __builtin_prefetch(&qp->host);
    __builtin_prefetch(&qp->respq_head);
    __builtin_prefetch(&qp->req_off);
    __builtin_prefetch(&qp->init);
    __builtin_prefetch(qp->ring_inline);
    __builtin_prefetch(qp->ring_inline + 64);
    __builtin_prefetch(&qp->stats);
}

/* the requester's first four lines, one field named in each above */
_Static_assert(offsetof(rs_qp, respq_head) / 64 == 1 && offsetof(rs_qp, req_off) / 64 == 2 &&
                   offsetof(rs_qp, init) / 64 == 3,
               "rs_qp_prefetch_requester must name a field in each of the QP's first four lines");

/* The congestion control state's lines, all three, for callers that know CC is on (their host's
 * setting: testing qp->cc here would wait for the line being loaded).  DCQCN's third line holds its
 * counters and alpha_decays, read and written at every CNP and rate catch-up: without it 100 k
 * DCQCN QP pairs ran 4 % slower. */
RS_PREFETCH_HELPER rs_qp_prefetch_cc(const rs_qp *qp) /* (a larger state's 4th line loads on use) */
{
    __builtin_prefetch(qp->cc_room);
    __builtin_prefetch(qp->cc_room + 64);
    __builtin_prefetch(qp->cc_room + 128);
}
_Static_assert(sizeof(rs_dcqcn_rp) <= 3 * 64, "rs_qp_prefetch_cc must load every line of DCQCN's state");

/* The same for a request arriving at the responder (state, hold queues, PD, expected PSN and
 * message cursor, counters; the CNP pacing time when the frame is CE-marked). */
RS_PREFETCH_HELPER rs_qp_prefetch_responder(const rs_qp *qp, int ce)
{
    __builtin_prefetch(&qp->host);
    __builtin_prefetch(&qp->init);
    __builtin_prefetch(&qp->resp_psn);
    __builtin_prefetch(&qp->held_head);
    __builtin_prefetch(&qp->stats.bytes_rcvd);
    if (ce)
        __builtin_prefetch(&qp->last_cnp_ps);
}

/* Free what a QP allocated beside itself (rings, responder resources, IRN state); qp.c. */
void rs_qp_free_storage(rs_qp *qp);

/* Ring slot of the WQE idx_from_head after the head.  (A compare and subtract instead of the
 * division ran no faster on incast-8 and added instructions: measured.) */
static inline uint32_t rs_qp_sq_slot(const rs_qp *qp, uint32_t idx_from_head)
{
    return (qp->sq_head + idx_from_head) % qp->init.max_send_wr;
}

static inline rs_swqe *rs_qp_swqe(rs_qp *qp, uint32_t idx_from_head)
{
    return &qp->sq[rs_qp_sq_slot(qp, idx_from_head)];
}

#endif
