/* Public C API of the transport: what a verbs user does to one host's NIC (memory regions and
 * windows, CQs, QPs, SRQs, posting), its congestion-control and loss-recovery settings, the
 * scripted peer and per-QP inspection.  Hosts are named by their index (rs_host_add, sim.h);
 * every call returns RS_OK / an id, or a negative rs_err with the reason in rs_sim_errmsg. */
#ifndef RDMASIM_VERBS_H
#define RDMASIM_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/base.h"

typedef struct rs_qp_inspect {
    uint32_t state;
    uint32_t req_psn;          /* next PSN the requester sends */
    uint32_t comp_psn;         /* oldest PSN not yet acknowledged */
    uint32_t resp_psn;         /* PSN the responder expects */
    uint32_t msn;
    uint32_t sq_outstanding;   /* send WRs posted and not completed */
    uint32_t sq_started;       /* of which fully sent (awaiting acknowledgement) */
    uint32_t rq_posted;
    uint32_t retry_left;
    uint32_t rnr_left;
    uint32_t rd_outstanding;
    int32_t nak_sent;
    int32_t in_msg;            /* 0 none, 1 inside a SEND, 2 inside a WRITE */
    int64_t rto_deadline_ps;   /* 0: retransmit timer stopped */
    int64_t rnr_until_ps;
    int64_t next_tx_ps;        /* rate limiter: next request not before (0: now) */
    double rate_bps;           /* 0: line rate */
    uint32_t resp_queued;      /* responses waiting in PSN order (READ jobs, ACKs) */
    uint32_t recovery;         /* enum rs_recovery */
    int32_t irn_in_recovery;   /* IRN requester: in recovery mode */
    uint32_t irn_sacked;       /* IRN requester: PSNs selectively acknowledged, not yet cumulatively */
    uint32_t irn_ooo_held;     /* IRN responder: out-of-order packets placed ahead of the expected PSN */
} rs_qp_inspect;
int rs_qp_get_inspect(const rs_sim *sim, int host, uint32_t qpn, rs_qp_inspect *out);

/* ---- congestion control (NIC-wide setting; QPs created afterwards use it) ----
 * kind: enum rs_cc_kind; params: that kind's params struct (rs_dcqcn_params, rs_dctcp_params, ...)
 * of params_size bytes, which must be the algorithm's (NULL / 0 for RS_CC_NONE). */
int rs_host_set_cc(rs_sim *sim, int host, int kind, const void *params, size_t params_size, int np_enabled,
                   int64_t cnp_interval_ps, uint32_t cnp_dscp);
/* NIC-dependent constants of a host (transport/nic_params.h; profiles in rdmasim/nic.py). */
int rs_host_set_nic(rs_sim *sim, int host, uint32_t max_unacked_psns, uint32_t ack_coalesce_pkts,
                    int64_t ack_timeout_ps, uint32_t ack_req_interval);
/* Tests: on != 0 makes every packet resolve its memory keys itself, as before the one-packet
 * shortcuts (the first packet reusing the message's own check); the simulation is the same. */
void rs_sim_set_key_recheck(rs_sim *sim, int on);
/* Current rate (bits/s) the QP is paced at (0 = line rate, no limit). */
double rs_qp_rate_bps(const rs_sim *sim, int host, uint32_t qpn);
/* The QP's DCQCN reaction point as of now, copied to *out with `alpha` the current value (the
 * stored one decayed by alpha_decays periods): 1, or 0 when the QP runs no DCQCN. */
struct rs_dcqcn_rp;
int rs_qp_dcqcn_state(const rs_sim *sim, int host, uint32_t qpn, struct rs_dcqcn_rp *out);
/* The QP's congestion-control state as of now (timers applied): its algorithm's state struct
 * copied to out (at most cap bytes), its kind in *kind; 1, or 0 when the QP runs none. */
int rs_qp_cc_state(const rs_sim *sim, int host, uint32_t qpn, void *out, size_t cap, int *kind);
/* Congestion-control plug-ins: an rs_cc_algo compiled outside rdmasim (rdmasim.cc_plugin), copied
 * into this simulation under `name` (at most RS_CC_PLUGIN_NAME - 1 bytes, no built-in's name).
 * Returns its kind for rs_host_set_cc (>= RS_CC_COUNT), or an RS_ERR_* naming what is wrong: a
 * state or params struct too big, init or rate_bps missing, next_timer_ps without on_timer, unknown
 * flags, a name taken, or all RS_CC_PLUGINS slots used.  The callbacks must outlive the simulation. */
#define RS_CC_PLUGINS 16
#define RS_CC_PLUGIN_NAME 32
struct rs_cc_algo;
int rs_cc_plugin_add(rs_sim *sim, const struct rs_cc_algo *algo, const char *name);
/* The name of a kind, built in or a plug-in of this simulation; NULL for an unknown kind. */
const char *rs_cc_name(const rs_sim *sim, int kind);

