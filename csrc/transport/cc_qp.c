/* Congestion control of a QP: the NIC around an rs_cc_algo (rdmasim/cc.h).
 *
 * Reaction point: CNPs and sent bytes go to the algorithm; its rate paces the QP's request
 * packets (each packet delays the next by its wire time at that rate; at line rate nothing
 * is delayed).  Notification point: a CE-marked packet arriving for a QP makes the
 * responder send one CNP to the sending QP, at most once per cnp_interval.
 *
 * The algorithm's timers run lazily, without events: before anything reads or changes its state
 * (a packet sent, a CNP, a query) the deadlines that have passed are applied, in time order
 * (rs_cc_algo.on_timer takes every deadline up to `now`).  That is exact because a timer changes
 * only the algorithm's state, which nothing else sees in between: the pacer computes a packet's
 * release time when the packet before it goes, from the rate at that moment.  A tie between a
 * deadline and a CNP or a send at the same picosecond applies the deadline first.  So a QP costs no
 * events while rate limited, however many QPs there are.
 *
 * ACK events and the window (for algorithms with RS_CC_WANTS_ACKS / a window_bytes): a request
 * asks for the echo (rs_pkt.cc_want) and, with RS_CC_WANTS_RTT, carries its send time unless it is
 * a retransmission (Karn); the responder copies the last accepted request's stamp and CE mark into
 * its next ACK, with the CE-marked bytes since its previous ACK.  Bytes in flight are request
 * payload positions (rs_swqe.stream_off): the next byte to send minus the first unacknowledged
 * one, exact under Go-Back-N rewinds without a running count to keep right. */
#include "transport/transport.h"

#include "rdmasim/ib.h"

#include <string.h>

static double line_rate(const rs_qp *qp)
{
    const rs_port *port = &qp->host->port;
    return port->tx ? (double)port->tx->rate_bps : 0.0;
}

/* The host's parameters for the QP's algorithm (each kind has its own). */
static const void *params_of(const rs_qp *qp) { return qp->host->cc.params[qp->cc->kind]; }

/* Apply the algorithm's deadlines up to now (see the file comment).  Only the state behind
 * qp->cc_state changes, so a const QP will do (the window test runs from rs_req_can_send). */
static void catch_up(int64_t now_ps, const rs_qp *qp)
{
    const rs_cc_algo *a = qp->cc;
    if (!a->next_timer_ps)
        return;
    int64_t t = a->next_timer_ps(qp->cc_state);
    if (t && t <= now_ps)
        a->on_timer(qp->cc_state, params_of(qp), now_ps);
}

double rs_cc_rate_now(const rs_transport *tp, rs_qp *qp)
{
    if (!qp->cc)
        return 0.0;
    catch_up(tp->net.eng.now_ps, qp);
    return qp->cc->rate_bps(qp->cc_state, params_of(qp));
}

int rs_cc_qp_reserve(rs_transport *tp, rs_qp *qp)
{
    if (qp->cc_state || !rs_cc_algo_get(qp->host->cc.kind))
        return RS_OK;
    if (qp->has_cc_room) {
        qp->cc_state = qp->cc_room;
        return RS_OK;
    }
    /* created before its host turned CC on: a block of its own (no prefetch for it) */
    qp->cc_state = rs_slab_alloc(&tp->cc_slab);
    if (!qp->cc_state)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for the congestion control state of QP 0x%x",
                          qp->qpn);
    return RS_OK;
}

void rs_cc_qp_start(rs_transport *tp, rs_qp *qp)
{
    const rs_host *h = qp->host;
    qp->cc = rs_cc_algo_get(h->cc.kind);
    qp->next_tx_ps = 0;
    if (qp->cc) {
        memset(qp->cc_state, 0, RS_CC_STATE_BYTES);
        qp->cc->init(qp->cc_state, h->cc.params[qp->cc->kind], line_rate(qp), tp->net.eng.now_ps);
    }
}

void rs_cc_qp_release(rs_transport *tp, rs_qp *qp)
{
    rs_cc_resp_drop_int(tp, qp);
    if (qp->cc_state && qp->cc_state != qp->cc_room)
        rs_slab_put(&tp->cc_slab, qp->cc_state);
    qp->cc_state = NULL;
    qp->cc = NULL;
}

