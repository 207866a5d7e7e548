/* Completion queue: a ring of work completions the application polls. */
#ifndef RDMASIM_TRANSPORT_CQ_H
#define RDMASIM_TRANSPORT_CQ_H

#include <stdint.h>

#include "rdmasim/verbs.h"

typedef struct rs_cq {
    rs_wc *ring;  /* NULL when the slot is free */
    uint32_t cap;
    uint32_t head;
    uint32_t count;
    uint32_t users;    /* QPs attached */
    uint64_t overrun;  /* completions that found the ring full */
} rs_cq;

/* Append a completion; counts an overrun if full (reported at the next poll). */
void rs_cq_push(rs_cq *cq, const rs_wc *wc);

#endif
