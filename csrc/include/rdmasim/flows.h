/* Bulk flows: traffic handed to the C core as arrays, not as per-flow Python objects.
 *
 * A flow moves `size` bytes from host `src` to host `dst` with one RC work request (WRITE and
 * SEND posted by src, READ posted by dst).  At its start time the core creates a connected QP
 * pair for it (RESET->INIT->RTR->RTS through the same state machine verbs users drive; a flow
 * chained by `after` uses the pair of the flow before it on its connection), posts
 * the work request on a size-only memory region (packets carry lengths, not bytes), and when
 * the requester completes it records the finish time and counters, releases the flows that
 * depend on it, and destroys the QP pair.  So memory follows the flows in flight, not the
 * number of flows, and 100k flows are set up without any Python per flow.
 *
 * Dependencies make collectives: a flow starts at max(its start time, the finish of every
 * flow it depends on). */
#ifndef RDMASIM_FLOWS_H
#define RDMASIM_FLOWS_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasim/uet.h"
#include "rdmasim/verbs.h"

/* RS_FLOW_LOCAL: no packets and no QPs; the flow finishes the moment it starts (after its hold).
 * It is a step of a dependency graph that happens inside a host or between hosts off the
 * fabric: a compute phase, a barrier's join, an NVLink-like intra-node copy whose duration the
 * caller puts in its hold.  src may equal dst and size may be 0 (the size is only recorded). */
enum rs_flow_verb { RS_FLOW_WRITE = 0, RS_FLOW_READ = 1, RS_FLOW_SEND = 2, RS_FLOW_LOCAL = 3 };

/* Flow status (rs_flow_result.status): an ibv_wc_status once finished, else one of these. */
#define RS_FLOW_WAITING 0x100u /* not started (start time or dependencies pending) */
#define RS_FLOW_RUNNING 0x101u /* its work request is outstanding */

/* Limits of the QP attributes below (as rs_qp_modify and rs_qp_set_recovery check them). */
#define RS_FLOW_MAX_RD_ATOMIC 128u
#define RS_FLOW_MAX_IRN_WINDOW 65536u

/* The transport a batch's flows run on (rs_flow_cfg.transport). */
enum rs_flow_transport { RS_FLOW_ROCE = 0, RS_FLOW_UET = 1 };

/* QP attributes of every flow in one rs_flows_add batch (transport RS_FLOW_ROCE), or the Ultra
 * Ethernet PDS parameters (transport RS_FLOW_UET: WRITE and SEND flows only; each flow, also in an
 * `after` chain, a PDC of its own, docs/uet.md). */
typedef struct rs_flow_cfg {
    uint32_t path_mtu;      /* ibv_mtu enum 1..5 */
    uint32_t timeout;       /* local ACK timeout exponent */
    uint32_t retry_cnt;
    uint32_t rnr_retry;
    uint32_t min_rnr_timer;
    uint32_t max_rd_atomic; /* READ credits (max_rd_atomic = max_dest_rd_atomic) */
    rs_recovery_params recovery;
    uint32_t transport;     /* enum rs_flow_transport */
    rs_uet_params uet;      /* transport RS_FLOW_UET */
} rs_flow_cfg;

/* Add n flows; ids continue from earlier batches (the first id is returned, or a negative
 * rs_err with the reason in rs_sim_errmsg; nothing is added on error).  Arrays have n entries;
 * dep_ptr has n+1 (dep_ptr[0] = 0, dep_ptr[n] = n_deps, non-decreasing) and deps (n_deps
 * entries) [dep_ptr[i] .. dep_ptr[i+1]) are the indices, within this batch, of the flows flow i
 * waits for (dep_ptr/deps NULL, n_deps 0: none).  hold_ps (NULL: all 0) delays each flow: it
 * starts hold_ps after max(its start time, the finish of its last dependency) - a compute phase
 * before it sends.  Every value is checked before use (hosts, size 1..2^31-1 (0.. for LOCAL),
 * src != dst (except LOCAL), start and hold 0..RS_MAX_TIME_PS, verb, priority 0..7, each cfg
 * field, dependencies in the batch and acyclic): whatever the arrays hold, nothing is read
 * outside them.  A start time earlier than now means now.
 *
 * after (NULL: all 0) puts flows on one connection, as NCCL and MPI send a connection's messages:
 * after[i] = k > 0 posts flow i on the QP pair of flow i - k of the batch, once that flow has been
 * posted (and its own dependencies allow), so the pair's RC send queue carries them in order and
 * the second starts on the wire when the first's last packet has left; after[i] = 0 gives flow i
 * a QP pair of its own.  Flows on one pair have the same src, dst, verb and priority (not LOCAL),
 * each flow is followed by at most one, at most 65536 share a pair, and the order counts as a
 * dependency in the cycle check.  The pair is destroyed when its last flow completes; a flow's
 * counters are the pair's from the later of its post and the previous flow's completion.
 *
 * dep_on (NULL: all RS_DEP_DONE) has n_deps entries, one per dependency: RS_DEP_DONE waits for
 * that flow's completion, RS_DEP_RECEIVED for the moment its receiver has every byte of its
 * message (WRITE, SEND: the responder accepted the message's last packet in order; READ and
 * LOCAL: their completion; a flow that ends without it, at its end).  need (NULL: all) says per
 * flow how many of its dependency events start it: 0 = all of them, k in 1..its number of
 * dependencies = the k-th of them to happen. */
