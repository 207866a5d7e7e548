/* Extended and less common verbs on the fabric daemon (compiled at test time; one process, two
 * devices rdmasim0 <-> rdmasim1, an RC QP pair). Prints "OK" when every check passed.
 *
 *   rs_ext ext      ibv_query_device_ex; ibv_create_cq_ex (ibv_start_poll/next_poll/end_poll,
 *                   ibv_wc_read_*); ibv_create_qp_ex with ibv_wr_* (WRITE, SEND with immediate and
 *                   inline data, READ, atomics, a batch larger than the send queue)
 *   rs_ext mw       memory windows: type 1 (ibv_bind_mw) and type 2 (IBV_WR_BIND_MW, ibv_wr_bind_mw);
 *                   a peer's WRITE inside the window lands, outside it fails
 *   rs_ext resize   ibv_resize_cq
 *   rs_ext async    async_fd and ibv_get_async_event: SRQ_LIMIT_REACHED, QP_LAST_WQE_REACHED
 *   rs_ext fork     ibv_fork_init, ibv_is_fork_initialized; a child's writes to registered memory
 *                   stay the child's
 *   rs_ext spin N   N times: a WRITE posted, then the program waits for its bytes by reading the
 *                   target memory in a loop (no verbs call), then polls the completion
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUF 65536
#define die(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct side {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    struct ibv_cq_ex *cqx;
    struct ibv_qp *qp;
    struct ibv_qp_ex *qpx;
    struct ibv_srq *srq;
    struct ibv_mr *mr;
    unsigned char *buf;
    union ibv_gid gid;
};

static struct ibv_device *device(int i)
{
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    if (!l || n <= i)
        die("need %d devices, found %d", i + 1, n);
    return l[i];
}

/* ex: the CQ and QP are the extended ones; srq: the QP receives through an SRQ */
static void open_side(struct side *s, int dev, int ex, int srq)
{
    memset(s, 0, sizeof(*s));
    if (!(s->ctx = ibv_open_device(device(dev))) || !(s->pd = ibv_alloc_pd(s->ctx)))
        die("open");
    if (posix_memalign((void **)&s->buf, 4096, BUF))
        die("memalign");
    memset(s->buf, 0, BUF);
    int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
              IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
    if (!(s->mr = ibv_reg_mr(s->pd, s->buf, BUF, acc)))
        die("reg_mr");
    if (ex) {
        struct ibv_cq_init_attr_ex ca = {.cqe = 64, .wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
                                                                IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP};
        if (!(s->cqx = ibv_create_cq_ex(s->ctx, &ca)))
            die("create_cq_ex: %s", strerror(errno));
        s->cq = ibv_cq_ex_to_cq(s->cqx);
    } else if (!(s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0))) {
        die("create_cq");
    }
    if (srq) {
        struct ibv_srq_init_attr sa = {.attr = {.max_wr = 16, .max_sge = 1}};
        if (!(s->srq = ibv_create_srq(s->pd, &sa)))
            die("create_srq");
    }
    struct ibv_qp_init_attr_ex ia = {
        .send_cq = s->cq, .recv_cq = s->cq, .srq = s->srq, .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 8, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 1, .max_inline_data = 64},
        .comp_mask = IBV_QP_INIT_ATTR_PD | (ex ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0), .pd = s->pd,
        .send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                          IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                          IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_WRITE};
    if (!(s->qp = ibv_create_qp_ex(s->ctx, &ia)))
        die("create_qp_ex: %s", strerror(errno));
    s->qpx = ibv_qp_to_qp_ex(s->qp);
    if (ex != (s->qpx != NULL))
        die("ibv_qp_to_qp_ex: %p for a QP created %s", (void *)s->qpx, ex ? "extended" : "plain");
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                               IBV_ACCESS_REMOTE_ATOMIC};
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        die("modify INIT");
    if (ibv_query_gid(s->ctx, 1, 1, &s->gid))
        die("query_gid");
}

static void connect_pair(struct side *s, struct side *r)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = r->qp->qp_num,
                            .rq_psn = 7, .max_dest_rd_atomic = 4, .min_rnr_timer = 12,
                            .ah_attr = {.is_global = 1, .port_num = 1,
                                        .grh = {.dgid = r->gid, .sgid_index = 1, .hop_limit = 1}}};
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        die("modify RTR");
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = 7;
    a.max_rd_atomic = 4;
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        die("modify RTS");
}

