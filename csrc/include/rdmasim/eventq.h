/* Event queue: entries ordered by (time, insertion sequence).
 *
 * Every event belongs to an rs_timer (an "event source": a port's transmit
 * slot, a link's arrival, a QP's retransmit timer ...).  An entry is live
 * while its timer is armed and still remembers the entry's sequence number;
 * re-arming or cancelling a timer leaves its old entry stale, and stale
 * entries are skipped when they reach the front (lazy, O(1) cancel).  Ties
 * break by `seq`: an insertion counter here (rs_timer_arm), the arming entity's key in a
 * simulation (engine/engine.h, rs_timer_arm_seq), so runs are deterministic.
 *
 * Near entries live in a timing wheel (a calendar queue) of `nb` buckets of 2^shift ps each,
 * covering the buckets after the current one.  Arming appends to a bucket (O(1)).  When the
 * current bucket is used up, the next non-empty one (found in a bitmap) becomes the "run": its
 * entries are copied into the run's storage (one array, the size of the fullest bucket, that
 * stays in the cache) and sorted by (time, seq), which is nearly free because a bucket's entries
 * were armed in seq order and often share their time (a fabric's links run in step); the run is
 * then handed out front to back, O(1) an event, stale entries skipped.  An
 * entry armed into the current bucket itself (or earlier) goes into a small 4-ary "bottom" heap,
 * and the near head is the earlier of the run's front and the heap's root.  So an event costs
 * neither a heap of all pending entries (tens of thousands at 1,024 hosts) nor a sift.  The
 * order handed out is exactly (time, seq), whatever the bucket width: the wheel only ever holds
 * entries later than every entry of the run and the bottom heap.
 *
 * Entries beyond the wheel's span, or more than `far_after_ps` after the last event handed out,
 * go "far": mostly retransmit timers that are re-armed or cancelled long before they fire.  The
 * head is the earlier of the near head and the earliest far entry (the same total order as one
 * heap).  The far entries themselves live in a FIFO while they arrive in (time, seq) order,
 * which timers of one duration armed as time goes on do (every QP's retransmit timer with the
 * same timeout): an append and a pop are O(1).  An entry earlier than the FIFO's last goes to
 * the far heap.
 *
 * With few near entries pending (an incast: about one entry a bucket) the wheel costs more than a
 * small heap, so the queue has two modes.  In heap mode `cur` stands at INT64_MAX: every near
 * entry goes into the bottom heap and the wheel and the run stay empty.  When the bottom heap
 * reaches `wheel_at` entries the queue turns to wheel mode: entries of later buckets move from the
 * heap to the wheel (or far, beyond its span).  When the wheel holds fewer than `heap_below`
 * entries as a bucket is taken, the queue turns back to heap mode, moving the wheel's entries to
 * the heap.  The thresholds are far apart (hysteresis), so each move is paid for by many events.
 * Either mode hands out the same (time, seq) order. */
#ifndef RDMASIM_EVENTQ_H
#define RDMASIM_EVENTQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct rs_timer {
    void *owner;     /* object the event is for */
    uint64_t seq;    /* sequence number of the live heap entry (valid when armed) */
    int64_t when_ps; /* time of the live entry (valid when armed) */
    uint16_t kind;   /* what to do when it fires (enum rs_event_kind in sim.h) */
    uint16_t armed;  /* 1 while a live entry is in the heap */
    uint32_t ent;    /* the model entity (node) it belongs to: keys of what its event arms (engine.h) */
} rs_timer;

/* 24 bytes: the key (time, seq) and the timer; liveness is checked against the timer. */
typedef struct rs_event {
    int64_t t_ps;
    uint64_t seq;
    rs_timer *timer;
} rs_event;

#define RS_EVENTQ_FAR_PS 50000000 /* 50 us: beyond link delays, pause quanta and transmit slots */
#define RS_EVENTQ_BUCKET_SHIFT 9   /* 512 ps per wheel bucket */
#define RS_EVENTQ_BUCKETS 8192     /* wheel span: 8192 x 512 ps = 4.2 us */
#define RS_EVENTQ_HEAP_BELOW 16    /* wheel -> heap mode below this many entries in the wheel */
#define RS_EVENTQ_WHEEL_AT 128     /* heap -> wheel mode at this many entries in the bottom heap */
#define RS_EVENTQ_BUCKET_FIRST 8   /* entries of a bucket's first storage, carved from one block */

enum { RS_EVQ_HEAP, RS_EVQ_RUN, RS_EVQ_FAR };

