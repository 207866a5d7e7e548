# Test handles over the engine's building blocks (csrc/core): the event queue (timing wheel and
# heaps with lazy timer cancellation), the seeded RNG streams and the packet pool; and a host's QP-number
# table (csrc/transport/qpn.h).  Used by the unit tests and the benches in bench/ only; the
# simulation itself never calls into Python per event.
from libc.stdint cimport int64_t, intptr_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free


cdef extern from "rdmasim/eventq.h" nogil:
    ctypedef struct rs_timer:
        void *owner
        uint64_t seq
        uint16_t kind
        uint16_t armed
        uint32_t ent
        int64_t when_ps

    ctypedef struct rs_event:
        int64_t t_ps
        uint64_t seq
        rs_timer *timer

    ctypedef struct rs_eventq:
        size_t len
        size_t cap
        size_t far_len
        size_t fifo_len
        size_t wheel_len
        size_t run_pos
        size_t run_len
        int64_t far_after_ps
        int64_t far_from_ps
        uint64_t next_seq
        uint64_t pushed
        uint64_t stale
        int64_t cur
        uint64_t mode_switches
        uint64_t wheel_allocs

    int rs_eventq_init(rs_eventq *q, size_t initial_cap)
    void rs_eventq_free(rs_eventq *q)
    int rs_eventq_set_wheel(rs_eventq *q, uint32_t shift, uint32_t nb)
    int rs_eventq_set_modes(rs_eventq *q, size_t heap_below, size_t wheel_at)
    int rs_timer_arm(rs_eventq *q, rs_timer *tm, int64_t t_ps)
    uint64_t rs_eventq_reserve_seq(rs_eventq *q)
    int rs_timer_arm_seq(rs_eventq *q, rs_timer *tm, int64_t t_ps, uint64_t seq)
    int rs_eventq_passed(const rs_eventq *q, int64_t now_ps, int64_t t_ps, uint64_t seq)
    void rs_timer_cancel(rs_timer *tm)
    int rs_eventq_pop(rs_eventq *q, rs_event *out)
    int64_t rs_eventq_peek_time(rs_eventq *q)


cdef extern from "engine/engine.h" nogil:
    ctypedef struct rs_engine:
        int64_t now_ps
        uint64_t seed
        rs_eventq evq
        int failed
        char errmsg[256]
    int RS_ENT_SHIFT
    int rs_engine_init(rs_engine *e, size_t queue_cap)
    void rs_engine_free(rs_engine *e)
    int rs_engine_ents(rs_engine *e, uint32_t n_ent)
    void rs_engine_enter(rs_engine *e, uint32_t ent)
    uint64_t rs_engine_next_key(rs_engine *e, int64_t t_ps)
    uint64_t rs_engine_key(uint64_t seed, uint32_t ent, uint64_t count, int64_t t_ps)
    void rs_engine_arm(rs_engine *e, rs_timer *tm, int64_t t_ps)
    void rs_engine_arm_seq(rs_engine *e, rs_timer *tm, int64_t t_ps, uint64_t seq)


cdef extern from "rdmasim/rng.h" nogil:
    ctypedef struct rs_rng:
        uint64_t s[4]
    void rs_rng_seed(rs_rng *r, uint64_t seed, uint64_t stream)
    uint64_t rs_rng_next(rs_rng *r)
    double rs_rng_uniform(rs_rng *r)