void rs_cc_on_cnp(rs_transport *tp, rs_qp *qp)
{
    qp->stats.cnps_rcvd++;
    if (!qp->cc)
        return;
    if (!qp->cc->on_cnp)
        return;
    const void *params = params_of(qp);
#ifdef RDMASIM_MUTANTS /* dcqcn_no_floor: the rate cut forgets the min-rate clamp */
    rs_dcqcn_params p;
    if (qp->cc->kind == RS_CC_DCQCN && RS_MUTANT(&tp->net.eng, RS_MUT_DCQCN_NO_FLOOR)) {
        memcpy(&p, params, sizeof p);
        p.min_rate_bps = 0.0;
        params = &p;
    }
#endif
    catch_up(tp->net.eng.now_ps, qp);
    qp->cc->on_cnp(qp->cc_state, params, tp->net.eng.now_ps);
}

void rs_cc_on_loss(rs_transport *tp, rs_qp *qp, uint64_t lost_bytes, int trimmed)
{
    if (!qp->cc || !qp->cc->on_loss)
        return;
    catch_up(tp->net.eng.now_ps, qp);
    qp->cc->on_loss(qp->cc_state, params_of(qp), tp->net.eng.now_ps, lost_bytes, trimmed);
}

/* Whether a request with `payload` bytes sets the A bit for the algorithm: an ACK for every request
 * (ns-3 HPCC's L2_ACK_INTERVAL 1) unless the algorithm picks fewer: feedback per packet, and a
 * window never waits for the A bit's 66-packet cadence (requester.c).  The bytes in flight are
 * computed only for an algorithm that reads them. */
static int asks_for_ack(rs_qp *qp, uint32_t payload)
{
    const rs_cc_algo *a = qp->cc;
    const void *prm = params_of(qp);
    if (!a->ack_request || (a->ack_all && a->ack_all(prm)))
        return 1;
    uint64_t inflight = (a->flags & RS_CC_ASKS_BLIND) ? 0 : rs_req_next_pos(qp) - rs_req_acked_pos(qp);
    return a->ack_request(qp->cc_state, prm, payload, inflight);
}

void rs_cc_on_request_sent(rs_transport *tp, rs_qp *qp, rs_pkt *p, uint32_t wire_bytes, int retx)
{
    const rs_cc_algo *a = qp->cc;
    if (!a)
        return;
    catch_up(tp->net.eng.now_ps, qp);
    if (a->flags & RS_CC_WANTS_ACKS) {
        if (asks_for_ack(qp, p->payload_len)) {
            p->ackreq = 1;
            qp->since_ackreq = 0;
        }
        p->cc_want = 1;
        if ((a->flags & RS_CC_WANTS_RTT) && !retx) {
            p->cc_stamped = 1;
            p->cc_tx_ps = tp->net.eng.now_ps;
        }
        /* an empty INT stack the switches on its path fill in (out of memory: no INT, the
         * algorithm sees an ACK without it) */
        if ((a->flags & RS_CC_WANTS_INT) && !p->intel)
            (void)rs_pkt_attach_int(&tp->pool, p);
    }
    if (a->on_sent)
        a->on_sent(qp->cc_state, params_of(qp), wire_bytes, tp->net.eng.now_ps);
    double rate = qp->cc->rate_bps(qp->cc_state, params_of(qp)), line = line_rate(qp);
    if (rate <= 0 || rate >= line) {
        qp->next_tx_ps = 0;
    } else {
        /* the next packet may start once this one would have finished at the paced rate */
        int64_t start = qp->next_tx_ps > tp->net.eng.now_ps ? qp->next_tx_ps : tp->net.eng.now_ps;
        qp->next_tx_ps = start + (int64_t)((double)wire_bytes * 8.0 * 1e12 / rate + 0.5);
    }
}

