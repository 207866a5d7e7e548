/* Memory registration and key/range/access checks (rxe_mr.c rules, protocol.md 5). */
#include "transport/transport.h"

#include <stdlib.h>
#include <string.h>

#include "rdmasim/ib.h"

#define RS_PAGE 4096u
#define REMOTE_ANY (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ | RS_ACCESS_REMOTE_ATOMIC)
#define KNOWN_ACCESS (RS_ACCESS_LOCAL_WRITE | REMOTE_ANY | RS_ACCESS_MW_BIND | RS_ACCESS_ZERO_BASED | \
                      RS_ACCESS_ON_DEMAND | RS_ACCESS_FLUSH_GLOBAL | RS_ACCESS_FLUSH_PERSISTENT)

static rs_host *get_host(rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

uint8_t *rs_mr_resolve(rs_host *h, uint32_t key, uint32_t remote_qpn, uint32_t pd, uint32_t need, uint64_t addr,
                       uint64_t len)
{
    int remote = remote_qpn != 0;
    if (remote && rs_key_is_mw(key))
        return rs_mw_resolve(h, key, remote_qpn, pd, need, addr, len);
    uint32_t idx = key >> 8;
    if (idx >= h->n_mrs)
        return NULL;
    rs_mr *mr = &h->mrs[idx];
    if ((!mr->base && !mr->size_only) || (remote ? mr->rkey : mr->lkey) != key || mr->pd != pd ||
        (mr->access & need) != need)
        return NULL;
    if (addr < mr->iova || len > mr->length || addr - mr->iova > mr->length - len)
        return NULL;
    return mr->size_only ? RS_MR_NO_BYTES : mr->base + (addr - mr->iova);
}

static int mr_reg(rs_transport *tp, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
                  uint64_t *iova, uint32_t *lkey, uint32_t *rkey);

int rs_tp_mr_reg(rs_transport *tp, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
                 uint64_t *iova, uint32_t *lkey, uint32_t *rkey)
{
    if (!base || length == 0)
        return rs_tp_fail(tp, RS_ERR_INVAL, "memory region must have a buffer of at least 1 byte");
    return mr_reg(tp, host, pd, base, length, access, iova, lkey, rkey);
}

int rs_mr_reg_size_only(rs_transport *tp, int host, uint32_t pd, uint64_t length, uint32_t access, uint64_t *iova,
                        uint32_t *lkey, uint32_t *rkey)
{
    if (length == 0)
        return rs_tp_fail(tp, RS_ERR_INVAL, "memory region must be at least 1 byte long");
    if (access & RS_ACCESS_REMOTE_ATOMIC)
        return rs_tp_fail(tp, RS_ERR_INVAL, "a size-only region cannot take atomics (they need real memory)");
    return mr_reg(tp, host, pd, NULL, length, access, iova, lkey, rkey);
}

static int mr_reg(rs_transport *tp, int host, uint32_t pd, uint8_t *base, uint64_t length, uint32_t access,
                  uint64_t *iova, uint32_t *lkey, uint32_t *rkey)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (access & ~(uint32_t)KNOWN_ACCESS)
        return rs_tp_fail(tp, RS_ERR_INVAL, "unknown access flag bits 0x%x", access & ~(uint32_t)KNOWN_ACCESS);
    if ((access & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_ATOMIC)) && !(access & RS_ACCESS_LOCAL_WRITE))
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "IBV_ACCESS_REMOTE_WRITE and IBV_ACCESS_REMOTE_ATOMIC require IBV_ACCESS_LOCAL_WRITE "
                          "(as ibv_reg_mr answers EINVAL)");
    uint32_t idx = 0;
    while (idx < h->n_mrs && (h->mrs[idx].base || h->mrs[idx].size_only))
        idx++;
    if (idx >= RS_MW_MIN_INDEX) /* window keys use the indexes above (mw.h) */
        return rs_tp_fail(tp, RS_ERR_NOMEM, "too many memory regions on host %d", host);
    if (idx == h->n_mrs) {
        rs_mr *n = realloc(h->mrs, (h->n_mrs + 1) * sizeof(*n));
        if (!n)
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
        h->mrs = n;
        h->mrs[h->n_mrs] = (rs_mr){0}; /* keys derive from the slot's previous key: start at 0 */
        h->n_mrs++;
    }
    rs_mr *mr = &h->mrs[idx];
    /* deterministic, page-aligned addresses with a guard page between regions */
    uint64_t pages = (length + RS_PAGE - 1) / RS_PAGE;
    mr->base = base;
    mr->size_only = base == NULL;
    mr->iova = h->next_iova;
    h->next_iova += (pages + 1) * RS_PAGE;
    mr->length = length;
    mr->pd = pd;
    mr->access = access;
    /* the 8-bit key part must differ from any earlier key of this slot: a stale key never matches */
    uint32_t keybits = (uint32_t)(rs_rng_next(&h->rng) & 0xFF);
    if (((mr->lkey & 0xFF) == keybits) && mr->lkey)
        keybits = (keybits + 1) & 0xFF;
    mr->lkey = (idx << 8) | keybits;
    mr->rkey = mr->lkey; /* as rxe_mr_init: one key for both; access bits gate remote use */
    *iova = mr->iova;
    *lkey = mr->lkey;
    *rkey = mr->rkey;
    return (int)idx;
}

