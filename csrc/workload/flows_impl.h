/* The bulk-flow table (workload/flows.c) and its hooks into the engine and the QP. */
#ifndef RDMASIM_WORKLOAD_FLOWS_IMPL_H
#define RDMASIM_WORKLOAD_FLOWS_IMPL_H

#include "sim/sim_impl.h"
#include "rdmasim/flows.h"

typedef struct rs_flow {
    int32_t src, dst;
    uint64_t size;
    int64_t start_ps;     /* earliest start (dependencies may delay it) */
    uint8_t verb, prio;
    uint32_t cfg;         /* index into rs_flows.cfgs */
    uint32_t n_wait;      /* dependencies not finished yet */
    uint64_t rdep_begin;  /* flows waiting for this one: rdeps[rdep_begin .. + rdep_n) */
    uint32_t rdep_n;
    uint64_t reap_next;   /* finished, QP pair not yet destroyed: next in the list (id + 1, 0 = end) */
    uint64_t run_prev;    /* running flows list (id + 1, 0 = none) */
    uint64_t run_next;
    int64_t pause0;       /* the src port's paused time on the flow's priority at start */
    rs_flow_result r;
} rs_flow;

typedef struct rs_flow_hostres {
    int ready;
    int cq;
    uint64_t iova;
    uint32_t lkey, rkey;
} rs_flow_hostres;

typedef struct rs_flows {
    rs_flow *f;
    uint64_t n;
    uint64_t *rdeps;
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
    uint64_t reap_head;
    uint64_t run_head;
    rs_timer timer;
    uint64_t started, finished, failed;
    int stop_when_done;
} rs_flows;

/* The requester of a flow's QP pair completed its work request (any status). */
void rs_flows_on_complete(rs_sim *sim, rs_qp *qp, uint32_t status);
/* The flow timer fired. */
void rs_flows_event(rs_sim *sim, rs_flows *fs);
void rs_flows_free(rs_flows *fs);

#endif
