/* librdmasim_ibverbs.so: the verbs API of libibverbs, served by an rdmasim fabric daemon.
 *
 * Loaded with LD_PRELOAD (rdmasim exec sets it), this library defines the exported ibv_* functions a
 * program calls, so the dynamic linker binds the program to them instead of libibverbs' (an unversioned
 * definition in a preloaded object satisfies the program's versioned references, IBVERBS_1.1 etc.).
 * The data-path calls that verbs.h inlines (ibv_post_send, ibv_post_recv, ibv_poll_cq,
 * ibv_req_notify_cq) go through struct ibv_context's ops, which ibv_open_device fills; the
 * extended verbs verbs.h inlines go through the verbs_context around it (ext_verbs.c). rsd.h lists
 * the library's other C files and what they own.
 *
 * Every call becomes one request to the daemon over a Unix socket ($RDMASIM_FABRIC_SOCKET); the
 * daemon owns the simulation (rdmasim/fabricd/server.py). Registered memory is shared: ibv_reg_mr
 * moves the region's pages into a memfd mapped over the same addresses (contents kept) and gives
 * the fd to the daemon, so the emulated NIC reads and writes the program's own bytes.
 *
 * Process-wide state (one socket, its lock, the table of shared ranges) lives in one struct; a
 * preloaded library serving a C API has no object to hang it on. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "rsd.h"
#define MAX_DEVICES 64
#define MAX_SEGMENTS 1024
#define MAX_REPLY_WORDS 4096

/* a page range this library moved into a memfd (shared with the daemon) */
struct segment {
    uintptr_t start;
    size_t len;
    int fd;
};

struct rsd_device {
    struct ibv_device dev; /* first: the ibv_device the program sees */
    int host;
    uint64_t guid; /* node GUID (host order), as the daemon derives it from the NIC's MAC */
};

struct rsd_state {
    pthread_mutex_t lock;
    int sock;          /* -1: not connected */
    int connect_failed;
    int atfork; /* the fork handler is registered */
    int ndev;
    struct rsd_device devs[MAX_DEVICES];
    int nseg;
    struct segment seg[MAX_SEGMENTS];
    long page;
};

static struct rsd_state S = {.lock = PTHREAD_MUTEX_INITIALIZER, .sock = -1};

struct rsd_ah {
    struct ibv_ah ah;
    int dest_host;
    uint32_t traffic_class;
};

struct rsd_mr {
    struct ibv_mr mr;
    int index;
};

static int debug_on(void)
{
    const char *v = getenv("RDMASIM_VERBS_DEBUG");
    return v && *v && strcmp(v, "0") != 0;
}

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rdmasim: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- the socket ---- */

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = syscall(SYS_read, fd, p, len); /* not through the wrapper below */
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A child of fork: the parent's connection and objects stay the parent's (as on hardware, a child
 * cannot use them); its registered memory becomes a private copy, as with rdma-core on a kernel
 * with copy-on-fork for pinned pages. A verbs call of the child attaches it anew. */
static void fork_child(void)
{
    pthread_mutex_init(&S.lock, NULL);
    for (int i = 0; i < S.nseg; i++) {
        struct segment *g = &S.seg[i];
        mprotect((void *)g->start, g->len, PROT_READ | PROT_WRITE); /* closed if RDMASIM_WATCH_MEMORY */
        void *copy = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (copy != MAP_FAILED) {
            memcpy(copy, (void *)g->start, g->len);
            mremap(copy, g->len, g->len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)g->start);
        }
        close(g->fd);
    }
    S.nseg = 0;
    if (S.sock >= 0)
        close(S.sock);
    S.sock = -1;
    S.connect_failed = 0;
    S.ndev = 0;
}

static int connect_locked(void)
{
    if (S.sock >= 0)
        return 0;
    if (!S.atfork) {
        pthread_atfork(NULL, NULL, fork_child);
        S.atfork = 1;
    }
    if (S.connect_failed)
        return -1;
    const char *path = getenv("RDMASIM_FABRIC_SOCKET");
    if (!path || !*path) {
        say("RDMASIM_FABRIC_SOCKET is not set: run the program with `rdmasim exec -- PROGRAM`");
        S.connect_failed = 1;
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(path) >= sizeof(a.sun_path)) {
        say("cannot open a socket to %s", path);
        if (fd >= 0)
            close(fd);
        S.connect_failed = 1;
        return -1;
    }
    strcpy(a.sun_path, path);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        say("no fabric daemon answers at %s (%s): start programs with `rdmasim exec`", path, strerror(errno));
        close(fd);
        S.connect_failed = 1;
        return -1;
    }
    S.sock = fd;
    S.page = sysconf(_SC_PAGESIZE);
    return 0;
}

int rsd_in_segment(uintptr_t a)
{
    for (int i = 0; i < S.nseg; i++)
        if (a >= S.seg[i].start && a < S.seg[i].start + S.seg[i].len)
            return 1;
    return 0;
}

/* RDMASIM_WATCH_MEMORY: every call leaves registered memory closed to the program (memwatch.c) */
static void close_segments_locked(void)
{
    if (!S.nseg || !rsd_watch_on())
        return;
    for (int i = 0; i < S.nseg; i++)
        mprotect((void *)S.seg[i].start, S.seg[i].len, PROT_NONE);
    rsd_watch_reset();
}

/* One request and its reply. Returns the reply's status (>= 0) or -errno; `out` gets up to `cap`
 * words (the reply's word count in *nout). `fd` >= 0 travels with the request. */
#define MAX_FDS 4

static int64_t call_fds_locked(uint32_t op, const uint64_t *w, uint32_t nw, const void *bytes, uint32_t nb,
                               const int *fds, int nfds, uint64_t *out, uint32_t cap, uint32_t *nout, void *obytes,
                               uint32_t obcap)
{
    if (connect_locked() < 0)
        return -ENODEV;
    uint32_t hdr[4] = {op, nw, nb, 0};
    if (nfds > 0) {
        struct iovec iov = {.iov_base = hdr, .iov_len = sizeof(hdr)};
        char cbuf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        memset(cbuf, 0, sizeof(cbuf));
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                           .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
        ssize_t n;
        do
            n = sendmsg(S.sock, &m, 0);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(hdr))
            goto lost;
    } else if (write_all(S.sock, hdr, sizeof(hdr)) < 0) {
        goto lost;
    }
    if ((nw && write_all(S.sock, w, nw * 8u) < 0) || (nb && write_all(S.sock, bytes, nb) < 0))
        goto lost;
    int32_t rh[4];
    if (read_all(S.sock, rh, sizeof(rh)) < 0)
        goto lost;
    uint32_t rn = (uint32_t)rh[1], rb = (uint32_t)rh[2];
    uint64_t word;
    for (uint32_t i = 0; i < rn; i++) {
        if (read_all(S.sock, &word, 8) < 0)
            goto lost;
        if (i < cap)
            out[i] = word;
    }
    if (nout)
        *nout = rn < cap ? rn : cap;
    char tmp[512];
    uint32_t got = 0;
    while (got < rb) {
        uint32_t chunk = rb - got < sizeof(tmp) ? rb - got : (uint32_t)sizeof(tmp);
        if (read_all(S.sock, tmp, chunk) < 0)
            goto lost;
        if (obytes && got < obcap)
            memcpy((char *)obytes + got, tmp, chunk < obcap - got ? chunk : obcap - got);
        got += chunk;
    }
    if (rh[0] < 0 && rb && (debug_on() || obytes == NULL)) {
        tmp[rb < sizeof(tmp) ? rb : sizeof(tmp) - 1] = 0;
        if (debug_on())
            say("%s", tmp);
    }
    close_segments_locked();
    return rh[0];
