/* Bulk flows (rdmasim/flows.h): start at their time or when their dependencies finish (plus
 * their hold), run as one RC work request on a fresh QP pair, record results, free the pair.
 * A LOCAL flow has no QP pair: it finishes as it starts.  Flows chained by `after` (one
 * connection) share the pair of the chain's first flow: each is posted once the one before it
 * was, so the send queue carries them in order, and the pair is freed with the last.
 *
 * One timer drives the table: it fires at the earliest start time among flows that are ready
 * (dependencies done), starts every flow due, destroys the QP pairs of flows that finished
 * since (never from inside the completer, which is still using the QP), and re-arms. */
#include "workload/flows_impl.h"

#include <stdlib.h>
#include <string.h>

#include "link/pause.h"
#include "rdmasim/ib.h"
#include "transport/transport.h"

/* Protection domain number of the flows' QPs and regions: above any PD Python hands out. */
#define FLOW_PD 0x80000000u
#define FLOW_ACCESS (RS_ACCESS_LOCAL_WRITE | RS_ACCESS_REMOTE_WRITE | RS_ACCESS_REMOTE_READ)
/* a size-only region big enough for any flow (sizes are < 2^31) */
#define FLOW_MR_BYTES (1ull << 40)

/* ---- ready queue: (start time, id), earliest first; ties by id so runs are deterministic ----
 * Flows mostly become ready in that order (a table sorted by start time, many flows starting
 * together): those are appended to a sorted FIFO in O(1) instead of costing a heap pop of log n
 * swaps each.  One that comes out of order goes to a binary heap; the next flow is the earlier of
 * the two heads. */

static int before(int64_t ta, uint64_t ia, int64_t tb, uint64_t ib)
{
    return ta < tb || (ta == tb && ia < ib);
}

static int heap_less(const rs_flows *fs, uint64_t a, uint64_t b)
{
    return before(fs->heap_t[a], fs->heap_id[a], fs->heap_t[b], fs->heap_id[b]);
}

static void heap_swap(rs_flows *fs, uint64_t a, uint64_t b)
{
    int64_t t = fs->heap_t[a];
    fs->heap_t[a] = fs->heap_t[b];
    fs->heap_t[b] = t;
    uint64_t i = fs->heap_id[a];
    fs->heap_id[a] = fs->heap_id[b];
    fs->heap_id[b] = i;
}

