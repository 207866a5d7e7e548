/* Event queue: a 4-ary min-heap ordered by (time, insertion sequence).
 *
 * Every event belongs to an rs_timer (an "event source": a port's transmit
 * slot, a link's arrival, a QP's retransmit timer ...).  Cancelling a timer
 * bumps its generation; stale heap entries are skipped when popped (lazy,
 * O(1) cancel).  Ties break by insertion order, so runs are deterministic. */
#ifndef RDMASIM_EVENTQ_H
#define RDMASIM_EVENTQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct rs_timer {
    void *owner;     /* object the event is for */
    uint32_t gen;    /* bumped by cancel: heap entries with an older gen are stale */
    uint16_t kind;   /* what to do when it fires (enum rs_event_kind in sim.h) */
    uint16_t armed;  /* 1 while a live entry is in the heap */
    int64_t when_ps; /* time of the live entry (valid when armed) */
} rs_timer;

typedef struct rs_event {
    int64_t t_ps;
    uint64_t seq;
    rs_timer *timer;
    uint32_t gen;
    uint32_t _pad;
} rs_event;

typedef struct rs_eventq {
    rs_event *heap;
    size_t len;
    size_t cap;
    uint64_t next_seq;
    uint64_t pushed;    /* statistics */
    uint64_t stale;
} rs_eventq;

int rs_eventq_init(rs_eventq *q, size_t initial_cap);
void rs_eventq_free(rs_eventq *q);

/* Arm `tm` to fire at t_ps (any earlier live arming is cancelled). Returns 0, or -1 on out of memory. */
int rs_timer_arm(rs_eventq *q, rs_timer *tm, int64_t t_ps);
/* Cancel `tm` (no-op if not armed). */
static inline void rs_timer_cancel(rs_timer *tm)
{
    tm->gen++;
    tm->armed = 0;
}

/* Pop the earliest live event into *out. Returns 1, or 0 when empty. Disarms its timer. */
int rs_eventq_pop(rs_eventq *q, rs_event *out);
/* Remove the heap's first entry (live or not) without touching its timer. */
void rs_eventq_drop_head(rs_eventq *q);
/* The earliest live entry (stale heads are dropped first), or NULL when empty.  The caller may
 * copy it, rs_eventq_drop_head() and clear its timer's `armed`: rs_eventq_pop in two steps. */
static inline const rs_event *rs_eventq_head(rs_eventq *q)
{
    while (q->len > 0) {
        const rs_event *e = &q->heap[0];
        if (e->timer->armed && e->gen == e->timer->gen)
            return e;
        rs_eventq_drop_head(q);
        q->stale++;
    }
    return NULL;
}
/* Time of the earliest entry (maybe stale), or INT64_MAX when empty; drops stale heads first. */
int64_t rs_eventq_peek_time(rs_eventq *q);

#endif
