"""The event queue's two modes (csrc/engine/eventq.c): heap mode while few entries are pending,
wheel mode (timing wheel before the bottom heap) with many, switching at thresholds with
hysteresis.  Both hand out exactly the (time, seq) order of the sorted-list reference model."""

from __future__ import annotations

import bisect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_eventq import RefQueue, check_heap_accounting
from test_eventq_wheel import far_horizons, op, wheels

from rdmasim import _core

N_TIMERS = 16
# (heap_below, wheel_at): wheel mode only; switching nearly every arm; small hysteresis; none
modes = st.sampled_from([(0, 1), (1, 1), (1, 2), (2, 6), (4, 4), (3, 12)])


def run_ops(ops, wheel: tuple[int, int], far_after_ps: int | None, mode: tuple[int, int]) -> None:
    shift, nb = wheel
    q = _core.EventQueueForTest(N_TIMERS, far_after_ps=far_after_ps, bucket_shift=shift, buckets=nb,
                                modes=mode)
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
@given(st.lists(op, max_size=150), wheels, far_horizons, modes)
def test_modes_match_reference(ops, wheel, far_after_ps, mode):
    run_ops(ops, wheel, far_after_ps, mode)


def test_queue_switches_to_wheel_with_many_entries_and_back_with_few():
    """Starts in heap mode; many pending entries turn it to wheel mode, draining turns it back;
    the order stays (time, seq) throughout."""
    n = 64
    q = _core.EventQueueForTest(n, bucket_shift=4, buckets=64, modes=(4, 16))
    ref = RefQueue(n)
    assert q.mode() == ("heap", 0)
    for i in range(8):
        q.arm(i, 10 + 37 * i)
        ref.arm(i, 10 + 37 * i)
    assert q.mode() == ("heap", 0)  # below wheel_at
    for i in range(8, n):
        q.arm(i, 5 + 29 * i % 900)
        ref.arm(i, 5 + 29 * i % 900)
    assert q.mode() == ("wheel", 1)
    popped = 0
    while (got := q.pop()) is not None:
        assert got == ref.pop()
        popped += 1
    assert q.mode() == ("heap", 2)
    check_heap_accounting(q, popped)


def test_wheel_only_mode_never_switches():
    q = _core.EventQueueForTest(4, bucket_shift=2, buckets=64, modes=(0, 1))
    assert q.mode() == ("wheel", 0)
    for i in range(4):
        q.arm(i, 100 * i)
    assert [q.pop()[0] for _ in range(4)] == [0, 100, 200, 300]
    assert q.mode() == ("wheel", 0)


def test_bad_modes_name_the_range():
    with pytest.raises(ValueError, match="heap_below 5, wheel_at 4"):
        _core.EventQueueForTest(1, modes=(5, 4))
    with pytest.raises(ValueError, match="wheel_at >= 1"):
        _core.EventQueueForTest(1, modes=(0, 0))