lost:
    say("the fabric daemon closed the connection (it stopped or refused this process)");
    close(S.sock);
    S.sock = -1;
    S.connect_failed = 1;
    return -EIO;
}

static int64_t call_locked(uint32_t op, const uint64_t *w, uint32_t nw, const void *bytes, uint32_t nb, int fd,
                           uint64_t *out, uint32_t cap, uint32_t *nout, void *obytes, uint32_t obcap)
{
    return call_fds_locked(op, w, nw, bytes, nb, &fd, fd >= 0, out, cap, nout, obytes, obcap);
}

int64_t rsd_call(uint32_t op, const uint64_t *w, uint32_t nw, const void *bytes, uint32_t nb, uint64_t *out,
                 uint32_t cap, uint32_t *nout)
{
    pthread_mutex_lock(&S.lock);
    int64_t r = call_locked(op, w, nw, bytes, nb, -1, out, cap, nout, NULL, 0);
    pthread_mutex_unlock(&S.lock);
    return r;
}

int64_t rsd_call_fd(uint32_t op, const uint64_t *w, uint32_t nw, int fd, uint64_t *out, uint32_t cap,
                    uint32_t *nout)
{
    pthread_mutex_lock(&S.lock);
    int64_t r = call_locked(op, w, nw, NULL, 0, fd, out, cap, nout, NULL, 0);
    pthread_mutex_unlock(&S.lock);
    return r;
}

/* Set errno from a failed status and return it. */
int rsd_fail(int64_t st)
{
    errno = st < 0 ? (int)-st : EINVAL;
    return errno;
}

/* Release the object `handle` of the device of `ctx` (op: RSD_DEALLOC_PD, RSD_DESTROY_CQ, ...): 0, or the
 * errno value (also in errno) when the daemon refuses. */
int rsd_release(uint32_t op, struct ibv_context *ctx, uint64_t handle)
{
    uint64_t w[2] = {(uint64_t)rsd_host(ctx), handle};
    int64_t st = rsd_call(op, w, 2, NULL, 0, NULL, 0, NULL);
    return st < 0 ? rsd_fail(st) : 0;
}

/* The object a create call answered with status `st` makes: `size` zeroed bytes, or NULL with
 * errno set (the call's error, or ENOMEM). */
void *rsd_new(int64_t st, size_t size)
{
    if (st < 0) {
        rsd_fail(st);
        return NULL;
    }
    void *p = calloc(1, size);
    if (!p)
        errno = ENOMEM;
    return p;
}

/* ---- devices ---- */

static int load_devices_locked(void)
{
    if (S.ndev > 0)
        return 0;
    const char *first = getenv("RDMASIM_HOST");
    uint64_t w[3] = {RSD_PROTO_VERSION, (uint64_t)getpid(), 0};
    uint64_t out[2 * MAX_DEVICES];
    uint32_t n = 0;
    int64_t st = call_locked(RSD_HELLO, w, 3, first ? first : "", first ? (uint32_t)strlen(first) : 0, -1, out,
                             2 * MAX_DEVICES, &n, NULL, 0);
    if (st < 0)
        return (int)st;
    n /= 2;
    for (uint32_t i = 0; i < n; i++) {
        struct rsd_device *d = &S.devs[i];
        memset(d, 0, sizeof(*d));
        d->host = (int)out[2 * i];
        d->guid = out[2 * i + 1];
        d->dev.node_type = IBV_NODE_CA;
        d->dev.transport_type = IBV_TRANSPORT_IB;
        snprintf(d->dev.name, sizeof(d->dev.name), "rdmasim%d", d->host);
        snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", d->host);
        snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d", d->host);
        snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/rdmasim%d", d->host);
    }
    S.ndev = (int)n;
    return 0;
}

RSD_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
    pthread_mutex_lock(&S.lock);
    int rc = load_devices_locked();
    pthread_mutex_unlock(&S.lock);
    if (rc < 0) {
        if (num_devices)
            *num_devices = 0;
        errno = -rc;
        return NULL;
    }
    struct ibv_device **list = calloc((size_t)S.ndev + 1, sizeof(*list));
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < S.ndev; i++)
        list[i] = &S.devs[i].dev;
    if (num_devices)
        *num_devices = S.ndev;
    return list;
}

RSD_EXPORT void ibv_free_device_list(struct ibv_device **list) { free(list); }

RSD_EXPORT const char *ibv_get_device_name(struct ibv_device *device) { return device->name; }

RSD_EXPORT int ibv_get_device_index(struct ibv_device *device) { return ((struct rsd_device *)device)->host; }

RSD_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
    return htobe64(((struct rsd_device *)device)->guid);
}

RSD_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
    if (!size)
        return -1;
    if (dir && strncmp(dir, "/sys/class/infiniband/rdmasim", 29) == 0) {
        const char *v = NULL;
        if (strcmp(file, "board_id") == 0)
            v = "rdmasim";
        else if (strcmp(file, "node_type") == 0)
            v = "1: CA";
        else if (strcmp(file, "fw_ver") == 0)
            v = "";
        if (!v)
            return -1;
        snprintf(buf, size, "%s", v);
        return (int)strlen(buf);
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    while (n && buf[n - 1] == '\n')
        n--;
    buf[n] = 0;
    return (int)n;
}

/* ---- the data path behind ibv_context.ops ---- */

static int rsd_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
static int rsd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
static int rsd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
static int rsd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

struct rsd_context *rsd_ctx(struct ibv_context *c)
{
    return (struct rsd_context *)((char *)c - offsetof(struct rsd_context, vctx.context));
}

int rsd_host(struct ibv_context *c) { return rsd_ctx(c)->host; }

static int host_of(struct ibv_context *c) { return rsd_host(c); }

RSD_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    struct rsd_context *c = calloc(1, sizeof(*c));
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    struct ibv_context *ctx = &c->vctx.context;
    c->host = ((struct rsd_device *)device)->host;
    ctx->device = device;
    ctx->cmd_fd = -1;
    ctx->async_fd = -1;
    ctx->num_comp_vectors = 1;
    pthread_mutex_init(&ctx->mutex, NULL);
    ctx->ops.poll_cq = rsd_poll_cq;
    ctx->ops.req_notify_cq = rsd_req_notify_cq;
    ctx->ops.post_send = rsd_post_send;
    ctx->ops.post_recv = rsd_post_recv;
    ctx->ops.post_srq_recv = rsd_post_srq_recv;
    rsd_ext_init(c);
    rsd_mw_init(ctx);
    if (rsd_async_open(c) < 0) {
        int e = errno;
        pthread_mutex_destroy(&ctx->mutex);
        free(c);
        errno = e;
        return NULL;
    }
    return ctx;
}

