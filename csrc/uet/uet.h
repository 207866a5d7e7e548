/* The Ultra Ethernet transport (UE specification 1.0): the packet delivery sublayer (PDS) with its
 * delivery modes (RUD, ROD, RUDI, UUD), and the semantic sublayer (SES) just enough for WRITE/SEND
 * messages of bulk flows.  A sibling of the IB transport (csrc/transport): the same link-layer
 * seam below (the host port's client table, link/port.h) and the same congestion-control
 * interface beside it (rdmasim/cc.h); neither transport includes the other.
 *
 *   pds.c      the PDS state machines, sans-I/O: the initiator's (PSNs, the window, SACK and NACK
 *              handling, loss by a SACK gap of reorder_pkts packets or by the retransmit timer)
 *              and the target's (PSN bitmap, cumulative ACK PSN, ACK coalescing, the SACK bitmap),
 *              and what each delivery mode changes in them
 *   pdc_setup.c PDC establishment (SYN) and close (the CLOSE exchange), sans-I/O
 *   rto.c      the retransmit timeout: fixed, or from an RTT estimate with backoff
 *   ses_read.c the SES READ: the reader's zero-length READ request, the data holder's responses
 *              with data (on the request's PDC, in its reverse direction)
 *   endpoint.c a host's UET endpoint: PDC tables, frames built and received, the transmit
 *              round robin over PDCs, timers, bulk flows; the port client it offers
 *
 * A PDC here is one record for both halves: the initiator half on the source host and the target
 * half on the destination host, each known by its own host's PDC id.  The initiator's half starts
 * with the flow; the target's is created by the first SYN request and released by the CLOSE
 * exchange (pdc_setup.c).  RUDI and UUD have no PDC at the target: the record only keeps their
 * flow's counters there. */
#ifndef RDMASIM_UET_H
#define RDMASIM_UET_H

#include <stdint.h>

#include "engine/engine.h"
#include "link/frame.h"
#include "link/net.h"
#include "rdmasim/cc.h"
#include "rdmasim/codec.h"
#include "rdmasim/pool.h"
#include "rdmasim/rng.h"
#include "rdmasim/uet.h"
#include "uet/lb.h"
#include "uet/rccc.h"

/* Event kinds of the UET's timers (the other layers' are in their headers; sim/sim.c dispatches). */
enum rs_uet_event {
    RS_EV_UET_RTO = 30, /* owner: rs_pdc, the initiator's retransmit timer */
    RS_EV_UET_PACER = 35, /* owner: rs_uet_ep, the target's RCCC credit pacer (uet/rccc_pds.c) */
    RS_EV_UET_IDLE = 36, /* owner: rs_pdc, the target's idle-close timer (prm.idle_close_ps) */
};

/* PSNs one PDC may have in flight (a power of two): the initiator's slot ring and the target's
 * bitmap.  The window never lets more go. */
#define RS_PDS_SLOTS 1024u
#define RS_PDS_SACK_BITS 64u

/* Initiator slot of one PSN in flight. */
enum rs_pds_slot_state { RS_PDS_FREE = 0, RS_PDS_SENT = 1, RS_PDS_LOST = 2, RS_PDS_ACKED = 3 };
typedef struct rs_pds_slot {
    int64_t sent_ps;
    uint32_t off;   /* byte offset in the message */
    uint16_t len;
    uint16_t ev;    /* entropy value it went with last */
    uint8_t state;
    uint8_t sends;  /* transmissions so far */
} rs_pds_slot;

/* Counters of one PDC (both halves). */
typedef struct rs_pdc_stats {
    uint64_t pkts_sent;     /* data packets sent, first transmissions and retransmissions */
    uint64_t pkts_retx;     /* retransmissions */
    uint64_t loss_sack;     /* PSNs declared lost by a SACK gap */
    uint64_t loss_rto;      /* PSNs declared lost by the retransmit timer */
    uint64_t acks_rcvd;     /* ACKs at the initiator */
    uint64_t nacks_rcvd;    /* NACKs at the initiator */
    uint64_t trims_rcvd;    /* trimmed packets at the target */
    uint64_t ecn_acks;      /* ACKs echoing a CE mark */
    uint64_t acks_sent;     /* ACKs the target sent */
    uint64_t dups_rcvd;     /* duplicate PSNs at the target */
    uint64_t bytes_rcvd;    /* new payload bytes placed at the target */
    uint64_t pkts_rcvd;     /* UUD: data packets that reached the target */
    uint64_t ooo_dropped;   /* ROD: requests dropped at the target for arriving out of order */
    uint64_t stale_dropped; /* duplicates below the cleared PSN, dropped at the target without an ACK */
} rs_pdc_stats;

