/* Chunked slab allocator (rdmasim/slab.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "rdmasim/slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void rs_slab_init(rs_slab *s, size_t size, size_t align, size_t first_objs)
{
    memset(s, 0, sizeof(*s));
    if (align < sizeof(void *))
        align = sizeof(void *);
    s->align = align;
    s->size = (size + align - 1) & ~(align - 1);
    s->next_objs = first_objs ? first_objs : 1;
}

void rs_slab_destroy(rs_slab *s)
{
    void *c = s->chunks;
    while (c) {
        void *next = *(void **)c;
        free(c);
        c = next;
    }
    s->chunks = s->free = NULL;
    s->total = 0;
}

int rs_slab_grow(rs_slab *s)
{
    /* the chunk's first `align` bytes (at least a pointer) link it into s->chunks */
    size_t head = s->align, n = s->next_objs;
    size_t bytes = head + n * s->size;
    int big = bytes >= RS_SLAB_BIG_CHUNK;
    if (big) { /* fill the huge page exactly */
        n = (RS_SLAB_BIG_CHUNK - head) / s->size;
        if (n == 0)
            n = 1;
        bytes = head + n * s->size;
        bytes = (bytes + RS_SLAB_BIG_CHUNK - 1) & ~(RS_SLAB_BIG_CHUNK - 1);
    }
    size_t align = big ? RS_SLAB_BIG_CHUNK : s->align;
    bytes = (bytes + align - 1) & ~(align - 1); /* aligned_alloc wants a multiple of the alignment */
    char *c = aligned_alloc(align, bytes);
    if (!c)
        return -1;
#ifdef MADV_HUGEPAGE
    if (big)
        madvise(c, bytes, MADV_HUGEPAGE); /* advice only: without THP it still works, with 4 KiB pages */
#endif
    *(void **)c = s->chunks;
    s->chunks = c;
    for (size_t i = n; i-- > 0;) /* lowest address first out: chunks fill in order */
        rs_slab_put(s, c + head + i * s->size);
    s->total += n;
    if (!big)
        s->next_objs = 2 * n;
    return 0;
}
