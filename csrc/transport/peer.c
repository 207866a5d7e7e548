/* Scripted peer: a host whose "transport" is Python code.
 *
 * For conformance and teaching cases (ghost ACKs, skipped READ response PSNs, bad
 * opcodes, partial retries) a test plays the remote side by hand.  This is the one
 * deliberate place where Python runs per packet; it is never used by bulk runs. */
#include "transport/transport.h"

#include <string.h>

void rs_peer_deliver(rs_sim *sim, rs_host *h, rs_pkt *pkt)
{
    pkt->next = NULL;
    if (h->peer_tail)
        h->peer_tail->next = pkt;
    else
        h->peer_head = pkt;
    h->peer_tail = pkt;
    pkt->t_arrive_ps = sim->now_ps;
    sim->peer_stop = 1;
}

static rs_host *get_host(rs_sim *sim, int host)
{
    return (host >= 0 && (uint32_t)host < sim->n_hosts) ? sim->hosts[host] : NULL;
}

int rs_host_set_scripted(rs_sim *sim, int host, int on)
{
    rs_host *h = get_host(sim, host);
    if (!h)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d", host);
    if (on && h->qpns.live)
        return rs_sim_fail(sim, RS_ERR_STATE, "host %d already has QPs: a scripted peer replaces its transport",
                           host);
    h->scripted = on != 0;
    return RS_OK;
}

int rs_peer_recv(rs_sim *sim, int host, uint8_t *buf, size_t cap, int64_t *t_ps)
{
    rs_host *h = get_host(sim, host);
    if (!h)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d", host);
    rs_pkt *p = h->peer_head;
    if (!p)
        return 0;
    int n = rs_encode(p, buf, cap);
    if (n < 0)
        return rs_sim_fail(sim, RS_ERR_INVAL, "cannot encode a received frame (codec status %d)", n);
    *t_ps = p->t_arrive_ps;
    h->peer_head = p->next;
    if (!h->peer_head)
        h->peer_tail = NULL;
    rs_pkt_release(&sim->pool, p);
    return n;
}

/* Host index from a 10.x.y.z address (rs_host_new assigns index + 1). */
static int host_of_ip(const rs_sim *sim, uint32_t ip)
{
    uint32_t n = ip & 0xFFFFFF;
    return ((ip >> 24) == 10 && n >= 1 && n <= sim->n_hosts) ? (int)n - 1 : -1;
}

int rs_peer_send(rs_sim *sim, int host, const uint8_t *frame, size_t len)
{
    rs_host *h = get_host(sim, host);
    if (!h)
        return rs_sim_fail(sim, RS_ERR_INVAL, "no host %d", host);
    rs_pkt parsed;
    int rc = rs_decode(frame, len, &parsed);
    if (rc != RS_CODEC_OK && rc != RS_CODEC_ERR_BAD_ICRC)
        return rs_sim_fail(sim, RS_ERR_INVAL, "frame does not decode as RoCEv2/PFC (codec status %d)", rc);
    rs_pkt *p = rs_pkt_alloc(&sim->pool);
    if (!p)
        return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
    *p = parsed;
    p->next = NULL;
    p->payload = NULL;
    if (parsed.payload_len) {
        if (rs_pkt_attach_payload(&sim->pool, p) != 0) {
            rs_pkt_release(&sim->pool, p);
            return rs_sim_fail(sim, RS_ERR_NOMEM, "out of memory");
        }
        memcpy(p->payload, parsed.payload, parsed.payload_len);
    }
    p->src_node = (uint16_t)h->id;
    int dst = host_of_ip(sim, p->dst_ip);
    p->dst_node = (uint16_t)(dst >= 0 ? dst : 0);
    rs_nic_send_ctrl(sim, h, p);
    return RS_OK;
}