RSD_EXPORT int ibv_close_device(struct ibv_context *context)
{
    struct rsd_context *c = rsd_ctx(context);
    rsd_async_close(c);
    pthread_mutex_destroy(&context->mutex);
    free(c);
    return 0;
}

/* ibv_device_attr in the order of rdmasim/fabricd/server.py DEVICE_ATTR_ORDER */
RSD_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
    uint64_t w[1] = {(uint64_t)host_of(context)};
    uint64_t o[40];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_QUERY_DEVICE, w, 1, NULL, 0, o, 40, &n);
    if (st < 0 || n < 37)
        return rsd_fail(st);
    memset(a, 0, sizeof(*a));
    a->fw_ver[0] = 0;
    a->node_guid = ibv_get_device_guid(context->device);
    a->sys_image_guid = a->node_guid;
    int i = 0;
    a->max_mr_size = o[i++];
    a->page_size_cap = o[i++];
    a->vendor_id = (uint32_t)o[i++];
    a->vendor_part_id = (uint32_t)o[i++];
    a->hw_ver = (uint32_t)o[i++];
    a->max_qp = (int)o[i++];
    a->max_qp_wr = (int)o[i++];
    a->device_cap_flags = (unsigned)o[i++];
    a->max_sge = (int)o[i++];
    a->max_sge_rd = (int)o[i++];
    a->max_cq = (int)o[i++];
    a->max_cqe = (int)o[i++];
    a->max_mr = (int)o[i++];
    a->max_pd = (int)o[i++];
    a->max_qp_rd_atom = (int)o[i++];
    a->max_ee_rd_atom = (int)o[i++];
    a->max_res_rd_atom = (int)o[i++];
    a->max_qp_init_rd_atom = (int)o[i++];
    a->max_ee_init_rd_atom = (int)o[i++];
    a->atomic_cap = (enum ibv_atomic_cap)o[i++];
    a->max_ee = (int)o[i++];
    a->max_rdd = (int)o[i++];
    a->max_mw = (int)o[i++];
    a->max_raw_ipv6_qp = (int)o[i++];
    a->max_raw_ethy_qp = (int)o[i++];
    a->max_mcast_grp = (int)o[i++];
    a->max_mcast_qp_attach = (int)o[i++];
    a->max_total_mcast_qp_attach = (int)o[i++];
    a->max_ah = (int)o[i++];
    a->max_fmr = (int)o[i++];
    a->max_map_per_fmr = (int)o[i++];
    a->max_srq = (int)o[i++];
    a->max_srq_wr = (int)o[i++];
    a->max_srq_sge = (int)o[i++];
    a->max_pkeys = (uint16_t)o[i++];
    a->local_ca_ack_delay = (uint8_t)o[i++];
    a->phys_port_cnt = (uint8_t)o[i++];
    return 0;
}

/* The exported ibv_query_port takes the compat layout (ibv_port_attr up to `flags`); verbs.h's inline
 * ___ibv_query_port zeroes the whole struct and calls it when the context has no query_port op. */
RSD_EXPORT int(ibv_query_port)(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *out)
{
    uint64_t w[2] = {(uint64_t)host_of(context), port_num};
    uint64_t o[24];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_QUERY_PORT, w, 2, NULL, 0, o, 24, &n);
    if (st < 0 || n < 20)
        return rsd_fail(st);
    struct ibv_port_attr a;
    memset(&a, 0, sizeof(a));
    int i = 0;
    a.state = (enum ibv_port_state)o[i++];
    a.max_mtu = (enum ibv_mtu)o[i++];
    a.active_mtu = (enum ibv_mtu)o[i++];
    a.gid_tbl_len = (int)o[i++];
    a.port_cap_flags = (uint32_t)o[i++];
    a.max_msg_sz = (uint32_t)o[i++];
    a.bad_pkey_cntr = (uint32_t)o[i++];
    a.qkey_viol_cntr = (uint32_t)o[i++];
    a.pkey_tbl_len = (uint16_t)o[i++];
    a.lid = (uint16_t)o[i++];
    a.sm_lid = (uint16_t)o[i++];
    a.lmc = (uint8_t)o[i++];
    a.max_vl_num = (uint8_t)o[i++];
    a.sm_sl = (uint8_t)o[i++];
    a.subnet_timeout = (uint8_t)o[i++];
    a.init_type_reply = (uint8_t)o[i++];
    a.active_width = (uint8_t)o[i++];
    a.active_speed = (uint8_t)o[i++];
    a.phys_state = (uint8_t)o[i++];
    a.link_layer = (uint8_t)o[i++];
    memcpy(out, &a, offsetof(struct ibv_port_attr, port_cap_flags2));
    return 0;
}

RSD_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
    uint64_t w[3] = {(uint64_t)host_of(context), port_num, (uint64_t)(int64_t)index};
    pthread_mutex_lock(&S.lock);
    int64_t st = call_locked(RSD_QUERY_GID, w, 3, NULL, 0, -1, NULL, 0, NULL, gid->raw, 16);
    pthread_mutex_unlock(&S.lock);
    if (st < 0) {
        rsd_fail(st);
        return -1;
    }
    return 0;
}

enum rsd_gid_type_sysfs { RSD_GID_TYPE_SYSFS_IB_ROCE_V1, RSD_GID_TYPE_SYSFS_ROCE_V2 };

/* libibverbs' private helper (IBVERBS_PRIVATE_*) that ibv_devinfo calls: every GID is RoCE v2 */
RSD_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
                                  enum rsd_gid_type_sysfs *type)
{
    union ibv_gid g;
    if (ibv_query_gid(context, port_num, (int)index, &g))
        return -1;
    *type = RSD_GID_TYPE_SYSFS_ROCE_V2;
    return 0;
}

RSD_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
    if (port_num != 1 || index < 0 || index >= 64) {
        errno = EINVAL;
        return -1;
    }
    *pkey = index == 0 ? htons(0xffff) : 0;
    return 0;
}

RSD_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
    return (port_num == 1 && (ntohs(pkey) & 0x7fff) == 0x7fff) ? 0 : -1;
}

/* ---- protection domains and memory ---- */

RSD_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    uint64_t w[1] = {(uint64_t)host_of(context)};
    int64_t st = rsd_call(RSD_ALLOC_PD, w, 1, NULL, 0, NULL, 0, NULL);
    struct ibv_pd *pd = rsd_new(st, sizeof(*pd));
    if (!pd)
        return NULL;
    pd->context = context;
    pd->handle = (uint32_t)st;
    return pd;
}

