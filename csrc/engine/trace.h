/* The trace buffer and its engine-level hooks (internal).
 *
 * Each hook is one line at its call site and one NULL test when tracing is off;
 * the record is filled out of line (trace.c) only when it is on.  The hooks that read a frame,
 * a link or a QP live with them (codec/trace_frame.h, link/link.c, transport/trace_qp.h) and
 * fill records through rs_trace_slot. */
#ifndef RDMASIM_CORE_TRACE_H
#define RDMASIM_CORE_TRACE_H

#include <stddef.h>

#include "engine/engine.h"
#include "rdmasim/trace.h"

#if defined(__GNUC__) || defined(__clang__)
#define RS_TRACE_ON(eng) __builtin_expect((eng)->trace != NULL, 0)
#else
#define RS_TRACE_ON(eng) ((eng)->trace != NULL)
#endif

typedef struct rs_trace {
    rs_trace_rec *recs; /* pending records, oldest first */
    size_t n;           /* pending */
    size_t cap;         /* allocated slots (grown by doubling, never above the record cap) */
    uint64_t max;       /* cap on records kept since enable; 0 = none */
    uint64_t recorded;  /* records kept since enable */
    uint64_t lost;      /* records not kept: cap reached or out of memory */
} rs_trace;

/* control path (the public rs_trace_* calls of rdmasim/trace.h, sim/sim.c, land here) */
int rs_trace_start(rs_engine *e, uint64_t max_records);
void rs_trace_stop(rs_engine *e);
size_t rs_trace_take(rs_engine *e, rs_trace_rec *out, size_t n);
void rs_trace_get_counts(const rs_engine *e, uint64_t out[3]);

/* out of line: trace.c */
/* A zeroed record stamped with the time, to fill; NULL when it cannot be kept (counted as lost). */
rs_trace_rec *rs_trace_slot(rs_engine *e);
/* set psn and aux of the record just written (if one was kept) */
void rs_trace_patch_last(rs_engine *e, uint32_t psn, uint32_t aux);
void rs_trace_rec_pfc(rs_engine *e, int sw, uint32_t port, uint32_t prio, int xoff, uint64_t shared,
                      uint64_t hdrm, uint64_t threshold);

#endif
