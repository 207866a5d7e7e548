"""Event queue (csrc/engine/eventq.c) and RNG (csrc/engine/rng.c) against pure-Python reference models.

The event queue is a 4-ary min-heap ordered by (time, insertion sequence) whose entries belong to
rs_timer event sources; re-arming a timer cancels its earlier arming, cancel is lazy (generation
bump) and stale entries must never come out of pop().
"""

from __future__ import annotations

import bisect
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdmasim import _core

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


class RefQueue:
    """Reference model: a sorted list of live (t_ps, seq, timer) entries, one per armed timer."""

    def __init__(self, n_timers: int) -> None:
        self.entries: list[tuple[int, int, int]] = []
        self.by_timer: dict[int, tuple[int, int, int]] = {}
        self.next_seq = 0
        self.n_timers = n_timers

    def arm(self, i: int, t: int) -> None:
        self.cancel(i)
        ent = (t, self.next_seq, i)
        self.next_seq += 1
        bisect.insort(self.entries, ent)
        self.by_timer[i] = ent

    def cancel(self, i: int) -> None:
        ent = self.by_timer.pop(i, None)
        if ent is not None:
            self.entries.remove(ent)

    def pop(self) -> tuple[int, int, int] | None:
        if not self.entries:
            return None
        ent = self.entries.pop(0)
        del self.by_timer[ent[2]]
        return ent

    def peek_time(self) -> int | None:
        return self.entries[0][0] if self.entries else None

    def __len__(self) -> int:
        return len(self.entries)


def check_heap_accounting(q: _core.EventQueueForTest, pops: int) -> None:
    """Every pushed entry is in the heap, was popped live, or was skipped as stale."""
    hs = q.heap_stats()
    assert hs["pushed"] == hs["heap_len"] + pops + hs["stale"]
    assert hs["heap_len"] >= len(q)


# ---- strategies ----
N_TIMERS = 12
# Mostly a narrow band of times so that ties (ordered by insertion) are frequent, plus extremes.
times = st.one_of(
    st.integers(0, 20),
    st.integers(0, 10**12),
    st.integers(0, 70_000_000),  # around the default near horizon (50 us)
    st.sampled_from([INT64_MIN, -1, INT64_MAX - 1, INT64_MAX]),
)
timer_idx = st.integers(0, N_TIMERS - 1)
op = st.one_of(
    st.tuples(st.just("arm"), timer_idx, times),
    st.tuples(st.just("arm"), timer_idx, times),  # arms twice as likely as the rest
    st.tuples(st.just("cancel"), timer_idx),
    st.tuples(st.just("pop")),
    st.tuples(st.just("peek")),
)


# Horizon of the far heap: default (50 us), everything far, a narrow near band, almost nothing far.
far_horizons = st.sampled_from([None, 0, 10, 10**9])


def apply_ops(ops, n_timers: int = N_TIMERS, far_after_ps: int | None = None):
    q = _core.EventQueueForTest(n_timers, far_after_ps=far_after_ps)
    ref = RefQueue(n_timers)
    pops = 0
    for o in ops:
        if o[0] == "arm":
            q.arm(o[1], o[2])
            ref.arm(o[1], o[2])
        elif o[0] == "cancel":
            q.cancel(o[1])
            ref.cancel(o[1])
        elif o[0] == "pop":
            got, want = q.pop(), ref.pop()
            assert got == want, (o, got, want)
            if got is not None:
                pops += 1
        else:
            assert q.peek_time() == ref.peek_time()
        assert len(q) == len(ref)
        for i in range(n_timers):
            assert q.is_armed(i) == (i in ref.by_timer)
    return q, ref, pops


@settings(max_examples=400, deadline=None)
@given(st.lists(op, max_size=120), far_horizons)
def test_random_schedule_matches_reference(ops, far_after_ps):
    """Pops and peeks match the reference for any split of entries between the near and far heaps."""
    q, ref, pops = apply_ops(ops, far_after_ps=far_after_ps)
    check_heap_accounting(q, pops)
    # Drain: exactly the live events, in (time, insertion) order, then nothing (no stale entry).
    drained = []
    while (ev := q.pop()) is not None:
        drained.append(ev)
        pops += 1
    assert drained == ref.entries
    assert drained == sorted(drained)
    assert q.pop() is None and q.peek_time() is None and len(q) == 0
    check_heap_accounting(q, pops)
    assert q.heap_stats()["heap_len"] == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(timer_idx, st.integers(0, 5)), min_size=1, max_size=60))