RSD_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
    int rc = rsd_release(RSD_DEALLOC_PD, pd->context, pd->handle);
    if (rc)
        return rc;
    free(pd);
    return 0;
}

/* The segment holding [start, start+len) (page-aligned), moving the pages into a new memfd when no
 * segment covers them yet. Returns the index or -errno; EINVAL when the range straddles a segment. */
static int segment_for_locked(uintptr_t start, size_t len)
{
    for (int i = 0; i < S.nseg; i++) {
        struct segment *s = &S.seg[i];
        if (start >= s->start && start + len <= s->start + s->len)
            return i;
        if (start < s->start + s->len && s->start < start + len) {
            say("ibv_reg_mr: [0x%lx, +%zu) partly overlaps memory registered before; register regions on "
                "separate pages, or one region covering both", (unsigned long)start, len);
            return -EINVAL;
        }
    }
    if (S.nseg == MAX_SEGMENTS)
        return -ENOMEM;
    int fd = memfd_create("rdmasim-mr", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* whole pages, so also the bytes around the region on its first and last page (heap neighbours):
     * written by the kernel (the raw system call), which reads mapped pages whatever they hold */
    if (ftruncate(fd, (off_t)len) < 0 || syscall(SYS_pwrite64, fd, (void *)start, len, (off_t)0) != (long)len) {
        int e = errno ? errno : EIO;
        close(fd);
        return -e;
    }
    void *p = mmap((void *)start, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return -e;
    }
    S.seg[S.nseg] = (struct segment){.start = start, .len = len, .fd = fd};
    return S.nseg++;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
    if (!addr || !length) {
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_lock(&S.lock);
    if (connect_locked() < 0) {
        pthread_mutex_unlock(&S.lock);
        errno = ENODEV;
        return NULL;
    }
    uintptr_t a = (uintptr_t)addr;
    uintptr_t start = a & ~(uintptr_t)(S.page - 1);
    size_t len = ((a + length + (uintptr_t)S.page - 1) & ~(uintptr_t)(S.page - 1)) - start;
    int si = segment_for_locked(start, len);
    if (si < 0) {
        pthread_mutex_unlock(&S.lock);
        errno = -si;
        return NULL;
    }
    struct segment *s = &S.seg[si];
    uint64_t w[7] = {(uint64_t)host_of(pd->context), pd->handle, (uint64_t)a, length, access,
                     (uint64_t)(a - s->start), s->len};
    uint64_t o[3];
    uint32_t n = 0;
    int64_t st = call_locked(RSD_REG_MR, w, 7, NULL, 0, s->fd, o, 3, &n, NULL, 0);
    pthread_mutex_unlock(&S.lock);
    struct rsd_mr *m = rsd_new(n < 3 && st >= 0 ? -EINVAL : st, sizeof(*m));
    if (!m)
        return NULL;
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->index = (int)o[0];
    m->mr.handle = (uint32_t)o[0];
    m->mr.lkey = (uint32_t)o[1];
    m->mr.rkey = (uint32_t)o[2];
    (void)iova;
    return &m->mr;
}

RSD_EXPORT struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

RSD_EXPORT struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                            int access)
{
    if (iova != (uintptr_t)addr) {
        say("ibv_reg_mr_iova: an iova other than the address is not emulated");
        errno = EOPNOTSUPP;
        return NULL;
    }
    return reg_mr(pd, addr, length, iova, (unsigned)access);
}

RSD_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                           unsigned int access)
{
    return (ibv_reg_mr_iova)(pd, addr, length, iova, (int)(access & ~IBV_ACCESS_OPTIONAL_RANGE));
}

RSD_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
    struct rsd_mr *m = (struct rsd_mr *)mr;
    int rc = rsd_release(RSD_DEREG_MR, mr->context, (uint64_t)m->index);
    if (rc)
        return rc;
    free(m);
    return 0;
}

/* ---- completion queues and channels ---- */

RSD_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    int efd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
    if (efd < 0)
        return NULL;
    pthread_mutex_lock(&S.lock);
    int64_t st = call_locked(RSD_CREATE_CHANNEL, NULL, 0, NULL, 0, efd, NULL, 0, NULL, NULL, 0);
    pthread_mutex_unlock(&S.lock);
    if (st < 0) {
        close(efd);
        rsd_fail(st);
        return NULL;
    }
    struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        close(efd);
        errno = ENOMEM;
        return NULL;
    }
    ch->context = context;
    ch->fd = efd;
    ch->refcnt = (int)st; /* the daemon's channel id (libibverbs counts CQs here; nothing else reads it) */
    return ch;
}

RSD_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    uint64_t w[1] = {(uint64_t)channel->refcnt};
    int64_t st = rsd_call(RSD_DESTROY_CHANNEL, w, 1, NULL, 0, NULL, 0, NULL);
    if (st < 0)
        return rsd_fail(st);
    close(channel->fd);
    free(channel);
    return 0;
}

struct rsd_cq *rsd_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel)
{
    if (cqe < 1) {
        errno = EINVAL;
        return NULL;
    }
    struct rsd_cq *r = calloc(1, sizeof(*r));
    if (!r) {
        errno = ENOMEM;
        return NULL;
    }
    struct ibv_cq *cq = ibv_cq_ex_to_cq(&r->cqx);
    /* the CQ's address comes back with its completion events (ibv_get_cq_event) */
    uint64_t w[4] = {(uint64_t)host_of(context), (uint64_t)cqe, channel ? (uint64_t)channel->refcnt : 0,
                     (uint64_t)(uintptr_t)cq};
    uint64_t o[2];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_CREATE_CQ, w, 4, NULL, 0, o, 2, &n);
    if (st < 0 || n < 2) {
        free(r);
        rsd_fail(st);
        return NULL;
    }
    cq->context = context;
    cq->channel = channel;
    cq->cq_context = cq_context;
    cq->handle = (uint32_t)o[0];
    cq->cqe = (int)o[1];
    pthread_mutex_init(&cq->mutex, NULL);
    pthread_cond_init(&cq->cond, NULL);
    pthread_mutex_init(&r->lock, NULL);
    return r;
}

RSD_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                                        struct ibv_comp_channel *channel, int comp_vector)
{
    struct rsd_cq *r = rsd_create_cq(context, cqe, cq_context, channel);
    return r ? ibv_cq_ex_to_cq(&r->cqx) : NULL;
}

RSD_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
    int rc = rsd_release(RSD_DESTROY_CQ, cq->context, cq->handle);
    if (rc)
        return rc;
    struct rsd_cq *r = (struct rsd_cq *)cq;
    pthread_mutex_destroy(&cq->mutex);
    pthread_cond_destroy(&cq->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
    return 0;
}

