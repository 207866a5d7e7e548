/* Ultra Ethernet transport parameters (csrc/uet/uet.h has the transport; docs/uet.md the options). */
#ifndef RDMASIM_PUBLIC_UET_H
#define RDMASIM_PUBLIC_UET_H

#include <stdint.h>

/* PDS delivery modes (UE 1.0 PDS): reliable unordered, reliable ordered, reliable unordered for
 * idempotent operations (no PDC at the target), unreliable unordered (no ACK, no retransmission). */
enum rs_uet_mode { RS_UET_RUD = 0, RS_UET_ROD = 1, RS_UET_RUDI = 2, RS_UET_UUD = 3 };

/* Per-flow PDS parameters. */
typedef struct rs_uet_params {
    uint32_t mtu;           /* payload bytes per packet */
    uint32_t window_bytes;  /* bytes in flight at most (a fixed window without congestion control) */
    uint32_t reorder_pkts;  /* a PSN not acknowledged while one this many PSNs later is: lost */
    uint32_t ack_every;     /* the target acknowledges at least every this many packets */
    int64_t rto_ps;         /* retransmit timeout */
    uint8_t mode;           /* enum rs_uet_mode */
    uint8_t trim_ok;        /* data packets may be trimmed by switches */
    uint8_t lb;             /* load balancing: 0 oblivious spraying, 1 REPS (uet/lb.h enum rs_uet_lb_kind) */
    uint8_t cc;             /* congestion control of a PDC: RS_CC_NONE (fixed window) or RS_CC_NSCC */
    int64_t cc_base_rtt_ps; /* NSCC: the network's base RTT (its defaults follow from it) */
} rs_uet_params;

#endif
