/* Extended verbs of librdmasim_ibverbs.so: what verbs.h inlines through a verbs_context and the
 * function pointers of struct ibv_qp_ex / struct ibv_cq_ex.
 *
 *  - ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: the QP's ibv_wr_* builders collect work
 *    requests between ibv_wr_start and ibv_wr_complete in memory allocated with the QP (one entry
 *    per send queue entry), and ibv_wr_complete posts them as one ibv_post_send. Inline data is
 *    copied when ibv_wr_set_inline_data is called, as the API promises.
 *  - ibv_create_cq_ex: ibv_start_poll reads up to RSD_CQ_BATCH completions from the daemon (an
 *    empty CQ waits as ibv_poll_cq does); ibv_next_poll takes the next; those not yet read stay
 *    for the next ibv_start_poll or ibv_poll_cq. The wc_flags rxe offers, and no others.
 *  - ibv_query_device_ex: ibv_query_device's attributes plus the daemon's extended ones. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rsd.h"

/* ---- ibv_qp_ex ---- */

struct rsd_wr_batch {
    uint32_t cap, max_sge, max_inline;
    uint32_t n;   /* work requests built */
    int err;      /* the first error of this batch (ibv_wr_complete returns it) */
    struct ibv_send_wr *wr;
    struct ibv_sge *sge;   /* max_sge per work request */
    unsigned char *inl;    /* max_inline bytes per work request */
    struct ibv_send_wr spare; /* where builders write once the batch is full (then err is ENOMEM) */
    struct ibv_sge spare_sge[1];
};

static struct rsd_wr_batch *batch_of(struct ibv_qp_ex *q) { return ((struct rsd_qp *)q)->batch; }

static struct ibv_send_wr *cur_wr(struct rsd_wr_batch *b)
{
    return b->n ? &b->wr[b->n - 1] : &b->spare;
}

static struct ibv_send_wr *new_wr(struct ibv_qp_ex *q, enum ibv_wr_opcode op)
{
    struct rsd_wr_batch *b = batch_of(q);
    struct ibv_send_wr *w;
    if (b->n < b->cap) {
        w = &b->wr[b->n];
        memset(w, 0, sizeof(*w));
        w->sg_list = &b->sge[(size_t)b->n * b->max_sge];
        b->n++;
    } else {
        if (!b->err)
            b->err = ENOMEM; /* more than the send queue holds */
        w = &b->spare;
        memset(w, 0, sizeof(*w));
        w->sg_list = b->spare_sge;
    }
    w->wr_id = q->wr_id;
    w->send_flags = q->wr_flags;
    w->opcode = op;
    return w;
}

static void wr_rdma(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr)
{
    struct ibv_send_wr *w = new_wr(q, op);
    w->wr.rdma.rkey = rkey;
    w->wr.rdma.remote_addr = addr;
}

static void x_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr) { wr_rdma(q, IBV_WR_RDMA_WRITE, rkey, addr); }
static void x_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr) { wr_rdma(q, IBV_WR_RDMA_READ, rkey, addr); }

static void x_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm)
{
    wr_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr);
    cur_wr(batch_of(q))->imm_data = imm;
}

static void x_send(struct ibv_qp_ex *q) { new_wr(q, IBV_WR_SEND); }

static void x_send_imm(struct ibv_qp_ex *q, __be32 imm) { new_wr(q, IBV_WR_SEND_WITH_IMM)->imm_data = imm; }

static void x_send_inv(struct ibv_qp_ex *q, uint32_t rkey) { new_wr(q, IBV_WR_SEND_WITH_INV)->invalidate_rkey = rkey; }

static void x_local_inv(struct ibv_qp_ex *q, uint32_t rkey) { new_wr(q, IBV_WR_LOCAL_INV)->invalidate_rkey = rkey; }

static void x_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap)
{
    struct ibv_send_wr *w = new_wr(q, IBV_WR_ATOMIC_CMP_AND_SWP);
    w->wr.atomic.rkey = rkey;
    w->wr.atomic.remote_addr = addr;
    w->wr.atomic.compare_add = compare;
    w->wr.atomic.swap = swap;
}