/* As rxe: at least the completions the CQ holds; the CQ keeps them. Returns 0 or an errno value. */
RSD_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
    uint64_t w[3] = {(uint64_t)host_of(cq->context), cq->handle, (uint64_t)(int64_t)cqe};
    uint64_t o[1];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_RESIZE_CQ, w, 3, NULL, 0, o, 1, &n);
    if (st < 0 || n < 1)
        return rsd_fail(st);
    cq->cqe = (int)o[0];
    return 0;
}

static int rsd_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    if (num_entries <= 0)
        return 0;
    int got = rsd_cq_take_buffered((struct rsd_cq *)cq, num_entries, wc);
    if (got)
        return got;
    return rsd_fetch_wc(cq, num_entries, wc);
}

int rsd_fetch_wc(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    enum { BATCH = MAX_REPLY_WORDS / RSD_WC_WORDS };
    if (num_entries > BATCH)
        num_entries = BATCH;
    uint64_t w[3] = {(uint64_t)host_of(cq->context), cq->handle, (uint64_t)num_entries};
    uint64_t o[BATCH * RSD_WC_WORDS];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_POLL_CQ, w, 3, NULL, 0, o, BATCH * RSD_WC_WORDS, &n);
    if (st < 0)
        return -1;
    int got = (int)st;
    for (int i = 0; i < got && (uint32_t)(i + 1) * RSD_WC_WORDS <= n; i++) {
        const uint64_t *x = &o[i * RSD_WC_WORDS];
        struct ibv_wc *c = &wc[i];
        memset(c, 0, sizeof(*c));
        c->wr_id = x[0];
        c->status = (enum ibv_wc_status)x[1];
        c->opcode = (enum ibv_wc_opcode)x[2];
        c->vendor_err = (uint32_t)x[3];
        c->byte_len = (uint32_t)x[4];
        c->wc_flags = (unsigned)x[8];
        c->imm_data = (c->wc_flags & IBV_WC_WITH_IMM) ? htonl((uint32_t)x[5]) : (uint32_t)x[5];
        c->qp_num = (uint32_t)x[6];
        c->src_qp = (uint32_t)x[7];
        c->pkey_index = (uint16_t)x[9];
        c->slid = (uint16_t)x[10];
        c->sl = (uint8_t)x[11];
        c->dlid_path_bits = (uint8_t)x[12];
    }
    return got;
}

static int rsd_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    uint64_t w[3] = {(uint64_t)host_of(cq->context), cq->handle, (uint64_t)(solicited_only != 0)};
    int64_t st = rsd_call(RSD_REQ_NOTIFY, w, 3, NULL, 0, NULL, 0, NULL);
    return st < 0 ? rsd_fail(st) : 0;
}

RSD_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
    uint64_t w[1] = {(uint64_t)channel->refcnt};
    uint64_t o[3];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_GET_CQ_EVENT, w, 1, NULL, 0, o, 3, &n);
    if (st < 0 || n < 3) {
        rsd_fail(st);
        return -1;
    }
    uint64_t one;
    if (read(channel->fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) /* consume the event's count */
        return -1;
    struct ibv_cq *c = (struct ibv_cq *)(uintptr_t)o[2];
    *cq = c;
    *cq_context = c->cq_context;
    return 0;
}

RSD_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

/* ---- queue pairs ---- */

struct ibv_qp *rsd_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr, int is_ex)
{
    if (attr->cap.max_inline_data > 256) { /* rxe's RXE_MAX_INLINE_DATA bound */
        errno = EINVAL;
        return NULL;
    }
    uint64_t w[12] = {(uint64_t)host_of(pd->context),
                      pd->handle,
                      attr->send_cq ? attr->send_cq->handle : 0,
                      attr->recv_cq ? attr->recv_cq->handle : 0,
                      attr->srq ? attr->srq->handle : 0,
                      attr->qp_type,
                      (uint64_t)(attr->sq_sig_all != 0),
                      attr->cap.max_send_wr,
                      attr->cap.max_recv_wr,
                      attr->cap.max_send_sge,
                      attr->cap.max_recv_sge,
                      attr->cap.max_inline_data};
    uint64_t o[6];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_CREATE_QP, w, 12, NULL, 0, o, 6, &n);
    struct rsd_qp *r = rsd_new(n < 6 && st >= 0 ? -EINVAL : st, sizeof(*r));
    if (!r)
        return NULL;
    struct ibv_qp *qp = &r->qpx.qp_base;
    qp->context = pd->context;
    qp->qp_context = attr->qp_context;
    qp->pd = pd;
    qp->send_cq = attr->send_cq;
    qp->recv_cq = attr->recv_cq;
    qp->srq = attr->srq;
    qp->qp_num = (uint32_t)o[0];
    qp->handle = qp->qp_num;
    qp->state = IBV_QPS_RESET;
    qp->qp_type = attr->qp_type;
    pthread_mutex_init(&qp->mutex, NULL);
    pthread_cond_init(&qp->cond, NULL);
    attr->cap.max_send_wr = (uint32_t)o[1];
    attr->cap.max_recv_wr = (uint32_t)o[2];
    attr->cap.max_send_sge = (uint32_t)o[3];
    attr->cap.max_recv_sge = (uint32_t)o[4];
    attr->cap.max_inline_data = (uint32_t)o[5];
    r->is_ex = is_ex;
    rsd_async_track(RSD_ELEM_QP, host_of(pd->context), qp->qp_num, qp);
    return qp;
}

RSD_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
    return rsd_create_qp(pd, attr, 0);
}

RSD_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
    uint64_t w[3 + RSD_QPA_WORDS];
    w[0] = (uint64_t)host_of(qp->context);
    w[1] = qp->qp_num;
    w[2] = (uint64_t)(unsigned)mask;
    uint64_t *v = &w[3];
    v[RSD_QPA_STATE] = a->qp_state;
    v[RSD_QPA_CUR_STATE] = a->cur_qp_state;
    v[RSD_QPA_PATH_MTU] = a->path_mtu;
    v[RSD_QPA_ACCESS] = a->qp_access_flags;
    v[RSD_QPA_PKEY_INDEX] = a->pkey_index;
    v[RSD_QPA_PORT] = a->port_num;
    v[RSD_QPA_QKEY] = a->qkey;
    v[RSD_QPA_DEST_QP] = a->dest_qp_num;
    v[RSD_QPA_RQ_PSN] = a->rq_psn;
    v[RSD_QPA_SQ_PSN] = a->sq_psn;
    v[RSD_QPA_MAX_RD_ATOMIC] = a->max_rd_atomic;
    v[RSD_QPA_MAX_DEST_RD_ATOMIC] = a->max_dest_rd_atomic;
    v[RSD_QPA_MIN_RNR_TIMER] = a->min_rnr_timer;
    v[RSD_QPA_TIMEOUT] = a->timeout;
    v[RSD_QPA_RETRY_CNT] = a->retry_cnt;
    v[RSD_QPA_RNR_RETRY] = a->rnr_retry;
    v[RSD_QPA_AH_IS_GLOBAL] = a->ah_attr.is_global;
    v[RSD_QPA_AH_DLID] = a->ah_attr.dlid;
    v[RSD_QPA_AH_SGID_INDEX] = a->ah_attr.grh.sgid_index;
    v[RSD_QPA_AH_TRAFFIC_CLASS] = a->ah_attr.grh.traffic_class;
    v[RSD_QPA_AH_HOP_LIMIT] = a->ah_attr.grh.hop_limit;
    v[RSD_QPA_AH_SL] = a->ah_attr.sl;
    int64_t st = rsd_call(RSD_MODIFY_QP, w, 3 + RSD_QPA_WORDS, a->ah_attr.grh.dgid.raw, 16, NULL, 0, NULL);
    if (st < 0)
        return rsd_fail(st);
    if (mask & IBV_QP_STATE)
        qp->state = a->qp_state;
    return 0;
}

