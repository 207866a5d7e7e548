/* Testing the frame records of sim/par_xfer.h. */
#include "sim/par_xfer_test.h"

#include <string.h>

#include "sim/par_xfer.h"

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fill(uint8_t *p, size_t n, uint64_t *x)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(next(x) >> 24);
}

/* The packet's bytes up to RS_PKT_COMMON_BYTES with its pointers zero. */
static void plain(const rs_pkt *pkt, uint8_t *out)
{
    memcpy(out, pkt, RS_PKT_COMMON_BYTES);
    memset(out + offsetof(rs_pkt, next), 0, sizeof(pkt->next));
    memset(out + offsetof(rs_pkt, payload), 0, sizeof(pkt->payload));
    memset(out + offsetof(rs_pkt, intel), 0, sizeof(pkt->intel));
}

int rs_xfer_selftest(uint64_t seed, int with_payload, int with_int, uint8_t *rec, size_t cap, size_t *rec_len)
{
    rs_pool a, b;
    rs_pool_init(&a);
    rs_pool_init(&b);
    int ok = -1;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    rs_pkt *p = rs_pkt_alloc(&a), *q = NULL;
    *rec_len = 0;
    if (!p)
        goto out;
    fill((uint8_t *)p, RS_PKT_COMMON_BYTES, &x);
    p->next = NULL;
    p->payload = NULL;
    p->intel = NULL;
    p->payload_len = (uint32_t)(next(&x) % (RS_MAX_PAYLOAD + 1));
    if (with_payload) {
        if (rs_pkt_attach_payload(&a, p) != 0)
            goto out;
        fill(p->payload, p->payload_len, &x);
    }
    if (with_int) {
        if (rs_pkt_attach_int(&a, p) != 0)
            goto out;
        fill((uint8_t *)p->intel, sizeof(rs_int_stack), &x);
    }
    size_t n = rs_xfer_frame_size(p);
    if (n > cap)
        goto out;
    if (rs_xfer_put_frame(rec, 77, p) != n)
        goto out;
    *rec_len = n;
    uint32_t link = 0;
    long got = rs_xfer_get_frame(rec, rec + n, &b, &link, &q);
    if (got < 0)
        goto out;
    ok = 0;
    if ((size_t)got != n || link != 77 || !q)
        goto out;
    static uint8_t u[sizeof(rs_pkt)], v[sizeof(rs_pkt)];
    plain(p, u);
    plain(q, v);
    if (memcmp(u, v, RS_PKT_COMMON_BYTES) != 0 || !q->payload != !p->payload || !q->intel != !p->intel)
        goto out;
    if (p->payload && memcmp(p->payload, q->payload, p->payload_len) != 0)
        goto out;
    if (p->intel && memcmp(p->intel, q->intel, sizeof(rs_int_stack)) != 0)
        goto out;
    ok = 1;
out:
    if (p)
        rs_pkt_release(&a, p);
    if (q)
        rs_pkt_release(&b, q);
    rs_pool_free(&a);
    rs_pool_free(&b);
    return ok;
}

int rs_xfer_parse_check(const uint8_t *rec, size_t len)
{
    uint32_t link;
    rs_pkt *pkt;
    return (int)rs_xfer_get_frame(rec, rec + len, NULL, &link, &pkt);
}