def test_rearm_keeps_only_last_arming(arms):
    """Re-arming the same timer many times leaves one live event, at the last time given."""
    q = _core.EventQueueForTest(N_TIMERS)
    last: dict[int, tuple[int, int]] = {}
    for seq, (i, t) in enumerate(arms):
        q.arm(i, t)
        last[i] = (t, seq)
    assert len(q) == len(last)
    want = sorted((t, seq, i) for i, (t, seq) in last.items())
    got = []
    while (ev := q.pop()) is not None:
        got.append(ev)
    assert got == want
    assert q.heap_stats()["stale"] == len(arms) - len(last)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 200), st.integers(-5, 5))
def test_ties_pop_in_insertion_order(n, t):
    q = _core.EventQueueForTest(n)
    for i in reversed(range(n)):
        q.arm(i, t)
    got = [q.pop() for _ in range(n)]
    assert [ev[2] for ev in got] == list(reversed(range(n)))
    assert [ev[1] for ev in got] == list(range(n))
    assert q.pop() is None


def test_peek_skips_stale_heads():
    q = _core.EventQueueForTest(3)
    q.arm(0, 10)
    q.arm(1, 20)
    q.arm(2, 30)
    q.cancel(0)
    assert q.peek_time() == 20
    q.arm(1, 40)  # re-arm: the entry at 20 becomes stale
    assert q.peek_time() == 30
    q.cancel(2)
    assert q.peek_time() == 40
    assert q.pop() == (40, 3, 1)
    assert q.peek_time() is None and q.pop() is None
    assert q.heap_stats() == {"heap_len": 0, "far_len": 0, "far_heap_len": 0, "fifo_len": 0,
                              "pushed": 4, "stale": 3}


def test_pop_disarms_and_timer_can_be_rearmed():
    q = _core.EventQueueForTest(1)
    q.arm(0, 5)
    assert q.pop() == (5, 0, 0)
    assert not q.is_armed(0)
    q.cancel(0)  # cancelling a fired timer is a no-op
    assert len(q) == 0
    q.arm(0, 1)
    assert q.pop() == (1, 1, 0)


def test_cancel_of_unarmed_timer_is_noop():
    q = _core.EventQueueForTest(2)
    q.cancel(1)
    q.arm(0, 7)
    q.cancel(1)
    assert len(q) == 1 and q.pop() == (7, 0, 0)


def test_bad_timer_index():
    q = _core.EventQueueForTest(2)
    with pytest.raises(IndexError):
        q.arm(2, 0)
    with pytest.raises(IndexError):
        q.cancel(-1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_large_random_schedule(seed):
    """10k events over 1000 timers: arms, re-arms (cancelling), cancels, interleaved pops that
    advance a simulated clock (events are only armed in the future, as in the simulator)."""
    rnd = random.Random(seed)
    n_timers = 1000
    q = _core.EventQueueForTest(n_timers)
    ref = RefQueue(n_timers)
    now = 0
    pops = 0
    popped = []
    arms = 0
    while arms < 10_000:
        r = rnd.random()
        if r < 0.6:
            i = rnd.randrange(n_timers)
            t = now + rnd.choice((0, rnd.randrange(100), rnd.randrange(10**9)))
            q.arm(i, t)
            ref.arm(i, t)
            arms += 1
        elif r < 0.75:
            i = rnd.randrange(n_timers)
            q.cancel(i)
            ref.cancel(i)
        else:
            assert q.peek_time() == ref.peek_time()
            ev = q.pop()
            assert ev == ref.pop()
            if ev is not None:
                assert ev[0] >= now
                now = ev[0]
                pops += 1
                popped.append(ev)
        if arms % 997 == 0:
            assert len(q) == len(ref)
    check_heap_accounting(q, pops)
    while (ev := q.pop()) is not None:
        assert ev == ref.pop()
        popped.append(ev)
        pops += 1
    assert ref.pop() is None
    # Global (time, seq) order of everything popped: the clock never went back.
    assert [e[0] for e in popped] == sorted(e[0] for e in popped)
    check_heap_accounting(q, pops)
    assert q.heap_stats()["pushed"] == 10_000


# ---------------------------------------------------------------------------------------------
# RNG: xoshiro256** seeded through splitmix64, one stream per (seed, stream) pair.

M64 = 2**64 - 1


def _ref_stream(seed: int, stream: int, n: int) -> list[int]:
    """Pure-Python xoshiro256** with splitmix64 seeding of seed ^ (stream * 0xD1B54A32D192ED03)."""
    x = (seed ^ (stream * 0xD1B54A32D192ED03)) & M64
    s = []
    for _ in range(4):
        x = (x + 0x9E3779B97F4A7C15) & M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        s.append(z ^ (z >> 31))

    def rotl(v: int, k: int) -> int:
        return ((v << k) | (v >> (64 - k))) & M64

    out = []
    for _ in range(n):
        out.append((rotl((s[1] * 5) & M64, 7) * 9) & M64)
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
    return out


seeds = st.integers(0, M64)
streams = st.integers(0, 2**16)


@settings(max_examples=100, deadline=None)
@given(seeds, streams)
def test_rng_same_seed_and_stream_same_numbers(seed, stream):
    a = _core.rng_uniform_stream(seed, stream, 64)
    b = _core.rng_uniform_stream(seed, stream, 64)
    assert a == b
    assert all(isinstance(x, float) and 0.0 <= x < 1.0 for x in a)
    # A shorter draw is a prefix of a longer one.
    assert _core.rng_uniform_stream(seed, stream, 10) == a[:10]


@settings(max_examples=100, deadline=None)
@given(seeds, streams, streams)
def test_rng_different_streams_differ(seed, s1, s2):
    if s1 == s2:
        s2 = s1 + 1
    assert _core.rng_uniform_stream(seed, s1, 16) != _core.rng_uniform_stream(seed, s2, 16)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, 2**32), streams)