RSD_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, struct ibv_qp_init_attr *init)
{
    uint64_t w[2] = {(uint64_t)host_of(qp->context), qp->qp_num};
    uint64_t o[RSD_QPA_WORDS + 5];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_QUERY_QP, w, 2, NULL, 0, o, RSD_QPA_WORDS + 5, &n);
    if (st < 0 || n < RSD_QPA_WORDS + 5)
        return rsd_fail(st);
    memset(a, 0, sizeof(*a));
    a->qp_state = (enum ibv_qp_state)o[RSD_QPA_STATE];
    a->cur_qp_state = (enum ibv_qp_state)o[RSD_QPA_CUR_STATE];
    a->path_mtu = (enum ibv_mtu)o[RSD_QPA_PATH_MTU];
    a->qp_access_flags = (unsigned)o[RSD_QPA_ACCESS];
    a->pkey_index = (uint16_t)o[RSD_QPA_PKEY_INDEX];
    a->port_num = (uint8_t)o[RSD_QPA_PORT];
    a->qkey = (uint32_t)o[RSD_QPA_QKEY];
    a->dest_qp_num = (uint32_t)o[RSD_QPA_DEST_QP];
    a->rq_psn = (uint32_t)o[RSD_QPA_RQ_PSN];
    a->sq_psn = (uint32_t)o[RSD_QPA_SQ_PSN];
    a->max_rd_atomic = (uint8_t)o[RSD_QPA_MAX_RD_ATOMIC];
    a->max_dest_rd_atomic = (uint8_t)o[RSD_QPA_MAX_DEST_RD_ATOMIC];
    a->min_rnr_timer = (uint8_t)o[RSD_QPA_MIN_RNR_TIMER];
    a->timeout = (uint8_t)o[RSD_QPA_TIMEOUT];
    a->retry_cnt = (uint8_t)o[RSD_QPA_RETRY_CNT];
    a->rnr_retry = (uint8_t)o[RSD_QPA_RNR_RETRY];
    a->cap.max_send_wr = (uint32_t)o[RSD_QPA_WORDS + 0];
    a->cap.max_recv_wr = (uint32_t)o[RSD_QPA_WORDS + 1];
    a->cap.max_send_sge = (uint32_t)o[RSD_QPA_WORDS + 2];
    a->cap.max_recv_sge = (uint32_t)o[RSD_QPA_WORDS + 3];
    a->cap.max_inline_data = (uint32_t)o[RSD_QPA_WORDS + 4];
    if (init) {
        memset(init, 0, sizeof(*init));
        init->qp_context = qp->qp_context;
        init->send_cq = qp->send_cq;
        init->recv_cq = qp->recv_cq;
        init->srq = qp->srq;
        init->cap = a->cap;
        init->qp_type = qp->qp_type;
    }
    return 0;
}

RSD_EXPORT int ibv_destroy_qp(struct ibv_qp *qp)
{
    int rc = rsd_release(RSD_DESTROY_QP, qp->context, qp->qp_num);
    if (rc)
        return rc;
    struct rsd_qp *r = (struct rsd_qp *)qp;
    rsd_async_untrack(qp);
    rsd_qp_ex_fini(r);
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
    free(r);
    return 0;
}

/* Grow a word buffer (stack first, then the heap) to hold `need` words. */
struct words {
    uint64_t *w;
    uint32_t n, cap;
    uint64_t stack[512];
};

static int words_room(struct words *b, uint32_t more)
{
    if (b->n + more <= b->cap)
        return 0;
    uint32_t cap = b->cap * 2 > b->n + more ? b->cap * 2 : b->n + more + 64;
    uint64_t *p = b->w == b->stack ? malloc(cap * 8u) : realloc(b->w, cap * 8u);
    if (!p)
        return -1;
    if (b->w == b->stack)
        memcpy(p, b->stack, b->n * 8u);
    b->w = p;
    b->cap = cap;
    return 0;
}

static int imm_is_value(enum ibv_wr_opcode op)
{
    return op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

int rsd_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
    unsigned char inl[16384]; /* the inline bytes of this post's WRs, in order */
    uint32_t ninl = 0;
    struct words b = {.n = 3, .cap = 512};
    b.w = b.stack;
    uint32_t count = 0;
    for (struct ibv_send_wr *x = wr; x; x = x->next) {
        if (x->num_sge < 0 || words_room(&b, RSD_SWR_WORDS + 3u * (uint32_t)x->num_sge)) {
            if (b.w != b.stack)
                free(b.w);
            *bad_wr = x;
            return x->num_sge < 0 ? EINVAL : ENOMEM;
        }
        uint64_t *v = &b.w[b.n];
        int ud = qp->qp_type == IBV_QPT_UD;
        struct rsd_ah *ah = ud ? (struct rsd_ah *)x->wr.ud.ah : NULL;
        /* ATOMIC_WRITE (ibv_wr_atomic_write): its 8 bytes in wr.atomic.compare_add, as they lie in memory */
        int atomic = x->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || x->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
                     x->opcode == IBV_WR_ATOMIC_WRITE;
        v[0] = x->wr_id;
        v[1] = x->opcode;
        v[2] = x->send_flags;
        v[3] = imm_is_value(x->opcode) ? ntohl(x->imm_data) : x->imm_data;
        v[4] = ud ? 0 : atomic ? x->wr.atomic.remote_addr : x->wr.rdma.remote_addr;
        v[5] = ud ? 0 : atomic ? x->wr.atomic.rkey : x->wr.rdma.rkey;
        v[6] = atomic ? x->wr.atomic.compare_add : 0;
        v[7] = atomic ? x->wr.atomic.swap : 0;
        v[8] = ah ? (uint64_t)(int64_t)ah->dest_host : (uint64_t)(int64_t)-1;
        v[9] = ah ? ((uint64_t)ah->traffic_class << 32 | x->wr.ud.remote_qpn) : 0;
        v[10] = ud ? x->wr.ud.remote_qkey : 0;
        v[11] = (uint64_t)x->num_sge;
        if (x->opcode == IBV_WR_BIND_MW) { /* the bind's words (proto.h) */
            const struct ibv_mw_bind_info *bi = &x->bind_mw.bind_info;
            v[4] = bi->addr;
            v[5] = x->bind_mw.rkey;
            v[6] = bi->length;
            v[7] = (uint64_t)bi->mw_access_flags << 32 | (bi->mr ? bi->mr->lkey : 0);
            v[9] = x->bind_mw.mw ? x->bind_mw.mw->rkey : 0;
        }
        b.n += RSD_SWR_WORDS;
        for (int i = 0; i < x->num_sge; i++) {
            b.w[b.n++] = x->sg_list[i].addr;
            b.w[b.n++] = x->sg_list[i].length;
            b.w[b.n++] = x->sg_list[i].lkey;
            /* inline data is the program's bytes now (the buffer may be reused, or not registered) */
            if ((x->send_flags & IBV_SEND_INLINE) && x->sg_list[i].length) {
                uint32_t len = x->sg_list[i].length;
                if (ninl + len > sizeof(inl)) {
                    if (b.w != b.stack)
                        free(b.w);
                    *bad_wr = x;
                    return EINVAL; /* beyond any QP's max_inline_data */
                }
                memcpy(inl + ninl, (const void *)(uintptr_t)x->sg_list[i].addr, len);
                ninl += len;
            }
        }
        count++;
    }
    b.w[0] = (uint64_t)host_of(qp->context);
    b.w[1] = qp->qp_num;
    b.w[2] = count;
    uint64_t o[1] = {0};
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_POST_SEND, b.w, b.n, inl, ninl, o, 1, &n);
    if (b.w != b.stack)
        free(b.w);
    if (st < 0) {
        struct ibv_send_wr *x = wr;
        for (uint64_t i = 0; n && i < o[0] && x->next; i++)
            x = x->next;
        *bad_wr = x;
        return (int)-st;
    }
    return 0;
}