static void pair(struct side *a, struct side *b, int ex, int srq)
{
    open_side(a, 0, ex, 0);
    open_side(b, 1, ex, srq);
    connect_pair(a, b);
    connect_pair(b, a);
}

static struct ibv_wc one(struct side *s)
{
    struct ibv_wc wc;
    int n;
    while ((n = ibv_poll_cq(s->cq, 1, &wc)) == 0)
        ;
    if (n < 0)
        die("poll_cq");
    return wc;
}

static void ok(struct ibv_wc wc, uint64_t wr_id)
{
    if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id)
        die("wr_id %lu: %s (wanted wr_id %lu)", (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status),
            (unsigned long)wr_id);
}

static void post_recv(struct side *s, uint64_t wr_id, uint32_t off, uint32_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
    if (s->srq ? ibv_post_srq_recv(s->srq, &wr, &bad) : ibv_post_recv(s->qp, &wr, &bad))
        die("post_recv");
}

static void write_to(struct side *s, uint64_t wr_id, uint32_t off, uint32_t len, uint32_t rkey, uint64_t raddr)
{
    struct ibv_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
                             .send_flags = IBV_SEND_SIGNALED}, *bad;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    if (ibv_post_send(s->qp, &wr, &bad))
        die("post_send");
}

/* ---- ext ---- */

/* the next completion through ibv_start_poll / ibv_next_poll (one poll session per call) */
static void poll_ex(struct side *s, int want, struct ibv_wc *out)
{
    int got = 0;
    while (got < want) {
        struct ibv_poll_cq_attr pa = {0};
        int rc = ibv_start_poll(s->cqx, &pa);
        if (rc == ENOENT)
            continue;
        if (rc)
            die("start_poll: %d", rc);
        do {
            struct ibv_wc *w = &out[got++];
            memset(w, 0, sizeof(*w));
            w->wr_id = s->cqx->wr_id;
            w->status = s->cqx->status;
            w->opcode = ibv_wc_read_opcode(s->cqx);
            w->byte_len = ibv_wc_read_byte_len(s->cqx);
            w->wc_flags = ibv_wc_read_wc_flags(s->cqx);
            w->qp_num = ibv_wc_read_qp_num(s->cqx);
            w->src_qp = ibv_wc_read_src_qp(s->cqx);
            if (w->wc_flags & IBV_WC_WITH_IMM)
                w->imm_data = ibv_wc_read_imm_data(s->cqx);
        } while (got < want && ibv_next_poll(s->cqx) == 0);
        ibv_end_poll(s->cqx);
    }
}