cdef class EventQueueForTest:
    """An rs_eventq with ``n_timers`` rs_timer event sources (indices 0..n_timers-1).

    ``arm(i, t_ps)`` (re)arms timer i (cancelling its earlier arming), ``cancel(i)`` disarms it,
    ``pop()`` returns ``(t_ps, seq, i)`` of the earliest live event or None, ``peek_time()`` the
    time of the earliest live event or None, ``len()`` the number of live (armed) timers.
    ``far_after_ps`` sets the horizon beyond which entries go to the far heap (default 50 us);
    ``bucket_shift`` and ``buckets`` the timing wheel's bucket width (2^shift ps) and bucket count
    (a power of two, 64..2^24; default 512 ps and 8192); ``modes=(heap_below, wheel_at)`` the
    thresholds of heap mode and wheel mode (heap_below 0: wheel mode only).
    """
    cdef rs_eventq q
    cdef rs_timer *timers
    cdef Py_ssize_t n_timers
    cdef Py_ssize_t live
    cdef bint inited

    def __cinit__(self, Py_ssize_t n_timers, Py_ssize_t initial_cap=16, far_after_ps=None,
                  bucket_shift=None, buckets=None, modes=None):
        self.timers = NULL
        self.inited = False
        self.live = 0
        if n_timers < 0:
            raise ValueError(f"n_timers must be >= 0, got {n_timers}")
        self.n_timers = n_timers
        self.timers = <rs_timer *>calloc(n_timers if n_timers > 0 else 1, sizeof(rs_timer))
        if self.timers == NULL:
            raise MemoryError()
        cdef Py_ssize_t i
        for i in range(n_timers):
            self.timers[i].owner = <void *><intptr_t>i
        if rs_eventq_init(&self.q, initial_cap if initial_cap > 0 else 0) != 0:
            raise MemoryError()
        self.inited = True
        if far_after_ps is not None:
            if far_after_ps < 0:
                raise ValueError(f"far_after_ps must be >= 0, got {far_after_ps}")
            self.q.far_after_ps = far_after_ps
            self.q.far_from_ps = far_after_ps
        if bucket_shift is not None or buckets is not None:
            shift = 9 if bucket_shift is None else bucket_shift
            nb = 8192 if buckets is None else buckets
            if not 0 <= shift <= 40 or not 64 <= nb <= 2**24 or nb & (nb - 1):
                raise ValueError(f"bucket_shift {shift}, buckets {nb}: allowed bucket_shift 0..40 and "
                                 "buckets a power of two in 64..16777216")
            if rs_eventq_set_wheel(&self.q, shift, nb) != 0:
                raise MemoryError()
        if modes is not None:
            heap_below, wheel_at = modes
            if not 1 <= wheel_at or not 0 <= heap_below <= wheel_at:
                raise ValueError(f"modes (heap_below {heap_below}, wheel_at {wheel_at}): allowed "
                                 "wheel_at >= 1 and 0 <= heap_below <= wheel_at")
            if rs_eventq_set_modes(&self.q, heap_below, wheel_at) != 0:
                raise ValueError(f"modes {modes!r}: the queue is not empty")

    def __dealloc__(self):
        if self.inited:
            rs_eventq_free(&self.q)
        free(self.timers)

    cdef inline rs_timer *_timer(self, Py_ssize_t i) except NULL:
        if i < 0 or i >= self.n_timers:
            raise IndexError(f"timer index {i} outside 0..{self.n_timers - 1}")
        return &self.timers[i]

    def arm(self, Py_ssize_t timer_index, int64_t t_ps):
        cdef rs_timer *tm = self._timer(timer_index)
        cdef bint was_armed = tm.armed != 0
        if rs_timer_arm(&self.q, tm, t_ps) != 0:
            raise MemoryError()
        if not was_armed:
            self.live += 1

    def reserve_seq(self):
        """Take the next sequence number without arming anything (rs_eventq_reserve_seq)."""
        return rs_eventq_reserve_seq(&self.q)

    def arm_seq(self, Py_ssize_t timer_index, int64_t t_ps, uint64_t seq):
        """(Re)arm timer i at t_ps with a reserved sequence number (rs_timer_arm_seq)."""
        cdef rs_timer *tm = self._timer(timer_index)
        cdef bint was_armed = tm.armed != 0
        if rs_timer_arm_seq(&self.q, tm, t_ps, seq) != 0:
            raise MemoryError()
        if not was_armed:
            self.live += 1

    def passed(self, int64_t now_ps, int64_t t_ps, uint64_t seq):
        """Whether an entry (t_ps, seq) would have been popped by now (rs_eventq_passed)."""
        return rs_eventq_passed(&self.q, now_ps, t_ps, seq) != 0

    def cancel(self, Py_ssize_t timer_index):
        cdef rs_timer *tm = self._timer(timer_index)
        if tm.armed:
            self.live -= 1
        rs_timer_cancel(tm)

    def is_armed(self, Py_ssize_t timer_index):
        return self._timer(timer_index).armed != 0

    def pop(self):
        cdef rs_event ev
        if not rs_eventq_pop(&self.q, &ev):
            return None
        self.live -= 1
        return (ev.t_ps, ev.seq, <Py_ssize_t><intptr_t>ev.timer.owner)

    def peek_time(self):
        cdef int64_t t = rs_eventq_peek_time(&self.q)
        if self._raw_len() == 0:
            return None
        return t

    cdef size_t _raw_len(self):
        return (self.q.len + (self.q.run_len - self.q.run_pos) + self.q.wheel_len + self.q.far_len
                + self.q.fifo_len)

    def heap_stats(self):
        """Raw entries (live + stale) in all parts (bottom heap, run, wheel, far heap, far FIFO), of
        them in the far heap and the far FIFO, entries pushed and stale entries skipped so far."""
        return {"heap_len": self._raw_len(),
                "far_len": self.q.far_len + self.q.fifo_len, "far_heap_len": self.q.far_len,
                "fifo_len": self.q.fifo_len, "pushed": self.q.pushed,
                "stale": self.q.stale}

    def wheel_allocs(self):
        """Allocations of wheel bucket storage so far: the block of every bucket's first entries
        (one per wheel) and one per bucket outgrowing it or growing again."""
        return self.q.wheel_allocs

    def mode(self):
        """``"heap"`` (every near entry in the bottom heap) or ``"wheel"``, and the number of
        switches between them so far."""
        return ("heap" if self.q.cur == 0x7FFFFFFFFFFFFFFF else "wheel"), self.q.mode_switches

    def __len__(self):
        return self.live


