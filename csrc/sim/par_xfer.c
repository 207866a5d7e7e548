/* Frames of cut links as bytes and back (sim/par_xfer.h).  Record layout:
 *   u32 link | u32 flags (1: payload bytes follow, 2: an INT stack follows) |
 *   RS_PKT_COMMON_BYTES of the packet, its pointers (next, payload, intel) zero |
 *   payload_len bytes (flags & 1) | one rs_int_stack (flags & 2). */
#include "sim/par_xfer.h"

#include <string.h>

enum { XF_PAYLOAD = 1, XF_INT = 2, XF_HDR = 8 };

size_t rs_xfer_frame_size(const rs_pkt *pkt)
{
    return XF_HDR + RS_PKT_COMMON_BYTES + (pkt->payload ? pkt->payload_len : 0) +
           (pkt->intel ? sizeof(rs_int_stack) : 0);
}

size_t rs_xfer_put_frame(uint8_t *buf, uint32_t link, const rs_pkt *pkt)
{
    uint32_t flags = (pkt->payload ? XF_PAYLOAD : 0) | (pkt->intel ? XF_INT : 0);
    memcpy(buf, &link, 4);
    memcpy(buf + 4, &flags, 4);
    uint8_t *p = buf + XF_HDR;
    memcpy(p, pkt, RS_PKT_COMMON_BYTES);
    /* the pointers mean nothing to another process */
    memset(p + offsetof(rs_pkt, next), 0, sizeof(pkt->next));
    memset(p + offsetof(rs_pkt, payload), 0, sizeof(pkt->payload));
    memset(p + offsetof(rs_pkt, intel), 0, sizeof(pkt->intel));
    p += RS_PKT_COMMON_BYTES;
    if (pkt->payload) {
        memcpy(p, pkt->payload, pkt->payload_len);
        p += pkt->payload_len;
    }
    if (pkt->intel) {
        memcpy(p, pkt->intel, sizeof(rs_int_stack));
        p += sizeof(rs_int_stack);
    }
    return (size_t)(p - buf);
}

int64_t rs_xfer_frame_arrival(const uint8_t *buf)
{
    int64_t t;
    memcpy(&t, buf + XF_HDR + offsetof(rs_pkt, t_arrive_ps), sizeof(t));
    return t;
}

long rs_xfer_get_frame(const uint8_t *buf, const uint8_t *end, rs_pool *pool, uint32_t *link, rs_pkt **out)
{
    *out = NULL;
    if (end - buf < (long)(XF_HDR + RS_PKT_COMMON_BYTES))
        return 0;
    uint32_t flags;
    memcpy(link, buf, 4);
    memcpy(&flags, buf + 4, 4);
    if (flags & ~(uint32_t)(XF_PAYLOAD | XF_INT))
        return 0;
    uint32_t plen;
    memcpy(&plen, buf + XF_HDR + offsetof(rs_pkt, payload_len), sizeof(plen));
    if ((flags & XF_PAYLOAD) && plen > RS_MAX_PAYLOAD)
        return 0;
    size_t need = XF_HDR + RS_PKT_COMMON_BYTES + ((flags & XF_PAYLOAD) ? plen : 0) +
                  ((flags & XF_INT) ? sizeof(rs_int_stack) : 0);
    if ((size_t)(end - buf) < need)
        return 0;
    if (!pool)
        return (long)need;
    rs_pkt *pkt = rs_pkt_alloc(pool);
    if (!pkt)
        return -1;
    const uint8_t *p = buf + XF_HDR;
    memcpy(pkt, p, RS_PKT_COMMON_BYTES); /* pointers zero: next, payload, intel */
    p += RS_PKT_COMMON_BYTES;
    if (flags & XF_PAYLOAD) {
        if (rs_pkt_attach_payload(pool, pkt) != 0) {
            rs_pkt_release(pool, pkt);
            return -1;
        }
        memcpy(pkt->payload, p, plen);
        p += plen;
    }
    if (flags & XF_INT) {
        if (rs_pkt_attach_int(pool, pkt) != 0) {
            rs_pkt_release(pool, pkt);
            return -1;
        }
        memcpy(pkt->intel, p, sizeof(rs_int_stack));
        p += sizeof(rs_int_stack);
    }
    *out = pkt;
    return (long)(p - buf);
}
