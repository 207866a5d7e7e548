/* Asynchronous events of librdmasim_ibverbs.so.
 *
 * Each opened context has a queue of events in the daemon (rdmasim/fabricd/server_ext.py) and an
 * eventfd, its async_fd, that the daemon writes to per event: a program can poll() it.
 * ibv_get_async_event waits in the daemon as ibv_get_cq_event does (simulated time passes while
 * every process waits); with O_NONBLOCK set on async_fd it returns EAGAIN when no event is due.
 * The daemon names an event's QP or SRQ by its handle; this file keeps which object of the
 * program that is. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rsd.h"

struct tracked {
    int kind, host;
    uint32_t handle;
    void *obj;
    struct tracked *next;
};

/* the program's QPs and SRQs by (kind, host, handle), for the element of their events */
struct registry {
    pthread_mutex_t lock;
    struct tracked *head;
};

static struct registry R = {.lock = PTHREAD_MUTEX_INITIALIZER};

void rsd_async_track(int kind, int host, uint32_t handle, void *obj)
{
    struct tracked *t = malloc(sizeof(*t));
    if (!t)
        return; /* its events then name no element */
    *t = (struct tracked){.kind = kind, .host = host, .handle = handle, .obj = obj};
    pthread_mutex_lock(&R.lock);
    t->next = R.head;
    R.head = t;
    pthread_mutex_unlock(&R.lock);
}

void rsd_async_untrack(void *obj)
{
    pthread_mutex_lock(&R.lock);
    for (struct tracked **p = &R.head; *p; p = &(*p)->next) {
        if ((*p)->obj == obj) {
            struct tracked *t = *p;
            *p = t->next;
            free(t);
            break;
        }
    }
    pthread_mutex_unlock(&R.lock);
}

static void *lookup(int kind, int host, uint32_t handle)
{
    void *obj = NULL;
    pthread_mutex_lock(&R.lock);
    for (struct tracked *t = R.head; t; t = t->next)
        if (t->kind == kind && t->host == host && t->handle == handle) {
            obj = t->obj;
            break;
        }
    pthread_mutex_unlock(&R.lock);
    return obj;
}

int rsd_async_open(struct rsd_context *c)
{
    int efd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (efd < 0)
        return -1;
    uint64_t w[1] = {(uint64_t)c->host};
    int64_t st = rsd_call_fd(RSD_OPEN_ASYNC, w, 1, efd, NULL, 0, NULL);
    if (st < 0) {
        close(efd);
        rsd_fail(st);
        return -1;
    }
    c->async_queue = (int)st;
    c->vctx.context.async_fd = efd;
    return 0;
}

void rsd_async_close(struct rsd_context *c)
{
    if (!c->async_queue)
        return;
    uint64_t w[1] = {(uint64_t)c->async_queue};
    rsd_call(RSD_CLOSE_ASYNC, w, 1, NULL, 0, NULL, 0, NULL);
    close(c->vctx.context.async_fd);
    c->async_queue = 0;
    c->vctx.context.async_fd = -1;
}

RSD_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
    struct rsd_context *c = rsd_ctx(context);
    int fd = context->async_fd;
    uint64_t one;
    int fl = fcntl(fd, F_GETFL);
    if (!c->async_queue || fl < 0) {
        errno = EINVAL;
        return -1;
    }
    /* non-blocking: an event is due only when the daemon has counted it on the eventfd */
    if ((fl & O_NONBLOCK) && syscall(SYS_read, fd, &one, sizeof(one)) != (long)sizeof(one))
        return -1; /* EAGAIN */
    uint64_t w[1] = {(uint64_t)c->async_queue};
    uint64_t o[3];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_GET_ASYNC_EVENT, w, 1, NULL, 0, o, 3, &n);
    if (st < 0 || n < 3) {
        rsd_fail(st);
        return -1;
    }
    if (!(fl & O_NONBLOCK) && syscall(SYS_read, fd, &one, sizeof(one)) != (long)sizeof(one))
        return -1;
    memset(event, 0, sizeof(*event));
    event->event_type = (enum ibv_event_type)o[0];
    switch ((int)o[1]) {
    case RSD_ELEM_QP:
        event->element.qp = lookup(RSD_ELEM_QP, c->host, (uint32_t)o[2]);
        break;
    case RSD_ELEM_SRQ:
        event->element.srq = lookup(RSD_ELEM_SRQ, c->host, (uint32_t)o[2]);
        break;
    case RSD_ELEM_CQ:
        event->element.cq = lookup(RSD_ELEM_CQ, c->host, (uint32_t)o[2]);
        break;
    case RSD_ELEM_PORT:
        event->element.port_num = (int)o[2];
        break;
    default:
        break;
    }
    return 0;
}

/* as libibverbs: count the acknowledgement on the object, whose destroy may wait for it */
RSD_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR: {
        struct ibv_cq *cq = event->element.cq;
        if (!cq)
            return;
        pthread_mutex_lock(&cq->mutex);
        cq->async_events_completed++;
        pthread_cond_signal(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        return;
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
        struct ibv_qp *qp = event->element.qp;
        if (!qp)
            return;
        pthread_mutex_lock(&qp->mutex);
        qp->events_completed++;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        return;
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
        struct ibv_srq *srq = event->element.srq;
        if (!srq)
            return;
        pthread_mutex_lock(&srq->mutex);
        srq->events_completed++;
        pthread_cond_signal(&srq->cond);
        pthread_mutex_unlock(&srq->mutex);
        return;
    }
    default:
        return;
    }
}

/* ---- fork ----
 * As rdma-core on a kernel with copy-on-fork for pinned pages (Linux 5.13 and later): nothing to
 * initialise, and a child gets a private copy of registered memory (rsd_fork_child in preload.c). */

RSD_EXPORT int ibv_fork_init(void) { return 0; }

RSD_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