static void x_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add)
{
    struct ibv_send_wr *w = new_wr(q, IBV_WR_ATOMIC_FETCH_AND_ADD);
    w->wr.atomic.rkey = rkey;
    w->wr.atomic.remote_addr = addr;
    w->wr.atomic.compare_add = add;
}

static void x_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *info)
{
    struct ibv_send_wr *w = new_wr(q, IBV_WR_BIND_MW);
    w->bind_mw.mw = mw;
    w->bind_mw.rkey = rkey;
    w->bind_mw.bind_info = *info;
}

/* builders the emulated device does not offer (as rxe: no TSO, no XRC): the batch fails */
static void x_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
    struct rsd_wr_batch *b = batch_of(q);
    new_wr(q, IBV_WR_TSO);
    b->err = b->err ? b->err : EOPNOTSUPP;
}

static void x_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
    struct rsd_wr_batch *b = batch_of(q);
    b->err = b->err ? b->err : EOPNOTSUPP;
}

/* the 8 bytes at `val` placed at the remote address in one step (rxe's ATOMIC WRITE) */
static void x_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, const void *val)
{
    struct ibv_send_wr *w = new_wr(q, IBV_WR_ATOMIC_WRITE);
    w->wr.atomic.rkey = rkey;
    w->wr.atomic.remote_addr = addr;
    memcpy(&w->wr.atomic.compare_add, val, 8);
}

static void x_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey)
{
    struct ibv_send_wr *w = cur_wr(batch_of(q));
    w->wr.ud.ah = ah;
    w->wr.ud.remote_qpn = remote_qpn;
    w->wr.ud.remote_qkey = remote_qkey;
}

static void x_set_sge_list(struct ibv_qp_ex *q, size_t num, const struct ibv_sge *sg)
{
    struct rsd_wr_batch *b = batch_of(q);
    struct ibv_send_wr *w = cur_wr(b);
    if (w == &b->spare)
        return;
    if (num > b->max_sge) {
        b->err = b->err ? b->err : EINVAL;
        return;
    }
    memcpy(w->sg_list, sg, num * sizeof(*sg));
    w->num_sge = (int)num;
    w->send_flags &= ~(unsigned)IBV_SEND_INLINE;
}

static void x_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
    struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};
    x_set_sge_list(q, 1, &sge);
}

/* the bytes are copied now (the program may reuse its buffers at once), into the WR's inline slot,
 * which one SGE then names */
static void x_set_inline_data_list(struct ibv_qp_ex *q, size_t num, const struct ibv_data_buf *bufs)
{
    struct rsd_wr_batch *b = batch_of(q);
    struct ibv_send_wr *w = cur_wr(b);
    if (w == &b->spare)
        return;
    size_t total = 0;
    for (size_t i = 0; i < num; i++)
        total += bufs[i].length;
    if (total > b->max_inline) {
        b->err = b->err ? b->err : EINVAL; /* beyond the QP's max_inline_data, as rxe */
        return;
    }
    w->send_flags |= IBV_SEND_INLINE;
    w->num_sge = 0;
    if (!total)
        return;
    unsigned char *slot = &b->inl[(size_t)(w - b->wr) * b->max_inline];
    size_t at = 0;
    for (size_t i = 0; i < num; i++) {
        if (bufs[i].length)
            memcpy(slot + at, bufs[i].addr, bufs[i].length);
        at += bufs[i].length;
    }
    w->sg_list[0] = (struct ibv_sge){.addr = (uintptr_t)slot, .length = (uint32_t)total};
    w->num_sge = 1;
}

static void x_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
    struct ibv_data_buf buf = {.addr = addr, .length = length};
    x_set_inline_data_list(q, 1, &buf);
}

static void x_start(struct ibv_qp_ex *q)
{
    struct rsd_wr_batch *b = batch_of(q);
    b->n = 0;
    b->err = 0;
}

