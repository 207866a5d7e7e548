/* The timing wheel and 4-ary bottom heap of near entries, the far heap and the far FIFO, all of
 * (time, seq) with lazy cancellation: an entry is live while its timer is armed with the entry's
 * sequence number (see rdmasim/eventq.h). */
#include "rdmasim/eventq.h"

#include <stdlib.h>
#include <string.h>

static int wheel_alloc(rs_eventq *q, uint32_t shift, uint32_t nb)
{
    rs_eventq_bucket *w = calloc(nb, sizeof(*w));
    uint64_t *bits = calloc(nb / 64, sizeof(uint64_t));
    rs_event *first = malloc((size_t)nb * RS_EVENTQ_BUCKET_FIRST * sizeof(rs_event));
    if (!w || !bits || !first) {
        free(w);
        free(bits);
        free(first);
        return -1;
    }
    for (uint32_t i = 0; i < nb; i++) {
        w[i].e = first + (size_t)i * RS_EVENTQ_BUCKET_FIRST;
        w[i].cap = RS_EVENTQ_BUCKET_FIRST;
    }
    q->wheel = w;
    q->wheel_first = first;
    q->wheel_allocs++;
    q->wheel_bits = bits;
    q->nb = nb;
    q->shift = shift;
    q->wheel_len = 0;
    q->cur = 0;
    return 0;
}

/* Free the bucket arrays of `nb` buckets w that outgrew their first storage. */
static void free_grown(rs_eventq_bucket *w, uint32_t nb)
{
    for (uint32_t i = 0; w && i < nb; i++)
        if (w[i].cap > RS_EVENTQ_BUCKET_FIRST)
            free(w[i].e);
}

static void wheel_free(rs_eventq *q)
{
    free_grown(q->wheel, q->nb);
    free(q->wheel);
    free(q->wheel_bits);
    free(q->wheel_first);
    q->wheel = NULL;
    q->wheel_bits = NULL;
    q->wheel_first = NULL;
    q->wheel_len = 0;
}

int rs_eventq_init(rs_eventq *q, size_t initial_cap)
{
    if (initial_cap < 16)
        initial_cap = 16;
    q->heap = malloc(initial_cap * sizeof(rs_event));
    q->len = 0;
    q->cap = q->heap ? initial_cap : 0;
    q->next_seq = 0;
    q->cur_t_ps = 0; /* nothing handed out: the clock stands at 0, all of time 0 still to come */
    q->cur_seq = 0;
    q->pushed = 0;
    q->stale = 0;
    q->hole = 0;
    q->far = NULL;
    q->far_len = q->far_cap = 0;
    q->fifo = NULL;
    q->fifo_first = q->fifo_len = q->fifo_cap = 0;
    q->far_first = NULL;
    q->far_after_ps = RS_EVENTQ_FAR_PS;
    q->far_from_ps = RS_EVENTQ_FAR_PS;
    q->head_from = RS_EVQ_HEAP;
    /* the run starts larger than a bucket's first storage, so that a bucket that fills it has
     * outgrown its first storage (rs_eventq_advance may swap the two arrays) */
    q->run = malloc(2 * RS_EVENTQ_BUCKET_FIRST * sizeof(rs_event));
    q->run_pos = q->run_len = 0;
    q->run_cap = 2 * RS_EVENTQ_BUCKET_FIRST;
    q->wheel = NULL;
    q->wheel_bits = NULL;
    q->wheel_first = NULL;
    q->wheel_allocs = 0;
    if (!q->heap || !q->run || wheel_alloc(q, RS_EVENTQ_BUCKET_SHIFT, RS_EVENTQ_BUCKETS) != 0) {
        free(q->heap);
        free(q->run);
        q->heap = q->run = NULL;
        q->cap = q->run_cap = 0;
        return -1;
    }
    q->heap_below = RS_EVENTQ_HEAP_BELOW;
    q->wheel_at = RS_EVENTQ_WHEEL_AT;
    q->mode_switches = 0;
    q->cur = INT64_MAX; /* an empty queue starts in heap mode */
    q->to_wheel_at = q->wheel_at;
    return 0;
}

static int queue_empty(const rs_eventq *q)
{
    return !q->len && !q->wheel_len && !q->hole && q->run_pos >= q->run_len;
}

int rs_eventq_set_modes(rs_eventq *q, size_t heap_below, size_t wheel_at)
{
    if (wheel_at < 1 || heap_below > wheel_at || !queue_empty(q))
        return -1;
    q->heap_below = heap_below;
    q->wheel_at = wheel_at;
    if (heap_below == 0) {
        q->cur = q->cur_t_ps >> q->shift;
        q->to_wheel_at = SIZE_MAX;
    } else {
        q->cur = INT64_MAX;
        q->to_wheel_at = wheel_at;
    }
    return 0;
}