void rs_cc_np_on_ce(rs_transport *tp, rs_qp *qp)
{
    const rs_cc_config *c = &qp->host->cc;
    qp->stats.ce_rcvd++;
    if (!c->np_enabled)
        return;
    int64_t interval = c->cnp_interval_ps;
#ifdef RDMASIM_MUTANTS /* cnp_half_interval: shift off by one */
    interval = RS_MUTANT(&tp->net.eng, RS_MUT_CNP_HALF_INTERVAL) ? interval >> 1 : interval;
#endif
    if (qp->last_cnp_ps >= 0 && tp->net.eng.now_ps - qp->last_cnp_ps < interval)
        return;
    rs_pkt *cnp = rs_nic_new_packet(tp, qp, RS_OP_CNP, 0);
    if (!cnp)
        return;
    cnp->becn = 1; /* RoCEv2 annex A17: BECN set, PSN 0, 16 reserved bytes */
    rs_link_frame_dscp(cnp, c->cnp_dscp);
    qp->last_cnp_ps = tp->net.eng.now_ps;
    qp->stats.cnps_sent++;
    rs_nic_send_ctrl(tp, qp->host, cnp);
}

/* ---- ACK events and the window ---- */

static inline const rs_swqe *sq_at(const rs_qp *qp, uint32_t i)
{
    return &qp->sq[rs_qp_sq_slot(qp, i)];
}

uint64_t rs_req_next_pos(const rs_qp *qp)
{
    if (qp->req_idx >= qp->sq_count)
        return qp->sq_stream_end;
    const rs_swqe *w = sq_at(qp, qp->req_idx);
    return w->stream_off + (rs_swqe_req_bytes(w) ? qp->req_off : 0);
}

uint64_t rs_req_acked_pos(const rs_qp *qp)
{
    if (!qp->sq_count)
        return qp->sq_stream_end;
    const rs_swqe *w = &qp->sq[qp->sq_head]; /* the head: sq_head < max_send_wr */
    if (!w->started)
        return w->stream_off;
    uint64_t bytes = rs_swqe_req_bytes(w);
    int32_t d = bytes ? rs_psn_diff(qp->comp_psn, w->first_psn) : 0;
    if (d <= 0)
        return w->stream_off;
    uint64_t done = (uint64_t)d * qp->pmtu;
    return w->stream_off + (done < bytes ? done : bytes);
}

int rs_cc_window_check(const rs_transport *tp, const rs_qp *qp, const rs_swqe *next)
{
    catch_up(tp->net.eng.now_ps, qp);
    uint64_t win = qp->cc->window_bytes(qp->cc_state, params_of(qp));
    if (win == 0 || win == UINT64_MAX)
        return 1;
    /* the next packet's payload and its stream position (rs_req_next_pos) from its WQE */
    uint64_t bytes = rs_swqe_req_bytes(next), off = bytes ? qp->req_off : 0, left = bytes - off;
    uint64_t next_pos = next->stream_off + off, len = left < qp->pmtu ? left : qp->pmtu;
    /* each PSN in flight carries at most one PMTU of request payload: when even that bound fits,
     * the head WQE (rs_req_acked_pos) need not be read.  After a rewind the completer's PSN may
     * be past the requester's (psns < 0): then the exact test below decides. */
    int32_t psns = rs_psn_diff(qp->req_psn, qp->comp_psn);
    if (psns >= 0 && (uint64_t)psns * qp->pmtu + len <= win)
        return 1;
    uint64_t inflight = next_pos - rs_req_acked_pos(qp);
    if (inflight == 0)
        return 1; /* a window below one packet still lets one go */
    return inflight + len <= win;
}

void rs_cc_resp_echo(rs_qp *qp, rs_pkt *a)
{
    if (!qp->rx_cc_want)
        return;
    a->cc_tx_ps = qp->rx_cc_tx_ps;
    a->cc_stamped = qp->rx_cc_stamped;
    a->cc_ce_echo = qp->rx_cc_ce;
    a->cc_ce_bytes = qp->rx_cc_ce_bytes;
    a->intel = qp->rx_int; /* moved, not copied: the ACK returns it to the pool */
    qp->rx_int = NULL;
    /* used up: a later ACK without a new request (a duplicate's re-ACK) carries no sample */
    qp->rx_cc_stamped = 0;
    qp->rx_cc_ce = 0;
    qp->rx_cc_ce_bytes = 0;
}

void rs_cc_resp_keep_int(rs_transport *tp, rs_qp *qp, rs_pkt *pkt)
{
    /* moved, not copied: the packet is released without it, the next ACK takes it along */
    if (qp->rx_int)
        rs_pool_put_int(&tp->pool, qp->rx_int);
    qp->rx_int = pkt->intel;
    pkt->intel = NULL;
}