def test_rng_different_seeds_differ(seed1, seed2, stream):
    if seed1 == seed2:
        seed2 = seed1 + 1
    a = _core.rng_uniform_stream(seed1, stream, 16)
    assert a != _core.rng_uniform_stream(seed2, stream, 16)


@settings(max_examples=50, deadline=None)
@given(seeds, streams)
def test_rng_matches_reference_xoshiro(seed, stream):
    raw = _core.rng_u64_stream(seed, stream, 20)
    assert raw == _ref_stream(seed, stream, 20)
    uni = _core.rng_uniform_stream(seed, stream, 20)
    assert uni == [(v >> 11) * 2.0**-53 for v in raw]


def test_rng_zero_seed_zero_stream_is_not_degenerate():
    raw = _core.rng_u64_stream(0, 0, 8)
    assert len(set(raw)) == 8 and 0 not in raw


@pytest.mark.parametrize("seed,stream", [(1, 0), (1, 1), (12345, 7), (2**64 - 1, 2**16)])
def test_rng_uniform_distribution(seed, stream):
    n = 100_000
    xs = _core.rng_uniform_stream(seed, stream, n)
    assert min(xs) >= 0.0 and max(xs) < 1.0
    mean = sum(xs) / n
    assert abs(mean - 0.5) < 5 * math.sqrt(1 / 12 / n)
    # Chi-square over 20 equal buckets (19 dof): 99.99th percentile is about 50.
    buckets = [0] * 20
    for x in xs:
        buckets[int(x * 20)] += 1
    exp = n / 20
    chi2 = sum((b - exp) ** 2 / exp for b in buckets)
    assert chi2 < 50, buckets
    # Lag-1 serial correlation near 0.
    m = mean
    cov = sum((xs[i] - m) * (xs[i + 1] - m) for i in range(n - 1)) / (n - 1)
    assert abs(cov / (1 / 12)) < 0.02


def test_far_heap_holds_distant_timers_and_keeps_the_order():
    """Entries beyond the horizon wait in the far heap; the head is the earlier of both roots."""
    q = _core.EventQueueForTest(4, far_after_ps=100)
    q.arm(0, 1_000)  # far
    q.arm(1, 50)  # near
    q.arm(2, 1_000)  # far, same time as timer 0: after it (insertion order)
    assert q.heap_stats()["far_len"] == 2
    assert q.pop() == (50, 1, 1)
    q.arm(3, 120)  # within 100 of the last event (50) -> near; still before the far entries
    assert q.heap_stats()["far_len"] == 2
    assert [q.pop(), q.pop(), q.pop()] == [(120, 3, 3), (1_000, 0, 0), (1_000, 2, 2)]
    assert q.pop() is None and q.heap_stats()["heap_len"] == 0