static void heap_push(rs_flows *fs, int64_t t, uint64_t id)
{
    uint64_t i = fs->heap_len++;
    fs->heap_t[i] = t;
    fs->heap_id[i] = id;
    while (i > 0 && heap_less(fs, i, (i - 1) / 2)) {
        heap_swap(fs, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_pop(rs_flows *fs)
{
    fs->heap_len--;
    heap_swap(fs, 0, fs->heap_len);
    uint64_t i = 0;
    for (;;) {
        uint64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < fs->heap_len && heap_less(fs, l, m))
            m = l;
        if (r < fs->heap_len && heap_less(fs, r, m))
            m = r;
        if (m == i)
            return;
        heap_swap(fs, i, m);
        i = m;
    }
}

/* A flow is made ready once in its life, so the FIFO's arrays (one slot per flow) never wrap. */
static void ready_push(rs_flows *fs, int64_t t, uint64_t id)
{
    uint64_t tail = fs->fifo_tail;
    if (tail == fs->fifo_head || !before(t, id, fs->fifo_t[tail - 1], fs->fifo_id[tail - 1])) {
        fs->fifo_t[tail] = t;
        fs->fifo_id[tail] = id;
        fs->fifo_tail = tail + 1;
    } else {
        heap_push(fs, t, id);
    }
}

/* The earliest ready flow: 1 and its (t, id), or 0 if none is ready. */
static int ready_peek(const rs_flows *fs, int64_t *t, uint64_t *id)
{
    uint64_t h = fs->fifo_head;
    if (h < fs->fifo_tail &&
        (!fs->heap_len || before(fs->fifo_t[h], fs->fifo_id[h], fs->heap_t[0], fs->heap_id[0]))) {
        *t = fs->fifo_t[h];
        *id = fs->fifo_id[h];
        return 1;
    }
    if (!fs->heap_len)
        return 0;
    *t = fs->heap_t[0];
    *id = fs->heap_id[0];
    return 1;
}

/* Remove the flow ready_peek returned. */
static void ready_pop(rs_flows *fs, uint64_t id)
{
    if (fs->fifo_head < fs->fifo_tail && fs->fifo_id[fs->fifo_head] == id)
        fs->fifo_head++;
    else
        heap_pop(fs);
}

/* When a flow whose dependencies are all done at `now` may start: its hold after the later of
 * now and its start time (both <= RS_MAX_TIME_PS, as is the hold: the sum fits int64). */
static int64_t ready_at(const rs_flow *f, int64_t now)
{
    return (f->start_ps > now ? f->start_ps : now) + f->hold_ps;
}

static void arm(rs_transport *tp, rs_flows *fs)
{
    int64_t t = -1; /* stays -1 when nothing is ready */
    uint64_t id;
    ready_peek(fs, &t, &id);
    if (t < 0) {
        rs_timer_cancel(&fs->timer);
        return;
    }
    if (t < tp->net.eng.now_ps)
        t = tp->net.eng.now_ps;
    if (!fs->timer.armed || fs->timer.when_ps != t)
        rs_engine_arm(&tp->net.eng, &fs->timer, t);
}

/* Free the QP pair of finished flow `id` at this instant, by an event of its requester host
 * (rs_flow_reaper): not by the table's timer, whose event is global (a start) and which a finish
 * would move in a partitioned run. */
static void reap_later(rs_transport *tp, rs_flows *fs, rs_flow *f, uint64_t id)
{
    rs_flow_reaper *rp = fs->hostres[f->r.req_host].reaper;
    f->reap_next = rp->head;
    rp->head = id + 1;
    if (!rp->timer.armed || rp->timer.when_ps != tp->net.eng.now_ps)
        rs_engine_arm(&tp->net.eng, &rp->timer, tp->net.eng.now_ps);
}

/* ---- per-host resources: one CQ (flow QPs never push completions) and one size-only MR ---- */

static int host_ready(rs_transport *tp, rs_flows *fs, int host)
{
    if ((uint32_t)host >= fs->n_hostres) {
        uint32_t n = tp->n_hosts;
        rs_flow_hostres *nr = realloc(fs->hostres, n * sizeof(*nr));
        if (!nr)
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
        memset(nr + fs->n_hostres, 0, (n - fs->n_hostres) * sizeof(*nr));
        fs->hostres = nr;
        fs->n_hostres = n;
    }
    rs_flow_hostres *hr = &fs->hostres[host];
    if (hr->ready)
        return RS_OK;
    if (!hr->reaper && !(hr->reaper = calloc(1, sizeof(rs_flow_reaper))))
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    hr->reaper->fs = fs;
    hr->reaper->timer.owner = hr->reaper;
    hr->reaper->timer.kind = RS_EV_FLOWS_REAP;
    hr->reaper->timer.ent = rs_ent_host(host);
    int cq = rs_tp_cq_create(tp, host, 1);
    if (cq < 0)
        return cq;
    int mr = rs_mr_reg_size_only(tp, host, FLOW_PD, FLOW_MR_BYTES, FLOW_ACCESS, &hr->iova, &hr->lkey, &hr->rkey);
    if (mr < 0)
        return mr;
    hr->cq = cq;
    hr->ready = 1;
    return RS_OK;
}

/* ---- starting a flow ---- */

static int connect_side(rs_transport *tp, int host, uint32_t qpn, int peer, uint32_t peer_qpn, const rs_flow *f,
                        const rs_flow_cfg *c)
{
    if (c->recovery.mode != RS_RECOVERY_GBN) {
        int rc = rs_tp_qp_set_recovery(tp, host, qpn, &c->recovery);
        if (rc < 0)
            return rc;
    }
    rs_qp_attr a = {0};
    a.qp_state = RS_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = FLOW_ACCESS;
    int rc = rs_tp_qp_modify(tp, host, qpn, &a, RS_QP_STATE | RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_ACCESS_FLAGS);
    if (rc < 0)
        return rc;
    a.qp_state = RS_QPS_RTR;
    a.dest_host = peer;
    a.traffic_class = (uint32_t)(8u * f->prio) << 2;
    a.path_mtu = c->path_mtu;
    a.dest_qp_num = peer_qpn;
    a.max_dest_rd_atomic = c->max_rd_atomic;
    a.min_rnr_timer = c->min_rnr_timer;
    rc = rs_tp_qp_modify(tp, host, qpn, &a,
                         RS_QP_STATE | RS_QP_AV | RS_QP_PATH_MTU | RS_QP_DEST_QPN | RS_QP_RQ_PSN |
                             RS_QP_MAX_DEST_RD_ATOMIC | RS_QP_MIN_RNR_TIMER);
    if (rc < 0)
        return rc;
    a.qp_state = RS_QPS_RTS;
    a.timeout = c->timeout;
    a.retry_cnt = c->retry_cnt;
    a.rnr_retry = c->rnr_retry;
    a.max_rd_atomic = c->max_rd_atomic;
    return rs_tp_qp_modify(tp, host, qpn, &a,
                           RS_QP_STATE | RS_QP_TIMEOUT | RS_QP_RETRY_CNT | RS_QP_RNR_RETRY | RS_QP_SQ_PSN |
                               RS_QP_MAX_QP_RD_ATOMIC);
}

static int64_t src_paused_ps(rs_transport *tp, const rs_flow *f)
{
    rs_host *h = tp->hosts[f->src];
    rs_pause_stats st;
    rs_pause_stats_now(&h->port, tp->net.eng.now_ps, &st);
    return st.paused_ps[rs_port_dscp_prio(&h->port, (uint8_t)(8u * f->prio))];
}

/* The requester's and responder's counters that a flow's results are shares of. */
static void pair_counters(const rs_transport *tp, const rs_flow *f, uint64_t *retx, uint64_t *cnps)
{
    int req = (int)f->r.req_host, resp = req == f->src ? f->dst : f->src;
    const rs_qp *qa = rs_host_qp(tp->hosts[req], f->r.req_qpn);
    const rs_qp *qb = rs_host_qp(tp->hosts[resp], f->r.resp_qpn);
    *retx = *cnps = 0;
    if (!qa || !qb)
        return;
    *retx = qa->stats.pkts_retx + qb->stats.pkts_retx;
    *cnps = (f->verb == RS_FLOW_READ ? qb : qa)->stats.cnps_rcvd;
}

/* A fresh connected QP pair for the flow (and the flows chained after it): 0 or an rs_err. */
static int create_pair(rs_transport *tp, rs_flows *fs, uint64_t id, int req, int resp)
{
    rs_flow *f = &fs->f[id];
    const rs_flow_cfg *c = &fs->cfgs[f->cfg];
    int rc;
    if ((rc = host_ready(tp, fs, req)) < 0 || (rc = host_ready(tp, fs, resp)) < 0)
        return rc;
    const rs_flow_hostres *hq = &fs->hostres[req], *hp = &fs->hostres[resp];
    /* room for every message of the chain: a post never finds the send queue full */
    uint32_t depth = f->chain_len ? f->chain_len : 1;
    rs_qp_init in = {.pd = FLOW_PD, .max_send_wr = depth, .max_recv_wr = depth, .max_send_sge = 1,
                     .max_recv_sge = 1};
    in.send_cq = in.recv_cq = hq->cq;
    int qa = rs_tp_qp_create(tp, req, &in);
    if (qa < 0)
        return qa;
    in.send_cq = in.recv_cq = hp->cq;
    int qb = rs_tp_qp_create(tp, resp, &in);
    if (qb < 0)
        return qb;
    if ((rc = connect_side(tp, req, (uint32_t)qa, resp, (uint32_t)qb, f, c)) < 0 ||
        (rc = connect_side(tp, resp, (uint32_t)qb, req, (uint32_t)qa, f, c)) < 0)
        return rc;
    rs_host_qp(tp->hosts[req], (uint32_t)qa)->flow_ref = id + 1; /* marks a flow QP; wr_id names the flow */
    rs_host_qp(tp->hosts[resp], (uint32_t)qb)->flow_ref = id + 1;
    f->qpn_req = (uint32_t)qa;
    f->qpn_resp = (uint32_t)qb;
    f->recv_cur = id + 1; /* its responder receives the chain's messages in order, this one first */
    return RS_OK;
}

static void run_list_add(rs_flows *fs, rs_flow *f, uint64_t id)
{
    f->run_next = fs->run_head;
    f->run_prev = 0;
    if (fs->run_head)
        fs->f[fs->run_head - 1].run_prev = id + 1;
    fs->run_head = id + 1;
}

static void run_list_remove(rs_flows *fs, rs_flow *f)
{
    if (f->run_prev)
        fs->f[f->run_prev - 1].run_next = f->run_next;
    else
        fs->run_head = f->run_next;
    if (f->run_next)
        fs->f[f->run_next - 1].run_prev = f->run_prev;
}

static int64_t src_paused_ps(rs_transport *tp, const rs_flow *f);

/* An Ultra Ethernet flow: one message over a PDC of its own (uet/endpoint.c). */
static int start_uet_flow(rs_transport *tp, rs_flows *fs, uint64_t id)
{
    rs_flow *f = &fs->f[id];
    const rs_flow_cfg *c = &fs->cfgs[f->cfg];
    uint64_t dst_len = c->uet.target_bytes ? c->uet.target_bytes : f->size;
    if (c->uet.place && !f->ubuf) { /* the source bytes (a pattern of the flow's id), then the target buffer */
        f->ubuf = calloc(1, f->size + dst_len);
        if (!f->ubuf)
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for flow %llu's %llu + %llu bytes",
                              (unsigned long long)id, (unsigned long long)f->size, (unsigned long long)dst_len);
        uint64_t x = (id + 1) * UINT64_C(0x9E3779B97F4A7C15);
        for (uint64_t i = 0; i < f->size; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            f->ubuf[i] = (uint8_t)(x >> 24);
        }
    }
    if (f->ubuf) { /* the PDC takes them as it starts: its first packet may go at once */
        fs->uet->next_src = f->ubuf;
        fs->uet->next_dst = f->ubuf + f->size;
        fs->uet->next_dst_len = dst_len;
    }
    int read = f->verb == RS_FLOW_READ; /* dst reads: its READ request to src (uet/ses_read.c) */
    if (read) {
        fs->uet->next_read_role = RS_UET_READ_REQ;
        fs->uet->next_read_len = (uint32_t)f->size;
    }
    rs_pdc *pdc = read ? rs_uet_start(fs->uet, f->dst, f->src, 0, f->prio, RS_UET_SES_READ, &c->uet, id + 1)
                       : rs_uet_start(fs->uet, f->src, f->dst, f->size, f->prio,
                                      f->verb == RS_FLOW_SEND ? RS_UET_SES_SEND : RS_UET_SES_WRITE, &c->uet, id + 1);
    fs->uet->next_src = fs->uet->next_dst = NULL; /* (a start that failed did not take them) */
    fs->uet->next_dst_len = 0;
    fs->uet->next_read_role = 0;
    if (!pdc)
        return RS_ERR_NOMEM;
    f->pdc = pdc;
    f->r.req_host = (uint32_t)(read ? f->dst : f->src);
    f->r.req_qpn = pdc->src_id;
    f->r.resp_qpn = pdc->dst_id;
    f->r.start_ps = tp->net.eng.now_ps;
    f->r.status = RS_FLOW_RUNNING;
    f->pause0 = src_paused_ps(tp, f);
    fs->started++;
    run_list_add(fs, f, id);
    return RS_OK;
}

static int start_flow(rs_transport *tp, rs_flows *fs, uint64_t id)
{
    rs_flow *f = &fs->f[id];
    if (fs->cfgs[f->cfg].transport == RS_FLOW_UET)
        return start_uet_flow(tp, fs, id);
    int req = f->verb == RS_FLOW_READ ? f->dst : f->src;
    int resp = f->verb == RS_FLOW_READ ? f->src : f->dst;
    int rc;
    if (!f->qpn_req && (rc = create_pair(tp, fs, id, req, resp)) < 0) /* else the chain's pair */
        return rc;
    const rs_flow_hostres *hq = &fs->hostres[req], *hp = &fs->hostres[resp];
    uint32_t qa = f->qpn_req, qb = f->qpn_resp;
    f->r.req_host = (uint32_t)req;
    f->r.req_qpn = qa;
    f->r.resp_qpn = qb;
    pair_counters(tp, f, &f->retx0, &f->cnps0);
    if (f->chain_next) { /* the next flow of the connection may be posted from now on */
        rs_flow *nx = &fs->f[f->chain_next - 1];
        nx->qpn_req = qa;
        nx->qpn_resp = qb;
        nx->byte_off = f->byte_off + f->size;
        if (--nx->n_wait == 0)
            ready_push(fs, ready_at(nx, tp->net.eng.now_ps), f->chain_next - 1);
    }
    f->r.start_ps = tp->net.eng.now_ps;
    f->r.status = RS_FLOW_RUNNING;
    f->pause0 = src_paused_ps(tp, f);
    fs->started++;
    run_list_add(fs, f, id);
    rs_sge local = {.addr = hq->iova, .length = (uint32_t)f->size, .lkey = hq->lkey};
    if (f->verb == RS_FLOW_SEND) {
        rs_sge rsg = {.addr = hp->iova, .length = (uint32_t)f->size, .lkey = hp->lkey};
        rs_recv_wr rwr = {.wr_id = id, .num_sge = 1, .sg_list = &rsg};
        if ((rc = rs_tp_post_recv(tp, resp, qb, &rwr)) < 0)
            return rc;
    }
    static const uint32_t opcode[] = {RS_WR_RDMA_WRITE, RS_WR_RDMA_READ, RS_WR_SEND};
    rs_send_wr wr = {.wr_id = id,
                     .opcode = opcode[f->verb],
                     .num_sge = 1,
                     .sg_list = &local,
                     .remote_addr = hp->iova,
                     .rkey = hp->rkey};
    return rs_tp_post_send(tp, req, qa, &wr); /* may complete it at once (a flushed pair) */
}

/* ---- finishing ---- */

/* A running flow's counters: its share of its QP pair's (see rs_flows_add: the pair's counters
 * since the later of its post and the previous flow's completion; its bytes after the chain's
 * earlier messages', which arrive first). */
static void live_counters(const rs_transport *tp, const rs_flow *f, uint64_t id, rs_flow_result *r)
{
    if (f->pdc) { /* UET: its PDC's counters */
        r->retx_pkts = f->pdc->st.pkts_retx;
        r->bytes_delivered = f->pdc->st.bytes_rcvd < f->size ? f->pdc->st.bytes_rcvd : f->size;
        return;
    }
    int req = (int)f->r.req_host, resp = req == f->src ? f->dst : f->src;
    const rs_qp *qa = rs_host_qp(tp->hosts[req], f->r.req_qpn);
    const rs_qp *qb = rs_host_qp(tp->hosts[resp], f->r.resp_qpn);
    if (!qa || !qb)
        return;
    uint64_t retx, cnps;
    pair_counters(tp, f, &retx, &cnps);
    r->retx_pkts = retx - f->retx0;
    r->cnps = cnps - f->cnps0;
    if (f->verb != RS_FLOW_READ) {
        uint64_t got = qb->stats.bytes_rcvd > f->byte_off ? qb->stats.bytes_rcvd - f->byte_off : 0;
        r->bytes_delivered = got < f->size ? got : f->size;
    } else if (qa->sq_count && qa->sq[qa->sq_head].started && qa->sq[qa->sq_head].wr_id == id) {
        /* READ: response bytes acknowledged in order at the requester */
        const rs_swqe *w = &qa->sq[qa->sq_head];
        uint64_t got = (uint64_t)(uint32_t)rs_psn_diff(qa->comp_psn, w->first_psn) * qa->pmtu;
        r->bytes_delivered = got < f->size ? got : f->size;
    }
}

/* The dependency events of f of kind `on` (RS_DEP_DONE, RS_DEP_RECEIVED) happened: each waiting
 * flow counts one; one that has all it needs is ready (once: later events find dep_left 0). */
static void dep_events(rs_transport *tp, rs_flows *fs, const rs_flow *f, uint8_t on)
{
    for (uint64_t k = f->rdep_begin; k < f->rdep_begin + f->rdep_n; k++) {
        if (fs->rdep_on[k] != on)
            continue;
        rs_flow *d = &fs->f[fs->rdeps[k]];
        if (d->dep_left && --d->dep_left == 0 && --d->n_wait == 0)
            ready_push(fs, ready_at(d, tp->net.eng.now_ps), fs->rdeps[k]);
    }
}

/* f's receiver has every byte (or f ended without it): its RS_DEP_RECEIVED waiters count it. */
static void received(rs_transport *tp, rs_flows *fs, rs_flow *f)
{
    if (f->recv_done)
        return;
    f->recv_done = 1;
    dep_events(tp, fs, f, RS_DEP_RECEIVED);
}

void rs_flows_on_received(rs_flows *fs, rs_qp *qp)
{
    rs_flow *head = &fs->f[qp->flow_ref - 1]; /* the responder QP names its chain's first flow */
    if (!head->recv_cur)
        return;
    rs_flow *f = &fs->f[head->recv_cur - 1];
    head->recv_cur = f->chain_next; /* RC delivers a connection's messages in order */
    if (f->r.status != RS_FLOW_RUNNING)
        return;
    if (fs->lock)
        pthread_mutex_lock(fs->lock);
    received(qp->host->tp, fs, f); /* the transport the responder's host runs on (its partition's) */
    arm(qp->host->tp, fs);
    if (fs->lock)
        pthread_mutex_unlock(fs->lock);
}

/* A flow ended with `status`: count it and make ready the flows that waited only for it. */
static void release(rs_transport *tp, rs_flows *fs, rs_flow *f, uint32_t status)
{
    fs->finished++;
    if (status != RS_WC_STATUS_SUCCESS)
        fs->failed++;
    received(tp, fs, f); /* READ (its requester is the receiver), LOCAL, or a flow that failed */
    dep_events(tp, fs, f, RS_DEP_DONE);
    if (fs->part_left) {
        /* a partitioned run: the loop stops a partition whose count reaches 0 (sim/par.c) */
        fs->part_left[fs->part_of_host[f->r.req_host]]--;
    } else if (fs->stop_when_done && fs->finished == fs->n) {
        *fs->done = 1; /* the simulation's flag: return to Python after this event */
    }
}

/* A LOCAL flow: no packets, it is done the moment it starts (its duration was its hold). */
static void run_local(rs_transport *tp, rs_flows *fs, uint64_t id)
{
    rs_flow *f = &fs->f[id];
    fs->started++;
    f->r.start_ps = f->r.finish_ps = tp->net.eng.now_ps;
    f->r.req_host = (uint32_t)f->src;
    f->r.bytes_delivered = f->size;
    f->r.status = RS_WC_STATUS_SUCCESS;
    release(tp, fs, f, RS_WC_STATUS_SUCCESS);
}

static void on_complete(rs_flows *fs, rs_qp *qp, uint32_t status);

void rs_flows_on_complete(rs_flows *fs, rs_qp *qp, uint32_t status)
{
    if (!fs->lock) {
        on_complete(fs, qp, status);
        return;
    }
    pthread_mutex_lock(fs->lock);
    on_complete(fs, qp, status);
    pthread_mutex_unlock(fs->lock);
}

static void on_complete(rs_flows *fs, rs_qp *qp, uint32_t status)
{
    rs_transport *tp = qp->host->tp; /* the requester's: in a partitioned run, its partition's */
    uint64_t id = rs_qp_swqe(qp, 0)->wr_id; /* the head WQE: the flow ids are the wr_ids */
    rs_flow *f = &fs->f[id];
    if (f->r.status != RS_FLOW_RUNNING)
        return; /* a flush after the flow already ended */
    live_counters(tp, f, id, &f->r);
    if (f->verb == RS_FLOW_READ && status == RS_WC_STATUS_SUCCESS)
        f->r.bytes_delivered = f->size;
    f->r.status = status;
    f->r.finish_ps = tp->net.eng.now_ps;
    f->r.pause_ps = src_paused_ps(tp, f) - f->pause0;
    run_list_remove(fs, f);
    if (f->chain_next) {
        /* the pair carries on with the next flow: its share of the counters begins now if it
         * was posted already (else at its post) */
        rs_flow *nx = &fs->f[f->chain_next - 1];
        if (nx->r.status == RS_FLOW_RUNNING)
            pair_counters(tp, nx, &nx->retx0, &nx->cnps0);
        f->r.req_qpn = f->r.resp_qpn = 0;
    } else {
        /* the QP pair is destroyed at the next flow event, outside the completer */
        reap_later(tp, fs, f, id);
    }
    release(tp, fs, f, status);
    arm(tp, fs);
}

/* The work-completion status of a UET message's SES return code (uet/ses.c). */
static uint32_t uet_status(uint8_t rc) { return rs_ses_wc_status(rc); }

/* An Ultra Ethernet flow's message got its SES response (its PDC is released here). */
/* A UET flow ends with status and bytes delivered (c: its PDC, released unless keep). */
static void uet_finish(rs_flows *fs, rs_flow *f, uint64_t flow_ref, const rs_pdc *c, uint32_t status,
                       uint64_t bytes, int keep);

static void on_uet_complete(void *ctx, uint64_t flow_ref, const rs_pdc *c)
{
    rs_flows *fs = ctx;
    rs_flow *f = &fs->f[flow_ref - 1];
    if (c->read_role && c->ses_rc != RS_UET_RC_OK && f->r.status == RS_FLOW_RUNNING && f->pdc == c) {
        /* a READ that failed: refused by the data holder (its response's return code), or its PDC
         * unknown there */
        uet_finish(fs, f, flow_ref, c, uet_status(c->ses_rc), 0, 0);
        return;
    }
    if (c->read_role) { /* a READ's request or responses acknowledged: the PDC goes (its flow ended
                         * when the reader had every byte, on_uet_received) */
        if (f->pdc == c)
            f->pdc = NULL;
        rs_uet_release(fs->uet, (rs_pdc *)(uintptr_t)c);
        return;
    }
    if (f->r.status != RS_FLOW_RUNNING || f->pdc != c)
        return;
    uint32_t status = c->prm.mode == RS_UET_UUD ? RS_WC_STATUS_SUCCESS : uet_status(c->ses_rc);
    uet_finish(fs, f, flow_ref, c, status, c->ses_mod_len, 0); /* the bytes the target placed (0 after an error) */
}

static void uet_finish(rs_flows *fs, rs_flow *f, uint64_t flow_ref, const rs_pdc *c, uint32_t status,
                       uint64_t bytes, int keep)
{
    rs_transport *tp = fs->tp;
    live_counters(tp, f, flow_ref - 1, &f->r);
    if (c->prm.mode == RS_UET_UUD) { /* unreliable: what arrived, and what the fabric lost */
        f->r.uet_lost = c->st.pkts_sent - c->st.pkts_rcvd;
    } else {
        f->r.bytes_delivered = bytes;
    }
    f->r.status = status;
    f->r.finish_ps = tp->net.eng.now_ps;
    f->r.pause_ps = src_paused_ps(tp, f) - f->pause0;
    f->r.resp_qpn = c->dst_id; /* learnt from the target's first ACK (a SYN made it) */
    f->r.uet_nacks = c->st.nacks_rcvd;
    f->r.uet_trims = c->st.trims_rcvd;
    run_list_remove(fs, f);
    if (!keep)
        rs_uet_release(fs->uet, f->pdc);
    f->pdc = NULL;
    release(tp, fs, f, status);
    arm(tp, fs);
}

/* An Ultra Ethernet flow sent its last byte: the next flow of its connection (`after`) may start,
 * as the next work request of a QP's send queue goes once the one before it was sent. */
static void on_uet_sent(void *ctx, uint64_t flow_ref, const rs_pdc *c)
{
    rs_flows *fs = ctx;
    rs_flow *f = &fs->f[flow_ref - 1];
    /* (a one-packet message may go as its PDC starts, before start_uet_flow has recorded it) */
    int starting = !f->pdc && f->r.status == RS_FLOW_WAITING;
    if ((f->pdc != c && !starting) || !f->chain_next)
        return;
    rs_flow *nx = &fs->f[f->chain_next - 1];
    uint64_t id = f->chain_next - 1;
    f->chain_next = 0; /* once */
    if (--nx->n_wait == 0)
        ready_push(fs, ready_at(nx, fs->tp->net.eng.now_ps), id);
    arm(fs->tp, fs);
}

/* An Ultra Ethernet flow's target has every byte: the flows waiting on its receipt count it. */
static void on_uet_received(void *ctx, uint64_t flow_ref, const rs_pdc *c)
{
    rs_flows *fs = ctx;
    rs_flow *f = &fs->f[flow_ref - 1];
    if (f->r.status != RS_FLOW_RUNNING || f->pdc != c)
        return;
    if (c->read_role == RS_UET_READ_REQ) { /* the data holder took the READ: its responses are the flow's */
        if (c->read_resp)
            f->pdc = c->read_resp;
        return;
    }
    received(fs->tp, fs, f);
    if (c->read_role == RS_UET_READ_RESP) { /* a READ ends when the reader has every byte */
        uet_finish(fs, f, flow_ref, c, uet_status(c->tgt_rc), c->tgt_rc == RS_UET_RC_OK ? c->msg_len : 0, 1);
        return;
    }
    arm(fs->tp, fs);
}

void rs_wl_flows_attach_uet(rs_flows *fs, rs_uet *u)
{
    fs->uet = u;
    u->flow_complete = on_uet_complete;
    u->flow_received = on_uet_received;
    u->flow_sent = on_uet_sent;
    u->flow_ctx = fs;
}

/* Free the QP pairs of the finished flows listed from *head (linked by reap_next). */
static void reap(rs_transport *tp, rs_flows *fs, uint64_t *head)
{
    while (*head) {
        rs_flow *f = &fs->f[*head - 1];
        *head = f->reap_next;
        int req = (int)f->r.req_host, resp = req == f->src ? f->dst : f->src;
        rs_qp *qa = rs_host_qp(tp->hosts[req], f->r.req_qpn);
        if (qa)
            rs_qp_release(tp, qa);
        f->r.req_qpn = 0;
        if (fs->part_defer && (fs->defer_all || tp->hosts[resp]->tp != tp)) {
            /* a run on threads: the responder's host runs in another partition, its QP goes at
             * the window's end (nothing reaches it after the finish: sim/par.c refuses lossy links) */
            uint64_t *dh = &fs->part_defer[fs->part_of_host[req]];
            f->reap_next = *dh;
            *dh = (uint64_t)(f - fs->f) + 1;
            continue;
        }
        rs_qp *qb = rs_host_qp(tp->hosts[resp], f->r.resp_qpn);
        if (qb)
            rs_qp_release(tp, qb);
        f->r.resp_qpn = 0;
    }
}

void rs_flows_install_result(rs_flows *fs, uint64_t id, const rs_flow_result *r)
{
    rs_flow *f = &fs->f[id];
    if (f->r.status == RS_FLOW_RUNNING && r->status != RS_FLOW_RUNNING && r->status != RS_FLOW_WAITING) {
        run_list_remove(fs, f);
        fs->finished++;
        if (r->status != RS_WC_STATUS_SUCCESS)
            fs->failed++;
    }
    f->r = *r;
}

uint64_t rs_flows_take_deferred(rs_flows *fs, uint32_t part)
{
    /* the list is in reverse order of the finishes: back to that order */
    uint64_t rev = 0, id = fs->part_defer[part];
    fs->part_defer[part] = 0;
    while (id) {
        rs_flow *f = &fs->f[id - 1];
        uint64_t next = f->reap_next;
        f->reap_next = rev;
        rev = id;
        id = next;
    }
    return rev;
}

void rs_flows_reap_deferred(rs_flows *fs, uint32_t parts)
{
    for (uint32_t i = 0; fs->part_defer && i < parts; i++) {
        for (uint64_t id = rs_flows_take_deferred(fs, i); id; id = fs->f[id - 1].reap_next) {
            rs_flow *f = &fs->f[id - 1];
            int req = (int)f->r.req_host, resp = req == f->src ? f->dst : f->src;
            rs_transport *tp = fs->tp->hosts[resp]->tp;
            rs_qp *qb = rs_host_qp(tp->hosts[resp], f->r.resp_qpn);
            if (qb)
                rs_qp_release(tp, qb);
            f->r.resp_qpn = 0;
        }
    }
}

void rs_flows_reap_event(rs_flow_reaper *rp)
{
    /* the requester host's transport (its partition's in a partitioned run): every flow listed
     * here was requested by that host */
    if (rp->head) {
        const rs_flow *f = &rp->fs->f[rp->head - 1];
        reap(rp->fs->tp->hosts[f->r.req_host]->tp, rp->fs, &rp->head);
    }
}

void rs_flows_event(rs_flows *fs)
{
    rs_transport *tp = fs->tp;
    int64_t t;
    uint64_t id;
    while (ready_peek(fs, &t, &id) && t <= tp->net.eng.now_ps) {
        ready_pop(fs, id);
        if (fs->f[id].verb == RS_FLOW_LOCAL) {
            run_local(tp, fs, id); /* dependents with no hold are due now: this loop starts them */
            continue;
        }
        if (start_flow(tp, fs, id) < 0) {
            tp->net.eng.failed = 1; /* the reason is in errmsg */
            return;
        }
    }
    arm(tp, fs);
}

/* ---- adding flows ---- */

static int grow(void **p, uint64_t n, size_t elem)
{
    void *q = realloc(*p, (size_t)n * elem);
    if (!q && n)
        return -1;
    *p = q;
    return 0;
}

/* Same ranges as rs_qp_modify / rs_qp_set_recovery: a knob they would refuse when the flow
 * starts (inside run, where the error could only stop the simulation) is refused here. */
static int check_uet(rs_transport *tp, const rs_flow_cfg *c)
{
    const rs_uet_params *u = &c->uet;
    if (tp->net.link_layer != RS_LL_ROCE)
        return rs_tp_fail(tp, RS_ERR_INVAL, "transport uet runs over Ethernet: this fabric is InfiniBand");
    if (u->mode > RS_UET_UUD)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet delivery mode %u outside 0..3 (RUD, ROD, RUDI, UUD)", u->mode);
    if (u->trim_ok && u->mode != RS_UET_RUD && u->mode != RS_UET_ROD)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet trim needs delivery mode RUD or ROD, not %u", u->mode);
    if (u->mtu < 64 || u->mtu > RS_MAX_PAYLOAD)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet mtu %u bytes outside 64..%u", u->mtu, RS_MAX_PAYLOAD);
    if (u->window_bytes < u->mtu || u->window_bytes > (uint64_t)RS_PDS_SLOTS * u->mtu)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet window %u bytes outside mtu..%u x mtu (%llu)", u->window_bytes,
                          RS_PDS_SLOTS, (unsigned long long)RS_PDS_SLOTS * u->mtu);
    if (u->reorder_pkts < 1 || u->reorder_pkts > RS_PDS_SLOTS)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet reorder_pkts %u outside 1..%u", u->reorder_pkts, RS_PDS_SLOTS);
    if (u->ack_every < 1 || u->ack_every > RS_PDS_SLOTS)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet ack_every %u outside 1..%u", u->ack_every, RS_PDS_SLOTS);
    if (u->cc == RS_UET_CC_RCCC && u->mode != RS_UET_RUD && u->mode != RS_UET_ROD)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet cc RCCC with delivery mode %u: RUD (0) or ROD (1) only", u->mode);
    if (u->cc != RS_CC_NONE && u->cc != RS_CC_NSCC && u->cc != RS_UET_CC_RCCC)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet cc %u: %d = none, %d = NSCC, %u = RCCC", u->cc, RS_CC_NONE,
                          RS_CC_NSCC, RS_UET_CC_RCCC);
    if (u->cc == RS_CC_NSCC && (u->cc_base_rtt_ps <= 0 || u->cc_base_rtt_ps > RS_MAX_TIME_PS))
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet NSCC base RTT %lld ps outside 1..%lld",
                          (long long)u->cc_base_rtt_ps, (long long)RS_MAX_TIME_PS);
    if (u->rto_ps <= 0 || u->rto_ps > RS_MAX_TIME_PS)
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet rto %lld ps outside 1..%lld", (long long)u->rto_ps,
                          (long long)RS_MAX_TIME_PS);
    if (!u->rto_fixed && (u->rto_min_ps <= 0 || u->rto_max_ps < u->rto_min_ps || u->rto_max_ps > RS_MAX_TIME_PS))
        return rs_tp_fail(tp, RS_ERR_INVAL, "uet rto_min %lld ps / rto_max %lld ps: need 1 <= rto_min <= rto_max <= %lld",
                          (long long)u->rto_min_ps, (long long)u->rto_max_ps, (long long)RS_MAX_TIME_PS);
    return RS_OK;
}

