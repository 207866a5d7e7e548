/* What the C files of librdmasim_ibverbs.so share (internal: nothing here is exported).
 *
 *   preload.c    the daemon's socket, devices, PDs, MRs, CQs, QPs, SRQs, AHs, the data path, clocks
 *   ext_verbs.c  extended verbs: ibv_create_qp_ex with the ibv_wr_* builders, ibv_create_cq_ex with
 *                ibv_start_poll/ibv_next_poll/ibv_end_poll and the ibv_wc_read_* accessors,
 *                ibv_query_device_ex
 *   mw.c         memory windows (ibv_alloc_mw, ibv_bind_mw, ibv_dealloc_mw, IBV_WR_BIND_MW)
 *   async.c      asynchronous events (ibv_get_async_event, the context's async_fd) and fork
 *   memwatch.c   a program spinning on its registered memory counts as waiting (RDMASIM_WATCH_MEMORY) */
#ifndef RDMASIM_RSD_H
#define RDMASIM_RSD_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define RSD_EXPORT __attribute__((visibility("default")))

/* An opened device: a verbs_context (its last field is the ibv_context the program sees), so the
 * extended verbs that verbs.h inlines find their entry points in it. */
struct rsd_context {
    struct verbs_context vctx;
    int host;
    int async_queue; /* the daemon's queue of this context's asynchronous events (0: none) */
};

/* The work requests ibv_wr_* build between ibv_wr_start and ibv_wr_complete (ext_verbs.c). */
struct rsd_wr_batch;

/* Every QP: an ibv_qp_ex (its first field is the ibv_qp), whether it was created extended, and its
 * builder's work requests. */
struct rsd_qp {
    struct ibv_qp_ex qpx;
    int is_ex;
    struct rsd_wr_batch *batch;
};

/* Every CQ: an ibv_cq_ex (ibv_cq is its prefix). ibv_start_poll reads completions from the daemon
 * a batch at a time; those not yet read wait in `buf` (ibv_poll_cq returns them first too). */
#define RSD_CQ_BATCH 16
struct rsd_cq {
    struct ibv_cq_ex cqx;
    int is_ex;
    pthread_mutex_t lock; /* buf, n, next, cur */
    int n, next;
    struct ibv_wc cur; /* the completion ibv_start_poll / ibv_next_poll made current */
    struct ibv_wc buf[RSD_CQ_BATCH];
};

/* preload.c */
int rsd_host(struct ibv_context *c);
struct rsd_context *rsd_ctx(struct ibv_context *c);
/* one request and its reply: the reply's status (>= 0) or -errno; up to `cap` words to `out` */
int64_t rsd_call(uint32_t op, const uint64_t *w, uint32_t nw, const void *bytes, uint32_t nb, uint64_t *out,
                 uint32_t cap, uint32_t *nout);
/* the same, sending descriptor `fd` with the request */
int64_t rsd_call_fd(uint32_t op, const uint64_t *w, uint32_t nw, int fd, uint64_t *out, uint32_t cap,
                    uint32_t *nout);
int rsd_fail(int64_t st);
void *rsd_new(int64_t st, size_t size);
int rsd_release(uint32_t op, struct ibv_context *ctx, uint64_t handle);
struct ibv_qp *rsd_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, int is_ex);
struct rsd_cq *rsd_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel);
int rsd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/* completions from the daemon (waits as ibv_poll_cq does); the count or -1 */
int rsd_fetch_wc(struct ibv_cq *cq, int n, struct ibv_wc *wc);

/* whether `a` is in registered memory (callable from a signal handler) */
int rsd_in_segment(uintptr_t a);

/* memwatch.c */
int rsd_watch_on(void);
void rsd_watch_reset(void);

/* ext_verbs.c */
void rsd_ext_init(struct rsd_context *c);
int rsd_qp_ex_init(struct rsd_qp *q, const struct ibv_qp_cap *cap, uint64_t send_ops_flags);
void rsd_qp_ex_fini(struct rsd_qp *q);
/* completions ibv_start_poll read from the daemon and the program has not (ibv_poll_cq's first) */
int rsd_cq_take_buffered(struct rsd_cq *cq, int n, struct ibv_wc *wc);

/* mw.c */
void rsd_mw_init(struct ibv_context *ctx);

/* async.c */
int rsd_async_open(struct rsd_context *c);
void rsd_async_close(struct rsd_context *c);
void rsd_async_track(int kind, int host, uint32_t handle, void *obj);
void rsd_async_untrack(void *obj);

#endif