/* One wheel bucket: its entries in the order armed (unsorted). */
typedef struct rs_eventq_bucket {
    rs_event *e;
    uint32_t len;
    uint32_t cap;
} rs_eventq_bucket;

typedef struct rs_eventq {
    rs_event *heap; /* bottom heap: entries armed into buckets up to `cur` after it became the run */
    size_t len;
    size_t cap;
    rs_event *run;  /* bucket `cur`'s entries sorted by (time, seq): run[run_pos .. run_len) to come */
    size_t run_pos;
    size_t run_len;
    size_t run_cap;
    /* timing wheel: slot (t >> shift) & (nb - 1) holds the entries of absolute bucket t >> shift,
     * for the buckets cur + 1 .. cur + nb - 1 */
    rs_eventq_bucket *wheel;
    /* every bucket's first RS_EVENTQ_BUCKET_FIRST entries, one block allocated with the wheel (its
     * pages are touched only as buckets fill); a bucket that outgrows them moves to a malloc'ed
     * array of its own (cap > RS_EVENTQ_BUCKET_FIRST).  One allocation instead of one per bucket:
     * a run's first pass over the wheel cost a malloc per 512 ps bucket */
    rs_event *wheel_first;
    uint64_t wheel_allocs; /* statistics: allocations of bucket storage (the block counts one) */
    uint64_t *wheel_bits; /* bit i: slot i is not empty */
    size_t wheel_len;     /* entries in the wheel */
    int64_t cur;          /* the absolute bucket number drained into the bottom heap last */
    uint32_t nb;          /* buckets: a power of two, >= 64 */
    uint32_t shift;       /* bucket width 2^shift ps */
    rs_event *far;  /* far heap: far entries that came out of order (see above) */
    size_t far_len;
    size_t far_cap;
    rs_event *fifo; /* far FIFO: a ring of far entries in (time, seq) order */
    size_t fifo_first; /* index of the earliest */
    size_t fifo_len;
    size_t fifo_cap;   /* a power of two (or 0) */
    /* the earliest far entry (the FIFO's first or the far heap's root), NULL when both are empty:
     * kept by the out-of-line far functions so that each event compares one far entry, as with one
     * far heap */
    const rs_event *far_first;
    int64_t far_after_ps; /* horizon: RS_EVENTQ_FAR_PS unless a test sets it */
    int64_t far_from_ps;  /* entries at or after this time go far */
    int head_from;        /* where the entry rs_eventq_head returned is: RS_EVQ_HEAP, _RUN or _FAR */
    uint64_t next_seq;
    /* key of the entry handed out last (rs_eventq_consume_head): where the queue stands now */
    int64_t cur_t_ps;
    uint64_t cur_seq;
    uint64_t pushed;    /* statistics */
    uint64_t stale;
    /* 1: heap[0] is an entry already handed out (rs_eventq_consume_head) and still in `len`; the
     * next arm into the bottom heap takes its place (one sift instead of a pop and a push),
     * anything else removes it */
    int hole;
    /* modes (see above): heap mode while cur == INT64_MAX */
    size_t to_wheel_at; /* wheel_at in heap mode, SIZE_MAX in wheel mode (one compare per arm) */
    size_t heap_below;
    size_t wheel_at;
    uint64_t mode_switches; /* statistics */
} rs_eventq;

int rs_eventq_init(rs_eventq *q, size_t initial_cap);
void rs_eventq_free(rs_eventq *q);
/* Set the wheel's bucket width (2^shift ps, shift 0..40) and bucket count (a power of two in
 * 64..2^24) of an empty queue.  Returns 0, or -1 (bad values, not empty, out of memory). */
int rs_eventq_set_wheel(rs_eventq *q, uint32_t shift, uint32_t nb);
/* Set the mode thresholds of an empty queue: heap mode below `heap_below` entries in the wheel,
 * wheel mode at `wheel_at` entries in the bottom heap (1 <= wheel_at, heap_below <= wheel_at; a
 * heap_below of 0 keeps the queue in wheel mode).  Returns 0, or -1 (bad values, not empty). */
int rs_eventq_set_modes(rs_eventq *q, size_t heap_below, size_t wheel_at);
/* Heap mode -> wheel mode (the bottom heap reached to_wheel_at entries, no hole).  Out of memory,
 * the queue stays in heap mode, intact, and tries again at twice the entries. */
void rs_eventq_to_wheel(rs_eventq *q);
/* Append e to its wheel bucket (out of line: when the bucket's storage must grow). */
int rs_eventq_wheel_grow(rs_eventq *q, rs_eventq_bucket *b);
/* Make the next non-empty bucket the run, or turn to heap mode when the wheel holds fewer than
 * heap_below entries (the run and the bottom heap are used up, the wheel is not empty). */