static int check_cfg(rs_transport *tp, const rs_flow_cfg *c)
{
    if (c->transport > RS_FLOW_UET)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow transport %u: 0 = RoCE, 1 = UET", c->transport);
    if (c->transport == RS_FLOW_UET)
        return check_uet(tp, c);
    if (rs_mtu_bytes((int)c->path_mtu) == 0)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow path_mtu enum %u outside 1..5", c->path_mtu);
    if (c->timeout > 31)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow timeout %u outside 0..31", c->timeout);
    if (c->retry_cnt > 7)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow retry_cnt %u outside 0..7", c->retry_cnt);
    if (c->rnr_retry > 7)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow rnr_retry %u outside 0..7", c->rnr_retry);
    if (c->min_rnr_timer > 31)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow min_rnr_timer %u outside 0..31", c->min_rnr_timer);
    if (c->max_rd_atomic < 1 || c->max_rd_atomic > RS_FLOW_MAX_RD_ATOMIC)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow max_rd_atomic %u outside 1..%u", c->max_rd_atomic,
                          RS_FLOW_MAX_RD_ATOMIC);
    const rs_recovery_params *r = &c->recovery;
    if (r->mode == RS_RECOVERY_GBN)
        return RS_OK;
    if (r->mode != RS_RECOVERY_IRN && r->mode != RS_RECOVERY_OOO)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow recovery mode %u: 0 = Go-Back-N, 1 = IRN, 2 = OOO", r->mode);
    if (r->mode == RS_RECOVERY_OOO && (r->reorder_ps <= 0 || r->reorder_ps > RS_MAX_TIME_PS))
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow OOO reorder time %lld ps outside 1..%lld",
                          (long long)r->reorder_ps, (long long)RS_MAX_TIME_PS);
    if (r->window < 1 || r->window > RS_FLOW_MAX_IRN_WINDOW)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow IRN window %u outside 1..%u", r->window,
                          RS_FLOW_MAX_IRN_WINDOW);
    if (r->rto_low_ps <= 0 || r->rto_low_ps > RS_MAX_TIME_PS || r->rto_high_ps < r->rto_low_ps ||
        r->rto_high_ps > RS_MAX_TIME_PS)
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow IRN rto_low %lld ps, rto_high %lld ps: need 0 < rto_low <= "
                          "rto_high <= %lld", (long long)r->rto_low_ps, (long long)r->rto_high_ps,
                          (long long)RS_MAX_TIME_PS);
    return RS_OK;
}