static void x_abort(struct ibv_qp_ex *q) { x_start(q); }

static int x_complete(struct ibv_qp_ex *q)
{
    struct rsd_wr_batch *b = batch_of(q);
    int err = b->err;
    uint32_t n = b->n;
    b->n = 0;
    b->err = 0;
    if (err)
        return err;
    if (!n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        b->wr[i].next = i + 1 < n ? &b->wr[i + 1] : NULL;
    struct ibv_send_wr *bad = NULL;
    return rsd_post_send(&q->qp_base, b->wr, &bad);
}

/* the send_ops_flags each QP type takes (rxe's) */
static uint64_t ops_supported(enum ibv_qp_type t)
{
    const uint64_t ud = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    const uint64_t uc = ud | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                        IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
    const uint64_t rc = uc | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                        IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_WRITE;
    return t == IBV_QPT_RC ? rc : t == IBV_QPT_UC ? uc : t == IBV_QPT_UD ? ud : 0;
}

int rsd_qp_ex_init(struct rsd_qp *r, const struct ibv_qp_cap *cap, uint64_t send_ops_flags)
{
    struct rsd_wr_batch *b = calloc(1, sizeof(*b));
    uint32_t cap_wr = cap->max_send_wr ? cap->max_send_wr : 1;
    uint32_t max_sge = cap->max_send_sge ? cap->max_send_sge : 1;
    if (!b)
        return -ENOMEM;
    b->cap = cap_wr;
    b->max_sge = max_sge;
    b->max_inline = cap->max_inline_data;
    b->wr = calloc(cap_wr, sizeof(*b->wr));
    b->sge = calloc((size_t)cap_wr * max_sge, sizeof(*b->sge));
    b->inl = b->max_inline ? malloc((size_t)cap_wr * b->max_inline) : NULL;
    if (!b->wr || !b->sge || (b->max_inline && !b->inl)) {
        free(b->wr);
        free(b->sge);
        free(b->inl);
        free(b);
        return -ENOMEM;
    }
    r->batch = b;
    struct ibv_qp_ex *q = &r->qpx;
    q->comp_mask = 0;
    q->wr_atomic_cmp_swp = x_atomic_cmp_swp;
    q->wr_atomic_fetch_add = x_atomic_fetch_add;
    q->wr_bind_mw = x_bind_mw;
    q->wr_local_inv = x_local_inv;
    q->wr_rdma_read = x_rdma_read;
    q->wr_rdma_write = x_rdma_write;
    q->wr_rdma_write_imm = x_rdma_write_imm;
    q->wr_send = x_send;
    q->wr_send_imm = x_send_imm;
    q->wr_send_inv = x_send_inv;
    q->wr_send_tso = x_send_tso;
    q->wr_set_ud_addr = x_set_ud_addr;
    q->wr_set_xrc_srqn = x_set_xrc_srqn;
    q->wr_set_inline_data = x_set_inline_data;
    q->wr_set_inline_data_list = x_set_inline_data_list;
    q->wr_set_sge = x_set_sge;
    q->wr_set_sge_list = x_set_sge_list;
    q->wr_start = x_start;
    q->wr_complete = x_complete;
    q->wr_abort = x_abort;
    q->wr_atomic_write = x_atomic_write;
    return 0;
}

void rsd_qp_ex_fini(struct rsd_qp *r)
{
    struct rsd_wr_batch *b = r->batch;
    if (!b)
        return;
    free(b->wr);
    free(b->sge);
    free(b->inl);
    free(b);
    r->batch = NULL;
}

RSD_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    struct rsd_qp *r = (struct rsd_qp *)qp;
    return r->is_ex ? &r->qpx : NULL;
}

