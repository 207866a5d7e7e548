"""The event queue's two modes (csrc/engine/eventq.c): heap mode while few entries are pending,
wheel mode (timing wheel before the bottom heap) with many, switching at thresholds with
hysteresis.  Both hand out exactly the (time, seq) order of the sorted-list reference model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_eventq import RefQueue, check_heap_accounting
from test_eventq_wheel import far_horizons, op, run_ops, wheels

from rdmasim import _core

N_TIMERS = 16
# (heap_below, wheel_at): wheel mode only; switching nearly every arm; small hysteresis; none
modes = st.sampled_from([(0, 1), (1, 1), (1, 2), (2, 6), (4, 4), (3, 12)])


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