#define RS_DEP_DONE 0u
#define RS_DEP_RECEIVED 1u
int64_t rs_flows_add(rs_sim *sim, uint32_t n, const int32_t *src, const int32_t *dst, const uint64_t *size,
                     const int64_t *start_ps, const int64_t *hold_ps, const uint8_t *verb, const uint8_t *priority,
                     const int64_t *dep_ptr, const int32_t *deps, uint64_t n_deps, const uint8_t *dep_on,
                     const uint32_t *need, const uint32_t *after, const rs_flow_cfg *cfg);

/* Most flows one QP pair carries (its send queue holds them all). */
#define RS_FLOW_MAX_CHAIN 65536u

typedef struct rs_flow_result {
    int64_t start_ps;         /* when its work request was posted (-1: not yet) */
    int64_t finish_ps;        /* when the requester completed it (-1: not yet) */
    uint64_t bytes_delivered; /* payload bytes accepted at the data's destination */
    uint64_t retx_pkts;       /* packets resent by either QP of the flow */
    uint64_t cnps;            /* CNPs received by the data sender */
    int64_t pause_ps;         /* time the src NIC was paused on the flow's priority while it ran */
    uint32_t status;          /* ibv_wc_status, or RS_FLOW_WAITING / RS_FLOW_RUNNING */
    uint32_t req_host;        /* the QP pair while running (0 qpn: none); UET: the PDC ids */
    uint32_t req_qpn;
    uint32_t resp_qpn;
    uint64_t uet_nacks;       /* UET: NACKs the initiator received */
    uint64_t uet_trims;       /* UET: of which for trimmed packets */
    uint64_t uet_lost;        /* UET UUD: data packets that never reached the target */
} rs_flow_result;

/* Results of flows [first, first + n): running flows show their live counters. */
int rs_flows_results(const rs_sim *sim, uint64_t first, uint32_t n, rs_flow_result *out);

typedef struct rs_flows_counts {
    uint64_t total;
    uint64_t started;
    uint64_t finished; /* ok or failed */
    uint64_t failed;
} rs_flows_counts;
void rs_flows_get_counts(const rs_sim *sim, rs_flows_counts *out);

/* Bytes of memory the flow table takes per flow added (whether or not it runs). */
size_t rs_flows_bytes_per_flow(void);

/* Make rs_sim_run return RS_RUN_FLOWS_DONE once every flow added so far has finished. */
void rs_flows_stop_when_done(rs_sim *sim, int on);

/* Running flows now: their ids, payload bytes delivered so far and the rate their data sender
 * is paced at (0: line rate).  Returns how many were written (at most cap). */
uint32_t rs_flows_sample(const rs_sim *sim, uint32_t cap, uint64_t *ids, uint64_t *bytes, double *rate_bps);
/* A UET flow added with uet place: its source bytes (src_len = its size) and its target buffer
 * (dst_len bytes: target_bytes, else its size), valid until the simulation is freed; 0, or
 * RS_ERR_INVAL when the flow has none. */
int rs_flows_uet_bytes(const rs_sim *sim, uint64_t id, const uint8_t **src, uint64_t *src_len, const uint8_t **dst,
                       uint64_t *dst_len);

#endif