int rs_eventq_set_wheel(rs_eventq *q, uint32_t shift, uint32_t nb)
{
    if (shift > 40 || nb < 64 || nb > (1u << 24) || (nb & (nb - 1)))
        return -1;
    if (!queue_empty(q))
        return -1;
    rs_eventq_bucket *old = q->wheel;
    uint64_t *old_bits = q->wheel_bits;
    rs_event *old_first = q->wheel_first;
    uint32_t old_nb = q->nb, old_shift = q->shift;
    int64_t old_cur = q->cur;
    if (wheel_alloc(q, shift, nb) != 0) {
        q->wheel = old;
        q->wheel_bits = old_bits;
        q->wheel_first = old_first;
        q->nb = old_nb;
        q->shift = old_shift;
        q->cur = old_cur;
        return -1;
    }
    free_grown(old, old_nb);
    free(old);
    free(old_bits);
    free(old_first);
    q->cur = old_cur == INT64_MAX ? INT64_MAX : q->cur_t_ps >> shift; /* the mode stays */
    return 0;
}

void rs_eventq_free(rs_eventq *q)
{
    free(q->heap);
    free(q->far);
    free(q->fifo);
    free(q->run);
    q->heap = q->far = q->fifo = q->run = NULL;
    q->run_pos = q->run_len = q->run_cap = 0;
    q->len = q->cap = q->far_len = q->far_cap = 0;
    q->fifo_first = q->fifo_len = q->fifo_cap = 0;
    q->far_first = NULL;
    q->hole = 0;
    wheel_free(q);
}

/* Double a heap's storage (amortised: a heap is bounded by live timers plus stale entries). */
static int grow(rs_event **heap, size_t *cap, size_t first)
{
    size_t ncap = *cap ? *cap * 2 : first;
    rs_event *nh = realloc(*heap, ncap * sizeof(rs_event));
    if (!nh)
        return -1;
    *heap = nh;
    *cap = ncap;
    return 0;
}

int rs_eventq_grow(rs_eventq *q) { return grow(&q->heap, &q->cap, 16); }

/* (t, seq) as one unsigned 128-bit number (t's sign bit flipped): one compare, no branch. */
static inline unsigned __int128 key(const rs_event *e)
{
    return (unsigned __int128)((uint64_t)e->t_ps ^ (1ull << 63)) << 64 | e->seq;
}

/* Index of the earliest of h[c..c+3]: a tournament of three comparisons whose winners are chosen
 * by arithmetic, not branches (which child wins is a coin toss to the branch predictor: as
 * conditional jumps these three were over a third of all mispredictions of an incast run). */
static inline size_t min_of_four(const rs_event *h, size_t c)
{
    size_t a = c + (size_t)(key(&h[c + 1]) < key(&h[c]));
    size_t b = c + 2 + (size_t)(key(&h[c + 3]) < key(&h[c + 2]));
    size_t b_wins = (size_t)(key(&h[b]) < key(&h[a]));
    return a + ((b - a) & (0 - b_wins));
}

/* Fill the hole at the root of h[0..n) with e: move the hole down along the smallest children to a
 * leaf, then sift e up from there (Floyd).  e is nearly always one of the latest events (the last
 * leaf, or a timer just armed for the future), so it belongs at the bottom and the usual "is it
 * smaller than the children" test at every level is saved. */
void rs_eventq_fill_root(rs_event *h, size_t n, rs_event e)
{
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c + 4 <= n) { /* all four children: a tournament of three comparisons */
            size_t best = min_of_four(h, c);
            h[i] = h[best];
            i = best;
        } else if (c < n) {
            size_t best = c;
            for (size_t k = c + 1; k < n; k++)
                if (rs_event_less(&h[k], &h[best]))
                    best = k;
            h[i] = h[best];
            i = best;
            break; /* a partial group has no children */
        } else {
            break;
        }
    }
    rs_eventq_sift_up(h, i, e);
}

/* Fill the hole at the root of h[0..n) with a newly armed e, top-down: stop at the first level
 * where e is not later than the smallest child.  New timers are often among the earliest (a
 * port's next transmit-done), so this usually ends near the root. */
void rs_eventq_put_root(rs_event *h, size_t n, int64_t t_ps, uint64_t seq, rs_timer *tm)
{
    const rs_event e = {t_ps, seq, tm};
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1, best;
        if (c + 4 <= n) {
            best = min_of_four(h, c);
        } else if (c < n) {
            best = c;
            for (size_t k = c + 1; k < n; k++)
                if (rs_event_less(&h[k], &h[best]))
                    best = k;
        } else {
            break;
        }
        if (!rs_event_less(&h[best], &e))
            break;
        h[i] = h[best];
        i = best;
    }
    h[i] = e;
}

