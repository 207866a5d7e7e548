/* QP state machine, RC, UC and UD (protocol.md 4; kernel verbs.c qp_state_table, rxe_qp.c).
 *
 *   RESET -> INIT -> RTR -> RTS <-> SQD;  any -> RESET;  any -> ERR
 * The table below is the whole machine: a transition is legal iff it has a
 * row; the mask must hold every required attribute and nothing outside
 * required | optional (IBV_QP_STATE aside). */
#include "transport/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasim/ib.h"

typedef struct qp_transition {
    uint32_t from, to;
    uint32_t required, optional;
} qp_transition;

#define ANY_STATE 0xFFu

static const qp_transition rc_transitions[] = {
    {RS_QPS_RESET, RS_QPS_INIT, RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_ACCESS_FLAGS, 0},
    {RS_QPS_INIT, RS_QPS_INIT, 0, RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_ACCESS_FLAGS},
    {RS_QPS_INIT, RS_QPS_RTR,
     RS_QP_AV | RS_QP_PATH_MTU | RS_QP_DEST_QPN | RS_QP_RQ_PSN | RS_QP_MAX_DEST_RD_ATOMIC | RS_QP_MIN_RNR_TIMER,
     RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_PKEY_INDEX},
    {RS_QPS_RTR, RS_QPS_RTS, RS_QP_TIMEOUT | RS_QP_RETRY_CNT | RS_QP_RNR_RETRY | RS_QP_SQ_PSN | RS_QP_MAX_QP_RD_ATOMIC,
     RS_QP_CUR_STATE | RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_MIN_RNR_TIMER | RS_QP_PATH_MIG_STATE},
    {RS_QPS_RTS, RS_QPS_RTS, 0,
     RS_QP_CUR_STATE | RS_QP_ACCESS_FLAGS | RS_QP_ALT_PATH | RS_QP_PATH_MIG_STATE | RS_QP_MIN_RNR_TIMER},
    {RS_QPS_RTS, RS_QPS_SQD, 0, RS_QP_EN_SQD_ASYNC_NOTIFY},
    {RS_QPS_SQD, RS_QPS_RTS, 0,
     RS_QP_CUR_STATE | RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_MIN_RNR_TIMER | RS_QP_PATH_MIG_STATE},
    {RS_QPS_SQD, RS_QPS_SQD, 0,
     RS_QP_PORT | RS_QP_AV | RS_QP_TIMEOUT | RS_QP_RETRY_CNT | RS_QP_RNR_RETRY | RS_QP_MAX_QP_RD_ATOMIC |
         RS_QP_MAX_DEST_RD_ATOMIC | RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_PKEY_INDEX |
         RS_QP_MIN_RNR_TIMER | RS_QP_PATH_MIG_STATE},
    {ANY_STATE, RS_QPS_RESET, 0, 0},
    {ANY_STATE, RS_QPS_ERR, 0, 0},
};

/* UD (kernel qp_state_table, IB_QPT_UD): no address vector, PSN or retry attributes; the Q_Key. */
static const qp_transition ud_transitions[] = {
    {RS_QPS_RESET, RS_QPS_INIT, RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_QKEY, 0},
    {RS_QPS_INIT, RS_QPS_INIT, 0, RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_QKEY},
    {RS_QPS_INIT, RS_QPS_RTR, 0, RS_QP_PKEY_INDEX | RS_QP_QKEY},
    {RS_QPS_RTR, RS_QPS_RTS, RS_QP_SQ_PSN, RS_QP_CUR_STATE | RS_QP_QKEY},
    {RS_QPS_RTS, RS_QPS_RTS, 0, RS_QP_CUR_STATE | RS_QP_QKEY},
    {RS_QPS_RTS, RS_QPS_SQD, 0, RS_QP_EN_SQD_ASYNC_NOTIFY},
    {RS_QPS_SQD, RS_QPS_RTS, 0, RS_QP_CUR_STATE | RS_QP_QKEY},
    {RS_QPS_SQD, RS_QPS_SQD, 0, RS_QP_PKEY_INDEX | RS_QP_QKEY},
    {ANY_STATE, RS_QPS_RESET, 0, 0},
    {ANY_STATE, RS_QPS_ERR, 0, 0},
};