struct rs_uet;
struct rs_uet_ep;

typedef struct rs_pdc {
    struct rs_uet *uet;
    struct rs_pdc *act_next;  /* the initiator's endpoint transmit ring (circular), or NULL */
    struct rs_pdc *act_prev;
    struct rs_pdc *free_next; /* the free list */
    int32_t src, dst;         /* initiator and target hosts */
    uint16_t src_id, dst_id;  /* the PDC id on each host (spdcid / dpdcid of the initiator's packets) */
    uint16_t msg_id;
    uint8_t ses_opcode;
    uint8_t live;             /* the initiator's half exists (until the close exchange ends) */
    uint8_t tgt_live;         /* the target's half exists (created from a SYN, gone at CLOSE) */
    uint8_t syn;              /* the initiator sends SYN: no ACK from the target yet (pdc_setup.c) */
    uint8_t closing;          /* the initiator sent CLOSE for close_psn and waits for its ACK */
    uint8_t close_sends;
    uint32_t close_psn;
    uint64_t flow_ref;        /* the bulk flow's id + 1 (0: none) */
    rs_uet_params prm;
    rs_link_path path;        /* initiator -> target */
    rs_link_path back;        /* target -> initiator (ACKs) */

    /* ---- initiator ---- */
    uint64_t msg_len;
    uint64_t next_off;        /* next new byte */
    uint64_t acked_bytes;
    uint64_t inflight_bytes;  /* sent, neither acknowledged nor declared lost */
    uint32_t start_psn;
    uint32_t next_psn;        /* next new PSN */
    uint32_t una_psn;         /* oldest PSN not acknowledged */
    uint32_t high_acked;      /* highest PSN acknowledged + 1 */
    uint32_t loss_scan;       /* PSNs below it were checked against the SACK-gap rule */
    uint32_t window_bytes;    /* bytes that may be in flight now */
    uint32_t rq_head, rq_len; /* retransmission queue (PSNs, a ring of RS_PDS_SLOTS) */
    int64_t start_ps;
    rs_timer rto;
    rs_pds_slot *slots;       /* RS_PDS_SLOTS */
    uint32_t slots_init;      /* slots 0 .. slots_init - 1 were ever written (pds.c: the others hold garbage) */
    uint32_t *rq;             /* RS_PDS_SLOTS */

    /* ---- target ---- */
    uint32_t rx_cack;         /* every PSN up to it received (start PSN - 1 at first) */
    uint32_t rx_max;          /* highest PSN received + 1 */
    uint32_t rx_unacked;      /* packets accepted since the last ACK */
    uint32_t rx_nacked;       /* ROD: the expected PSN the last ROD_OOO NACK asked for */
    uint8_t rx_nack_sent;     /* ROD: rx_nacked is valid */
    uint32_t rx_clear;        /* the initiator cleared every PSN below it (its requests' clear PSN) */
    uint64_t rx_bytes;
    uint64_t rx_bitmap[RS_PDS_SLOTS / 64]; /* PSN p above rx_cack received: bit p % RS_PDS_SLOTS */

    /* the retransmit timeout now (rto.c): the initiator's smoothed RTT and its mean deviation */
    int64_t rto_ps;
    int64_t srtt_ps;          /* 0: no sample yet */
    int64_t rttvar_ps;

    rs_pdc_stats st;
    rs_uet_lb lb;             /* the initiator's entropy per data packet (uet/lb.c) */
    /* the initiator's congestion control (rdmasim/cc.h; NULL: the fixed window prm.window_bytes):
     * its window is window_bytes, fed by each ACK (RTT sample, ECN echo) and each loss */
    const rs_cc_algo *cc;
    _Alignas(8) uint8_t cc_params[RS_CC_PARAMS_BYTES];
    _Alignas(8) uint8_t cc_state[RS_CC_STATE_BYTES];
    /* RCCC (prm.cc RS_UET_CC_RCCC, uet/rccc_pds.c): the initiator's credit, the last cumulative
     * request it sent; the target's last cumulative request seen from it */
    rs_rccc_tx rccc;
    uint64_t rccc_req_sent;
    uint64_t rccc_req_seen;
    /* SES (uet/ses.c): the target's return code for the message so far; the initiator's response */
    const uint8_t *src_buf;   /* place: the message's bytes at the initiator (NULL: lengths only) */
    uint8_t *dst_buf;         /* place: the target buffer, dst_len bytes */
    uint64_t dst_len;
    uint8_t tgt_rc;
    uint8_t ses_done;
    uint8_t ses_rc;
    uint32_t ses_mod_len;
    /* SES READ (uet/ses_read.c): the READ request's PDC (reader -> data holder, no payload) or its
     * responses with data (data holder -> reader); 0: neither */
    uint8_t read_role;
    uint8_t read_prio;
    uint16_t read_msg_id;     /* responses: the READ's message id */
    uint32_t read_len;        /* request: the bytes to read */
    struct rs_pdc *read_resp; /* request: the responses' PDC, once the data holder executed it */
    struct rs_pdc *read_req;  /* responses: the READ request's PDC they ride on, in its reverse
                               * direction (its ids, no SYN, closed with it) */
    uint8_t close_wait;       /* request: released, its close waits for the responses to end */
    uint8_t failed;           /* the target NACKed the PDC as unknown (INV_DPDCID): no close */
    uint8_t close_req_sent;   /* target: it asked the initiator to close (REQ_CLOSE) */
    rs_timer idle;            /* target: the idle-close timer (RS_EV_UET_IDLE; prm.idle_close_ps) */
    int64_t rx_last_ps;       /* target: when its last packet arrived */
} rs_pdc;