static int post_recv_common(struct ibv_context *ctx, uint32_t qpn, uint32_t srq, struct ibv_recv_wr *wr,
                            struct ibv_recv_wr **bad_wr)
{
    struct words b = {.n = 4, .cap = 512};
    b.w = b.stack;
    uint32_t count = 0;
    for (struct ibv_recv_wr *x = wr; x; x = x->next) {
        if (x->num_sge < 0 || words_room(&b, 2 + 3u * (uint32_t)x->num_sge)) {
            if (b.w != b.stack)
                free(b.w);
            *bad_wr = x;
            return x->num_sge < 0 ? EINVAL : ENOMEM;
        }
        b.w[b.n++] = x->wr_id;
        b.w[b.n++] = (uint64_t)x->num_sge;
        for (int i = 0; i < x->num_sge; i++) {
            b.w[b.n++] = x->sg_list[i].addr;
            b.w[b.n++] = x->sg_list[i].length;
            b.w[b.n++] = x->sg_list[i].lkey;
        }
        count++;
    }
    b.w[0] = (uint64_t)host_of(ctx);
    b.w[1] = qpn;
    b.w[2] = srq;
    b.w[3] = count;
    uint64_t o[1] = {0};
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_POST_RECV, b.w, b.n, NULL, 0, o, 1, &n);
    if (b.w != b.stack)
        free(b.w);
    if (st < 0) {
        struct ibv_recv_wr *x = wr;
        for (uint64_t i = 0; n && i < o[0] && x->next; i++)
            x = x->next;
        *bad_wr = x;
        return (int)-st;
    }
    return 0;
}

static int rsd_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    return post_recv_common(qp->context, qp->qp_num, 0, wr, bad_wr);
}

static int rsd_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    return post_recv_common(srq->context, 0, srq->handle, wr, bad_wr);
}

/* ---- shared receive queues ---- */

RSD_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
    uint64_t w[5] = {(uint64_t)host_of(pd->context), pd->handle, attr->attr.max_wr, attr->attr.max_sge,
                     attr->attr.srq_limit};
    int64_t st = rsd_call(RSD_CREATE_SRQ, w, 5, NULL, 0, NULL, 0, NULL);
    struct ibv_srq *s = rsd_new(st, sizeof(*s));
    if (!s)
        return NULL;
    s->context = pd->context;
    s->srq_context = attr->srq_context;
    s->pd = pd;
    s->handle = (uint32_t)st;
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->cond, NULL);
    rsd_async_track(RSD_ELEM_SRQ, host_of(pd->context), s->handle, s);
    return s;
}

RSD_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
    uint64_t w[5] = {(uint64_t)host_of(srq->context), srq->handle, (uint64_t)(unsigned)mask, attr->max_wr,
                     attr->srq_limit};
    int64_t st = rsd_call(RSD_MODIFY_SRQ, w, 5, NULL, 0, NULL, 0, NULL);
    return st < 0 ? rsd_fail(st) : 0;
}

RSD_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
    uint64_t w[2] = {(uint64_t)host_of(srq->context), srq->handle};
    uint64_t o[3];
    uint32_t n = 0;
    int64_t st = rsd_call(RSD_QUERY_SRQ, w, 2, NULL, 0, o, 3, &n);
    if (st < 0 || n < 3)
        return rsd_fail(st);
    attr->max_wr = (uint32_t)o[0];
    attr->max_sge = (uint32_t)o[1];
    attr->srq_limit = (uint32_t)o[2];
    return 0;
}

RSD_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
    int rc = rsd_release(RSD_DESTROY_SRQ, srq->context, srq->handle);
    if (rc)
        return rc;
    rsd_async_untrack(srq);
    free(srq);
    return 0;
}

/* ---- address handles ---- */

RSD_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
    uint64_t w[5] = {(uint64_t)host_of(pd->context), pd->handle, attr->is_global, attr->dlid,
                     attr->grh.traffic_class};
    int64_t st = rsd_call(RSD_CREATE_AH, w, 5, attr->grh.dgid.raw, 16, NULL, 0, NULL);
    struct rsd_ah *ah = rsd_new(st, sizeof(*ah));
    if (!ah)
        return NULL;
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->dest_host = (int)st;
    ah->traffic_class = attr->grh.traffic_class;
    return &ah->ah;
}

RSD_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
    free(ah);
    return 0;
}

/* ---- strings (as libibverbs prints them) ---- */

RSD_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const s[] = {
        "success", "local length error", "local QP operation error", "local EE context operation error",
        "local protection error", "Work Request Flushed Error", "memory management operation error",
        "bad response error", "local access error", "remote invalid request error", "remote access error",
        "remote operation error", "transport retry counter exceeded", "RNR retry counter exceeded",
        "local RDD violation error", "remote invalid RD request", "aborted error", "invalid EE context number",
        "invalid EE context state", "fatal error", "response timeout error", "general error",
        "TM error", "TM Rendezvous Request Error"};
    return (unsigned)status < sizeof(s) / sizeof(s[0]) ? s[status] : "unknown";
}

RSD_EXPORT const char *ibv_node_type_str(enum ibv_node_type t)
{
    static const char *const s[] = {"unknown", "InfiniBand channel adapter", "InfiniBand switch",
                                    "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP", "unspecified"};
    return (t >= 0 && (unsigned)t < sizeof(s) / sizeof(s[0])) ? s[t] : "unknown";
}

