# MPI ranks of a partitioned run (csrc/sim/par_rank.h, par_xfer.h): the C side of rdmasim.mpi.

from libc.stdlib cimport free as _rk_free

cdef extern from "sim/par_rank.h" nogil:
    ctypedef int (*rs_par_allgather_fn)(void *ctx, const uint8_t *send, size_t len, const uint8_t **recv,
                                        const uint64_t **lens) noexcept
    int rs_sim_par_ranks(rs_sim *sim, uint32_t n_ranks, uint32_t me, const uint16_t *owner, uint32_t parts,
                         rs_par_allgather_fn fn, void *ctx)
    int rs_par_rank_flows_out(rs_sim *sim, uint8_t **out, size_t *len)
    int rs_par_rank_flows_in(rs_sim *sim, const uint8_t *all, const uint64_t *lens, uint32_t n_ranks)
    int rs_sim_par_rank_times(const rs_sim *sim, uint64_t *agreements, uint64_t *agree_ns, uint64_t *fn_ns)

cdef extern from "sim/par_xfer_test.h" nogil:
    int rs_xfer_selftest(uint64_t seed, int with_payload, int with_int, uint8_t *rec, size_t cap, size_t *rec_len)
    int rs_xfer_parse_check(const uint8_t *rec, size_t len)


cdef extern from "<time.h>" nogil:
    ctypedef long _rk_time_t "time_t"
    cdef struct _rk_timespec "timespec":
        _rk_time_t tv_sec
        long tv_nsec
    int _rk_clock_gettime "clock_gettime"(int clk, _rk_timespec *ts)
    int _RK_CLOCK_MONOTONIC "CLOCK_MONOTONIC"


cdef inline uint64_t _rk_now_ns() noexcept nogil:
    cdef _rk_timespec ts
    _rk_clock_gettime(_RK_CLOCK_MONOTONIC, &ts)
    return <uint64_t>ts.tv_sec * 1000000000u + <uint64_t>ts.tv_nsec


cdef class RankExchange:
    """The exchange of a run over MPI ranks, once per agreement: buffer-based (no pickling), one
    ``comm.Allgather`` of fixed blocks (each rank's message length and first bytes; the block
    follows the longest message) and, only when a message is longer, one ``comm.Allgatherv`` of the
    rest; the buffers are kept, and the C side reads the messages in place until the next call.  On one rank nothing is sent; a communicator without the buffer
    calls (a stand-in) gets the pickled ``allgather``."""
    cdef object comm
    cdef int n
    cdef bint buffers
    cdef object _byte
    cdef object _send
    cdef object _recv
    cdef object _bsend
    cdef object _brecv
    cdef object _rest
    cdef object _lens
    cdef uint64_t[::1] _lv
    cdef uint64_t blk
    cdef object _counts
    cdef object _displs
    cdef object _all
    cdef uint64_t one_len
    cdef public object error
    cdef public uint64_t calls
    cdef public uint64_t bytes_sent
    #: wall time in the communicator's calls (waiting for the other ranks included)
    cdef public uint64_t mpi_ns

    def __init__(self, comm):
        self.comm = comm
        self.n = int(comm.Get_size())
        self.buffers = self.n > 1 and hasattr(comm, "Allgatherv")
        if self.buffers:
            from mpi4py import MPI
            self._byte = MPI.BYTE
        self.blk = _rk_block(0)
        self._bsend = _np.zeros(self.blk, dtype=_np.uint8)
        self._brecv = _np.zeros(self.blk * max(self.n, 1), dtype=_np.uint8)
        self._send = _np.zeros(4096, dtype=_np.uint8)
        self._rest = _np.zeros(4096, dtype=_np.uint8)
        self._recv = _np.zeros(4096 * self.n + 1, dtype=_np.uint8)
        self._lens = _np.zeros(max(self.n, 1), dtype=_np.uint64)
        self._lv = self._lens
        self._counts = _np.zeros(max(self.n, 1), dtype=_np.int32)
        self._displs = _np.zeros(max(self.n, 1), dtype=_np.int32)
        self.error = None
        self.calls = 0
        self.bytes_sent = 0
        self.mpi_ns = 0