/* Every array is checked before anything else reads it, in an order where each read is within
 * what the earlier checks proved: dep_ptr[0 .. n] first (within 0 .. n_deps, non-decreasing),
 * only then deps[dep_ptr[i] .. dep_ptr[i+1]). */
static int check_batch(rs_transport *tp, uint32_t n, const int32_t *src, const int32_t *dst, const uint64_t *size,
                       const int64_t *start_ps, const int64_t *hold_ps, const uint8_t *verb, const uint8_t *prio,
                       const int64_t *dep_ptr, const int32_t *deps, uint64_t n_deps, const uint8_t *dep_on,
                       const uint32_t *need, const uint32_t *after, const rs_flow_cfg *c)
{
    int rc = check_cfg(tp, c);
    if (rc < 0)
        return rc;
    if (n && (!src || !dst || !size || !start_ps || !verb || !prio))
        return rs_tp_fail(tp, RS_ERR_INVAL, "flow columns missing (NULL) for %u flows", n);
    for (uint32_t i = 0; i < n; i++) {
        if (verb[i] > RS_FLOW_LOCAL)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: verb %u outside 0..3 (WRITE, READ, SEND, LOCAL)", i,
                              verb[i]);
        int local = verb[i] == RS_FLOW_LOCAL;
        if (c->transport == RS_FLOW_UET && verb[i] == RS_FLOW_READ &&
            ((c->uet.mode != RS_UET_RUD && c->uet.mode != RS_UET_ROD) || c->uet.cc == RS_UET_CC_RCCC))
            return rs_tp_fail(tp, RS_ERR_INVAL,
                              "flow %u: verb READ with transport uet needs mode RUD or ROD and cc none or nscc", i);
        for (int end = 0; end < 2; end++) {
            int32_t h = end ? dst[i] : src[i];
            if (h < 0 || (uint32_t)h >= tp->n_hosts)
                return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: %s host %d outside 0..%d", i, end ? "dst" : "src",
                                  h, (int)tp->n_hosts - 1);
            if (local)
                continue; /* no packets: the host needs no link */
            if (!tp->hosts[h]->port.tx)
                return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: host %d has no link", i, h);
            if (tp->hosts[h]->scripted)
                return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: host %d is a scripted peer", i, h);
        }
        if (src[i] == dst[i] && !local)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: src and dst are both host %d (only a LOCAL flow may)", i,
                              src[i]);
        if (size[i] < (uint64_t)!local || size[i] > 0x7FFFFFFFu)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: size %llu outside %d..2147483647", i,
                              (unsigned long long)size[i], !local);
        if (hold_ps && (hold_ps[i] < 0 || hold_ps[i] > RS_MAX_TIME_PS))
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: hold %lld ps outside 0..%lld", i, (long long)hold_ps[i],
                              (long long)RS_MAX_TIME_PS);
        if (start_ps[i] < 0 || start_ps[i] > RS_MAX_TIME_PS)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: start %lld ps outside 0..%lld", i,
                              (long long)start_ps[i], (long long)RS_MAX_TIME_PS);
        if (prio[i] > 7)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: priority %u outside 0..7", i, prio[i]);
    }
    for (uint32_t i = 0; after && i < n; i++) {
        if (!after[i])
            continue;
        if (after[i] > i)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: after %u outside 0..%u (a flow earlier in the batch)", i,
                              after[i], i);
        uint32_t j = i - after[i];
        if (verb[i] == RS_FLOW_LOCAL || verb[j] != verb[i] || src[j] != src[i] || dst[j] != dst[i] ||
            prio[j] != prio[i])
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: after %u names flow %u, which is not on its connection "
                              "(same src, dst, verb and priority, not LOCAL)", i, after[i], j);
    }
    if (!dep_ptr) {
        if (n_deps)
            return rs_tp_fail(tp, RS_ERR_INVAL, "%llu dependencies but no dep_ptr", (unsigned long long)n_deps);
        for (uint32_t i = 0; need && i < n; i++)
            if (need[i])
                return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: need %u outside 0..0 (it has no dependencies)", i,
                                  need[i]);
        return RS_OK;
    }
    if (n_deps && !deps)
        return rs_tp_fail(tp, RS_ERR_INVAL, "dep_ptr names %llu dependencies but deps is NULL",
                          (unsigned long long)n_deps);
    if (n_deps > (uint64_t)INT64_MAX)
        return rs_tp_fail(tp, RS_ERR_INVAL, "%llu dependencies: too many", (unsigned long long)n_deps);
    if (dep_ptr[0] != 0)
        return rs_tp_fail(tp, RS_ERR_INVAL, "dep_ptr[0] = %lld: must be 0", (long long)dep_ptr[0]);
    for (uint32_t i = 0; i < n; i++)
        if (dep_ptr[i + 1] < dep_ptr[i] || dep_ptr[i + 1] > (int64_t)n_deps)
            return rs_tp_fail(tp, RS_ERR_INVAL, "dep_ptr[%u] = %lld: must be within dep_ptr[%u] = %lld .. %llu",
                              i + 1, (long long)dep_ptr[i + 1], i, (long long)dep_ptr[i],
                              (unsigned long long)n_deps);
    if ((uint64_t)dep_ptr[n] != n_deps)
        return rs_tp_fail(tp, RS_ERR_INVAL, "dep_ptr[%u] = %lld: must be the number of dependencies, %llu", n,
                          (long long)dep_ptr[n], (unsigned long long)n_deps);
    for (uint32_t i = 0; i < n; i++)
        for (int64_t k = dep_ptr[i]; k < dep_ptr[i + 1]; k++)
            if (deps[k] < 0 || (uint32_t)deps[k] >= n || (uint32_t)deps[k] == i)
                return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: dependency %d is not another flow of the batch",
                                  i, deps[k]);
    for (uint64_t k = 0; dep_on && k < n_deps; k++)
        if (dep_on[k] > RS_DEP_RECEIVED)
            return rs_tp_fail(tp, RS_ERR_INVAL, "dependency %llu: dep_on %u outside 0..1 (done, received)",
                              (unsigned long long)k, dep_on[k]);
    for (uint32_t i = 0; need && i < n; i++)
        if ((int64_t)need[i] > dep_ptr[i + 1] - dep_ptr[i])
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: need %u outside 0..%lld (its dependencies; 0 = all)", i,
                              need[i], (long long)(dep_ptr[i + 1] - dep_ptr[i]));
    return RS_OK;
}

