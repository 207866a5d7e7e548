/* Slab: fixed-size objects carved from chunks that are never moved or returned until the slab is
 * destroyed, with a free list for reuse.  Used for packets, payload buffers and QPs: a steady run
 * allocates nothing, and memory follows the peak number of objects alive.
 *
 * Chunks double from `first` objects up to RS_SLAB_BIG_CHUNK bytes; chunks that large are aligned
 * to it and advised as transparent huge pages, so a simulation holding 100k QPs touches ~150 TLB
 * entries instead of ~75k (a page walk per QP visit otherwise). */
#ifndef RDMASIM_SLAB_H
#define RDMASIM_SLAB_H

#include <stddef.h>

#define RS_SLAB_BIG_CHUNK ((size_t)2 << 20) /* one x86-64 huge page */

typedef struct rs_slab {
    size_t size;       /* object size: a multiple of `align` */
    size_t align;      /* power of two, >= sizeof(void *) */
    void *free;        /* free objects, linked through their first word */
    void *chunks;      /* every chunk, linked through its first word (rs_slab_destroy frees them) */
    size_t next_objs;  /* objects in the next chunk */
    size_t total;      /* objects created so far */
} rs_slab;

/* `size` is rounded up to `align`; the first chunk holds `first_objs` objects. */
void rs_slab_init(rs_slab *s, size_t size, size_t align, size_t first_objs);
void rs_slab_destroy(rs_slab *s);
/* Add a chunk to the free list (out of line: rare). Returns 0, or -1 on out of memory. */
int rs_slab_grow(rs_slab *s);

/* An object (contents undefined: the caller initialises it), or NULL on out of memory. */
static inline void *rs_slab_alloc(rs_slab *s)
{
    if (!s->free && rs_slab_grow(s) != 0)
        return NULL;
    void *o = s->free;
    s->free = *(void **)o;
    return o;
}

/* Give an object back for reuse (its first word is overwritten by the free-list link). */
static inline void rs_slab_put(rs_slab *s, void *o)
{
    *(void **)o = s->free;
    s->free = o;
}

#endif
