"""The event queue's timing wheel (csrc/engine/eventq.c) against the sorted-list reference model of
test_eventq.py, with small wheels so that entries spread over many buckets, wrap around the wheel,
fall beyond its span (far entries), share a bucket or a timestamp, are cancelled or re-armed in
any bucket, and are armed with reserved sequence numbers."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_eventq import RefQueue, check_heap_accounting

from rdmasim import _core

N_TIMERS = 16
# (bucket_shift, buckets): 1 ps buckets, 16 ps buckets over a 1 ns span, the default 512 ps x 8192
wheels = st.sampled_from([(0, 64), (4, 64), (3, 128), (9, 8192)])
far_horizons = st.sampled_from([None, 0, 50, 10**9])
timer_idx = st.integers(0, N_TIMERS - 1)
# offsets from the clock: the same bucket, nearby buckets, around the span of each wheel, far
offsets = st.one_of(st.integers(0, 3), st.integers(0, 40), st.integers(0, 2_000), st.integers(0, 10**7))
op = st.one_of(
    st.tuples(st.just("arm"), timer_idx, offsets),
    st.tuples(st.just("arm"), timer_idx, offsets),
    st.tuples(st.just("cancel"), timer_idx),
    st.tuples(st.just("reserve"), timer_idx, offsets),
    st.tuples(st.just("arm_reserved"), timer_idx),
    st.tuples(st.just("pop")),
    st.tuples(st.just("peek")),
)


def run_ops(ops, wheel: tuple[int, int], far_after_ps: int | None,
            mode: tuple[int, int] | None = None) -> None:
    """Apply ``ops`` to a queue with this wheel (and heap/wheel switching thresholds ``mode``, the
    default's when None) and to the reference model; every pop, peek and length must agree."""
    shift, nb = wheel
    extra = {} if mode is None else {"modes": mode}
    q = _core.EventQueueForTest(N_TIMERS, far_after_ps=far_after_ps, bucket_shift=shift, buckets=nb, **extra)
    ref = RefQueue(N_TIMERS)
    pending: dict[int, tuple[int, int]] = {}
    now, last = 0, None
    for o in ops:
        if o[0] == "arm":
            q.arm(o[1], now + o[2])
            ref.arm(o[1], now + o[2])
        elif o[0] == "cancel":
            q.cancel(o[1])
            ref.cancel(o[1])
        elif o[0] == "reserve":
            seq = q.reserve_seq()
            assert seq == ref.next_seq
            ref.next_seq += 1
            pending[o[1]] = (now + o[2], seq)
        elif o[0] == "arm_reserved" and o[1] in pending:
            t, seq = pending.pop(o[1])
            t = max(t, now)
            passed = last is not None and (t, seq) < last
            assert q.passed(now, t, seq) == passed
            if not passed:
                q.arm_seq(o[1], t, seq)
                ref.cancel(o[1])
                ent = (t, seq, o[1])
                bisect.insort(ref.entries, ent)
                ref.by_timer[o[1]] = ent
        elif o[0] == "pop":
            got, want = q.pop(), ref.pop()
            assert got == want, (o, got, want)
            if got is not None:
                now, last = got[0], (got[0], got[1])
        elif o[0] == "peek":
            assert q.peek_time() == ref.peek_time()
        assert len(q) == len(ref)
    drained = []
    while (ev := q.pop()) is not None:
        drained.append(ev)
    assert drained == ref.entries
    assert q.pop() is None and q.peek_time() is None


@settings(max_examples=400, deadline=None)
@given(st.lists(op, max_size=150), wheels, far_horizons)
def test_wheel_matches_reference(ops, wheel, far_after_ps):
    run_ops(ops, wheel, far_after_ps)


def test_equal_times_in_one_bucket_pop_in_arming_order():
    """Entries of one bucket, some at one time, armed out of time order: (time, seq) order."""
    q = _core.EventQueueForTest(6, bucket_shift=4, buckets=64)
    for i, t in enumerate([40, 35, 40, 33, 40, 35]):  # all in bucket 2 (32..47 ps)
        q.arm(i, t)
    assert [q.pop() for _ in range(6)] == [(33, 3, 3), (35, 1, 1), (35, 5, 5), (40, 0, 0), (40, 2, 2),
                                           (40, 4, 4)]
    assert q.pop() is None


def test_cancelled_and_rearmed_entries_in_buckets_are_skipped():
    q = _core.EventQueueForTest(4, bucket_shift=2, buckets=64)
    q.arm(0, 100)
    q.arm(1, 100)
    q.arm(2, 60)
    q.cancel(1)  # stale in its bucket
    q.arm(0, 30)  # re-armed earlier: the entry at 100 is stale
    q.arm(3, 100)
    assert [q.pop(), q.pop(), q.pop(), q.pop()] == [(30, 3, 0), (60, 2, 2), (100, 4, 3), None]
    hs = q.heap_stats()
    assert hs["heap_len"] == 0 and hs["stale"] == 2 and hs["pushed"] == 5


def test_wheel_wraps_many_times_in_order():
    """A clock running over many spans of a 64-bucket wheel: arms at several distances each pop."""
    q = _core.EventQueueForTest(8, bucket_shift=1, buckets=64)
    ref = RefQueue(8)
    now, popped = 0, 0
    for i in range(8):
        q.arm(i, i * 7)
        ref.arm(i, i * 7)
    while popped < 5_000:
        got = q.pop()
        assert got == ref.pop()
        now = got[0]
        popped += 1
        d = (3, 50, 127, 128, 129, 400)[popped % 6]  # within, at and beyond the 128 ps span
        q.arm(got[2], now + d)
        ref.arm(got[2], now + d)
    check_heap_accounting(q, popped)


def test_bad_wheel_parameters_name_the_range():
    with pytest.raises(ValueError, match="power of two in 64..16777216"):
        _core.EventQueueForTest(1, bucket_shift=4, buckets=100)
    with pytest.raises(ValueError, match="bucket_shift 0..40"):
        _core.EventQueueForTest(1, bucket_shift=41, buckets=64)


def test_wheel_buckets_first_storage_is_one_block() -> None:
    """Filling every bucket of the default wheel allocates no bucket storage: each bucket's first
    entries live in one block allocated with the wheel; only a bucket outgrowing them allocates
    (and its entries still come out in (time, seq) order)."""
    nb, first = 8192, 8
    q = _core.EventQueueForTest(nb + first + 1, modes=(0, 1))  # wheel mode only
    assert q.wheel_allocs() == 1
    for i in range(nb - 1):  # one entry in each bucket after the current one
        q.arm(i, 512 * (i + 1))
    assert q.wheel_allocs() == 1
    # one bucket outgrows its first storage: one allocation, then its entries are handed out in order
    last = 512 * nb - 1
    for k in range(first + 1):
        q.arm(nb - 1 + k, last - k)
    assert q.wheel_allocs() == 2
    got = [q.pop() for _ in range(nb - 1 + first + 1)]
    assert [t for t, _, _ in got] == sorted(t for t, _, _ in got)
    last_bucket = [(t, i) for t, _, i in got[-(first + 1):]]
    assert last_bucket == sorted((last - k, nb - 1 + k) for k in range(first + 1))
    assert q.pop() is None