/* Kahn's algorithm over the batch just laid out in fs->f[base ..] and its reverse edges: a flow
 * on a cycle would wait forever, so the batch is refused.  Scratch memory only at add time. */
static int check_acyclic(rs_transport *tp, const rs_flows *fs, uint64_t base, uint32_t n)
{
    uint32_t *wait = malloc((size_t)n * sizeof(*wait)), *queue = malloc((size_t)n * sizeof(*queue));
    uint32_t *left = malloc((size_t)n * sizeof(*left)); /* dependency events still needed */
    if (!wait || !queue || !left) {
        free(wait);
        free(queue);
        free(left);
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory checking %u flows for dependency cycles", n);
    }
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < n; i++) {
        wait[i] = fs->f[base + i].n_wait;
        left[i] = fs->f[base + i].dep_left;
        if (!wait[i])
            queue[tail++] = i;
    }
    while (head < tail) {
        const rs_flow *f = &fs->f[base + queue[head++]];
        for (uint64_t k = f->rdep_begin; k < f->rdep_begin + f->rdep_n; k++) {
            uint32_t d = (uint32_t)(fs->rdeps[k] - base); /* its receipt and completion both come */
            if (left[d] && --left[d] == 0 && --wait[d] == 0)
                queue[tail++] = d;
        }
        if (f->chain_next) { /* the next flow on its QP pair waits for its post */
            uint32_t d = (uint32_t)(f->chain_next - 1 - base);
            if (--wait[d] == 0)
                queue[tail++] = d;
        }
    }
    int rc = RS_OK;
    if (tail < n) {
        uint32_t first = 0;
        while (!wait[first])
            first++;
        rc = rs_tp_fail(tp, RS_ERR_INVAL, "dependency cycle: %u flows (the first is flow %u) wait for each other",
                        n - tail, first);
    }
    free(wait);
    free(queue);
    free(left);
    return rc;
}