void rs_eventq_advance(rs_eventq *q);

/* Grow the near heap (out of line: rare). Returns 0, or -1 on out of memory. */
int rs_eventq_grow(rs_eventq *q);
/* Insert a far entry: appended to the FIFO when not earlier than its last, else into the far heap
 * (out of line: once per retransmit timer arming, not per packet). */
int rs_eventq_push_far(rs_eventq *q, rs_event e);
/* Remove far_first (live or not) from the FIFO or the far heap. */
void rs_eventq_drop_far_first(rs_eventq *q);

/* (a.t, a.seq) < (b.t, b.seq) */
static inline int rs_event_less(const rs_event *a, const rs_event *b)
{
    return a->t_ps < b->t_ps || (a->t_ps == b->t_ps && a->seq < b->seq);
}

/* Put `e` into the hole at heap[0] of the n entries heap[0..n): Floyd (bottom-up, for an entry
 * that belongs near the bottom) and top-down (out of line: eventq.c). */
void rs_eventq_fill_root(rs_event *h, size_t n, rs_event e);
/* put_root takes the entry as scalars, in registers: a 24-byte struct argument goes through the
 * stack, written as 8-byte stores and read back 16 bytes at a time, a store-forwarding stall that
 * was most of rs_sim_arm's time. */
void rs_eventq_put_root(rs_event *h, size_t n, int64_t t_ps, uint64_t seq, rs_timer *tm);

/* Arm `tm` to fire at t_ps (any earlier live arming is cancelled). Returns 0, or -1 on out of memory. */
/* Place e at slot i of heap h or above it (moving later parents down). */
static inline void rs_eventq_sift_up(rs_event *h, size_t i, rs_event e)
{
    while (i > 0) {
        size_t parent = (i - 1) >> 2;
        if (!rs_event_less(&e, &h[parent]))
            break;
        h[i] = h[parent];
        i = parent;
    }
    h[i] = e;
}

/* Arm `tm` at t_ps with the sequence number `seq`: a fresh one (rs_timer_arm) or one reserved
 * earlier (rs_eventq_reserve_seq).  A reserved one is valid only while (t_ps, seq) is not yet
 * passed (rs_eventq_passed): the queue is ordered by (time, seq), wherever a key comes from. */
static inline int rs_timer_arm_seq(rs_eventq *q, rs_timer *tm, int64_t t_ps, uint64_t seq)
{
    int64_t b = t_ps >> q->shift; /* absolute bucket (arithmetic shift: floor for negative times) */
    rs_event e = {t_ps, seq, tm};
    if (t_ps >= q->far_from_ps)
        goto far;
    if (b > q->cur) { /* wheel mode, a later bucket: append to the wheel, or far beyond its span */
        if (b - q->cur >= (int64_t)q->nb)
            goto far;
        uint32_t slot = (uint32_t)b & (q->nb - 1);
        rs_eventq_bucket *bk = &q->wheel[slot];
        if (bk->len == bk->cap && rs_eventq_wheel_grow(q, bk) != 0)
            return -1;
        bk->e[bk->len++] = e;
        q->wheel_bits[slot >> 6] |= 1ull << (slot & 63);
        q->wheel_len++;
    } else if (q->hole) { /* the event being handled left its slot at the root: fill it */
        q->hole = 0;
        rs_eventq_put_root(q->heap, q->len, t_ps, seq, tm);
    } else {
        if (q->len == q->cap && rs_eventq_grow(q) != 0)
            return -1;
        /* a new entry is usually among the latest, so the sift rarely moves */
        rs_eventq_sift_up(q->heap, q->len++, e);
        if (q->len >= q->to_wheel_at)
            rs_eventq_to_wheel(q);
    }
    q->pushed++;
    goto armed;
far:
    if (rs_eventq_push_far(q, e) != 0) /* counts it in `pushed` */
        return -1;
armed:
    tm->seq = seq;
    tm->armed = 1;
    tm->when_ps = t_ps;
    return 0;
}

static inline int rs_timer_arm(rs_eventq *q, rs_timer *tm, int64_t t_ps)
{
    return rs_timer_arm_seq(q, tm, t_ps, q->next_seq++);
}

/* A sequence number for an event that may be armed later (rs_timer_arm_seq) or never: the
 * numbers after it are those they would be had it been armed now, so arming it later keeps
 * the order of equal-time events exactly as if it had been armed now. */
