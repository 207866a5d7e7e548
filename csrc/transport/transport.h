/* Calls between the transport roles (requester, responder, completer), the
 * QP object and the NIC.  Each protocol rule lives in exactly one of:
 *   requester.c  segmentation, opcodes, PSN assignment, A bit, gather, Go-Back-N rewind
 *   responder.c  PSN check, one NAK per gap, duplicates, opcode sequence, execute, ACK
 *   completer.c  ACK/NAK/RNR handling, completions in order, retransmit timer, retry counts
 *   qp_state.c   the QP state machine and its attribute masks
 *   qp.c         create/destroy, post_send/post_recv, entering ERR (flush)
 *   qpn.c        QP numbers (cyclic, as rxe) and the table of live QPs by number
 *   irn.c        IRN selective repeat (RS_RECOVERY_IRN): SACK bitmap, recovery mode, RTO_low/high,
 *                out-of-order placement; the Go-Back-N entry points branch to it in one line */
#ifndef RDMASIM_TRANSPORT_H
#define RDMASIM_TRANSPORT_H

#include <stdint.h>

#include "engine/engine.h"
#include "link/net.h"
#include "rdmasim/codec.h"
#include "rdmasim/eventq.h"
#include "rdmasim/mutants.h"
#include "rdmasim/pool.h"
#include "rdmasim/slab.h"
#include "rdmasim/verbs.h"
#include "transport/host.h"

/* Event kinds of the transport's timers (rs_timer.kind; the link layer's are in link/net.h, and
 * sim/sim.c dispatches them all). */
enum rs_transport_event {
    RS_EV_QP_RTO = 3,         /* owner: rs_qp, retransmit (local ACK) timeout */
    RS_EV_QP_RNR = 4,         /* owner: rs_qp, RNR wait over */
    /* 11 was the per-QP congestion-control timer: CC timers now run lazily (cc_qp.c) */
    RS_EV_NIC_PACE = 12,      /* owner: rs_host, a paced QP may send */
    RS_EV_QP_RESP_DRAIN = 13, /* owner: rs_qp, run requests held behind a finished READ */
    RS_EV_QP_ACK = 17,        /* owner: rs_qp, a coalesced ACK is due (responder.c) */
    RS_EV_NIC_LOOPBACK = 16,  /* owner: rs_host, a frame the NIC looped back to itself is received (nic.c) */
    RS_EV_QP_REORDER = 26,    /* owner: rs_qp, an out-of-order responder's reorder time is over (irn.c) */
};

/* The transport's context: the hosts and their QPs' memory, over the link layer's network.  The
 * simulation (sim/) embeds one and passes it down. */
typedef struct rs_transport {
    rs_net net;      /* the engine (net.eng) and the ports, links, switches (link/net.h) */
    rs_pool pool;    /* packets (net.pool points here) */
    rs_host **hosts;
    uint32_t n_hosts;
    /* Every QP's memory.  A destroyed QP goes back to the slab for reuse and is freed only with the
     * simulation: event-queue entries of its timers may still be in the heap (lazy cancel), and
     * reading such an entry's timer must find memory of a QP, never freed memory.  A reused QP's
     * timers get new sequence numbers, so old entries stay stale (rdmasim/eventq.h). */
    rs_slab qp_slab;
    rs_slab qp_cc_slab; /* QPs created on a host that runs CC: rs_qp plus RS_CC_STATE_BYTES (qp.h) */
    rs_slab cc_slab;    /* CC state of a QP created before its host turned CC on (cc_qp.c) */
    int peer_stop;      /* a scripted peer got a frame: return to Python after this event */
    /* A QP carrying a bulk flow (rs_qp.flow_ref) completed its work request: called instead of
     * writing a CQE.  The workload registers it (and its context) with its flow table. */
    void (*flow_complete)(void *ctx, rs_qp *qp, uint32_t status);
    /* Its responder accepted in order the last packet of a SEND/WRITE message (rs_qp_msg_received) */
    void (*flow_received)(void *ctx, rs_qp *qp);
    void *flow_ctx;
    /* congestion-control plug-ins registered with this simulation (cc_plugin.c): copies of their
     * tables, kind RS_CC_COUNT + i, with their names */
    rs_cc_algo cc_plugins[RS_CC_PLUGINS];
    char cc_plugin_names[RS_CC_PLUGINS][RS_CC_PLUGIN_NAME];
    uint32_t n_cc_plugins;
    /* Tests only (rs_sim_set_key_recheck): every packet resolves its keys itself, as before the
     * one-packet shortcuts (requester.c check_sges, responder.c rs_resp_exec_write), which reuse the
     * resolution the message's first check made; both must give the same simulation. */
    uint8_t key_recheck;
} rs_transport;