void rs_eventq_drop_head(rs_eventq *q)
{
    size_t n = --q->len;
    if (n > 0)
        rs_eventq_fill_root(q->heap, n, q->heap[n]);
}

/* Double the FIFO ring, moving its entries to the front of the new storage in order. */
static int grow_fifo(rs_eventq *q)
{
    size_t ncap = q->fifo_cap ? q->fifo_cap * 2 : 64;
    rs_event *nf = malloc(ncap * sizeof(rs_event));
    if (!nf)
        return -1;
    for (size_t i = 0; i < q->fifo_len; i++)
        nf[i] = q->fifo[(q->fifo_first + i) & (q->fifo_cap - 1)];
    free(q->fifo);
    q->fifo = nf;
    q->fifo_cap = ncap;
    q->fifo_first = 0;
    return 0;
}

/* Point far_first at the earlier of the FIFO's first entry and the far heap's root. */
static void update_far_first(rs_eventq *q)
{
    const rs_event *f = q->fifo_len ? &q->fifo[q->fifo_first] : NULL;
    const rs_event *h = q->far_len ? &q->far[0] : NULL;
    q->far_first = !f ? h : !h ? f : rs_event_less(h, f) ? h : f;
}

int rs_eventq_push_far(rs_eventq *q, rs_event e)
{
    const rs_event *last = q->fifo_len ? &q->fifo[(q->fifo_first + q->fifo_len - 1) & (q->fifo_cap - 1)] : NULL;
    if (!last || !rs_event_less(&e, last)) { /* in order: append */
        if (q->fifo_len == q->fifo_cap && grow_fifo(q) != 0)
            return -1;
        q->fifo[(q->fifo_first + q->fifo_len++) & (q->fifo_cap - 1)] = e;
    } else {
        if (q->far_len == q->far_cap && grow(&q->far, &q->far_cap, 64) != 0)
            return -1;
        rs_eventq_sift_up(q->far, q->far_len++, e);
    }
    update_far_first(q); /* the storage may have moved */
    q->pushed++;
    return 0;
}

void rs_eventq_drop_far_first(rs_eventq *q)
{
    if (q->fifo_len && q->far_first == &q->fifo[q->fifo_first]) {
        q->fifo_first = (q->fifo_first + 1) & (q->fifo_cap - 1);
        q->fifo_len--;
    } else {
        size_t n = --q->far_len;
        if (n > 0)
            rs_eventq_fill_root(q->far, n, q->far[n]);
    }
    update_far_first(q);
}

int rs_eventq_pop(rs_eventq *q, rs_event *out)
{
    const rs_event *head = rs_eventq_head(q);
    if (!head)
        return 0;
    *out = *head;
    rs_eventq_consume_head(q);
    rs_eventq_settle(q);
    out->timer->armed = 0;
    return 1;
}

int64_t rs_eventq_peek_time(rs_eventq *q)
{
    const rs_event *head = rs_eventq_head(q);
    return head ? head->t_ps : INT64_MAX;
}

int rs_eventq_wheel_grow(rs_eventq *q, rs_eventq_bucket *b)
{
    uint32_t ncap = b->cap * 2;
    rs_event *ne;
    if (b->cap > RS_EVENTQ_BUCKET_FIRST) {
        ne = realloc(b->e, (size_t)ncap * sizeof(rs_event));
    } else { /* leaving its first storage (in the block): an array of its own */
        ne = malloc((size_t)ncap * sizeof(rs_event));
        if (ne)
            memcpy(ne, b->e, (size_t)b->len * sizeof(rs_event));
    }
    if (!ne)
        return -1;
    q->wheel_allocs++;
    b->e = ne;
    b->cap = ncap;
    return 0;
}

/* The first non-empty slot at or after `from`, in circular order (the wheel is not empty). */
static uint32_t next_slot(const rs_eventq *q, uint32_t from)
{
    uint32_t nw = q->nb >> 6, w = from >> 6;
    uint64_t word = q->wheel_bits[w] & (~0ull << (from & 63));
    while (!word) {
        w = (w + 1) & (nw - 1);
        word = q->wheel_bits[w];
    }
    return (w << 6) | (uint32_t)__builtin_ctzll(word);
}

static int cmp_event(const void *a, const void *b)
{
    return rs_event_less(a, b) ? -1 : rs_event_less(b, a) ? 1 : 0;
}

/* Move every wheel entry into the bottom heap, which has room for them. */
static void wheel_to_heap(rs_eventq *q)
{
    for (uint32_t w = 0; q->wheel_len && w < (q->nb >> 6); w++) {
        while (q->wheel_bits[w]) {
            uint32_t slot = (w << 6) | (uint32_t)__builtin_ctzll(q->wheel_bits[w]);
            rs_eventq_bucket *b = &q->wheel[slot];
            for (uint32_t i = 0; i < b->len; i++)
                rs_eventq_sift_up(q->heap, q->len++, b->e[i]);
            q->wheel_len -= b->len;
            b->len = 0;
            q->wheel_bits[w] &= q->wheel_bits[w] - 1;
        }
    }
}