enum rs_uet_read_role { RS_UET_READ_REQ = 1, RS_UET_READ_RESP = 2 };

/* ---- the PDS state machines (pds.c): no packets, no timers, no I/O ---- */

/* A data packet the initiator sends next. */
typedef struct rs_pds_tx {
    uint32_t psn;
    uint32_t off;
    uint16_t len;
    uint8_t retx;   /* a retransmission of psn */
    uint8_t ar;     /* ask for an ACK now */
    uint8_t som, eom;
} rs_pds_tx;

void rs_pds_init(rs_pdc *c, uint64_t msg_len, uint32_t start_psn);
/* The slot of psn, or *zero when the PDC never wrote it (any PSN, sent or not). */
const rs_pds_slot *rs_pds_slot_at(const rs_pdc *c, uint32_t psn, const rs_pds_slot *zero);
/* May the initiator send now (a retransmission queued, or window and message left)? */
int rs_pds_can_send(const rs_pdc *c);
/* The next data packet (a queued retransmission first): 1 and *out, or 0. Records it as sent now. */
int rs_pds_next(rs_pdc *c, int64_t now, rs_pds_tx *out);
/* An ACK / ACK_CC for the initiator: what it acknowledged and newly declared lost. */
typedef struct rs_pds_ack_res {
    uint64_t acked_bytes;   /* newly acknowledged */
    uint32_t lost;          /* PSNs newly declared lost (queued for retransmission) */
    uint8_t done;           /* every byte of the message acknowledged */
} rs_pds_ack_res;
void rs_pds_on_ack(rs_pdc *c, const rs_uet_hdr *ack, rs_pds_ack_res *res);
/* A NACK for psn with its code and payload: the PSNs it queued for retransmission (psn itself, or
 * for ROD_OOO every PSN from the expected one in payload). */
uint32_t rs_pds_on_nack(rs_pdc *c, uint32_t psn, uint8_t code, uint32_t payload);
/* RUDI: the response for one PSN (its pkt_id decoded by rs_pds_rudi_psn). */
void rs_pds_on_resp(rs_pdc *c, uint32_t psn, rs_pds_ack_res *res);
/* RUDI: a request's pkt_id (the initiator's PDC id, the PSN's low 16 bits) and back. */
uint32_t rs_pds_rudi_pkt_id(const rs_pdc *c, uint32_t psn);
uint32_t rs_pds_rudi_psn(const rs_pdc *c, uint32_t pkt_id);
/* The retransmit timer fired at now: PSNs sent rto_ps ago or earlier are lost (*lost of them);
 * returns when the timer is due next (INT64_MAX: nothing in flight). */
