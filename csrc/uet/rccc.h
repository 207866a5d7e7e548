/* RCCC: the UEC receiver-credit congestion control, as a pure module the UET packet delivery
 * sublayer drives.  Receiver side: a credit scheduler per receiver that hands out credit (bytes a
 * sender may send) at the receiver's link rate, shared fairly among the senders that have data
 * for it (each sender's backlog comes with its data); credits ride on ACKs/credit packets.
 * Sender side: credit accounting (an initial speculative allowance, credit received, credit used).
 * Sources and rules: rccc.c.  Fixed-size state, no allocation, no globals.  Plain C (cffi-clean). */
#ifndef RDMASIM_UET_RCCC_H
#define RDMASIM_UET_RCCC_H

#include <stdint.h>

#define RS_RCCC_MAX_SENDERS 64 /* senders one receiver schedules at once */

typedef struct rs_rccc_rx_params {
    double link_bps;            /* the receiver's link rate: credit is issued at this rate */
    uint64_t max_outstanding;   /* credit granted and not yet used by data, per sender (bytes; ~ 1 BDP) */
    uint32_t mtu;               /* credit is granted in multiples of... nothing: bytes; mtu = smallest useful grant */
} rs_rccc_rx_params;

typedef struct rs_rccc_sender {
    uint32_t key;               /* the caller's sender id (e.g. a PDC id); slot free when !active */
    int active;                 /* has backlog or outstanding credit */
    uint64_t backlog;           /* bytes the sender said it still has to send */
    uint64_t outstanding;       /* credit granted, data not yet arrived */
    double accrued;             /* credit earned and not yet granted (bytes) */
    uint64_t granted_total;
} rs_rccc_sender;

typedef struct rs_rccc_rx {
    rs_rccc_rx_params p;
    int64_t last_ps;            /* credit accrued up to this time */
    uint32_t n_active;          /* senders with backlog */
    rs_rccc_sender s[RS_RCCC_MAX_SENDERS];
    uint64_t granted;           /* statistics */
    uint64_t arrived;
    uint64_t overflow;          /* senders refused: table full */
} rs_rccc_rx;

void rs_rccc_rx_init(rs_rccc_rx *rx, const rs_rccc_rx_params *p, int64_t now_ps);
/* Data (or a request-to-send with bytes 0) from sender `key` arrived: `bytes` of payload, and the
 * sender's remaining backlog after it.  Returns 0, or -1 when the table is full (the sender is
 * not scheduled: it keeps its speculative allowance only). */
int rs_rccc_rx_on_data(rs_rccc_rx *rx, int64_t now_ps, uint32_t key, uint32_t bytes, uint64_t backlog);
/* Credit (bytes) to put in the next ACK/credit packet to `key`, now; it is counted as granted. */
uint64_t rs_rccc_rx_grant(rs_rccc_rx *rx, int64_t now_ps, uint32_t key);

typedef struct rs_rccc_tx {
    uint64_t credit;            /* bytes it may send */
    uint64_t received;          /* statistics: credit received, bytes sent */
    uint64_t sent;
} rs_rccc_tx;

/* initial_credit: the speculative bytes a new sender may send before any credit (UEC: a sender
 * starts with an initial window; ~ 1 BDP). */
void rs_rccc_tx_init(rs_rccc_tx *tx, uint64_t initial_credit);
void rs_rccc_tx_on_credit(rs_rccc_tx *tx, uint64_t bytes);
/* Nonzero when a packet of `bytes` may go now. */
int rs_rccc_tx_may_send(const rs_rccc_tx *tx, uint32_t bytes);
void rs_rccc_tx_on_sent(rs_rccc_tx *tx, uint32_t bytes);

#endif