static struct ibv_qp *create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
    const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if ((attr->comp_mask & ~known) || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
        errno = (attr->comp_mask & ~known) ? EOPNOTSUPP : EINVAL; /* XRC, RSS, TD... are not emulated */
        return NULL;
    }
    uint64_t ops = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ? attr->send_ops_flags : 0;
    if (ops & ~ops_supported(attr->qp_type)) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    /* ibv_qp_init_attr_ex begins as ibv_qp_init_attr does (libibverbs casts it the same way) */
    struct ibv_qp *qp = rsd_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr, 1);
    if (!qp)
        return NULL;
    int rc = rsd_qp_ex_init((struct rsd_qp *)qp, &attr->cap, ops);
    if (rc < 0) {
        ibv_destroy_qp(qp);
        errno = -rc;
        return NULL;
    }
    return qp;
}

/* ---- ibv_cq_ex ---- */

static struct rsd_cq *cq_of(struct ibv_cq_ex *c) { return (struct rsd_cq *)c; }

int rsd_cq_take_buffered(struct rsd_cq *r, int n, struct ibv_wc *wc)
{
    if (!r->is_ex)
        return 0;
    pthread_mutex_lock(&r->lock);
    int k = 0;
    while (k < n && r->next < r->n)
        wc[k++] = r->buf[r->next++];
    pthread_mutex_unlock(&r->lock);
    return k;
}

/* the next completion into r->cur: 0, ENOENT (none: the CQ is empty), or an errno value */
static int advance(struct rsd_cq *r)
{
    if (r->next == r->n) {
        int got = rsd_fetch_wc(ibv_cq_ex_to_cq(&r->cqx), RSD_CQ_BATCH, r->buf);
        if (got < 0)
            return errno ? errno : EIO;
        r->n = got;
        r->next = 0;
        if (!got)
            return ENOENT;
    }
    r->cur = r->buf[r->next++];
    r->cqx.status = r->cur.status;
    r->cqx.wr_id = r->cur.wr_id;
    return 0;
}

static int x_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
    if (attr && attr->comp_mask)
        return EINVAL;
    struct rsd_cq *r = cq_of(c);
    pthread_mutex_lock(&r->lock); /* held until ibv_end_poll, as providers do */
    int rc = advance(r);
    if (rc)
        pthread_mutex_unlock(&r->lock);
    return rc;
}

static int x_next_poll(struct ibv_cq_ex *c) { return advance(cq_of(c)); }

static void x_end_poll(struct ibv_cq_ex *c) { pthread_mutex_unlock(&cq_of(c)->lock); }

static enum ibv_wc_opcode x_read_opcode(struct ibv_cq_ex *c) { return cq_of(c)->cur.opcode; }
static uint32_t x_read_vendor_err(struct ibv_cq_ex *c) { return cq_of(c)->cur.vendor_err; }
static uint32_t x_read_byte_len(struct ibv_cq_ex *c) { return cq_of(c)->cur.byte_len; }
static __be32 x_read_imm_data(struct ibv_cq_ex *c) { return cq_of(c)->cur.imm_data; }
static uint32_t x_read_qp_num(struct ibv_cq_ex *c) { return cq_of(c)->cur.qp_num; }
static uint32_t x_read_src_qp(struct ibv_cq_ex *c) { return cq_of(c)->cur.src_qp; }
static unsigned int x_read_wc_flags(struct ibv_cq_ex *c) { return cq_of(c)->cur.wc_flags; }
static uint32_t x_read_slid(struct ibv_cq_ex *c) { return cq_of(c)->cur.slid; }
static uint8_t x_read_sl(struct ibv_cq_ex *c) { return cq_of(c)->cur.sl; }
static uint8_t x_read_dlid_path_bits(struct ibv_cq_ex *c) { return cq_of(c)->cur.dlid_path_bits; }

/* rxe's RXE_SUPPORTED_WC_FLAGS (no timestamps, CVLAN, flow tag or TM) */
#define SUPPORTED_WC_FLAGS                                                                                   \
    (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |            \
     IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | IBV_WC_EX_WITH_DLID_PATH_BITS)