cdef uint64_t _rk_block(uint64_t longest) noexcept:
    """The block of the next exchange: room for 1.5x the longest message of this one (at least 1 KiB)."""
    cdef uint64_t b = 1024
    while b < longest + longest // 2 + 8:
        b *= 2
    return b


cdef int _exchange_blocks(RankExchange x, const uint8_t *send, size_t length) except -1:
    """One exchange: one ``Allgather`` of fixed blocks, each rank's [length, first bytes]; when a
    message is longer than its block, one ``Allgatherv`` of the rest; then every message contiguous
    in x._recv.  The block size follows the longest message (every rank computes the same)."""
    cdef uint64_t blk = x.blk, room = blk - 8, total = 0, longest = 0, t0, mine, pos = 0, h
    cdef uint64_t n64 = length
    cdef uint8_t[::1] bs = x._bsend
    cdef uint8_t[::1] br = x._brecv
    cdef uint8_t[::1] rv, sv, tv
    cdef uint64_t[::1] lv = x._lv
    cdef int32_t[::1] cv = x._counts
    cdef int32_t[::1] dv = x._displs
    cdef int r
    cdef int32_t rest_total = 0
    memcpy(&bs[0], &n64, 8)
    h = length if length < room else room
    if h:
        memcpy(&bs[8], send, h)
    t0 = _rk_now_ns()
    x.comm.Allgather([x._bsend, <int>blk, x._byte], [x._brecv, <int>blk, x._byte])
    x.mpi_ns += _rk_now_ns() - t0
    for r in range(x.n):
        memcpy(&lv[r], &br[<uint64_t>r * blk], 8)
        if lv[r] > 0x7fffffff or total + lv[r] > 0x7fffffff:
            raise OverflowError(f"MPI rank {r}: a message of {lv[r]} bytes ({total} before it): allowed up "
                                f"to 2 GiB in all")
        total += lv[r]
        if lv[r] > longest:
            longest = lv[r]
        cv[r] = <int32_t>(lv[r] - room) if lv[r] > room else 0
        dv[r] = rest_total
        rest_total += cv[r]
    if total + 1 > <uint64_t>x._recv.shape[0]:
        x._recv = _np.zeros(max(total + 1, 2 * x._recv.shape[0]), dtype=_np.uint8)
    rv = x._recv
    if rest_total:
        mine = length - room if length > room else 0
        if mine + 1 > <uint64_t>x._send.shape[0]:
            x._send = _np.zeros(max(mine + 1, 2 * x._send.shape[0]), dtype=_np.uint8)
        if <uint64_t>rest_total + 1 > <uint64_t>x._rest.shape[0]:
            x._rest = _np.zeros(max(<uint64_t>rest_total + 1, 2 * x._rest.shape[0]), dtype=_np.uint8)
        sv = x._send
        if mine:
            memcpy(&sv[0], send + room, mine)
        t0 = _rk_now_ns()
        x.comm.Allgatherv([x._send, <int>mine, x._byte], [x._rest, (x._counts, x._displs), x._byte])
        x.mpi_ns += _rk_now_ns() - t0
    tv = x._rest
    for r in range(x.n):
        h = lv[r] if lv[r] < room else room
        if h:
            memcpy(&rv[pos], &br[<uint64_t>r * blk + 8], h)
        pos += h
        if cv[r]:
            memcpy(&rv[pos], &tv[dv[r]], <size_t>cv[r])
            pos += <uint64_t>cv[r]
    x.blk = _rk_block(longest)
    if x.blk > <uint64_t>x._bsend.shape[0]:  # (the buffers only grow: the block is a count)
        x._bsend = _np.zeros(x.blk, dtype=_np.uint8)
        x._brecv = _np.zeros(x.blk * x.n, dtype=_np.uint8)
    return 0