static int run_ext(void)
{
    struct side a, b;
    pair(&a, &b, 1, 0);

    struct ibv_device_attr_ex dx;
    if (ibv_query_device_ex(a.ctx, NULL, &dx))
        die("query_device_ex");
    if (dx.phys_port_cnt_ex != 1 || dx.orig_attr.phys_port_cnt != 1 ||
        (dx.device_cap_flags_ex & 0xffffffffu) != dx.orig_attr.device_cap_flags ||
        !(dx.device_cap_flags_ex >> 32) || dx.orig_attr.max_qp_wr <= 0)
        die("query_device_ex: ports %u flags_ex 0x%llx flags 0x%x", dx.phys_port_cnt_ex,
            (unsigned long long)dx.device_cap_flags_ex, dx.orig_attr.device_cap_flags);

    struct ibv_cq_init_attr_ex bad_ca = {.cqe = 4, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
    if (ibv_create_cq_ex(a.ctx, &bad_ca) || errno != EOPNOTSUPP)
        die("create_cq_ex with completion timestamps: not refused EOPNOTSUPP (as rxe)");

    for (int i = 0; i < 4096; i++)
        a.buf[i] = (unsigned char)(i * 5 + 3);
    post_recv(&b, 50, 20000, 256);
    unsigned char inl[48];
    memset(inl, 'i', sizeof(inl));

    /* WRITE, then SEND with immediate and inline data, then READ: one batch, one post */
    ibv_wr_start(a.qpx);
    a.qpx->wr_id = 1;
    a.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 8192);
    ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 4096);
    a.qpx->wr_id = 2;
    ibv_wr_send_imm(a.qpx, htonl(0xabcdef01));
    ibv_wr_set_inline_data(a.qpx, inl, sizeof(inl));
    memset(inl, 'X', sizeof(inl)); /* the bytes were taken when set */
    for (int i = 0; i < 1024; i++)
        b.buf[30000 + i] = (unsigned char)(i ^ 0x33);
    a.qpx->wr_id = 3;
    ibv_wr_rdma_read(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 30000);
    struct ibv_sge two[2] = {{.addr = (uintptr_t)a.buf + 40000, .length = 512, .lkey = a.mr->lkey},
                             {.addr = (uintptr_t)a.buf + 50000, .length = 512, .lkey = a.mr->lkey}};
    ibv_wr_set_sge_list(a.qpx, 2, two);
    int rc = ibv_wr_complete(a.qpx);
    if (rc)
        die("wr_complete: %d", rc);
    struct ibv_wc wc[3];
    poll_ex(&a, 3, wc);
    for (int i = 0; i < 3; i++)
        ok(wc[i], (uint64_t)i + 1);
    if (wc[0].opcode != IBV_WC_RDMA_WRITE || wc[1].opcode != IBV_WC_SEND || wc[2].opcode != IBV_WC_RDMA_READ ||
        wc[2].byte_len != 1024 || wc[0].qp_num != a.qp->qp_num)
        die("requester completions: opcodes %d %d %d, READ length %u", wc[0].opcode, wc[1].opcode, wc[2].opcode,
            wc[2].byte_len);
    if (memcmp(a.buf, b.buf + 8192, 4096) != 0)
        die("ibv_wr_rdma_write: data differs");
    if (memcmp(a.buf + 40000, b.buf + 30000, 512) || memcmp(a.buf + 50000, b.buf + 30512, 512))
        die("ibv_wr_rdma_read: data differs");
    struct ibv_wc r;
    poll_ex(&b, 1, &r);
    ok(r, 50);
    unsigned char want[48];
    memset(want, 'i', sizeof(want));
    if (r.opcode != IBV_WC_RECV || r.byte_len != 48 || !(r.wc_flags & IBV_WC_WITH_IMM) ||
        ntohl(r.imm_data) != 0xabcdef01 || r.src_qp != a.qp->qp_num || memcmp(b.buf + 20000, want, 48))
        die("SEND: opcode %d len %u imm 0x%x src_qp 0x%x", r.opcode, r.byte_len, ntohl(r.imm_data), r.src_qp);

    /* inline data from three buffers (more than max_send_sge): the receiver gets them in order */
    post_recv(&b, 51, 21000, 256);
    char p1[] = "alpha-", p2[] = "beta-", p3[] = "gamma";
    struct ibv_data_buf bufs[3] = {{p1, 6}, {p2, 5}, {p3, 5}};
    ibv_wr_start(a.qpx);
    a.qpx->wr_id = 6;
    ibv_wr_send(a.qpx);
    ibv_wr_set_inline_data_list(a.qpx, 3, bufs);
    memset(p1, 'X', 6);
    if ((rc = ibv_wr_complete(a.qpx)))
        die("wr_complete (inline list): %d", rc);
    poll_ex(&a, 1, wc);
    ok(wc[0], 6);
    poll_ex(&b, 1, &r);
    ok(r, 51);
    if (r.byte_len != 16 || memcmp(b.buf + 21000, "alpha-beta-gamma", 16))
        die("inline data list: %u bytes '%.16s'", r.byte_len, (char *)b.buf + 21000);
    /* beyond max_inline_data (64): the batch fails with EINVAL */
    unsigned char big[65] = {0};
    ibv_wr_start(a.qpx);
    ibv_wr_send(a.qpx);
    ibv_wr_set_inline_data(a.qpx, big, sizeof(big));
    if ((rc = ibv_wr_complete(a.qpx)) != EINVAL)
        die("65 inline bytes on a QP of max_inline_data 64: wr_complete %d, wanted EINVAL", rc);

    /* atomics */
    uint64_t *target = (uint64_t *)(b.buf + 60000);
    *target = 100;
    ibv_wr_start(a.qpx);
    a.qpx->wr_id = 4;
    ibv_wr_atomic_fetch_add(a.qpx, b.mr->rkey, (uintptr_t)target, 5);
    ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf + 61000, 8);
    a.qpx->wr_id = 5;
    ibv_wr_atomic_cmp_swp(a.qpx, b.mr->rkey, (uintptr_t)target, 105, 7);
    ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf + 61008, 8);
    if ((rc = ibv_wr_complete(a.qpx)))
        die("wr_complete (atomics): %d", rc);
    poll_ex(&a, 2, wc);
    ok(wc[0], 4);
    ok(wc[1], 5);
    uint64_t old0, old1;
    memcpy(&old0, a.buf + 61000, 8);
    memcpy(&old1, a.buf + 61008, 8);
    if (old0 != 100 || old1 != 105 || *target != 7)
        die("atomics: fetched %lu, %lu; target %lu", (unsigned long)old0, (unsigned long)old1,
            (unsigned long)*target);
    /* ATOMIC WRITE: 8 bytes placed as they lie in the program's memory */
    const unsigned char word[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ibv_wr_start(a.qpx);
    a.qpx->wr_id = 7;
    ibv_wr_atomic_write(a.qpx, b.mr->rkey, (uintptr_t)b.buf + 60008, word);
    if ((rc = ibv_wr_complete(a.qpx)))
        die("wr_complete (atomic write): %d", rc);
    poll_ex(&a, 1, wc);
    ok(wc[0], 7);
    if (memcmp(b.buf + 60008, word, 8))
        die("atomic write: the bytes differ");

    /* more work requests than the send queue holds: ibv_wr_complete fails, nothing is posted */
    ibv_wr_start(a.qpx);
    for (int i = 0; i < 9; i++) {
        a.qpx->wr_id = 100 + (uint64_t)i;
        ibv_wr_rdma_write(a.qpx, b.mr->rkey, (uintptr_t)b.buf);
        ibv_wr_set_sge(a.qpx, a.mr->lkey, (uintptr_t)a.buf, 8);
    }
    if ((rc = ibv_wr_complete(a.qpx)) != ENOMEM)
        die("a batch of 9 on a send queue of 8: wr_complete %d, wanted ENOMEM", rc);
    /* ibv_wr_abort drops a batch */
    ibv_wr_start(a.qpx);
    ibv_wr_send(a.qpx);
    ibv_wr_abort(a.qpx);
    /* the plain API on the same QP and CQ still works */
    write_to(&a, 77, 0, 64, b.mr->rkey, (uintptr_t)b.buf + 100);
    ok(one(&a), 77);
    printf("OK\n");
    return 0;
}

