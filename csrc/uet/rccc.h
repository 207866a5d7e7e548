/* RCCC: the UEC receiver-credit congestion control, as a pure module the UET packet delivery
 * sublayer drives (no packets, no events here: it says what to put in packets and when).
 *
 * Receiver (rs_rccc_rx, one per receiving NIC port): each sender keeps asking for credit with a
 * cumulative request (bytes of credit it has asked for so far, carried in its data/request
 * packets); a pacer hands out credit at the receiver's link rate (x rate_modifier) in quanta of
 * `quantum` bytes, round robin over the senders whose request exceeds what they were granted: a
 * fair share of the receiver's link each.  The grant is cumulative too (bytes granted so far), so
 * any ACK to that sender may carry it, and the pacer's own credit packets carry it when no ACK
 * goes.  Sender (rs_rccc_tx): an initial speculative allowance (~ 1 BDP) until the first feedback,
 * then only the credit granted; its request is its backlog (capped at max_credit) minus the credit
 * it holds.  Sources and rules: rccc.c.  Fixed-size state, no allocation, no globals.
 * Plain C (cffi-clean). */
#ifndef RDMASIM_UET_RCCC_H
#define RDMASIM_UET_RCCC_H

#include <stdint.h>

#define RS_RCCC_MAX_SENDERS 64 /* senders one receiver schedules at once */

typedef struct rs_rccc_rx_params {
    double link_bps;            /* the receiver's link rate */
    double rate_modifier;       /* credit rate = link_bps x rate_modifier (htsim: 0.99), (0, 1] */
    uint32_t quantum;           /* bytes of credit per grant (htsim: 4 MSS) */
} rs_rccc_rx_params;

typedef struct rs_rccc_sender {
    uint32_t key;               /* the caller's sender id (e.g. a PDC id) */
    uint8_t used;               /* slot taken */
    uint64_t requested;         /* cumulative credit asked for (the largest seen) */
    uint64_t granted;           /* cumulative credit granted */
} rs_rccc_sender;

typedef struct rs_rccc_rx {
    rs_rccc_rx_params p;
    int64_t next_ps;            /* the pacer's next grant (0 = idle: nobody waits for credit) */
    int64_t free_ps;            /* the pacer may grant again at this time (link busy with earlier grants) */
    uint32_t rr;                /* round-robin position */
    uint32_t nused;
    rs_rccc_sender s[RS_RCCC_MAX_SENDERS];
    uint64_t grants;            /* statistics: credit packets (pulls) decided, bytes granted */
    uint64_t granted_bytes;
    uint64_t refused;           /* requests from a new sender with the table full */
} rs_rccc_rx;

void rs_rccc_rx_params_default(rs_rccc_rx_params *p, double link_bps, uint32_t mss);
/* 0 when valid, else the 1-based index of the first bad field. */
int rs_rccc_rx_params_check(const rs_rccc_rx_params *p);
void rs_rccc_rx_init(rs_rccc_rx *rx, const rs_rccc_rx_params *p);
/* A packet from sender `key` carried its cumulative request `requested` (bytes).  Returns 0, or -1
 * when `key` is new and the table is full (that sender gets no credit). */
int rs_rccc_rx_on_request(rs_rccc_rx *rx, int64_t now_ps, uint32_t key, uint64_t requested);
/* When the pacer's next grant is due (0 = no sender waits for credit; so a request at time 0 is
 * served at 1 ps). */
int64_t rs_rccc_rx_next_ps(const rs_rccc_rx *rx);
/* At or after rs_rccc_rx_next_ps: the next grant.  Returns 1 and the sender (*key) and its new
 * cumulative grant (*granted) for a credit packet to send now, or 0 when none is due. */
int rs_rccc_rx_pull(rs_rccc_rx *rx, int64_t now_ps, uint32_t *key, uint64_t *granted);
/* `bytes` arrived that no grant covered (a sender's speculation): they took the receiver's link
 * as granted bytes do, so the pacer's next grant waits for them too. */
void rs_rccc_rx_on_unsolicited(rs_rccc_rx *rx, int64_t now_ps, uint64_t bytes);
/* The cumulative grant of `key` (0 for an unknown sender): what an ACK to it carries. */
uint64_t rs_rccc_rx_granted(const rs_rccc_rx *rx, uint32_t key);
/* The sender is gone (its PDC closed): its slot is free. */
void rs_rccc_rx_remove(rs_rccc_rx *rx, uint32_t key);

typedef struct rs_rccc_tx {
    int64_t credit;             /* bytes it may still send (may go one packet below 0) */
    uint64_t max_credit;        /* credit held and requested are capped at this (0 = no cap) */
    uint64_t granted;           /* the largest cumulative grant received */
    uint64_t requested;         /* the cumulative request last computed */
    uint32_t mtu;               /* the smallest request while speculating with a backlog */
    int speculating;            /* still on the initial allowance */
    uint64_t sent;              /* statistics */
    uint64_t credit_received;
} rs_rccc_tx;

/* initial_credit: speculative bytes before any feedback (htsim: the max window, 1.5 BDP);
 * max_credit: cap of credit held and asked for (htsim: the configured max window); mtu: payload
 * bytes of a full packet. */
void rs_rccc_tx_init(rs_rccc_tx *tx, uint64_t initial_credit, uint64_t max_credit, uint32_t mtu);
/* The cumulative request to put in the next packet, for `backlog` bytes still to send (new and
 * retransmissions) with `active_sources` senders active on this NIC (>= 1: they share the ask). */
uint64_t rs_rccc_tx_request(rs_rccc_tx *tx, uint64_t backlog, uint32_t active_sources);
/* A credit (cumulative grant) arrived. */
void rs_rccc_tx_on_credit(rs_rccc_tx *tx, uint64_t granted);
/* An ACK, NACK or timeout: speculation ends (unused speculative credit is dropped). */
void rs_rccc_tx_on_feedback(rs_rccc_tx *tx);
/* Nonzero when a packet may go now (credit left). */
int rs_rccc_tx_may_send(const rs_rccc_tx *tx);
void rs_rccc_tx_on_sent(rs_rccc_tx *tx, uint32_t bytes);

#endif
