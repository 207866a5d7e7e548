/* A small libibverbs program for the fabric daemon's tests and bench (compiled at test time).
 *
 *   rs_verbs loop [ITERS]        one process, two devices (rdmasim0 <-> rdmasim1): an RC QP pair with
 *                                fixed PSNs; RDMA WRITE, SEND with immediate, RDMA READ, data checked;
 *                                then ITERS signaled 8-byte WRITEs, each post_send + poll_cq to its
 *                                completion (the bench), printing "calls N" and "OK"
 *   rs_verbs server PORT         two processes: the server listens on 127.0.0.1:PORT, the client
 *   rs_verbs client PORT [crash] connects; the client WRITEs then SENDs, the server checks the bytes and
 *                                answers with a SEND; "crash": the client aborts after connecting its QP
 *   rs_verbs inline              SENDs with IBV_SEND_INLINE from a stack buffer overwritten after the post
 *   rs_verbs events              as loop, but waits for completions with a completion channel
 *                                (ibv_req_notify_cq, poll() on the channel fd, ibv_get_cq_event)
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 65536
#define die(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

struct side {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    struct ibv_mr *mr;
    unsigned char *buf;
    union ibv_gid gid;
};

struct wire {
    uint32_t qpn, psn, rkey;
    uint64_t addr;
    union ibv_gid gid;
};

static uint32_t max_inline; /* asked for at QP creation ("inline" mode) */

static void open_side(struct side *s, struct ibv_device *dev, int events)
{
    memset(s, 0, sizeof(*s));
    if (!(s->ctx = ibv_open_device(dev)))
        die("open_device");
    if (!(s->pd = ibv_alloc_pd(s->ctx)))
        die("alloc_pd");
    if (posix_memalign((void **)&s->buf, 4096, BUF))
        die("memalign");
    memset(s->buf, 0, BUF);
    if (!(s->mr = ibv_reg_mr(s->pd, s->buf, BUF,
                             IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
        die("reg_mr");
    if (events && !(s->ch = ibv_create_comp_channel(s->ctx)))
        die("create_comp_channel");
    if (!(s->cq = ibv_create_cq(s->ctx, 64, s, s->ch, 0)))
        die("create_cq");
    struct ibv_qp_init_attr ia = {.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
                                          .max_recv_sge = 1, .max_inline_data = max_inline}};
    if (!(s->qp = ibv_create_qp(s->pd, &ia)))
        die("create_qp");
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        die("modify INIT");
    if (ibv_query_gid(s->ctx, 1, 1, &s->gid))
        die("query_gid");
}

static void connect_side(struct side *s, uint32_t my_psn, const struct wire *r)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = r->qpn,
                            .rq_psn = r->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
                            .ah_attr = {.is_global = 1, .port_num = 1,
                                        .grh = {.dgid = r->gid, .sgid_index = 1, .hop_limit = 1}}};
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        die("modify RTR");
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = my_psn;
    a.max_rd_atomic = 1;
    if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        die("modify RTS");
}

static struct wire me(struct side *s, uint32_t psn)
{
    struct wire w = {.qpn = s->qp->qp_num, .psn = psn, .rkey = s->mr->rkey, .addr = (uintptr_t)s->buf,
                     .gid = s->gid};
    return w;
}

/* one completion: busy-polling, or through the completion channel */
static struct ibv_wc wait_one(struct side *s)
{
    struct ibv_wc wc;
    for (;;) {
        int n = ibv_poll_cq(s->cq, 1, &wc);
        if (n < 0)
            die("poll_cq");
        if (n == 1) {
            if (wc.status != IBV_WC_SUCCESS)
                die("completion wr_id %lu: %s", (unsigned long)wc.wr_id, ibv_wc_status_str(wc.status));
            return wc;
        }
        if (s->ch) {
            if (ibv_req_notify_cq(s->cq, 0))
                die("req_notify_cq");
            n = ibv_poll_cq(s->cq, 1, &wc);
            if (n == 1) {
                if (wc.status != IBV_WC_SUCCESS)
                    die("completion: %s", ibv_wc_status_str(wc.status));
                return wc;
            }
            struct pollfd p = {.fd = s->ch->fd, .events = POLLIN};
            if (poll(&p, 1, -1) != 1)
                die("poll on the channel fd");
            struct ibv_cq *cq;
            void *cq_ctx;
            if (ibv_get_cq_event(s->ch, &cq, &cq_ctx) || cq != s->cq || cq_ctx != s)
                die("get_cq_event");
            ibv_ack_cq_events(cq, 1);
        }
    }
}