/* Restore the heap property of heap[0..len). */
static void heapify(rs_eventq *q)
{
    for (size_t i = 1; i < q->len; i++)
        rs_eventq_sift_up(q->heap, i, q->heap[i]);
}

void rs_eventq_to_wheel(rs_eventq *q)
{
    const int64_t c = q->cur_t_ps >> q->shift; /* the clock's bucket: its entries stay in the heap */
    const size_t n = q->len;
    size_t k = 0, i = 0;
    int failed = 0;
    q->cur = c;
    for (; i < n; i++) {
        rs_event e = q->heap[i];
        int64_t b = e.t_ps >> q->shift;
        if (b <= c) {
            q->heap[k++] = e;
        } else if (b - c < (int64_t)q->nb) {
            uint32_t slot = (uint32_t)b & (q->nb - 1);
            rs_eventq_bucket *bk = &q->wheel[slot];
            if (bk->len == bk->cap && rs_eventq_wheel_grow(q, bk) != 0) {
                failed = 1;
                break;
            }
            bk->e[bk->len++] = e;
            q->wheel_bits[slot >> 6] |= 1ull << (slot & 63);
            q->wheel_len++;
        } else {
            if (rs_eventq_push_far(q, e) != 0) {
                failed = 1;
                break;
            }
            q->pushed--; /* a move, not an arm */
        }
    }
    if (failed) { /* out of memory: back to heap mode with every entry not moved far */
        for (; i < n; i++)
            q->heap[k++] = q->heap[i];
        q->len = k;
        heapify(q);
        wheel_to_heap(q);
        q->cur = INT64_MAX;
        q->to_wheel_at = n * 2;
        return;
    }
    q->len = k;
    heapify(q);
    q->to_wheel_at = SIZE_MAX;
    q->mode_switches++;
}

/* Wheel mode -> heap mode, when the wheel holds fewer than heap_below entries (and the bottom
 * heap and the run are used up).  Returns 1 if it switched. */
static int to_heap(rs_eventq *q)
{
    if (q->wheel_len >= q->heap_below)
        return 0;
    while (q->cap < q->wheel_len)
        if (rs_eventq_grow(q) != 0)
            return 0; /* out of memory: stay in wheel mode */
    wheel_to_heap(q);
    q->cur = INT64_MAX;
    q->to_wheel_at = q->wheel_at;
    q->mode_switches++;
    return 1;
}

void rs_eventq_advance(rs_eventq *q)
{
    if (to_heap(q))
        return;
    uint32_t mask = q->nb - 1, from = (uint32_t)(q->cur + 1) & mask;
    uint32_t slot = next_slot(q, from);
    q->cur += 1 + (int64_t)((slot - from) & mask);
    rs_eventq_bucket *b = &q->wheel[slot];
    q->wheel_bits[slot >> 6] &= ~(1ull << (slot & 63));
    size_t n = b->len;
    q->wheel_len -= n;
    b->len = 0;
    const rs_event *src = b->e;
    if (n > q->run_cap) { /* the run's storage grows to the fullest bucket (and stays in the cache) */
        size_t ncap = q->run_cap * 2 > n ? q->run_cap * 2 : n;
        rs_event *nr = realloc(q->run, ncap * sizeof(rs_event));
        if (nr) {
            q->run = nr;
            q->run_cap = ncap;
        } else { /* out of memory: take the bucket's storage instead, give it the run's (both
                  * malloc'ed: the bucket holds more than the run, which starts above a bucket's
                  * first storage) */
            rs_event *r = q->run;
            size_t r_cap = q->run_cap; /* < n <= b->cap */
            q->run = b->e;
            q->run_cap = b->cap;
            b->e = r;
            b->cap = (uint32_t)r_cap;
            src = q->run;
        }
    }
    /* sort by (time, seq): armed in seq order, so an insertion sort does little unless times
     * within the bucket came out of order; past a bound, qsort */
    rs_event *r = q->run;
    size_t moves = 0;
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        rs_event e = src[i];
        size_t j = i;
        if (sorted) {
            while (j > 0 && rs_event_less(&e, &r[j - 1])) {
                r[j] = r[j - 1];
                j--;
                moves++;
            }
            if (moves > 8 * n + 64)
                sorted = 0; /* far out of order: sort all at the end */
        }
        r[j] = e;
    }
    if (!sorted)
        qsort(r, n, sizeof(rs_event), cmp_event);
    q->run_pos = 0;
    q->run_len = n;
}