cdef class EngineForTest:
    """An rs_engine (engine/engine.h) with ``n_timers`` timers, timer i belonging to entity
    ``ents[i]`` (1..n_ent-1; 0 is the control path).

    ``arm(i, t_ps)`` arms timer i with the current entity's next key (rs_engine_arm), ``next_key()``
    reserves one, ``arm_seq(i, t_ps, key)`` arms with a reserved key; ``pop()`` hands out the
    earliest event as ``(t_ps, key, i)``, moves the clock to it and makes its timer's entity the
    current one (as the simulation's loop does); ``control()`` returns to the control path.
    """
    cdef rs_engine e
    cdef rs_timer *timers
    cdef Py_ssize_t n_timers
    cdef bint inited

    def __cinit__(self, ents, uint64_t seed=1):
        self.inited = False
        self.timers = NULL
        n = len(ents)
        n_ent = max(ents, default=0) + 1
        if any(x < 1 for x in ents):
            raise ValueError(f"entity ids {list(ents)}: allowed 1 and up (0 is the control path)")
        self.n_timers = n
        self.timers = <rs_timer *>calloc(n if n > 0 else 1, sizeof(rs_timer))
        if self.timers == NULL:
            raise MemoryError()
        cdef Py_ssize_t i
        for i in range(n):
            self.timers[i].owner = <void *><intptr_t>i
            self.timers[i].ent = ents[i]
        if rs_engine_init(&self.e, 16) != 0:
            raise MemoryError()
        self.inited = True
        self.e.seed = seed
        if rs_engine_ents(&self.e, n_ent) != 0:
            raise MemoryError()

    def __dealloc__(self):
        if self.inited:
            rs_engine_free(&self.e)
        free(self.timers)

    cdef inline rs_timer *_timer(self, Py_ssize_t i) except NULL:
        if i < 0 or i >= self.n_timers:
            raise IndexError(f"timer index {i} outside 0..{self.n_timers - 1}")
        return &self.timers[i]

    @property
    def now_ps(self):
        return self.e.now_ps

    def _check(self):
        if self.e.failed:
            raise RuntimeError(self.e.errmsg.decode())

    def arm(self, Py_ssize_t timer_index, int64_t t_ps):
        rs_engine_arm(&self.e, self._timer(timer_index), t_ps)
        self._check()

    def next_key(self, int64_t t_ps):
        return rs_engine_next_key(&self.e, t_ps)

    def arm_seq(self, Py_ssize_t timer_index, int64_t t_ps, uint64_t key):
        rs_engine_arm_seq(&self.e, self._timer(timer_index), t_ps, key)
        self._check()

    def is_armed(self, Py_ssize_t timer_index):
        return self._timer(timer_index).armed != 0

    def peek_time(self):
        cdef int64_t t = rs_eventq_peek_time(&self.e.evq)
        return None if t == 0x7FFFFFFFFFFFFFFF else t

    def pop(self):
        cdef rs_event ev
        if not rs_eventq_pop(&self.e.evq, &ev):
            return None
        self.e.now_ps = ev.t_ps
        rs_engine_enter(&self.e, ev.timer.ent)
        return (ev.t_ps, ev.seq, <Py_ssize_t><intptr_t>ev.timer.owner)

    def control(self):
        rs_engine_enter(&self.e, 0)