static void on_flow_complete(void *ctx, rs_qp *qp, uint32_t status) { rs_flows_on_complete(ctx, qp, status); }
static void on_flow_received(void *ctx, rs_qp *qp) { rs_flows_on_received(ctx, qp); }

/* The flow table, created at first use: it registers its completion hook with the transport. */
static rs_flows *flows_of(rs_transport *tp, rs_flows **table, int *done)
{
    if (!*table) {
        rs_flows *fs = calloc(1, sizeof(rs_flows));
        if (fs) {
            fs->tp = tp;
            fs->done = done;
            fs->timer.owner = fs;
            fs->timer.kind = RS_EV_FLOWS;
            tp->flow_complete = on_flow_complete; /* the transport's calls up (transport/qp.c) */
            tp->flow_received = on_flow_received;
            tp->flow_ctx = fs;
        }
        *table = fs;
    }
    return *table;
}

int64_t rs_wl_flows_add(rs_transport *tp, rs_flows **table, int *done, uint32_t n, const int32_t *src,
                        const int32_t *dst, const uint64_t *size, const int64_t *start_ps,
                        const int64_t *hold_ps, const uint8_t *verb,
                        const uint8_t *prio, const int64_t *dep_ptr, const int32_t *deps, uint64_t n_deps,
                        const uint8_t *dep_on, const uint32_t *need, const uint32_t *after, const rs_flow_cfg *cfg)
{
    if (!cfg)
        return RS_ERR_INVAL;
    int rc = check_batch(tp, n, src, dst, size, start_ps, hold_ps, verb, prio, dep_ptr, deps, n_deps, dep_on, need,
                         after, cfg);
    if (rc < 0)
        return rc;
    rs_flows *fs = flows_of(tp, table, done);
    if (!fs)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    uint64_t base = fs->n, total = fs->n + n;
    if (grow((void **)&fs->f, total, sizeof(rs_flow)) || grow((void **)&fs->heap_t, total, sizeof(int64_t)) ||
        grow((void **)&fs->heap_id, total, sizeof(uint64_t)) || grow((void **)&fs->fifo_t, total, sizeof(int64_t)) ||
        grow((void **)&fs->fifo_id, total, sizeof(uint64_t)) ||
        grow((void **)&fs->rdeps, fs->n_rdeps + n_deps, sizeof(uint64_t)) ||
        grow((void **)&fs->rdep_on, fs->n_rdeps + n_deps, sizeof(uint8_t)) ||
        grow((void **)&fs->cfgs, fs->n_cfgs + 1, sizeof(rs_flow_cfg)))
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for %u flows", n);
    fs->cfgs[fs->n_cfgs] = *cfg;
    for (uint32_t i = 0; i < n; i++) {
        rs_flow *f = &fs->f[base + i];
        memset(f, 0, sizeof(*f));
        f->src = src[i];
        f->dst = dst[i];
        f->size = size[i];
        f->start_ps = start_ps[i];
        f->hold_ps = hold_ps ? hold_ps[i] : 0;
        f->verb = verb[i];
        f->prio = prio[i];
        f->cfg = fs->n_cfgs;
        f->dep_left = dep_ptr ? (uint32_t)(dep_ptr[i + 1] - dep_ptr[i]) : 0;
        if (need && need[i])
            f->dep_left = need[i];
        f->n_wait = f->dep_left ? 1 : 0;
        f->r.start_ps = f->r.finish_ps = -1;
        f->r.status = RS_FLOW_WAITING;
    }
    /* connections: each flow names the one before it; chain_len goes to a chain's first flow */
    for (uint32_t i = 0; after && i < n; i++) {
        if (!after[i])
            continue;
        rs_flow *p = &fs->f[base + i - after[i]];
        if (p->chain_next)
            return rs_tp_fail(tp, RS_ERR_INVAL,
                              "flows %llu and %u both come after flow %u on its connection: one QP pair "
                              "posts its flows one after the other",
                              (unsigned long long)(p->chain_next - 1 - base), i, i - after[i]);
        p->chain_next = base + i + 1;
        fs->f[base + i].n_wait++;
    }
    for (uint32_t i = 0; after && i < n; i++) {
        if (after[i] || !fs->f[base + i].chain_next)
            continue;
        uint64_t len = 1;
        for (uint64_t at = fs->f[base + i].chain_next; at; at = fs->f[at - 1].chain_next)
            len++;
        if (len > RS_FLOW_MAX_CHAIN)
            return rs_tp_fail(tp, RS_ERR_INVAL, "flow %u: %llu flows on one connection (QP pair), at most %u", i,
                              (unsigned long long)len, RS_FLOW_MAX_CHAIN);
        fs->f[base + i].chain_len = (uint32_t)len;
    }
    /* reverse edges (who waits for flow j), laid out per flow in rdeps */
    if (n_deps) {
        for (uint64_t k = 0; k < n_deps; k++)
            fs->f[base + (uint32_t)deps[k]].rdep_n++;
        uint64_t at = fs->n_rdeps;
        for (uint32_t j = 0; j < n; j++) {
            fs->f[base + j].rdep_begin = at;
            at += fs->f[base + j].rdep_n;
            fs->f[base + j].rdep_n = 0;
        }
        for (uint32_t i = 0; i < n; i++)
            for (int64_t k = dep_ptr[i]; k < dep_ptr[i + 1]; k++) {
                rs_flow *d = &fs->f[base + (uint32_t)deps[k]];
                fs->rdep_on[d->rdep_begin + d->rdep_n] = dep_on ? dep_on[k] : RS_DEP_DONE;
                fs->rdeps[d->rdep_begin + d->rdep_n++] = base + i;
            }
        fs->n_rdeps += n_deps;
    }
    /* nothing is committed yet (fs->n, n_rdeps, n_cfgs unchanged): refusing leaves no trace */
    if ((n_deps || after) && (rc = check_acyclic(tp, fs, base, n)) < 0) {
        fs->n_rdeps -= n_deps;
        return rc;
    }
    fs->n_cfgs++;
    fs->n = total;
    for (uint32_t i = 0; i < n; i++)
        if (fs->f[base + i].n_wait == 0)
            ready_push(fs, ready_at(&fs->f[base + i], tp->net.eng.now_ps), base + i);
    arm(tp, fs);
    return tp->net.eng.failed ? RS_ERR_NOMEM : (int64_t)base;
}