/* ---- NIC (transport/nic.c) ---- */
/* The host port's client: these NIC calls behind the link-layer seam (link/port.h). */
rs_port_client rs_nic_port_client(rs_host *h);
/* The host's QP count changed: the port's frame-coming hint is wanted only with many QPs (their
 * lines then miss the caches), so the link makes no call per frame for a NIC with a few. */
void rs_nic_qps_changed(rs_host *h);
/* The NIC's next frame for its port: a control frame, else a data frame round-robin over QPs. */
rs_pkt *rs_nic_next_frame(rs_transport *tp, rs_host *h);
/* A frame arrived at the host's port. Takes ownership of pkt. */
/* A frame for host h was just put on its link: start loading what its arrival reads (nic.c). */
void rs_nic_frame_coming(rs_host *h, const rs_pkt *pkt);
void rs_nic_receive(rs_transport *tp, rs_host *h, rs_pkt *pkt);
/* Queue a control frame (ACK/NAK) and kick the port. */
void rs_nic_send_ctrl(rs_transport *tp, rs_host *h, rs_pkt *pkt);
/* After a frame that ends at free_ps: 1 if nothing can be sent before the NIC's pace timer (which is
 * then armed, not before free_ps), so the port needs no transmit-done event; 0 otherwise. */
int rs_nic_idle_after(rs_transport *tp, rs_host *h, int64_t free_ps);
/* RoCE loopback: the port hands back a frame for the NIC's own host with its serialisation time
 * at the port link's rate; it reaches rs_nic_receive then, never the link; the loopback event. */
void rs_nic_loopback(rs_transport *tp, rs_host *h, rs_pkt *pkt, int64_t ser_ps);
void rs_nic_loopback_arrival(rs_transport *tp, rs_host *h);
/* The QP may have a packet to send: put it on the round-robin ring and kick the port. */
void rs_nic_wake(rs_transport *tp, rs_qp *qp);
/* peer.c: keep a frame that reached a scripted host for Python. */
void rs_peer_deliver(rs_transport *tp, rs_host *h, rs_pkt *pkt);
/* Fill the L2/L3/UDP/BTH fields every packet from this QP carries. */
rs_pkt *rs_nic_new_packet(rs_transport *tp, rs_qp *qp, uint8_t opcode, uint32_t psn);
/* Resolve the QP's link-layer path (qp->path) through its port, from its address vector. */
void rs_qp_resolve_path(rs_qp *qp);


