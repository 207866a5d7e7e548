/* Memory windows: allocation, binding, invalidation and remote access checks (rxe_mw.c,
 * IBA 10.6.7, ibv_alloc_mw(3) / ibv_bind_mw(3)). */
#include "transport/transport.h"

#include <stdlib.h>

#include "rdmasim/ib.h"

static rs_host *get_host(rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

static rs_mw *lookup(rs_host *h, uint32_t key)
{
    if (!rs_key_is_mw(key))
        return NULL;
    uint32_t idx = (key >> 8) - RS_MW_MIN_INDEX;
    if (idx >= h->n_mws || h->mws[idx].state == RS_MW_SLOT_FREE || h->mws[idx].rkey != key)
        return NULL;
    return &h->mws[idx];
}

int rs_tp_mw_alloc(rs_transport *tp, int host, uint32_t pd, uint32_t type, uint32_t *rkey)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (type != 1 && type != 2) /* ib_uverbs_alloc_mw: EINVAL for any other type */
        return rs_tp_fail(tp, RS_ERR_INVAL, "memory window type %u: allowed are 1 and 2", type);
    uint32_t idx = 0;
    while (idx < h->n_mws && h->mws[idx].state != RS_MW_SLOT_FREE)
        idx++;
    if (idx >= RS_MW_MAX)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "too many memory windows on host %d (max_mw %u)", host, RS_MW_MAX);
    if (idx == h->n_mws) {
        rs_mw *n = realloc(h->mws, (h->n_mws + 1) * sizeof(*n));
        if (!n)
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
        h->mws = n;
        h->mws[h->n_mws] = (rs_mw){0};
        h->n_mws++;
    }
    rs_mw *mw = &h->mws[idx];
    /* a new 8-bit key part, never the slot's previous one: a stale key does not match */
    uint32_t keybits = (uint32_t)(rs_rng_next(&h->rng) & 0xFF);
    if (mw->rkey && (mw->rkey & 0xFF) == keybits)
        keybits = (keybits + 1) & 0xFF;
    *mw = (rs_mw){.state = type == 2 ? RS_MW_STATE_FREE : RS_MW_STATE_VALID, /* rxe_alloc_mw */
                  .type = type,
                  .pd = pd,
                  .rkey = ((idx + RS_MW_MIN_INDEX) << 8) | keybits,
                  .mr = -1};
    *rkey = mw->rkey;
    return (int)idx;
}

int rs_tp_mw_dealloc(rs_transport *tp, int host, int idx)
{
    rs_host *h = get_host(tp, host);
    if (!h || idx < 0 || (uint32_t)idx >= h->n_mws || h->mws[idx].state == RS_MW_SLOT_FREE)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no memory window %d on host %d", idx, host);
    rs_mw *mw = &h->mws[idx];
    uint32_t key = mw->rkey;
    *mw = (rs_mw){.rkey = key, .mr = -1}; /* the key is kept so the slot's next window gets another */
    rs_host_keys_changed(h);
    return RS_OK;
}

uint8_t *rs_mw_resolve(rs_host *h, uint32_t key, uint32_t qpn, uint32_t pd, uint32_t need, uint64_t addr,
                       uint64_t len)
{
    const rs_mw *mw = lookup(h, key);
    /* rxe_lookup_mw: key, PD, the binding QP (type 2), a non-empty valid window, its access */
    if (!mw || mw->state != RS_MW_STATE_VALID || mw->pd != pd || (mw->type == 2 && mw->qpn != qpn) ||
        mw->length == 0 || mw->mr < 0 || (mw->access & need) != need)
        return NULL;
    /* IBA 10.6.7.2: the access must fall inside the window (rxe checks the region's bounds only).
     * A zero-based window is addressed by offset from its start (rxe check_rkey: resp.offset =
     * mw->addr for IB_ZERO_BASED); any other by the region's addresses. */
    uint64_t off = addr;
    if (!(mw->access & RS_ACCESS_ZERO_BASED)) {
        if (addr < mw->addr)
            return NULL;
        off = addr - mw->addr;
    }
    if (len > mw->length || off > mw->length - len || off > UINT64_MAX - mw->addr)
        return NULL;
    const rs_mr *mr = &h->mrs[mw->mr];
    return rs_mr_resolve(h, mr->lkey, 0, mr->pd, 0, mw->addr + off, len);
}