static void post(struct side *s, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off, uint32_t len,
                 const struct wire *r, uint32_t roff, uint32_t imm)
{
    struct ibv_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
    struct ibv_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
                             .send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm)}, *bad;
    if (r) {
        wr.wr.rdma.remote_addr = r->addr + roff;
        wr.wr.rdma.rkey = r->rkey;
    }
    if (ibv_post_send(s->qp, &wr, &bad))
        die("post_send");
}

static void post_recv(struct side *s, uint32_t off, uint32_t len)
{
    struct ibv_sge sge = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = 99, .sg_list = &sge, .num_sge = 1}, *bad;
    if (ibv_post_recv(s->qp, &wr, &bad))
        die("post_recv");
}

static struct ibv_device *device(int i)
{
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    if (!l || n <= i)
        die("need %d devices, found %d", i + 1, n);
    return l[i];
}

static int run_loop(long iters, int events)
{
    struct side a, b;
    open_side(&a, device(0), events);
    open_side(&b, device(1), events);
    struct wire wa = me(&a, 100), wb = me(&b, 200);
    connect_side(&a, 100, &wb);
    connect_side(&b, 200, &wa);
    for (int i = 0; i < 4096; i++)
        a.buf[i] = (unsigned char)(i * 7 + 1);
    post(&a, IBV_WR_RDMA_WRITE, 1, 0, 4096, &wb, 8192, 0);
    if (wait_one(&a).wr_id != 1)
        die("write wr_id");
    if (memcmp(a.buf, b.buf + 8192, 4096) != 0)
        die("WRITE data differs");
    post_recv(&b, 20000, 256);
    post(&a, IBV_WR_SEND_WITH_IMM, 2, 0, 100, NULL, 0, 0x12345678);
    wait_one(&a);
    struct ibv_wc wc = wait_one(&b);
    if (wc.opcode != IBV_WC_RECV || wc.byte_len != 100 || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
        ntohl(wc.imm_data) != 0x12345678 || memcmp(b.buf + 20000, a.buf, 100) != 0)
        die("SEND: opcode %d len %u imm 0x%x", wc.opcode, wc.byte_len, ntohl(wc.imm_data));
    for (int i = 0; i < 2048; i++)
        b.buf[30000 + i] = (unsigned char)(i ^ 0x5a);
    post(&a, IBV_WR_RDMA_READ, 3, 40000, 2048, &wb, 30000, 0);
    wait_one(&a);
    if (memcmp(a.buf + 40000, b.buf + 30000, 2048) != 0)
        die("READ data differs");
    for (long i = 0; i < iters; i++) {
        post(&a, IBV_WR_RDMA_WRITE, 10 + (uint64_t)i, 0, 8, &wb, 0, 0);
        wait_one(&a);
    }
    printf("calls %ld\nOK\n", iters);
    return 0;
}

static int tcp(int port, int server)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (server) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1))
            die("listen on %d", port);
        int c = accept(fd, NULL, NULL);
        close(fd);
        return c;
    }
    for (int i = 0; i < 200; i++) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
        usleep(50000);
        close(fd);
        fd = socket(AF_INET, SOCK_STREAM, 0);
    }
    die("connect to %d", port);
}

static void xchg(int fd, const struct wire *mine, struct wire *theirs)
{
    if (write(fd, mine, sizeof(*mine)) != (ssize_t)sizeof(*mine))
        die("write side channel");
    size_t got = 0;
    while (got < sizeof(*theirs)) {
        ssize_t n = read(fd, (char *)theirs + got, sizeof(*theirs) - got);
        if (n <= 0)
            die("read side channel");
        got += (size_t)n;
    }
}