/* Record a failure reason in the engine; returns `code` for tail calls (control path). */
int rs_tp_fail(rs_transport *tp, int code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The transport's side of the public verbs calls (rdmasim/verbs.h, fabric.h): sim/verbs_api.c
 * maps each rs_* call taking the simulation to the rs_tp_* one taking its transport. */
int rs_tp_host_set_cc(rs_transport *tp, int host, int kind, const void *params, size_t params_size,
                      int np_enabled, int64_t cnp_interval_ps, uint32_t cnp_dscp);
double rs_tp_qp_rate_bps(const rs_transport *tp, int host, uint32_t qpn);
int rs_tp_qp_dcqcn_state(const rs_transport *tp, int host, uint32_t qpn, rs_dcqcn_rp *out);
/* The QP's CC state bytes (its algorithm's state struct) and kind; 0 when it runs none. */
int rs_tp_qp_cc_state(const rs_transport *tp, int host, uint32_t qpn, void *out, size_t cap, int *kind);
/* ---- congestion-control plug-ins (cc_plugin.c) ---- */
/* The algorithm of a kind: built in (rs_cc_algo_get) or a plug-in of this simulation; NULL for
 * RS_CC_NONE and unknown kinds. */
const rs_cc_algo *rs_tp_cc_algo(const rs_transport *tp, int kind);
/* Its name ("none", "dcqcn", ..., a plug-in's), NULL for an unknown kind. */
const char *rs_tp_cc_name(const rs_transport *tp, int kind);
/* Register a copy of *algo under `name`: its kind (>= RS_CC_COUNT), or an RS_ERR_* with the reason. */
int rs_tp_cc_plugin_add(rs_transport *tp, const rs_cc_algo *algo, const char *name);
int rs_tp_cq_create(rs_transport *tp, int host, uint32_t cqe);
int rs_tp_cq_destroy(rs_transport *tp, int host, int idx);
int rs_tp_cq_resize(rs_transport *tp, int host, int idx, uint32_t cqe);
int rs_tp_cq_poll(rs_transport *tp, int host, int idx, rs_wc *out, int n);
int rs_tp_cq_count(const rs_transport *tp, int host, int idx);
int rs_tp_host_rx_counters(const rs_transport *tp, int host, uint64_t out[RS_HOST_RX_COUNTERS]);
int rs_tp_host_set_dscp_map(rs_transport *tp, int host, const uint8_t *map);
int rs_tp_host_set_rx(rs_transport *tp, int host, int enable, int64_t rate_bps, uint64_t buf_bytes,
                      uint64_t xoff_bytes, uint64_t xon_bytes, uint8_t prio_mask, uint16_t quanta);
int rs_tp_host_rx_stats_get(const rs_transport *tp, int host, rs_host_rx_stats *out);
int rs_tp_qp_set_recovery(rs_transport *tp, int host, uint32_t qpn, const rs_recovery_params *p);
int rs_tp_qp_get_recovery(const rs_transport *tp, int host, uint32_t qpn, rs_recovery_params *out);
int rs_tp_mr_reg(rs_transport *tp, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
                 uint64_t *iova, uint32_t *lkey, uint32_t *rkey);
int rs_tp_mr_rereg(rs_transport *tp, int host, int idx, uint32_t pd, uint32_t access, uint32_t *rkey);
int rs_tp_mr_dereg(rs_transport *tp, int host, int idx);
int rs_tp_mw_alloc(rs_transport *tp, int host, uint32_t pd, uint32_t type, uint32_t *rkey);
int rs_tp_mw_dealloc(rs_transport *tp, int host, int idx);
int rs_tp_host_set_scripted(rs_transport *tp, int host, int on);
int rs_tp_peer_recv(rs_transport *tp, int host, uint8_t *buf, size_t cap, int64_t *t_ps);
int rs_tp_peer_send(rs_transport *tp, int host, const uint8_t *frame, size_t len);
int rs_tp_peer_send_raw(rs_transport *tp, int host, const uint8_t *frame, size_t len, int dst_host);
int rs_tp_qp_create(rs_transport *tp, int host, const rs_qp_init *in);
int rs_tp_qp_destroy(rs_transport *tp, int host, uint32_t qpn);
int rs_tp_post_send(rs_transport *tp, int host, uint32_t qpn, const rs_send_wr *wr);
int rs_tp_post_recv(rs_transport *tp, int host, uint32_t qpn, const rs_recv_wr *wr);
int rs_tp_qp_query(const rs_transport *tp, int host, uint32_t qpn, rs_qp_attr *attr);
int rs_tp_qp_get_stats(const rs_transport *tp, int host, uint32_t qpn, rs_qp_stats *out);
int rs_tp_qp_modify(rs_transport *tp, int host, uint32_t qpn, const rs_qp_attr *attr, uint32_t mask);
int rs_tp_qp_get_inspect(const rs_transport *tp, int host, uint32_t qpn, rs_qp_inspect *out);
int rs_tp_srq_create(rs_transport *tp, int host, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit);
int rs_tp_srq_destroy(rs_transport *tp, int host, uint32_t handle);
int rs_tp_srq_modify(rs_transport *tp, int host, uint32_t handle, uint32_t mask, uint32_t max_wr, uint32_t limit);
int rs_tp_srq_query(rs_transport *tp, int host, uint32_t handle, rs_srq_attr *out);
int rs_tp_srq_take_limit_event(rs_transport *tp, int host, uint32_t handle);
int rs_tp_post_srq_recv(rs_transport *tp, int host, uint32_t handle, const rs_recv_wr *wr);

/* host.c */
rs_host *rs_host_new(rs_transport *tp, int id);
void rs_host_free(rs_host *h);

/* requester.c */
int rs_req_can_send(const rs_transport *tp, const rs_qp *qp);
int rs_req_paced(const rs_transport *tp, const rs_qp *qp);
static inline int rs_wr_is_rd_atomic(uint32_t wr_op)
{
    return wr_op == 4 /* RDMA_READ */ || wr_op == 5 /* CMP_AND_SWP */ || wr_op == 6 /* FETCH_AND_ADD */ ||
           wr_op == 14 /* FLUSH */ || wr_op == 15 /* ATOMIC_WRITE */;
}
/* Local operations: executed by the requester in send-queue order, no packet (rxe_do_local_ops) */
static inline int rs_wr_is_local(uint32_t wr_op) { return wr_op == 7 /* LOCAL_INV */ || wr_op == 8 /* BIND_MW */; }
/* May WQE w start now (SQD, fence, max_rd_atomic)? */
int rs_req_may_start(const rs_qp *qp, const rs_swqe *w);
/* Build the next request packet and advance; NULL if the QP failed (it is then in ERR) or its WQE
 * completed without a packet (a UD message longer than the MTU). */
rs_pkt *rs_req_build(rs_transport *tp, rs_qp *qp);
/* Build the packet at the cursor (req_idx, req_off, req_psn) and advance the cursor. */
rs_pkt *rs_req_build_packet(rs_transport *tp, rs_qp *qp);
/* Go back to `psn` (== comp_psn): resend from the oldest unacknowledged packet. */
void rs_req_rewind(rs_transport *tp, rs_qp *qp, uint32_t psn);
void rs_req_rnr_done(rs_transport *tp, rs_qp *qp);

/* ud.c: a datagram for a UD QP (Q_Key, receive WQE, GRH area, completion); releases it */
void rs_ud_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);

