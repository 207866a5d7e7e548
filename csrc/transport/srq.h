/* Shared receive queue (ibv_create_srq): receive WQEs that any QP attached to it takes, in
 * posting order, when a message needs one (responder.c, ud.c). */
#ifndef RDMASIM_TRANSPORT_SRQ_H
#define RDMASIM_TRANSPORT_SRQ_H

#include <stdint.h>

#include "rdmasim/verbs.h"

struct rs_qp;

typedef struct rs_srq {
    uint32_t handle;   /* 1.. (0 in rs_qp_init.srq means none) */
    uint32_t pd;
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t head;
    uint32_t count;
    uint32_t users;    /* QPs attached */
    uint32_t limit;    /* armed SRQ limit (0: not armed); disarmed when the event is raised */
    uint32_t limit_events; /* IBV_EVENT_SRQ_LIMIT_REACHED raised, not yet taken by the application */
    struct rs_rwqe *rq; /* ring of max_wr */
    rs_sge *sge;       /* max_wr * max_sge */
} rs_srq;

/* Move the oldest WQE of the QP's SRQ into the QP's own one-entry receive ring, where the
 * responder consumes it as a posted receive.  1 if it did, 0 when the SRQ is empty.  When the
 * WQEs left fall below an armed limit, raises the limit event and disarms the limit (as rxe's
 * get_srq_wqe). */
int rs_srq_pull(struct rs_qp *qp);

#endif