cdef int _rank_allgather(void *ctx, const uint8_t *send, size_t length, const uint8_t **recv,
                         const uint64_t **lens) noexcept with gil:
    cdef RankExchange x = <RankExchange>ctx
    cdef uint64_t[::1] lv
    cdef const unsigned char[::1] av
    cdef uint64_t t0
    try:
        x.calls += 1
        x.bytes_sent += length
        if x.n == 1:  # one rank: its own message, nothing to send
            x.one_len = length
            recv[0] = send
            lens[0] = &x.one_len
            return 0
        if not x.buffers:
            t0 = _rk_now_ns()
            parts = x.comm.allgather((<const char *>send)[:length] if length else b"")
            x.mpi_ns += _rk_now_ns() - t0
            x._all = _np.frombuffer(b"".join(parts) + b"\0", dtype=_np.uint8)
            x._lens = _np.array([len(p) for p in parts], dtype=_np.uint64)
            av = x._all
            lv = x._lens
            recv[0] = &av[0]
            lens[0] = &lv[0]
            return 0
        _exchange_blocks(x, send, length)
        av = x._recv
        recv[0] = &av[0]
        lens[0] = &x._lv[0]
        return 0
    except BaseException as exc:  # the run fails; rdmasim.mpi raises this
        x.error = exc
        return -1


def rank_set(SimCore core, uint32_t n_ranks, uint32_t me, owner, RankExchange x):
    """This process is rank ``me`` of ``n_ranks``; partition i runs on rank owner[i]."""
    cdef uint16_t[::1] ow = _np.ascontiguousarray(owner, dtype=_np.uint16)
    cdef uint16_t dummy = 0
    core._check(rs_sim_par_ranks(core.sim, n_ranks, me, &ow[0] if ow.shape[0] else &dummy, <uint32_t>ow.shape[0],
                                 _rank_allgather, <void *>x))


def rank_times(SimCore core):
    """(agreements, ns in them, ns of those in the exchange call) of the ranks' last run; zeros
    without ranks."""
    cdef uint64_t n = 0, a = 0, f = 0
    rs_sim_par_rank_times(core.sim, &n, &a, &f)
    return int(n), int(a), int(f)


def rank_clear(SimCore core):
    """One process again."""
    core._check(rs_sim_par_ranks(core.sim, 0, 0, NULL, 0, NULL, NULL))


def rank_flows_out(SimCore core):
    """This rank's part of the flow table after a run (bytes for rank_flows_in)."""
    cdef uint8_t *out = NULL
    cdef size_t n = 0
    core._check(rs_par_rank_flows_out(core.sim, &out, &n))
    try:
        return (<const char *>out)[:n] if n else b""
    finally:
        _rk_free(out)


def rank_flows_in(SimCore core, parts):
    """Every rank's rank_flows_out (in rank order) into this rank's flow table."""
    lens = _np.array([len(p) for p in parts], dtype=_np.uint64)
    cdef const unsigned char[::1] av = _np.frombuffer(b"".join(parts) + b"\0", dtype=_np.uint8)
    cdef uint64_t[::1] lv = lens
    core._check(rs_par_rank_flows_in(core.sim, &av[0], &lv[0], <uint32_t>len(parts)))


def xfer_roundtrip(uint64_t seed, bint payload, bint intel):
    """Testing: a frame of random fields (payload bytes and INT stack if asked) to its record and
    back; returns (1 when the packet came back byte for byte, the record)."""
    cdef uint8_t rec[8192]
    cdef size_t n = 0
    cdef int ok = rs_xfer_selftest(seed, payload, intel, rec, sizeof(rec), &n)
    return ok, (<const char *>rec)[:n]


def xfer_parse(bytes rec):
    """Testing: the bytes a record of ``rec`` takes (0: cut short or malformed)."""
    return rs_xfer_parse_check(<const uint8_t *><const char *>rec, len(rec))