static int run_pair(int server, int port, int crash)
{
    struct side s;
    open_side(&s, device(0), 0);
    uint32_t psn = server ? 300 : 400;
    if (server)
        post_recv(&s, 0, 4096);
    int fd = tcp(port, server);
    struct wire mine = me(&s, psn), theirs;
    xchg(fd, &mine, &theirs);
    connect_side(&s, psn, &theirs);
    if (crash)
        abort();
    if (server) {
        struct ibv_wc wc = wait_one(&s); /* the client's SEND, after its WRITE */
        if (wc.opcode != IBV_WC_RECV || wc.byte_len != 64)
            die("server: opcode %d len %u", wc.opcode, wc.byte_len);
        for (int i = 0; i < 1000; i++)
            if (s.buf[8192 + i] != (unsigned char)(i * 3))
                die("server: WRITE byte %d is %u", i, s.buf[8192 + i]);
        post(&s, IBV_WR_SEND, 5, 0, 32, NULL, 0, 0);
        wait_one(&s);
    } else {
        for (int i = 0; i < 1000; i++)
            s.buf[i] = (unsigned char)(i * 3);
        post_recv(&s, 50000, 4096);
        post(&s, IBV_WR_RDMA_WRITE, 1, 0, 1000, &theirs, 8192, 0);
        wait_one(&s);
        post(&s, IBV_WR_SEND, 2, 0, 64, NULL, 0, 0);
        wait_one(&s);
        struct ibv_wc wc = wait_one(&s);
        if (wc.opcode != IBV_WC_RECV || wc.byte_len != 32)
            die("client: opcode %d len %u", wc.opcode, wc.byte_len);
    }
    char c = 'x';
    if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1)
        die("side channel at the end");
    printf("OK\n");
    return 0;
}

/* SENDs with IBV_SEND_INLINE from an unregistered stack buffer, overwritten right after each post */
static int run_inline(void)
{
    max_inline = 64;
    struct side a, b;
    open_side(&a, device(0), 0);
    open_side(&b, device(1), 0);
    struct wire wa = me(&a, 100), wb = me(&b, 200);
    connect_side(&a, 100, &wb);
    connect_side(&b, 200, &wa);
    for (int k = 0; k < 8; k++)
        post_recv(&b, 1024u * (uint32_t)k, 1024);
    for (int k = 0; k < 8; k++) {
        unsigned char msg[48];
        for (int i = 0; i < 48; i++)
            msg[i] = (unsigned char)(k * 31 + i);
        struct ibv_sge sge = {.addr = (uintptr_t)msg, .length = sizeof(msg), .lkey = 0};
        struct ibv_send_wr wr = {.wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                                 .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED}, *bad;
        if (ibv_post_send(a.qp, &wr, &bad))
            die("post_send inline");
        memset(msg, 0xee, sizeof(msg)); /* the NIC must have taken the bytes already */
    }
    for (int k = 0; k < 8; k++) {
        wait_one(&a);
        struct ibv_wc wc = wait_one(&b);
        if (wc.byte_len != 48)
            die("inline SEND %d: %u bytes", k, wc.byte_len);
        for (int i = 0; i < 48; i++)
            if (b.buf[1024u * (uint32_t)k + (uint32_t)i] != (unsigned char)(k * 31 + i))
                die("inline SEND %d: byte %d is %u", k, i, b.buf[1024u * (uint32_t)k + (uint32_t)i]);
    }
    unsigned char big[128] = {0};
    struct ibv_sge sge = {.addr = (uintptr_t)big, .length = sizeof(big), .lkey = 0};
    struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
                             .send_flags = IBV_SEND_INLINE}, *bad;
    if (ibv_post_send(a.qp, &wr, &bad) != EINVAL)
        die("an inline SEND above max_inline_data was not refused with EINVAL");
    printf("OK\n");
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc >= 2 && strcmp(argv[1], "loop") == 0)
        return run_loop(argc > 2 ? atol(argv[2]) : 0, 0);
    if (argc >= 2 && strcmp(argv[1], "inline") == 0)
        return run_inline();
    if (argc >= 2 && strcmp(argv[1], "events") == 0)
        return run_loop(argc > 2 ? atol(argv[2]) : 0, 1);
    if (argc >= 3 && (strcmp(argv[1], "server") == 0 || strcmp(argv[1], "client") == 0))
        return run_pair(argv[1][0] == 's', atoi(argv[2]), argc > 3 && strcmp(argv[3], "crash") == 0);
    fprintf(stderr, "usage: rs_verbs loop [ITERS] | events [ITERS] | server PORT | client PORT [crash]\n");
    return 2;
}