int64_t rs_pds_on_rto(rs_pdc *c, int64_t now, uint32_t *lost);
/* The time the retransmit timer should fire for what is in flight (INT64_MAX: nothing). */
int64_t rs_pds_rto_due(const rs_pdc *c);

/* The target's verdict on a request, and the ACK it sends (when ack is set). */
typedef struct rs_pds_rx_res {
    uint8_t fresh;      /* new PSN: its bytes count */
    uint8_t ack;        /* send an ACK now */
    uint8_t complete;   /* the message's last byte arrived with this packet */
    uint8_t nack;       /* send a NACK with this code (0: none): ROD_OOO */
    uint32_t nack_payload;
    uint32_t cack_psn;
    int16_t ack_psn_off;
    int16_t sack_off;
    uint64_t sack_bitmap;
} rs_pds_rx_res;
/* A request with psn and len payload bytes arrived (ar: its ACK request flag; clear: its clear PSN,
 * psn + clear_psn_offset). */
void rs_pds_rx(rs_pdc *c, uint32_t psn, uint32_t clear, uint32_t len, int ar, rs_pds_rx_res *res);
/* The ACK fields for the target's state now, acknowledging psn. */
void rs_pds_rx_ack_fields(const rs_pdc *c, uint32_t psn, rs_pds_rx_res *res);

/* ---- the retransmit timeout (rto.c) ---- */
void rs_uet_rto_init(rs_pdc *c);
/* An RTT sample (from a packet sent once; < 0: none): 1 when the timeout fell. */
int rs_uet_rto_sample(rs_pdc *c, int64_t rtt_ps);
/* An ACK acknowledged something new: the backoff ends (1 when the timeout fell). */
int rs_uet_rto_progress(rs_pdc *c);
/* A timeout declared a loss: double the timeout (to rto_max). */
void rs_uet_rto_backoff(rs_pdc *c);

/* ---- PDC establishment and close (pdc_setup.c): no packets, no timers ---- */

/* RUD and ROD PDCs have SYN and close; RUDI and UUD have no PDC to set up. */
int rs_pdc_has_setup(const rs_pdc *c);
void rs_pdc_setup_init(rs_pdc *c);
/* The field a SYN request carries instead of dpdcid: pdc_mode:4 | psn_offset:12. */
uint16_t rs_pdc_syn_field(const rs_pdc *c, uint32_t psn);
/* Target: does a SYN request (psn, field) name this PDC's start PSN? */
int rs_pdc_syn_accept(const rs_pdc *c, uint32_t psn, uint16_t field);
/* Initiator: an ACK or NACK from the target's id: 1 when it ended SYN (the id is learnt). */
int rs_pdc_on_ack(rs_pdc *c, uint16_t target_id);
/* Initiator: nothing more to send, everything acknowledged: 1 when a CLOSE is to go (close_psn). */
int rs_pdc_close_begin(rs_pdc *c);
/* Initiator: does an ACK with this cumulative PSN acknowledge the CLOSE? */
int rs_pdc_close_acked(const rs_pdc *c, uint32_t cack_psn);
/* Target: may it close on a CLOSE with this PSN (every PSN below it arrived)? */
int rs_pdc_close_ok(const rs_pdc *c, uint32_t psn);
#define RS_PDC_CLOSE_TRIES 16u /* CLOSE sends before the initiator gives up and releases its half */

/* ---- endpoints (endpoint.c) ---- */

/* PDC ids of one host: an open-addressing table id -> PDC (ids cyclic 1..65535). */
typedef struct rs_uet_ids {
    rs_pdc **slot;
    uint16_t *key;
    uint32_t cap;   /* power of two */
    uint32_t live;
    uint32_t dead;  /* deleted entries still in the table: live + dead stays at most half of cap */
    uint16_t next;
} rs_uet_ids;

