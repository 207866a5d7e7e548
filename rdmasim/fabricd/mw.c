/* Memory windows of librdmasim_ibverbs.so (verbs.h inlines ibv_alloc_mw, ibv_bind_mw and
 * ibv_dealloc_mw through the context's ops).
 *
 * The daemon's NIC emulates them as rxe: a type 1 window is bound with ibv_bind_mw, which posts an
 * IBV_WR_BIND_MW work request (as rxe's provider does) and gives the window the next key of its
 * index (ibv_inc_rkey) at once; a type 2 window is bound by the program's own IBV_WR_BIND_MW work
 * request (ibv_post_send or ibv_wr_bind_mw), with the key it chooses. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rsd.h"

static struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    uint64_t w[3] = {(uint64_t)rsd_host(pd->context), pd->handle, (uint64_t)type};
    uint64_t o[1];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_ALLOC_MW, w, 3, NULL, 0, o, 1, &n);
    struct ibv_mw *mw = rsd_new(st >= 0 && n < 1 ? -EINVAL : st, sizeof(*mw));
    if (!mw)
        return NULL;
    mw->context = pd->context;
    mw->pd = pd;
    mw->handle = (uint32_t)st;
    mw->rkey = (uint32_t)o[0];
    mw->type = type;
    return mw;
}

static int dealloc_mw(struct ibv_mw *mw)
{
    int rc = rsd_release(RSD_DEALLOC_MW, mw->context, mw->handle);
    if (rc)
        return rc;
    free(mw);
    return 0;
}

/* ibv_bind_mw has checked the window's type and the region's PD (verbs.h) */
static int bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = bind->wr_id;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = bind->send_flags;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = bind->bind_info;
    int rc = rsd_post_send(qp, &wr, &bad);
    if (rc)
        return rc;
    mw->rkey = wr.bind_mw.rkey;
    return 0;
}

void rsd_mw_init(struct ibv_context *ctx)
{
    ctx->ops.alloc_mw = alloc_mw;
    ctx->ops.dealloc_mw = dealloc_mw;
    ctx->ops.bind_mw = bind_mw;
}