def engine_key(uint64_t seed, uint32_t ent, uint64_t count, int64_t t_ps):
    """The key of entity ``ent``'s arm number ``count`` for time ``t_ps`` (rs_engine_key)."""
    return rs_engine_key(seed, ent, count, t_ps)


def rng_uniform_stream(uint64_t seed, uint64_t stream, Py_ssize_t n):
    """``n`` draws of rs_rng_uniform from the RNG stream (seed, stream)."""
    cdef rs_rng r
    cdef Py_ssize_t i
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rs_rng_seed(&r, seed, stream)
    return [rs_rng_uniform(&r) for i in range(n)]


def rng_u64_stream(uint64_t seed, uint64_t stream, Py_ssize_t n):
    """``n`` raw 64-bit outputs of rs_rng_next from the RNG stream (seed, stream)."""
    cdef rs_rng r
    cdef Py_ssize_t i
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rs_rng_seed(&r, seed, stream)
    return [rs_rng_next(&r) for i in range(n)]


cdef extern from "transport/qpn.h" nogil:
    ctypedef struct rs_qpn_table:
        uint32_t live
        uint32_t mask
        uint32_t next
        uint32_t limit
    void rs_qpn_init(rs_qpn_table *t, uint32_t limit)
    void rs_qpn_free(rs_qpn_table *t)
    int rs_qpn_add(rs_qpn_table *t, void *qp, uint32_t *qpn)
    void rs_qpn_remove(rs_qpn_table *t, uint32_t qpn)
    void *rs_qpn_find(const rs_qpn_table *t, uint32_t qpn)
    size_t rs_qpn_slots(const rs_qpn_table *t)


cdef class QpnTableForTest:
    """A host's QP-number table over numbers 0x11..``limit``, holding tokens (ints >= 1) in place
    of QPs: ``add(token)`` returns the number given, ``remove(qpn)``, ``find(qpn)`` the token or
    None; ``live`` and ``slots`` (the table's size)."""
    cdef rs_qpn_table t

    def __cinit__(self, uint32_t limit=0xFFFFFF):
        if limit < 0x11 or limit > 0xFFFFFF:
            raise ValueError(f"limit 0x{limit:x} outside 0x11..0xffffff")
        rs_qpn_init(&self.t, limit)

    def __dealloc__(self):
        rs_qpn_free(&self.t)

    def add(self, Py_ssize_t token):
        cdef uint32_t qpn
        if token < 1:
            raise ValueError(f"token must be >= 1, got {token}")
        if rs_qpn_add(&self.t, <void *>token, &qpn) != 0:
            raise MemoryError("no QP numbers left" if qpn == 0 else "out of memory")
        return qpn

    def remove(self, uint32_t qpn):
        rs_qpn_remove(&self.t, qpn)

    def find(self, uint32_t qpn):
        cdef void *p = rs_qpn_find(&self.t, qpn)
        return None if p == NULL else <Py_ssize_t>p

    @property
    def live(self):
        return self.t.live

    @property
    def slots(self):
        return rs_qpn_slots(&self.t)


cdef extern from "rdmasim/pool.h" nogil:
    ctypedef struct rs_pool:
        size_t pkts_in_use
        size_t pkts_total
    void rs_pool_init(rs_pool *p)
    void rs_pool_free(rs_pool *p)
    rs_pkt *rs_pkt_alloc(rs_pool *p)
    void rs_pkt_release(rs_pool *p, rs_pkt *pkt)

cdef extern from "rdmasim/packet.h":
    size_t RS_PKT_COMMON_BYTES


