/* RCCC: receiver-credit congestion control (rccc.h).
 *
 * Source: the UEC reference simulator htsim (github.com/ultraethernet/uet-htsim, htsim/sim/uec.cpp:
 * UecPullPacer, UecSink::pull, UecSrc::computePullTarget / handlePull / spendCredit /
 * stopSpeculating), which models the receiver-credit CC of the UEC 1.0 transport, itself derived
 * from EQDS (Olteanu et al., "An edge-queued datagram service for all datacenter traffic", NSDI
 * 2022).  Read for the rules; the code here is rdmasim's.  Rules:
 *   sender  starts speculating with initial_credit bytes (htsim: the max window); each packet
 *           spends its bytes; it may send while credit > 0 (so at most one packet overdraws);
 *           the first ACK/NACK/credit/timeout ends speculation, dropping unused speculative credit;
 *           a credit carries the cumulative grant: credit += grant - the last grant seen, capped
 *           at max_credit;
 *           request (htsim pull target, cumulative): min(backlog, max_credit) - credit, at least one
 *           MTU while speculating with backlog (htsim: "always request at least an MTU"), divided
 *           by the senders active on the NIC, added to the grant seen so far;
 *   receiver the pacer grants `quantum` bytes (htsim: 4 MSS) per pull, one pull every
 *           quantum x 8 / (link x rate_modifier) (htsim: 0.99 of the link), round robin over the
 *           senders whose request exceeds their grant, never granting past a request.
 * Added here (htsim trims speculative packets instead): bytes that arrive unsolicited (sent on
 * speculation) delay the pacer by their link time, so grants do not add to the queue they left.
 * Not modelled: htsim's slow pulls to idle senders (speculative credit to senders with no backlog)
 * and its PCIe/oversubscription rate modifiers. */
#include "uet/rccc.h"

#include <string.h>

void rs_rccc_rx_params_default(rs_rccc_rx_params *p, double link_bps, uint32_t mss)
{
    p->link_bps = link_bps;
    p->rate_modifier = 0.99; /* htsim UecPullPacer: "something like 0.99" of the line rate */
    p->quantum = 4 * mss;    /* htsim UecSink::_mtus_per_pull = 4 */
}

int rs_rccc_rx_params_check(const rs_rccc_rx_params *p)
{
    if (!(p->link_bps > 0))
        return 1;
    if (!(p->rate_modifier > 0 && p->rate_modifier <= 1))
        return 2;
    if (p->quantum == 0)
        return 3;
    return 0;
}

void rs_rccc_rx_init(rs_rccc_rx *rx, const rs_rccc_rx_params *p)
{
    memset(rx, 0, sizeof *rx);
    rx->p = *p;
}

static rs_rccc_sender *find(rs_rccc_rx *rx, uint32_t key)
{
    for (uint32_t i = 0; i < RS_RCCC_MAX_SENDERS; i++)
        if (rx->s[i].used && rx->s[i].key == key)
            return &rx->s[i];
    return NULL;
}

static int waiting(const rs_rccc_sender *s) { return s->used && s->requested > s->granted; }

static int any_waiting(const rs_rccc_rx *rx)
{
    for (uint32_t i = 0; i < RS_RCCC_MAX_SENDERS; i++)
        if (waiting(&rx->s[i]))
            return 1;
    return 0;
}

/* The pacer's time for `bytes` of credit at the credit rate. */
static int64_t credit_time(const rs_rccc_rx *rx, uint64_t bytes)
{
    return (int64_t)((double)bytes * 8e12 / (rx->p.link_bps * rx->p.rate_modifier) + 0.5);
}

int rs_rccc_rx_on_request(rs_rccc_rx *rx, int64_t now_ps, uint32_t key, uint64_t requested)
{
    rs_rccc_sender *s = find(rx, key);
    if (!s) {
        for (uint32_t i = 0; i < RS_RCCC_MAX_SENDERS && !s; i++)
            if (!rx->s[i].used)
                s = &rx->s[i];
        if (!s) {
            rx->refused++;
            return -1;
        }
        memset(s, 0, sizeof *s);
        s->used = 1;
        s->key = key;
        rx->nused++;
    }
    if (requested > s->requested) /* cumulative: a reordered older request changes nothing */
        s->requested = requested;
    if (!rx->next_ps && waiting(s)) { /* the pacer wakes up, no earlier than its last grant allows */
        int64_t t = now_ps > rx->free_ps ? now_ps : rx->free_ps;
        rx->next_ps = t > 0 ? t : 1; /* 0 means idle: a request at time 0 is served at 1 ps */
    }
    return 0;
}