/* uc.c: a request for a UC QP (opcode already reduced to its RC value); releases it */
void rs_uc_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);

/* responder.c */
enum { MSG_NONE = 0, MSG_SEND = 1, MSG_WRITE = 2 }; /* rs_qp.in_msg */
/* Why a SEND/WRITE packet was refused (rs_resp_exec_*); what follows is the transport's. */
enum {
    RS_EXEC_OK = 0,
    RS_EXEC_NO_WQE,     /* no receive WQE (SEND, WRITE with immediate) */
    RS_EXEC_TOO_LONG,   /* the message is longer than the receive WQE */
    RS_EXEC_BAD_WQE,    /* the receive WQE's SGEs do not resolve */
    RS_EXEC_NO_ACCESS,  /* the QP does not allow remote writes */
    RS_EXEC_BAD_RKEY,   /* the rkey/range does not resolve for a remote write */
    RS_EXEC_BAD_LENGTH, /* more or fewer bytes than the RETH announced */
    RS_EXEC_BAD_INV,    /* SEND with Invalidate: the IETH's rkey cannot be invalidated */
};
int rs_resp_exec_send(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt);
int rs_resp_exec_write(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt);
void rs_resp_advance(rs_qp *qp, const rs_pkt *pkt, int op);
int rs_resp_sequence_ok(const rs_qp *qp, uint8_t op);
void rs_resp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
/* A request at the expected PSN: check, execute, ACK (the packet is not released). */
void rs_resp_execute(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt);
/* A request before the expected PSN (the packet is not released). */
void rs_resp_duplicate(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt);
int rs_resp_length_ok(const rs_qp *qp, uint8_t op, uint32_t len);
void rs_resp_drain_held(rs_transport *tp, rs_qp *qp);
/* The ack_timer fired: send the coalesced ACK still owed (responder.c). */
void rs_resp_ack_due(rs_transport *tp, rs_qp *qp);
int rs_tp_host_set_nic(rs_transport *tp, int host, uint32_t max_unacked_psns, uint32_t ack_coalesce_pkts,
                       int64_t ack_timeout_ps, uint32_t ack_req_interval);
