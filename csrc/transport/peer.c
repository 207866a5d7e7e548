/* Scripted peer: a host whose "transport" is Python code.
 *
 * For conformance and teaching cases (ghost ACKs, skipped READ response PSNs, bad
 * opcodes, partial retries) a test plays the remote side by hand.  This is the one
 * deliberate place where Python runs per packet; it is never used by bulk runs. */
#include "transport/transport.h"

#include <string.h>

void rs_peer_deliver(rs_transport *tp, rs_host *h, rs_pkt *pkt)
{
    pkt->next = NULL;
    if (h->peer_tail)
        h->peer_tail->next = pkt;
    else
        h->peer_head = pkt;
    h->peer_tail = pkt;
    pkt->t_arrive_ps = tp->net.eng.now_ps;
    tp->peer_stop = 1;
}

static rs_host *get_host(rs_transport *tp, int host)
{
    return (host >= 0 && (uint32_t)host < tp->n_hosts) ? tp->hosts[host] : NULL;
}

int rs_tp_host_set_scripted(rs_transport *tp, int host, int on)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (on && h->qpns.live)
        return rs_tp_fail(tp, RS_ERR_STATE, "host %d already has QPs: a scripted peer replaces its transport",
                          host);
    h->scripted = on != 0;
    return RS_OK;
}

int rs_tp_peer_recv(rs_transport *tp, int host, uint8_t *buf, size_t cap, int64_t *t_ps)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    rs_pkt *p = h->peer_head;
    if (!p)
        return 0;
    int n = rs_encode(p, buf, cap);
    if (n < 0)
        return rs_tp_fail(tp, RS_ERR_INVAL, "cannot encode a received frame (codec status %d)", n);
    *t_ps = p->t_arrive_ps;
    h->peer_head = p->next;
    if (!h->peer_head)
        h->peer_tail = NULL;
    rs_pkt_release(&tp->pool, p);
    return n;
}

/* Host index from a 10.x.y.z address (rs_host_new assigns index + 1). */
static int host_of_ip(const rs_transport *tp, uint32_t ip)
{
    uint32_t n = ip & 0xFFFFFF;
    return ((ip >> 24) == 10 && n >= 1 && n <= tp->n_hosts) ? (int)n - 1 : -1;
}

/* Where a frame from the peer goes: `dst_host` if valid, else the host its IPv4 destination names. */
static int dest_of(const rs_transport *tp, int dst_host, uint32_t dst_ip)
{
    if (dst_host >= 0 && (uint32_t)dst_host < tp->n_hosts)
        return dst_host;
    int dst = host_of_ip(tp, dst_ip);
    return dst >= 0 ? dst : 0;
}

/* A frame that decoded (possibly with a wrong ICRC), carried parsed.  A wrong ICRC is kept as the
 * xor between the one sent and the right one: the receiving NIC drops the packet and a capture
 * shows the same wrong value (rs_encode applies it). */
static int send_parsed(rs_transport *tp, rs_host *h, const uint8_t *frame, size_t len, const rs_pkt *parsed,
                       int icrc_bad, int dst_host)
{
    rs_pkt *p = rs_pkt_alloc(&tp->pool);
    if (!p)
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    *p = *parsed;
    p->next = NULL;
    p->payload = NULL;
    if (parsed->payload_len) {
        if (rs_pkt_attach_payload(&tp->pool, p) != 0) {
            rs_pkt_release(&tp->pool, p);
            return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
        }
        memcpy(p->payload, parsed->payload, parsed->payload_len);
    }
    if (icrc_bad && parsed->kind == RS_PKT_ROCE) {
        p->icrc_bad = 1;
        p->icrc_xor = 0xFFFFFFFFu; /* unless the ICRC sent can be found (IPv4: it ends the datagram) */
        size_t ip_len = len >= RS_ETH_HDR_BYTES + 4
                            ? ((size_t)frame[RS_ETH_HDR_BYTES + 2] << 8) | frame[RS_ETH_HDR_BYTES + 3]
                            : 0;
        if (frame[12] == 0x08 && frame[13] == 0x00 && ip_len >= RS_IPV4_HDR_BYTES + RS_ICRC_BYTES &&
            RS_ETH_HDR_BYTES + ip_len <= len) {
            const uint8_t *icrc = frame + RS_ETH_HDR_BYTES + ip_len - RS_ICRC_BYTES;
            uint32_t wire = (uint32_t)icrc[0] | ((uint32_t)icrc[1] << 8) | ((uint32_t)icrc[2] << 16) |
                            ((uint32_t)icrc[3] << 24);
            uint32_t x = wire ^ rs_icrc(frame, (size_t)(icrc - frame));
            if (x)
                p->icrc_xor = x;
        }
    }
    p->src_node = (uint16_t)h->id;
    p->dst_node = (uint16_t)dest_of(tp, dst_host, p->dst_ip);
    rs_nic_send_ctrl(tp, h, p);
    return RS_OK;
}