static inline uint64_t rs_eventq_reserve_seq(rs_eventq *q) { return q->next_seq++; }

/* 1 if an entry with key (t_ps, seq) would already have been handed out at clock now_ps: it is
 * earlier than now, or at now and before the last entry handed out, or at now after the clock
 * moved past every entry handed out (a run that ended at its time limit had no more entries up
 * to it). */
static inline int rs_eventq_passed(const rs_eventq *q, int64_t now_ps, int64_t t_ps, uint64_t seq)
{
    return t_ps < now_ps || (t_ps == now_ps && (q->cur_t_ps < now_ps || seq < q->cur_seq));
}

/* Cancel `tm` (no-op if not armed). */
static inline void rs_timer_cancel(rs_timer *tm) { tm->armed = 0; }

static inline int rs_event_live(const rs_event *e) { return e->timer->armed && e->timer->seq == e->seq; }

/* Pop the earliest live event into *out. Returns 1, or 0 when empty. Disarms its timer. */
int rs_eventq_pop(rs_eventq *q, rs_event *out);
/* Remove the bottom heap's first entry (live or not) without touching its timer. */
void rs_eventq_drop_head(rs_eventq *q);
/* Remove a pending hole (see `hole`). */
static inline void rs_eventq_settle(rs_eventq *q)
{
    if (q->hole) {
        q->hole = 0;
        rs_eventq_drop_head(q);
    }
}
/* Hand out the head returned by rs_eventq_head: a near head stays in place as a hole until the
 * next arm fills it or the next head/peek/pop removes it; a far head leaves its heap now.  The
 * caller copies it first and clears its timer's `armed`.  Its time is the new "now" of the far
 * horizon (saturating: times near INT64_MAX are legal keys). */
static inline void rs_eventq_consume_head(rs_eventq *q)
{
    const rs_event *h = q->head_from == RS_EVQ_FAR   ? q->far_first
                        : q->head_from == RS_EVQ_RUN ? &q->run[q->run_pos]
                                                     : &q->heap[0];
    int64_t t = h->t_ps;
    q->cur_t_ps = t;
    q->cur_seq = h->seq;
    q->far_from_ps = t > INT64_MAX - q->far_after_ps ? INT64_MAX : t + q->far_after_ps;
    if (q->head_from == RS_EVQ_RUN) {
        q->run_pos++;
    } else if (q->head_from == RS_EVQ_FAR) {
        rs_eventq_drop_far_first(q);
        /* nothing near: the wheel may start at the clock (arms are never before it) */
        if (q->len == 0 && q->run_pos == q->run_len && q->wheel_len == 0 && (t >> q->shift) > q->cur)
            q->cur = t >> q->shift;
    } else {
        q->hole = 1;
    }
}
/* Drop stale entries from the front of the far entries. */
static inline void rs_eventq_clean_far(rs_eventq *q)
{
    while (q->far_first && !rs_event_live(q->far_first)) {
        rs_eventq_drop_far_first(q);
        q->stale++;
    }
}
/* The earliest live entry (stale heads are dropped first), or NULL when empty.  The caller may
 * copy it, rs_eventq_consume_head() and clear its timer's `armed`: rs_eventq_pop in two steps. */
static inline const rs_event *rs_eventq_head(rs_eventq *q)
{
    rs_eventq_settle(q);
    for (;;) {
        while (q->len > 0 && !rs_event_live(&q->heap[0])) {
            rs_eventq_drop_head(q);
            q->stale++;
        }
        while (q->run_pos < q->run_len && !rs_event_live(&q->run[q->run_pos])) {
            q->run_pos++;
            q->stale++;
        }
        if (q->len > 0 || q->run_pos < q->run_len || q->wheel_len == 0)
            break;
        rs_eventq_advance(q);
    }
    rs_eventq_clean_far(q);
    const rs_event *near = NULL;
    q->head_from = RS_EVQ_HEAP;
    if (q->run_pos < q->run_len) {
        near = &q->run[q->run_pos];
        if (q->len > 0 && rs_event_less(&q->heap[0], near))
            near = &q->heap[0];
        else
            q->head_from = RS_EVQ_RUN;
    } else if (q->len > 0) {
        near = &q->heap[0];
    }
    if (q->far_first && (!near || rs_event_less(q->far_first, near))) {
        q->head_from = RS_EVQ_FAR;
        return q->far_first;
    }
    return near;
}
/* Time of the earliest entry (maybe stale), or INT64_MAX when empty; drops stale heads first. */
int64_t rs_eventq_peek_time(rs_eventq *q);

#endif