int64_t rs_rccc_rx_next_ps(const rs_rccc_rx *rx) { return rx->next_ps; }

int rs_rccc_rx_pull(rs_rccc_rx *rx, int64_t now_ps, uint32_t *key, uint64_t *granted)
{
    if (!rx->next_ps || now_ps < rx->next_ps)
        return 0;
    for (uint32_t k = 0; k < RS_RCCC_MAX_SENDERS; k++) {
        uint32_t i = (rx->rr + k) % RS_RCCC_MAX_SENDERS;
        rs_rccc_sender *s = &rx->s[i];
        if (!waiting(s))
            continue;
        uint64_t want = s->requested - s->granted;
        uint64_t give = want < rx->p.quantum ? want : rx->p.quantum;
        s->granted += give;
        rx->rr = (i + 1) % RS_RCCC_MAX_SENDERS;
        rx->grants++;
        rx->granted_bytes += give;
        rx->free_ps = now_ps + credit_time(rx, give);
        rx->next_ps = any_waiting(rx) ? rx->free_ps : 0;
        *key = s->key;
        *granted = s->granted;
        return 1;
    }
    rx->next_ps = 0;
    return 0;
}

void rs_rccc_rx_on_unsolicited(rs_rccc_rx *rx, int64_t now_ps, uint64_t bytes)
{
    int64_t t = now_ps > rx->free_ps ? now_ps : rx->free_ps;
    rx->free_ps = t + credit_time(rx, bytes);
    if (rx->next_ps && rx->next_ps < rx->free_ps)
        rx->next_ps = rx->free_ps;
}

uint64_t rs_rccc_rx_granted(const rs_rccc_rx *rx, uint32_t key)
{
    for (uint32_t i = 0; i < RS_RCCC_MAX_SENDERS; i++)
        if (rx->s[i].used && rx->s[i].key == key)
            return rx->s[i].granted;
    return 0;
}

void rs_rccc_rx_remove(rs_rccc_rx *rx, uint32_t key)
{
    rs_rccc_sender *s = find(rx, key);
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    rx->nused--;
    if (!any_waiting(rx))
        rx->next_ps = 0;
}

void rs_rccc_tx_init(rs_rccc_tx *tx, uint64_t initial_credit, uint64_t max_credit, uint32_t mtu)
{
    memset(tx, 0, sizeof *tx);
    tx->credit = (int64_t)initial_credit;
    tx->max_credit = max_credit;
    tx->mtu = mtu;
    tx->speculating = 1;
}

uint64_t rs_rccc_tx_request(rs_rccc_tx *tx, uint64_t backlog, uint32_t active_sources)
{
    uint64_t want = backlog;
    if (tx->max_credit && want > tx->max_credit)
        want = tx->max_credit;
    int64_t ask = (int64_t)want - tx->credit;
    if (tx->speculating && backlog && ask < (int64_t)tx->mtu) /* htsim: "always request at least an MTU" */
        ask = tx->mtu;
    if (ask < 0)
        ask = 0;
    if (active_sources > 1)
        ask /= active_sources;
    uint64_t req = tx->granted + (uint64_t)ask;
    if (req > tx->requested)
        tx->requested = req;
    return tx->requested;
}

void rs_rccc_tx_on_feedback(rs_rccc_tx *tx)
{
    if (!tx->speculating)
        return;
    tx->speculating = 0;
    if (tx->credit > 0)
        tx->credit = 0;
}

void rs_rccc_tx_on_credit(rs_rccc_tx *tx, uint64_t granted)
{
    rs_rccc_tx_on_feedback(tx);
    if (granted <= tx->granted)
        return;
    uint64_t add = granted - tx->granted;
    tx->granted = granted;
    tx->credit += (int64_t)add;
    tx->credit_received += add;
    if (tx->max_credit && tx->credit > (int64_t)tx->max_credit)
        tx->credit = (int64_t)tx->max_credit;
}

int rs_rccc_tx_may_send(const rs_rccc_tx *tx) { return tx->credit > 0; }

void rs_rccc_tx_on_sent(rs_rccc_tx *tx, uint32_t bytes)
{
    tx->credit -= (int64_t)bytes;
    tx->sent += bytes;
}