/* ---- reading ---- */

int rs_wl_flows_results(const rs_transport *tp, const rs_flows *fs, uint64_t first, uint32_t n,
                        rs_flow_result *out)
{
    uint64_t have = fs ? fs->n : 0;
    if (first > have || n > have - first)
        return rs_tp_fail((rs_transport *)tp, RS_ERR_INVAL, "flows %llu..%llu: only %llu flows",
                          (unsigned long long)first, (unsigned long long)(first + n), (unsigned long long)have);
    for (uint32_t i = 0; i < n; i++) {
        const rs_flow *f = &fs->f[first + i];
        out[i] = f->r;
        if (f->r.status == RS_FLOW_RUNNING) {
            live_counters(tp, f, first + i, &out[i]);
            rs_pause_stats st;
            const rs_host *h = tp->hosts[f->src];
            rs_pause_stats_now(&h->port, tp->net.eng.now_ps, &st);
            out[i].pause_ps = st.paused_ps[rs_port_dscp_prio(&h->port, (uint8_t)(8u * f->prio))] - f->pause0;
        }
    }
    return RS_OK;
}

size_t rs_wl_flows_bytes_per_flow(void)
{
    /* the arrays rs_wl_flows_add grows by one element per flow */
    return sizeof(rs_flow) + 2 * sizeof(int64_t) + 2 * sizeof(uint64_t);
}

