/* 4-ary min-heaps (near and far) and the far FIFO of (time, seq) with lazy cancellation: an entry
 * is live while its timer is armed with the entry's sequence number (see rdmasim/eventq.h). */
#include "rdmasim/eventq.h"

#include <stdlib.h>

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
    q->head_far = 0;
    return q->heap ? 0 : -1;
}

void rs_eventq_free(rs_eventq *q)
{
    free(q->heap);
    free(q->far);
    free(q->fifo);
    q->heap = q->far = q->fifo = NULL;
    q->len = q->cap = q->far_len = q->far_cap = 0;
    q->fifo_first = q->fifo_len = q->fifo_cap = 0;
    q->far_first = NULL;
    q->hole = 0;
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