static struct ibv_cq_ex *create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
    if (attr->wc_flags & ~(uint64_t)SUPPORTED_WC_FLAGS) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    if (attr->comp_mask & ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS) {
        errno = EOPNOTSUPP; /* a parent domain is not emulated */
        return NULL;
    }
    if (attr->cqe > (uint32_t)INT32_MAX) {
        errno = EINVAL;
        return NULL;
    }
    struct rsd_cq *r = rsd_create_cq(context, (int)attr->cqe, attr->cq_context, attr->channel);
    if (!r)
        return NULL;
    r->is_ex = 1;
    struct ibv_cq_ex *c = &r->cqx;
    c->start_poll = x_start_poll;
    c->next_poll = x_next_poll;
    c->end_poll = x_end_poll;
    c->read_opcode = x_read_opcode;
    c->read_vendor_err = x_read_vendor_err;
    c->read_wc_flags = x_read_wc_flags;
    if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
        c->read_byte_len = x_read_byte_len;
    if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
        c->read_imm_data = x_read_imm_data;
    if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
        c->read_qp_num = x_read_qp_num;
    if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
        c->read_src_qp = x_read_src_qp;
    if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
        c->read_slid = x_read_slid;
    if (attr->wc_flags & IBV_WC_EX_WITH_SL)
        c->read_sl = x_read_sl;
    if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
        c->read_dlid_path_bits = x_read_dlid_path_bits;
    return c;
}

/* ---- ibv_query_device_ex ---- */

static int query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
                           struct ibv_device_attr_ex *attr, size_t attr_size)
{
    if (input && input->comp_mask)
        return EINVAL;
    if (attr_size < sizeof(attr->orig_attr))
        return EINVAL;
    struct ibv_device_attr_ex a;
    memset(&a, 0, sizeof(a));
    if (ibv_query_device(context, &a.orig_attr))
        return errno ? errno : EIO;
    uint64_t w[1] = {(uint64_t)rsd_host(context)};
    uint64_t o[RSD_DEVX_WORDS];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_QUERY_DEVICE_EX, w, 1, NULL, 0, o, RSD_DEVX_WORDS, &n);
    if (st < 0 || n < RSD_DEVX_WORDS)
        return rsd_fail(st);
    a.device_cap_flags_ex = o[RSD_DEVX_CAP_FLAGS_EX];
    a.phys_port_cnt_ex = (uint32_t)o[RSD_DEVX_PHYS_PORT_CNT_EX];
    a.odp_caps.general_caps = o[RSD_DEVX_ODP_GENERAL];
    a.odp_caps.per_transport_caps.rc_odp_caps = (uint32_t)o[RSD_DEVX_ODP_RC];
    a.odp_caps.per_transport_caps.uc_odp_caps = (uint32_t)o[RSD_DEVX_ODP_UC];
    a.odp_caps.per_transport_caps.ud_odp_caps = (uint32_t)o[RSD_DEVX_ODP_UD];
    a.xrc_odp_caps = (uint32_t)o[RSD_DEVX_XRC_ODP];
    a.completion_timestamp_mask = o[RSD_DEVX_TS_MASK];
    a.hca_core_clock = o[RSD_DEVX_CORE_CLOCK];
    a.raw_packet_caps = (uint32_t)o[RSD_DEVX_RAW_PACKET_CAPS];
    a.max_wq_type_rq = (uint32_t)o[RSD_DEVX_MAX_WQ_TYPE_RQ];
    a.max_dm_size = o[RSD_DEVX_MAX_DM_SIZE];
    a.tso_caps.max_tso = (uint32_t)o[RSD_DEVX_MAX_TSO];
    a.tso_caps.supported_qpts = (uint32_t)o[RSD_DEVX_TSO_QPTS];
    memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
    return 0;
}

void rsd_ext_init(struct rsd_context *c)
{
    struct verbs_context *v = &c->vctx;
    v->sz = sizeof(*v);
    v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    v->create_qp_ex = create_qp_ex;
    v->create_cq_ex = create_cq_ex;
    v->query_device_ex = query_device_ex;
}