RSD_EXPORT const char *ibv_port_state_str(enum ibv_port_state s)
{
    static const char *const n[] = {"no state change (NOP)", "down", "init", "armed", "active", "active deferred"};
    return ((unsigned)s < sizeof(n) / sizeof(n[0])) ? n[s] : "unknown";
}

/* ---- waiting outside verbs ----
 * A program blocked on its own socket (the TCP side channel of perftest and the pingpongs, an
 * accept) waits for another process, which may need simulated time to pass to get there. Before
 * such a call would block, the process tells the daemon it is idle until the socket is readable
 * (passing the daemon a copy of the descriptor to watch); the daemon answers when it is, so the
 * call then returns at once. Descriptors that are not sockets or pipes, non-blocking ones and
 * ready ones go straight to libc. */

/* 1: a blocking read of fd would wait for another process (a socket, pipe or eventfd, blocking,
 * nothing to read yet); 0: it returns at once (ready, non-blocking, the daemon's own socket);
 * -1: it waits for something else (a terminal, a device): time must not pass on its account. */
static int waits_on(int fd)
{
    if (fd < 0 || S.sock < 0 || fd == S.sock)
        return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (syscall(SYS_poll, &p, 1, 0) != 0)
        return 0; /* ready (or an error libc will report) */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK))
        return 0;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 0;
    return (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) ? -1 : 1;
}

static void idle_until_readable(const int *fds, int n)
{
    if (n <= 0)
        return;
    pthread_mutex_lock(&S.lock);
    if (S.sock >= 0)
        call_fds_locked(RSD_IDLE, NULL, 0, NULL, 0, fds, n, NULL, 0, NULL, NULL, 0);
    pthread_mutex_unlock(&S.lock);
}

#define REAL(ret, name, ...)                                                                                 \
    static ret (*real_##name)(__VA_ARGS__);                                                                    \
    if (!real_##name)                                                                                          \
        real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);

RSD_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    REAL(ssize_t, read, int, void *, size_t)
    if (waits_on(fd) == 1)
        idle_until_readable(&fd, 1);
    return real_read(fd, buf, count);
}

RSD_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    REAL(ssize_t, recv, int, void *, size_t, int)
    if (!(flags & MSG_DONTWAIT) && waits_on(fd) == 1)
        idle_until_readable(&fd, 1);
    return real_recv(fd, buf, len, flags);
}

RSD_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
    REAL(int, accept, int, struct sockaddr *, socklen_t *)
    if (waits_on(fd) == 1)
        idle_until_readable(&fd, 1);
    return real_accept(fd, addr, len);
}

RSD_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    REAL(int, accept4, int, struct sockaddr *, socklen_t *, int)
    if (waits_on(fd) == 1)
        idle_until_readable(&fd, 1);
    return real_accept4(fd, addr, len, flags);
}

RSD_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
    REAL(int, poll, struct pollfd *, nfds_t, int)
    if (timeout != 0 && S.sock >= 0) {
        int w[MAX_FDS], n = 0, ready = 0;
        for (nfds_t i = 0; i < nfds; i++) {
            if (!(fds[i].events & POLLIN))
                continue;
            int k = waits_on(fds[i].fd);
            if (k == 1 && n < MAX_FDS)
                w[n++] = fds[i].fd;
            else if (k != 0 || (fds[i].fd >= 0 && fds[i].fd != S.sock))
                ready = 1; /* something returns at once, or waits on a device: do not idle */
        }
        if (!ready)
            idle_until_readable(w, n);
    }
    return real_poll(fds, nfds, timeout);
}

RSD_EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *timeout)
{
    REAL(int, select, int, fd_set *, fd_set *, fd_set *, struct timeval *)
    if (rd && !(timeout && timeout->tv_sec == 0 && timeout->tv_usec == 0) && S.sock >= 0) {
        int w[MAX_FDS], n = 0, ready = 0;
        for (int fd = 0; fd < nfds; fd++) {
            if (!FD_ISSET(fd, rd))
                continue;
            int k = waits_on(fd);
            if (k == 1 && n < MAX_FDS)
                w[n++] = fd;
            else if (k != 0 || fd != S.sock)
                ready = 1; /* something returns at once, or waits on a device: do not idle */
        }
        if (!ready && !(wr && nfds > 0))
            idle_until_readable(w, n);
    }
    return real_select(nfds, rd, wr, ex, timeout);
}

/* ---- simulated clocks (RDMASIM_CLOCK=sim) ----
 * gettimeofday and clock_gettime (REALTIME, MONOTONIC and their variants) read the fabric's
 * simulated time: the realtime clock starts at the daemon's start, the monotonic one at 0. Off by
 * default: a program that waits for a deadline by reading the clock outside verbs calls would wait
 * forever on a quiet fabric. Before the program's first verbs call the host's clocks are read. */

static int sim_clock_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("RDMASIM_CLOCK");
        on = v && strcmp(v, "sim") == 0;
    }
    return on;
}

/* 0 and the simulated time in ns (plus the realtime epoch), or -1: use the host's clock */
static int sim_now(uint64_t *ns, uint64_t *epoch_ns)
{
    if (!sim_clock_on())
        return -1;
    pthread_mutex_lock(&S.lock);
    int64_t st = -1;
    uint64_t o[2];
    uint32_t n = 0;
    if (S.sock >= 0)
        st = call_locked(RSD_NOW, NULL, 0, NULL, 0, -1, o, 2, &n, NULL, 0);
    pthread_mutex_unlock(&S.lock);
    if (st < 0 || n < 2)
        return -1;
    *ns = o[0] / 1000u;
    *epoch_ns = o[1];
    return 0;
}

RSD_EXPORT int clock_gettime(clockid_t id, struct timespec *tp)
{
    REAL(int, clock_gettime, clockid_t, struct timespec *)
    uint64_t ns, epoch;
    int mono = id == CLOCK_MONOTONIC || id == CLOCK_MONOTONIC_RAW || id == CLOCK_MONOTONIC_COARSE ||
               id == CLOCK_BOOTTIME;
    int real = id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
    if ((mono || real) && sim_now(&ns, &epoch) == 0) {
        uint64_t t = real ? epoch + ns : ns;
        tp->tv_sec = (time_t)(t / 1000000000u);
        tp->tv_nsec = (long)(t % 1000000000u);
        return 0;
    }
    return real_clock_gettime(id, tp);
}

RSD_EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    REAL(int, gettimeofday, struct timeval *restrict, void *restrict)
    uint64_t ns, epoch;
    if (sim_now(&ns, &epoch) == 0) {
        uint64_t t = epoch + ns;
        tv->tv_sec = (time_t)(t / 1000000000u);
        tv->tv_usec = (suseconds_t)(t % 1000000000u / 1000u);
        return 0;
    }
    return real_gettimeofday(tv, tz);
}