def test_far_entries_in_time_order_queue_in_the_fifo_and_late_comers_in_the_heap():
    """Far entries armed in (time, seq) order append to the FIFO; one earlier than the FIFO's last
    goes to the far heap; pops interleave both (and the near heap) in (time, seq) order."""
    q = _core.EventQueueForTest(8, far_after_ps=100)
    for i, t in enumerate([1_000, 1_000, 2_000, 3_000]):
        q.arm(i, t)
    assert q.heap_stats()["fifo_len"] == 4 and q.heap_stats()["far_heap_len"] == 0
    q.arm(4, 1_500)  # earlier than the FIFO's last (3_000): far heap
    q.arm(5, 3_000)  # equal time, later seq: in order
    q.arm(6, 10)  # near
    q.cancel(2)  # stale entry in the FIFO: skipped
    hs = q.heap_stats()
    assert (hs["fifo_len"], hs["far_heap_len"], hs["far_len"]) == (5, 1, 6)
    got = [q.pop() for _ in range(6)]
    assert got == [(10, 6, 6), (1_000, 0, 0), (1_000, 1, 1), (1_500, 4, 4), (3_000, 3, 3), (3_000, 5, 5)]
    assert q.pop() is None and q.heap_stats()["heap_len"] == 0


def test_far_fifo_grows_and_wraps_around_in_order():
    """Many far timers armed in order while earlier ones pop: the ring wraps and doubles, order kept."""
    n = 300
    q = _core.EventQueueForTest(n, far_after_ps=0)
    out = []
    t = 0
    for i in range(n):
        q.arm(i, t + 1_000)  # every timer far, armed in time order
        t += 7
        if i % 3 == 2:  # pop one for every three armed: the ring's start moves on
            out.append(q.pop())
    while (ev := q.pop()) is not None:
        out.append(ev)
    assert [ev[2] for ev in out] == list(range(n))
    assert [ev[0] for ev in out] == sorted(ev[0] for ev in out)


# ---- reserved sequence numbers (rs_eventq_reserve_seq / rs_timer_arm_seq / rs_eventq_passed) ----

reserve_op = st.one_of(
    st.tuples(st.just("arm"), timer_idx, st.integers(0, 40)),
    st.tuples(st.just("reserve"), timer_idx, st.integers(0, 40)),
    st.tuples(st.just("arm_reserved"), timer_idx),
    st.tuples(st.just("pop")),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(reserve_op, max_size=150), far_horizons)
def test_reserved_seq_arms_as_if_armed_when_reserved(ops, far_after_ps):
    """An entry armed later with a sequence number reserved earlier pops exactly where an entry
    armed at reservation time would (ties by reservation order), in the near heap, the far heap
    and the far FIFO; ``passed`` says whether such an entry would already have been popped."""
    q = _core.EventQueueForTest(N_TIMERS, far_after_ps=far_after_ps)
    ref = RefQueue(N_TIMERS)
    pending: dict[int, tuple[int, int]] = {}
    last: tuple[int, int] | None = None  # key of the last entry popped
    for o in ops:
        if o[0] == "arm":
            t = max(o[2], last[0] if last else 0)  # never in the past
            q.arm(o[1], t)
            ref.arm(o[1], t)
        elif o[0] == "reserve":
            seq = q.reserve_seq()
            assert seq == ref.next_seq
            ref.next_seq += 1
            pending[o[1]] = (max(o[2], last[0] if last else 0), seq)
        elif o[0] == "arm_reserved" and o[1] in pending:
            t, seq = pending.pop(o[1])
            now = last[0] if last else 0
            want_passed = last is not None and (t, seq) < last
            assert q.passed(now, t, seq) == want_passed
            if not want_passed:
                q.arm_seq(o[1], t, seq)
                ref.cancel(o[1])
                ent = (t, seq, o[1])
                bisect.insort(ref.entries, ent)
                ref.by_timer[o[1]] = ent
        elif o[0] == "pop":
            got, want = q.pop(), ref.pop()
            assert got == want
            if got is not None:
                last = (got[0], got[1])
    while (got := q.pop()) is not None:
        assert got == ref.pop()
    assert ref.pop() is None


def test_passed_after_the_clock_moved_past_every_popped_entry():
    """A run that ends at its time limit moves the clock past the last popped entry: every key
    up to the new time counts as passed, whatever its sequence number."""
    q = _core.EventQueueForTest(2)
    q.arm(0, 100)
    seq = q.reserve_seq()
    assert q.pop() == (100, 0, 0)
    assert not q.passed(100, 100, seq)  # at the popped entry's time, after it: still to come
    assert q.passed(150, 150, seq)  # clock at 150, nothing popped there: all of time 150 is done
    assert q.passed(150, 120, seq)
    assert not q.passed(150, 151, seq)