typedef struct rs_uet_ep {
    int32_t host;
    rs_port *port;
    rs_uet_ids ids;
    rs_pdc *ring;           /* initiator PDCs with something to send, round robin */
    uint32_t ring_len;
    rs_pkt *ctrl_head;      /* ACKs / NACKs waiting for the wire */
    rs_pkt *ctrl_tail;
    uint64_t rx_unknown;    /* UET frames for a PDC id this host does not know (dropped) */
    uint32_t n_tgt;         /* RUD / ROD PDCs this host holds as target (created from a SYN) */
    rs_uet_ep_stats st;     /* PDC establishment and close */
    rs_rccc_rx *rccc;       /* the RCCC credit pacer of this host as a target (NULL until first used) */
    rs_timer pacer;         /* its next grant (RS_EV_UET_PACER) */
} rs_uet_ep;

/* The Ultra Ethernet transport of one simulation. */
typedef struct rs_uet {
    rs_net *net;            /* the link layer (and the engine: net->eng) */
    rs_pool *pool;          /* the packet pool */
    rs_uet_ep **eps;        /* by host index (NULL: no endpoint yet) */
    uint32_t n_eps;
    rs_pdc *free_pdcs;      /* released PDCs, kept: their timers may still have heap entries */
    rs_pdc **all_pdcs;      /* every PDC allocated (freed with the simulation) */
    uint32_t n_all, cap_all;
    /* A PDC of a bulk flow finished (its message acknowledged): the workload registers this. */
    void (*flow_complete)(void *ctx, uint64_t flow_ref, const rs_pdc *c);
    /* ... and its target has every byte of the message (once per PDC; may be NULL) */
    void (*flow_received)(void *ctx, uint64_t flow_ref, const rs_pdc *c);
    /* ... and its initiator sent the message's last byte for the first time (may be NULL) */
    void (*flow_sent)(void *ctx, uint64_t flow_ref, const rs_pdc *c);
    /* the bytes of the PDC rs_uet_start makes next (then cleared): source, target buffer, its length */
    const uint8_t *next_src;
    uint8_t *next_dst;
    uint64_t next_dst_len;
    /* ... and its READ role (uet/ses_read.c): the request's read length, the responses' READ id */
    uint8_t next_read_role;
    uint32_t next_read_len;
    uint16_t next_read_msg_id;
    struct rs_pdc *next_read_req;
    void *flow_ctx;
} rs_uet;

/* The endpoint of host `host` (created at first use; its port must exist): NULL on out of memory. */
rs_uet_ep *rs_uet_ep_get(rs_uet *u, int host);
/* The port-client calls of an endpoint (link/port.h's table, without ctx: the composition root
 * multiplexes them with the IB transport's on the host's one port). */
rs_pkt *rs_uet_next_frame(rs_uet_ep *ep);
int rs_uet_idle_after(rs_uet_ep *ep, int64_t free_ps);
void rs_uet_receive(rs_uet *u, rs_uet_ep *ep, rs_pkt *pkt);
/* The retransmit timer of a PDC fired. */
void rs_uet_rto(rs_uet *u, rs_pdc *c);
/* The idle-close timer of a PDC's target half fired. */
void rs_uet_idle(rs_uet *u, rs_pdc *c);
/* Start moving `size` bytes from host src to dst over a new PDC (SES opcode WRITE or SEND), on
 * priority class prio (DSCP 8 x prio); flow_ref names it to flow_complete.  Returns the PDC, or
 * NULL with the reason in the engine's errmsg. */
rs_pdc *rs_uet_start(rs_uet *u, int src, int dst, uint64_t size, uint8_t prio, uint8_t ses_opcode,
                     const rs_uet_params *prm, uint64_t flow_ref);
/* Give a finished PDC back (after flow_complete). */
void rs_uet_release(rs_uet *u, rs_pdc *c);
void rs_uet_free(rs_uet *u);

/* endpoint.c's frame helpers for the sublayers beside it (rccc_pds.c): a fresh frame on a path, an
 * ACK/NACK/control frame queued ahead of data, the PDC of an id, a PDC that may send again queued */
