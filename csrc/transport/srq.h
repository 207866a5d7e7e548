/* Shared receive queue (ibv_create_srq): receive WQEs that any QP attached to it takes, in
 * posting order, when a message needs one (responder.c, ud.c). */
#ifndef RDMASIM_TRANSPORT_SRQ_H
#define RDMASIM_TRANSPORT_SRQ_H

#include <stdint.h>

#include "rdmasim/sim.h"

struct rs_qp;

typedef struct rs_srq {
    uint32_t handle;   /* 1.. (0 in rs_qp_init.srq means none) */
    uint32_t pd;
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t head;
    uint32_t count;
    uint32_t users;    /* QPs attached */
    struct rs_rwqe *rq; /* ring of max_wr */
    rs_sge *sge;       /* max_wr * max_sge */
} rs_srq;

/* Move the oldest WQE of the QP's SRQ into the QP's own one-entry receive ring, where the
 * responder consumes it as a posted receive.  1 if it did, 0 when the SRQ is empty. */
int rs_srq_pull(struct rs_qp *qp);

#endif
