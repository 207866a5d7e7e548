/* Packet and payload-buffer pools over two slabs, with the counts the run reports. */
#include "rdmasim/pool.h"

#include <string.h>

#include "rdmasim/telemetry.h"

#define PKTS_FIRST_CHUNK 1024
#define PAYLOADS_FIRST_CHUNK 64
#define INTS_FIRST_CHUNK 64

void rs_pool_init(rs_pool *p)
{
    memset(p, 0, sizeof(*p));
    rs_slab_init(&p->pkts, sizeof(rs_pkt), 64, PKTS_FIRST_CHUNK);
    rs_slab_init(&p->payloads, RS_MAX_PAYLOAD, 64, PAYLOADS_FIRST_CHUNK);
    rs_slab_init(&p->ints, sizeof(rs_int_stack), 8, INTS_FIRST_CHUNK);
}

void rs_pool_free(rs_pool *p)
{
    rs_slab_destroy(&p->pkts);
    rs_slab_destroy(&p->payloads);
    rs_slab_destroy(&p->ints);
    memset(p, 0, sizeof(*p));
}

int rs_pool_trim(rs_pool *p)
{
    if (p->pkts_in_use || p->payloads_in_use || p->ints_in_use)
        return 0;
    rs_slab_destroy(&p->pkts);
    rs_slab_destroy(&p->payloads);
    rs_slab_destroy(&p->ints);
    size_t peak = p->pkts_peak;
    rs_pool_init(p);
    p->pkts_peak = peak;
    return 1;
}

rs_pkt *rs_pkt_alloc(rs_pool *p)
{
    rs_pkt *pkt = rs_slab_alloc(&p->pkts);
    if (!pkt)
        return NULL;
    p->pkts_total = p->pkts.total;
    memset(pkt, 0, RS_PKT_COMMON_BYTES); /* a transport's extension block: its builder's job */
    if (++p->pkts_in_use > p->pkts_peak)
        p->pkts_peak = p->pkts_in_use;
    return pkt;
}

int rs_pkt_attach_payload(rs_pool *p, rs_pkt *pkt)
{
    void *buf = rs_slab_alloc(&p->payloads);
    if (!buf)
        return -1;
    p->payloads_total = p->payloads.total;
    pkt->payload = buf;
    p->payloads_in_use++;
    return 0;
}

int rs_pkt_attach_int(rs_pool *p, rs_pkt *pkt)
{
    rs_int_stack *st = rs_slab_alloc(&p->ints);
    if (!st)
        return -1;
    st->n_hops = 0;
    pkt->intel = st;
    p->ints_in_use++;
    return 0;
}

void rs_pool_put_int(rs_pool *p, rs_int_stack *st)
{
    rs_slab_put(&p->ints, st);
    p->ints_in_use--;
}

void rs_pkt_release(rs_pool *p, rs_pkt *pkt)
{
    if (pkt->intel)
        rs_pool_put_int(p, pkt->intel);
    if (pkt->payload) {
        rs_slab_put(&p->payloads, pkt->payload);
        p->payloads_in_use--;
    }
    rs_slab_put(&p->pkts, pkt);
    p->pkts_in_use--;
}