/* ---- scripted peer (tests and teaching: per-packet Python, deliberately) ----
 * A scripted host has no transport: frames it receives are kept for Python, which
 * sends crafted frames back.  The run loop returns RS_RUN_PEER after each delivery. */
int rs_host_set_scripted(rs_sim *sim, int host, int on);
/* Oldest received frame as exact bytes (encoded by the codec): returns its length, 0 when
 * none is waiting, or a negative rs_err (buffer too small). */
int rs_peer_recv(rs_sim *sim, int host, uint8_t *buf, size_t cap, int64_t *t_ps);
/* Transmit a frame (exact bytes; decoded, so it must be a valid RoCEv2 or PFC frame).  A frame
 * whose ICRC is wrong is sent as such: the receiving NIC drops it. */
int rs_peer_send(rs_sim *sim, int host, const uint8_t *frame, size_t len);
/* Transmit 1..4096 bytes unchecked: a frame that decodes travels as rs_peer_send's; one that does
 * not (reserved opcode, cut short, not RoCE) travels as bytes to `dst_host` (-1: the host its IPv4
 * destination names), and the receiving NIC drops it. */
int rs_peer_send_raw(rs_sim *sim, int host, const uint8_t *frame, size_t len, int dst_host);
/* A NIC's receive drops: frames for an unknown QPN, for a QP whose state refuses them, with a wrong
 * ICRC, and frames that do not parse. */
#define RS_HOST_RX_COUNTERS 4
int rs_host_rx_counters(const rs_sim *sim, int host, uint64_t out[RS_HOST_RX_COUNTERS]);

/* ---- memory regions ---- */
/* Register [base, base+length) of caller-owned memory (kept alive by the caller).
 * Fills the iova (the address verbs users put in SGEs / RETH), lkey and rkey. Returns the MR index. */
int rs_mr_reg(rs_sim *sim, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
              uint64_t *iova, uint32_t *lkey, uint32_t *rkey);
int rs_mr_dereg(rs_sim *sim, int host, int mr);
/* ibv_rereg_mr with IBV_REREG_MR_CHANGE_PD and/or _ACCESS, in place as rxe_rereg_user_mr does: the
 * keys are kept (rkey == lkey, as rxe). */
/* Memory windows (ibv_alloc_mw / ibv_dealloc_mw): type 1 or 2 on PD `pd`; returns the slot
 * (what dealloc takes) and the window's rkey. A bind names the window by its current rkey. */
int rs_mw_alloc(rs_sim *sim, int host, uint32_t pd, uint32_t type, uint32_t *rkey);
int rs_mw_dealloc(rs_sim *sim, int host, int mw);
int rs_mr_rereg(rs_sim *sim, int host, int mr, uint32_t pd, uint32_t access, uint32_t *rkey);

/* ---- completion queues ---- */
typedef struct rs_wc {
    uint64_t wr_id;
    uint32_t status;   /* ibv_wc_status */
    uint32_t opcode;   /* ibv_wc_opcode */
    uint32_t byte_len;
    uint32_t imm_data;
    uint32_t qp_num;
    uint32_t src_qp;
    uint32_t wc_flags; /* IBV_WC_GRH = 1, IBV_WC_WITH_IMM = 2 */
    uint32_t vendor_err;
    uint32_t pkey_index; /* UD receive: the QP's P_Key index */
    uint32_t sl;         /* UD receive: service level (0 on RoCE) */
} rs_wc;

int rs_cq_create(rs_sim *sim, int host, uint32_t cqe);
int rs_cq_destroy(rs_sim *sim, int host, int cq);
/* Give the CQ room for cqe completions, keeping those it holds in order (ibv_resize_cq).
 * RS_ERR_INVAL when cqe is outside 1..4194304 or below the completions it holds. */
int rs_cq_resize(rs_sim *sim, int host, int cq, uint32_t cqe);
/* Move up to n completions into out; returns how many, or RS_ERR_STATE on overrun. */
int rs_cq_poll(rs_sim *sim, int host, int cq, rs_wc *out, int n);
int rs_cq_count(const rs_sim *sim, int host, int cq);

/* ---- queue pairs (RC) ---- */
typedef struct rs_qp_init {
    uint32_t pd;
    int send_cq;
    int recv_cq;
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_send_sge;
    uint32_t max_recv_sge;
    int sq_sig_all;
    uint32_t qp_type; /* ibv_qp_type: IBV_QPT_RC (2; 0 also means RC), IBV_QPT_UC (3) or IBV_QPT_UD (4) */
    uint32_t srq;     /* shared receive queue handle (rs_srq_create), 0: the QP's own receive queue */
} rs_qp_init;

