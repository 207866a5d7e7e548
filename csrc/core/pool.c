/* Chunked free-list pools for packets and payload buffers. */
#include "rdmasim/pool.h"

#include <stdlib.h>
#include <string.h>

#define PKTS_PER_CHUNK 1024
#define PAYLOADS_PER_CHUNK 64

void rs_pool_init(rs_pool *p) { memset(p, 0, sizeof(*p)); }

void rs_pool_free(rs_pool *p)
{
    rs_chunk *c = p->chunks;
    while (c) {
        rs_chunk *next = c->next;
        free(c);
        c = next;
    }
    memset(p, 0, sizeof(*p));
}

/* One malloc per chunk: a header followed by `n` items of `size` bytes, aligned to 64. */
static void *new_chunk(rs_pool *p, size_t size, size_t n)
{
    size_t head = 64;
    rs_chunk *c = malloc(head + size * n);
    if (!c)
        return NULL;
    c->next = p->chunks;
    p->chunks = c;
    return (char *)c + head;
}

static int grow_pkts(rs_pool *p)
{
    rs_pkt *items = new_chunk(p, sizeof(rs_pkt), PKTS_PER_CHUNK);
    if (!items)
        return -1;
    for (size_t i = 0; i < PKTS_PER_CHUNK; i++) {
        items[i].next = p->free_pkts;
        p->free_pkts = &items[i];
    }
    p->pkts_total += PKTS_PER_CHUNK;
    return 0;
}

static int grow_payloads(rs_pool *p)
{
    char *items = new_chunk(p, RS_MAX_PAYLOAD, PAYLOADS_PER_CHUNK);
    if (!items)
        return -1;
    for (size_t i = 0; i < PAYLOADS_PER_CHUNK; i++) {
        void *buf = items + i * RS_MAX_PAYLOAD;
        *(void **)buf = p->free_payloads;
        p->free_payloads = buf;
    }
    p->payloads_total += PAYLOADS_PER_CHUNK;
    return 0;
}

rs_pkt *rs_pkt_alloc(rs_pool *p)
{
    if (!p->free_pkts && grow_pkts(p) != 0)
        return NULL;
    rs_pkt *pkt = p->free_pkts;
    p->free_pkts = pkt->next;
    memset(pkt, 0, sizeof(*pkt));
    if (++p->pkts_in_use > p->pkts_peak)
        p->pkts_peak = p->pkts_in_use;
    return pkt;
}

int rs_pkt_attach_payload(rs_pool *p, rs_pkt *pkt)
{
    if (!p->free_payloads && grow_payloads(p) != 0)
        return -1;
    void *buf = p->free_payloads;
    p->free_payloads = *(void **)buf;
    pkt->payload = buf;
    p->payloads_in_use++;
    return 0;
}

void rs_pkt_release(rs_pool *p, rs_pkt *pkt)
{
    if (pkt->payload) {
        *(void **)pkt->payload = p->free_payloads;
        p->free_payloads = pkt->payload;
        p->payloads_in_use--;
    }
    pkt->next = p->free_pkts;
    p->free_pkts = pkt;
    p->pkts_in_use--;
}