/* ---- mw ---- */

static void bind2(struct side *s, struct ibv_mw *mw, uint32_t rkey, uint64_t wr_id, uint64_t addr, uint64_t len)
{
    struct ibv_send_wr wr = {.wr_id = wr_id, .opcode = IBV_WR_BIND_MW, .send_flags = IBV_SEND_SIGNALED}, *bad;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = rkey;
    wr.bind_mw.bind_info = (struct ibv_mw_bind_info){.mr = s->mr, .addr = addr, .length = len,
                                                     .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
    if (ibv_post_send(s->qp, &wr, &bad))
        die("post_send BIND_MW");
}

static int run_mw(void)
{
    struct side a, b;
    pair(&a, &b, 1, 0);
    for (int i = 0; i < 256; i++)
        a.buf[i] = (unsigned char)(i + 1);

    /* type 1: ibv_bind_mw on b's QP, b's window over [b.buf + 4096, +1024) */
    struct ibv_mw *mw1 = ibv_alloc_mw(b.pd, IBV_MW_TYPE_1);
    if (!mw1)
        die("alloc_mw type 1: %s", strerror(errno));
    uint32_t before = mw1->rkey;
    struct ibv_mw_bind bind = {.wr_id = 11, .send_flags = IBV_SEND_SIGNALED,
                               .bind_info = {.mr = b.mr, .addr = (uintptr_t)b.buf + 4096, .length = 1024,
                                             .mw_access_flags = IBV_ACCESS_REMOTE_WRITE}};
    if (ibv_bind_mw(b.qp, mw1, &bind))
        die("bind_mw");
    if (mw1->rkey == before || (mw1->rkey >> 8) != (before >> 8))
        die("bind_mw: rkey 0x%x after 0x%x (the next key of the same index)", mw1->rkey, before);
    ok(one(&b), 11);
    write_to(&a, 12, 0, 256, mw1->rkey, (uintptr_t)b.buf + 4096 + 512);
    ok(one(&a), 12);
    if (memcmp(b.buf + 4096 + 512, a.buf, 256))
        die("WRITE through the type 1 window: data differs");
    write_to(&a, 13, 0, 256, mw1->rkey, (uintptr_t)b.buf + 4096 + 900); /* past the window's end */
    struct ibv_wc wc = one(&a);
    if (wc.status != IBV_WC_REM_ACCESS_ERR)
        die("WRITE past the window: %s, wanted remote access error", ibv_wc_status_str(wc.status));

    /* a fresh pair (the first one's QP is in error now); type 2 bound by a work request */
    struct side c, d;
    pair(&c, &d, 1, 0);
    for (int i = 0; i < 256; i++)
        c.buf[i] = (unsigned char)(0xff - i);
    struct ibv_mw *mw2 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
    if (!mw2)
        die("alloc_mw type 2: %s", strerror(errno));
    uint32_t k2 = ibv_inc_rkey(mw2->rkey);
    bind2(&d, mw2, k2, 21, (uintptr_t)d.buf + 8192, 2048);
    ok(one(&d), 21);
    write_to(&c, 22, 0, 256, k2, (uintptr_t)d.buf + 8192);
    ok(one(&c), 22);
    if (memcmp(d.buf + 8192, c.buf, 256))
        die("WRITE through the type 2 window: data differs");
    /* invalidated (ibv_wr_local_inv: a bound type 2 window is rebound only after), then bound with
     * ibv_wr_bind_mw under a new key elsewhere, in one batch */
    uint32_t k3 = ibv_inc_rkey(k2);
    ibv_wr_start(d.qpx);
    d.qpx->wr_id = 23;
    d.qpx->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_local_inv(d.qpx, k2);
    d.qpx->wr_id = 24;
    struct ibv_mw_bind_info bi = {.mr = d.mr, .addr = (uintptr_t)d.buf + 16384, .length = 512,
                                  .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
    ibv_wr_bind_mw(d.qpx, mw2, k3, &bi);
    if (ibv_wr_complete(d.qpx))
        die("wr_complete (local_inv, bind)");
    ok(one(&d), 23);
    ok(one(&d), 24);
    write_to(&c, 26, 0, 128, k3, (uintptr_t)d.buf + 16384 + 128);
    ok(one(&c), 26);
    if (memcmp(d.buf + 16384 + 128, c.buf, 128))
        die("WRITE through the rebound window: data differs");
    if (ibv_dealloc_mw(mw2) || ibv_dealloc_mw(mw1))
        die("dealloc_mw");
    write_to(&c, 25, 0, 8, k3, (uintptr_t)d.buf + 16384);
    wc = one(&c);
    if (wc.status != IBV_WC_REM_ACCESS_ERR)
        die("WRITE through a deallocated window: %s", ibv_wc_status_str(wc.status));
    printf("OK\n");
    return 0;
}

/* ---- resize ---- */

static int run_resize(void)
{
    struct side a, b;
    pair(&a, &b, 0, 0);
    if (ibv_resize_cq(a.cq, 256) || a.cq->cqe < 256)
        die("resize_cq to 256: cqe %d (%s)", a.cq->cqe, strerror(errno));
    for (int i = 0; i < 6; i++)
        write_to(&a, 300 + (uint64_t)i, 0, 8, b.mr->rkey, (uintptr_t)b.buf);
    struct ibv_wc wc[6];
    int got = 0;
    while (got < 6) {
        int n = ibv_poll_cq(a.cq, 6 - got, wc + got);
        if (n < 0)
            die("poll_cq");
        got += n;
        if (got == 3 && ibv_resize_cq(a.cq, 64)) /* completions held are kept */
            die("resize_cq to 64 with completions pending: %s", strerror(errno));
    }
    for (int i = 0; i < 6; i++)
        ok(wc[i], 300 + (uint64_t)i);
    if (ibv_resize_cq(a.cq, 0) == 0)
        die("resize_cq to 0 accepted");
    printf("OK\n");
    return 0;
}

/* ---- async ---- */

static struct ibv_async_event next_event(struct ibv_context *ctx)
{
    struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
    if (poll(&p, 1, -1) != 1)
        die("poll on async_fd");
    struct ibv_async_event ev;
    if (ibv_get_async_event(ctx, &ev))
        die("get_async_event: %s", strerror(errno));
    return ev;
}

static int run_async(void)
{
    struct side a, b;
    pair(&a, &b, 0, 1);
    /* non-blocking async_fd, nothing due: EAGAIN */
    int fl = fcntl(b.ctx->async_fd, F_GETFL);
    fcntl(b.ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
    struct ibv_async_event ev;
    if (ibv_get_async_event(b.ctx, &ev) == 0 || errno != EAGAIN)
        die("get_async_event with nothing due (O_NONBLOCK): %s, wanted EAGAIN", strerror(errno));
    fcntl(b.ctx->async_fd, F_SETFL, fl);

    for (int i = 0; i < 8; i++)
        post_recv(&b, 500 + (uint64_t)i, 1024 * (uint32_t)i, 1024);
    struct ibv_srq_attr sa = {.srq_limit = 6};
    if (ibv_modify_srq(b.srq, &sa, IBV_SRQ_LIMIT))
        die("modify_srq limit");
    for (int i = 0; i < 3; i++) {
        struct ibv_sge sge = {.addr = (uintptr_t)a.buf, .length = 64, .lkey = a.mr->lkey};
        struct ibv_send_wr wr = {.wr_id = 600 + (uint64_t)i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                                 .send_flags = IBV_SEND_SIGNALED}, *bad;
        if (ibv_post_send(a.qp, &wr, &bad))
            die("post_send");
        ok(one(&a), 600 + (uint64_t)i);
        ok(one(&b), 500 + (uint64_t)i);
    }
    ev = next_event(b.ctx);
    if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED || ev.element.srq != b.srq)
        die("event %d (%s), wanted SRQ_LIMIT_REACHED of the SRQ", ev.event_type, ibv_event_type_str(ev.event_type));
    ibv_ack_async_event(&ev);
    if (b.srq->events_completed != 1)
        die("ack_async_event: SRQ events_completed %u", b.srq->events_completed);

    struct ibv_qp_attr qa = {.qp_state = IBV_QPS_ERR};
    if (ibv_modify_qp(b.qp, &qa, IBV_QP_STATE))
        die("modify ERR");
    ev = next_event(b.ctx);
    if (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED || ev.element.qp != b.qp)
        die("event %d (%s), wanted QP_LAST_WQE_REACHED of the QP", ev.event_type,
            ibv_event_type_str(ev.event_type));
    ibv_ack_async_event(&ev);
    printf("OK\n");
    return 0;
}

/* ---- fork ---- */

static int run_fork(void)
{
    if (ibv_fork_init() != 0)
        die("ibv_fork_init: %s", strerror(errno));
    if (ibv_is_fork_initialized() != IBV_FORK_UNNEEDED)
        die("ibv_is_fork_initialized: %d, wanted IBV_FORK_UNNEEDED", ibv_is_fork_initialized());
    struct side a, b;
    pair(&a, &b, 0, 0);
    memset(a.buf, 'p', 4096);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        memset(a.buf, 'c', 4096); /* the child's copy */
        _exit(a.buf[0] == 'c' ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("child failed");
    if (a.buf[0] != 'p' || a.buf[4095] != 'p')
        die("the child's writes reached the parent's registered memory");
    write_to(&a, 700, 0, 4096, b.mr->rkey, (uintptr_t)b.buf);
    ok(one(&a), 700);
    if (memcmp(b.buf, a.buf, 4096))
        die("WRITE after fork: data differs");
    printf("OK\n");
    return 0;
}

/* ---- spin ---- */

static int run_spin(long iters)
{
    struct side a, b;
    pair(&a, &b, 0, 0);
    volatile unsigned char *flag = b.buf + 12345;
    for (long i = 1; i <= iters; i++) {
        a.buf[0] = (unsigned char)i;
        write_to(&a, 800 + (uint64_t)i, 0, 1, b.mr->rkey, (uintptr_t)flag);
        while (*flag != (unsigned char)i) /* ib_write_lat's wait: the peer's byte, read in a loop */
            ;
        ok(one(&a), 800 + (uint64_t)i);
    }
    printf("OK\n");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "ext"))
        return run_ext();
    if (!strcmp(m, "mw"))
        return run_mw();
    if (!strcmp(m, "resize"))
        return run_resize();
    if (!strcmp(m, "async"))
        return run_async();
    if (!strcmp(m, "fork"))
        return run_fork();
    if (!strcmp(m, "spin"))
        return run_spin(argc > 2 ? atol(argv[2]) : 5);
    die("usage: rs_ext ext|mw|resize|async|fork|spin [N]");
}