typedef struct rs_qp_attr {
    /* what every packet the QP sends reads first (one cache line of rs_qp with its neighbours) */
    uint32_t dest_qp_num;
    int dest_host;              /* address vector: the destination host (its GID/IP/MAC) */
    uint32_t traffic_class;     /* DSCP << 2 (ECN bits come from the NIC) */
    uint32_t qp_state;
    uint32_t cur_qp_state;
    uint32_t path_mtu;          /* ibv_mtu enum 1..5 */
    uint32_t qp_access_flags;
    uint32_t pkey_index;
    uint32_t port_num;
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint32_t max_rd_atomic;
    uint32_t max_dest_rd_atomic;
    uint32_t min_rnr_timer;
    uint32_t timeout;
    uint32_t retry_cnt;
    uint32_t rnr_retry;
    uint32_t qkey;              /* UD: the Q_Key received datagrams must carry */
} rs_qp_attr;

/* Returns the QPN. */
int rs_qp_create(rs_sim *sim, int host, const rs_qp_init *init);
int rs_qp_destroy(rs_sim *sim, int host, uint32_t qpn);
int rs_qp_modify(rs_sim *sim, int host, uint32_t qpn, const rs_qp_attr *attr, uint32_t mask);
int rs_qp_query(const rs_sim *sim, int host, uint32_t qpn, rs_qp_attr *attr);

typedef struct rs_sge {
    uint64_t addr;
    uint32_t length;
    uint32_t lkey;
} rs_sge;

/* A UD work request whose address handle is not usable by the QP (of another PD or device, or
 * destroyed): accepted, and completed IBV_WC_LOC_QP_OP_ERR when the requester reaches it (rxe
 * rxe_get_av finds no address vector; the QP goes to ERR). */
#define RS_UD_DEST_NO_AV (-2)

typedef struct rs_send_wr {
    uint64_t wr_id;
    uint32_t opcode;      /* ibv_wr_opcode */
    uint32_t send_flags;  /* ibv_send_flags */
    uint32_t imm_data;
    uint32_t num_sge;
    const rs_sge *sg_list;
    uint64_t remote_addr;
    uint32_t rkey;
    uint64_t compare_add; /* atomics (issue 3) */
    uint64_t swap;
    /* UD (wr.ud): address handle (destination host, its traffic class), remote QPN and Q_Key
     * (high bit set: use the sending QP's own qkey, IBA 10.2.5).  ud_dest_host RS_UD_DEST_NO_AV:
     * the address handle gives this QP no address vector (another PD's, or destroyed). */
    int ud_dest_host;
    uint32_t ud_traffic_class;
    uint32_t ud_remote_qpn;
    uint32_t ud_remote_qkey;
    /* IBV_WR_BIND_MW (wr.bind_mw): the window by its current rkey, the new rkey in `rkey`, the
     * bind info (region lkey, start in `remote_addr`, length, access). LOCAL_INV and SEND_WITH_INV
     * carry invalidate_rkey in imm_data (a union in verbs too). */
    uint32_t bind_mw_rkey;
    uint32_t bind_lkey;
    uint32_t bind_access;
    uint64_t bind_len;
} rs_send_wr;

typedef struct rs_recv_wr {
    uint64_t wr_id;
    uint32_t num_sge;
    const rs_sge *sg_list;
} rs_recv_wr;

int rs_post_send(rs_sim *sim, int host, uint32_t qpn, const rs_send_wr *wr);

/* ---- shared receive queues ---- */
/* Returns the SRQ's handle (>= 1), given to rs_qp_init.srq. A limit > 0 arms the SRQ limit. */
int rs_srq_create(rs_sim *sim, int host, uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit);
int rs_srq_destroy(rs_sim *sim, int host, uint32_t srq);
#define RS_SRQ_MAX_WR_MASK 1u /* IBV_SRQ_MAX_WR */
#define RS_SRQ_LIMIT_MASK 2u  /* IBV_SRQ_LIMIT */
/* ibv_modify_srq: with RS_SRQ_MAX_WR_MASK resize to max_wr WQEs (the posted ones kept in order;
 * RS_ERR_INVAL below them or below an armed limit), with RS_SRQ_LIMIT_MASK arm the limit (0
 * disarms; RS_ERR_INVAL above max_wr). */
int rs_srq_modify(rs_sim *sim, int host, uint32_t srq, uint32_t mask, uint32_t max_wr, uint32_t limit);
typedef struct rs_srq_attr {
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t limit;        /* 0: not armed */
    uint32_t count;        /* receive WQEs posted and not yet taken */
    uint32_t limit_events; /* IBV_EVENT_SRQ_LIMIT_REACHED raised and not yet taken */
} rs_srq_attr;
int rs_srq_query(rs_sim *sim, int host, uint32_t srq, rs_srq_attr *out);
/* Take one pending IBV_EVENT_SRQ_LIMIT_REACHED of the SRQ: 1 if there was one, else 0. */
int rs_srq_take_limit_event(rs_sim *sim, int host, uint32_t srq);
int rs_post_srq_recv(rs_sim *sim, int host, uint32_t srq, const rs_recv_wr *wr);
int rs_post_recv(rs_sim *sim, int host, uint32_t qpn, const rs_recv_wr *wr);

