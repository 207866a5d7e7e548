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

#include "sim/sim_impl.h"

/* host.c */
rs_host *rs_host_new(rs_sim *sim, int id);
void rs_host_free(rs_host *h);

/* requester.c */
int rs_req_can_send(const rs_sim *sim, const rs_qp *qp);
int rs_req_paced(const rs_sim *sim, const rs_qp *qp);
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
rs_pkt *rs_req_build(rs_sim *sim, rs_qp *qp);
/* Build the packet at the cursor (req_idx, req_off, req_psn) and advance the cursor. */
rs_pkt *rs_req_build_packet(rs_sim *sim, rs_qp *qp);
/* Go back to `psn` (== comp_psn): resend from the oldest unacknowledged packet. */
void rs_req_rewind(rs_sim *sim, rs_qp *qp, uint32_t psn);
void rs_req_rnr_done(rs_sim *sim, rs_qp *qp);

/* ud.c: a datagram for a UD QP (Q_Key, receive WQE, GRH area, completion); releases it */
void rs_ud_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);

/* uc.c: a request for a UC QP (opcode already reduced to its RC value); releases it */
void rs_uc_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);

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
int rs_resp_exec_send(rs_sim *sim, rs_qp *qp, const rs_pkt *pkt);
int rs_resp_exec_write(rs_sim *sim, rs_qp *qp, const rs_pkt *pkt);
void rs_resp_advance(rs_qp *qp, const rs_pkt *pkt, int op);
int rs_resp_sequence_ok(const rs_qp *qp, uint8_t op);
void rs_resp_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);
/* A request at the expected PSN: check, execute, ACK (the packet is not released). */
void rs_resp_execute(rs_sim *sim, rs_qp *qp, const rs_pkt *pkt);
/* A request before the expected PSN (the packet is not released). */
void rs_resp_duplicate(rs_sim *sim, rs_qp *qp, const rs_pkt *pkt);
int rs_resp_length_ok(const rs_qp *qp, uint8_t op, uint32_t len);
void rs_resp_drain_held(rs_sim *sim, rs_qp *qp);
void rs_resp_release_held(rs_sim *sim, rs_qp *qp);

/* resp_queue.c: responder output in PSN order (READ responses built lazily) */
void rs_resp_send_ctrl(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);
int rs_respq_add_read(rs_sim *sim, rs_qp *qp, uint32_t res, uint64_t va, uint32_t rkey, uint32_t len,
                      uint32_t psn);
void rs_respq_drop_jobs_for(rs_sim *sim, rs_qp *qp, uint32_t res);
void rs_respq_clear(rs_sim *sim, rs_qp *qp);
rs_pkt *rs_respq_next(rs_sim *sim, rs_qp *qp);

/* completer.c */
void rs_comp_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);
void rs_comp_rto(rs_sim *sim, rs_qp *qp);
/* A request packet was sent: start the retransmit timer if it is not running. */
void rs_comp_arm_rto(rs_sim *sim, rs_qp *qp);
/* Cumulative acknowledgement of every PSN up to and including psn (completes WQEs in order). */
void rs_comp_ack_through(rs_sim *sim, rs_qp *qp, uint32_t psn);

/* irn.c: IRN selective repeat (qp->recovery == RS_RECOVERY_IRN) */
int rs_irn_req_can_send(const rs_sim *sim, const rs_qp *qp);
rs_pkt *rs_irn_req_build(rs_sim *sim, rs_qp *qp);
/* Returns 1 if IRN handled the rewind (selective), 0 to let Go-Back-N rewind. */
int rs_irn_rewind(rs_sim *sim, rs_qp *qp, uint32_t psn);
void rs_irn_arm_rto(rs_sim *sim, rs_qp *qp);
/* Returns 1 if IRN consumed the packet, 0 to let the Go-Back-N completer handle it. */
int rs_irn_comp_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);
void rs_irn_resp_receive(rs_sim *sim, rs_qp *qp, rs_pkt *pkt);
void rs_irn_reset(rs_qp *qp);
uint32_t rs_irn_held(const rs_qp *qp); /* responder: out-of-order packets placed (inspection) */
void rs_irn_free(rs_qp *qp);

/* cc_qp.c: congestion control of one QP (the NIC side of rdmasim/cc.h) */
int rs_cc_qp_reserve(rs_sim *sim, rs_qp *qp);            /* RTR -> RTS, before anything changes: storage */
void rs_cc_qp_start(rs_sim *sim, rs_qp *qp);             /* entering RTS */
void rs_cc_qp_release(rs_sim *sim, rs_qp *qp);           /* released: a separate state block goes back */
/* The QP's paced rate now (its algorithm's passed deadlines applied first); 0 = line rate. */
double rs_cc_rate_now(const rs_sim *sim, rs_qp *qp);
void rs_cc_on_cnp(rs_sim *sim, rs_qp *qp);
void rs_cc_on_request_sent(rs_sim *sim, rs_qp *qp, uint32_t wire_bytes);
void rs_cc_np_on_ce(rs_sim *sim, rs_qp *qp);              /* responder saw CE: maybe send a CNP */

/* qp.c */
/* Move the QP to ERR: cancel timers, flush both queues with IBV_WC_WR_FLUSH_ERR. */
void rs_qp_to_error(rs_sim *sim, rs_qp *qp);
/* Free a QP now, whatever it still holds (rs_qp_destroy after its checks; bulk flows). */
void rs_qp_release(rs_sim *sim, rs_qp *qp);
/* Complete the oldest send WQE with `status` and remove it from the send queue. */
void rs_qp_complete_head(rs_sim *sim, rs_qp *qp, uint32_t status);
/* Complete the oldest receive WQE and remove it. */
/* with_imm: 0, 1 (ImmDt in imm) or RS_RECV_WITH_INV (imm is the rkey a SEND with Invalidate invalidated) */
#define RS_RECV_WITH_INV 2
void rs_qp_complete_recv(rs_sim *sim, rs_qp *qp, uint32_t status, uint32_t opcode, uint32_t byte_len,
                         int with_imm, uint32_t imm);
/* Reset transport state (entering RESET). */
void rs_qp_reset(rs_sim *sim, rs_qp *qp);

/* nic.c: drop the QP from the transmit round-robin */
void rs_nic_forget(rs_host *h, rs_qp *qp);

/* qp_state.c */
const char *rs_qp_state_name(uint32_t state);
int rs_qp_apply_modify(rs_sim *sim, rs_qp *qp, const rs_qp_attr *attr, uint32_t mask);

#endif