void rs_resp_release_held(rs_transport *tp, rs_qp *qp);

/* resp_queue.c: responder output in PSN order (READ responses built lazily) */
void rs_resp_send_ctrl(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
int rs_respq_add_read(rs_transport *tp, rs_qp *qp, uint32_t res, uint64_t va, uint32_t rkey, uint32_t len,
                      uint32_t psn);
void rs_respq_drop_jobs_for(rs_transport *tp, rs_qp *qp, uint32_t res);
void rs_respq_clear(rs_transport *tp, rs_qp *qp);
rs_pkt *rs_respq_next(rs_transport *tp, rs_qp *qp);

/* completer.c */
void rs_comp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
void rs_comp_rto(rs_transport *tp, rs_qp *qp);
/* A request packet was sent: start the retransmit timer if it is not running. */
void rs_comp_arm_rto(rs_transport *tp, rs_qp *qp);
/* Cumulative acknowledgement of every PSN up to and including psn (completes WQEs in order). */
void rs_comp_ack_through(rs_transport *tp, rs_qp *qp, uint32_t psn);

/* irn.c: IRN selective repeat (qp->recovery == RS_RECOVERY_IRN) */
int rs_irn_req_can_send(const rs_transport *tp, const rs_qp *qp);
rs_pkt *rs_irn_req_build(rs_transport *tp, rs_qp *qp);
/* Returns 1 if IRN handled the rewind (selective), 0 to let Go-Back-N rewind. */
int rs_irn_rewind(rs_transport *tp, rs_qp *qp, uint32_t psn);
void rs_irn_arm_rto(rs_transport *tp, rs_qp *qp);
/* OOO: the retransmit timer reached the tail probe's time: probe (1) instead of a timeout (0) */
int rs_irn_probe(rs_transport *tp, rs_qp *qp);
/* Returns 1 if IRN consumed the packet, 0 to let the Go-Back-N completer handle it. */
int rs_irn_comp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
void rs_irn_resp_receive(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
void rs_irn_reset(rs_qp *qp);
/* OOO responder: report PSN m lost (a NAK with the cumulative ACK and m) */
void rs_irn_nak_lost(rs_transport *tp, rs_qp *qp, uint32_t m);

/* ooo_loss.c: when an OOO responder reports a gap lost, and again.  rs_ooo_sync keeps its
 * pointers in the window; rs_ooo_filled: PSN psn arrived (in order or placed); rs_ooo_detect:
 * after every arrival; rs_irn_reorder_due: its timer fired. */
void rs_ooo_sync(rs_qp *qp);
void rs_ooo_filled(rs_transport *tp, rs_qp *qp, uint32_t psn);
void rs_ooo_detect(rs_transport *tp, rs_qp *qp);
/* ooo_loss.c: PSN psn, already held, arrived again asking for an ACK (the tail probe?) */
void rs_ooo_probed(rs_transport *tp, rs_qp *qp, uint32_t psn);
void rs_irn_reorder_due(rs_transport *tp, rs_qp *qp);
uint32_t rs_irn_held(const rs_qp *qp); /* responder: out-of-order packets placed (inspection) */
void rs_irn_free(rs_qp *qp);

/* ooo_read.c: out-of-order placement of READs (RS_RECOVERY_OOO).  Requester: place a READ
 * response ahead of comp_psn (0 not placed, 1 placed, 2 placed but the gap before it is older
 * than the reorder time: lost); take the mark of `psn` as comp_psn reaches it; restart the gap's
 * age after in-order progress.  Responder: keep a READ request ahead of resp_psn (1: kept or
 * dropped as a duplicate, the packet is no longer the caller's), take the kept one at resp_psn. */
int rs_ooo_read_hold(rs_transport *tp, rs_qp *qp, const rs_pkt *pkt);
int rs_ooo_read_take(rs_qp *qp, uint32_t psn);
void rs_ooo_read_progress(rs_transport *tp, rs_qp *qp);
int rs_ooo_rdreq_hold(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
rs_pkt *rs_ooo_rdreq_take(rs_transport *tp, rs_qp *qp);
void rs_ooo_read_clear(rs_qp *qp);
/* completer.c: does READ response `pkt` fit its PSN of READ `w` (opcode by position, length)? */
int rs_comp_read_response_fits(const rs_qp *qp, const rs_swqe *w, const rs_pkt *pkt);

/* cc_qp.c: congestion control of one QP (the NIC side of rdmasim/cc.h) */
int rs_cc_qp_reserve(rs_transport *tp, rs_qp *qp);            /* RTR -> RTS, before anything changes: storage */
void rs_cc_qp_start(rs_transport *tp, rs_qp *qp);             /* entering RTS */
void rs_cc_qp_release(rs_transport *tp, rs_qp *qp);           /* released: a separate state block goes back */
/* The QP's paced rate now (its algorithm's passed deadlines applied first); 0 = line rate. */
double rs_cc_rate_now(const rs_transport *tp, rs_qp *qp);
void rs_cc_on_cnp(rs_transport *tp, rs_qp *qp);
/* A Go-Back-N retry (sequence-error NAK, implied NAK or timeout) lost about lost_bytes: the
 * algorithm's on_loss (interface v3), when it has one. */
void rs_cc_on_loss(rs_transport *tp, rs_qp *qp, uint64_t lost_bytes, int trimmed);
/* A request packet `p` of wire_bytes leaves (retx: its PSN was sent before): the algorithm counts
 * it, the pacer spaces the next one, and the packet asks for the ACK echo when the algorithm wants
 * ACK events. */
void rs_cc_on_request_sent(rs_transport *tp, rs_qp *qp, rs_pkt *p, uint32_t wire_bytes, int retx);
void rs_cc_np_on_ce(rs_transport *tp, rs_qp *qp);              /* responder saw CE: maybe send a CNP */
/* Window: may the QP's next request packet go?  1 when its algorithm has no window (inline test).
 * `next` is the WQE at req_idx (the caller has it: req_idx < sq_count). */
int rs_cc_window_check(const rs_transport *tp, const rs_qp *qp, const rs_swqe *next);
static inline int rs_cc_window_open(const rs_transport *tp, const rs_qp *qp, const rs_swqe *next)
{
    return !qp->cc || !qp->cc->window_bytes || rs_cc_window_check(tp, qp, next);
}
/* Responder: request `pkt` was accepted; keep what the next ACK echoes (when it asked for that). */
static inline void rs_cc_resp_accepted(rs_qp *qp, const rs_pkt *pkt)
{
    if (pkt->cc_want) {
        int ce = (pkt->tos & 3u) == 3u;
        qp->rx_cc_want = 1;
        qp->rx_cc_tx_ps = pkt->cc_tx_ps;
        qp->rx_cc_stamped = pkt->cc_stamped;
        qp->rx_cc_ce = (uint8_t)ce;
        qp->rx_cc_ce_bytes += ce ? pkt->payload_len : 0;
    }
}
/* Responder: accepted request `pkt` carries INT (pkt->intel): the QP takes the stack over from the
 * packet for its next ACK, in place of an older one.  drop: the QP lets go of a kept stack
 * (released, reset). */
void rs_cc_resp_keep_int(rs_transport *tp, rs_qp *qp, rs_pkt *pkt);
void rs_cc_resp_drop_int(rs_transport *tp, rs_qp *qp);
/* Responder: ACK `a` leaves; it carries the echo, which is then used up. */
void rs_cc_resp_echo(rs_qp *qp, rs_pkt *a);
/* The echo fields of an ACK (rs_pkt.cc_*), kept once the packet is released. */
typedef struct rs_cc_echo {
    const rs_int_stack *intel; /* the ACK's INT (a copy the completer keeps), or NULL */
    int64_t tx_ps;
    uint32_t ce_bytes;
    uint8_t stamped;
    uint8_t ce;
} rs_cc_echo;
/* Requester: an ACK-syndrome acknowledgement for `psn` arrived, after the completer applied it;
 * una_before_bytes = rs_req_acked_pos before that.  The caller wakes the QP after it (a window
 * may have opened). */
void rs_cc_on_ack(rs_transport *tp, rs_qp *qp, const rs_cc_echo *echo, uint32_t psn, uint64_t una_before_bytes);
/* Request payload byte positions (rs_swqe.stream_off): the next byte to send, and the first one not
 * yet acknowledged; bytes in flight = the difference. */
uint64_t rs_req_next_pos(const rs_qp *qp);
uint64_t rs_req_acked_pos(const rs_qp *qp);
static inline uint64_t rs_swqe_req_bytes(const rs_swqe *w)
{
    return rs_wr_is_rd_atomic(w->opcode) || rs_wr_is_local(w->opcode) ? 0 : w->length;
}

/* qp.c */
/* Move the QP to ERR: cancel timers, flush both queues with IBV_WC_WR_FLUSH_ERR. */
void rs_qp_to_error(rs_transport *tp, rs_qp *qp);
/* Free a QP now, whatever it still holds (rs_qp_destroy after its checks; bulk flows). */
void rs_qp_release(rs_transport *tp, rs_qp *qp);
/* Complete the oldest send WQE with `status` and remove it from the send queue. */
void rs_qp_complete_head(rs_transport *tp, rs_qp *qp, uint32_t status);
/* The responder accepted, in order, the last packet of a SEND or WRITE message (RC: rs_resp_execute,
 * IRN/OOO: when the expected PSN passes it): a bulk flow's receiver has every byte of it. */
void rs_qp_msg_received(rs_transport *tp, rs_qp *qp);
/* Complete the oldest receive WQE and remove it. */
/* with_imm: 0, 1 (ImmDt in imm) or RS_RECV_WITH_INV (imm is the rkey a SEND with Invalidate invalidated) */
#define RS_RECV_WITH_INV 2
void rs_qp_complete_recv(rs_transport *tp, rs_qp *qp, uint32_t status, uint32_t opcode, uint32_t byte_len,
                         int with_imm, uint32_t imm);
/* Reset transport state (entering RESET). */
void rs_qp_reset(rs_transport *tp, rs_qp *qp);

/* nic.c: drop the QP from the transmit round-robin */
void rs_nic_forget(rs_host *h, rs_qp *qp);

/* qp_state.c */
const char *rs_qp_state_name(uint32_t state);
int rs_qp_apply_modify(rs_transport *tp, rs_qp *qp, const rs_qp_attr *attr, uint32_t mask);

#endif
