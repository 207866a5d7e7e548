/* The bulk-flow table (workload/flows.c): the workload's context, over the transport. */
#ifndef RDMASIM_WORKLOAD_FLOWS_IMPL_H
#define RDMASIM_WORKLOAD_FLOWS_IMPL_H

#include <pthread.h>

#include "rdmasim/flows.h"
#include "transport/transport.h"
#include "uet/uet.h"

/* Event kinds of the workload's timers (the lower layers' are in their headers; sim/sim.c
 * dispatches them all). */
enum rs_workload_event {
    RS_EV_FLOWS = 14,      /* owner: rs_flows, start due flows, free finished ones */
    RS_EV_FLOWS_REAP = 15, /* owner: rs_flow_reaper, free the QP pairs of a host's finished flows */
};

typedef struct rs_flow {
    /* 4-byte and 1-byte fields first, the 8-byte ones after: no padding (sizeof 248; the table's
     * bytes per flow, rs_flows_bytes_per_flow, is what a million flows cost) */
    int32_t src, dst;
    uint32_t cfg;         /* index into rs_flows.cfgs */
    uint32_t n_wait;      /* 1 while its dependency events have not all come (dep_left), +1 while the
                           * flow before it on its QP pair has not been posted */
    uint32_t dep_left;    /* dependency events (completions, receipts) it still needs */
    uint32_t chain_len;   /* first flow of a chain: how many flows share its QP pair (else 0) */
    uint32_t qpn_req, qpn_resp; /* the chain's QP pair, known once the flow before it was posted */
    uint32_t rdep_n;      /* flows waiting for this one: rdeps[rdep_begin .. + rdep_n) */
    uint8_t verb, prio;
    uint8_t recv_done;    /* its receiver has every byte (or it ended): its RS_DEP_RECEIVED waiters went */
    uint64_t size;
    int64_t start_ps;     /* earliest start (dependencies may delay it) */
    int64_t hold_ps;      /* wait this long once start time and dependencies allow, then start */
    uint64_t recv_cur;    /* first flow of a chain: the flow whose message its responder receives next
                           * (id + 1, 0 = none) */
    uint64_t chain_next;  /* the flow posted after this one on its QP pair: id + 1 (0 = none) */
    uint64_t byte_off;    /* payload bytes of the chain's earlier messages (where its bytes start) */
    uint64_t retx0, cnps0; /* the pair's counters when this flow's share of them began */
    uint64_t rdep_begin;
    uint64_t reap_next;   /* finished, QP pair not yet destroyed: next in the list (id + 1, 0 = end) */
    uint64_t run_prev;    /* running flows list (id + 1, 0 = none) */
    uint64_t run_next;
    int64_t pause0;       /* the src port's paused time on the flow's priority at start */
    rs_pdc *pdc;          /* an Ultra Ethernet flow's PDC while it runs (NULL: RoCE, or done) */
    uint8_t *ubuf;        /* UET with place: the source bytes (size), then the target buffer */
    rs_flow_result r;
} rs_flow;

typedef struct rs_flow_hostres {
    int ready;
    int cq;
    uint64_t iova;
    uint32_t lkey, rkey;
    struct rs_flow_reaper *reaper; /* frees the pairs of the flows it requested */
} rs_flow_hostres;

/* A host's flows that finished at this instant, their QP pairs freed by an event of the host
 * right after (never from inside the completer, which is still using the QP), not by the table's
 * timer, whose event is global (a start) and which a finish would move in a partitioned run. */
typedef struct rs_flow_reaper {
    rs_timer timer;   /* its own allocation: armed timers never move */
    struct rs_flows *fs;
    uint64_t head;    /* finished flows (id + 1, linked by reap_next; 0 = none) */
} rs_flow_reaper;