void rs_wl_flows_get_counts(const rs_flows *fs, rs_flows_counts *out)
{
    *out = (rs_flows_counts){0};
    if (fs)
        *out = (rs_flows_counts){fs->n, fs->started, fs->finished, fs->failed};
}

void rs_wl_flows_stop_when_done(rs_transport *tp, rs_flows **table, int *done, int on)
{
    rs_flows *fs = flows_of(tp, table, done);
    if (fs)
        fs->stop_when_done = on;
}

uint32_t rs_wl_flows_sample(const rs_transport *tp, const rs_flows *fs, uint32_t cap, uint64_t *ids,
                            uint64_t *bytes, double *rate_bps)
{
    uint32_t k = 0;
    for (uint64_t at = fs ? fs->run_head : 0; at && k < cap; at = fs->f[at - 1].run_next) {
        uint64_t i = at - 1;
        const rs_flow *f = &fs->f[i];
        rs_flow_result r = f->r;
        live_counters(tp, f, i, &r);
        int data_host = f->src;
        uint32_t data_qpn = f->verb == RS_FLOW_READ ? f->r.resp_qpn : f->r.req_qpn;
        ids[k] = i;
        bytes[k] = r.bytes_delivered;
        rate_bps[k] = f->pdc ? 0.0 : rs_tp_qp_rate_bps(tp, data_host, data_qpn); /* UET: a window, no pacer */
        k++;
    }
    return k;
}

int rs_wl_flows_uet_bytes(const rs_transport *tp, const rs_flows *fs, uint64_t id, const uint8_t **src,
                          uint64_t *src_len, const uint8_t **dst, uint64_t *dst_len)
{
    if (!fs || id >= fs->n || !fs->f[id].ubuf)
        return rs_tp_fail((rs_transport *)tp, RS_ERR_INVAL, "flow %llu has no UET buffers (uet place)",
                          (unsigned long long)id);
    const rs_flow *f = &fs->f[id];
    const rs_uet_params *u = &fs->cfgs[f->cfg].uet;
    *src = f->ubuf;
    *src_len = f->size;
    *dst = f->ubuf + f->size;
    *dst_len = u->target_bytes ? u->target_bytes : f->size;
    return RS_OK;
}

void rs_flows_free(rs_flows *fs)
{
    if (!fs)
        return;
    for (uint64_t i = 0; i < fs->n; i++)
        free(fs->f[i].ubuf);
    free(fs->f);
    free(fs->heap_t);
    free(fs->heap_id);
    free(fs->fifo_t);
    free(fs->fifo_id);
    free(fs->rdeps);
    free(fs->rdep_on);
    free(fs->cfgs);
    for (uint32_t i = 0; i < fs->n_hostres; i++)
        free(fs->hostres[i].reaper);
    free(fs->hostres);
    free(fs);
}