/* UC (kernel qp_state_table, IB_QPT_UC): RC's address and PSN attributes; no timeout, retry, RNR or
 * READ/atomic attributes. */
static const qp_transition uc_transitions[] = {
    {RS_QPS_RESET, RS_QPS_INIT, RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_ACCESS_FLAGS, 0},
    {RS_QPS_INIT, RS_QPS_INIT, 0, RS_QP_PKEY_INDEX | RS_QP_PORT | RS_QP_ACCESS_FLAGS},
    {RS_QPS_INIT, RS_QPS_RTR, RS_QP_AV | RS_QP_PATH_MTU | RS_QP_DEST_QPN | RS_QP_RQ_PSN,
     RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_PKEY_INDEX},
    {RS_QPS_RTR, RS_QPS_RTS, RS_QP_SQ_PSN,
     RS_QP_CUR_STATE | RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_PATH_MIG_STATE},
    {RS_QPS_RTS, RS_QPS_RTS, 0, RS_QP_CUR_STATE | RS_QP_ACCESS_FLAGS | RS_QP_ALT_PATH | RS_QP_PATH_MIG_STATE},
    {RS_QPS_RTS, RS_QPS_SQD, 0, RS_QP_EN_SQD_ASYNC_NOTIFY},
    {RS_QPS_SQD, RS_QPS_RTS, 0, RS_QP_CUR_STATE | RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_PATH_MIG_STATE},
    {RS_QPS_SQD, RS_QPS_SQD, 0,
     RS_QP_AV | RS_QP_ALT_PATH | RS_QP_ACCESS_FLAGS | RS_QP_PKEY_INDEX | RS_QP_PATH_MIG_STATE},
    {ANY_STATE, RS_QPS_RESET, 0, 0},
    {ANY_STATE, RS_QPS_ERR, 0, 0},
};