uint32_t rs_mw_bind(rs_host *h, const rs_qp *qp, const rs_swqe *w)
{
    rs_mw *mw = lookup(h, w->bind_mw_rkey);
    if (!mw)
        return RS_WC_STATUS_MW_BIND_ERR;
    const rs_mr *mr = NULL;
    int mr_idx = -1;
    if (w->bind_len) {
        uint32_t i = w->bind_lkey >> 8;
        if (rs_key_is_mw(w->bind_lkey) || i >= h->n_mrs || (!h->mrs[i].base && !h->mrs[i].size_only) ||
            h->mrs[i].lkey != w->bind_lkey)
            return RS_WC_STATUS_MW_BIND_ERR;
        mr = &h->mrs[i];
        mr_idx = (int)i;
    }
    uint32_t access = w->bind_access;
    /* rxe_check_bind_mw */
    if (mw->type == 1 && (mw->state != RS_MW_STATE_VALID || (access & RS_ACCESS_ZERO_BASED)))
        return RS_WC_STATUS_MW_BIND_ERR;
    if (mw->type == 2 && (mw->state != RS_MW_STATE_FREE || mw->pd != qp->init.pd || !mr))
        return RS_WC_STATUS_MW_BIND_ERR; /* o10-37.2.30, C10-72, o10-37.2.40 */
    if (mw->type == 1 && mw->pd != qp->init.pd)
        return RS_WC_STATUS_MW_BIND_ERR;
    if (mr) {
        if (mr->access & RS_ACCESS_ZERO_BASED)
            return RS_WC_STATUS_MW_BIND_ERR;
        if (!(mr->access & RS_ACCESS_MW_BIND)) /* C10-73 */
            return RS_WC_STATUS_MW_BIND_ERR;
        if ((access & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_ATOMIC)) && !(mr->access & RS_ACCESS_LOCAL_WRITE))
            return RS_WC_STATUS_MW_BIND_ERR; /* C10-74 */
        if (access & RS_ACCESS_ZERO_BASED ? w->bind_len > mr->length
                                          : (w->remote_addr < mr->iova || w->bind_len > mr->length ||
                                             w->remote_addr - mr->iova > mr->length - w->bind_len))
            return RS_WC_STATUS_MW_BIND_ERR; /* C10-75 */
    }
    /* rxe_do_bind_mw: the new 8-bit key part comes from the work request */
    mw->rkey = (mw->rkey & ~0xFFu) | (w->rkey & 0xFFu);
    mw->access = access;
    mw->state = RS_MW_STATE_VALID;
    mw->addr = w->remote_addr;
    mw->length = w->bind_len;
    mw->mr = w->bind_len ? mr_idx : -1;
    if (mw->type == 2)
        mw->qpn = qp->qpn;
    rs_host_keys_changed(h);
    return RS_WC_STATUS_SUCCESS;
}

static void unbind(rs_mw *mw)
{
    mw->state = RS_MW_STATE_FREE;
    mw->mr = -1;
    mw->qpn = 0;
    mw->length = 0;
    mw->access = 0;
}

int rs_mw_invalidate(rs_host *h, uint32_t key, uint32_t pd)
{
    rs_mw *mw = lookup(h, key);
    if (!mw || mw->type != 2 || mw->state != RS_MW_STATE_VALID || mw->pd != pd)
        return -1; /* rxe_invalidate_mw: a type 1 window cannot be invalidated */
    unbind(mw);
    rs_host_keys_changed(h);
    return 0;
}

uint32_t rs_mw_local_inv(rs_host *h, uint32_t key)
{
    rs_mw *mw = lookup(h, key);
    if (!mw || mw->type != 2)
        /* a region key: only fast-registration regions can be invalidated (rxe_invalidate_mr);
         * user regions, the only kind emulated, cannot */
        return RS_WC_STATUS_LOC_QP_OP_ERR;
    unbind(mw);
    rs_host_keys_changed(h);
    return RS_WC_STATUS_SUCCESS;
}

void rs_mw_forget_qp(rs_host *h, uint32_t qpn)
{
    for (uint32_t i = 0; i < h->n_mws; i++)
        if (h->mws[i].type == 2 && h->mws[i].state == RS_MW_STATE_VALID && h->mws[i].qpn == qpn) {
            unbind(&h->mws[i]);
            rs_host_keys_changed(h);
        }
}

uint32_t rs_mw_count_on_mr(const rs_host *h, int mr)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < h->n_mws; i++)
        n += h->mws[i].state == RS_MW_STATE_VALID && h->mws[i].mr == mr;
    return n;
}
