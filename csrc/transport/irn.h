/* Per-QP state of IRN selective-repeat loss recovery (irn.c).  Both bitmaps and the
 * slot array have `cap` entries (a power of two >= window, so PSN & (cap-1) stays
 * consistent across the 2^24 wrap); they are allocated by rs_qp_set_recovery, never
 * in the packet path. */
#ifndef RDMASIM_TRANSPORT_IRN_H
#define RDMASIM_TRANSPORT_IRN_H

#include <stdint.h>

struct rs_pkt;

/* OOO: READ requests that arrived ahead of the expected PSN, kept until it reaches them */
#define RS_OOO_RD_REQS 16

/* Responder: what an out-of-order packet still owes when the cumulative PSN passes it
 * (completions, MSN and the message cursor stay in order). */
typedef struct rs_irn_slot {
    uint8_t opcode;
    uint32_t imm;
    uint32_t byte_len; /* SEND: message length (offset + length of its last packet); WRITE_IMM: RETH length */
    uint8_t ackreq;    /* its A bit (OOO: the ACK after the placed packets is sent only if one asked) */
} rs_irn_slot;

typedef struct rs_irn {
    /* parameters (rs_recovery_params) */
    uint32_t window;       /* PSNs in flight at most */
    uint32_t rto_low_pkts; /* N: RTO_low while fewer than N packets are in flight */
    int64_t rto_low_ps;
    int64_t rto_high_ps;
    uint32_t cap;          /* bitmap entries: power of two >= window */
    int64_t reorder_ps;    /* RS_RECOVERY_OOO (> 0): a gap counts as lost once a later PSN has been
                            * held this long; 0 = IRN (a NAK with a SACK per out-of-order arrival) */

    /* requester */
    uint8_t *sacked;       /* PSNs selectively acknowledged, in [comp_psn, max_sent_psn_next) */
    uint32_t sacked_count;
    uint32_t snd_base;     /* bits before it are clear (follows comp_psn) */
    int in_recovery;
    uint32_t recovery_psn; /* recovery ends when the cumulative ACK reaches it */
    uint32_t lost_below;   /* un-SACKed PSNs before it are lost */
    uint32_t retx_psn;     /* next PSN to examine for retransmission */
    uint32_t send_seq;     /* receive WQE numbers handed to SEND / WRITE_WITH_IMM messages */
    uint32_t since_ackreq; /* packets since the last one with the A bit */
    int64_t rto_start_ps;  /* the retransmit timer runs from here (last cumulative progress) */
    uint8_t *lost;         /* OOO: PSNs reported lost (or timed out) and not resent since */
    /* OOO: the tail probe (rs_irn_probe); one round trip timed at a time, from an A-bit packet
     * sent once to the cumulative ACK that passes it (rtt_psn, rtt_sent_ps); srtt_ps the latest */
    int probed;
    int rtt_on;
    uint32_t rtt_psn;
    int64_t rtt_sent_ps;
    int64_t srtt_ps;
    int64_t last_tx_ps;    /* OOO: when the last request packet was built (the probe waits from it) */

    /* responder */
    uint8_t *rcvd;         /* out-of-order PSNs received and placed, in (resp_psn, resp_psn + window) */
    rs_irn_slot *slot;
    /* responder, OOO: the gaps in [resp_psn, rcv_high) are reported lost once a later PSN has
     * been held for reorder_ps; checkpoint: every PSN before ck_psn that is still a gap at
     * ck_ps + reorder_ps is lost (a PSN at or after ck_psn - 1 had arrived by ck_ps) */
    uint32_t rcv_high;     /* one past the highest PSN held */
    uint32_t reported;     /* gaps before it were reported already */
    uint32_t ck_psn;
    int ck_set;
    int64_t ck_ps;
    /* responder, OOO: reports again (ooo_loss.c).  rep_at: when each gap in [resp_psn, reported)
     * was last reported; rep_again: it was reported more than once; rr_rtt_ps: report to arrival
     * of the latest gap reported once (0: none yet); rr_due_ps: the first report due again (0: none) */
    int64_t *rep_at;
    uint8_t *rep_again;
    int64_t rr_rtt_ps;
    int64_t rr_due_ps;

    /* OOO READs (ooo_read.c).  Requester: READ response PSNs placed ahead of comp_psn, in
     * [comp_psn, comp_psn + cap); rd_gap_ps: when the first of them arrived since the last
     * in-order progress (0: none held).  Responder: READ requests ahead of resp_psn. */
    uint8_t *rd_held;
    uint32_t rd_nheld;     /* bits set in rd_held */
    int64_t rd_gap_ps;
    struct rs_pkt *rd_req[RS_OOO_RD_REQS];
    uint32_t n_rd_req;
} rs_irn;

#endif