cdef class PacketPoolForTest:
    """The packet pool (csrc/core/pool.c), its packets held by handle: ``alloc()`` returns a
    handle, ``set(handle, **fields)`` writes fields (the integer fields of rdmasim.codec's packet
    dicts, plus ``x_valid``, ``x_rkey``, ``x_len``, ``x_seq``, ``x_sack_psn``, ``x_va``, ``x_off`` and
    ``job_res``), ``release(handle)``; ``zero_bytes(handle)`` counts the packet's bytes that are 0
    among its first ``common`` (all of them for a packet fresh from ``alloc``: the transport
    extension blocks after them are their builders' to initialise); ``poison_extensions(handle, byte)``
    fills the bytes after the first ``common`` with ``byte``, ``byte_count(handle, byte)`` counts its bytes equal to ``byte``.  ``churn(ops, in_flight)`` runs the
    pool's steady state in C for the benchmarks: ``in_flight`` packets out, then ``ops`` times
    the oldest back and a new one out."""
    cdef rs_pool pool
    cdef dict held
    cdef Py_ssize_t next_handle

    def __cinit__(self):
        rs_pool_init(&self.pool)
        self.held = {}
        self.next_handle = 1

    def __dealloc__(self):
        rs_pool_free(&self.pool)

    cdef rs_pkt *_get(self, Py_ssize_t handle) except NULL:
        if handle not in self.held:
            raise KeyError(f"no packet with handle {handle}")
        return <rs_pkt *><intptr_t>self.held[handle]

    def alloc(self):
        cdef rs_pkt *p = rs_pkt_alloc(&self.pool)
        if p == NULL:
            raise MemoryError("out of memory")
        h = self.next_handle
        self.next_handle += 1
        self.held[h] = <intptr_t>p
        return h

    def set(self, Py_ssize_t handle, **fields):
        cdef rs_pkt *p = self._get(handle)
        for name, v in fields.items():
            _set_int(p, name, v)

    def release(self, Py_ssize_t handle):
        cdef rs_pkt *p = self._get(handle)
        del self.held[handle]
        rs_pkt_release(&self.pool, p)

    def zero_bytes(self, Py_ssize_t handle):
        cdef const uint8_t *b = <const uint8_t *>self._get(handle)
        cdef size_t i, n = 0
        for i in range(RS_PKT_COMMON_BYTES):
            n += b[i] == 0
        return n

    def poison_extensions(self, Py_ssize_t handle, uint8_t byte):
        cdef uint8_t *b = <uint8_t *>self._get(handle)
        memset(b + RS_PKT_COMMON_BYTES, byte, sizeof(rs_pkt) - RS_PKT_COMMON_BYTES)

    def byte_count(self, Py_ssize_t handle, uint8_t byte):
        cdef const uint8_t *b = <const uint8_t *>self._get(handle)
        cdef size_t i, n = 0
        for i in range(sizeof(rs_pkt)):
            n += b[i] == byte
        return n

    def churn(self, size_t ops, size_t in_flight):
        if in_flight < 1:
            raise ValueError(f"in_flight={in_flight}: must be at least 1")
        cdef rs_pkt **ring = <rs_pkt **>calloc(in_flight, sizeof(rs_pkt *))
        if ring == NULL:
            raise MemoryError("out of memory")
        cdef size_t i, k = 0
        cdef int failed = 0
        with nogil:
            for i in range(in_flight):
                ring[i] = rs_pkt_alloc(&self.pool)
                if ring[i] == NULL:
                    failed = 1
                    break
            if not failed:
                for i in range(ops):  # release the oldest, take a new one in its place
                    rs_pkt_release(&self.pool, ring[k])
                    ring[k] = rs_pkt_alloc(&self.pool)
                    if ring[k] == NULL:
                        failed = 1
                        break
                    ring[k].psn = <uint32_t>i  # the transport writes every packet it takes
                    k = k + 1 if k + 1 < in_flight else 0
            for i in range(in_flight):
                if ring[i] != NULL:
                    rs_pkt_release(&self.pool, ring[i])
        free(ring)
        if failed:
            raise MemoryError("out of memory")

    @property
    def size(self):
        return sizeof(rs_pkt)

    @property
    def common(self):
        return RS_PKT_COMMON_BYTES

    @property
    def in_use(self):
        return self.pool.pkts_in_use

    @property
    def allocated(self):
        return self.pool.pkts_total