int rs_tp_peer_send(rs_transport *tp, int host, const uint8_t *frame, size_t len)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    rs_pkt parsed;
    int rc = rs_decode(frame, len, &parsed);
    if (rc != RS_CODEC_OK && rc != RS_CODEC_ERR_BAD_ICRC)
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "frame does not decode as RoCEv2/PFC (codec status %d); send it unchecked with "
                          "send_raw",
                          rc);
    return send_parsed(tp, h, frame, len, &parsed, rc == RS_CODEC_ERR_BAD_ICRC, -1);
}

int rs_tp_peer_send_raw(rs_transport *tp, int host, const uint8_t *frame, size_t len, int dst_host)
{
    rs_host *h = get_host(tp, host);
    if (!h)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no host %d", host);
    if (dst_host >= 0 && (uint32_t)dst_host >= tp->n_hosts)
        return rs_tp_fail(tp, RS_ERR_INVAL, "no destination host %d", dst_host);
    if (len < 1 || len > RS_MAX_PAYLOAD)
        return rs_tp_fail(tp, RS_ERR_INVAL, "raw frame of %zu bytes: allowed 1..%u", len, RS_MAX_PAYLOAD);
    rs_pkt parsed;
    int rc = rs_decode(frame, len, &parsed);
    if (rc == RS_CODEC_OK || rc == RS_CODEC_ERR_BAD_ICRC)
        return send_parsed(tp, h, frame, len, &parsed, rc == RS_CODEC_ERR_BAD_ICRC, dst_host);
    /* Not decodable: carried as bytes.  Only routing metadata is set; the IPv4 destination and
     * DSCP are read if the bytes hold them (else the frame goes to dst_host, priority 0). */
    rs_pkt *p = rs_pkt_alloc(&tp->pool);
    if (!p || rs_pkt_attach_payload(&tp->pool, p) != 0) {
        if (p)
            rs_pkt_release(&tp->pool, p);
        return rs_tp_fail(tp, RS_ERR_NOMEM, "out of memory");
    }
    p->kind = RS_PKT_RAW;
    memcpy(p->payload, frame, len);
    p->payload_len = (uint32_t)len;
    int ipv4 = len >= RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES && frame[12] == 0x08 && frame[13] == 0x00;
    if (ipv4) {
        const uint8_t *ip = frame + RS_ETH_HDR_BYTES;
        p->tos = ip[1];
        p->dst_ip = ((uint32_t)ip[16] << 24) | ((uint32_t)ip[17] << 16) | ((uint32_t)ip[18] << 8) | ip[19];
        p->priority = rs_port_dscp_prio(&h->port, (uint8_t)(p->tos >> 2));
    }
    /* for traces: the opcode the bytes claim, if they reach a BTH; else 0xFF (no RoCE opcode) */
    p->opcode = ipv4 && len > RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES
                    ? frame[RS_ETH_HDR_BYTES + RS_IPV4_HDR_BYTES + RS_UDP_HDR_BYTES]
                    : 0xFF;
    p->src_node = (uint16_t)h->id;
    if (dst_host < 0 && (!ipv4 || host_of_ip(tp, p->dst_ip) < 0)) {
        rs_pkt_release(&tp->pool, p);
        return rs_tp_fail(tp, RS_ERR_INVAL,
                          "raw frame has no IPv4 destination of a host: give its destination host");
    }
    p->dst_node = (uint16_t)dest_of(tp, dst_host, p->dst_ip);
    rs_nic_send_ctrl(tp, h, p);
    return RS_OK;
}