const char *rs_qp_state_name(uint32_t s)
{
    static const char *const names[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"};
    return s < 7 ? names[s] : "UNKNOWN";
}

/* "IBV_QP_TIMEOUT | IBV_QP_SQ_PSN" for the bits of `mask` (names from ib_enums.def). */
static void mask_names(uint32_t mask, char *out, size_t cap)
{
    out[0] = 0;
    size_t used = 0;
    for (const rs_enum_entry *e = rs_enum_table(); e->group; e++) {
        if (strcmp(e->group, "QP") != 0 || !(mask & (uint32_t)e->value))
            continue;
        int n = snprintf(out + used, cap - used, "%sIBV_QP_%s", used ? " | " : "", e->name);
        if (n < 0 || (size_t)n >= cap - used)
            break;
        used += (size_t)n;
    }
}

static const qp_transition *find_transition(const rs_qp *qp, uint32_t from, uint32_t to)
{
    const qp_transition *table = qp->is_ud ? ud_transitions : qp->is_uc ? uc_transitions : rc_transitions;
    size_t n = qp->is_ud   ? sizeof(ud_transitions) / sizeof(ud_transitions[0])
               : qp->is_uc ? sizeof(uc_transitions) / sizeof(uc_transitions[0])
                           : sizeof(rc_transitions) / sizeof(rc_transitions[0]);
    for (size_t i = 0; i < n; i++) {
        const qp_transition *t = &table[i];
        if ((t->from == from || t->from == ANY_STATE) && t->to == to)
            return t;
    }
    return NULL;
}

static int range_error(rs_transport *tp, rs_qp *qp, const char *what, uint32_t value, const char *allowed)
{
    return rs_tp_fail(tp, RS_ERR_INVAL, "modify QP 0x%x: %s=%u is out of range (allowed: %s)", qp->qpn, what,
                      value, allowed);
}

static int check_ranges(rs_transport *tp, rs_qp *qp, const rs_qp_attr *a, uint32_t mask)
{
    if ((mask & RS_QP_PATH_MTU) && rs_mtu_bytes((int)a->path_mtu) == 0)
        return range_error(tp, qp, "path_mtu", a->path_mtu, "IBV_MTU_256..IBV_MTU_4096 = 1..5");
    if ((mask & RS_QP_TIMEOUT) && a->timeout > 31)
        return range_error(tp, qp, "timeout", a->timeout, "0..31, 4.096 us * 2^timeout, 0 = infinite");
    if ((mask & RS_QP_RETRY_CNT) && a->retry_cnt > 7)
        return range_error(tp, qp, "retry_cnt", a->retry_cnt, "0..7");
    if ((mask & RS_QP_RNR_RETRY) && a->rnr_retry > 7)
        return range_error(tp, qp, "rnr_retry", a->rnr_retry, "0..7, 7 = infinite");
    if ((mask & RS_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
        return range_error(tp, qp, "min_rnr_timer", a->min_rnr_timer, "0..31 (timer code)");
    if ((mask & RS_QP_RQ_PSN) && a->rq_psn > RS_PSN_MASK)
        return range_error(tp, qp, "rq_psn", a->rq_psn, "0..16777215");
    if ((mask & RS_QP_SQ_PSN) && a->sq_psn > RS_PSN_MASK)
        return range_error(tp, qp, "sq_psn", a->sq_psn, "0..16777215");
    if ((mask & RS_QP_DEST_QPN) && a->dest_qp_num > RS_QPN_MASK)
        return range_error(tp, qp, "dest_qp_num", a->dest_qp_num, "0..16777215");
    if ((mask & RS_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > 128)
        return range_error(tp, qp, "max_rd_atomic", a->max_rd_atomic, "0..128");
    if ((mask & RS_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > 128)
        return range_error(tp, qp, "max_dest_rd_atomic", a->max_dest_rd_atomic, "0..128");
    if ((mask & RS_QP_PORT) && a->port_num != 1)
        return range_error(tp, qp, "port_num", a->port_num, "1 (one port per NIC)");
    if ((mask & RS_QP_PKEY_INDEX) && a->pkey_index != 0)
        return range_error(tp, qp, "pkey_index", a->pkey_index, "0 (default P_Key 0xFFFF)");
    if (mask & RS_QP_AV) {
        rs_transport *s = qp->host->tp;
        /* the QP's own host is allowed: the NIC loops the frames back internally (nic.c) */
        if (a->dest_host < 0 || (uint32_t)a->dest_host >= s->n_hosts)
            return range_error(tp, qp, "ah_attr destination host index", (uint32_t)a->dest_host,
                               "a host of this simulation");
        if (a->traffic_class > 255)
            return range_error(tp, qp, "traffic_class", a->traffic_class, "0..255");
    }
    return RS_OK;
}

static void apply(rs_qp *qp, const rs_qp_attr *a, uint32_t mask)
{
    if (mask & RS_QP_ACCESS_FLAGS)
        qp->attr.qp_access_flags = a->qp_access_flags;
    if (mask & RS_QP_PKEY_INDEX)
        qp->attr.pkey_index = a->pkey_index;
    if (mask & RS_QP_PORT)
        qp->attr.port_num = a->port_num;
    if (mask & RS_QP_AV) {
        qp->attr.dest_host = a->dest_host;
        qp->attr.traffic_class = a->traffic_class;
        rs_qp_resolve_path(qp);
    }
    if (mask & RS_QP_PATH_MTU) {
        qp->attr.path_mtu = a->path_mtu;
        qp->pmtu = rs_mtu_bytes((int)a->path_mtu);
    }
    if (mask & RS_QP_DEST_QPN)
        qp->attr.dest_qp_num = a->dest_qp_num;
    if (mask & RS_QP_RQ_PSN) {
        qp->attr.rq_psn = a->rq_psn;
        qp->resp_psn = a->rq_psn;
    }
    if (mask & RS_QP_MAX_DEST_RD_ATOMIC)
        qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
    if (mask & RS_QP_MIN_RNR_TIMER)
        qp->attr.min_rnr_timer = a->min_rnr_timer;
    if (mask & RS_QP_TIMEOUT) {
        qp->attr.timeout = a->timeout;
        qp->rto_ps = a->timeout ? (int64_t)4096000 << a->timeout : 0; /* 4.096 us * 2^timeout */
    }
    if (mask & RS_QP_RETRY_CNT) {
        qp->attr.retry_cnt = a->retry_cnt;
        qp->retry_left = a->retry_cnt;
    }
    if (mask & RS_QP_RNR_RETRY) {
        qp->attr.rnr_retry = a->rnr_retry;
        qp->rnr_left = a->rnr_retry;
    }
    if (mask & RS_QP_SQ_PSN) {
        qp->attr.sq_psn = a->sq_psn;
        qp->req_psn = qp->comp_psn = qp->max_sent_psn_next = a->sq_psn;
    }
    if (mask & RS_QP_MAX_QP_RD_ATOMIC)
        qp->attr.max_rd_atomic = a->max_rd_atomic;
    if (mask & RS_QP_QKEY)
        qp->attr.qkey = a->qkey;
}

int rs_qp_apply_modify(rs_transport *tp, rs_qp *qp, const rs_qp_attr *a, uint32_t mask)
{
    qp->req_flen_key = 0; /* the frame length of its requests is measured again (requester.c) */
    uint32_t from = qp->state;
    uint32_t to = (mask & RS_QP_STATE) ? a->qp_state : from;
    if (to > RS_QPS_ERR)
        return range_error(tp, qp, "qp_state", to, "IBV_QPS_RESET..IBV_QPS_ERR = 0..6");
    if ((mask & RS_QP_CUR_STATE) && a->cur_qp_state != from)
        return rs_tp_fail(tp, RS_ERR_INVAL, "modify QP 0x%x: cur_qp_state=%s but the QP is in %s", qp->qpn,
                          rs_qp_state_name(a->cur_qp_state), rs_qp_state_name(from));
    const qp_transition *t = find_transition(qp, from, to);
    if (!t || to == RS_QPS_SQE)
        return rs_tp_fail(tp, RS_ERR_INVAL, "modify QP 0x%x: %s -> %s is not a legal %s transition", qp->qpn,
                          rs_qp_state_name(from), rs_qp_state_name(to), qp->is_ud ? "UD" : qp->is_uc ? "UC" : "RC");
    char names[512];
    uint32_t given = mask & ~(uint32_t)RS_QP_STATE;
    uint32_t missing = t->required & ~given;
    if (missing) {
        mask_names(missing, names, sizeof(names));
        return rs_tp_fail(tp, RS_ERR_INVAL, "modify QP 0x%x %s -> %s: missing required attribute(s) %s",
                          qp->qpn, rs_qp_state_name(from), rs_qp_state_name(to), names);
    }
    uint32_t extra = given & ~(t->required | t->optional);
    if (extra) {
        mask_names(extra, names, sizeof(names));
        return rs_tp_fail(tp, RS_ERR_INVAL, "modify QP 0x%x %s -> %s: attribute(s) %s not allowed here",
                          qp->qpn, rs_qp_state_name(from), rs_qp_state_name(to), names);
    }
    int rc = check_ranges(tp, qp, a, mask);
    if (rc)
        return rc;
    if (mask & RS_QP_MAX_DEST_RD_ATOMIC) { /* responder resources, sized before anything changes */
        uint32_t cap = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : 1;
        if (cap != qp->res_cap) {
            rs_rdres *r = cap == 1 ? &qp->res_inline : calloc(cap, sizeof(*r));
            if (!r)
                return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory for %u responder resources", cap);
            if (r == &qp->res_inline)
                memset(r, 0, sizeof(*r));
            if (qp->res != &qp->res_inline)
                free(qp->res);
            qp->res = r;
            qp->res_cap = cap;
            qp->res_next = 0;
        }
    }
    if (from == RS_QPS_RTR && to == RS_QPS_RTS && (rc = rs_cc_qp_reserve(tp, qp)) != RS_OK)
        return rc;
    apply(qp, a, mask);
    if (to == RS_QPS_RESET) {
        rs_qp_reset(tp, qp);
        qp->state = RS_QPS_RESET;
    } else if (to == RS_QPS_ERR) {
        rs_qp_to_error(tp, qp);
    } else {
        qp->state = to;
        /* SQD: WQEs already started finish, no new one starts (protocol.md 4) */
        qp->sq_draining = to == RS_QPS_SQD;
        if (from == RS_QPS_RTR && to == RS_QPS_RTS)
            rs_cc_qp_start(tp, qp); /* the rate starts at line rate */
        if (to == RS_QPS_RTS || to == RS_QPS_SQD)
            rs_nic_wake(tp, qp);
    }
    return RS_OK;
}
