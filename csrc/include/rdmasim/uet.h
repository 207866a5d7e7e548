/* Ultra Ethernet transport parameters (csrc/uet/uet.h has the transport; docs/uet.md the options). */
#ifndef RDMASIM_PUBLIC_UET_H
#define RDMASIM_PUBLIC_UET_H

#include <stdint.h>

enum rs_uet_mode { RS_UET_RUD = 0, RS_UET_ROD = 1 };

/* rs_uet_params.cc: the receiver-credit scheme (not an rdmasim/cc.h sender algorithm: the target's
 * pacer grants credit, the PDC sends on credit). */
#define RS_UET_CC_RCCC 128u

/* Per-flow PDS parameters. */
typedef struct rs_uet_params {
    uint32_t mtu;           /* payload bytes per packet */
    uint32_t window_bytes;  /* bytes in flight at most (a fixed window without congestion control) */
    uint32_t reorder_pkts;  /* a PSN not acknowledged while one this many PSNs later is: lost */
    uint32_t ack_every;     /* the target acknowledges at least every this many packets */
    int64_t rto_ps;         /* retransmit timeout */
    uint8_t mode;           /* enum rs_uet_mode (RUD only so far) */
    uint8_t trim_ok;        /* data packets may be trimmed by switches */
    uint8_t lb;             /* load balancing: 0 oblivious spraying, 1 REPS (uet/lb.h enum rs_uet_lb_kind) */
    uint8_t cc;             /* congestion control of a PDC: RS_CC_NONE (fixed window), RS_CC_NSCC, or
                             * RS_UET_CC_RCCC (receiver credit, uet/rccc_pds.c) */
    int64_t cc_base_rtt_ps; /* NSCC: the network's base RTT (its defaults follow from it) */
    uint64_t target_bytes;  /* the target buffer's length (SES: bytes beyond it are BAD_ADDR; 0 = unbounded) */
    uint8_t place;          /* packets carry the source buffer's bytes and the target places them */
} rs_uet_params;

#endif
