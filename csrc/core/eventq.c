/* 4-ary min-heap of (time, seq) with lazy cancellation through rs_timer generations. */
#include "rdmasim/eventq.h"

#include <stdlib.h>

#define ARITY 4

static inline int ev_less(const rs_event *a, const rs_event *b)
{
    return a->t_ps < b->t_ps || (a->t_ps == b->t_ps && a->seq < b->seq);
}

int rs_eventq_init(rs_eventq *q, size_t initial_cap)
{
    if (initial_cap < 16)
        initial_cap = 16;
    q->heap = malloc(initial_cap * sizeof(rs_event));
    q->len = 0;
    q->cap = q->heap ? initial_cap : 0;
    q->next_seq = 0;
    q->pushed = 0;
    q->stale = 0;
    return q->heap ? 0 : -1;
}

void rs_eventq_free(rs_eventq *q)
{
    free(q->heap);
    q->heap = NULL;
    q->len = q->cap = 0;
}

static void sift_up(rs_event *h, size_t i)
{
    rs_event e = h[i];
    while (i > 0) {
        size_t parent = (i - 1) / ARITY;
        if (!ev_less(&e, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

static void sift_down(rs_event *h, size_t len, size_t i)
{
    rs_event e = h[i];
    for (;;) {
        size_t first = i * ARITY + 1;
        if (first >= len)
            break;
        size_t best = first;
        size_t last = first + ARITY < len ? first + ARITY : len;
        for (size_t c = first + 1; c < last; c++)
            if (ev_less(&h[c], &h[best]))
                best = c;
        if (!ev_less(&h[best], &e))
            break;
        h[i] = h[best];
        i = best;
    }
    h[i] = e;
}

int rs_timer_arm(rs_eventq *q, rs_timer *tm, int64_t t_ps)
{
    if (q->len == q->cap) {
        /* Amortised growth: the heap is bounded by live timers plus stale entries. */
        size_t ncap = q->cap * 2;
        rs_event *nh = realloc(q->heap, ncap * sizeof(rs_event));
        if (!nh)
            return -1;
        q->heap = nh;
        q->cap = ncap;
    }
    tm->gen++;
    tm->armed = 1;
    tm->when_ps = t_ps;
    rs_event *e = &q->heap[q->len];
    e->t_ps = t_ps;
    e->seq = q->next_seq++;
    e->timer = tm;
    e->gen = tm->gen;
    e->_pad = 0;
    sift_up(q->heap, q->len);
    q->len++;
    q->pushed++;
    return 0;
}

void rs_eventq_drop_head(rs_eventq *q)
{
    q->len--;
    if (q->len > 0) {
        q->heap[0] = q->heap[q->len];
        sift_down(q->heap, q->len, 0);
    }
}

static inline int is_live(const rs_event *e) { return e->timer->armed && e->gen == e->timer->gen; }

int rs_eventq_pop(rs_eventq *q, rs_event *out)
{
    while (q->len > 0) {
        rs_event head = q->heap[0];
        rs_eventq_drop_head(q);
        if (is_live(&head)) {
            head.timer->armed = 0;
            *out = head;
            return 1;
        }
        q->stale++;
    }
    return 0;
}

int64_t rs_eventq_peek_time(rs_eventq *q)
{
    while (q->len > 0 && !is_live(&q->heap[0])) {
        rs_eventq_drop_head(q);
        q->stale++;
    }
    return q->len > 0 ? q->heap[0].t_ps : INT64_MAX;
}