void rs_cc_resp_drop_int(rs_transport *tp, rs_qp *qp)
{
    if (qp->rx_int)
        rs_pool_put_int(&tp->pool, qp->rx_int);
    qp->rx_int = NULL;
}

void rs_cc_on_ack(rs_transport *tp, rs_qp *qp, const rs_cc_echo *echo, uint32_t psn, uint64_t una_before_bytes)
{
    const rs_cc_algo *a = qp->cc;
    int64_t now = tp->net.eng.now_ps;
    uint64_t una = rs_req_acked_pos(qp);
    rs_cc_ack ack = {
        .now_ps = now,
        .rtt_ps = echo->stamped ? now - echo->tx_ps : -1,
        .acked_bytes = una > una_before_bytes ? una - una_before_bytes : 0,
        .inflight_bytes = rs_req_next_pos(qp) - una,
        .ack_psn = psn,
        .snd_nxt_psn = qp->req_psn,
        .ce_bytes = echo->ce_bytes,
        .ce_echo = echo->ce,
        .intel = echo->intel,
    };
    catch_up(now, qp);
    if (a->on_ack)
        a->on_ack(qp->cc_state, params_of(qp), &ack);
    /* the window may have opened: the caller (completer.c) wakes the QP once, after the ACK */
}

static rs_host *get_host(const rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

int rs_tp_host_set_cc(rs_transport *tp, int host, int kind, const void *params, size_t params_size,
                      int np_enabled, int64_t cnp_interval_ps, uint32_t cnp_dscp)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (kind < 0 || kind >= RS_CC_COUNT)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control kind %d unknown (0..%d)", kind, RS_CC_COUNT - 1);
    const rs_cc_algo *a = rs_cc_algo_get(kind);
    if (kind != RS_CC_NONE && !a)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control '%s' is not built in", rs_cc_kind_name(kind));
    if (a && (!params || params_size != a->params_size))
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control '%s' needs its parameters (%zu bytes, got %zu)",
                          a->name, a->params_size, params ? params_size : (size_t)0);
    if (cnp_interval_ps < 0 || cnp_dscp > 63)
        return rs_tp_fail(tp, RS_ERR_INVAL, "cnp_interval must be >= 0 and cnp_dscp in 0..63");
    h->cc.kind = kind;
    if (a)
        memcpy(h->cc.params[kind], params, params_size);
    h->cc.np_enabled = np_enabled != 0;
    h->cc.cnp_interval_ps = cnp_interval_ps;
    h->cc.cnp_dscp = (uint8_t)cnp_dscp;
    return RS_OK;
}

double rs_tp_qp_rate_bps(const rs_transport *tp, int host, uint32_t qpn)
{
    rs_host *h = get_host(tp, host);
    rs_qp *qp = h ? rs_host_qp(h, qpn) : NULL;
    return qp ? rs_cc_rate_now(tp, qp) : 0.0;
}

int rs_tp_qp_dcqcn_state(const rs_transport *tp, int host, uint32_t qpn, rs_dcqcn_rp *out)
{
    rs_host *h = get_host(tp, host);
    rs_qp *qp = h ? rs_host_qp(h, qpn) : NULL;
    if (!qp || qp->cc != rs_cc_algo_get(RS_CC_DCQCN))
        return 0;
    catch_up(tp->net.eng.now_ps, qp);
    *out = *(const rs_dcqcn_rp *)qp->cc_state;
    out->alpha = rs_dcqcn_alpha(out, params_of(qp));
    return 1;
}

int rs_tp_qp_cc_state(const rs_transport *tp, int host, uint32_t qpn, void *out, size_t cap, int *kind)
{
    rs_host *h = get_host(tp, host);
    rs_qp *qp = h ? rs_host_qp(h, qpn) : NULL;
    if (!qp || !qp->cc)
        return 0;
    catch_up(tp->net.eng.now_ps, qp);
    memcpy(out, qp->cc_state, cap < qp->cc->state_size ? cap : qp->cc->state_size);
    *kind = qp->cc->kind;
    return 1;
}
