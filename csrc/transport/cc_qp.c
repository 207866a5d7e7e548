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
 * events while rate limited, however many QPs there are. */
#include "transport/transport.h"

#include "rdmasim/ib.h"

static double line_rate(const rs_qp *qp)
{
    const rs_port *port = &qp->host->port;
    return port->tx ? (double)port->tx->rate_bps : 0.0;
}

/* Apply the algorithm's deadlines up to now (see the file comment). */
static void catch_up(int64_t now_ps, rs_qp *qp)
{
    int64_t t = qp->cc->next_timer_ps(qp->cc_state);
    if (t && t <= now_ps)
        qp->cc->on_timer(qp->cc_state, &qp->host->cc.dcqcn, now_ps);
}

double rs_cc_rate_now(const rs_transport *tp, rs_qp *qp)
{
    if (!qp->cc)
        return 0.0;
    catch_up(tp->net.eng.now_ps, qp);
    return qp->cc->rate_bps(qp->cc_state);
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
    if (qp->cc)
        qp->cc->init(qp->cc_state, &h->cc.dcqcn, line_rate(qp));
}

void rs_cc_qp_release(rs_transport *tp, rs_qp *qp)
{
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
    rs_dcqcn_params p = qp->host->cc.dcqcn;
#ifdef RDMASIM_MUTANTS /* dcqcn_no_floor: the rate cut forgets the min-rate clamp */
    if (RS_MUTANT(&tp->net.eng, RS_MUT_DCQCN_NO_FLOOR))
        p.min_rate_bps = 0.0;
#endif
    catch_up(tp->net.eng.now_ps, qp);
    qp->cc->on_cnp(qp->cc_state, &p, tp->net.eng.now_ps);
}

void rs_cc_on_request_sent(rs_transport *tp, rs_qp *qp, uint32_t wire_bytes)
{
    if (!qp->cc)
        return;
    catch_up(tp->net.eng.now_ps, qp);
    qp->cc->on_sent(qp->cc_state, &qp->host->cc.dcqcn, wire_bytes, tp->net.eng.now_ps);
    double rate = qp->cc->rate_bps(qp->cc_state), line = line_rate(qp);
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

static rs_host *get_host(const rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

int rs_tp_host_set_cc(rs_transport *tp, int host, int kind, const void *params, int np_enabled, int64_t cnp_interval_ps,
                      uint32_t cnp_dscp)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (kind < 0 || kind >= RS_CC_COUNT)
        return rs_tp_fail(tp, RS_ERR_INVAL, "congestion control kind %d unknown (0 none, 1 dcqcn)", kind);
    if (kind == RS_CC_DCQCN && !params)
        return rs_tp_fail(tp, RS_ERR_INVAL, "DCQCN needs its parameters");
    if (cnp_interval_ps < 0 || cnp_dscp > 63)
        return rs_tp_fail(tp, RS_ERR_INVAL, "cnp_interval must be >= 0 and cnp_dscp in 0..63");
    h->cc.kind = kind;
    if (params)
        h->cc.dcqcn = *(const rs_dcqcn_params *)params;
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
    out->alpha = rs_dcqcn_alpha(out, &h->cc.dcqcn);
    return 1;
}