/* Per-QP counters (see docs/design.md for their exact meaning). */
typedef struct rs_qp_stats {
    /* the counters updated per packet first: one cache line (see rs_qp) */
    uint64_t pkts_sent;        /* request packets put on the wire, retransmissions included */
    uint64_t bytes_sent;       /* payload bytes of those */
    uint64_t acks_rcvd;
    uint64_t acks_sent;        /* responder: ACKs sent */
    uint64_t bytes_rcvd;       /* responder: payload bytes accepted */
    uint64_t ce_rcvd;          /* packets received with ECN CE */
    uint64_t cnps_sent;        /* notification point: CNPs sent for CE-marked packets */
    uint64_t cnps_rcvd;        /* reaction point: CNPs received */
    uint64_t pkts_retx;        /* request packets resent (Go-Back-N or IRN) */
    uint64_t bytes_retx;
    uint64_t naks_rcvd;        /* PSN sequence error NAKs received */
    uint64_t rnr_naks_rcvd;
    uint64_t timeouts;         /* local ACK timeouts that started a retry */
    uint64_t naks_sent;        /* responder: NAKs (any kind) sent */
    uint64_t dup_rcvd;         /* responder: duplicate requests */
    uint64_t ooo_dropped;      /* responder: out-of-sequence requests dropped */
    uint64_t msgs_completed;   /* requester: WQEs completed successfully */
    uint64_t read_resp_sent;   /* responder: READ response packets sent (replays included) */
    uint64_t atomics_executed; /* responder: atomics executed (duplicates are replayed, not counted) */
    uint64_t implied_naks;     /* requester: retries started by a response that skipped PSNs */
    uint64_t bad_responses;    /* requester: responses for no outstanding request (dropped) */
    uint64_t ooo_placed;       /* out-of-order packets placed: responder (IRN, OOO), OOO READ responses */
    uint64_t ud_qkey_dropped;  /* UD receive: datagrams dropped for a Q_Key other than the QP's */
    uint64_t ud_no_recv_dropped; /* UD receive: datagrams dropped with no receive WQE posted (no RNR in UD) */
    uint64_t ud_too_long_dropped; /* UD send: messages longer than the MTU, completed without a packet */
    uint64_t ud_len_dropped;   /* UD receive: datagrams longer than the receive WQE (own queue), dropped */
    uint64_t uc_msgs_dropped;  /* UC receive: messages (started or not) dropped: a PSN gap, or refused */
    uint64_t uc_pkts_dropped;  /* UC receive: packets dropped while resynchronising or refused */
} rs_qp_stats;
int rs_qp_get_stats(const rs_sim *sim, int host, uint32_t qpn, rs_qp_stats *out);

/* ---- loss recovery (per QP; both ends of a connection must use the same mode) ----
 * Go-Back-N (default, as RoCEv2 NICs) or IRN selective repeat (Mittal et al., SIGCOMM 2018;
 * csrc/transport/irn.c).  Set while the QP is in RESET, INIT or RTR. */
/* RS_RECOVERY_OOO: IRN's out-of-order placement and selective repeat with a reorder-tolerant
 * responder (no NAK for an out-of-order arrival; a gap is reported lost only after reorder_ps),
 * the model of NICs that place packets of adaptive-routing fabrics directly (irn.c). */
enum rs_recovery { RS_RECOVERY_GBN = 0, RS_RECOVERY_IRN = 1, RS_RECOVERY_OOO = 2 };
typedef struct rs_recovery_params {
    uint32_t mode;          /* enum rs_recovery */
    uint32_t window;        /* IRN: PSNs in flight at most (BDP in packets), 1..65536 */
    uint32_t rto_low_pkts;  /* IRN: RTO_low applies while fewer than this many packets are in flight (N) */
    int64_t rto_low_ps;     /* IRN: RTO_low (> 0) */
    int64_t rto_high_ps;    /* IRN: RTO_high (>= RTO_low) */
    int64_t reorder_ps;     /* OOO: a gap is lost once a later PSN has been held this long (> 0) */
} rs_recovery_params;
int rs_qp_set_recovery(rs_sim *sim, int host, uint32_t qpn, const rs_recovery_params *p);
int rs_qp_get_recovery(const rs_sim *sim, int host, uint32_t qpn, rs_recovery_params *out);

#endif