rs_pkt *rs_uet_frame(rs_uet *u, const rs_link_path *path, int src, int dst);
void rs_uet_send_ctrl(rs_uet *u, rs_uet_ep *ep, rs_pkt *p);
rs_pdc *rs_uet_pdc_of(rs_uet_ep *ep, uint16_t id);
void rs_uet_wake(rs_uet *u, rs_pdc *c);

/* ---- SES (ses.c): target checks, the response header, completion on the response ---- */
/* Target: a new data packet of c (buffer and key checks; the first error sticks in c->tgt_rc). */
void rs_ses_target_check(rs_pdc *c, const rs_pkt *pkt);
/* Target: the SES response for c's message in ACK header h (every byte arrived). */
void rs_ses_response(const rs_pdc *c, rs_uet_hdr *h);
/* Initiator: data packet p carries the source bytes at message offset off (when c has them). */
void rs_ses_fill(rs_uet *u, const rs_pdc *c, rs_pkt *p, uint64_t off);
/* Target: new data packet pkt's bytes land in c's target buffer (when it has one and no error). */
void rs_ses_place(rs_pdc *c, const rs_pkt *pkt);
/* Initiator: a mode without SES responses (RUDI) completes c's message as done: 1. */
int rs_ses_unanswered(rs_pdc *c);
/* The work-completion status (RS_WC_STATUS_*) of a message that ended with SES return code rc, as
 * a verbs provider reports the matching remote error. */
uint32_t rs_ses_wc_status(uint8_t rc);
/* Initiator: 1 when pkt carries the response to c's message (c->ses_rc, ses_mod_len set). */
int rs_ses_on_response(rs_pdc *c, const rs_pkt *pkt);

/* ---- SES READ (ses_read.c) ---- */
/* Initiator: the SES fields of data packet p of a READ request or of a response with data. */
void rs_ses_read_fill(const rs_pdc *c, const rs_pds_tx *tx, rs_pkt *p);
/* Target: the READ request c arrived whole: start its responses with data (once); their PDC. */
rs_pdc *rs_ses_read_execute(rs_uet *u, rs_pdc *c);
/* Initiator: a READ request or responses' PDC completes on its PDS acknowledgement: 1. */
int rs_ses_read_acked(rs_pdc *c, int pds_done);
/* Target: does c's message get an SES response on its ACKs (not a READ request nor read data)? */
int rs_ses_read_answered(const rs_pdc *c);

/* ---- RCCC, receiver-credit congestion control (rccc_pds.c over the pure rccc.c) ----
 * The initiator's data packets are RUD_CC_REQs carrying its cumulative credit request; the target's
 * pacer grants credit at its link rate in CTRL CREDIT packets, and each ACK_CC (cc_type CREDIT)
 * carries the cumulative grant too; a sender out of credit with more to ask sends a CTRL
 * CREDIT_REQ. */
void rs_uet_rccc_start(rs_uet *u, rs_pdc *c);
/* Initiator: may c send a data packet now?  When not, asks for credit if it has not yet. */
int rs_uet_rccc_may_send(rs_uet *u, rs_uet_ep *ep, rs_pdc *c);
/* Initiator: data packet p of tx->len bytes goes now: spend the credit, put the request in it. */
void rs_uet_rccc_on_data(rs_pdc *c, rs_pkt *p);
/* Target: a data packet of c arrived (its request); its ACK's credit fields. */
void rs_uet_rccc_on_request(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt);
void rs_uet_rccc_ack(const rs_uet_ep *ep, const rs_pdc *c, rs_uet_hdr *h);
/* Target: the PDS took data packet pkt as new. */
void rs_uet_rccc_on_received(rs_uet *u, rs_uet_ep *ep, const rs_pkt *pkt);
/* Initiator: an ACK or NACK of c arrived (its credit). */
void rs_uet_rccc_on_feedback(rs_pdc *c, const rs_pkt *pkt);
/* A CTRL packet for c (CREDIT at the initiator, CREDIT_REQ at the target). */
void rs_uet_rccc_ctrl(rs_uet *u, rs_uet_ep *ep, rs_pdc *c, const rs_pkt *pkt);
/* The pacer of ep fired. */
void rs_uet_pacer(rs_uet *u, rs_uet_ep *ep);
/* c closes: its target's pacer forgets it. */
void rs_uet_rccc_close(rs_uet *u, rs_pdc *c);

#endif