/* Work that will still touch the region through `mr`'s keys: posted WQEs naming its lkey, a
 * WRITE being received or a READ response being sent under its rkey. */
static const char *mr_user(rs_host *h, const rs_mr *mr, uint32_t *qpn)
{
    for (size_t q = 0; q < rs_qpn_slots(&h->qpns); q++) {
        rs_qp *qp = h->qpns.slot[q].qp;
        if (!qp)
            continue;
        *qpn = qp->qpn;
        for (uint32_t i = 0; i < qp->sq_count; i++) {
            const rs_swqe *w = rs_qp_swqe(qp, i);
            for (uint32_t k = 0; k < w->num_sge; k++)
                if (w->sge[k].lkey == mr->lkey)
                    return "a posted send work request";
        }
        for (uint32_t i = 0; i < qp->rq_count; i++) {
            const rs_rwqe *r = &qp->rq[(qp->rq_head + i) % qp->init.max_recv_wr];
            for (uint32_t k = 0; k < r->num_sge; k++)
                if (r->sge[k].lkey == mr->lkey)
                    return "a posted receive work request";
        }
        if (mr->rkey && qp->in_msg == 2 && qp->write_rkey == mr->rkey)
            return "an RDMA WRITE being received";
        for (const rs_pkt *j = qp->respq_head; j; j = j->next)
            if (mr->rkey && j->kind == RS_PKT_JOB && j->reth_rkey == mr->rkey)
                return "an RDMA READ response being sent";
    }
    return NULL;
}

int rs_tp_mr_rereg(rs_transport *tp, int host, int idx, uint32_t pd, uint32_t access, uint32_t *rkey)
{
    rs_host *h = get_host(tp, host);
    if (!h || idx < 0 || (uint32_t)idx >= h->n_mrs || (!h->mrs[idx].base && !h->mrs[idx].size_only))
        return rs_tp_fail(tp, RS_ERR_INVAL, "no memory region %d on host %d", idx, host);
    if (access & ~(uint32_t)KNOWN_ACCESS)
        return rs_tp_fail(tp, RS_ERR_INVAL, "unknown access flag bits 0x%x", access & ~(uint32_t)KNOWN_ACCESS);
    if ((access & (RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_ATOMIC)) && !(access & RS_ACCESS_LOCAL_WRITE))
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "IBV_ACCESS_REMOTE_WRITE and IBV_ACCESS_REMOTE_ATOMIC require IBV_ACCESS_LOCAL_WRITE");
    if (h->mrs[idx].size_only && (access & RS_ACCESS_REMOTE_ATOMIC))
        return rs_tp_fail(tp, RS_ERR_INVAL, "a size-only region cannot take atomics (they need real memory)");
    rs_mr *mr = &h->mrs[idx];
    mr->pd = pd;
    mr->access = access;
    rs_host_keys_changed(h);
    *rkey = mr->rkey;
    return RS_OK;
}

int rs_tp_mr_dereg(rs_transport *tp, int host, int idx)
{
    rs_host *h = get_host(tp, host);
    if (!h || idx < 0 || (uint32_t)idx >= h->n_mrs || (!h->mrs[idx].base && !h->mrs[idx].size_only))
        return rs_tp_fail(tp, RS_ERR_INVAL, "no memory region %d on host %d", idx, host);
    uint32_t qpn = 0, nmw = rs_mw_count_on_mr(h, idx);
    if (nmw) /* rxe_dereg_mr: EINVAL while windows are bound to it */
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "memory region lkey=0x%x has %u memory window(s) bound to it: invalidate or "
                          "deallocate them before deregistering", h->mrs[idx].lkey, nmw);
    const char *user = mr_user(h, &h->mrs[idx], &qpn);
    if (user)
        return rs_tp_fail(tp, RS_ERR_BUSY,
                          "memory region lkey=0x%x is still in use by %s on QP 0x%x: wait for its "
                          "completion (or move the QP to ERR, which flushes it) before deregistering",
                          h->mrs[idx].lkey, user, qpn);
    h->mrs[idx].size_only = 0;
    h->mrs[idx].base = NULL; /* keys kept so a re-registration of the slot gets a new key */
    rs_host_keys_changed(h);
    return RS_OK;
}

int rs_scatter_sges(rs_host *h, uint32_t pd, const rs_sge *sge, uint32_t n, uint64_t off, const uint8_t *data,
                    uint32_t len)
{
    for (uint32_t i = 0; i < n && len > 0; i++) {
        const rs_sge *s = &sge[i];
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        uint32_t k = (uint32_t)(s->length - off) < len ? (uint32_t)(s->length - off) : len;
        uint8_t *dst = rs_mr_resolve(h, s->lkey, 0, pd, RS_ACCESS_LOCAL_WRITE, s->addr + off, k);
        if (!dst)
            return -1;
        if (dst != RS_MR_NO_BYTES) {
            if (data)
                memcpy(dst, data, k);
            else
                memset(dst, 0, k);
        }
        if (data)
            data += k;
        len -= k;
        off = 0;
    }
    return len ? -1 : 0;
}