typedef struct rs_flows {
    rs_transport *tp;     /* the hosts and QPs the flows run on */
    rs_uet *uet;          /* the Ultra Ethernet transport beside it (rs_wl_flows_attach_uet) */
    int *done;            /* the simulation's flag: set when every flow finished (stop_when_done) */
    rs_flow *f;
    uint64_t n;
    uint64_t *rdeps;
    uint8_t *rdep_on;     /* per rdeps entry: RS_DEP_DONE or RS_DEP_RECEIVED */
    uint64_t n_rdeps;
    rs_flow_cfg *cfgs;
    uint32_t n_cfgs;
    rs_flow_hostres *hostres;
    uint32_t n_hostres;
    int64_t *fifo_t;      /* ready flows that came in (start time, id) order */
    uint64_t *fifo_id;
    uint64_t fifo_head, fifo_tail;
    int64_t *heap_t;      /* ready flows that came out of order, by (start time, id) */
    uint64_t *heap_id;
    uint64_t heap_len;
    uint64_t run_head;
    rs_timer timer;
    uint64_t started, finished, failed;
    int stop_when_done;
    /* a partitioned run (sim/par.c), NULL otherwise: flows not finished yet by the partition of
     * their requester host; `done` is raised when the running partition's count reaches 0 */
    uint64_t *part_left;
    const uint16_t *part_of_host;
    /* a run on threads (sim/par.c), NULL otherwise: the table's bookkeeping (running list,
     * counters, its timer) is done under this lock, and the release of a finished flow's
     * responder QP on a host of another partition waits for the window's end: listed (by
     * reap_next) per partition of the requester in part_defer, rs_flows_reap_deferred frees them */
    pthread_mutex_t *lock;
    uint64_t *part_defer;
    int defer_all; /* MPI ranks (sim/par_rank.c): every finished flow's responder release waits */
} rs_flows;

/* MPI ranks (sim/par_rank.c): flow id's result as the rank that ran its requester has it (a flow
 * it finished leaves the running list and counts as finished here too). */
void rs_flows_install_result(rs_flows *fs, uint64_t id, const rs_flow_result *r);

/* A run on threads, between windows: free the responder QPs whose release waited (sim/par.c). */
/* Partition part's deferred finished flows, emptied: the first id (1-based, 0: none), linked
 * through reap_next in the order they finished. */
uint64_t rs_flows_take_deferred(rs_flows *fs, uint32_t part);
void rs_flows_reap_deferred(rs_flows *fs, uint32_t parts);

/* The requester of a flow's QP pair completed its work request (any status). */
void rs_flows_on_complete(rs_flows *fs, rs_qp *qp, uint32_t status);
/* The responder of a flow's QP pair accepted, in order, the last packet of a message. */
void rs_flows_on_received(rs_flows *fs, rs_qp *qp);
/* The flow timer fired. */
void rs_flows_event(rs_flows *fs);
/* A host's reap timer fired: free the QP pairs of its flows that finished. */
void rs_flows_reap_event(rs_flow_reaper *rp);
void rs_flows_free(rs_flows *fs);
/* Bytes the table allocates per flow added (rs_flow and its start-queue slots). */
size_t rs_wl_flows_bytes_per_flow(void);
/* UET flows run on u from now on: the table registers its completion hook with it. */
void rs_wl_flows_attach_uet(rs_flows *fs, rs_uet *u);

/* The workload's side of the public calls of rdmasim/flows.h (sim/flows_api.c maps each onto one):
 * `*table` is created at first use, `done` is the flag stop_when_done raises. */
int64_t rs_wl_flows_add(rs_transport *tp, rs_flows **table, int *done, uint32_t n, const int32_t *src,
                        const int32_t *dst, const uint64_t *size, const int64_t *start_ps,
                        const int64_t *hold_ps, const uint8_t *verb,
                        const uint8_t *prio, const int64_t *dep_ptr, const int32_t *deps, uint64_t n_deps,
                        const uint8_t *dep_on, const uint32_t *need, const uint32_t *after,
                        const rs_flow_cfg *cfg);
int rs_wl_flows_results(const rs_transport *tp, const rs_flows *fs, uint64_t first, uint32_t n,
                        rs_flow_result *out);
void rs_wl_flows_get_counts(const rs_flows *fs, rs_flows_counts *out);
int rs_wl_flows_uet_bytes(const rs_transport *tp, const rs_flows *fs, uint64_t id, const uint8_t **src,
                          uint64_t *src_len, const uint8_t **dst, uint64_t *dst_len);
void rs_wl_flows_stop_when_done(rs_transport *tp, rs_flows **table, int *done, int on);
uint32_t rs_wl_flows_sample(const rs_transport *tp, const rs_flows *fs, uint32_t cap, uint64_t *ids,
                            uint64_t *bytes, double *rate_bps);

#endif
