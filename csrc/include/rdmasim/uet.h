/* Ultra Ethernet transport parameters (csrc/uet/uet.h has the transport; docs/uet.md the options). */
#ifndef RDMASIM_PUBLIC_UET_H
#define RDMASIM_PUBLIC_UET_H

#include <stdint.h>

/* PDS delivery modes (UE 1.0 PDS): reliable unordered, reliable ordered, reliable unordered for
 * idempotent operations (no PDC at the target), unreliable unordered (no ACK, no retransmission). */
enum rs_uet_mode { RS_UET_RUD = 0, RS_UET_ROD = 1, RS_UET_RUDI = 2, RS_UET_UUD = 3 };

/* rs_uet_params.cc: the receiver-credit scheme (not an rdmasim/cc.h sender algorithm: the target's
 * pacer grants credit, the PDC sends on credit). */
#define RS_UET_CC_RCCC 128u

/* Per-flow PDS parameters. */
typedef struct rs_uet_params {
    uint32_t mtu;           /* payload bytes per packet */
    uint32_t window_bytes;  /* bytes in flight at most (a fixed window without congestion control) */
    uint32_t reorder_pkts;  /* a PSN not acknowledged while one this many PSNs later is: lost */
    uint32_t ack_every;     /* the target acknowledges at least every this many packets */
    int64_t rto_ps;         /* retransmit timeout before the first RTT sample, or always (rto_fixed) */
    int64_t rto_min_ps;     /* the estimated timeout's bounds (uet/rto.c) */
    int64_t rto_max_ps;
    uint8_t rto_fixed;      /* 1: rto_ps always, no estimate, no backoff */
    uint8_t mode;           /* enum rs_uet_mode */
    uint8_t trim_ok;        /* data packets may be trimmed by switches */
    uint8_t lb;             /* load balancing: 0 oblivious spraying, 1 REPS (uet/lb.h enum rs_uet_lb_kind) */
    uint8_t cc;             /* congestion control of a PDC: RS_CC_NONE (fixed window), RS_CC_NSCC, or
                             * RS_UET_CC_RCCC (receiver credit, uet/rccc_pds.c) */
    int64_t cc_base_rtt_ps; /* NSCC: the network's base RTT (its defaults follow from it) */
    uint64_t target_bytes;  /* the target buffer's length (SES: bytes beyond it are BAD_ADDR; 0 = unbounded) */
    uint8_t place;          /* packets carry the source buffer's bytes and the target places them */
    uint8_t target_access;  /* what the target buffer grants: enum rs_uet_access */
    uint32_t max_pdcs;      /* target: PDCs it holds as target at once (0: no limit but the 65535 ids) */
    int64_t idle_close_ps;  /* target: a PDC idle this long with its message whole is asked to close (0: never) */
} rs_uet_params;

/* rs_uet_params.target_access: a WRITE to a read-only buffer, a READ of a write-only one, is an
 * OP_VIOLATION (SES return code) */
enum rs_uet_access { RS_UET_ACCESS_RW = 0, RS_UET_ACCESS_READ = 1, RS_UET_ACCESS_WRITE = 2 };

/* PDC establishment and close counters of one host's UET endpoint (docs/uet.md). */
typedef struct rs_uet_ep_stats {
    uint64_t syn_sent;        /* requests sent with SYN (initiator) */
    uint64_t pdcs_created;    /* target PDCs created from a SYN */
    uint64_t closes_sent;     /* CLOSE control packets sent, resends included (initiator) */
    uint64_t pdcs_closed;     /* target PDCs released on a CLOSE */
    uint64_t pdcs_released;   /* initiator PDCs released on the CLOSE's ACK */
    uint64_t close_gave_up;   /* initiator PDCs released after RS_PDC_CLOSE_TRIES unanswered CLOSEs */
    uint64_t pdcs_live;       /* PDC ids in use on this host now (either role) */
    uint64_t rx_unknown;      /* UET frames for a PDC this host does not know (dropped; a request NACKed INV_DPDCID) */
    uint64_t pdcs_refused;    /* SYN requests NACKed NO_PDC_AVAIL: max_pdcs target PDCs open here */
    uint64_t close_reqs_sent; /* REQ_CLOSE control packets sent (target: max_pdcs pressure or idle_close) */
} rs_uet_ep_stats;

struct rs_sim;
/* Host `host`'s counters (zeros before its first UET frame): RS_OK, or RS_ERR_INVAL. */
int rs_uet_host_stats(const struct rs_sim *sim, int host, rs_uet_ep_stats *out);

#endif
